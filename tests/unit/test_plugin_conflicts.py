"""Other plugins' options that would spoil a measurement are refused with a usage error.

Each test runs pytest with the plugin installed from PyPI (the ``test`` extra installs them):
pytest-rerunfailures and pytest-timeout.
"""

from __future__ import annotations

import pytest

LOCAL = ("--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider")


def _refused(result: pytest.RunResult) -> str:
    output = result.stdout.str() + "\n" + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert "Traceback" not in output, output
    return output


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("--reruns", "1"), id="reruns"),
        pytest.param(("--force-reruns", "2"), id="force-reruns"),
        pytest.param(("-o", "reruns=1"), id="ini"),
    ],
)
def test_reruns_are_refused(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    # Before: mtu failed against an impossible floor, was "rerun" in a millisecond on the figure
    # the first attempt had measured, and the run reported "1 rerun" as if it had measured twice.
    pytest.importorskip("pytest_rerunfailures")
    result = pytester.runpytest(*LOCAL, "-k", "mtu", "--expect", "inter_node.mtu.min=100000", *args)
    output = _refused(result)
    assert "pytest-rerunfailures" in output, output
    assert "would judge the figure already measured again" in output, output
    assert "retest" in output, output


def test_no_reruns_still_runs(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_rerunfailures")
    result = pytester.runpytest(*LOCAL, "-k", "mtu", "--reruns", "0")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        pytest.param(("--timeout", "30"), None, "--timeout 30", id="option"),
        pytest.param(("-o", "timeout=30"), None, "timeout = 30 (ini)", id="ini"),
        pytest.param((), "30", "PYTEST_TIMEOUT=30", id="env"),
    ],
)
def test_per_test_timeout_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], env: str | None, named: str
) -> None:
    # Before: the first test of a wave was timed with every node's measurement; on expiry the run
    # ended in a traceback with the node sent back for a timeout of the controller's own.
    pytest.importorskip("pytest_timeout")
    if env is not None:
        monkeypatch.setenv("PYTEST_TIMEOUT", env)
    result = pytester.runpytest(*LOCAL, "-k", "mtu", *args)
    output = _refused(result)
    assert f"{named}: pytest-timeout would time the first test of a wave" in output, output
    assert "--time-budget" in output and "connect_timeout" in output, output


def test_session_timeout_and_timeout_0_still_run(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_timeout")
    result = pytester.runpytest(*LOCAL, "-k", "mtu", "--timeout", "0", "--session-timeout", "600")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
