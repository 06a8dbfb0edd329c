"""fan_out: cluster-wide readings under the fan-out cap; all at once only where the policy says so."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_fabric.run.batches import ALL_AT_ONCE, BatchCache, fan_out


class Peak:
    def __init__(self, duration: float = 0.05) -> None:
        self.duration = duration
        self.running = 0
        self.peak = 0
        self.lock = threading.Lock()

    def __call__(self, item: int) -> int:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        time.sleep(self.duration)
        with self.lock:
            self.running -= 1
        return item * 10


def test_fan_out_respects_the_cap_and_keeps_the_order() -> None:
    measure = Peak()
    assert fan_out(list(range(9)), measure, 3) == [i * 10 for i in range(9)]
    assert measure.peak == 3


def test_the_runs_cap_is_the_batch_caches() -> None:
    measure = Peak()
    assert BatchCache(fanout=2).fan_out(list(range(6)), measure) == [i * 10 for i in range(6)]
    assert measure.peak == 2


def test_all_at_once_runs_every_member_together_whatever_the_cap() -> None:
    # long enough that all 12 overlap on a loaded machine
    measure = Peak(duration=0.3)
    assert BatchCache(fanout=2).fan_out(list(range(12)), measure, all_at_once=True) == [i * 10 for i in range(12)]
    assert measure.peak == 12
    measure = Peak(duration=0.3)
    fan_out(list(range(5)), measure, ALL_AT_ONCE)
    assert measure.peak == 5


def test_every_item_ends_then_the_first_error_in_order_is_raised() -> None:
    ended: list[int] = []

    def one(item: int) -> int:
        time.sleep(0.01 * (5 - item))
        ended.append(item)
        if item in (1, 3):
            raise RuntimeError(f"node{item} unreachable")
        return item

    with pytest.raises(RuntimeError, match="node1 unreachable"):
        fan_out(list(range(5)), one, 8)
    assert sorted(ended) == [0, 1, 2, 3, 4]


def test_nothing_or_one_item_runs_here() -> None:
    assert fan_out([], lambda i: i, 4) == []
    assert fan_out([7], lambda i: threading.current_thread() is threading.main_thread(), 4) == [True]


def test_a_cap_must_be_positive_or_all_at_once() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        fan_out([1, 2], lambda i: i, 0)
