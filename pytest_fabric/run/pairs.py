"""Which node pairs to measure, and in which rounds.

Strategies (profile ``inter_node.pairs``):

- ``all``: every pair, scheduled with the circle method: N-1 rounds of N/2
  disjoint pairs (a bye per round when N is odd), so a whole round can be
  measured at once without two tests sharing a node.
- ``ring``: each node with the next (the last with the first).
- ``random:K``: each node with K peers chosen at random, in K rounds: the first K
  rounds of the circle method over a shuffled node list, so no pair repeats and every
  node is in each round (an odd node count adds one round for the nodes that sat one
  out). The shuffle is seeded from the node list, so every process computes the same pairs.
- ``leaf``: by the ``leaf`` label: a ring inside each leaf plus, across each pair of
  leaves, node i with node i (the paths through the spine).

A size rule, ``all up to 32 nodes, then random:4``, takes the first strategy up to that
many nodes and the second above (:func:`resolve_strategy`): ``all`` is N-1 rounds and
N(N-1)/2 tests per pair check, right for a pod and not for 512 nodes.

Every strategy returns pairs already grouped in rounds of disjoint pairs.  The
first node of a pair sends (runs the client) and the second receives; roles
alternate so that every node with two or more peers does both over the sweep.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Pair", "Strategy", "parse_strategy", "resolve_strategy", "make_pairs", "circle_rounds", "disjoint_rounds", "balanced"]


@dataclass(frozen=True, order=True)
class Pair:
    """Two nodes measured against each other: ``a`` runs the client, ``b`` the server."""

    round: int
    slot: int
    a: str
    b: str

    @property
    def id(self) -> str:
        return f"{self.a}<->{self.b}"

    @property
    def nodes(self) -> tuple[str, str]:
        return (self.a, self.b)


@dataclass(frozen=True)
class Strategy:
    kind: str  # all | ring | random | leaf
    k: int = 0


_STRATEGY_RE = re.compile(r"^(all|ring|leaf|random:(\d+))$")


def parse_strategy(text: str) -> Strategy:
    match = _STRATEGY_RE.match(text.strip())
    if not match:
        raise ValueError(f"pairs: {text!r} is not a strategy; use all, ring, random:K (e.g. random:3) or leaf")
    if match.group(2) is not None:
        k = int(match.group(2))
        if k < 1:
            raise ValueError("pairs: random:K needs K >= 1")
        return Strategy("random", k)
    return Strategy(match.group(1))


_SIZE_RULE_RE = re.compile(r"^(\S+) up to (\d+) nodes?, ?then (\S+)$")


def resolve_strategy(text: str, node_count: int) -> Strategy:
    """The strategy ``text`` gives for ``node_count`` nodes: a strategy, or a size rule.

    ``"all up to 32 nodes, then random:4"`` is ``all`` for 32 nodes or fewer and
    ``random:4`` above. Both halves are checked whatever the node count, so a profile
    that is wrong for large clusters is refused on a small one too.
    """
    rule = _SIZE_RULE_RE.match(" ".join(text.split()))
    if rule is None:
        try:
            return parse_strategy(text)
        except ValueError as exc:
            if "is not a strategy" not in str(exc):
                raise
            raise ValueError(f"{exc}, or a size rule such as 'all up to 32 nodes, then random:4'") from None
    small, limit, large = parse_strategy(rule.group(1)), int(rule.group(2)), parse_strategy(rule.group(3))
    if limit < 2:
        raise ValueError(f"pairs: {text!r}: up to {limit} nodes: give a node count of at least 2")
    return small if node_count <= limit else large


def circle_rounds(nodes: list[str], count: int | None = None) -> list[list[tuple[str, str]]]:
    """Round-robin tournament schedule: every pair exactly once, N-1 rounds of N/2 disjoint pairs.

    The first of each pair sends (runs the client).  The circle method keeps
    one node fixed while the others rotate; the rotating ones take both halves
    of the circle and so both roles, but the fixed node would send in every
    round and never receive, hiding a receive-side fault there.  Its role
    alternates between rounds instead.  ``count`` stops after that many rounds
    (the first rounds of 4,096 nodes without the 4,095 of them).
    """
    if len(nodes) < 2:
        return []
    players: list[str | None] = list(nodes)
    if len(players) % 2:
        players.append(None)  # the bye
    n = len(players)
    rounds = []
    for number in range(n - 1 if count is None else min(count, n - 1)):
        pairs = []
        for i in range(n // 2):
            a, b = players[i], players[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((b, a) if i == 0 and number % 2 else (a, b))
        rounds.append(pairs)
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def disjoint_rounds(edges: Iterable[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Greedy edge colouring: put each pair in the first round where neither node is busy."""
    rounds: list[list[tuple[str, str]]] = []
    busy: list[set[str]] = []
    for a, b in edges:
        for index, used in enumerate(busy):
            if a not in used and b not in used:
                rounds[index].append((a, b))
                used.update((a, b))
                break
        else:
            rounds.append([(a, b)])
            busy.append({a, b})
    return rounds


