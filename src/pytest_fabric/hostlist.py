"""Hostlist expressions as Slurm and pdsh write them: ``gpu[01-16]``, ``node[1,3,5-7]``, ``r[1-2]n[01-04]``.

Zero padding follows the lower bound as written (``[01-16]`` -> ``01`` ... ``16``).
Several brackets expand as a product, leftmost slowest.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

__all__ = ["HostlistError", "expand", "fold", "is_expression"]

_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_MAX_HOSTS = 100_000  # a typo like [1-1000000] should be an error, not an out-of-memory


class HostlistError(ValueError):
    """An expression that does not expand; the message says which part and why."""


# Characters that mean something in a nodeset; a name holding one would not fold back
# into the same names (``a,b`` is two nodes), so fold refuses it instead of printing a lie.
_NODESET_SYNTAX = re.compile(r"[\[\],!&^@*\s]")


def fold(names: Iterable[str]) -> str:
    """Fold node names into one nodeset string, as clush and Slurm print them.

    ``["gpu17", "gpu03", "gpu04"]`` -> ``"gpu[03-04,17]"``: sorted, duplicates dropped, zero
    padding kept, several numeric parts folded too (``r1n[01-02],r2n01``).  The result pastes
    into ``srun --exclude``, ``scontrol``, ``clush -w`` and back into an inventory.  No names
    fold to ``""``.  A name holding nodeset syntax (``[``, ``,``, ``!``, ...) raises
    :class:`HostlistError`.
    """
    listed = list(names)
    for name in listed:
        if not name or _NODESET_SYNTAX.search(name):
            raise HostlistError(f"{name!r} is not a node name that a nodeset can hold")
    # No group resolver: an inventory's names are names, never @groups from a local groups.conf.
    return str(NodeSet.fromlist(listed, resolver=RESOLVER_NOGROUP))


def is_expression(text: str) -> bool:
    return "[" in text or "]" in text


def _expand_range(body: str, expression: str) -> list[str]:
    if not body.strip():
        raise HostlistError(f"{expression!r}: empty brackets")
    out: list[str] = []
    for part in body.split(","):
        part = part.strip()
        if re.fullmatch(r"\d+", part):
            out.append(part)
            continue
        match = re.fullmatch(r"(\d+)-(\d+)", part)
        if not match:
            raise HostlistError(f"{expression!r}: {part!r} is not a number or a range like 01-16")
        low_text, high_text = match.groups()
        low, high = int(low_text), int(high_text)
        if high < low:
            raise HostlistError(f"{expression!r}: range {part!r} runs backwards")
        if high - low + 1 > _MAX_HOSTS:
            raise HostlistError(f"{expression!r}: range {part!r} has more than {_MAX_HOSTS} hosts")
        width = len(low_text) if low_text.startswith("0") else 0
        out.extend(str(n).zfill(width) for n in range(low, high + 1))
    return out


def expand(expression: str) -> list[str]:
    """All names an expression stands for, in order; a plain name expands to itself."""
    if not is_expression(expression):
        return [expression]
    pieces: list[list[str]] = []
    position = 0
    for match in _BRACKET.finditer(expression):
        literal = expression[position : match.start()]
        if "[" in literal or "]" in literal:
            raise HostlistError(f"{expression!r}: unbalanced brackets")
        pieces.append([literal])
        pieces.append(_expand_range(match.group(1), expression))
        position = match.end()
    tail = expression[position:]
    if "[" in tail or "]" in tail:
        raise HostlistError(f"{expression!r}: unbalanced brackets")
    pieces.append([tail])
    total = 1
    for piece in pieces:
        total *= len(piece)
    if total > _MAX_HOSTS:
        raise HostlistError(f"{expression!r} expands to {total} hosts (limit {_MAX_HOSTS})")
    return ["".join(parts) for parts in itertools.product(*pieces)]
