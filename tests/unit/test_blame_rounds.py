"""The blame model's time structure: repeats measured at the same time as other pairs (``Figure.rounds``).

A machine's load moves in time: for a few seconds everything measured at once is slower. A low
repeat whose contemporaries (the pairs measured with it, sharing no node with it) were as low
against their own medians is the load's, not the pair's (judge/blame.py, ``_unloaded``).
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from pytest_fabric.judge.blame import Blame, Figure, blame
from pytest_fabric.run.pairs import make_pairs
from pytest_fabric.run.retests import control_pool, pick_controls, schedule

GB = 1e9
FOUR = ["node01", "node02", "node03", "node04"]
#: the sweep of four nodes: three rounds of two pairs, one direction a pair
SWEEP = [[("node01", "node04"), ("node02", "node03")], [("node03", "node01"), ("node04", "node02")],
         [("node01", "node02"), ("node03", "node04")]]
#: the retest step a four-node series in doubt asks: every pair both ways, in rounds of two disjoint pairs
RETESTS = [[("node01", "node04"), ("node02", "node03")], [("node04", "node01"), ("node03", "node02")],
           [("node01", "node03"), ("node04", "node02")], [("node03", "node01"), ("node02", "node04")],
           [("node01", "node02"), ("node04", "node03")], [("node02", "node01"), ("node03", "node04")]]
#: (retest round, sample) that ran while the machine was busy: node04's pairs with node02, each beside
#: a pair of node01's (its contemporary in that round, node01->node03 and node03->node01) as slow
BUSY = {(2, 2), (3, 1)}


def busy_retests(seed: int, labelled: bool = True) -> list[Figure]:
    """Four nodes over TCP (one repeat a run): healthy pairs 11.8 Gb/s within 3%, node01->node04 a bad
    cable at 0.15 Gb/s, measured in the sweep and again in a retest step of three samples a pair; the
    pairs of the retest rounds in ``BUSY`` at 3-5 Gb/s (the simulated cluster on a busy machine)."""
    rng = random.Random(seed)
    out = []

    def figure(a: str, b: str, moment: str, busy: bool) -> Figure:
        value = 11.8 * GB * rng.uniform(0.98, 1.01)
        if (a, b) == ("node01", "node04"):
            value = 0.15 * GB * rng.uniform(0.98, 1.01)
        elif busy:
            value = rng.uniform(3, 5) * GB
        return Figure("tcp_throughput", (a, b), (value,), floor=5 * GB, rounds=(moment,) if labelled else ())

    for number, pairs in enumerate(SWEEP):
        out += [figure(a, b, f"sweep round {number}", False) for a, b in pairs]
    for sample in range(3):
        for number, pairs in enumerate(RETESTS):
            out += [figure(a, b, f"retest round {number} sample {sample}", (number, sample) in BUSY) for a, b in pairs]
    return out


def kinds(result: Blame) -> dict[str, str]:
    return {n: b.kind for n, b in result.nodes.items()}


def test_a_healthy_node_whose_retest_rounds_ran_slower_beside_its_contemporaries_is_not_sent_back() -> None:
    # the simulated cluster: node04's pairs in two retest rounds at 3-5 Gb/s against 11.8, the other
    # pair of each round as low: the machine was busy, not node04's rail
    for seed in range(10):
        result = blame(FOUR, busy_retests(seed))
        assert result.send_back == (), (seed, [b.message for b in result.nodes.values() if b.kind != "healthy"])
        assert result.nodes["node04"].kind not in ("node fault", "unstable")
        assert [lf.nodes for lf in result.links] == [("node01", "node04")], seed


def test_without_round_labels_the_same_figures_send_the_healthy_node_back() -> None:
    # what the labels are for: read as independent in time, the slow rounds are two levels of node04's
    # (the verdict before the model read time, unchanged without labels)
    result = blame(FOUR, busy_retests(1, labelled=False))
    assert result.send_back == ("node04",)
    assert result.nodes["node04"].kind == "unstable"


def test_a_slow_round_whose_contemporaries_kept_their_level_is_no_load() -> None:
    # the same dips with the other pair of each round at its own level: nothing measured with them says
    # the machine was busy, so they stay node04's (or its pairs') low repeats
    def steady_contemporaries(seed: int) -> list[Figure]:
        out = []
        for f in busy_retests(seed):
            low = f.repeats[0] < 6 * GB and "node01" in f.nodes and f.nodes != ("node01", "node04")
            out.append(dataclasses.replace(f, repeats=(11.8 * GB,)) if low else f)
        return out

    for seed in range(10):
        with_labels = blame(FOUR, steady_contemporaries(seed))
        without = blame(FOUR, [dataclasses.replace(f, rounds=()) for f in steady_contemporaries(seed)])
        assert kinds(with_labels) == kinds(without), seed


def flapping_sweep(names: list[str], node: str, low: float, spread: float, seed: int) -> list[Figure]:
    """One rail swept in the circle method's rounds, three repeats a pair, repeat j of every pair of a
    round at once (its label); ``node``'s rail drops each repeat to ``low`` with a chance of one half."""
    rng = random.Random(seed)
    out = []
    for p in make_pairs(names, "all"):
        repeats = []
        for _ in range(3):
            level = low if node in (p.a, p.b) and rng.random() < 0.5 else 1.0
            repeats.append(196 * GB * level * 2.718281828 ** rng.uniform(-spread, spread))
        out.append(Figure("rdma_bandwidth", (p.a, p.b), tuple(repeats), floor=120 * GB, rail="mlx5_0",
                          rounds=tuple(f"sweep round {p.round} repeat {j}" for j in range(3))))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_a_flapping_rail_stays_unstable_with_round_labels(seed: int) -> None:
    # its low repeats fall in rounds whose other pairs kept their level: not the machine's load
    names = [f"node{i:02d}" for i in range(1, 17)]
    figures = flapping_sweep(names, "node05", 0.66, 0.14, seed)
    result = blame(names, figures)
    assert result.send_back == ("node05",), [b.message for b in result.nodes.values() if b.kind != "healthy"]
    assert result.nodes["node05"].kind == "unstable"
    assert not result.links
    assert kinds(result) == kinds(blame(names, [dataclasses.replace(f, rounds=()) for f in figures]))


