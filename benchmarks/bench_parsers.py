"""How long parsing the whole tool-output corpus takes, against a 1-second budget.

    python benchmarks/bench_parsers.py [--passes N] [--corpus PATH]

Each file is parsed by the first registered parser that claims it and reads it
(as the corpus-coverage test does); the figure is the mean wall time of one pass.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from pytest_fabric.parsers.base import ParseError, ToolReportedError, registry  # noqa: E402

BUDGET_S = 1.0


def plan(corpus: Path) -> list[tuple[str, Callable[[str], Any], str]]:
    """(relative path, parser function, text) for each corpus file some parser reads."""
    parsers = registry().values()
    work = []
    for path in sorted(p for p in corpus.rglob("*") if p.is_file() and p.name != "SOURCES.md"):
        relative = path.relative_to(corpus).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for parser in parsers:
            if any(relative == e.strip("/") or relative.startswith(e.strip("/") + "/") for e in parser.corpus_dirs):
                try:
                    parser.function(text)
                except ToolReportedError:
                    pass  # a capture of the tool failing still costs a parse
                except ParseError:
                    continue
                work.append((relative, parser.function, text))
                break
    return work


def main() -> int:
    """Run the benchmark and print the per-pass time and its ratio to the budget."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--passes", type=int, default=10)
    options.add_argument("--corpus", type=Path, default=Path(os.environ.get("FABRIC_CORPUS") or REPO.parent / "shared" / "corpus"))
    args = options.parse_args()
    if not args.corpus.is_dir():
        print(f"corpus not found at {args.corpus} (set FABRIC_CORPUS or --corpus)", file=sys.stderr)
        return 2
    work = plan(args.corpus)
    per_file = {relative: 0.0 for relative, _, _ in work}
    start = time.perf_counter()
    for _ in range(args.passes):
        for relative, function, text in work:
            t0 = time.perf_counter()
            try:
                function(text)
            except ParseError:
                pass  # the known captures of a tool failing
            per_file[relative] += time.perf_counter() - t0
    per_pass = (time.perf_counter() - start) / args.passes
    size = sum(len(text) for _, _, text in work)
    print(f"{len(work)} files, {size / 1e6:.2f} MB, {args.passes} passes")
    for relative, total in sorted(per_file.items(), key=lambda item: -item[1])[:5]:
        print(f"  slowest: {relative}: {total / args.passes * 1000:.1f} ms")
    print(f"corpus parse: {per_pass:.3f} s per pass ({per_pass / BUDGET_S:.2f}x of the {BUDGET_S:g} s budget)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
