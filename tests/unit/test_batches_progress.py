"""BatchCache reports a batch's progress: as it starts and as each member ends."""

from __future__ import annotations

import time

import pytest

from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.batches import BatchCache, BatchProgress, Member


def _measure(name: str) -> Measurement:
    time.sleep(0.02 if name != "n3" else 0.1)
    if name == "n2":
        raise RuntimeError("n2: tool missing")
    return Measurement(value=parse_quantity("1 Gb/s"), detail=name)


def test_progress_from_start_to_end() -> None:
    seen: list[BatchProgress] = []
    cache = BatchCache(fanout=2)
    cache.on_progress = seen.append
    names = ["n1", "n2", "n3", "n4", "n5"]
    batch = [Member(n, n) for n in names]
    cache.measure("gpu_count", "wave", batch[0], batch, _measure)
    assert [p.done for p in seen] == [0, 1, 2, 3, 4, 5]
    assert all(p.total == 5 and p.check == "gpu_count" and p.batch == "wave" for p in seen)
    assert seen[0].remaining_s is None and not seen[0].finished
    assert seen[-1].finished and seen[-1].failed == 1 and seen[-1].remaining_s == 0
    assert [p.elapsed_s for p in seen] == sorted(p.elapsed_s for p in seen)
    # two at a time, five of 20-100 ms: the last report comes after most of that time
    assert seen[-1].elapsed_s >= 0.06
    # the others read the cache: no second batch, no more reports
    cache.measure("gpu_count", "wave", batch[3], batch, _measure)
    assert len(seen) == 6


def test_a_batch_of_one_reports_too_and_results_keep_member_order() -> None:
    seen: list[BatchProgress] = []
    cache = BatchCache()
    cache.on_progress = seen.append
    solo = Member("n1", "n1")
    cache.measure("mtu", ("round", 0), solo, [solo], _measure)
    assert [(p.done, p.total) for p in seen] == [(0, 1), (1, 1)]
    batch = [Member(n, n) for n in ["n3", "n1", "n4"]]  # n3 ends last
    cache.measure("tcp", ("round", 1), batch[0], batch, _measure)
    assert list(cache.results("tcp", ("round", 1))) == ["n3", "n1", "n4"]


def test_without_a_callback_nothing_is_reported() -> None:
    cache = BatchCache()
    batch = [Member(n, n) for n in ["n1", "n4"]]
    assert cache.measure("mtu", "wave", batch[1], batch, _measure).detail == "n4"


def test_a_skip_is_counted_as_a_skip_not_as_a_failure_to_measure() -> None:
    """A round of a check the profile does not set skips every pair: '64 skipped', not '64 not measured'."""
    seen: list[BatchProgress] = []
    cache = BatchCache()
    cache.on_progress = seen.append

    def unset(name: str) -> Measurement:
        if name == "n2":
            raise RuntimeError("n2: tool missing")
        pytest.skip("profile sim does not set inter_node.gpudirect_bandwidth")

    batch = [Member(n, n) for n in ["n1", "n2", "n3"]]
    with pytest.raises(pytest.skip.Exception):
        cache.measure("gpudirect_bandwidth", ("round", 0), batch[0], batch, unset)
    assert (seen[-1].skipped, seen[-1].failed) == (2, 1)
