"""Seal and check a conformance record: a SHA-256 over its canonical JSON.

The hash covers ``run`` and ``checks`` serialised with sorted keys, no
whitespace and ASCII escapes (:func:`canonical_json`), so any edit to a value,
a check added or removed, or a reordered list changes it; reformatting the
file does not.  Evidence files written with ``--evidence-dir`` are named by
the SHA-256 of their content and checked too.

    python -m pytest_fabric.report.verify record.json    # OK (exit 0), EDITED (1), CANNOT READ or NOT SEALED (2)

With ``--signers ALLOWED_SIGNERS`` it checks the SSH signatures beside the record too
(:mod:`.sign`): each must hold, and at least one must be there; two by the same key are one
signer.  ``--require PRINCIPAL``, once per party, asks that each of them signed with a key the
file lists for that principal, one key counting for one principal only; a party that has not
is named with the command that signs (exit 2)::

    python -m pytest_fabric.report.verify --signers allowed_signers \
        --require provider@example.com --require tenant@example.com record.json

The hash shows a record was altered after the run; it is not a signature:
whoever can edit the file can recompute it.  Keep the printed hash (or the
record) where the other party can see it to make it bind.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Verification", "canonical_json", "check_file", "main", "record_sha256", "verify_file", "verify_record"]


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


@dataclass(frozen=True)
class Verification:
    """What checking one record found: ``ok``, ``edited``, ``cannot read`` or ``not sealed``, and why."""

    status: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _evidence_problems(record: Mapping[str, Any], base: Path) -> tuple[list[str], list[str]]:
    """``(edited, unreadable)``: evidence files whose content differs from their name, and those not there."""
    edited, unreadable = [], []
    for check in record.get("checks") or []:
        for item in check.get("evidence") or []:
            for stream in ("stdout", "stderr"):
                name = item.get(f"{stream}_file")
                if not name:
                    continue
                path = base / name
                try:
                    digest = hashlib.sha256(path.read_bytes()).hexdigest()
                except FileNotFoundError:
                    unreadable.append(f"{check.get('nodeid')}: evidence file {name} is missing")
                    continue
                except OSError as exc:
                    unreadable.append(f"{check.get('nodeid')}: evidence file {name} cannot be read: {exc.strerror or exc}")
                    continue
                if digest != Path(name).stem:
                    edited.append(f"{check.get('nodeid')}: evidence file {name} was EDITED")
    return edited, unreadable


def check_file(path: str | Path) -> Verification:
    """Check a record file and the evidence files it names.

    A file that is not there, not JSON or not sealed says so: only content that
    no longer matches its hash is ``edited``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Verification("cannot read", [f"{path}: no such file"])
    except (OSError, UnicodeDecodeError) as exc:
        return Verification("cannot read", [f"{path}: cannot read: {exc}"])
    try:
        record = json.loads(text)
    except ValueError as exc:
        return Verification("cannot read", [f"{path}: not JSON ({exc}); not a record --conformance-json wrote"])
    if not isinstance(record, dict) or "sha256" not in record:
        return Verification("not sealed", [f"{path}: no sha256 field: not a record --conformance-json wrote"])
    problems = []
    if not verify_record(record):
        problems.append(f"{path}: content does not match its sha256 {record['sha256']}")
    edited, unreadable = _evidence_problems(record, path.parent)
    problems += edited
    if problems:
        return Verification("edited", problems + unreadable)
    if unreadable:
        return Verification("cannot read", unreadable)
    return Verification("ok")


def verify_file(path: str | Path) -> tuple[bool, list[str]]:
    """Check a record file and the evidence files it names; ``(ok, problems)`` (see :func:`check_file`)."""
    result = check_file(path)
    return result.ok, result.problems


_EXIT = {"ok": 0, "edited": 1, "cannot read": 2, "not sealed": 2}


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``OK``, ``EDITED``, ``CANNOT READ`` or ``NOT SEALED`` per file.

    Exit 0 when every record is intact, 1 when any was edited (or a signature does not hold), 2 when
    one could not be checked, is not signed, or lacks a signature ``--require`` asks for.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    required: list[str] = []
    while "--require" in args:  # a principal that must have signed (with --signers), once per party
        at = args.index("--require")
        if at + 1 >= len(args):
            print("--require: give a principal, as allowed_signers names it (tenant@example.com)")
            return 2
        required.append(args[at + 1])
        del args[at : at + 2]
    signers = None
    if "--signers" in args:  # SSH signatures too (report/sign.py): each must verify, at least one must be there
        at = args.index("--signers")
        signers = Path(args[at + 1]) if at + 1 < len(args) else None
        del args[at : at + 2]
        if signers is None or not signers.is_file():
            print(f"--signers: {signers or 'give an allowed_signers file'}: no such file")
            return 2
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m pytest_fabric.report.verify [--signers ALLOWED_SIGNERS [--require PRINCIPAL ...]] "
              "RECORD.json [...]")
        return 2
    if required and signers is None:
        print("--require needs --signers ALLOWED_SIGNERS: the file that lists each principal's keys")
        return 2
    status = 0
    for name in args:
        result = check_file(name)
        print(f"{name}: {result.status.upper()}")
        for p in result.problems:
            print(f"  {p}")
        code = _EXIT[result.status]
        if signers is not None and result.status != "cannot read":
            from .sign import check_signatures, required_signers

            checks = check_signatures(Path(name), signers)
            for c in checks:
                if c.same_key_as is not None:  # one key is one signer: said once
                    print(f"  {c.signature.name}: same key as {c.same_key_as.name} ({c.principal}): one signer, counted once")
                else:
                    print(f"  {c.signature.name}: {'GOOD' if c.ok else 'BAD'}: {c.message}")
            if not checks:
                print(f"  NOT SIGNED: no {Path(name).name}.sig beside it")
            code = max(code, 2) if not checks else (1 if not all(c.ok for c in checks) else code)
            if required:
                needed = required_signers(Path(name), signers, required, checks)
                for r in needed:
                    print(f"  {r.message}")
                if not all(r.ok for r in needed):
                    code = 1 if code == 1 else 2  # an edit, or a signature that does not hold, still says 1
        status = 1 if 1 in (status, code) else max(status, code)
    return status


if __name__ == "__main__":
    sys.exit(main())
