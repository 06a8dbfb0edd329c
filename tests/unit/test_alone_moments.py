"""When each sample measured alone ran (measurements/inter_node.py ``alone_moment``): the label the blame
model reads (``Figure.rounds``), one per retest round's sample, so that the pairs measured at once share it."""

from __future__ import annotations

from collections.abc import Callable

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.measurements.inter_node import (
    alone_moment,
    control_samples,
    measure_alone,
    pair_check,
    retest_alone,
)
from pytest_fabric.run.cluster import NodePair
from pytest_fabric.run.pairs import Pair
from pytest_fabric.run.state import FabricState

CHECK = "moments_of_a_test_check"


class FakeNode:
    def __init__(self, name: str) -> None:
        self.name = name
        self.labels: dict[str, str] = {}


class FakeCluster:
    nodes = [FakeNode(n) for n in ("n1", "n2", "n3", "n4", "n5")]

    def pair(self, a: str, b: str, round: int = 0, slot: int = 0) -> NodePair:
        return NodePair(FakeNode(a), FakeNode(b), round, slot)  # type: ignore[arg-type]


@pair_check(CHECK)
def _measure(state: FabricState, port_offset: int) -> Callable[[NodePair], Measurement]:
    return lambda pair: Measurement(value=1, detail=pair.id)


def make_state() -> FabricState:
    state = FabricState(None, None, [Pair(0, 0, "n1", "n2")], "strict")  # type: ignore[arg-type]
    state.cluster = FakeCluster()  # type: ignore[assignment]
    return state


def test_the_pairs_of_a_retest_round_share_each_samples_moment_and_the_samples_differ() -> None:
    state = make_state()
    # n1 is in two pairs: two rounds, one of them with n3->n4 beside n1's pair
    assert retest_alone(state, CHECK, [("n1", "n2"), ("n3", "n4"), ("n1", "n5")], 2) == 2
    first = {p: alone_moment(state, CHECK, *p, 0) for p in (("n1", "n2"), ("n3", "n4"), ("n1", "n5"))}
    assert first[("n1", "n2")] != first[("n1", "n5")]
    assert len([p for p in first if first[p] == first[("n3", "n4")]]) == 2
    assert alone_moment(state, CHECK, "n3", "n4", 0) != alone_moment(state, CHECK, "n3", "n4", 1)
    # asked again later, a sample keeps the moment it was measured at
    measure_alone(state, CHECK, "n3", "n4", 2)
    assert alone_moment(state, CHECK, "n3", "n4", 0) == first[("n3", "n4")]


def test_a_sample_measured_on_its_own_has_a_moment_of_its_own() -> None:
    state = make_state()
    measure_alone(state, CHECK, "n1", "n2", 2)
    retest_alone(state, CHECK, [("n3", "n4")], 1)
    moments = {alone_moment(state, CHECK, "n1", "n2", 0), alone_moment(state, CHECK, "n1", "n2", 1),
               alone_moment(state, CHECK, "n3", "n4", 0)}
    assert len(moments) == 3


def test_a_round_of_one_pair_measures_a_control_pair_beside_it_at_the_same_moment() -> None:
    # n1->n2 alone in its round: no contemporary to read the machine's load by, so two nodes of the
    # pool (n1 is no control of its own round) are measured at each of its samples' moments
    state = make_state()
    assert retest_alone(state, CHECK, [("n1", "n2")], 2, control_pool=["n1", "n3", "n4", "n5"]) == 1
    controls = control_samples(state, CHECK)
    assert [(c.sender, c.receiver) for c in controls] == [("n3", "n4")] * 2
    assert [c.moment for c in controls] == [alone_moment(state, CHECK, "n1", "n2", k) for k in range(2)]
    assert all(isinstance(c.measured, Measurement) and c.measured.detail == "n3<->n4" for c in controls)
    controls = list(controls)
    # asked again for more samples, the round measures a control beside its new samples only
    retest_alone(state, CHECK, [("n1", "n2")], 3, control_pool=["n1", "n3", "n4", "n5"])
    assert [c.moment for c in control_samples(state, CHECK)] == [alone_moment(state, CHECK, "n1", "n2", k)
                                                                 for k in range(3)]
    # a control is no sample of its pair alone: measured alone later, n3->n4 has moments of its own
    measure_alone(state, CHECK, "n3", "n4", 1)
    assert alone_moment(state, CHECK, "n3", "n4", 0) not in {c.moment for c in controls}


def test_without_a_control_pool_or_with_contemporaries_no_control_is_measured() -> None:
    state = make_state()
    retest_alone(state, CHECK, [("n1", "n2")], 2)  # the outlier checks, --lf: they read no moments
    retest_alone(state, CHECK, [("n1", "n3"), ("n4", "n5")], 1, control_pool=["n2", "n3", "n4", "n5"])
    assert control_samples(state, CHECK) == []
