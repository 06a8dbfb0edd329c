"""What the corroborations cost: an 8-node all-pairs TCP and RDMA sweep with the counter witnesses and without.

With them every pair measurement reads both ends' counters before and after (the interfaces'
tx/rx_bytes for TCP, the HCA ports' PortXmitData/PortRcvData for RDMA: four commands a pair, or a
rail, more); ``--fabric-no-witness`` leaves them out. The internal checks (a tool's figures against
each other) and the tool identity listing (one command per node per run) run in both. Prints the
sweep's time each way, its ratio, and the commands the witness added.

    sudo .venv/bin/python benchmarks/bench_corroboration.py [--nodes 8] [--repeat 2]

Needs root (network namespaces), sshd and iperf3; the RDMA tools are the simulator's stand-ins.
Traffic stays inside the namespaces this script creates, which it tears down at the end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # simcluster; pytest_fabric is the installed copy

from simcluster import SimCluster, missing_prerequisites  # noqa: E402
from simcluster.hardware import FakeHardware, hardware_installed  # noqa: E402

PROFILE = """name: corroboration-bench
inter_node:
  tcp_throughput: {min: 0.2 Gb/s, streams: 1, duration: 1 s}
  rdma_bandwidth: {min: 50% line, size: 8 MiB, qps: 1, repeat: 1, duration: 1 s}
  pairs: all
"""


def _run(work: Path, inventory: Path, profile: Path, witness: bool) -> tuple[float, int, int]:
    """One sweep: wall seconds, commands in the record's evidence, checks that failed or errored."""
    record = work / f"record-{witness}.json"
    args = [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile),
            "-k", "(tcp_throughput or rdma_bandwidth) and not outlier", "-q", "-p", "no:cacheprovider",
            f"--conformance-json={record}"]
    if not witness:
        args.append("--fabric-no-witness")
    started = time.monotonic()
    result = subprocess.run(args, cwd=work, capture_output=True, text=True)
    wall = time.monotonic() - started
    data = json.loads(record.read_text())
    commands = sum(len(c.get("evidence") or []) for c in data["checks"])
    bad = sum(1 for c in data["checks"] if c["outcome"] in ("failed", "error"))
    if bad:
        print(result.stdout[-3000:], file=sys.stderr)
    return wall, commands, bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2, help="sweeps each way, alternating")
    args = parser.parse_args()
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    times: dict[bool, list[float]] = {True: [], False: []}
    commands: dict[bool, int] = {}
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        profile = work / "bench.yaml"
        profile.write_text(PROFILE)
        with SimCluster(args.nodes, work / "sim", name="bench") as cluster:
            inventory = cluster.write_inventory(work / "inventory.yaml")
            with hardware_installed(cluster, {n.name: FakeHardware() for n in cluster.nodes}):
                for _ in range(args.repeat):
                    for witness in (True, False):
                        wall, ran, bad = _run(work, inventory, profile, witness)
                        times[witness].append(wall)
                        commands[witness] = ran
                        failures += bad
    pairs = args.nodes * (args.nodes - 1) // 2
    with_s, without_s = statistics.median(times[True]), statistics.median(times[False])
    print(f"{args.nodes} nodes, {pairs} pairs, TCP and RDMA (4 rails each), {args.repeat} sweep(s) each way")
    print(f"with the counter witnesses: {with_s:.1f} s (runs {', '.join(f'{t:.1f}' for t in times[True])}); "
          f"{commands[True]} commands in the evidence")
    print(f"without (--fabric-no-witness): {without_s:.1f} s (runs {', '.join(f'{t:.1f}' for t in times[False])}); "
          f"{commands[False]} commands")
    print(f"ratio with / without: {with_s / without_s:.2f}x; failed or errored checks: {failures}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
