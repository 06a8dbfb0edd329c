"""Collection time for a large inventory: 1,024 nodes, `pairs: ring` (goal: under 10 s).

    python benchmarks/bench_collection.py [--nodes 1024]

Only collects (--collect-only): no node is contacted.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        width = len(str(args.nodes))
        (work / "inv.yaml").write_text(
            "name: big\n"
            "nodes:\n"
            f"  - name: gpu[{'1'.zfill(width)}-{args.nodes}]\n"
            f"    host: 10.200.[0-3].[1-{args.nodes // 4}]\n" if args.nodes % 4 == 0 and args.nodes // 4 <= 254 else
            "name: big\nnodes:\n" f"  - name: gpu[{'1'.zfill(width)}-{args.nodes}]\n"
        )
        (work / "ring.yaml").write_text("name: ring\nextends: hdr200\ninter_node:\n  pairs: ring\n")
        started = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "--cluster", "inv.yaml", "--profile", "ring.yaml", "--collect-only", "-q",
             "-p", "no:cacheprovider"],
            cwd=work, capture_output=True, text=True,
        )
        elapsed = time.monotonic() - started
    tail = [line for line in result.stdout.splitlines() if "collected" in line or "tests" in line][-1:]
    print(tail[0] if tail else result.stdout[-2000:] + result.stderr[-2000:])
    print(f"collection of {args.nodes} nodes, pairs: ring, profile hdr200: {elapsed:.2f} s "
          f"({elapsed / 10:.2f}x of the 10 s goal)")
    return 0 if result.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
