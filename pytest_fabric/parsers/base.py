"""What every parser shares: the error type and the registry of tools.

A parser is a pure function ``str -> result`` (a pydantic model or a dataclass).
It does no I/O and knows nothing of pytest.  When the text is not the tool's
output, or is the tool reporting its own failure, it raises a :class:`ParseError`
subclass whose message says what the tool said.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "ParseError",
    "ToolReportedError",
    "UnrecognizedOutput",
    "SkippedLines",
    "Parser",
    "register",
    "registry",
    "get_parser",
]


class ParseError(ValueError):
    """The text could not be read as this tool's output."""

    def __init__(self, tool: str, message: str, *, line: int | None = None) -> None:
        self.tool = tool
        self.line = line
        where = f" (line {line})" if line is not None else ""
        super().__init__(f"{tool}{where}: {message}")


class UnrecognizedOutput(ParseError):
    """Nothing in the text looks like the output this parser reads (empty, truncated, another tool)."""


class ToolReportedError(ParseError):
    """The tool ran and reported a failure in its own output (``Couldn't connect``, ``"error": ...``)."""


SKIPPED_KEPT = 100
"""How many distinct skipped lines a result keeps (a 512-rank run can print thousands of the same warning)."""


@dataclass
class SkippedLines:
    """The lines a parser read past without understanding them: each once, the first :data:`SKIPPED_KEPT`.

    A tool's output changes with its version (a new warning, a new column, a
    launcher's banner between rows); a parser that meets a line it does not know
    keeps what it could read and says what it skipped, instead of failing the
    whole file.  Results carry the two figures as ``skipped`` (the lines) and
    ``skipped_count`` (all of them, repeats included)::

        skipped = SkippedLines()
        for line in lines:
            if not understood(line):
                skipped.add(line)
        return Result(..., skipped=skipped.lines, skipped_count=skipped.count)
    """

    keep: int = SKIPPED_KEPT
    count: int = 0
    _lines: list[str] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)

    def add(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        self.count += 1
        if line not in self._seen and len(self._lines) < self.keep:
            self._seen.add(line)
            self._lines.append(line)

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(self._lines)


@dataclass(frozen=True)
class Parser:
    """A registered parser: the tool name users type, the function, and what it reads."""

    tool: str
    function: Callable[[str], Any]
    description: str
    corpus_dirs: tuple[str, ...] = ()


_REGISTRY: dict[str, Parser] = {}

F = TypeVar("F", bound=Callable[[str], Any])


def register(tool: str, description: str, *, corpus: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Register ``function`` as the parser for ``tool`` (used by ``python -m pytest_fabric.parsers``).

    ``corpus`` names the folders of ``shared/corpus`` whose files this parser reads.
    """

    def decorate(function: F) -> F:
        if tool in _REGISTRY:
            raise RuntimeError(f"two parsers registered for {tool!r}")
        _REGISTRY[tool] = Parser(tool, function, description, corpus)
        return function

    return decorate


def registry() -> dict[str, Parser]:
    """Every parser, by tool name (importing all parser modules first)."""
    _import_all_parser_modules()

    return dict(sorted(_REGISTRY.items()))


def _import_all_parser_modules() -> None:
    # Each parser module registers itself on import; importing them all here
    # means a new tool needs only its own module, no central list to edit.  The folder is this
    # module's own: the package (pytest_fabric.parsers) imports this module, not the reverse.
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if not module.name.startswith("_") and module.name != "base":
            importlib.import_module(f"{__package__}.{module.name}")


def get_parser(tool: str) -> Parser:
    parsers = registry()
    try:
        return parsers[tool]
    except KeyError:
        raise KeyError(f"no parser for {tool!r}; known tools: {', '.join(parsers)}") from None
