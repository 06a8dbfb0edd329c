"""pytest-xdist with a cluster is refused: workers would measure the same nodes at once."""

from __future__ import annotations

import pytest


def test_numprocesses_with_a_cluster_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*-n 2: pytest-xdist workers would measure the same nodes*Run without -n*"])
    assert "Traceback" not in result.stderr.str()


def test_n_0_still_runs(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", "-n", "0", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("-d", "--tx", "2*popen"), id="d-tx"),
        pytest.param(("--dist", "loadgroup", "--tx", "popen", "--tx", "popen"), id="dist-tx"),
        pytest.param(("--numprocesses", "2"), id="numprocesses"),
        pytest.param(("-n", "auto"), id="auto"),
    ],
)
def test_every_way_of_starting_workers_is_refused(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    # Before: -d --tx 2*popen got past the -n check; two workers measured at once and the run said ACCEPT.
    pytest.importorskip("xdist")
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["*pytest-xdist workers would measure the same nodes*Run without -n, --dist or --tx*"])
    assert "Traceback" not in result.stderr.str()


def test_workers_from_addopts_are_refused(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xdist")
    pytester.makeini("[pytest]\naddopts = -d --tx 2*popen\n")
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "2")
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(["*--dist load --tx 2[*]popen: pytest-xdist workers would measure*"])