def balanced(edges: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The same pairs, each turned so that every node sends about as often as it receives.

    Walks closed trails (after joining odd-degree nodes to a virtual one, every
    degree is even) and points each pair along the walk: in and out differ by
    at most one at every node, so a node with two or more peers does both.
    Deterministic for the same input.
    """
    virtual = "\0"
    degree: dict[str, int] = {}
    for a, b in edges:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
    ends = list(edges) + [(n, virtual) for n in degree if degree[n] % 2]
    touching: dict[str, list[int]] = {}
    for index, (a, b) in enumerate(ends):
        touching.setdefault(a, []).append(index)
        touching.setdefault(b, []).append(index)
    used = [False] * len(ends)
    turned: list[tuple[str, str] | None] = [None] * len(ends)
    cursor = {n: 0 for n in touching}
    for start in touching:
        here = start
        while True:
            candidates = touching[here]
            while cursor[here] < len(candidates) and used[candidates[cursor[here]]]:
                cursor[here] += 1
            if cursor[here] == len(candidates):
                break
            index = candidates[cursor[here]]
            used[index] = True
            a, b = ends[index]
            there = b if a == here else a
            turned[index] = (here, there)
            here = there
    return [t for t in turned[: len(edges)] if t is not None]


def _ring(nodes: list[str]) -> list[tuple[str, str]]:
    if len(nodes) < 2:
        return []
    if len(nodes) == 2:
        return [(nodes[0], nodes[1])]
    return [(nodes[i], nodes[(i + 1) % len(nodes)]) for i in range(len(nodes))]


def _random_rounds(nodes: list[str], k: int) -> list[list[tuple[str, str]]]:
    """K rounds in which each node meets a new random peer: exactly K peers a node.

    Each node picking K peers gave about 2K each (it is also picked by others) in ~4K
    greedy rounds; K perfect matchings give K peers in K rounds, the run time the
    profile's K reads as.
    """
    if k >= len(nodes) - 1:
        return circle_rounds(nodes)
    order = list(nodes)
    random.Random("|".join(nodes)).shuffle(order)
    rounds = circle_rounds(order, k)
    if len(order) % 2:
        # Each round one node sat out (the bye rotates): pair those up in one more round.
        met = {frozenset(p) for pairs in rounds for p in pairs}
        idle = _idle(order, rounds, k)
        extra: list[tuple[str, str]] = []
        busy: set[str] = set()
        for a in idle:
            if a in busy:
                continue
            # another idle node it has not met, else any free node it has not met
            b = next((m for m in [*idle, *order] if m != a and m not in busy and frozenset((a, m)) not in met), None)
            if b is not None:
                extra.append((a, b))
                busy.update((a, b))
        rounds.append(extra)
    edges = balanced([p for pairs in rounds for p in pairs])
    out, start = [], 0
    for pairs in rounds:
        out.append(edges[start : start + len(pairs)])
        start += len(pairs)
    return out


def _idle(order: list[str], rounds: list[list[tuple[str, str]]], k: int) -> list[str]:
    degree = dict.fromkeys(order, 0)
    for pairs in rounds:
        for a, b in pairs:
            degree[a] += 1
            degree[b] += 1
    return [n for n in order if degree[n] < k]


def _leaf(nodes: list[str], labels: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str]]:
    leaves: dict[str, list[str]] = {}
    for node in nodes:
        leaves.setdefault(labels.get(node, {}).get("leaf", "(no leaf)"), []).append(node)
    edges = []
    for members in leaves.values():
        edges.extend(_ring(members))
    names = sorted(leaves)
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            for a, b in zip(leaves[first], leaves[second]):
                edges.append((a, b))
    return balanced(edges)


def make_pairs(
    nodes: list[str], strategy: str | Strategy, labels: Mapping[str, Mapping[str, str]] | None = None
) -> list[Pair]:
    """The pairs to measure, in round order; the same on every process for the same input."""
    parsed = resolve_strategy(strategy, len(nodes)) if isinstance(strategy, str) else strategy
    if len(nodes) == 1:
        # One machine: measure it against itself over loopback, so a single-node
        # inventory still exercises the network stack and the tools.
        return [Pair(0, 0, nodes[0], nodes[0])]
    if parsed.kind == "all":
        rounds = circle_rounds(nodes)
    elif parsed.kind == "ring":
        rounds = disjoint_rounds(_ring(nodes))
    elif parsed.kind == "random":
        rounds = _random_rounds(nodes, parsed.k)
    else:
        rounds = disjoint_rounds(_leaf(nodes, labels or {}))
    return [Pair(r, s, a, b) for r, pairs in enumerate(rounds) for s, (a, b) in enumerate(pairs)]
