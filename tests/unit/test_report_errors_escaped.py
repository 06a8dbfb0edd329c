"""Whatever a test's failure, skip or captured output quotes, pytest prints its control characters escaped."""

from __future__ import annotations

import pytest

HOSTILE = "\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07\\x00\\rACCEPT: fake"
RAW = ("\x1b", "\x07", "\x00", "\r")


@pytest.mark.parametrize("tb", ["auto", "long", "native"])
def test_a_failure_quoting_node_text_prints_it_escaped(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tb: str
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # the short summary's line whole
    pytester.makepyfile(f"""
        import logging, pytest
        def test_fails():
            print("{HOSTILE}")
            logging.getLogger("pytest_fabric.x").warning("{HOSTILE}")
            raise RuntimeError("{HOSTILE}")
        def test_skips():
            pytest.skip("{HOSTILE}")
    """)
    result = pytester.runpytest_subprocess("-p", "pytest_fabric.report.errors", "-rA", f"--tb={tb}",
                                           "--junitxml=junit.xml")
    out = result.stdout.str()
    for raw in RAW:
        assert raw not in out, (raw, out)
        assert raw not in (pytester.path / "junit.xml").read_text()
    assert out.count("\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07\\x00\\rACCEPT: fake") >= 4, out  # raise, print, log, skip
    result.stdout.fnmatch_lines(["FAILED test_*.py::test_fails - RuntimeError: \\x1b[[]2J*"])


def test_the_live_log_and_the_log_file_escape_controls(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(f"""
        import logging
        def test_logs():
            logging.getLogger("pytest_fabric.x").warning("node said %s", "{HOSTILE}")
    """)
    result = pytester.runpytest_subprocess("-p", "pytest_fabric.report.errors", "--log-cli-level=WARNING",
                                           "--log-file=run.log")
    for text in (result.stdout.str(), (pytester.path / "run.log").read_text()):
        assert "node said \\x1b[2J" in text, text
        for raw in RAW:
            assert raw not in text, (raw, text)


def test_a_failure_without_controls_keeps_pytests_own_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_fails():\n    assert 1 == 2\n")
    result = pytester.runpytest_subprocess("-p", "pytest_fabric.report.errors")
    result.stdout.fnmatch_lines([">       assert 1 == 2", "E       assert 1 == 2"])
