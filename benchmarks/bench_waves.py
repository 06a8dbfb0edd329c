"""Per-node checks in waves on the simulated cluster: N nodes at once vs one node (goal: 1.5x or less).

A per-node check of D seconds measured one node at a time takes N x D; in a wave it
should take about D. This runs the same check on one node and on N nodes and prints
wall time over one node's wall time, for

- ``dns``: egress dns_resolve with a stand-in ``getent`` that sleeps D seconds first,
- ``fio``: storage random_read_iops, fio time-based for D seconds on the node's /tmp.

    sudo python benchmarks/bench_waves.py [--nodes 16] [--duration 3] [--check dns --check fio]

Each figure is the pytest session's wall time (connections, collection and all), and the
wave's own time from its progress line. Needs root (network namespaces), sshd and fio;
traffic stays inside the namespaces this script creates, which it tears down at the end.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # simcluster; pytest_fabric is the installed copy

from simcluster import SimCluster, missing_prerequisites  # noqa: E402

GOAL = 1.5

CHECKS = {
    # check -> (profile text with {d}, pytest -k, the check's name in the progress line)
    "dns": ("name: bench\negress:\n  dns_resolve: {{max: 60 s}}\n", "dns_resolve", "dns_resolve"),
    "fio": (
        "name: bench\nstorage:\n"
        "  random_read_iops: {{min: 1, runtime: {d} s, size: 16 MiB, direct: false}}\n",
        "random_read_iops",
        "random_read_iops",
    ),
}


def _run(work: Path, inventory: Path, profile: Path, select: str) -> tuple[float, str]:
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile), "-k", select,
         "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=work, capture_output=True, text=True,
    )
    elapsed = time.monotonic() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"pytest exited {result.returncode}:\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
    return elapsed, result.stdout


def _wave_s(output: str, check: str) -> float | None:
    found = re.search(rf"fabric: {check} wave: \d+ measured in ([\d.]+) (s|min)", output)
    if found is None:
        return None
    return float(found.group(1)) * (60 if found.group(2) == "min" else 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--duration", type=int, default=3, help="seconds one node's check takes (D)")
    parser.add_argument("--check", action="append", choices=sorted(CHECKS), help="dns, fio (default: both)")
    args = parser.parse_args()
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    checks = args.check or sorted(CHECKS)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with SimCluster(args.nodes, work / "sim", name="bench") as cluster:
            print(f"{args.nodes} simulated nodes up in {cluster.started_s:.1f} s")
            for node in cluster.nodes:
                cluster.install_tool(node, "getent", f'sleep {args.duration}\nexec /usr/bin/getent "$@"\n')
            extra = {"egress": {"targets": ["localhost"]}}
            one = cluster.write_inventory(work / "one.yaml", nodes=cluster.nodes[:1], extra=extra)
            every = cluster.write_inventory(work / "every.yaml", extra=extra)
            for check in checks:
                text, select, name = CHECKS[check]
                profile = work / f"{check}.yaml"
                profile.write_text(text.format(d=args.duration))
                single, out1 = _run(work, one, profile, select)
                wall, out_n = _run(work, every, profile, select)
                wave = _wave_s(out_n, name)
                summary = (out_n.strip().splitlines() or ["(no output)"])[-1]
                print(f"{check}: one node {single:.1f} s, {args.nodes} nodes {wall:.1f} s: "
                      f"{wall / single:.2f}x of one node (goal <= {GOAL}x; one at a time would be "
                      f"~{args.nodes}x)  [{summary.strip('= ')}]")
                if wave is not None:
                    print(f"  the wave itself: {wave:.0f} s for {args.nodes} nodes of D = {args.duration} s "
                          f"({wave / args.duration:.2f}x D)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
