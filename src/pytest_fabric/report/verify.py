"""Seal and check a conformance record: a SHA-256 over its canonical JSON.

The hash covers ``run`` and ``checks`` serialised with sorted keys, no
whitespace and ASCII escapes (:func:`canonical_json`), so any edit to a value,
a check added or removed, or a reordered list changes it; reformatting the
file does not.  Evidence files written with ``--evidence-dir`` are named by
the SHA-256 of their content and checked too.

    python -m pytest_fabric.report.verify record.json    # prints OK or EDITED; exit 0 or 1

The hash shows a record was altered after the run; it is not a signature:
whoever can edit the file can recompute it.  Keep the printed hash (or the
record) where the other party can see it to make it bind.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["canonical_json", "main", "record_sha256", "verify_file", "verify_record"]


def canonical_json(obj: Any) -> str:
    """The one serialisation the hash is taken over: sorted keys, compact, ASCII, no NaN."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def record_sha256(record: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of ``{"run": ..., "checks": ...}``: everything but the hash field itself."""
    body = {"checks": record.get("checks"), "run": record.get("run")}
    return hashlib.sha256(canonical_json(body).encode("ascii")).hexdigest()


def verify_record(record: Mapping[str, Any]) -> bool:
    """True when the record's ``sha256`` matches its content."""
    return isinstance(record.get("sha256"), str) and record_sha256(record) == record["sha256"]


def _evidence_problems(record: Mapping[str, Any], base: Path) -> list[str]:
    problems = []
    for check in record.get("checks") or []:
        for item in check.get("evidence") or []:
            for stream in ("stdout", "stderr"):
                name = item.get(f"{stream}_file")
                if not name:
                    continue
                path = base / name
                if not path.is_file():
                    problems.append(f"{check.get('nodeid')}: evidence file {name} is missing")
                    continue
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                if digest != Path(name).stem:
                    problems.append(f"{check.get('nodeid')}: evidence file {name} was EDITED")
    return problems


def verify_file(path: str | Path) -> tuple[bool, list[str]]:
    """Check a record file and the evidence files it names; ``(ok, problems)``."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return False, [f"{path}: cannot read a JSON record: {exc}"]
    if not isinstance(record, dict) or "sha256" not in record:
        return False, [f"{path}: no sha256 field; not a pytest-fabric record, or written by an interrupted run"]
    problems = []
    if not verify_record(record):
        problems.append(f"{path}: content does not match its sha256 {record['sha256']}")
    problems += _evidence_problems(record, path.parent)
    return not problems, problems


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: verify each record named; prints ``OK`` or ``EDITED`` per file, exit 1 if any is edited."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m pytest_fabric.report.verify RECORD.json [...]")
        return 2
    status = 0
    for name in args:
        ok, problems = verify_file(name)
        print(f"{name}: {'OK' if ok else 'EDITED'}")
        for p in problems:
            print(f"  {p}")
        status |= 0 if ok else 1
    return status


if __name__ == "__main__":
    sys.exit(main())
