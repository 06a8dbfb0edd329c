"""A fabric finding of figures far below the rest is measured again alone before it stands.

Six nodes over TCP on a busy machine (tests/integration/test_attribution_classes.py): a few seconds
of load dipped the healthy pairs of one sweep round, and "3 of 15 figures far below the rest with
no node pattern: the fabric" was the verdict, asking no retest, rejecting naming no one. A link
fault's pair is measured again before it is reported; a fabric finding now is too: its pairs alone
(judge/blame.py, ``_Series._one_offs``), then its round again (measurements/attribution.py).
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from pytest_fabric.judge.blame import Blame, Figure, LinkFault, NodeBlame, blame
from pytest_fabric.measurements.attribution import held_then_cleared
from pytest_fabric.run.pairs import make_pairs

GB = 1e9
SIX = [f"node{i:02d}" for i in range(1, 7)]
#: the sweep round the moment of load fell in: its three pairs, 30-45% of their level
DIPPED_ROUND = 2


def level(rng: random.Random) -> float:
    """A healthy TCP repeat on the simulated cluster: 9.4 Gb/s, within -12% / +3%."""
    return 9.4 * GB * rng.uniform(0.88, 1.03)


def sweep(seed: int, labelled: bool = True) -> list[Figure]:
    """Every pair once, in the circle method's rounds, three repeats; the pairs of one round dipped."""
    rng = random.Random(seed)
    out = []
    for p in make_pairs(SIX, "all"):
        dip = rng.uniform(0.30, 0.45) if p.round == DIPPED_ROUND else 1.0
        out.append(Figure("tcp_throughput", (p.a, p.b), tuple(level(rng) * dip for _ in range(3)), floor=0.1 * GB,
                          rounds=tuple(f"sweep round {p.round} repeat {j}" for j in range(3)) if labelled else ()))
    return out


def dipped() -> list[tuple[str, str]]:
    return [(p.a, p.b) for p in make_pairs(SIX, "all") if p.round == DIPPED_ROUND]


def alone(seed: int, asked: Blame, short: set[frozenset[str]] = frozenset(), labelled: bool = True) -> list[Figure]:
    """What the run measures for ``asked``: each pair it asks alone, three samples of one repeat (each
    sample a moment of its own); the pairs in ``short`` at 40% alone too (a spine too oversubscribed
    for them), the rest at the healthy level."""
    rng = random.Random(seed + 1000)
    out = []
    for _, a, b in asked.retests:
        for sample in range(3):
            value = level(rng) * (0.4 if frozenset((a, b)) in short else 1.0)
            out.append(Figure("tcp_throughput", (a, b), (value,), floor=0.1 * GB,
                              rounds=(f"{a}->{b} alone sample {sample}",) if labelled else ()))
    return out


def not_healthy(result: Blame) -> dict[str, str]:
    return {n: b.kind for n, b in result.nodes.items() if b.kind != "healthy"}


