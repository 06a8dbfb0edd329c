"""One stop for every command a run sends to a node: open while the run measures, shut once it stops.

Ctrl-C, SIGTERM or SIGHUP (stopping.py) raise ``KeyboardInterrupt`` in the main thread only. The
work of a wave, a round, a retest or a fan-out runs in worker threads, which never see it: left
alone they go on starting commands (the next node's turn on a shared mount, the read after a
layout), each running to its own timeout, and the run cannot end. So every command a probe runs
passes :meth:`StopGate.passing` (``NodeHandle.run`` and ``start`` do it), and once the run stops:

- nothing new starts on any node: a command asked for is refused at once with :class:`RunStopped`,
  whichever thread, phase or fan-out asks (``cleanup=True`` commands excepted: removing what the run
  wrote still passes, with at most :data:`CLEANUP_TIMEOUT_S`, so the run leaves nothing behind);
- :meth:`StopGate.stop` kills what runs on the nodes, and kills again while a command that passed
  the gate before it shut is still running (one may have been on its way to a node as the first
  kill ran), for at most :data:`DRAIN_S`; then it waits up to :data:`CLEANUP_WAIT_S` for clean-ups.

A fan-out that meets Ctrl-C stops every run open in this process (:func:`stop_open_runs`): a signal
is the process's, and the thread that meets it need not know which cluster its workers reach.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterator

from pytest_fabric.transport.base import TransportError

__all__ = ["CLEANUP_TIMEOUT_S", "DRAIN_S", "RunStopped", "StopGate", "stop_open_runs"]

#: at most this long killing commands that passed the gate before it shut
DRAIN_S = 6.0
#: a clean-up (rm of the run's files) started once the run stops gets at most this long on the node
CLEANUP_TIMEOUT_S = 5.0
#: how long a stop waits for clean-ups already running to end
CLEANUP_WAIT_S = 6.0
#: between two kills while a command is still running (a killed command takes a moment to return:
#: under Slurm its step is cancelled and its srun ended)
_KILL_AGAIN_S = 2.0


class RunStopped(TransportError):
    """A command not started because the run is stopping (Ctrl-C, SIGTERM): nothing new runs on a node."""

    def __init__(self, node: str, command: str) -> None:
        super().__init__(node, "not started: the run was interrupted, so nothing new runs on a node", command=command)


class StopGate:
    """What a run's commands pass while it measures; :meth:`stop` shuts it and ends what runs."""

    def __init__(self, kill: Callable[[], None]) -> None:
        #: the run is stopping: a plain attribute, read without a lock
        self.stopping = False
        self._kill = kill  # kills every foreground command on every node; never raises
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._running = {False: 0, True: 0}  # commands on the nodes now: measuring (False), clean-up (True)
        #: set by the first stop: every later one (the session's end after a fan-out's) keeps to the same bounds
        self._drain_until: float | None = None
        _OPEN.add(self)

    @contextlib.contextmanager
    def passing(self, node: str, command: str, *, cleanup: bool = False) -> Iterator[None]:
        """Run a command's block through the gate: refused with :class:`RunStopped` once the run stops."""
        # Counted before the check: stop() then either refuses this command or sees it running and kills it.
        with self._lock:
            self._running[cleanup] += 1
        try:
            if self.stopping and not cleanup:
                raise RunStopped(node, command)
            yield
        finally:
            with self._lock:
                self._running[cleanup] -= 1
                self._changed.notify_all()

    def timeout(self, timeout: float, *, cleanup: bool = False) -> float:
        """A command's timeout: a clean-up started while the run stops gets at most :data:`CLEANUP_TIMEOUT_S`."""
        return min(timeout, CLEANUP_TIMEOUT_S) if cleanup and self.stopping else timeout

    def stop(self) -> None:
        """Shut the gate and end what runs: kill, again while a measuring command runs, then wait for clean-ups.

        Bounded, from the first call on, by :data:`DRAIN_S` + :data:`CLEANUP_WAIT_S` (plus one kill's
        own time); a later call kills once more only if a command still runs. Never raises.
        """
        self.stopping = True
        first = self._drain_until is None
        if self._drain_until is None:
            self._drain_until = time.monotonic() + DRAIN_S
        drain_until = self._drain_until
        while True:
            with self._lock:
                busy = self._running[False] > 0
            if first or busy:  # the first stop kills whatever runs; a later one only what still does
                self._kill()
            first = False
            with self._lock:
                if self._changed.wait_for(lambda: self._running[False] == 0,
                                          timeout=max(0.0, min(_KILL_AGAIN_S, drain_until - time.monotonic()))):
                    break
            if time.monotonic() >= drain_until:
                break
        with self._lock:
            self._changed.wait_for(lambda: self._running[True] == 0,
                                   timeout=max(0.0, drain_until + CLEANUP_WAIT_S - time.monotonic()))

    def close(self) -> None:
        """The run is over: no longer one of :func:`stop_open_runs`'."""
        _OPEN.discard(self)


_OPEN: weakref.WeakSet[StopGate] = weakref.WeakSet()


def stop_open_runs() -> None:
    """Stop every run open in this process (a fan-out met Ctrl-C): see :meth:`StopGate.stop`."""
    for gate in list(_OPEN):
        gate.stop()
