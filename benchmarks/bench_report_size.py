"""Where the bytes of a pytest-html report go: per outcome, per part of a test's data.

    python benchmarks/bench_report_size.py report.html [--top 5]

pytest-html 4 keeps every listed test as JSON inside one ``data-jsonblob`` attribute: its table
cells (``resultsTableRow``), a copy of each sortable cell's text (sorting reads it), its extras
(our evidence) and its log.  JSON and then the attribute escape that text again (a ``"`` in a
cell costs 6 bytes, a ``&lt;`` 8), so sizes here are counted as the file holds them.  Printed:
the file and gzip sizes, what lies outside the blob (our summary tables, heatmaps, pytest-html's
script), and per outcome the rows and bytes per row of each part, largest first.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from markupsafe import escape  # what pytest-html's template escapes the blob with (jinja2)

_BLOB = re.compile(r'data-jsonblob="([^"]*)"')
#: the keys of a test's data that are pytest-html's own; the others are copies of sortable cells
_OWN = ("extras", "resultsTableRow", "log", "testId", "result", "duration")
_UNLISTED = "(not listed, id only)"


def attribute_bytes(value: Any) -> int:
    """The bytes ``value`` takes in the file: as JSON, escaped into an HTML attribute."""
    return len(str(escape(json.dumps(value))).encode())


def breakdown(text: str) -> tuple[dict[str, int], Counter[str], dict[tuple[str, str], int], int]:
    """(totals by place, tests per outcome, bytes per (outcome, part), blob bytes) of a report's text."""
    found = _BLOB.search(text)
    if found is None:
        raise SystemExit("no data-jsonblob: not a pytest-html 4 report")
    blob = found.group(1)
    data = json.loads(html.unescape(blob))
    rows: Counter[str] = Counter()
    parts: dict[tuple[str, str], int] = defaultdict(int)
    for nodeid, tests in data["tests"].items():
        key_bytes = attribute_bytes(nodeid) + 4  # "nodeid": [...],
        if not tests:  # a test left out of the table whose teardown row was not: pytest-html keeps its id
            rows[_UNLISTED] += 1
            parts[(_UNLISTED, "test id key")] += key_bytes + 2
        for test in tests:
            outcome = str(test.get("result"))
            rows[outcome] += 1
            parts[(outcome, "test id key")] += key_bytes
            for key, value in test.items():
                part = key if key in _OWN else "sort copies"
                parts[(outcome, part)] += attribute_bytes(value) + len(key) + 6  # "key": ,
    totals = {"file": len(text.encode()), "gzip": len(gzip.compress(text.encode())),
              "blob": len(blob.encode()), "outside the blob": len(text.encode()) - len(blob.encode())}
    return totals, rows, parts, len(blob.encode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    args = parser.parse_args(argv)
    totals, rows, parts, _ = breakdown(args.report.read_text(encoding="utf-8"))
    for place, n in totals.items():
        print(f"{place:>17}: {n / 1e6:7.2f} MB")
    listed = [(o, n) for o, n in rows.most_common() if o != _UNLISTED]
    print(f"{'rows listed':>17}: {sum(n for _, n in listed)} ({', '.join(f'{n} {o}' for o, n in listed)})")
    for outcome, n in rows.most_common():
        mine = sorted(((p, b) for (o, p), b in parts.items() if o == outcome), key=lambda pb: -pb[1])
        total = sum(b for _, b in mine)
        print(f"{outcome}: {n} rows, {total / 1e6:.2f} MB, {total // n} B a row: "
              + ", ".join(f"{p} {b // n}" for p, b in mine))
    return 0


if __name__ == "__main__":
    sys.exit(main())
