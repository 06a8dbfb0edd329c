"""Node text made safe to print: control characters shown escaped, never sent to a terminal raw.

A node controls what its tools print, and we quote that text in errors, output tails and logs.
Raw, an ESC clears the screen or moves the cursor, OSC 8 plants a link, OSC 52 writes the
reader's clipboard, BEL rings and NUL corrupts a JUnit file, and a carriage return lets a node
print ``\\rACCEPT: ...`` over the start of a line.  :func:`safe_text` keeps newline and tab and
writes every other C0 and C1 control (and DEL) as a Python-style escape (``\\x1b``, ``\\r``), so
what reaches the terminal, the log and the JUnit file reads as the bytes the node sent.  HTML
and JSON escape for themselves and need nothing of this.
"""

from __future__ import annotations

import re

__all__ = ["safe_text", "text_lines"]

# C0 but newline and tab, DEL, C1.  Lone surrogates (from undecodable bytes) are escaped as well:
# a terminal or an XML writer cannot encode them.  So are the Unicode line and paragraph separators
# (Python's splitlines() breaks a line there) and the bidirectional overrides and isolates, which
# reorder what a reader sees ("Trojan Source"): a node could make its text read as a verdict.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe_text(text: str) -> str:
    """``text`` with every control character other than newline and tab written as its escape."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(_escape, text)


def text_lines(text: str) -> list[str]:
    """``text`` cut at its newlines only, the last empty piece dropped.

    Never ``str.splitlines()`` on node text: it also breaks at a carriage return, a form feed,
    ``\\x1c``-``\\x1e``, NEL and U+2028, so a node's ``\\rACCEPT: ...`` became a line of its own
    that starts with a fake verdict.  Escape each line with :func:`safe_text` after cutting.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
