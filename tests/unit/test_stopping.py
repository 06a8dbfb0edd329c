"""SIGTERM and SIGHUP stop a ``--cluster`` run as Ctrl-C does (pytest_fabric/session/stopping.py), on this machine.

The runs are subprocesses that signal themselves; the simulated cluster's test of a real round
(remote commands killed, the Slurm allocation cancelled) is tests/integration/test_sigterm.py.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator

import pytest

from pytest_fabric.session.stopping import Stopper

STOPPED_BY_ITSELF = """
import os, signal, time
from pathlib import Path

def test_stopped():
    try:
        os.kill(os.getpid(), signal.{signal})
        time.sleep(30)
    finally:
        os.kill(os.getpid(), signal.{signal})  # again, while the first unwinds: no second interrupt
        time.sleep(0.2)
        Path("unwound").write_text("yes")

def test_never_runs():
    pass
"""

SIGNALLED_WHILE_FINISHING = """
import os, signal, time
from pathlib import Path

def pytest_sessionfinish(session):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.2)
    Path("finished").write_text("yes")
"""


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, float]:
    pytester.makefile(".yaml", inv="name: one\nnodes:\n  - name: n1\n    host: localhost\n")
    pytester.makefile(".yaml", prof="name: tiny\ninter_node:\n  mtu: {min: 1000}\n")
    started = time.monotonic()
    result = pytester.runpytest_subprocess("--cluster", "inv.yaml", "--profile", "prof.yaml",
                                           "--conformance-json", "record.json", *args, timeout=60)
    return result, time.monotonic() - started


@pytest.mark.parametrize("name", ["SIGTERM", pytest.param("SIGHUP", marks=pytest.mark.skipif(
    signal.getsignal(signal.SIGHUP) is signal.SIG_IGN, reason="SIGHUP is ignored here (nohup): so in the run too"))])
def test_a_signal_interrupts_the_run_and_a_second_does_not_cut_the_unwinding_short(
    pytester: pytest.Pytester, name: str
) -> None:
    pytester.makepyfile(test_stop=STOPPED_BY_ITSELF.replace("{signal}", name))
    result, took = _run(pytester, "test_stop.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert took < 25  # not the test's 30 s sleep
    result.stdout.fnmatch_lines([f"*KeyboardInterrupt: {name}: the run stops as on Ctrl-C*"])
    assert "the run is already ending" in result.stderr.str()
    assert (pytester.path / "unwound").read_text() == "yes"
    run = json.loads((pytester.path / "record.json").read_text())["run"]
    assert run["status"] == "interrupted"
    assert "test_never_runs" not in result.stdout.str()


def test_a_signal_while_the_session_finishes_does_not_interrupt_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SIGNALLED_WHILE_FINISHING)
    pytester.makepyfile(test_fine="def test_fine():\n    pass\n")
    result, _ = _run(pytester, "test_fine.py")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)
    assert (pytester.path / "finished").read_text() == "yes"
    assert "the run is already ending" in result.stderr.str()
    assert json.loads((pytester.path / "record.json").read_text())["run"]["status"] == "complete"


def test_without_cluster_sigterm_is_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="import signal\n\ndef test_plain():\n"
                                   "    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL\n")
    result = pytester.runpytest_subprocess("test_plain.py")
    result.assert_outcomes(passed=1)


@pytest.fixture
def default_handlers() -> Iterator[None]:
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    for s in saved:
        signal.signal(s, signal.SIG_DFL)
    try:
        yield
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def test_an_ignored_sighup_stays_ignored_and_the_handlers_come_back(default_handlers: None) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # nohup
    stopper = Stopper()
    stopper.install()
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) == stopper._handle
    stopper.restore()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