@pytest.mark.parametrize("labelled", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_three_figures_a_moment_dipped_are_measured_again_and_the_fabric_is_healthy(seed: int, labelled: bool) -> None:
    figures = sweep(seed, labelled)
    first = blame(SIX, figures)
    # the sweep alone says the fabric, and asks the three pairs alone before that stands
    assert first.fabric and "3 of 15 figures far below the rest" in first.fabric[0], first.fabric
    assert {("tcp_throughput", a, b) for a, b in dipped()} <= set(first.retests)
    assert "again alone" in first.fabric[0]
    assert sorted((a, b) for _, a, b in first.fabric_pairs) == sorted(dipped())
    # alone each is at its peers' level: the sweep's dip was its moment's
    final = blame(SIX, figures + alone(seed, first, labelled=labelled))
    assert not final.fabric and not final.links and not final.fabric_pairs, (final.fabric, final.links)
    assert final.send_back == () and not_healthy(final) == {}
    assert not final.rejects
    # the run runs their round again (measurements/attribution.py): as good again is not reproduced
    assert sorted(nodes for _, nodes in held_then_cleared(first, final)) == sorted(dipped())


@pytest.mark.parametrize("seed", range(4))
def test_the_same_three_pairs_short_alone_too_are_the_fabric(seed: int) -> None:
    # every pair of one round through a spine too oversubscribed for them: short alone too, both ways
    figures = sweep(seed)
    first = blame(SIX, figures)
    final = blame(SIX, figures + alone(seed, first, short={frozenset(p) for p in dipped()}))
    assert final.fabric and "far below the rest with no node pattern" in final.fabric[0], not_healthy(final)
    assert "short measured again alone too" in final.fabric[0]
    assert "again alone would tell" not in final.fabric[0]  # nothing left to ask: the finding stands
    assert {frozenset((a, b)) for _, a, b in final.fabric_pairs} == {frozenset(p) for p in dipped()}
    assert final.send_back == () and not final.links
    assert set(not_healthy(final).values()) == {"fabric"}
    assert held_then_cleared(first, final) == []


@pytest.mark.parametrize("seed", range(4))
def test_two_slow_cables_and_a_pair_a_moment_dipped_are_two_links_once_measured_alone(seed: int) -> None:
    # the integration test's flake: two cables at 150 Mbit/s one way (simcluster's slow_links) in different
    # rounds, and a moment of load dipping a third, healthy pair: 3 of 15, the fabric, naming no one.
    # Alone, the cables stay short
    rng = random.Random(seed)
    pairs = make_pairs(SIX, "all")
    cable = pairs[0]
    other = next(p for p in pairs if p.round != cable.round and not {p.a, p.b} & {cable.a, cable.b})
    moment = next(p for p in pairs if p.round not in (cable.round, other.round) and not {p.a, p.b} & {other.a, other.b}
                  and not {p.a, p.b} & {cable.a, cable.b})
    slow = {(cable.a, cable.b), (other.a, other.b)}
    figures = []
    for p in pairs:
        dip = 0.016 if (p.a, p.b) in slow else rng.uniform(0.30, 0.45) if p is moment else 1.0
        figures.append(Figure("tcp_throughput", (p.a, p.b), tuple(level(rng) * dip for _ in range(3)), floor=0.1 * GB,
                              rounds=tuple(f"sweep round {p.round} repeat {j}" for j in range(3))))
    first = blame(SIX, figures)
    assert first.fabric and ("tcp_throughput", moment.a, moment.b) in first.retests, (first.fabric, first.links)
    measured = figures + [dataclasses.replace(f, repeats=tuple(r * 0.016 for r in f.repeats))
                          if f.nodes in slow else f for f in alone(seed, first)]
    final = blame(SIX, measured)
    assert not final.fabric, final.fabric
    assert sorted(lf.nodes for lf in final.links) == sorted(slow)
    assert final.send_back == ()
    assert set(not_healthy(final)) == {cable.a, cable.b, other.a, other.b}
    assert held_then_cleared(first, final) == [("tcp_throughput", (moment.a, moment.b))]


def test_what_the_sweep_held_against_a_pair_and_the_retests_cleared_has_its_round_run_again() -> None:
    healthy = {n: NodeBlame(n, "healthy", "") for n in ("a", "b", "c", "d", "e", "f")}
    first = Blame(healthy, links=(LinkFault("tcp_throughput", ("a", "b"), "a link fault"),),
                  fabric=("tcp_throughput: 3 of 15 figures far below the rest",),
                  fabric_pairs=(("tcp_throughput", "c", "d"), ("tcp_throughput", "e", "f")))
    # c->d short alone too (still counted), a-b and e-f cleared: their rounds run again
    final = Blame(healthy, fabric=("tcp_throughput: ...",), fabric_pairs=(("tcp_throughput", "c", "d"),))
    assert held_then_cleared(first, final) == [("tcp_throughput", ("a", "b")), ("tcp_throughput", ("e", "f"))]
    # an end at fault is not cleared: its pair is its
    faulty = {**healthy, "e": NodeBlame("e", "node fault", "")}
    assert held_then_cleared(first, Blame(faulty)) == [("tcp_throughput", ("a", "b")), ("tcp_throughput", ("c", "d"))]
