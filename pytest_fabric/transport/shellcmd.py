"""The one place a value becomes part of a node's shell command line.

Probes write their commands as templates of shell syntax they own (``getent ahosts {host}``) and
pass the values separately: :func:`fill` quotes every value with :func:`shlex.quote`, so a value
from a profile, an inventory or a node's own output arrives as one inert word, whatever it holds
(``$(...)``, backquotes, quotes, ``;``, newlines). Profiles and inventories also refuse such values
when they load (docs/security.md); this module is the second line, so a value that a loader let
through, or that a node printed, still cannot run.

Nothing else in ``probes/`` or ``measurements/`` quotes on its own (tests/unit/test_shell_boundary.py
holds them to it).
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Iterable

__all__ = ["Word", "fill", "join", "quote"]

#: what may be quoted: text, or a number (written as Python writes it)
Word = str | int | float


def quote(value: Word) -> str:
    """``value`` as one shell word (``'a b'``, ``'$(x)'``); a NUL, which no argument can hold, is refused."""
    text = str(value)
    if "\0" in text:
        raise ValueError(f"{text!r}: a NUL byte cannot be passed in a command line")
    return shlex.quote(text)


def join(words: Iterable[Word]) -> str:
    """An argument vector as one command line, each word quoted."""
    return " ".join(quote(word) for word in words)


class _Quoting(string.Formatter):
    """``str.format`` whose every field is quoted; a template's own ``{{`` and ``}}`` stay braces."""

    def format_field(self, value: object, format_spec: str) -> str:
        return quote(format(value, format_spec))


_FORMATTER = _Quoting()


def fill(template: str, /, **values: Word) -> str:
    """``template`` (shell syntax, ``{name}`` for each value) with each value quoted in its place.

    ``fill("getent ahosts {host}", host=h)``. A field names a keyword (no positional ``{}``), so a
    value can never be taken for the template: ``KeyError`` for a field with no value.
    """
    return _FORMATTER.vformat(template, (), values)
