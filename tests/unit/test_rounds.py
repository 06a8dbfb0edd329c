"""RoundCache: a round is measured once, concurrently, and each pair gets its own result or error."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_fabric.cluster import NodePair
from pytest_fabric.probes.rounds import RoundCache
from pytest_fabric.verdict import Measurement


class FakeNode:
    def __init__(self, name: str) -> None:
        self.name = name


def pair(a: str, b: str, round_no: int = 0, slot: int = 0) -> NodePair:
    return NodePair(FakeNode(a), FakeNode(b), round_no, slot)  # type: ignore[arg-type]


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
    cache = RoundCache()
    assert cache.measure("tcp", round_pairs[0], round_pairs, measure).value == "n0<->n1"
    assert cache.measure("tcp", round_pairs[1], round_pairs, measure).value == "n2<->n4"
    with pytest.raises(RuntimeError, match="n3 unreachable"):
        cache.measure("tcp", round_pairs[2], round_pairs, measure)
    assert sorted(calls) == sorted(p.id for p in round_pairs)  # each pair once
    assert peak == 3  # all at once


def test_checks_are_cached_separately() -> None:
    seen = []
    p = pair("a", "b")
    cache = RoundCache()
    for check in ("tcp", "rdma", "tcp"):
        cache.measure(check, p, [p], lambda x, check=check: seen.append(check) or Measurement(value=1))
    assert seen == ["tcp", "rdma"]
