"""Batches: subjects measured together, once, when the first of their tests runs.

A round of disjoint node pairs is a batch; so is a wave of every node (or GPU, mount,
port, egress target) for a per-node check. Each subject keeps its own test and verdict:
the first test of a batch measures every member at once, the others read their result
(or the error their subject met) from the cache.

What shares a resource does not run at once: a member may name a resource (a shared
mount, the egress uplink, one node's GPUs) with a limit, and at most that many members
holding it run together; everything else runs in parallel up to the fan-out cap
(``--fabric-fanout``, like ``pdsh -f``). Each result says how it was measured.

A reading of the whole cluster that is not a batch of tests (every node's topology for
``gpu_rails``, the error counters before any traffic, every node's software stack) goes through
:func:`fan_out`, under the same cap. A measurement that is only meaningful with every member
running at once (all nodes writing to a shared mount together, every cross-leaf pair loading
the spine together) says so with the one policy :data:`ALL_AT_ONCE`: its cap is its member
count, never ``--fabric-fanout``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed, wait
from dataclasses import dataclass, replace
from typing import Any, Final, Generic, Literal, TypeVar

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.stopgate import stop_open_runs

__all__ = [
    "ALL_AT_ONCE",
    "DEFAULT_FANOUT",
    "BatchCache",
    "BatchProgress",
    "FanOut",
    "Member",
    "Share",
    "describe_concurrency",
    "fan_out",
    "members_at_once",
]

#: how many subjects one controller measures at once unless --fabric-fanout says otherwise: 512
#: connections cost the controller ~0.2 GB (benchmarks/bench_connection_cost.py, bench_512.py), and
#: a pair round is capped by it too (N nodes: N/2 pairs), so at 64 a round across 2 leaves x 256 nodes
#: ran 32 of its 256 pairs at once and its figures, which oversubscription reads, never loaded the spine
DEFAULT_FANOUT = 512

#: the cap of a fan-out whose members must all run at once for the measurement to mean anything
#: (aggregate_write: every node writes to the shared mount together; oversubscription: every
#: cross-leaf pair of a round loads the spine together): as many at once as there are members
ALL_AT_ONCE: Final = "all at once"
#: at most this many at once, or ALL_AT_ONCE
FanOut = int | Literal["all at once"]

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")


#: after Ctrl-C, how long a fan-out waits for its workers' clean-ups before the run goes on ending
UNWIND_S = 8.0


@contextlib.contextmanager
def _workers(size: int, name: str) -> Iterator[Callable[..., Future[Any]]]:
    """A pool of ``size`` threads, as its ``submit``; on Ctrl-C, every open run stops (stopgate.py).

    Only the main thread sees Ctrl-C; the workers wait on remote commands that would run to
    their own timeouts (a node NCCL run: 15 minutes), and would go on starting more (the next
    node's turn on a shared mount). Stopping the run refuses every new command and kills those
    running, so the workers end within seconds; they are waited for (their clean-ups: a
    storage check's files) at most :data:`UNWIND_S`, then the run goes on ending without them.
    """
    pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix=name)
    submitted: list[Future[Any]] = []

    def submit(fn: Callable[..., Any], *args: Any) -> Future[Any]:
        future = pool.submit(fn, *args)
        submitted.append(future)
        return future

    try:
        yield submit
    except KeyboardInterrupt:
        stop_open_runs()
        pool.shutdown(wait=False, cancel_futures=True)
        wait(submitted, timeout=UNWIND_S)
        raise
    pool.shutdown()


def fan_out(items: Sequence[T], fn: Callable[[T], R], fanout: FanOut) -> list[R]:
    """``fn`` of each item, in parallel, at most ``fanout`` at a time (:data:`ALL_AT_ONCE`: all of them).

    The results in the items' order. Every item runs to its end; then the first exception
    (in the items' order) is raised, so a caller that wants each item's error catches inside ``fn``.
    """
    if fanout != ALL_AT_ONCE and (not isinstance(fanout, int) or fanout < 1):
        raise ValueError(f"fan-out must be at least 1 or {ALL_AT_ONCE!r}, not {fanout!r}")
    if len(items) <= 1:
        return [fn(item) for item in items]
    size = len(items) if fanout == ALL_AT_ONCE else min(int(fanout), len(items))
    with _workers(size, "fabric-fanout") as submit:
        futures: list[Future[R]] = [submit(fn, item) for item in items]
        wait(futures)
    return [f.result() for f in futures]


def members_at_once(fanout: int, nodes: int = 1) -> int:
    """How many members of a batch run at once under ``--fabric-fanout`` ``fanout``, each keeping
    ``nodes`` nodes busy (2 a pair): the cap counts nodes, so a round runs ``fanout // 2`` pairs.
    The one rule the batches, the retest rounds and the plan apply."""
    return max(1, fanout // max(1, nodes))


@dataclass(frozen=True)
class Share:
    """A resource members of a batch share, and how many of them may use it at once."""

    resource: str
    limit: int


@dataclass(frozen=True)
class Member(Generic[S]):
    """One subject of a batch: its id, the handle a measurement takes, what it shares."""

    id: str
    subject: S
    share: Share | None = None
    #: nodes the member keeps busy: 2 for a pair. ``--fabric-fanout`` counts nodes everywhere, so a
    #: round runs fanout // 2 pairs at once, as many nodes as a wave
    nodes: int = 1


Outcome = Measurement | BaseException


@dataclass(frozen=True)
class BatchProgress:
    """Where a batch stands: reported when it starts (``done`` 0) and as each member ends."""

    check: str
    batch: object  # "wave", ("round", n), ...
    done: int
    total: int
    failed: int  # members that ended with an error, not a measurement
    elapsed_s: float
    skipped: int = 0  # members that skipped (a check the profile does not set, a subject it does not apply to)

    @property
    def finished(self) -> bool:
        return self.done >= self.total

    @property
    def remaining_s(self) -> float | None:
        """At the pace so far; None before the first member ends."""
        if self.done == 0:
            return None
        return self.elapsed_s / self.done * (self.total - self.done)


def describe_concurrency(size: int, share: Share | None, fanout: int, sharing: int | None = None,
                         nodes: int = 1) -> str:
    """How a member of a batch of ``size`` was measured, as the record and report say it.

    ``fanout``: the --fabric-fanout cap, in nodes; ``nodes``: the nodes a member keeps busy (2 a pair).
    ``sharing``: how many members of the batch use the member's shared resource (all by default).
    """
    if size <= 1:
        return "alone"
    sharing = size if sharing is None else sharing
    if share is not None and share.limit < sharing:
        at_once = "one at a time" if share.limit == 1 else f"{share.limit} at a time"
        if sharing == size:
            return f"{at_once} of {size} ({share.resource} is shared)"
        return f"{at_once} of the {sharing} sharing {share.resource}, in a batch of {size}"
    together = members_at_once(fanout, nodes)
    if together < size:
        per = f" nodes, {nodes} a member" if nodes > 1 else ""
        return f"{together} at a time of {size} (--fabric-fanout {fanout}{per})"
    return f"all {size} at once"


class BatchCache:
    """Results of measured batches, keyed by (check, batch) and then by member id."""

    def __init__(self, fanout: int = DEFAULT_FANOUT) -> None:
        if fanout < 1:
            raise ValueError(f"fan-out must be at least 1, not {fanout}")
        self.fanout = fanout
        #: called as a batch starts and as each of its members ends (a progress line); from the
        #: thread that measures the batch, which for a batch measured inside another's member
        #: is a worker thread
        self.on_progress: Callable[[BatchProgress], None] | None = None
        self._results: dict[tuple[str, object], dict[str, Outcome]] = {}
        self._lock = threading.Lock()  # guards the two dicts; each batch has a lock of its own
        self._batch_locks: dict[tuple[str, object], threading.Lock] = {}

    def fan_out(self, items: Sequence[T], fn: Callable[[T], R], *, all_at_once: bool = False) -> list[R]:
        """:func:`fan_out` under this run's cap (``all_at_once``: :data:`ALL_AT_ONCE`)."""
        return fan_out(items, fn, ALL_AT_ONCE if all_at_once else self.fanout)

    def lookup(self, check: str, batch: object, member_id: str) -> Outcome | None:
        """What ``member_id`` of a batch measured, if it has been: the outcome :meth:`measure` returns or raises."""
        with self._lock:
            results = self._results.get((check, batch))
            return None if results is None else results.get(member_id)

    def measure(
        self,
        check: str,
        batch: object,
        member: Member[S],
        members: Sequence[Member[S]],
        measure: Callable[[S], Measurement],
    ) -> Measurement:
        """``member``'s measurement, measuring every member of its batch the first time.

        ``members`` are the batch's subjects still selected; ``member`` is measured even if
        a selection left it out of that list. A member already measured is not measured again.
        """
        key = (check, batch)
        with self._lock:
            results = self._results.setdefault(key, {})
            batch_lock = self._batch_locks.setdefault(key, threading.Lock())
        # Only this batch waits while it is measured: a member may need another batch (an
        # aggregate needs its pair's rdma_bandwidth round), which must not wait on this one.
        with batch_lock:
            if member.id not in results:
                todo = [m for m in members if m.id not in results]
                if member.id not in {m.id for m in todo}:
                    todo.append(member)
                results.update(self._run(key, todo, measure))
            outcome = results[member.id]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def results(self, check: str, batch: object) -> dict[str, Outcome]:
        """What a batch has measured so far (a copy)."""
        with self._lock:
            batch_lock = self._batch_locks.get((check, batch))
        if batch_lock is None:
            return {}
        with batch_lock:
            return dict(self._results.get((check, batch), {}))

    def _run(
        self, key: tuple[str, object], members: Sequence[Member[S]], measure: Callable[[S], Measurement]
    ) -> dict[str, Outcome]:
        started = time.monotonic()
        ended: dict[str, Outcome] = {}

        def report() -> None:
            if self.on_progress is not None:
                skipped = sum(isinstance(o, pytest.skip.Exception) for o in ended.values())
                failed = sum(isinstance(o, BaseException) for o in ended.values()) - skipped
                self.on_progress(BatchProgress(key[0], key[1], len(ended), len(members), failed,
                                               time.monotonic() - started, skipped))

        limits = {m.share.resource: threading.Semaphore(m.share.limit) for m in members if m.share}
        sharing: dict[str, int] = {}
        for m in members:
            if m.share is not None:
                sharing[m.share.resource] = sharing.get(m.share.resource, 0) + 1
        size = len(members)
        at_once = members_at_once(self.fanout, max(m.nodes for m in members))

        def one(member: Member[S]) -> Outcome:
            gate = limits.get(member.share.resource) if member.share else None
            try:
                if gate is not None:
                    with gate:
                        measured = measure(member.subject)
                else:
                    measured = measure(member.subject)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - pytest's skip/fail outcomes too: each test re-raises its own
                return exc
            users = sharing.get(member.share.resource) if member.share else None
            how = describe_concurrency(size, member.share, self.fanout, users, max(m.nodes for m in members))
            return replace(measured, extra={**measured.extra, "measured_as": how})

        report()
        if size == 1:
            ended[members[0].id] = one(members[0])
            report()
            return ended
        # Members that wait on a shared resource hold a worker while they wait; order them so
        # the pool starts one member of every resource before a second of any.
        ordered = _interleave_by_resource(members)
        with _workers(min(at_once, size), "fabric-batch") as submit:
            futures = {submit(one, m): m for m in ordered}
            for future in as_completed(futures):
                ended[futures[future].id] = future.result()
                report()
        return {m.id: ended[m.id] for m in ordered}


def _interleave_by_resource(members: Sequence[Member[S]]) -> list[Member[S]]:
    """Unshared members first, then members of shared resources round-robin."""
    free = [m for m in members if m.share is None]
    queues: dict[str, list[Member[S]]] = {}
    for m in members:
        if m.share is not None:
            queues.setdefault(m.share.resource, []).append(m)
    interleaved: list[Member[S]] = []
    while any(queues.values()):
        for queue in queues.values():
            if queue:
                interleaved.append(queue.pop(0))
    return free + interleaved
