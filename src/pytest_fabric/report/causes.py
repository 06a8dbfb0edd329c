"""Errors of one cause together, however many nodes and checks it hit.  Pure: records in, groups out.

``ibstat: command not found`` on 64 nodes is one thing to fix, not 64 (or 600, one per pair and
check).  An error's *cause* is its message with the names of its own nodes taken out, so
``node gpu01: ibstat: command not found / fix: install infiniband-diags on gpu01`` and the same
for gpu02 are one cause; :class:`Cause` says it back with the nodes folded into a nodeset
(``node gpu[01-64]: ibstat: command not found``).  The terminal summary and the HTML tables both
read these groups, so they agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .summary import nodeset

__all__ = ["Cause", "by_layer", "cause_key", "group_by_cause", "one_cause", "reason"]

Check = Mapping[str, Any]
_NODE = "\x00node\x00"  # where a check's own node's name stood in a message
_OTHER = "\x00other\x00"  # where another node's name stood


def _name_pattern(name: str) -> re.Pattern[str]:
    # node01 is not node010 nor node01-ib; a trailing "." or ":" ends a name.
    return re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")


def _named(c: Check, others: Iterable[str] = ()) -> tuple[str, list[str], list[str]]:
    """The message with node names taken out, the check's own nodes it named, and the other nodes it named.

    ``others`` are further node names (those of the other errors): an attribution of node01 that
    quotes its pairs' errors names node05 too, and is the same cause as node02's quoting node06.
    """
    text = str(c.get("message") or "could not measure")
    own = {str(n) for n in c.get("nodes") or []}
    named: list[str] = []
    other: list[str] = []
    for n in sorted(own | set(others), key=len, reverse=True):
        pattern = _name_pattern(n)
        if pattern.search(text):
            (named if n in own else other).append(n)
            text = pattern.sub(_NODE if n in own else _OTHER, text)
    return text, sorted(named), sorted(other)


def cause_key(c: Check) -> str:
    """What errors of one cause share: the message without the names of the check's own nodes."""
    return _named(c)[0]


def reason(message: str) -> str:
    """A message as a table cell reads it: what happened and the fix, without the command line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return "; ".join(line for line in lines if not line.startswith("command:"))


@dataclass
class Cause:
    """Errored checks of one cause: which checks, on which nodes, and the message said once."""

    key: str
    checks: list[Check] = field(default_factory=list)
    named: set[str] = field(default_factory=set)  # the checks' own nodes the messages name
    others: set[str] = field(default_factory=set)  # other nodes the messages name

    @property
    def check_names(self) -> list[str]:
        """The checks this cause errored, in first-seen order."""
        return list(dict.fromkeys(str(c.get("check")) for c in self.checks))

    @property
    def nodes(self) -> list[str]:
        """Every node of every errored check (for a pair, both ends)."""
        return sorted({str(n) for c in self.checks for n in c.get("nodes") or []})

    @property
    def all_pairs(self) -> bool:
        return all(len(c.get("nodes") or []) == 2 for c in self.checks)

    def message(self) -> str:
        """The message once, each node name it held replaced by the nodeset of all the nodes named."""
        if len(self.checks) == 1 or not (self.named or self.others):
            return str(self.checks[0].get("message") or self.key)
        return self.key.replace(_NODE, nodeset(self.named)).replace(_OTHER, nodeset(self.others))

    def what(self, limit: int = 3) -> str:
        """``rdma_bandwidth``; ``rdma_bandwidth, rdma_latency, port_rate +2 more checks``."""
        names = self.check_names
        more = f" +{len(names) - limit} more checks" if len(names) > limit else ""
        return ", ".join(names[:limit]) + more

    def where(self) -> str:
        """``on gpu[01-64] (64 checks)``, ``on gpu[01-08] (28 pairs)``."""
        unit = "pairs" if self.all_pairs and len(self.check_names) == 1 else "checks"
        on = nodeset(self.nodes)
        return f"{'on ' + on + ' ' if on else ''}({len(self.checks)} {unit})"


def group_by_cause(errors: Iterable[Check]) -> list[Cause]:
    """The errors in groups of one cause, the largest first (ties: first seen first)."""
    errors = list(errors)
    every = {str(n) for c in errors for n in c.get("nodes") or []}
    groups: dict[str, Cause] = {}
    for c in errors:
        key, named, others = _named(c, every)
        cause = groups.setdefault(key, Cause(key))
        cause.checks.append(c)
        cause.named.update(named)
        cause.others.update(others)
    return sorted(groups.values(), key=lambda g: -len(g.checks))


def one_cause(errors: Sequence[Check]) -> Cause:
    """The errors as one :class:`Cause` (those :func:`group_by_cause` put together), said as the first's."""
    causes = group_by_cause(errors)
    merged = Cause(causes[0].key if causes else "could not measure")
    for cause in causes:
        merged.checks.extend(cause.checks)
        merged.named |= cause.named
        merged.others |= cause.others
    return merged


def by_layer(errors: Sequence[Check]) -> dict[str, list[Cause]]:
    """Per layer, its errors grouped by cause."""
    layers: dict[str, list[Check]] = {}
    for c in errors:
        layers.setdefault(str(c.get("layer")), []).append(c)
    return {layer: group_by_cause(checks) for layer, checks in layers.items()}
