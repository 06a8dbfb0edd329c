"""qperf parser on every recorded qperf output."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.qperf import parse

EXPECTED_BW = {"rc_bw": 4.67 * 8, "rc_rdma_write_bw": 4.67 * 8, "rc_rdma_read_bw": 4.62 * 8}  # GB/sec -> Gb/s
EXPECTED_LAT = {"rc_lat": 12.2, "rc_rdma_write_lat": 12.8, "rc_rdma_read_lat": 21.4}
FILES = {"rc-bw-rdma-write-read-bw-ntrdma.txt": EXPECTED_BW, "rc-lat-rdma-write-read-lat-ntrdma.txt": EXPECTED_LAT}


def test_every_qperf_corpus_file_has_expectations(corpus: Path) -> None:
    assert {p.name for p in (corpus / "qperf").iterdir()} == set(FILES)


@pytest.mark.parametrize("name", sorted(FILES))
def test_corpus(corpus: Path, name: str) -> None:
    result = parse((corpus / "qperf" / name).read_text(encoding="utf-8"))
    expected = FILES[name]
    assert [t.name for t in result.tests] == list(expected)
    for test_name, value in expected.items():
        test = result.test(test_name)
        measured = test.bw_gbps if test.bw_gbps is not None else test.latency_us
        assert measured == pytest.approx(value)
    if name.startswith("rc-bw"):
        assert result.test("rc_bw").bw_gbytes_per_s == pytest.approx(4.67)
        assert result.test("rc_bw").values == {"bw": "4.67 GB/sec"}


def test_units_verbose_and_errors() -> None:
    verbose = "rc_bw:\n    bw              =  950 MB/sec\n    msg_rate        =  14.5 K/sec\ntcp_lat:\n    latency  =  1.5 ms\n"
    result = parse(verbose)
    assert result.test("rc_bw").bw_gbps == pytest.approx(7.6)
    assert result.test("rc_bw").msg_rate_per_s == pytest.approx(14500)
    assert result.test("tcp_lat").latency_us == pytest.approx(1500)
    with pytest.raises(ParseError, match="qperf: no test 'ud_bw'; tests present: rc_bw, tcp_lat"):
        result.test("ud_bw")
    with pytest.raises(ParseError, match="qperf \\(line 2\\): unknown bandwidth unit 'furlongs'"):
        parse("rc_bw:\n    bw = 3 furlongs\n")
    with pytest.raises(UnrecognizedOutput, match="qperf: test 'rc_bw' has no results"):
        parse("rc_bw:\n")
