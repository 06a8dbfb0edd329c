"""What probes share: the error for "could not measure" and parsing with node context."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pytest_fabric.parsers.base import ParseError
from pytest_fabric.transport.base import TransportError
from pytest_fabric.transport.results import CommandResult

__all__ = ["MeasurementError", "parse_or_raise"]

T = TypeVar("T")


class MeasurementError(TransportError):
    """A probe could not produce a number: the check is an *error*, with node, command and fix."""


def parse_or_raise(parser: Callable[[str], T], result: CommandResult, *, fix: str | None = None) -> T:
    """Parse a command's output; a ParseError becomes a MeasurementError naming node and command."""
    try:
        return parser(result.stdout)
    except ParseError as exc:
        raise MeasurementError(
            result.node,
            f"could not read the output: {exc}",
            command=result.command,
            fix=fix or "run the command by hand on the node and compare with the tool's usual output",
        ) from exc
