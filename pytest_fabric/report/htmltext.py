"""Text put into the HTML report: the one escape every page module uses.  Pure; imports nothing."""

from __future__ import annotations

__all__ = ["text"]


def text(x: object) -> str:
    """``x`` as HTML text: ``&`` and ``<`` escaped, the two characters text content needs escaped.

    Not for attribute values.  ``>`` and quotes stay as they are: each would cost 4 to 8 bytes
    more once pytest-html has put the row into its JSON attribute.
    """
    return ("" if x is None else str(x)).replace("&", "&amp;").replace("<", "&lt;")
