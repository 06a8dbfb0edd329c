"""Pairing strategies and rounds of disjoint pairs."""

from __future__ import annotations

import itertools
import time

import pytest

from pytest_fabric.run.pairs import (
    Pair,
    Strategy,
    circle_rounds,
    disjoint_rounds,
    make_pairs,
    parse_strategy,
)


def _nodes(n: int) -> list[str]:
    return [f"n{i:02d}" for i in range(n)]


def _rounds(pairs: list[Pair]) -> dict[int, list[Pair]]:
    out: dict[int, list[Pair]] = {}
    for pair in pairs:
        out.setdefault(pair.round, []).append(pair)
    return out


def _assert_rounds_disjoint(pairs: list[Pair]) -> None:
    for number, members in _rounds(pairs).items():
        used = [node for pair in members for node in pair.nodes]
        assert len(used) == len(set(used)), f"round {number} uses a node twice: {members}"


@pytest.mark.parametrize("n", range(2, 13))
def test_all_uses_the_circle_method(n: int) -> None:
    nodes = _nodes(n)
    pairs = make_pairs(nodes, "all")
    keys = [frozenset(p.nodes) for p in pairs]
    assert len(keys) == len(set(keys)) == n * (n - 1) // 2
    assert set(keys) == {frozenset(c) for c in itertools.combinations(nodes, 2)}
    rounds = _rounds(pairs)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    assert sorted(rounds) == list(range(len(rounds)))
    for members in rounds.values():
        assert len(members) == n // 2
        assert [p.slot for p in members] == list(range(len(members)))
    _assert_rounds_disjoint(pairs)
    assert all(p.a != p.b for p in pairs)


def test_circle_rounds_below_two_nodes() -> None:
    assert circle_rounds([]) == []
    assert circle_rounds(["a"]) == []


def test_pairs_come_in_round_order_and_are_ordered() -> None:
    pairs = make_pairs(_nodes(6), "all")
    assert pairs == sorted(pairs)
    assert pairs[0].id == f"{pairs[0].a}<->{pairs[0].b}"


@pytest.mark.parametrize("n", [3, 4, 5, 8, 9])
def test_ring(n: int) -> None:
    nodes = _nodes(n)
    pairs = make_pairs(nodes, "ring")
    assert {frozenset(p.nodes) for p in pairs} == {frozenset((nodes[i], nodes[(i + 1) % n])) for i in range(n)}
    assert len(pairs) == n
    _assert_rounds_disjoint(pairs)
    assert len(_rounds(pairs)) == (2 if n % 2 == 0 else 3)


def test_ring_of_two_is_one_pair() -> None:
    assert [p.nodes for p in make_pairs(["a", "b"], "ring")] == [("a", "b")]


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_random_is_deterministic_and_disjoint(k: int) -> None:
    nodes = _nodes(16)
    first = make_pairs(nodes, f"random:{k}")
    again = make_pairs(list(nodes), f"random:{k}")
    assert first == again
    keys = [frozenset(p.nodes) for p in first]
    assert len(keys) == len(set(keys))
    degree = {node: sum(node in key for key in keys) for node in nodes}
    assert all(d >= k for d in degree.values())  # each node got its K peers
    _assert_rounds_disjoint(first)


def test_random_depends_on_the_nodes() -> None:
    assert make_pairs(_nodes(16), "random:2") != make_pairs(_nodes(17)[1:], "random:2")


def test_random_k_larger_than_the_cluster_is_all_pairs() -> None:
    pairs = make_pairs(_nodes(4), "random:10")
    assert {frozenset(p.nodes) for p in pairs} == {frozenset(c) for c in itertools.combinations(_nodes(4), 2)}


def test_leaf_uses_labels() -> None:
    nodes = ["a1", "a2", "a3", "b1", "b2", "b3"]
    labels = {n: {"leaf": f"leaf-{n[0]}"} for n in nodes}
    pairs = make_pairs(nodes, "leaf", labels)
    keys = {frozenset(p.nodes) for p in pairs}
    ring_a = {frozenset(x) for x in [("a1", "a2"), ("a2", "a3"), ("a3", "a1")]}
    ring_b = {frozenset(x) for x in [("b1", "b2"), ("b2", "b3"), ("b3", "b1")]}
    across = {frozenset(x) for x in [("a1", "b1"), ("a2", "b2"), ("a3", "b3")]}
    assert keys == ring_a | ring_b | across
    assert len(pairs) == len(keys)
    _assert_rounds_disjoint(pairs)


