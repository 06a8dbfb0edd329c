"""Benchmark: one wave over N simulated nodes through Slurm and through SSH.

    python3 -m simcluster.bench_slurm_wave [--nodes 64] [--repeat 3]

Runs ``pytest --cluster ... -k dns_resolve`` (a per-node check: one wave, one command per node)
over the same nodes, reached over SSH and through Slurm, and prints each run's wall time and the
controller's CPU time (the pytest process and everything it started on this machine: ssh
handshakes, srun), then the ratios Slurm/SSH.  Needs root and the Slurm packages.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .cluster import SimCluster
from .slurm import SlurmSim

PROFILE = "name: bench-wave\negress:\n  dns_resolve: {max: 60 s}\n"
WAVE_COMMAND = "getent hosts localhost"


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _transport_wave(how: str, inventory: Path) -> tuple[float, float, float, float]:
    """(connect wall, connect CPU, wave wall, wave CPU) of one wave through the transports alone, in this process."""
    from concurrent.futures import ThreadPoolExecutor

    from pytest_fabric.checks.builtin import load_profile
    from pytest_fabric.config.inventory import load_inventory
    from pytest_fabric.run.cluster import Cluster
    from pytest_fabric.transport.slurm import SlurmAllocation, SlurmTransport
    from pytest_fabric.transport.ssh import JumpHosts, SSHSettings, SSHTransport

    inv = load_inventory(inventory)
    allocation = SlurmAllocation(inv.node_names, inv.slurm) if inv.slurm else None
    jumps = JumpHosts()

    def make(name: str) -> object:
        node = inv.node(name)
        if allocation is not None:
            return SlurmTransport(name, allocation)
        return SSHTransport(name, SSHSettings(host=node.host, port=node.port, user=node.user,
                                              identity_file=node.identity_file, known_hosts=node.known_hosts),
                            jump_hosts=jumps)

    cluster = Cluster(inv, load_profile("localhost"), make, fanout=64)  # type: ignore[arg-type]
    try:
        t0, c0 = time.monotonic(), _cpu()
        errors = [e for e in cluster.connect().values() if e is not None]
        t1, c1 = time.monotonic(), _cpu()
        if errors:
            raise SystemExit(f"{how}: {errors[0]}")
        with cluster.together(inv.node_names) as together, ThreadPoolExecutor(64) as pool:
            def one(name: str) -> str:
                with together.member([name]):
                    return cluster.node(name).run(WAVE_COMMAND, timeout=30).stdout
            outputs = list(pool.map(one, inv.node_names))
        t2, c2 = time.monotonic(), _cpu()
        assert all("localhost" in out for out in outputs)
        return t1 - t0, c1 - c0, t2 - t1, c2 - c1
    finally:
        cluster.close()
        if allocation is not None:
            allocation.release()


def _run(work: Path, inventory: Path, env: dict[str, str], *extra: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "bench.yaml", "-k", "dns_resolve",
         "-p", "no:cacheprovider", "-q", *extra],
        cwd=work, capture_output=True, text=True, env=env, timeout=600,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        work = Path(tmp)
        (work / "bench.yaml").write_text(PROFILE)
        cluster = SimCluster(args.nodes, work / "sim", name="bench")
        with cluster, SlurmSim(cluster) as slurm:
            extra = {"egress": {"targets": ["localhost"]}}
            inventories = {
                "ssh": cluster.write_inventory(work / "ssh.yaml", extra=extra),
                "slurm": slurm.write_inventory(work / "slurm.yaml", extra=extra, wait_s=60),
            }
            env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
            env["SLURM_CONF"] = str(slurm.conf)
            results: dict[str, list[tuple[float, float]]] = {"ssh": [], "slurm": [], "startup": []}
            for _ in range(args.repeat):
                for how, inventory in inventories.items():
                    results[how].append(_run(work, inventory, env))
                # pytest's own start and collection, which both runs pay: the wave is the rest
                results["startup"].append(_run(work, inventories["ssh"], env, "--collect-only"))
            os.environ["SLURM_CONF"] = str(slurm.conf)
            alone: dict[str, list[tuple[float, float, float, float]]] = {"ssh": [], "slurm": []}
            for _ in range(args.repeat):
                for how, inventory in inventories.items():
                    alone[how].append(_transport_wave(how, inventory))
            steps = slurm.launched_steps()
    med = {how: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for how, r in results.items()}
    for how, (wall, cpu) in med.items():
        print(f"{how:5s}: wall {wall:6.2f} s, controller CPU {cpu:6.2f} s (median of {args.repeat})")
    print(f"slurm/ssh: wall x{med['slurm'][0] / med['ssh'][0]:.2f}, controller CPU x{med['slurm'][1] / med['ssh'][1]:.2f}")
    base_wall, base_cpu = med["startup"]
    wave = {how: (med[how][0] - base_wall, med[how][1] - base_cpu) for how in ("ssh", "slurm")}
    for how, (wall, cpu) in wave.items():
        print(f"{how:5s} beyond pytest's start and collection: wall {wall:5.2f} s, controller CPU {cpu:5.2f} s")
    print(f"the wave itself, slurm/ssh: wall x{wave['slurm'][0] / wave['ssh'][0]:.2f}, "
          f"controller CPU x{wave['slurm'][1] / wave['ssh'][1]:.2f}")
    print("the transports alone, in one process (median):")
    m = {how: [statistics.median(r[i] for r in rows) for i in range(4)] for how, rows in alone.items()}
    for how, (cw, cc, ww, wc) in m.items():
        print(f"  {how:5s}: connect {cw:5.2f} s wall {cc:5.2f} s CPU; wave {ww:5.2f} s wall {wc:5.2f} s CPU")
    print(f"  slurm/ssh: connect+wave wall x{(m['slurm'][0] + m['slurm'][2]) / (m['ssh'][0] + m['ssh'][2]):.2f}, "
          f"CPU x{(m['slurm'][1] + m['slurm'][3]) / (m['ssh'][1] + m['ssh'][3]):.2f}; "
          f"wave alone wall x{m['slurm'][2] / m['ssh'][2]:.2f}, CPU x{m['slurm'][3] / m['ssh'][3]:.2f}")
    widest = max((len(nodes) for nodes in steps.values()), default=0)
    print(f"slurm steps launched: {len(steps)} in {args.repeat} runs, the widest over {widest} nodes")


if __name__ == "__main__":
    main()
