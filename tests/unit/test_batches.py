"""BatchCache: a batch is measured once, in parallel, within its shared resources' limits."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.batches import BatchCache, Member, Share, describe_concurrency


class Recorder:
    """A measure function that records when each subject ran and how many ran at once."""

    def __init__(self, duration: float = 0.05, fail: set[str] = frozenset()) -> None:  # type: ignore[assignment]
        self.duration = duration
        self.fail = fail
        self.calls: list[str] = []
        self.running: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, subject: tuple[str, str]) -> Measurement:
        name, resource = subject
        with self.lock:
            self.calls.append(name)
            self.running[resource] = self.running.get(resource, 0) + 1
            self.peak[resource] = max(self.peak.get(resource, 0), self.running[resource])
        time.sleep(self.duration)
        with self.lock:
            self.running[resource] -= 1
        if name in self.fail:
            raise RuntimeError(f"{name}: tool missing")
        return Measurement(value=parse_quantity("1 Gb/s"), detail=name)


def members(names: list[str], share: Share | None = None, resource: str = "-") -> list[Member[tuple[str, str]]]:
    return [Member(n, (n, share.resource if share else resource), share) for n in names]


def test_first_member_measures_the_whole_batch_once() -> None:
    cache, measure = BatchCache(), Recorder()
    batch = members([f"n{i}" for i in range(8)])
    started = time.monotonic()
    first = cache.measure("gpu_count", "wave", batch[0], batch, measure)
    elapsed = time.monotonic() - started
    assert sorted(measure.calls) == sorted(m.id for m in batch)
    assert elapsed < 8 * measure.duration / 2  # in parallel, not one after another
    assert first.extra["measured_as"] == "all 8 at once"
    for member in batch[1:]:
        assert cache.measure("gpu_count", "wave", member, batch, measure).detail == member.id
    assert len(measure.calls) == 8  # the others read the cache


def test_each_member_gets_its_own_error() -> None:
    cache, measure = BatchCache(), Recorder(fail={"n2"})
    batch = members(["n1", "n2", "n3"])
    assert cache.measure("c", "wave", batch[0], batch, measure).detail == "n1"
    with pytest.raises(RuntimeError, match="n2: tool missing"):
        cache.measure("c", "wave", batch[1], batch, measure)
    assert cache.measure("c", "wave", batch[2], batch, measure).detail == "n3"


def test_pytest_outcomes_stay_with_their_member() -> None:
    cache = BatchCache()

    def measure(subject: tuple[str, str]) -> Measurement:
        if subject[0] == "n1":
            pytest.skip("n1 is not an http(s) URL")
        return Measurement(value=1)

    batch = members(["n1", "n2"])
    assert cache.measure("c", "wave", batch[1], batch, measure).value == 1
    with pytest.raises(pytest.skip.Exception, match="not an http"):
        cache.measure("c", "wave", batch[0], batch, measure)


def test_a_shared_resource_limits_concurrency_and_others_run_beside_it() -> None:
    # long enough that all three "local" members overlap on a loaded machine (0.05 s did not, once)
    cache, measure = BatchCache(), Recorder(duration=0.3)
    uplink = Share("the egress uplink", 1)
    batch = members(["a", "b", "c"], uplink) + members(["x", "y", "z"], resource="local")
    result = cache.measure("download", "wave", batch[0], batch, measure)
    assert measure.peak["the egress uplink"] == 1
    assert measure.peak["local"] == 3
    assert result.extra["measured_as"] == "one at a time of the 3 sharing the egress uplink, in a batch of 6"


def test_fanout_caps_members_at_once() -> None:
    cache, measure = BatchCache(fanout=2), Recorder()
    batch = members([f"n{i}" for i in range(6)], resource="r")
    result = cache.measure("c", "wave", batch[0], batch, measure)
    assert measure.peak["r"] == 2
    assert result.extra["measured_as"] == "2 at a time of 6 (--fabric-fanout 2)"


def test_a_deselected_member_is_still_measured_when_its_test_runs() -> None:
    cache, measure = BatchCache(), Recorder()
    batch = members(["n1", "n2"])
    extra = members(["n3"])[0]
    assert cache.measure("c", "wave", extra, batch, measure).detail == "n3"
    assert sorted(measure.calls) == ["n1", "n2", "n3"]


def test_describe_concurrency() -> None:
    assert describe_concurrency(1, None, 64) == "alone"
    assert describe_concurrency(4, Share("/mnt/lustre", 2), 64) == "2 at a time of 4 (/mnt/lustre is shared)"
    assert describe_concurrency(4, Share("/mnt/lustre", 8), 64) == "all 4 at once"
    assert describe_concurrency(16, Share("node01's GPUs", 1), 64, sharing=2) == (
        "one at a time of the 2 sharing node01's GPUs, in a batch of 16"
    )


def test_fanout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        BatchCache(fanout=0)


def test_a_member_may_need_another_batch() -> None:
    """An aggregate measures its pair's own round first: batches nest without waiting on each other."""
    cache = BatchCache()
    inner = members(["p1", "p2"])

    def outer_measure(subject: tuple[str, str]) -> Measurement:
        first = cache.measure("rdma_bandwidth", ("round", 0), inner[0], inner, Recorder(duration=0.01))
        return Measurement(value=1, detail=f"{subject[0]} after {first.detail}")

    outer = members(["p1", "p2"])
    got: list[Measurement] = []
    runner = threading.Thread(
        target=lambda: got.append(cache.measure("aggregate", ("round", 0), outer[0], outer, outer_measure)), daemon=True
    )
    runner.start()
    runner.join(10)
    assert not runner.is_alive(), "nested batches deadlocked"
    assert got[0].detail == "p1 after p1"


def test_the_fanout_counts_nodes_a_round_of_pairs_runs_half_as_many_at_once() -> None:
    # --fabric-fanout counted pairs in rounds but nodes in waves: 64 meant 128 nodes busy in a round.
    import threading as _threading
    import time as _time

    from pytest_fabric.judge.verdict import Measurement as _Measurement
    from pytest_fabric.run.batches import BatchCache, Member

    busy, peak, lock = 0, 0, _threading.Lock()

    def measure(_: object) -> _Measurement:
        nonlocal busy, peak
        with lock:
            busy += 1
            peak = max(peak, busy)
        _time.sleep(0.05)
        with lock:
            busy -= 1
        return _Measurement(value=1)

    cache = BatchCache(fanout=4)
    pairs = [Member(f"p{i}", i, nodes=2) for i in range(8)]
    result = cache.measure("tcp_throughput", ("round", 0), pairs[0], pairs, measure)
    assert peak == 2
    assert result.extra["measured_as"] == "2 at a time of 8 (--fabric-fanout 4 nodes, 2 a member)"
