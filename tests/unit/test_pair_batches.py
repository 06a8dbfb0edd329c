"""The pair front door: a node pair is batched by round as a node is by wave.

The selected pairs of a test's round are measured once, together; under ``--lf`` the whole
round is; a pair measured in less than its full round says so. gpudirect_bandwidth goes through
the same door (it used to pick its round's pairs itself, and missed ``--lf``'s whole round).
"""

from __future__ import annotations

import json
import textwrap
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodePair
from pytest_fabric.run.pairs import Pair
from pytest_fabric.run.state import CHECK_KEY, STATE_KEY, CheckInfo, FabricState
from pytest_fabric.run.waves import measure_batched, wave


class FakeNode:
    def __init__(self, name: str) -> None:
        self.name = name


class FakeCluster:
    def pair(self, a: str, b: str, round: int = 0, slot: int = 0) -> NodePair:
        return NodePair(FakeNode(a), FakeNode(b), round, slot)  # type: ignore[arg-type]


#: three rounds of two disjoint pairs (four nodes, every pair)
PAIRS = [
    Pair(0, 0, "n1", "n4"), Pair(0, 1, "n2", "n3"),
    Pair(1, 0, "n1", "n3"), Pair(1, 1, "n4", "n2"),
    Pair(2, 0, "n1", "n2"), Pair(2, 1, "n3", "n4"),
]


def make_state(selected: dict[str, list[Pair]]) -> FabricState:
    state = FabricState(None, None, list(PAIRS), "strict")  # type: ignore[arg-type]
    state.cluster = FakeCluster()  # type: ignore[assignment]
    state.selected_subjects = {check: [("node_pair", p) for p in pairs] for check, pairs in selected.items()}
    return state


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, pair: NodePair) -> Measurement:
        with self.lock:
            self.calls.append(pair.id)
        return Measurement(value=1, detail=f"{pair.id} measured")


def test_the_selected_pairs_of_a_round_are_measured_once_together() -> None:
    state = make_state({"rdma_bandwidth": [PAIRS[0], PAIRS[1], PAIRS[2]]})
    measure = Recorder()
    assert measure_batched(state, "rdma_bandwidth", "node_pair", PAIRS[0], measure).detail == "n1<->n4 measured"
    assert sorted(measure.calls) == ["n1<->n4", "n2<->n3"]  # its round, nothing of the others
    got = measure_batched(state, "rdma_bandwidth", "node_pair", PAIRS[1], measure)
    assert got.detail == "n2<->n3 measured" and got.extra["measured_as"] == "all 2 at once"
    assert len(measure.calls) == 2  # read from the batch, not measured again
    measure_batched(state, "rdma_bandwidth", "node_pair", PAIRS[2], measure)
    assert measure.calls[2:] == ["n1<->n3"]  # round 1: only its selected pair
    assert state.batches.results("rdma_bandwidth", ("round", 1)).keys() == {"n1<->n3"}


def test_whole_measures_the_pairs_the_selection_left_out() -> None:
    state = make_state({"rdma_bandwidth": [PAIRS[2]]})
    measure = Recorder()
    measure_batched(state, "rdma_bandwidth", "node_pair", PAIRS[2], measure, whole=True)
    assert sorted(measure.calls) == ["n1<->n3", "n4<->n2"]


def test_a_check_no_selected_test_uses_is_measured_in_its_whole_round() -> None:
    """rdma_bandwidth measured for aggregate_rdma_bandwidth's sake, its own tests deselected: as in a full run."""
    state = make_state({"aggregate_rdma_bandwidth": [PAIRS[4]]})
    measure = Recorder()
    measure_batched(state, "rdma_bandwidth", "node_pair", PAIRS[4], measure)
    assert sorted(measure.calls) == ["n1<->n2", "n3<->n4"]


def test_a_round_again_is_kept_apart_from_the_first_results() -> None:
    state = make_state({"rdma_bandwidth": PAIRS})
    first, again = Recorder(), Recorder()
    measure_batched(state, "rdma_bandwidth", "node_pair", PAIRS[0], first)
    measure_batched(state, "rdma_bandwidth", "node_pair", PAIRS[0], again, cache_as="rdma_bandwidth (round again)")
    assert sorted(first.calls) == sorted(again.calls) == ["n1<->n4", "n2<->n3"]


def _request(state: FabricState, param: Pair, *, lf: bool) -> Any:
    config = SimpleNamespace(stash=pytest.Stash(), getoption=lambda name, default=None: lf if name == "lf" else default)
    config.stash[STATE_KEY] = state
    node = SimpleNamespace(stash=pytest.Stash(), callspec=SimpleNamespace(params={"node_pair": param}))
    node.stash[CHECK_KEY] = CheckInfo("inter_node", "pair_check", param.id, param.nodes, "node_pair", param)
    return SimpleNamespace(config=config, node=node)


