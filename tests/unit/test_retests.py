"""The retest scheduler: rounds of disjoint pairs, helpers spread, samples taken as rounds."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from pytest_fabric.run.pairs import make_pairs
from pytest_fabric.run.retests import (
    Pair,
    control_pool,
    needs_control,
    pick_controls,
    rounds_needed,
    run_rounds,
    schedule,
    spread_helpers,
)

NODES_512 = [f"n{i:03d}" for i in range(512)]


def node_retests(suspects: list[str], good: list[str], helpers: int = 2) -> list[Pair]:
    """What attribution asks for a step of node checks: each suspect sending to and receiving
    from each of its helpers."""
    chosen = spread_helpers(suspects, good, helpers, NODES_512)
    return [p for s in suspects for h in chosen[s] for p in ((s, h), (h, s))]


def assert_disjoint(rounds: list[list[Pair]], per_round: int) -> None:
    for members in rounds:
        nodes = [n for pair in members for n in pair]
        assert len(nodes) == len(set(nodes)), f"a node is in two retests of one round: {members}"
        assert len(members) <= per_round


def test_no_node_is_in_two_retests_of_a_round_and_every_pair_is_scheduled_once() -> None:
    pairs = [("a", "b"), ("a", "c"), ("b", "c"), ("d", "e"), ("a", "b"), ("c", "d")]
    rounds = schedule(pairs, per_round=8)
    assert_disjoint(rounds, 8)
    assert sorted(p for r in rounds for p in r) == sorted(set(pairs))
    assert len(rounds) == 3  # a, b and c are each in three of the five distinct pairs


def test_a_round_holds_at_most_fanout_over_two_pairs() -> None:
    pairs = [(f"s{i}", f"r{i}") for i in range(10)]  # all disjoint
    rounds = schedule(pairs, per_round=4)
    assert len(rounds) == 3 and sorted(len(r) for r in rounds)[-1] == 4
    assert_disjoint(rounds, 4)


def test_pairs_with_a_tag_in_common_never_share_a_round() -> None:
    # two pairs that collided on the spine in the sweep: together again they would collide again
    pairs = [("a", "b"), ("c", "d"), ("e", "f")]
    rounds = schedule(pairs, per_round=8, apart={("a", "b"): ["spine A<->B"], ("c", "d"): ["spine A<->B"]})
    assert len(rounds) == 2
    assert not any({("a", "b"), ("c", "d")} <= set(r) for r in rounds)


def test_helpers_are_spread_across_the_healthy_nodes() -> None:
    suspects = ["n000", "n001", "n002", "n003"]
    good = [f"n{i:03d}" for i in range(4, 12)]
    chosen = spread_helpers(suspects, good, 2, NODES_512)
    use = Counter(h for hs in chosen.values() for h in hs)
    assert all(len(hs) == 2 and s not in hs for s, hs in chosen.items())
    assert max(use.values()) == 1  # 8 helpers for 8 places: nobody helps twice
    # with fewer helpers than places, the load stays even
    chosen = spread_helpers(suspects, good[:3], 2, NODES_512)
    use = Counter(h for hs in chosen.values() for h in hs)
    assert max(use.values()) - min(use.values()) <= 1


def test_the_same_helper_for_every_suspect_would_serialise_them() -> None:
    # what spreading buys: 10 suspects all checked against one pair of helpers put each helper in
    # 20 retests, 20 rounds; spread over 500 healthy nodes, 4 (each suspect sends to and receives
    # from two helpers)
    suspects = NODES_512[:10]
    same = [p for s in suspects for h in ("n500", "n501") for p in ((s, h), (h, s))]
    assert rounds_needed(same, per_round=32) == 20
    assert rounds_needed(node_retests(suspects, NODES_512[10:]), per_round=32) == 4


@pytest.mark.parametrize(("suspects", "per_round", "expected"), [(1, 32, 4), (10, 32, 4), (100, 32, 13), (100, 256, 4)])
def test_512_nodes_rounds_for_n_retests(suspects: int, per_round: int, expected: int) -> None:
    """512 nodes, ``suspects`` node faults each checked with 2 helpers both ways (4 retests each):
    the rounds are the bound, max(4, retests / per_round); one at a time they were 4 x suspects."""
    rng = random.Random(3)
    chosen = rng.sample(NODES_512, suspects)
    pairs = node_retests(chosen, [n for n in NODES_512 if n not in chosen])
    rounds = schedule(pairs, per_round)
    assert_disjoint(rounds, per_round)
    assert len(pairs) == 4 * suspects
    assert len(rounds) == expected == max(4, math.ceil(len(pairs) / per_round))


def test_512_nodes_bad_pairs_of_a_random_sweep_in_rounds() -> None:
    """random:4 at 512 nodes with 10 node faults: 40 pairs short in the sweep, each faulty node in 4;
    kept apart by sweep round (they may have collided there): as many rounds as the busiest sweep
    round has short pairs (10), near it, against 40 one at a time."""
    pairs = make_pairs(NODES_512, "random:4")
    faulty = set(NODES_512[::51][:10])
    short = [(p.a, p.b) for p in pairs if faulty & {p.a, p.b}]
    round_of = {(p.a, p.b): p.round for p in pairs}
    apart = {p: [f"round {round_of[p]}"] for p in short}
    per_round = 32
    rounds = schedule(short, per_round, apart)
    assert_disjoint(rounds, per_round)
    bound = max(*Counter(round_of[p] for p in short).values(), *Counter(n for p in short for n in p).values())
    assert len(short) == 40 and bound == 10
    assert bound <= len(rounds) <= bound + 2, len(rounds)
    assert not any(len({round_of[p] for p in r}) < len(r) for r in rounds)  # tags kept apart


def test_samples_are_taken_as_rounds_sample_k_of_every_pair_together() -> None:
    pairs = [("a", "b"), ("c", "d"), ("a", "c")]  # two rounds: a-b with c-d, then a-c
    calls: list[tuple[int, tuple[Pair, ...]]] = []

    def measure_round(members: list[Pair], k: int) -> list[str]:
        calls.append((k, tuple(members)))
        return [f"{s}->{r}#{k}" for s, r in members]

    out = run_rounds(pairs, 3, 8, measure_round)
    assert out[("a", "b")] == ["a->b#0", "a->b#1", "a->b#2"]
    assert [k for k, _ in calls] == [0, 0, 1, 1, 2, 2]  # sample k of every round before sample k + 1
    assert {m for _, members in calls[:2] for m in members} == set(pairs)


# --------------------------------------------------------------------------- control pairs


def test_a_round_needs_a_control_when_no_pair_has_a_contemporary() -> None:
    assert needs_control([("x", "h1")])
    assert not needs_control([("x", "h1"), ("a", "b")])
    assert not needs_control([])  # nothing measured, nothing to read


def test_a_suspects_one_pair_rounds_get_a_control_of_the_pools_first_two_free_nodes() -> None:
    # x and its two helpers both ways: four rounds of one pair, none with a contemporary
    pairs = [("x", "h1"), ("h1", "x"), ("x", "h2"), ("h2", "x")]
    plan = schedule(pairs, per_round=8)
    assert [len(r) for r in plan] == [1, 1, 1, 1]
    controls = pick_controls(plan, ["h1", "a", "b", "c"], per_round=8)
    # the pool's first two free nodes: h1 where it is not in the round, else a and b
    assert controls == [("a", "b") if "h1" in r[0] else ("h1", "a") for r in plan]
    # the other helper where it is free (the pool's order), never a node of the round
    helpers_first = pick_controls(plan, ["h2", "h1", "a", "b"], per_round=8)
    assert helpers_first == [("h2", "a") if "h1" in r[0] else ("h1", "a") for r in plan]
    assert pick_controls(plan, ["h1", "a", "b", "c"], per_round=8) == controls  # the same input, the same controls


def test_a_round_with_contemporaries_a_full_round_or_too_few_free_nodes_gets_no_control() -> None:
    plan = [[("x", "h1"), ("a", "b")], [("x", "h2")], [("y", "h3")]]
    assert pick_controls(plan, ["c", "d"], per_round=8) == [None, ("c", "d"), ("c", "d")]
    assert pick_controls(plan, ["c", "d"], per_round=1) == [None, None, None]  # the cap binds: never past it
    # four nodes, x and h1 in the round: the other two are the control, or none where one is missing
    assert pick_controls([[("x", "h1")]], ["x", "h1", "a", "b"], per_round=2) == [("a", "b")]
    assert pick_controls([[("x", "h1")]], ["x", "h1", "a"], per_round=2) == [None]


def test_a_control_stays_inside_one_leaf_else_crosses_no_spine_the_round_crosses() -> None:
    leaf = {"x": "L1", "h1": "L2", "a": "L1", "b": "L2", "c": "L3", "d": "L3", "e": "L2"}

    def tags(pair: Pair) -> list[str]:
        one, two = leaf[pair[0]], leaf[pair[1]]
        return [] if one == two else ["spine " + "<->".join(sorted((one, two)))]

    round_ = [[("x", "h1")]]  # crosses L1<->L2
    # a, b cross that very spine; b, e share leaf L2: the first pair inside one leaf
    assert pick_controls(round_, ["a", "b", "e", "c", "d"], 8, tags) == [("b", "e")]
    # no pair inside one leaf: one crossing another spine, never L1<->L2
    assert pick_controls(round_, ["a", "b", "c"], 8, tags) == [("a", "c")]
    assert pick_controls(round_, ["a", "b"], 8, tags) == [None]


def test_the_control_pool_is_healthy_nodes_in_no_retest_first_and_never_a_suspect() -> None:
    order = ["n1", "n2", "n3", "n4", "n5", "n6", "n7"]
    kinds = {"n1": "healthy", "n2": "healthy", "n3": "node fault", "n4": "healthy", "n5": "healthy",
             "n6": "fabric", "n7": "cannot tell"}
    asked = [("n2", "n1"), ("n1", "n2")]  # n2 (a suspect the model still calls healthy) with helper n1
    assert control_pool(order, kinds, ["n2"], asked) == ["n4", "n5", "n1", "n6"]
