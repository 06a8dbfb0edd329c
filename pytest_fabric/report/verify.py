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

So the record is read as hostile (:mod:`.untrusted`): a regular file of at most
:data:`RECORD_MAX_BYTES`, JSON without NaN, Infinity or a key given twice (CANNOT READ, naming
the key path), evidence only as ``[FOLDER/]<sha256>.<ext>`` in one folder inside the record's,
never a link, device or FIFO, hashed under :data:`EVIDENCE_MAX_BYTES`.  The first line of each
record carries the overall result of its seal and signatures (``BAD: sealed, 0 of 2 signatures
hold``), so a reader who stops there is not told OK.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_fabric.report.untrusted import (
    RECORD_MAX_BYTES,
    SIGNERS_MAX_BYTES,
    RefusedFile,
    StrictJSONError,
    loads_strict,
    read_capped,
    sha256_capped,
)

__all__ = ["EVIDENCE_MAX_BYTES", "RECORD_MAX_BYTES", "Verification", "canonical_json", "check_file", "main", "record_sha256", "verify_file", "verify_record"]


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


#: The largest evidence file hashed (read in 1 MiB chunks: memory stays flat whatever the cap).
EVIDENCE_MAX_BYTES = 1 << 30
#: What an evidence file is called: the SHA-256 of its content and an extension (evidence.write_output).
_EVIDENCE_NAME = re.compile(r"[0-9a-f]{64}\.[A-Za-z0-9]{1,16}")
_STREAMS = ("stdout_file", "stderr_file")


def _shown(text: object) -> str:
    """A value from the record, safe to print: quoted, control characters escaped (the record is not trusted)."""
    return json.dumps(str(text))


def _references(record: Mapping[str, Any]) -> tuple[list[tuple[str, str]], list[str]]:
    """``([(where, name), ...], shape problems)``: every evidence file the record names, and what is malformed.

    ``where`` is the key path (``checks[2].evidence[0].stdout_file``), for messages.
    """
    checks = record.get("checks")
    if checks is None:
        return [], []
    if not isinstance(checks, list):
        return [], ["checks is not a list: not a record --conformance-json wrote"]
    refs: list[tuple[str, str]] = []
    bad: list[str] = []
    for i, check in enumerate(checks):
        if not isinstance(check, dict):
            bad.append(f"checks[{i}] is not an object")
            continue
        named: list[tuple[str, Any]] = [(f"checks[{i}].traceback_file", check.get("traceback_file"))]
        evidence = check.get("evidence")
        if evidence is not None and not isinstance(evidence, list):
            bad.append(f"checks[{i}].evidence is not a list")
            evidence = None
        for j, item in enumerate(evidence or []):
            if not isinstance(item, dict):
                bad.append(f"checks[{i}].evidence[{j}] is not an object")
                continue
            named += [(f"checks[{i}].evidence[{j}].{s}", item.get(s)) for s in _STREAMS]
        for where, name in named:
            if name is None or name == "":
                continue
            if not isinstance(name, str):
                bad.append(f"{where} is not a file name")
                continue
            refs.append((where, name))
    return refs, [f"{p}: not a record --conformance-json wrote" for p in bad[:5]] + (
        [f"... and {len(bad) - 5} more"] if len(bad) > 5 else [])


