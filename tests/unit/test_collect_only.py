"""--collect-only lists what would run and gives no verdict: nothing was meant to be measured."""

from __future__ import annotations

import pytest


def test_collect_only_prints_no_verdict(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.stdout.fnmatch_lines(["*test_tcp_throughput*", "*tests collected*"])
    assert "fabric conformance:" not in result.stdout.str()
    assert "NO VERDICT" not in result.stdout.str() and "ACCEPT" not in result.stdout.str()
