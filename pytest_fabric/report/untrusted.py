"""Reading files another party handed over: a record, its evidence, its signatures.

Whoever holds a record can rewrite it and recompute its seal, so nothing in it is trusted: a file
it names may be a device (``/dev/zero`` reads forever), a FIFO (blocks forever), a symbolic link
out of the bundle, or larger than memory; and its JSON may hold what JSON readers disagree on.

- :func:`read_capped` reads a regular file (never a device, FIFO or socket; with
  ``follow_symlinks=False`` never a symbolic link either), refusing one larger than a cap.
- :func:`sha256_capped` hashes one the same way, in chunks, so memory stays flat.
- :func:`loads_strict` parses JSON refusing ``NaN``, ``Infinity``, ``-Infinity`` (and numbers too
  large for a double, which Python reads as infinity) and a key given twice in one object: Python
  keeps the last of two keys, other readers the first, so such a file says two things at once.
  The error names where (``checks[3].measured.value``) and what was wrong.

Refusals are :class:`RefusedFile` (an ``OSError``, so callers that already say "cannot read" for
an unreadable file say it for these) and :class:`StrictJSONError` (a ``ValueError``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["RECORD_MAX_BYTES", "SIGNERS_MAX_BYTES", "RefusedFile", "StrictJSONError", "loads_strict", "read_capped",
           "sha256_capped"]

#: The largest record read (``--conformance-json`` aims at under 20 MB, a few thousand checks).
RECORD_MAX_BYTES = 64 << 20
#: The largest allowed_signers file read (one line per key).
SIGNERS_MAX_BYTES = 1 << 20
_CHUNK = 1 << 20


class RefusedFile(OSError):
    """A path that is not a regular file, is a symbolic link where none is allowed, or is too large."""


class StrictJSONError(ValueError):
    """JSON that readers disagree on: ``where`` (a key path) and ``what`` was wrong."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where = where
        self.what = what


_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def _size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def _open_regular(path: Path, limit: int, follow_symlinks: bool) -> int:
    """A descriptor of ``path`` once it is known to be a regular file no larger than ``limit``."""
    # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise RefusedFile(f"{path} is a symbolic link: only a regular file is read here") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = _KINDS.get(stat.S_IFMT(st.st_mode), "not a file")
            raise RefusedFile(f"{path} is not a regular file ({kind}): refused unread")
        if st.st_size > limit:
            raise RefusedFile(f"{path} is larger than {_size_text(limit)} ({_size_text(st.st_size)}): refused unread")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _chunks(fd: int, path: Path, limit: int) -> Iterator[bytes]:
    """The file's bytes, refusing it once more than ``limit`` came (it grew after fstat)."""
    seen = 0
    with os.fdopen(fd, "rb", buffering=0) as f:
        while chunk := f.read(min(_CHUNK, limit + 1 - seen)):
            seen += len(chunk)
            if seen > limit:
                raise RefusedFile(f"{path} is larger than {_size_text(limit)}: refused")
            yield chunk


def read_capped(path: str | Path, limit: int, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file ``path``; :class:`RefusedFile` for anything else or above ``limit``."""
    path = Path(path)
    return b"".join(_chunks(_open_regular(path, limit, follow_symlinks), path, limit))


def sha256_capped(path: str | Path, limit: int, *, follow_symlinks: bool = False) -> str:
    """SHA-256 (hex) of the regular file ``path``, read in chunks; refused as :func:`read_capped` refuses."""
    path = Path(path)
    digest = hashlib.sha256()
    for chunk in _chunks(_open_regular(path, limit, follow_symlinks), path, limit):
        digest.update(chunk)
    return digest.hexdigest()


# ------------------------------------------------------------------------------------------- strict JSON


class _NonFinite:
    """Stands where the text had NaN, Infinity or a number a double cannot hold, until the walk names where."""

    def __init__(self, spelling: str) -> None:
        self.spelling = spelling


class _Duplicated(dict):  # type: ignore[type-arg]
    """An object in which a key was given more than once (``twice`` names them)."""

    twice: list[str]


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    twice = []
    for k, v in pairs:
        if k in out:
            twice.append(k)
        out[k] = v
    if not twice:
        return out
    marked = _Duplicated(out)
    marked.twice = twice
    return marked


def _float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _step(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    shown = key if key.isidentifier() else json.dumps(key)
    return f"{where}.{shown}" if where else shown


def _first_problem(doc: Any) -> StrictJSONError | None:
    """The first NaN/Infinity or repeated key, in document order, with its key path (iterative: no depth limit)."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, _NonFinite):
            return StrictJSONError(where or "(top level)",
                                   f"{value.spelling} is not a number JSON allows (NaN and Infinity are refused)")
        if isinstance(value, _Duplicated):
            key = value.twice[0]
            return StrictJSONError(_step(where, key),
                                   f"key {json.dumps(key)} given twice in one object (readers disagree on which counts)")
        if isinstance(value, dict):
            stack.extend((_step(where, k), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((_step(where, i), v) for i, v in reversed(list(enumerate(value))))
    return None


def loads_strict(text: str | bytes) -> Any:
    """``json.loads`` that refuses NaN, Infinity and repeated keys at any depth (:class:`StrictJSONError`).

    Text that is not JSON raises ``json.JSONDecodeError`` (a ``ValueError``) as ``json.loads`` does.
    """
    try:
        doc = json.loads(text, object_pairs_hook=_object, parse_constant=_NonFinite, parse_float=_float)
    except RecursionError:
        raise StrictJSONError("(top level)", "nested deeper than a JSON reader follows: not a record") from None
    problem = _first_problem(doc)
    if problem is not None:
        raise problem
    return doc
