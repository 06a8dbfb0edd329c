"""Stopped is stopped, whatever stopped it: SIGTERM and SIGHUP end a run as Ctrl-C does.

``scancel``, a Slurm time limit, a CI job cancelled, ``kill`` or a closed terminal signal the
process; by default it would die on the spot: the JSON record left ``running``, no HTML report,
commands still running on the nodes until their own timeouts, and an allocation the run asked for
held until Slurm's time limit.  While pytest-fabric measures a cluster (``--cluster``), the first
SIGTERM or SIGHUP raises ``KeyboardInterrupt`` in the main thread instead, so pytest's own
interrupt path runs, the same as Ctrl-C: a wave, round or fan-out in worker threads has its remote
commands killed and nothing new started on a node (:mod:`~pytest_fabric.run.stopgate`), the session finishes as
interrupted (every node's foreground commands killed, background servers stopped), every report
is written saying ``interrupted``, and at unconfigure the Slurm allocation is cancelled.

Once the run is stopping (a first signal, a Ctrl-C) or finishing on its own, a further signal
does not interrupt that: it is noted on stderr and the run goes on ending (SIGKILL still ends it
at once).  A signal whose handler is not the default when the run starts is left alone:
``nohup``'s ignored SIGHUP stays ignored, a wrapper's own handler stays its.  The handlers are
installed from the main thread only, and the previous ones are back when pytest unconfigures,
after the allocation is released.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Generator
from types import FrameType
from typing import Any

import pytest

from pytest_fabric.run.state import get_state

__all__ = ["STOPPER_KEY", "Stopper"]

#: the signals that stop a run as Ctrl-C does (SIGHUP: where the platform has it)
SIGNALS = ("SIGTERM", "SIGHUP")


class Stopper:
    """This run's handlers for :data:`SIGNALS`, and the plugin that says when they stop interrupting."""

    def __init__(self) -> None:
        self.previous: dict[int, Any] = {}  # what each handler was before ours
        #: a signal no longer interrupts: the run is already stopping or finishing
        self.stopping = False
        #: the terminal's stderr: during a test fd 2 is pytest's capture, which an interrupted test never shows
        self._stderr: int | None = None

    def install(self) -> None:
        """Take the signals whose handler is the default (call while pytest captures nothing: configure)."""
        try:
            self._stderr = os.dup(2)
        except OSError:
            self._stderr = None
        for name in SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None or signal.getsignal(signum) is not signal.SIG_DFL:
                continue
            self.previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, previous in self.previous.items():
            if signal.getsignal(signum) == self._handle:  # not if someone replaced ours since
                signal.signal(signum, previous)
        self.previous.clear()
        if self._stderr is not None:
            os.close(self._stderr)
            self._stderr = None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.stopping:
            self._note(f"\npytest-fabric: {name}: the run is already ending: it stops what it runs on the "
                        "nodes, writes its reports and cancels an allocation it asked for (SIGKILL would "
                        "leave those undone)\n")
            return
        self.stopping = True
        raise KeyboardInterrupt(f"{name}: the run stops as on Ctrl-C")

    def _note(self, text: str) -> None:
        # os.write, not print: the main thread may be inside a write to sys.stderr right now.
        try:
            os.write(2 if self._stderr is None else self._stderr, text.encode())
        except OSError:
            pass

    # -- as a plugin: when a signal stops interrupting --------------------------------

    def pytest_keyboard_interrupt(self) -> None:
        self.stopping = True  # Ctrl-C: a SIGTERM while it unwinds does not interrupt the unwinding

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self) -> Generator[None, object, object]:
        self.stopping = True  # ending on its own: a signal now does not cut the reports short
        return (yield)


STOPPER_KEY = pytest.StashKey[Stopper]()
_PLUGIN_NAME = "fabric-stopping"


@pytest.hookimpl(trylast=True)  # after plugin.py's configure loaded the inventory and profile
def pytest_configure(config: pytest.Config) -> None:
    if get_state(config) is None or threading.current_thread() is not threading.main_thread():
        return
    stopper = Stopper()
    config.stash[STOPPER_KEY] = stopper
    config.pluginmanager.register(stopper, _PLUGIN_NAME)
    # A cleanup, not pytest_unconfigure: cleanups run last-registered first, so the Slurm
    # allocation's release (registered later, on first use) runs while the handlers still hold.
    config.add_cleanup(stopper.restore)
    stopper.install()