def _evidence_path(base: Path, name: str, folders: list[str]) -> Path | str:
    """Where the evidence file ``name`` lies under ``base``, or why it is refused unread.

    Only ``[FOLDER/]<sha256>.<ext>`` is accepted, with FOLDER plain relative components, the same
    for every file of the record (the run's --evidence-dir), and inside the record's folder once
    symbolic links are followed: a record names its own evidence, nothing else on the disk.
    """
    *dirs, leaf = name.split("/")
    if not _EVIDENCE_NAME.fullmatch(leaf):
        return (f"evidence file {_shown(name)} is not named <sha256>.<ext> (64 lowercase hex digits, a dot, an "
                "extension) as --evidence-dir names its files: refused unread")
    if name.startswith("/") or "\\" in name or any(d in ("", ".", "..") for d in dirs):
        return (f"evidence file {_shown(name)} lies outside the record's folder {base}: verify reads evidence only "
                "from the one evidence folder inside it (keep --evidence-dir inside the record's folder): refused unread")
    folder = "/".join(dirs)
    if not folders:
        folders.append(folder)
    elif folders[0] != folder:
        return (f"evidence file {_shown(name)} is not in the record's one evidence folder {_shown(folders[0] + '/')}: "
                "refused unread")
    root = os.path.realpath(base)
    real = os.path.realpath(base / folder) if folder else root
    if os.path.commonpath([root, real]) != root:
        return (f"evidence folder {_shown(folder)} leads outside the record's folder {base} (a symbolic link to {real}): "
                "refused unread")
    return base / folder / leaf if folder else base / leaf


def _evidence_problems(record: Mapping[str, Any], base: Path) -> tuple[list[str], list[str]]:
    """``(edited, unreadable)``: evidence files whose content differs from their name, and those not checked."""
    refs, unreadable = _references(record)
    edited: list[str] = []
    folders: list[str] = []
    for where, name in refs:
        path = _evidence_path(base, name, folders)
        if isinstance(path, str):
            unreadable.append(f"{where}: {path}")
            continue
        try:
            digest = sha256_capped(path, EVIDENCE_MAX_BYTES)
        except FileNotFoundError:
            unreadable.append(f"{where}: evidence file {_shown(name)} is missing")
            continue
        except RefusedFile as exc:
            unreadable.append(f"{where}: evidence file {exc}")
            continue
        except OSError as exc:
            unreadable.append(f"{where}: evidence file {_shown(name)} cannot be read: {exc.strerror or exc}")
            continue
        if digest != path.name.split(".")[0]:
            edited.append(f"{where}: evidence file {_shown(name)} was EDITED")
    return edited, unreadable


def check_file(path: str | Path) -> Verification:
    """Check a record file and the evidence files it names.

    A file that is not there, not JSON or not sealed says so: only content that
    no longer matches its hash is ``edited``.  The record is not trusted: a file that is not a
    regular file or is larger than :data:`RECORD_MAX_BYTES`, and JSON with NaN, Infinity or a key
    given twice (readers disagree on those), cannot be read; evidence it names is read only from
    its evidence folder (:func:`_evidence_path`).
    """
    path = Path(path)
    try:
        text = read_capped(path, RECORD_MAX_BYTES).decode("utf-8")
    except FileNotFoundError:
        return Verification("cannot read", [f"{path}: no such file"])
    except RefusedFile as exc:
        return Verification("cannot read", [f"{exc}; not a record --conformance-json wrote"])
    except (OSError, UnicodeDecodeError) as exc:
        return Verification("cannot read", [f"{path}: cannot read: {exc}"])
    try:
        record = loads_strict(text)
    except StrictJSONError as exc:
        return Verification("cannot read", [f"{path}: {exc.where}: {exc.what}; --conformance-json never writes this: "
                                            "refused rather than verified"])
    except ValueError as exc:
        return Verification("cannot read", [f"{path}: not JSON ({exc}); not a record --conformance-json wrote"])
    if not isinstance(record, dict) or "sha256" not in record:
        return Verification("not sealed", [f"{path}: no sha256 field: not a record --conformance-json wrote"])
    problems = []
    if not verify_record(record):
        problems.append(f"{path}: content does not match its sha256 {_shown(record['sha256'])}")
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
#: The words a record's first line can carry, worst first; the exit status each gives.
_WORDS = {"EDITED": 1, "BAD": 1, "CANNOT READ": 2, "NOT SEALED": 2, "NOT SIGNED": 2, "OK": 0}
_SEAL = {"ok": "sealed", "edited": "the content does not match its seal", "not sealed": "no seal"}


