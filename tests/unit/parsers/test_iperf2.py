"""iperf 2 parser on every recorded iperf 2 output."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.iperf2 import parse

# file -> (streams, total bit/s, duration s, remote host)
EXPECTED = {
    "text-client-P20-lan.txt": (20, 266e6, 10.8, "192.168.0.100"),
    "text-client-i1-single-stream.txt": (1, 222e6, 10.0, "10.1.1.1"),
}


def test_every_iperf2_corpus_file_has_expectations(corpus: Path) -> None:
    assert {p.name for p in (corpus / "iperf2").iterdir()} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_totals(corpus: Path, name: str) -> None:
    streams, total, duration, host = EXPECTED[name]
    result = parse((corpus / "iperf2" / name).read_text(encoding="utf-8"))
    assert (result.num_streams, result.total_bps, result.duration_s, result.remote_host) == (streams, total, duration, host)
    assert (result.protocol, result.port) == ("TCP", 5001)


def test_p20_sum_and_unordered_streams(corpus: Path) -> None:
    result = parse((corpus / "iperf2" / "text-client-P20-lan.txt").read_text(encoding="utf-8"))
    assert [s.stream_id for s in result.streams] == list(range(3, 23))
    assert result.total_bytes == 344 * 2**20
    assert next(s for s in result.streams if s.stream_id == 12).bps == 13.7e6


def test_single_stream_old_interval_format(corpus: Path) -> None:
    result = parse((corpus / "iperf2" / "text-client-i1-single-stream.txt").read_text(encoding="utf-8"))
    assert len(result.intervals) == 11
    assert (result.intervals[0].start_s, result.intervals[0].end_s, result.intervals[0].bps) == (0.0, 1.0, 240e6)
    assert result.total_bytes == 265 * 2**20  # the 0.0-10.0 line, not the first 0.0-1.0 one


def test_newer_iperf2_and_errors() -> None:
    newer = (
        "[  1] local 10.0.0.1 port 5001 connected with 10.0.0.2 port 40000\n"
        "[ ID] Interval       Transfer     Bandwidth\n"
        "[  1] 0.0000-10.0047 sec  1.10 GBytes   943 Mbits/sec\n"
    )
    assert parse(newer).total_bps == 943e6
    with pytest.raises(ToolReportedError, match="iperf2: connect failed: Connection refused"):
        parse("connect failed: Connection refused\n")
    with pytest.raises(UnrecognizedOutput, match="iperf2"):
        parse("------\nClient connecting to x, TCP port 5001\n")


def test_recorded_outputs_have_no_unknown_lines(corpus: Path) -> None:
    for name in EXPECTED:
        result = parse((corpus / "iperf2" / name).read_text(encoding="utf-8"))
        assert (result.skipped, result.skipped_count) == ((), 0), name


def test_unknown_lines_are_listed_not_fatal(corpus: Path) -> None:
    text = (corpus / "iperf2" / "text-client-i1-single-stream.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    noisy = "\n".join([*lines[:4], "srun: Job 42 step creation temporarily disabled", *lines[4:], "srun: Job 42 step creation temporarily disabled"])
    result = parse(noisy)
    assert (result.total_bps, result.num_streams) == (222e6, 1)
    assert (result.skipped, result.skipped_count) == (("srun: Job 42 step creation temporarily disabled",), 2)
