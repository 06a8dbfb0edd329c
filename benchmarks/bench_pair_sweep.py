"""All-pairs TCP sweep on the simulated cluster: rounds of disjoint pairs vs one pair at a time.

An all-pairs sweep of N nodes has N(N-1)/2 pairs.  Measured one pair at a
time with D seconds each it takes N(N-1)/2 x D; measured in rounds of disjoint
pairs it should take close to (N-1) x D.  This prints the measured time of
the tcp_throughput tests and its ratio to that ideal (goal: within 1.3x).

    sudo python benchmarks/bench_pair_sweep.py [--nodes 8] [--duration 2]

Needs root (network namespaces), sshd and iperf3; traffic stays inside the
namespaces this script creates, which it tears down at the end.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # simcluster; pytest_fabric is the installed copy

from simcluster import SimCluster, missing_prerequisites  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--duration", type=int, default=2, help="iperf3 seconds per pair (D)")
    args = parser.parse_args()
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        profile = work / "sweep.yaml"
        profile.write_text(
            "name: sweep\n"
            "inter_node:\n"
            f"  tcp_throughput: {{min: 100 Mb/s, streams: 1, duration: {args.duration} s}}\n"
            "  pairs: all\n"
        )
        with SimCluster(args.nodes, work / "sim", name="bench") as cluster:
            inventory = cluster.write_inventory(work / "inventory.yaml")
            started = time.monotonic()
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile),
                 "-k", "tcp_throughput and not outlier", "-q", "-p", "no:cacheprovider", "--junitxml", str(work / "j.xml")],
                cwd=work, capture_output=True, text=True,
            )
            elapsed = time.monotonic() - started
    n, d = args.nodes, args.duration
    pairs = n * (n - 1) // 2
    ideal = (n - 1) * d
    serial = pairs * d
    print(result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-2000:])
    print(f"all-pairs TCP sweep, {n} nodes, {pairs} pairs, D={d} s: {elapsed:.1f} s "
          f"(ideal (N-1)xD = {ideal} s; one pair at a time = {serial} s)")
    print(f"ratio to ideal: {elapsed / ideal:.2f}x (goal <= 1.3x); speed-up over one-at-a-time: {serial / elapsed:.2f}x")
    return 0 if result.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