def test_leaf_without_labels_is_one_ring() -> None:
    nodes = _nodes(4)
    assert {frozenset(p.nodes) for p in make_pairs(nodes, "leaf")} == {
        frozenset(p.nodes) for p in make_pairs(nodes, "ring")
    }


@pytest.mark.parametrize("strategy", ["all", "ring", "random:3", "leaf"])
def test_single_node_is_measured_against_itself(strategy: str) -> None:
    assert make_pairs(["solo"], strategy) == [Pair(0, 0, "solo", "solo")]
    assert make_pairs(["solo"], strategy)[0].id == "solo<->solo"


def test_parse_strategy() -> None:
    assert parse_strategy("all") == Strategy("all")
    assert parse_strategy(" ring ") == Strategy("ring")
    assert parse_strategy("random:4") == Strategy("random", 4)
    assert parse_strategy("leaf") == Strategy("leaf")
    assert make_pairs(_nodes(4), Strategy("ring")) == make_pairs(_nodes(4), "ring")


@pytest.mark.parametrize("text", ["", "everything", "random", "random:", "random:x", "random:-1", "Ring", "all,ring"])
def test_bad_strategy(text: str) -> None:
    with pytest.raises(ValueError, match="is not a strategy; use all, ring, random:K"):
        parse_strategy(text)


def test_random_zero_is_refused() -> None:
    with pytest.raises(ValueError, match="K >= 1"):
        parse_strategy("random:0")


def test_disjoint_rounds_greedy() -> None:
    rounds = disjoint_rounds([("a", "b"), ("b", "c"), ("c", "d"), ("a", "c")])
    assert rounds == [[("a", "b"), ("c", "d")], [("b", "c")], [("a", "c")]]


def test_ring_of_1024_nodes_completes() -> None:
    start = time.perf_counter()
    pairs = make_pairs([f"gpu{i:04d}" for i in range(1024)], "ring")
    assert len(pairs) == 1024
    assert time.perf_counter() - start < 10  # milliseconds in practice; benchmarks/ measures it


def _roles(pairs: list[Pair]) -> tuple[dict[str, int], dict[str, int]]:
    sends: dict[str, int] = {}
    receives: dict[str, int] = {}
    for pair in pairs:
        sends[pair.a] = sends.get(pair.a, 0) + 1
        receives[pair.b] = receives.get(pair.b, 0) + 1
    return sends, receives


@pytest.mark.parametrize("n", [3, 4, 5, 8, 9, 16, 64])
def test_every_node_sends_and_receives_over_the_sweep(n: int) -> None:
    # The circle method keeps its first node fixed: without alternating, it is the
    # client of every round and a receive-side fault there is never seen.
    nodes = _nodes(n)
    sends, receives = _roles(make_pairs(nodes, "all"))
    assert set(sends) == set(receives) == set(nodes)
    first = nodes[0]
    assert abs(sends[first] - receives[first]) <= 1


@pytest.mark.parametrize("strategy", ["random:2", "random:3", "leaf"])
def test_other_strategies_balance_who_sends(strategy: str) -> None:
    nodes = _nodes(16)
    labels = {n: {"leaf": f"leaf{i // 4}"} for i, n in enumerate(nodes)}
    pairs = make_pairs(nodes, strategy, labels)
    sends, receives = _roles(pairs)
    for node in nodes:
        out, into = sends.get(node, 0), receives.get(node, 0)
        assert abs(out - into) <= 1, (node, out, into)
        if out + into >= 2:
            assert out and into, f"{node} only {'sends' if out else 'receives'} under {strategy}"
    _assert_rounds_disjoint(pairs)


def test_balanced_keeps_every_pair_and_turns_them_for_balance() -> None:
    from pytest_fabric.run.pairs import balanced

    star = [("hub", f"s{i}") for i in range(6)]  # the hub sends to everyone as written
    turned = balanced(star)
    assert {frozenset(p) for p in turned} == {frozenset(p) for p in star}
    assert sum(1 for a, _ in turned if a == "hub") == 3