def test_every_pair_short_all_the_time_is_the_fabric_with_round_labels_too() -> None:
    # each round's dip is read against each figure's own median over time: a fabric always low dips never
    names = [f"node{i:02d}" for i in range(1, 9)]
    rng = random.Random(9)
    figures = [Figure("rdma_bandwidth", (p.a, p.b), tuple(120 * GB * rng.uniform(0.97, 1) for _ in range(3)),
                      floor=180 * GB, rounds=tuple(f"sweep round {p.round} repeat {j}" for j in range(3)))
               for p in make_pairs(names, "all")]
    result = blame(names, figures)
    assert result.send_back == ()
    assert result.fabric and "under the floor" in result.fabric[0]
    assert all(b.kind == "fabric" for b in result.nodes.values())


def test_without_labels_or_with_one_round_a_figure_every_verdict_is_as_before() -> None:
    # no time read: not a repeat leaves its figure, and the verdict is the one without labels (the
    # benchmark's --no-rounds run gives the same numbers as the model before labels)
    for seed in range(5):
        figures = busy_retests(seed, labelled=False)
        each_alone = [dataclasses.replace(f, rounds=(f"measured at {i}",)) for i, f in enumerate(figures)]
        assert blame(FOUR, figures) == blame(FOUR, each_alone), seed


def test_a_retest_keeps_each_repeat_with_its_round_label_in_any_order() -> None:
    # the merge of a pair measured again keeps labels with their repeats, whatever the figures' order
    figures = busy_retests(3)
    shuffled = list(figures)
    random.Random(3).shuffle(shuffled)
    assert blame(FOUR, figures) == blame(list(reversed(FOUR)), shuffled)


def test_a_figure_with_labels_for_a_different_number_of_repeats_is_refused() -> None:
    with pytest.raises(ValueError, match="2 round labels for 3 repeats"):
        Figure("tcp_throughput", ("node01", "node02"), (1.0, 2.0, 3.0), rounds=("a", "b"))


#: sixteen nodes swept with four peers each; node05 is healthy but asked again with two helpers both ways (a retest step of four
#: rounds of one pair each, no contemporary in any), and the machine was busy in some of those samples
SIXTEEN = [f"node{i:02d}" for i in range(1, 17)]
SUSPECT_RETESTS = [("node05", "node06"), ("node06", "node05"), ("node05", "node07"), ("node07", "node05")]
#: (retest round, sample) the machine ran slower in: every pair measured then 3-5 Gb/s against 11.8
BUSY_ALONE = {(0, 1), (1, 0), (1, 2), (2, 2), (3, 1)}


def lone_round_retests(seed: int, control: bool) -> list[Figure]:
    """TCP over sixteen nodes (four random peers a node, three repeats a pair, repeat j of a sweep round at once),
    healthy at 11.8 Gb/s within 3%; then node05's retests, one pair a round, three samples each, the
    samples in ``BUSY_ALONE`` at 3-5 Gb/s. ``control``: each round also measures the control pair
    run/retests.py ``pick_controls`` gives it, at the same labels (as slow in the busy samples)."""
    rng = random.Random(seed)

    def value(busy: bool) -> float:
        return rng.uniform(3, 5) * GB if busy else 11.8 * GB * rng.uniform(0.97, 1.0)

    out = [Figure("tcp_throughput", (p.a, p.b), tuple(value(False) for _ in range(3)), floor=5 * GB,
                  rounds=tuple(f"sweep round {p.round} repeat {j}" for j in range(3)))
           for p in make_pairs(SIXTEEN, "random:4")]
    plan = schedule(SUSPECT_RETESTS, per_round=8)
    pool = control_pool(SIXTEEN, {n: "healthy" for n in SIXTEEN}, ["node05"], SUSPECT_RETESTS)
    controls = pick_controls(plan, pool, per_round=8)
    assert all(c is not None and "node05" not in c for c in controls)
    for number, (pairs, pair_control) in enumerate(zip(plan, controls)):
        measured = [*pairs, pair_control] if control and pair_control is not None else list(pairs)
        for a, b in measured:
            labels = tuple(f"retest round {number} sample {k}" for k in range(3))
            out.append(Figure("tcp_throughput", (a, b), tuple(value((number, k) in BUSY_ALONE) for k in range(3)),
                              floor=5 * GB, rounds=labels))
    return out


def test_a_control_pair_beside_a_suspects_lone_retest_round_reads_the_load_and_the_node_stays() -> None:
    # node05's four retest figures each have a sample at 3-5 Gb/s: two levels of node05's, were nothing
    # measured with them. The control pair of each round (two healthy nodes in no retest) dipped at
    # the same samples: the machine's load, not node05
    for seed in range(6):
        with_control = blame(SIXTEEN, lone_round_retests(seed, control=True))
        assert with_control.send_back == (), (seed, [b.message for b in with_control.nodes.values()
                                                     if b.kind != "healthy"])
        # what the control is for: without it the same retests send the healthy node back
        without = blame(SIXTEEN, lone_round_retests(seed, control=False))
        assert without.send_back == ("node05",), (seed, kinds(without))
        # and the control pair is no one's evidence: its ends stay healthy
        assert all(kinds(with_control)[n] == "healthy" for n in SIXTEEN), seed
