"""One launch for many nodes: identical commands that nodes of a wave run at once share one launch.

A wave measures every node with the same fixture body, one thread per node, so each node
asks for the same command at about the same time.  Over SSH that is K sessions, which is what
SSH does.  A scheduler can do better: Slurm starts one step over K nodes
(``srun -N K -w NODESET``) for the price of one.  The transport does not know what a wave is,
or what the command means; it only sees that several of its nodes asked for the same command
line, with the same timeout, while they were declared to run together.

:class:`Gathering` holds the calls of the nodes of one wave until every node still in the
wave has asked for its next command (or ``window_s`` has passed since the first asked: a node
whose fixture failed early, or that waits for a fan-out slot, asks for nothing), then hands
each group of identical calls to ``run_many`` once.  Outside a gathering nothing waits.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from pytest_fabric.transport.base import CommandResult, TransportError

__all__ = ["Coalescing", "Gathering", "RunMany", "StepOutcome", "Together"]

StepOutcome = CommandResult | TransportError
#: (nodes, command, timeout, check) -> each node's result or error
RunMany = Callable[[list[str], str, float, bool], dict[str, StepOutcome]]

#: how long the first call of a round waits for the others of its wave
DEFAULT_WINDOW_S = 0.3


@runtime_checkable
class Coalescing(Protocol):
    """A transport whose node can share one launch with other nodes (a Slurm node)."""

    node: str
    #: what launches for this node; nodes with the same launcher can share a launch
    launcher: object

    def gathering(self, nodes: Iterable[str]) -> contextlib.AbstractContextManager[Gathering]:
        """A gathering over ``nodes`` (those this transport's launcher reaches) for a block."""
        ...


@dataclass
class _Call:
    node: str
    key: tuple[str, float, bool]
    outcome: StepOutcome | None = None
    done: bool = False


@dataclass
class _Round:
    calls: dict[str, _Call] = field(default_factory=dict)
    first_s: float = 0.0
    taken: bool = False


class Gathering:
    """The nodes of one wave; their identical calls run through ``run_many`` once per round."""

    def __init__(self, nodes: Iterable[str], run_many: RunMany, *, window_s: float = DEFAULT_WINDOW_S) -> None:
        self._expected = set(nodes)
        self._run_many = run_many
        self._window_s = window_s
        self._cond = threading.Condition()
        self._round = _Round()
        #: how many launches each round made, for tests and the record: [(nodes, launches)]
        self.launches: list[tuple[int, int]] = []

    @property
    def nodes(self) -> frozenset[str]:
        with self._cond:
            return frozenset(self._expected)

    def __contains__(self, node: object) -> bool:
        with self._cond:
            return node in self._expected

    def leave(self, node: str) -> None:
        """``node`` asks for nothing more in this gathering (its member finished or failed)."""
        with self._cond:
            self._expected.discard(node)
            self._cond.notify_all()

    @contextlib.contextmanager
    def member(self, node: str) -> Iterator[None]:
        """A block in which ``node`` may ask; it leaves the gathering when the block ends."""
        try:
            yield
        finally:
            self.leave(node)

    def run(self, node: str, command: str, timeout: float, check: bool) -> StepOutcome:
        """``node``'s outcome of ``command``, run together with the same call of the other nodes."""
        with self._cond:
            # A second command of the node at once (the member runs threads of its own), or a
            # node outside the wave: one launch of its own, as without a gathering.
            alone = node in self._round.calls or node not in self._expected
        if alone:
            return self._run_many([node], command, timeout, check)[node]
        with self._cond:
            current = self._round
            if not current.calls:
                current.first_s = time.monotonic()
            call = _Call(node, (command, timeout, check))
            current.calls[node] = call
            self._cond.notify_all()
            while not current.taken:
                waiting = set(current.calls)
                left = self._window_s - (time.monotonic() - current.first_s)
                if self._expected <= waiting or left <= 0:
                    current.taken = True  # this thread launches the round
                    self._round = _Round()
                    break
                self._cond.wait(left)
            else:
                while not call.done:
                    self._cond.wait()
                assert call.outcome is not None
                return call.outcome
        self._launch(current)
        assert call.outcome is not None
        return call.outcome

    def _launch(self, current: _Round) -> None:
        groups: dict[tuple[str, float, bool], list[str]] = {}
        for call in current.calls.values():
            groups.setdefault(call.key, []).append(call.node)

        def one(key: tuple[str, float, bool]) -> dict[str, StepOutcome]:
            command, timeout, check = key
            return self._run_many(groups[key], command, timeout, check)

        results: dict[str, StepOutcome] = {}
        try:
            if len(groups) == 1:
                results.update(one(next(iter(groups))))
            else:
                with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="pf-gather") as pool:
                    for part in pool.map(one, groups):
                        results.update(part)
        finally:
            with self._cond:
                self.launches.append((len(current.calls), len(groups)))
                for call in current.calls.values():
                    call.outcome = results.get(call.node)
                    if call.outcome is None:  # the launch itself raised (Ctrl-C): the others must not hang
                        call.outcome = TransportError(call.node, "the shared launch of this command did not finish",
                                                      command=call.key[0])
                    call.done = True
                self._cond.notify_all()


class Together:
    """The gatherings of one wave (one per launcher); nodes outside all of them run as usual."""

    def __init__(self, groups: Iterable[Gathering] = ()) -> None:
        self.groups = list(groups)

    @contextlib.contextmanager
    def member(self, nodes: Iterable[str]) -> Iterator[None]:
        """A block in which one member of the wave, on ``nodes``, runs its commands."""
        names = list(nodes)
        try:
            yield
        finally:
            for group in self.groups:
                for node in names:
                    group.leave(node)
