"""What the corroborations cost: an 8-node all-pairs TCP and RDMA sweep and a sequential write on
each node's own disk, with the counter witnesses and without.

With them every pair measurement reads both ends' counters before and after (the interfaces'
tx/rx_bytes for TCP, the HCA ports' PortXmitData/PortRcvData for RDMA: four commands a pair, or a
rail, more), and every fio run the storage's counters on its node (/proc/diskstats of the node's
ext4 loop device: two commands); ``--fabric-no-witness`` leaves them out. The internal and duration
checks, the cross-check of TCP against RDMA and the tool identity listing (one command per node
per run) run in both. Prints the sweep's time each way, its ratio, the storage checks' own time
each way, and the commands the witness added.

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
from simcluster.mounts import SimMounts  # noqa: E402

PROFILE = """name: corroboration-bench
inter_node:
  tcp_throughput: {min: 0.2 Gb/s, streams: 1, duration: 1 s}
  rdma_bandwidth: {min: 50% line, size: 8 MiB, qps: 1, repeat: 1, duration: 1 s}
  pairs: all
storage:
  sequential_write: {min: 1 MB/s, size: 64 MiB}
"""


def _run(work: Path, inventory: Path, profile: Path, witness: bool) -> tuple[float, int, int, float]:
    """One sweep: wall seconds, commands in the record's evidence, checks that failed or errored, and the
    storage checks' seconds (their own durations added up)."""
    record = work / f"record-{witness}.json"
    args = [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile),
            "-k", "(tcp_throughput or rdma_bandwidth or sequential_write) and not outlier", "-q", "-p", "no:cacheprovider",
            f"--conformance-json={record}"]
    if not witness:
        args.append("--fabric-no-witness")
    record.unlink(missing_ok=True)  # a run that writes none must not be read as the last one's
    started = time.monotonic()
    result = subprocess.run(args, cwd=work, capture_output=True, text=True)
    wall = time.monotonic() - started
    if result.returncode not in (0, 1) or not record.exists():
        raise SystemExit(f"the sweep did not run (exit {result.returncode}):\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
    data = json.loads(record.read_text())
    commands = sum(len(c.get("evidence") or []) for c in data["checks"])
    bad = sum(1 for c in data["checks"] if c["outcome"] in ("failed", "error"))
    if bad:
        print(result.stdout[-3000:], file=sys.stderr)
    storage = sum(float(c.get("duration_s") or 0) for c in data["checks"] if c["check"] == "sequential_write")
    return wall, commands, bad, storage


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
    storage_times: dict[bool, list[float]] = {True: [], False: []}
    commands: dict[bool, int] = {}
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        profile = work / "bench.yaml"
        profile.write_text(PROFILE)
        with SimCluster(args.nodes, work / "sim", name="bench") as cluster, SimMounts(cluster) as mounts:
            disk = mounts.loop_disks(size_mib=256)  # each node's own ext4 on its own loop device
            inventory = cluster.write_inventory(work / "inventory.yaml", extra={"storage": {"mounts": [disk]}})
            with hardware_installed(cluster, {n.name: FakeHardware() for n in cluster.nodes}):
                for _ in range(args.repeat):
                    for witness in (True, False):
                        wall, ran, bad, storage = _run(work, inventory, profile, witness)
                        times[witness].append(wall)
                        storage_times[witness].append(storage)
                        commands[witness] = ran
                        failures += bad
    pairs = args.nodes * (args.nodes - 1) // 2
    with_s, without_s = statistics.median(times[True]), statistics.median(times[False])
    print(f"{args.nodes} nodes, {pairs} pairs, TCP and RDMA (4 rails each) and a sequential write on each node, "
          f"{args.repeat} sweep(s) each way")
    print(f"with the counter witnesses: {with_s:.1f} s (runs {', '.join(f'{t:.1f}' for t in times[True])}); "
          f"{commands[True]} commands in the evidence")
    print(f"without (--fabric-no-witness): {without_s:.1f} s (runs {', '.join(f'{t:.1f}' for t in times[False])}); "
          f"{commands[False]} commands")
    print(f"ratio with / without: {with_s / without_s:.2f}x; failed or errored checks: {failures}")
    s_with, s_without = statistics.median(storage_times[True]), statistics.median(storage_times[False])
    print(f"sequential_write of 64 MiB on each node's loop disk: {s_with:.1f} s with the storage counters, "
          f"{s_without:.1f} s without (the checks' own durations added up): {s_with / s_without:.2f}x")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
