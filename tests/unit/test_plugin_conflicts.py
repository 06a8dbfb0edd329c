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
