"""A network interface's kernel counters (``/sys/class/net/IF/statistics/*``): text -> counts by name.

The probe prints ``NAME VALUE`` per counter (``tx_bytes 123``). The kernel keeps these for every
interface, whatever program sent the bytes: they witness what crossed the interface, which a tool's
own output cannot (docs/report.md, "What corroborates a figure").
"""

from __future__ import annotations

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput, register

__all__ = ["parse"]

TOOL = "netdev-statistics"


@register(TOOL, "an interface's kernel counters as NAME VALUE lines (/sys/class/net/IF/statistics)")
def parse(text: str) -> dict[str, int]:
    """``{"tx_bytes": 123, "rx_bytes": 456}``; a value that is not a whole number is a :class:`ParseError`."""
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    found: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, _, value = line.strip().partition(" ")
        if not value.strip().isdigit():
            raise ParseError(TOOL, f"{name}: {value.strip()!r} is not a counter value", line=number)
        found[name] = int(value)
    if not found:
        raise UnrecognizedOutput(TOOL, "no counter printed (is the interface there?)")
    return found
