"""The plan line after collection and the progress line of waves and rounds."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_fabric.report.progress import ProgressLine, describe
from pytest_fabric.run.batches import BatchProgress


def _p(done: int, total: int = 64, batch: object = "wave", failed: int = 0, elapsed: float = 10.0) -> BatchProgress:
    return BatchProgress("gpu_model", batch, done, total, failed, elapsed)


def test_describe_a_wave_and_a_round() -> None:
    assert describe(_p(16)) == "fabric: gpu_model wave: 16/64 measured, 10 s, ~30 s left"
    assert describe(_p(0), expected_s=45) == "fabric: gpu_model wave: 0/64 measured, 10 s, ~35 s left"
    assert describe(_p(0)) == "fabric: gpu_model wave: 0/64 measured, 10 s"
    assert describe(_p(64, failed=2, elapsed=200)) == "fabric: gpu_model wave: 64 measured in 3.3 min (2 not measured)"
    # members that skipped (a check the profile does not set) were never to be measured: said apart
    skipped = dataclasses.replace(_p(64, failed=1, elapsed=2), skipped=63)
    assert describe(skipped) == "fabric: gpu_model wave: 64 measured in 2 s (1 not measured, 63 skipped)"
    assert describe(_p(3, 32, ("round", 2)), rounds=63) == "fabric: gpu_model round 3/63: 3/32 pairs, 10 s, ~1.6 min left"


class Terminal:
    """Records what a TerminalReporter would write, with its line bookkeeping (currentfspath)."""

    def __init__(self, isatty: bool, showfspath: bool = True) -> None:
        self.isatty = isatty
        self.showfspath = showfspath
        self.startpath = Path("/suite")
        self.currentfspath: object = Path("/suite/storage/test_sequential.py")
        self.out = "storage/test_sequential.py "

    def ensure_newline(self) -> None:
        if self.currentfspath:
            self.out += "\n"
            self.currentfspath = None

    def write(self, text: str, flush: bool = False) -> None:
        self.out += text

    def rewrite(self, line: str, erase: bool = False) -> None:
        self.out += "\r" + line


def test_without_a_terminal_a_line_per_wave() -> None:
    term = Terminal(isatty=False)
    line = ProgressLine(term)
    for done in range(65):
        line.update(_p(done, elapsed=done / 8))
    assert term.out == (
        "storage/test_sequential.py \n"
        "fabric: gpu_model wave: 64 measured in 8 s\n"
        "storage/test_sequential.py "  # pytest's dots go on after the file's name again
    )
    assert term.currentfspath == Path("/suite/storage/test_sequential.py")


def test_on_a_terminal_the_line_is_rewritten_in_place() -> None:
    term = Terminal(isatty=True)
    line = ProgressLine(term, interval_s=0)
    try:
        for done in (0, 1, 2, 3):
            line.update(_p(done, total=3, elapsed=done))
    finally:
        line.close()
    live, final = term.out.split("\n", 1)[1].rsplit("\n", 1)[0], term.out
    assert live.split("\r")[1:] == [
        "fabric: gpu_model wave: 0/3 measured, 0 s",
        "fabric: gpu_model wave: 1/3 measured, 1 s, ~2 s left",
        "fabric: gpu_model wave: 2/3 measured, 2 s, ~1 s left",
        "fabric: gpu_model wave: 3 measured in 3 s",
    ]
    assert "\n" not in live  # one line, rewritten: not a line per test
    assert final.endswith("\nstorage/test_sequential.py ")


def test_a_batch_of_one_writes_nothing() -> None:
    term = Terminal(isatty=False)
    ProgressLine(term).update(_p(1, total=1))
    assert term.out == "storage/test_sequential.py "


def test_plan_header_and_wave_lines_on_a_real_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two local nodes: the plan after collection, then one line per wave (no TTY under pytester)."""
    # pytest shows the installed suite's long path; a narrow terminal would wrap the second dot
    monkeypatch.setenv("COLUMNS", "400")
    pytester.makefile(".yaml", inv="name: two\nnodes:\n  - name: n1\n    host: localhost\n  - name: n2\n    host: localhost\n")
    pytester.makefile(".yaml", prof="name: tiny\ninter_node:\n  mtu: {min: 1000}\n")
    result = pytester.runpytest_subprocess("--cluster", "inv.yaml", "--profile", "prof.yaml", "-k", "mtu")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "fabric: plan: about * s (at most * s), 1 check on 2 nodes: 2 tests, 1 wave ~* s, 512 nodes at once; "
        "times estimated (no previous run of this inventory and profile in pytest's cache)*",
        "*inter_node/test_mtu.py ",
        "fabric: mtu wave: 2 measured in * s",
        "*inter_node/test_mtu.py ..*",
    ])


@pytest.mark.parametrize("isatty", [False, True], ids=["log", "terminal"])
def test_a_wave_every_member_skips_says_nothing(isatty: bool) -> None:
    # Before: ~30 lines a run said "4 measured in 0 s (4 skipped)" for checks the profile does not set.
    term = Terminal(isatty=isatty)
    line = ProgressLine(term, interval_s=0)
    try:
        for done in range(5):
            line.update(dataclasses.replace(_p(done, total=4, elapsed=0), skipped=done))
    finally:
        line.close()
    assert "measured" not in term.out.rsplit("\r", 1)[-1]
    assert term.out.rsplit("\r", 1)[-1].endswith("storage/test_sequential.py ")
    if not isatty:
        assert term.out == "storage/test_sequential.py "
