"""sockperf parser on every recorded sockperf output."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.sockperf import parse

DATA = Path(__file__).resolve().parents[2] / "data" / "sockperf"

# file -> (protocol, avg, std-dev, p99, p99.9, observations, max)
EXPECTED = {
    "pp-tcp-host-to-host-3.1-ansi.txt": ("TCP", 6.588, 2.179, 6.893, 16.753, 2270670, 3190.512),
    "pp-udp-host-to-host-3.1-ansi.txt": ("UDP", 6.354, 0.635, 6.720, 16.796, 2355035, 250.968),
}


def test_every_sockperf_corpus_file_has_expectations(corpus: Path) -> None:
    assert {p.name for p in (corpus / "sockperf").iterdir()} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus(corpus: Path, name: str) -> None:
    protocol, avg, stdev, p99, p999, observations, maximum = EXPECTED[name]
    result = parse((corpus / "sockperf" / name).read_text(encoding="utf-8"))
    assert (result.protocol, result.latency_avg_us, result.latency_stdev_us) == (protocol, avg, stdev)
    assert (result.percentiles_us[99.0], result.percentiles_us[99.9]) == (p99, p999)
    assert (result.observations, result.latency_max_us) == (observations, maximum)
    assert (result.version, result.server, result.dropped_messages) == ("3.1-no.git", "10.0.0.2", 0)
    # 3.1 labels its figure avg-lat: half the round trip.
    assert result.round_trip is False and result.rtt_avg_us == pytest.approx(2 * avg)


def test_newer_avg_rtt_labelling() -> None:
    result = parse((DATA / "pp-udp-3.10-avg-rtt-constructed.txt").read_text(encoding="utf-8"))
    assert result.round_trip is True and result.rtt_avg_us == 11.198 == result.latency_avg_us
    assert (result.latency_stdev_us, result.latency_min_us, result.percentiles_us[99.999]) == (0.540, 10.204, 17.814)
    assert (result.runtime_s, result.sent_messages) == (9.550, 810702)


def test_errors_and_garbage() -> None:
    with pytest.raises(ToolReportedError, match="sockperf: sockperf: ERROR: .*Connection refused"):
        parse("sockperf: ERROR: Failed to connect to server (errno=111 Connection refused)\n")
    with pytest.raises(UnrecognizedOutput, match="sockperf: no 'avg-lat="):
        parse("sockperf: Starting test...\n")
