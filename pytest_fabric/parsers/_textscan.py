"""Small text helpers shared by the InfiniBand, NIC and PCIe parsers.

They exist so that every number a parser reads goes through one guarded
conversion: a malformed field becomes a :class:`ParseError` naming the tool and
the line, never a bare ``ValueError`` from ``int()``.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput

__all__ = ["split_lines", "to_int", "to_decimal", "DECIMAL_RE", "launcher_lines", "strip_launcher_prefixes"]

# ASCII digits only: ``\d`` would also accept other scripts' digits, which
# int() takes but no tool prints, and '²'-like characters that int() rejects.
_INT_RE = re.compile(r"[+-]?[0-9]+")
_HEX_RE = re.compile(r"0[xX][0-9a-fA-F]+")
DECIMAL_RE = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def split_lines(tool: str, text: str) -> list[str]:
    """The text's lines without line endings (``\\r\\n`` and stray ``\\r`` removed).

    Raises :class:`UnrecognizedOutput` for empty or blank text, the most common
    way a capture goes wrong (tool missing, output redirected elsewhere).
    """
    if not isinstance(text, str):
        raise UnrecognizedOutput(tool, f"expected text, got {type(text).__name__}")
    if not text.strip():
        raise UnrecognizedOutput(tool, "empty output")
    return [line.rstrip("\r") for line in text.replace("\r\n", "\n").split("\n")]


def to_int(tool: str, value: str, *, line: int | None = None, what: str = "value") -> int:
    """``value`` as an int (decimal, or hexadecimal with ``0x``); a ParseError otherwise."""
    value = value.strip()
    if _INT_RE.fullmatch(value):
        return int(value)
    if _HEX_RE.fullmatch(value):
        return int(value, 16)
    raise ParseError(tool, f"{what} {value!r} is not an integer", line=line)


def to_decimal(tool: str, value: str, *, line: int | None = None, what: str = "value") -> Decimal:
    """``value`` as an exact Decimal (plain digits with an optional fraction only)."""
    value = value.strip()
    if DECIMAL_RE.fullmatch(value):
        return Decimal(value)
    raise ParseError(tool, f"{what} {value!r} is not a number", line=line)


def json_document(tool: str, text: str) -> object:
    """The first JSON value in ``text``, skipping noise before it (a terminal's ``^C``, a banner).

    Invalid or absurdly nested JSON becomes :class:`UnrecognizedOutput` naming the tool.
    """
    if not isinstance(text, str):
        raise UnrecognizedOutput(tool, f"expected text, got {type(text).__name__}")
    start = text.find("{")
    if start < 0:
        raise UnrecognizedOutput(tool, "no JSON object in the output")
    try:
        document, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise UnrecognizedOutput(tool, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise UnrecognizedOutput(tool, "invalid JSON: nested too deeply") from None
    return document


def json_list(tool: str, text: str, what: str) -> list[object]:
    """``text`` as a JSON list (iproute2's ``-j`` output), or a ParseError naming the tool."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(tool, f"looks like JSON but is not: {exc}") from None
    if not isinstance(data, list):
        raise UnrecognizedOutput(tool, f"JSON output is not a list of {what}")
    return data


# ``mpirun --tag-output``: ``[jobid,rank]<stdout>:`` (Open MPI 4) or the same with a space
# after the colon (Open MPI 5 / PRRTE); stderr and stddiag are tagged alike.
_MPI_TAG_RE = re.compile(r"^\[\d+,(?P<rank>\d+)\]<(?:stdout|stderr|stddiag)>: ?")
# ``srun -l`` / ``--label``: the task number, space-padded to the widest one (`` 0: ``,
# ``15: ``), after ``P<component> `` in a heterogeneous job.
_SRUN_LABEL_RE = re.compile(r"^\s*(?:P\d+\s+)?(?P<rank>\d+):(?: |$)")
# Lines srun and slurmstepd print themselves, without a label.
_SLURM_OWN_RE = re.compile(r"^\s*(?:srun|slurmstepd(?:-\S+)?): ")


def launcher_lines(text: str) -> list[tuple[int | None, str]]:
    """The lines of ``text`` with MPI and Slurm rank prefixes removed, each with the rank it named.

    ``mpirun --tag-output`` prefixes are removed wherever they appear (lines mpirun
    prints itself, such as ssh warnings, carry none).  ``srun -l`` labels are removed
    only when every line other than srun's and slurmstepd's own carries one: a bare
    ``0: `` is too common in tool output (``ip -o link``) to strip from one line.
    The rank is ``None`` on lines that had no prefix.
    """
    lines = text.splitlines()
    tagged: list[tuple[int | None, str]] = []
    for line in lines:
        match = _MPI_TAG_RE.match(line)
        tagged.append((int(match.group("rank")), line[match.end() :]) if match else (None, line))
    labelled = [
        line for rank, line in tagged if rank is None and line.strip() and not _SLURM_OWN_RE.match(line)
    ]
    if not labelled or not all(_SRUN_LABEL_RE.match(line) for line in labelled):
        return tagged
    out: list[tuple[int | None, str]] = []
    for rank, line in tagged:
        match = _SRUN_LABEL_RE.match(line) if rank is None else None
        out.append((int(match.group("rank")), line[match.end() :]) if match else (rank, line))
    return out


def strip_launcher_prefixes(text: str) -> str:
    """``text`` without the ``[1,0]<stdout>:`` (``mpirun --tag-output``) and ``0: `` (``srun -l``)
    prefixes, so a parser reads relayed output as the tool printed it (see :func:`launcher_lines`)."""
    return "\n".join(line for _, line in launcher_lines(text))