def _fixture(measure: Recorder) -> Any:
    @wave("node_pair")
    def pair_check(request: Any, node_pair: NodePair) -> Measurement:
        return measure(node_pair)

    return pair_check


def test_wave_over_node_pair_batches_by_round_and_says_when_the_round_was_not_full() -> None:
    state = make_state({"pair_check": [PAIRS[2]]})
    measure = Recorder()
    got = _fixture(measure)(request=_request(state, PAIRS[2], lf=False), node_pair=FakeCluster().pair("n1", "n3", 1, 0))
    assert measure.calls == ["n1<->n3"]
    assert "measured in a round of 1 pair(s) at once where the full sweep runs 2" in str(got.detail)


def test_wave_over_node_pair_under_lf_measures_the_whole_round_as_the_first_run() -> None:
    state = make_state({"pair_check": [PAIRS[2]]})
    measure = Recorder()
    got = _fixture(measure)(request=_request(state, PAIRS[2], lf=True), node_pair=FakeCluster().pair("n1", "n3", 1, 0))
    assert sorted(measure.calls) == ["n1<->n3", "n4<->n2"]
    assert got.detail.startswith("n1<->n3 measured; --lf: measured inside its whole round (2 pairs at once")


PLUGIN = '''
"""No hardware: every node a MockTransport; gpudirect's probe a stand-in logging each pair."""

import pytest

from pytest_fabric.measurements import gpudirect as measured
from pytest_fabric.transport.mock import MockTransport
from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Measurement


@pytest.hookimpl(tryfirst=True)
def pytest_fabric_make_transport(node, config):
    # the run asks each node which file each tool is (tool identity): no tool is installed here
    return MockTransport(node.name, {r"(?m)^for t in ": "ld_preload\\t\\n"})


@pytest.fixture(autouse=True)
def _no_hardware(monkeypatch):
    monkeypatch.setattr(measured, "node_ports", lambda request, node: ([], []))
    monkeypatch.setattr(measured, "node_topology", lambda request, node: (None, None))
    monkeypatch.setattr(measured.affinity, "rails", lambda matrix: [])
    monkeypatch.setattr(measured, "_bus_ids", lambda request, node: {})

    def pair_gpudirect(pair, run, **kwargs):
        with open("pairs.log", "a") as log:
            log.write(pair.id + "\\n")
        gbps = 10 if "node03" in pair.id else 150
        return Measurement(value=parse_quantity(f"{gbps} Gb/s"), detail=f"worst GPU {gbps} Gb/s")

    monkeypatch.setattr(measured.gpudirect, "pair_gpudirect", pair_gpudirect)
'''


def test_gpudirect_under_lf_re_measures_its_failing_pairs_inside_their_whole_rounds(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(fakepairs=PLUGIN)
    inventory = pytester.path / "inventory.yaml"
    inventory.write_text("name: four\nnodes:\n" + "".join(f"  - {{name: node0{i}, host: 10.0.0.{i}}}\n" for i in range(1, 5)))
    profile = pytester.path / "profile.yaml"
    profile.write_text(textwrap.dedent("""\
        name: gpudirect-rounds
        inter_node:
          pairs: all
          gpudirect_bandwidth: {min: 100 Gb/s, repeat: 1, duration: 1 s}
        """))
    log = pytester.path / "pairs.log"

    def run(*args: str) -> dict[str, dict[str, Any]]:
        record = pytester.path / "record.json"
        result = pytester.runpytest_subprocess("--cluster", str(inventory), "--profile", str(profile), "-p", "fakepairs",
                                               "-k", "gpudirect_bandwidth", "--conformance-json", str(record), *args)
        assert record.exists(), result.stdout.str()[-3000:]
        checks = json.loads(record.read_text())["checks"]
        return {c["subject"]: c for c in checks if c["check"] == "gpudirect_bandwidth"}

    first = run()
    assert len(first) == 6 and {s for s, c in first.items() if c["outcome"] == "failed"} == {
        s for s in first if "node03" in s
    }, {s: c["outcome"] for s, c in first.items()}
    assert sorted(log.read_text().split()) == sorted(first)  # each pair once
    log.unlink()

    again = run("--lf")
    assert set(again) == {s for s in first if "node03" in s}  # only the failing pairs' tests ran
    # ... but each inside its whole round: the pairs --lf deselected were measured beside them
    assert sorted(log.read_text().split()) == sorted(first)
    for check in again.values():
        assert check["outcome"] == "failed", check
        assert "--lf: measured inside its whole round (2 pairs at once, as in the first run)" in check["message"], check
