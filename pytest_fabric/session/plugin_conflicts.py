"""Other pytest plugins' options that would spoil a measurement: refused at load, with what to use.

A conformance test judges a figure its wave or round measured once for every subject at the same
time; the test itself only reads that figure. Plugins that re-run a test, split the tests across
processes or time a test from outside do not fit that shape:

- pytest-rerunfailures: a rerun judges the figure already measured again (in a millisecond) and
  reports "1 rerun" as if the cluster had been measured twice.
- pytest-xdist: workers each measure their own waves and rounds on the same nodes and links at
  once and depress each other's figures, however they are started (``-n``, ``-d --tx``, addopts).
- pytest-timeout: a test's timeout also times the wave its first subject starts, for every node;
  on expiry the whole process is dumped or killed from outside the measurement.

Each is refused with a :class:`pytest.UsageError` only with ``--cluster``; without it the plugins
work as usual. The checks read options and ini values after the plugins parsed them, so every way
of setting one (the command line, ``addopts``, ``PYTEST_ADDOPTS``, an environment variable the
plugin reads) is seen.
"""

from __future__ import annotations

import os

import pytest

__all__ = ["refuse_conflicting_plugins"]


def refuse_conflicting_plugins(config: pytest.Config) -> None:
    """Raise a usage error naming the option and what does its job, if one is in force."""
    for check in (_reruns, _xdist_workers, _per_test_timeout):
        message = check(config)
        if message:
            raise pytest.UsageError(message)


def _reruns(config: pytest.Config) -> str | None:
    if not config.pluginmanager.hasplugin("rerunfailures"):
        return None
    given = None
    for option, dest in (("--force-reruns", "force_reruns"), ("--reruns", "reruns")):
        value = config.getoption(dest, None)
        if value:
            given = f"{option} {value}"
            break
    if given is None:
        try:
            ini = int(config.getini("reruns") or 0)
        except (TypeError, ValueError):  # the plugin ignores a value that is not a number, so do we
            ini = 0
        if ini:
            given = f"reruns = {ini} (ini)"
    if given is None:
        return None
    return (
        f"{given}: pytest-rerunfailures would judge the figure already measured again (a wave or "
        "round measures once, the tests read that figure), not measure again. pytest-fabric retests "
        "on its own: an outlier check or attribution re-measures each suspect pair alone, three "
        "samples, before it judges. Run without --reruns; to measure again, run pytest again (--lf "
        "runs only what failed)"
    )


def _xdist_workers(config: pytest.Config) -> str | None:
    # xdist's own pytest_cmdline_main (before any pytest_configure) turns -n into --dist load and
    # --tx N*popen, so dist and tx together are every way it can start workers.
    dist = config.getoption("dist", None) or "no"
    tx = config.getoption("tx", None) or []
    if dist == "no" or not tx:
        return None
    workers = config.getoption("numprocesses", None)
    given = f"-n {workers}" if workers else f"--dist {dist} --tx {' '.join(tx)}"
    return (
        f"{given}: pytest-xdist workers would measure the same nodes and links at once and "
        "depress each other's figures; pytest-fabric already measures every node at once (waves) "
        "and every pair round concurrently. Run without -n, --dist or --tx (check addopts and "
        "PYTEST_ADDOPTS); use --fabric-fanout to cap nodes at once"
    )


def _per_test_timeout(config: pytest.Config) -> str | None:
    if not config.pluginmanager.hasplugin("timeout"):
        return None
    given = None
    value = config.getoption("timeout", None)
    if value:
        given = f"--timeout {value:g}"
    elif _positive(os.environ.get("PYTEST_TIMEOUT")):
        given = f"PYTEST_TIMEOUT={os.environ['PYTEST_TIMEOUT']}"
    elif _positive(config.getini("timeout")):
        given = f"timeout = {config.getini('timeout')} (ini)"
    if given is None:
        return None
    return (
        f"{given}: pytest-timeout would time the first test of a wave or round together with the "
        "measurement of every node in it, and stop the whole run from outside when it expires. "
        "pytest-fabric times what it runs itself: every command has a timeout enforced on the node, "
        "connections the inventory's connect_timeout, and --time-budget refuses a run whose plan "
        "is longer than you allow (pytest-timeout's --session-timeout still stops between tests)"
    )


def _positive(text: object) -> bool:
    try:
        return float(str(text)) > 0
    except ValueError:
        return False
