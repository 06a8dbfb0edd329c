"""Retests in rounds: the pairs attribution (judge/blame.py's asks) and the outlier checks re-measure, run together.

A retest re-measures a pair with nothing of the sweep running, several samples judged on their
median (:data:`~pytest_fabric.measurements.inter_node.RETEST_REPEATS`). One pair at a time, a
sweep with 40 suspects and their helpers is hundreds of measurements back to back. Pairs that
share no node do not load each other's links, so the retests of one step (every pair the rules
ask for at once) run in rounds of disjoint pairs, as the sweep does:

- :func:`spread_helpers` picks known-good helpers for each suspect so that the helpers are
  spread across the healthy nodes (the least used first): one helper shared by every suspect
  would put it in every retest and serialise them (benchmarks/bench_outliers.py prices the
  rounds with it; the blame model spreads its own helpers by each suspect's place in the
  inventory, to the same end).
- :func:`schedule` packs the retests into rounds where no node (suspect or helper) is in two
  retests, at most ``per_round`` retests a round (``--fabric-fanout`` counts nodes: fanout // 2
  pairs), and never two retests that share an ``apart`` tag (pairs that fell short in the same
  sweep round may have collided on the spine: together again they would collide again, and a
  collision re-measured is not "alone").
- :func:`run_rounds` takes the samples as rounds: sample k of every pair of a round together,
  then the next round, so every pair gets its samples and the log shows each figure.
- :func:`pick_controls` gives a round whose pairs have no contemporary (one pair: a suspect
  with one of its helpers) a *control pair* of two other nodes, measured at the same moment:
  the blame model reads the machine's load at a moment from the pairs measured then that share
  no node with a low one (judge/blame.py ``_unloaded``); alone in its round, a pair's dip by
  load reads as its node's.

Everything here is pure but the callable :func:`run_rounds` is given; the measurements are in
:mod:`pytest_fabric.measurements.inter_node`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TypeVar

__all__ = ["Pair", "control_pool", "needs_control", "pick_controls", "rounds_needed", "run_rounds", "schedule", "spread_helpers"]

#: (sender, receiver): the sender runs the client
Pair = tuple[str, str]
R = TypeVar("R")


def spread_helpers(suspects: Sequence[str], pool: Sequence[str], count: int, order: Sequence[str] = ()) -> dict[str, list[str]]:
    """Up to ``count`` helpers from ``pool`` for each suspect, the least used helpers first.

    A suspect never helps itself. Among helpers used equally often, each suspect starts at a
    different place in the pool (its position in ``order``, the inventory's node order), so two
    suspects with the same load get different helpers and the choice is the same in every run.
    """
    place = {name: index for index, name in enumerate(order)}
    load: Counter[str] = Counter()
    chosen: dict[str, list[str]] = {}
    for suspect in suspects:
        candidates = [g for g in pool if g != suspect and g not in suspects]
        if not candidates:
            candidates = [g for g in pool if g != suspect]
        if not candidates:
            chosen[suspect] = []
            continue
        start = place.get(suspect, len(chosen)) % len(candidates)
        rotated = candidates[start:] + candidates[:start]
        picked = sorted(rotated, key=lambda g: load[g])[:count]  # sorted is stable: rotation breaks ties
        load.update(picked)
        chosen[suspect] = picked
    return chosen


def schedule(pairs: Sequence[Pair], per_round: int, apart: Mapping[Pair, Sequence[str]] | None = None) -> list[list[Pair]]:
    """The pairs (each once) in rounds where no node is in two pairs and no ``apart`` tag twice.

    A node in k retests needs k rounds, and n retests at most ``per_round`` a round need
    n / per_round. The pairs of the busiest nodes go first, each into a round it fits (greedy
    edge colouring: never more than 2k - 1 rounds for the node bound; the bound itself or near it
    in the cases of tests/unit/test_retests.py).
    """
    if per_round < 1:
        raise ValueError(f"a round holds at least one retest, not {per_round}")
    unique = list(dict.fromkeys(p for p in pairs if p[0] != p[1]))
    degree: Counter[str] = Counter(n for p in unique for n in p)
    ordered = sorted(unique, key=lambda p: -max(degree[p[0]], degree[p[1]]))  # stable
    tags = apart or {}
    tagged: Counter[str] = Counter(t for p in unique for t in tags.get(p, ()))
    least = max([*degree.values(), *tagged.values(), -(-len(unique) // per_round)], default=0)
    # Two greedy fills, the fewer rounds kept: first fit packs rounds tight (best when no cap
    # binds), the emptiest round first spreads pairs evenly over the rounds the bound says are
    # needed (best when the cap binds).
    fills = [_fill(ordered, per_round, tags, 0, first_fit=True), _fill(ordered, per_round, tags, least, first_fit=False)]
    return min(fills, key=len)


def _fill(pairs: Sequence[Pair], per_round: int, tags: Mapping[Pair, Sequence[str]], start: int, *,
          first_fit: bool) -> list[list[Pair]]:
    rounds: list[list[Pair]] = [[] for _ in range(start)]
    busy: list[set[str]] = [set() for _ in range(start)]
    for pair in pairs:
        needs = set(pair) | {f"\0tag:{t}" for t in tags.get(pair, ())}
        fits = [i for i, used in enumerate(busy) if len(rounds[i]) < per_round and not needs & used]
        if fits:
            index = fits[0] if first_fit else min(fits, key=lambda i: len(rounds[i]))
        else:
            rounds.append([])
            busy.append(set())
            index = len(rounds) - 1
        rounds[index].append(pair)
        busy[index].update(needs)
    return [r for r in rounds if r]


def rounds_needed(pairs: Sequence[Pair], per_round: int, apart: Mapping[Pair, Sequence[str]] | None = None) -> int:
    """How many rounds :func:`schedule` makes of ``pairs``: what one step of retests costs, in rounds."""
    return len(schedule(pairs, per_round, apart))


def control_pool(order: Sequence[str], kinds: Mapping[str, str], suspects: Collection[str],
                 asked: Sequence[Pair]) -> list[str]:
    """The nodes a retest round may borrow a control pair from (:func:`pick_controls`), best first:
    those the blame model found healthy (``kinds``: node -> its class) and in no ``asked`` retest,
    then healthy helpers, then nodes it calls fabric (every node of a series under its floor), each
    in the inventory's ``order``. Never a suspect (what the retests are about) nor a node with a
    fault or a doubt of its own: a control's figure joins the model's figures, and must read the
    moment, not add to a suspect's evidence."""
    in_retests = {n for pair in asked for n in pair}
    avoid = set(suspects)
    tiers = {n: (kinds[n] == "fabric") * 2 + (n in in_retests) for n in order
             if n not in avoid and kinds.get(n) in ("healthy", "fabric")}
    return sorted(tiers, key=lambda n: tiers[n])  # stable: the inventory's order within a tier


def needs_control(round_pairs: Sequence[Pair]) -> bool:
    """Does no pair of the round have a contemporary, a pair measured with it that shares no node with it?
    (A round of :func:`schedule` shares no node, so: a round of one pair.)"""
    return bool(round_pairs) and not any(set(p).isdisjoint(q) for i, p in enumerate(round_pairs) for q in round_pairs[i + 1:])


def pick_controls(
    rounds: Sequence[Sequence[Pair]],
    pool: Sequence[str],
    per_round: int,
    tags: Callable[[Pair], Sequence[str]] | None = None,
) -> list[Pair | None]:
    """Per round, a control pair to measure beside it, or None where it needs none (:func:`needs_control`)
    or none fits.

    A control is two nodes of ``pool`` (the caller's order, best first: nodes the model found
    healthy and in no retest asked, then the other healthy ones; never a suspect), neither in the
    round, taken as early in the pool as they come (one suspect's rounds mostly share one control:
    its figure then reads every moment against many repeats of its own); the same input, the same
    controls. It crosses no spine a retest of the round crosses: a pair
    without ``tags`` (inside one leaf) first, else one whose tags the round's retests do not carry
    (:func:`schedule`'s ``apart``: it must not load what the retest measures). A round already
    holding ``per_round`` pairs gets none: the control runs beside the round, never past the cap.
    """
    tag_of = tags or (lambda pair: ())
    out: list[Pair | None] = []
    for round_pairs in rounds:
        if not needs_control(round_pairs) or len(round_pairs) >= per_round:
            out.append(None)
            continue
        busy = {n for p in round_pairs for n in p}
        used = {t for p in round_pairs for t in tag_of(p)}
        free = [n for n in dict.fromkeys(pool) if n not in busy]
        out.append(_first_control(free, used, tag_of))
    return out


def _first_control(free: Sequence[str], used: set[str], tag_of: Callable[[Pair], Sequence[str]]) -> Pair | None:
    """The earliest pair of ``free`` (by its later node, then its earlier: the pool's best two first)
    with no tag, else the earliest whose tags are not in ``used``."""
    crossing: Pair | None = None
    for j, second in enumerate(free):
        for first in free[:j]:
            pair_tags = set(tag_of((first, second)))
            if not pair_tags:
                return (first, second)
            if crossing is None and not pair_tags & used:
                crossing = (first, second)
    return crossing


def run_rounds(
    pairs: Sequence[Pair],
    samples: int,
    per_round: int,
    measure_round: Callable[[list[Pair], int], Sequence[R]],
    *,
    apart: Mapping[Pair, Sequence[str]] | None = None,
) -> dict[Pair, list[R]]:
    """Every pair measured ``samples`` times, in rounds: ``measure_round(round, k)`` measures
    sample ``k`` of every pair of ``round`` together and returns their results in its order.

    Sample k of every round before sample k + 1 of any: a pair's samples are spread over the
    step rather than back to back, so a passing disturbance touches one sample of many pairs,
    not every sample of one.
    """
    plan = schedule(pairs, per_round, apart)
    out: dict[Pair, list[R]] = {p: [] for r in plan for p in r}
    for k in range(samples):
        for round_pairs in plan:
            for pair, result in zip(round_pairs, measure_round(list(round_pairs), k)):
                out[pair].append(result)
    return out
