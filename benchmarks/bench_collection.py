"""Collection of a large inventory: time and memory against the goals (10 s, 2 GB at 4,096 nodes).

    python benchmarks/bench_collection.py [--nodes 4096] [--profile ndr400-large] [--breakdown]
                                          [--cprofile out.prof]

Only collects (``--collect-only -qq``: no node is contacted, no item list printed), in a
fresh interpreter, as a run pays it before its first measurement. Prints the items, the
wall time and the peak memory of that process as ratios of the goals; ``--breakdown``
also lists the items per test function (where the items come from), ``--cprofile``
writes a profile of the collection (read it with ``python -m pstats``).
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

GOAL_S = 10.0
GOAL_BYTES = 2 * 1024**3


def _inventory(nodes: int) -> str:
    width = len(str(nodes))
    return f"name: big\nnodes:\n  - name: gpu[{'1'.zfill(width)}-{nodes}]\n"


def _collect(work: Path, profile: str, quiet: str, prefix: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    command = [*prefix, "-m", "pytest", "--cluster", "inv.yaml", "--profile", profile, "--collect-only", quiet,
               "-p", "no:cacheprovider"]
    started = time.monotonic()
    result = subprocess.run(command, cwd=work, capture_output=True, text=True)
    return result, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4096)
    parser.add_argument("--profile", default="ndr400-large", help="bundled name or path (default ndr400-large)")
    parser.add_argument("--breakdown", action="store_true", help="also count the items per test function")
    parser.add_argument("--cprofile", metavar="PATH", help="write a cProfile of the collection there")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "inv.yaml").write_text(_inventory(args.nodes))
        profile = str(Path(args.profile).resolve()) if Path(args.profile).exists() else args.profile
        prefix = [sys.executable]
        if args.cprofile:
            prefix += ["-m", "cProfile", "-o", str(Path(args.cprofile).resolve())]
        result, elapsed = _collect(work, profile, "-qq", prefix)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak = usage.ru_maxrss * 1024  # Linux: KiB
        cpu = usage.ru_utime + usage.ru_stime
        breakdown: Counter[str] = Counter()
        if args.breakdown:
            listed, _ = _collect(work, profile, "-q", [sys.executable])
            breakdown.update(line.split("[", 1)[0] for line in listed.stdout.splitlines() if "::" in line)
    if result.returncode != 0:
        print(result.stdout[-3000:] + result.stderr[-3000:], file=sys.stderr)
        return 1
    # -qq prints "path: count" per test file
    items = sum(int(m.group(1)) for m in re.finditer(r"^\S+\.py: (\d+)$", result.stdout, re.MULTILINE))
    for name, count in breakdown.most_common():
        print(f"{count:9,d}  {name}")
    header = [line for line in result.stdout.splitlines() if line.startswith("fabric: plan")]
    for line in header:
        print(line)
    print(f"collection of {args.nodes:,} nodes, profile {args.profile}: {items:,} items "
          f"({items / max(args.nodes, 1):.0f} per node)")
    # CPU time is the figure to compare on a shared machine: wall time also counts waiting for a core
    print(f"  CPU {cpu:.1f} s ({cpu / GOAL_S:.2f}x of the {GOAL_S:.0f} s goal), wall {elapsed:.1f} s "
          f"({elapsed / GOAL_S:.2f}x), peak memory {peak / 1e9:.2f} GB ({peak / GOAL_BYTES:.2f}x of the 2 GB goal)")
    if items:
        print(f"  {cpu / items * 1e6:.0f} us of CPU and {peak / items / 1024:.1f} KiB per item")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
