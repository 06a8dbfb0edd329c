"""--collect-only lists what would run and gives no verdict: nothing was meant to be measured."""

from __future__ import annotations

import subprocess

import pytest


def test_collect_only_prints_no_verdict(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.stdout.fnmatch_lines(["*test_tcp_throughput*", "*tests collected*"])
    assert "fabric conformance:" not in result.stdout.str()
    assert "NO VERDICT" not in result.stdout.str() and "ACCEPT" not in result.stdout.str()


def test_collect_only_writes_no_record(pytester: pytest.Pytester) -> None:
    # Before: the last run's record was replaced by one with no verdict and no checks.
    record = pytester.path / "record.json"
    record.write_text('{"the last run": "kept"}\n', encoding="utf-8")
    result = pytester.runpytest(
        "--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider", "--collect-only", "-q",
        f"--conformance-json={record}",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert record.read_text(encoding="utf-8") == '{"the last run": "kept"}\n'
    assert [p.name for p in pytester.path.iterdir() if p.name.startswith(".record.json")] == []


def test_collect_only_creates_no_record(pytester: pytest.Pytester) -> None:
    record = pytester.path / "out" / "record.json"
    result = pytester.runpytest(
        "--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider", "--collect-only", "-q",
        f"--conformance-json={record}",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert not record.exists()


def test_collect_only_with_sign_signs_nothing(pytester: pytest.Pytester) -> None:
    # Before the record was skipped, --sign then failed on the missing file with exit status 3.
    key = pytester.path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    record = pytester.path / "record.json"
    result = pytester.runpytest(
        "--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider", "--collect-only", "-q",
        f"--conformance-json={record}", f"--sign={key}",
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "NOT signed" not in result.stdout.str()
    assert sorted(p.name for p in pytester.path.iterdir()) == ["key", "key.pub"]
