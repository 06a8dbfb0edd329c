"""Errors of one cause together, however many nodes and checks it hit.  Pure: records in, groups out.

``ibstat: command not found`` on 64 nodes is one thing to fix, not 64 (or 600, one per pair and
check).  An error's *cause* is its message with the node names taken out (its own nodes' and
any other it quotes, wherever they stand), so ``node gpu01: ibstat: command not found / fix:
install infiniband-diags on gpu01`` and the same for gpu02 are one cause, as are two nodes'
attributions quoting their pairs as ``gpu01<->gpu03`` and ``gpu06<->gpu02``; :class:`Cause` says
it back with the nodes folded into a nodeset (``node gpu[01-64]: ibstat: command not found``).
The terminal summary, its ERRORS section and the HTML tables all read these keys, so they agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from pytest_fabric.report.safetext import text_lines
from pytest_fabric.report.summary import nodeset

__all__ = ["Cause", "by_layer", "cause_key", "group_by_cause", "one_cause", "reason"]

Check = Mapping[str, Any]
_NODE = "\x00node\x00"  # where a check's own node's name stood in a message
_OTHER = "\x00other\x00"  # where another node's name stood
_NAME = "\x00name\x00"  # in a cause's key, where any node's name stood


# A run of the characters a node name is made of, dots inside: node names are found by looking
# each of its dot-separated stretches up, not by a search per name (a run has thousands of nodes).
# node01 is not node010 nor node01-ib; a "." or ":" ends a name unless the name goes on past it.
_RUN = re.compile(r"[\w-]+(?:\.[\w-]+)*")


def _spans(text: str, names: AbstractSet[str]) -> Iterator[tuple[int, int, str]]:
    """(start, end, name) of each node name in ``text``, the longest where names overlap."""
    for run in _RUN.finditer(text):
        parts = run.group().split(".")
        starts = [run.start()]
        for part in parts:
            starts.append(starts[-1] + len(part) + 1)
        i = 0
        while i < len(parts):
            for j in range(len(parts), i, -1):
                name = ".".join(parts[i:j])
                if name in names:
                    yield starts[i], starts[j] - 1, name
                    i = j
                    break
            else:
                i += 1


def _named(c: Check, others: AbstractSet[str] = frozenset()) -> tuple[str, list[str], list[str]]:
    """The message with node names marked (own or other), the check's own nodes it named, and the others.

    ``others`` are further node names (those of the other errors, or every node of the run): an
    attribution of node01 that quotes its pairs' errors names node05 too, and is the same cause as
    node02's quoting node06.
    """
    text = str(c.get("message") or "could not measure")
    own = {str(n) for n in c.get("nodes") or []}
    named: set[str] = set()
    other: set[str] = set()
    marked, at = [], 0
    for start, end, name in _spans(text, own | others if own - others else others):
        (named if name in own else other).add(name)
        marked += [text[at:start], _NODE if name in own else _OTHER]
        at = end
    return "".join(marked) + text[at:], sorted(named), sorted(other)


def _key(marked: str) -> str:
    """What errors of one cause share: the message with every node name taken out, own or other.

    Own and other are one mark here: node02's attribution quoting ``node06<->node02: node node06: ...``
    and node01's quoting ``node01<->node03: node node01: ...`` differ only in which end of each pair
    is the node's own (the order the pairs were made in), not in what went wrong.
    """
    return marked.replace(_NODE, _NAME).replace(_OTHER, _NAME)


def cause_key(c: Check, node_names: Iterable[str] = ()) -> str:
    """What errors of one cause share: the message without node names (``node_names``: every node of the run;
    a set is used as it is, so a caller keying many errors makes it once)."""
    names = node_names if isinstance(node_names, (set, frozenset)) else frozenset(node_names)
    return _key(_named(c, names)[0])


def reason(message: str) -> str:
    """A message as a table cell reads it: what happened and the fix, without the command line."""
    lines = [line.strip() for line in text_lines(message) if line.strip()]
    return "; ".join(line for line in lines if not line.startswith("command:"))


@dataclass
class Cause:
    """Errored checks of one cause: which checks, on which nodes, and the message said once.

    ``template`` is the first error's message with its node names marked own or other: it says
    the cause back with the nodes folded.
    """

    key: str
    template: str = ""
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
            return str(self.checks[0].get("message") or self.template or self.key)
        return self.template.replace(_NODE, nodeset(self.named)).replace(_OTHER, nodeset(self.others))

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


def group_by_cause(errors: Iterable[Check], node_names: Iterable[str] = ()) -> list[Cause]:
    """The errors in groups of one cause, the largest first (ties: first seen first).

    Node names are those of the errors' checks and ``node_names`` (every node of the run, where known).
    """
    errors = list(errors)
    every = {str(n) for c in errors for n in c.get("nodes") or []} | {str(n) for n in node_names}
    groups: dict[str, Cause] = {}
    for c in errors:
        marked, named, others = _named(c, every)
        cause = groups.setdefault(_key(marked), Cause(_key(marked), marked))
        cause.checks.append(c)
        cause.named.update(named)
        cause.others.update(others)
    return sorted(groups.values(), key=lambda g: -len(g.checks))


def one_cause(errors: Sequence[Check]) -> Cause:
    """The errors as one :class:`Cause` (those :func:`group_by_cause` put together), said as the first's."""
    causes = group_by_cause(errors)
    merged = Cause(causes[0].key, causes[0].template) if causes else Cause("could not measure", "could not measure")
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
