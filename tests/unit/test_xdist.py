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
