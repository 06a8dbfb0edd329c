"""Rounds: a round is measured once, concurrently, and each pair gets its own result or error.

A round is a batch of the same front door as a wave (:func:`pytest_fabric.run.waves.measure_batched`).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodePair
from pytest_fabric.run.pairs import Pair
from pytest_fabric.run.state import FabricState
from pytest_fabric.run.waves import measure_batched


class FakeNode:
    def __init__(self, name: str) -> None:
        self.name = name


class FakeCluster:
    def pair(self, a: str, b: str, round: int = 0, slot: int = 0) -> NodePair:
        return NodePair(FakeNode(a), FakeNode(b), round, slot)  # type: ignore[arg-type]


def pair(a: str, b: str, round_no: int = 0, slot: int = 0) -> Pair:
    return Pair(round_no, slot, a, b)


class Rounds:
    """The rounds of ``pairs`` as a run's state holds them, measured through the front door."""

    def __init__(self, pairs: list[Pair] | None = None) -> None:
        self.pairs = pairs or []
        self.state: FabricState | None = None

    def measure(self, check: str, p: Pair, round_pairs: list[Pair], measure: Any) -> Measurement:
        if self.state is None:
            self.state = FabricState(None, None, self.pairs or round_pairs, "strict")  # type: ignore[arg-type]
            self.state.cluster = FakeCluster()  # type: ignore[assignment]
        return measure_batched(self.state, check, "node_pair", p, measure)


def test_round_is_measured_once_and_concurrently() -> None:
    calls: list[str] = []
    active = 0
    peak = 0
    lock = threading.Lock()

    def measure(p: NodePair) -> Measurement:
        nonlocal active, peak
        with lock:
            calls.append(p.id)
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        if p.a.name == "n3":
            raise RuntimeError("n3 unreachable")
        return Measurement(value=p.id)

    round_pairs = [pair("n0", "n1", 0, 0), pair("n2", "n4", 0, 1), pair("n3", "n5", 0, 2)]
    cache = Rounds()
    assert cache.measure("tcp", round_pairs[0], round_pairs, measure).value == "n0<->n1"
    assert cache.measure("tcp", round_pairs[1], round_pairs, measure).value == "n2<->n4"
    with pytest.raises(RuntimeError, match="n3 unreachable"):
        cache.measure("tcp", round_pairs[2], round_pairs, measure)
    assert sorted(calls) == sorted(p.id for p in round_pairs)  # each pair once
    assert peak == 3  # all at once


def test_checks_are_cached_separately() -> None:
    seen = []
    p = pair("a", "b")
    cache = Rounds()
    for check in ("tcp", "rdma", "tcp"):
        cache.measure(check, p, [p], lambda x, check=check: seen.append(check) or Measurement(value=1))
    assert seen == ["tcp", "rdma"]
