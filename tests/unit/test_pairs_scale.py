"""Pairing that scales: a size rule picks the strategy by node count; random:K is linear in N."""

from __future__ import annotations

import time

import pytest

from pytest_fabric.checks.builtin import load_profile
from pytest_fabric.run.pairs import Strategy, make_pairs, resolve_strategy

RULE = "all up to 32 nodes, then random:4"


def _nodes(n: int) -> list[str]:
    return [f"gpu{i:04d}" for i in range(n)]


def test_size_rule_picks_by_node_count() -> None:
    assert resolve_strategy(RULE, 2) == Strategy("all")
    assert resolve_strategy(RULE, 32) == Strategy("all")
    assert resolve_strategy(RULE, 33) == Strategy("random", 4)
    assert resolve_strategy("ring", 5000) == Strategy("ring")
    # spacing and a singular "node" are forgiven, as YAML authors write them
    assert resolve_strategy("all  up to 2 nodes,  then ring", 3) == Strategy("ring")


def test_make_pairs_follows_the_size_rule() -> None:
    assert make_pairs(_nodes(32), RULE) == make_pairs(_nodes(32), "all")
    assert make_pairs(_nodes(40), RULE) == make_pairs(_nodes(40), "random:4")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("all up to 32 nodes, then everything", "'everything' is not a strategy"),
        ("most up to 32 nodes, then ring", "'most' is not a strategy"),
        ("all up to 0 nodes, then ring", "up to 0 nodes: give a node count of at least 2"),
        ("everything", "or a size rule such as 'all up to 32 nodes, then random:4'"),
    ],
)
def test_bad_size_rules_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        resolve_strategy(text, 8)


def test_a_profile_may_give_a_size_rule(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "p.yaml"
    path.write_text(f"name: p\ninter_node:\n  pairs: {RULE}\n  rdma_latency: {{max: 3 us}}\n")
    assert load_profile(str(path), []).document.inter_node.pairs == RULE


@pytest.mark.parametrize("name", ["base", "hdr200", "ndr400-large"])
def test_bundled_profiles_pair_all_only_up_to_32_nodes(name: str) -> None:
    """Fails on the profiles that said `pairs: all`: 4,095 rounds at 4,096 nodes."""
    pairs = load_profile(name, []).document.inter_node.pairs
    assert resolve_strategy(pairs, 16) == Strategy("all")
    big = make_pairs(_nodes(512), pairs)
    assert len({p.round for p in big}) <= 24
    assert len(big) <= 512 * 4


def test_random_pairs_of_4096_nodes_take_well_under_a_second() -> None:
    """Fails on the shuffle of every peer list per node (N^2: 7 s at 4,096 nodes)."""
    started = time.process_time()
    pairs = make_pairs(_nodes(4096), "random:4")
    assert time.process_time() - started < 1.5
    degree: dict[str, int] = {}
    for p in pairs:
        degree[p.a] = degree.get(p.a, 0) + 1
        degree[p.b] = degree.get(p.b, 0) + 1
    assert min(degree.values()) >= 4
    assert len({frozenset(p.nodes) for p in pairs}) == len(pairs)


def test_a_profile_without_pairs_scales_too(tmp_path: object) -> None:
    """Fails on the old default `all`: a user's profile on 512 nodes collected 130,816 pairs per check."""
    from pathlib import Path

    path = Path(str(tmp_path)) / "p.yaml"
    path.write_text("name: p\ninter_node:\n  rdma_latency: {max: 3 us}\n")
    pairs = load_profile(str(path), []).document.inter_node.pairs
    assert resolve_strategy(pairs, 8) == Strategy("all")
    assert resolve_strategy(pairs, 512) == Strategy("random", 4)


@pytest.mark.parametrize(("count", "k"), [(4096, 4), (64, 3), (17, 4), (33, 3), (9, 1)])
def test_random_k_is_k_peers_in_k_rounds(count: int, k: int) -> None:
    """Fails on each node picking K peers: ~2K peers a node (picked by others too) in ~4K rounds,
    16,376 pairs and 17 rounds at 4,096 nodes for random:4, where K rounds of N/2 pairs do."""
    pairs = make_pairs(_nodes(count), f"random:{k}")
    degree: dict[str, int] = {}
    for p in pairs:
        degree[p.a] = degree.get(p.a, 0) + 1
        degree[p.b] = degree.get(p.b, 0) + 1
    assert len(degree) == count and min(degree.values()) >= k
    assert len({frozenset(p.nodes) for p in pairs}) == len(pairs)
    rounds = {p.round for p in pairs}
    if count % 2 == 0:
        assert set(degree.values()) == {k} and len(rounds) == k and len(pairs) == count * k // 2
    else:  # one more round for the nodes that sat a round out
        assert max(degree.values()) <= k + 1 and len(rounds) == k + 1
    for r in rounds:
        members = [n for p in pairs if p.round == r for n in p.nodes]
        assert len(members) == len(set(members))
