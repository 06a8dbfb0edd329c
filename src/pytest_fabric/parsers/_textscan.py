"""Small text helpers shared by the InfiniBand, NIC and PCIe parsers.

They exist so that every number a parser reads goes through one guarded
conversion: a malformed field becomes a :class:`ParseError` naming the tool and
the line, never a bare ``ValueError`` from ``int()``.
"""

from __future__ import annotations

import re
from decimal import Decimal

from .base import ParseError, UnrecognizedOutput

__all__ = ["split_lines", "to_int", "to_decimal", "DECIMAL_RE"]

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
    import json

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
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(tool, f"looks like JSON but is not: {exc}") from None
    if not isinstance(data, list):
        raise UnrecognizedOutput(tool, f"JSON output is not a list of {what}")
    return data