def _checked(name: str, signers: Path | None, required: Sequence[str]) -> tuple[str, str, int, list[str]]:
    """``(first line, its word, exit status, the lines under it)`` for one record: the seal and, with ``signers``, signatures."""
    result = check_file(name)
    word, code = result.status.upper(), _EXIT[result.status]
    lines = [f"  {p}" for p in result.problems]
    if signers is None or result.status == "cannot read":
        return f"{name}: {word}", word, code, lines
    # Here, not at the top: sign.py is a pytest plugin, and checking a seal alone (no --signers)
    # loads no pytest.
    from pytest_fabric.report.sign import check_signatures, required_signers

    checks = check_signatures(Path(name), signers)
    for c in checks:
        if c.same_key_as is not None:  # one key is one signer: said once
            lines.append(f"  {c.signature.name}: same key as {c.same_key_as.name} ({c.principal}): one signer, counted once")
        else:
            lines.append(f"  {c.signature.name}: {'GOOD' if c.ok else 'BAD'}: {c.message}")
    held = sum(c.ok for c in checks)
    said = [_SEAL[result.status], f"{held} of {len(checks)} signatures hold" if checks else "no signature"]
    if not checks:
        lines.append(f"  NOT SIGNED: no {Path(name).name}.sig beside it")
        word, code = (word, code) if code else ("NOT SIGNED", 2)
    elif held < len(checks):
        word, code = (word, code) if code == 1 else ("BAD", 1)
    if required:
        needed = required_signers(Path(name), signers, required, checks)
        lines += [f"  {r.message}" for r in needed]
        missing = [r.principal for r in needed if not r.ok]
        if missing:
            said.append(f"not signed by {', '.join(missing)}")
            word, code = (word, code) if code else ("NOT SIGNED", 2)
        else:
            said.append(f"signed by {', '.join(r.principal for r in needed)}")
    return f"{name}: {word}: {', '.join(said)}", word, code, lines


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: per record a first line ``NAME: RESULT[: what]``, then why.

    RESULT is ``OK``, ``EDITED``, ``CANNOT READ`` or ``NOT SEALED``; with ``--signers`` it sums up
    the seal and the signatures (``BAD`` when one does not hold, ``NOT SIGNED`` when there is none
    or a principal ``--require`` names has not signed), and only ``OK`` when everything holds.  With
    several records a first line says the worst of them.  Exit 0 when every record is intact, 1
    when any was edited (or a signature does not hold), 2 when one could not be checked, is not
    signed, or lacks a signature ``--require`` asks for.
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
        if signers is None or not signers.exists():
            print(f"--signers: {signers or 'give an allowed_signers file'}: no such file")
            return 2
        try:  # ssh-keygen reads it too: a FIFO or a device there would hang or flood it
            read_capped(signers, SIGNERS_MAX_BYTES)
        except OSError as exc:
            print(f"--signers: {exc}")
            return 2
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m pytest_fabric.report.verify [--signers ALLOWED_SIGNERS [--require PRINCIPAL ...]] "
              "RECORD.json [...]")
        return 2
    if required and signers is None:
        print("--require needs --signers ALLOWED_SIGNERS: the file that lists each principal's keys")
        return 2
    results = [_checked(name, signers, required) for name in args]
    status = 0
    for _head, _word, code, _lines in results:
        status = 1 if 1 in (status, code) else max(status, code)
    if len(results) > 1:  # the first line says how it went for all of them, the worst first
        words = [word for _h, word, _c, _l in results]
        counts = {w: words.count(w) for w in _WORDS if w in words}
        print(f"{next(iter(counts))}: " + "; ".join(f"{n} of {len(results)} records {w}" for w, n in counts.items()))
    for head, _word, _code, lines in results:
        print(head)
        for line in lines:
            print(line)
    return status


if __name__ == "__main__":
    sys.exit(main())
