"""Nodesets as Slurm, pdsh and clush write them, read and written with ClusterShell's NodeSet.

What ``sinfo`` and ``squeue`` print pastes in as it is: ``gpu[01-16]``, ``node[1,3,5-7]``,
``gpu[01-04],cpu[1-2]`` (top-level commas), ``node[1-16/2]`` (a step), ``gpu[01-16]!gpu07``
(exclusion; ``&`` and ``^`` are intersection and symmetric difference), ``r[1-2]n[01-08]``
(a product, leftmost slowest), ``10.0.0.[11-26]`` (IP addresses).  Zero padding is kept as
written (``[01-16]`` -> ``01`` ... ``16``).  Which names an expression means is ClusterShell's
answer; a name written twice is one node, as in clush.

Order: NodeSet sorts (``gpu[01-04],cpu[1-2]`` iterates ``cpu1`` first, ``gpu[3,1]`` as ``gpu1``).
An inventory pairs ``name`` and ``host`` by position, so :func:`expand` keeps the order the
user wrote instead: each name where it first appears in the expression.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet, NodeSetException
from ClusterShell.RangeSet import RangeSet

__all__ = ["HostlistError", "expand", "fold", "is_expression"]

_MAX_HOSTS = 100_000  # a typo like [1-1000000] should be an error, not an out-of-memory
# What makes a string a nodeset expression rather than one name.
_SYNTAX = re.compile(r"[\[\],!&^]")
_OPERATORS = ",!&^"
_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_RANGE = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*(?:/\s*(\d+)\s*)?)?")
_EXAMPLES = "gpu[01-16], gpu[01-04],cpu[1-2], node[1-16/2], gpu[01-16]!gpu07"


class HostlistError(ValueError):
    """An expression that does not expand; the message says which part and why."""


def is_expression(text: str) -> bool:
    """Whether ``text`` is a nodeset expression (brackets, commas, operators), not one name."""
    return bool(_SYNTAX.search(text))


def _tokens(expression: str) -> list[str]:
    """The operands of the expression in written order (split at operators outside brackets)."""
    out: list[str] = []
    depth, start = 0, 0
    for position, char in enumerate(expression):
        if char == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"{expression!r}: unbalanced brackets ('[' inside '[...]')")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"{expression!r}: unbalanced brackets (a ']' with no '[')")
        elif char in _OPERATORS and depth == 0:
            out.append(expression[start:position].strip())
            start = position + 1
    if depth:
        raise HostlistError(f"{expression!r}: unbalanced brackets (a '[' with no ']')")
    out.append(expression[start:].strip())
    for token in out:
        if not token:
            raise HostlistError(f"{expression!r}: an operator (, ! & ^) with nothing on one side")
        if token.startswith("@"):
            raise HostlistError(f"{expression!r}: {token!r} is a node group; write its nodes out")
    return out


def _element_size(element: str) -> int:
    """How many names one bracket element (``7``, ``01-16``, ``1-16/2``) writes; 1 if unreadable."""
    match = _RANGE.fullmatch(element)
    if not match or match.group(2) is None:
        return 1  # a number, or something ClusterShell will refuse with its own reason
    low, high, step = int(match.group(1)), int(match.group(2)), int(match.group(3) or 1)
    return max(0, (high - low) // max(step, 1) + 1)


def _check_size(expression: str, tokens: list[str]) -> None:
    # Before ClusterShell sees the expression: it builds a set of every index in a range,
    # which for [1-100000000] takes minutes.  Exclusions are not subtracted (an upper bound).
    total = 0
    for token in tokens:
        count = 1
        for body in _BRACKET.findall(token):
            if not body.strip():
                raise HostlistError(f"{expression!r}: empty brackets")
            in_bracket = 0
            for element in body.split(","):
                size = _element_size(element)
                if size > _MAX_HOSTS:
                    raise HostlistError(
                        f"{expression!r}: range {element.strip()!r} has more than {_MAX_HOSTS} hosts"
                    )
                in_bracket += size
            count *= in_bracket
        total += count
    if total > _MAX_HOSTS:
        raise HostlistError(f"{expression!r} expands to {total} hosts (limit {_MAX_HOSTS})")


def _explain(expression: str, exc: NodeSetException) -> HostlistError:
    # ClusterShell names the faulty range on the RangeSet error it raised from.
    part = getattr(exc.__context__, "part", None) or getattr(exc, "part", "")
    match = _RANGE.fullmatch(part) if isinstance(part, str) else None
    if match and match.group(2) is not None and int(match.group(2)) < int(match.group(1)):
        low, high = match.group(1), match.group(2)
        return HostlistError(f"{expression!r}: range {part!r} runs backwards; write it {high}-{low}")
    if "padding" in str(exc):
        return HostlistError(
            f"{expression!r}: range {part!r} pads its ends differently; "
            "pad both alike (01-16) or neither (1-16)"
        )
    if "cannot convert" in str(exc):
        return HostlistError(
            f"{expression!r}: {part!r} is not a number or a range like 01-16 or 1-16/2"
        )
    if "empty range" in str(exc):
        return HostlistError(f"{expression!r}: an empty item between commas in brackets")
    return HostlistError(f"{expression!r}: {exc} (nodesets read like {_EXAMPLES})")


def _written(token: str) -> Iterable[str]:
    """One operand's names in the order written: bracket items as listed, leftmost slowest."""
    pieces: list[list[str]] = []
    position = 0
    for match in _BRACKET.finditer(token):
        pieces.append([token[position : match.start()]])
        # Each item on its own, so [3,1] stays 3, 1; RangeSet gives its padding and step.
        pieces.append([i for item in match.group(1).split(",") for i in RangeSet(item.strip())])
        position = match.end()
    pieces.append([token[position:]])
    return ("".join(parts) for parts in itertools.product(*pieces))


def expand(expression: str) -> list[str]:
    """All names an expression stands for, in the order written; a plain name expands to itself.

    The names are ClusterShell's (``NodeSet(expression)``), each listed once, where it first
    appears in the expression.  Raises :class:`HostlistError` for an expression ClusterShell
    refuses, a node group (``@rack1``: no group source is consulted), or more than 100000 names.
    """
    if not is_expression(expression):
        return [expression]
    tokens = _tokens(expression)
    _check_size(expression, tokens)
    try:
        # No group resolver: the result must not depend on the groups.conf of the machine running us.
        members = NodeSet(expression, resolver=RESOLVER_NOGROUP)
    except NodeSetException as exc:
        raise _explain(expression, exc) from None
    wanted = set(members)
    ordered = list(dict.fromkeys(n for token in tokens for n in _written(token) if n in wanted))
    if len(ordered) != len(wanted):  # ClusterShell read an operand differently than we split it
        seen = set(ordered)
        ordered += [n for n in members if n not in seen]
    return ordered


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
