"""perftest bandwidth and latency parsers on every recorded perftest output."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.perftest import parse_bandwidth, parse_latency

DATA = Path(__file__).resolve().parents[2] / "data" / "perftest"
MIB_GBPS = 1048576 * 8 / 1e9  # perftest MB/sec in Gb/s


def _read(folder: Path, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


# file -> (size, bw_average as printed, unit factor to Gb/s, qps, mtu, link type, row count)
BANDWIDTH = {
    "ib_read_bw-a-all-sizes-connectx3-40g-MBps.txt": (8388608, 3666.17, MIB_GBPS, 1, 2048, "IB", 23),
    "ib_send_bw-a-all-sizes-connectx3-40g-MBps.txt": (8388608, 3661.76, MIB_GBPS, 1, 2048, "IB", 23),
    "ib_write_bw-a-all-sizes-connectx3-40g-MBps.txt": (8388608, 3665.25, MIB_GBPS, 1, 2048, "IB", 23),
    "ib_write_bw-gpudirect-use_cuda-dmabuf-q16-D60-client-roce.txt": (65536, 181.46, 1.0, 16, 1024, "Ethernet", 1),
    "ib_write_bw-gpudirect-use_cuda-dmabuf-q16-D60-server-roce.txt": (65536, 181.46, 1.0, 16, 1024, "Ethernet", 1),
    "ib_write_bw-loopback-8M-server+client-interleaved-MBps.txt": (8388608, 24056.72, MIB_GBPS, 1, 4096, "IB", 1),
    "ib_write_bw-loopback-all-sizes-interleaved-MBps.txt": (8388608, 23240.68, MIB_GBPS, 1, 4096, "IB", 23),
    "ib_write_bw-roce-q4-report_gbits-oci-vf.txt": (65536, 98.01, 1.0, 4, 4096, "Ethernet", 1),
}
# file -> (size, t_typical, t_avg, p99, p99.9, row count)
LATENCY = {
    "ib_atomic_lat-cpufreq-warnings-connectx3.txt": (8, 2.34, 2.37, 2.56, 10.20, 1),
    "ib_read_lat-a-all-sizes-connectx3-40g.txt": (2, 1.99, 2.01, 2.13, 9.95, 23),
    "ib_send_lat-a-all-sizes-connectx3-40g.txt": (2, 1.07, 1.11, 1.68, 5.00, 23),
    "ib_write_lat-a-all-sizes-connectx3-40g.txt": (2, 0.98, 1.03, 1.21, 5.42, 23),
}
ERRORS = {"ib_write_bw-error-couldnt-connect-pre-fix.txt": "Couldn't connect to 192.168.125.211:18515"}


def test_every_perftest_corpus_file_has_expectations(corpus: Path) -> None:
    present = {p.name for p in (corpus / "perftest").iterdir()}
    assert present == set(BANDWIDTH) | set(LATENCY) | set(ERRORS)


@pytest.mark.parametrize("name", sorted(BANDWIDTH))
def test_bandwidth_corpus(corpus: Path, name: str) -> None:
    size, printed, factor, qps, mtu, link, count = BANDWIDTH[name]
    result = parse_bandwidth(_read(corpus / "perftest", name))
    assert result.row_at(size).bw_average_gbps == pytest.approx(printed * factor)
    assert (result.num_qps, result.mtu_bytes, result.link_type) == (qps, mtu, link)
    assert len(result.rows) == count
    assert len({row.size_bytes for row in result.rows}) == count  # duplicated rows collapsed
    assert result.test_name.endswith("BW Test")
    assert result.largest_row.size_bytes == max(row.size_bytes for row in result.rows)


def test_mbps_is_mebibytes_per_second(corpus: Path) -> None:
    # 24056.72 MB/sec * 2^20 B * 8 bit = 201.8 Gb/s: HDR 200G loopback, not 192.5 (10^6 B).
    result = parse_bandwidth(_read(corpus / "perftest", "ib_write_bw-loopback-8M-server+client-interleaved-MBps.txt"))
    row = result.row_at(8388608)
    assert row.bw_average_gbps == pytest.approx(201.802, abs=1e-3)
    assert row.bw_peak_gbps == pytest.approx(24056.74 * MIB_GBPS)
    assert (row.iterations, row.msg_rate_mpps) == (20000, 0.003007)
    assert result.reported_unit == "MB/sec" and result.device == "ib0"
    assert result.uses_cuda is False and result.duration_mode is False


def test_interleaved_all_sizes_keeps_first_header_and_all_rows(corpus: Path) -> None:
    result = parse_bandwidth(_read(corpus / "perftest", "ib_write_bw-loopback-all-sizes-interleaved-MBps.txt"))
    assert [row.size_bytes for row in result.rows] == [2**n for n in range(1, 24)]
    assert result.row_at(4096).bw_average_gbps == pytest.approx(9948.41 * MIB_GBPS)
    assert result.header["ibv_wr* API"] == "ON"
    assert result.header["PCIe relax order"] == "ON"


def test_gpudirect_duration_mode_roce(corpus: Path) -> None:
    result = parse_bandwidth(_read(corpus / "perftest", "ib_write_bw-gpudirect-use_cuda-dmabuf-q16-D60-client-roce.txt"))
    row = result.row_at(65536)
    assert row.bw_peak_gbps is None  # printed 0.00: not measured in -D mode
    assert row.iterations == 10384867 and row.msg_rate_mpps == pytest.approx(0.3461)
    assert result.duration_mode and result.reported_unit == "Gb/sec"
    assert result.uses_cuda and result.cuda_device_name == "NVIDIA A40"
    assert (result.device, result.gid_index, result.tos, result.connection_type) == ("mlx5_1", 3, 41, "RC")
    assert any("Requested mtu is higher than active mtu" in w for w in result.warnings)
    assert any("BW peak won't be measured" in w for w in result.warnings)


def test_roce_report_gbits_header(corpus: Path) -> None:
    result = parse_bandwidth(_read(corpus / "perftest", "ib_write_bw-roce-q4-report_gbits-oci-vf.txt"))
    assert (result.device, result.gid_index, result.tos, result.transport_type) == ("mlx5_5", 3, 41, "IB")
    assert result.rows[0].bw_peak_gbps == pytest.approx(98.01)
    assert result.header["rdma_cm QPs"] == "ON"


@pytest.mark.parametrize("name", sorted(LATENCY))
def test_latency_corpus(corpus: Path, name: str) -> None:
    size, typical, avg, p99, p999, count = LATENCY[name]
    result = parse_latency(_read(corpus / "perftest", name))
    row = result.row_at(size)
    assert (row.latency_typical_us, row.latency_avg_us) == (typical, avg)
    assert (row.latency_p99_us, row.latency_p99_9_us) == (p99, p999)
    assert row.tps_average is None
    assert len(result.rows) == count and result.smallest_row.size_bytes == size
    assert (result.device, result.mtu_bytes, result.link_type) == ("mlx4_0", 2048, "IB")


def test_latency_at_8m_and_atomic_warnings(corpus: Path) -> None:
    row = parse_latency(_read(corpus / "perftest", "ib_send_lat-a-all-sizes-connectx3-40g.txt")).row_at(8388608)
    assert (row.latency_min_us, row.latency_max_us, row.latency_stdev_us) == (2239.42, 4189.77, 65.03)
    atomic = parse_latency(_read(corpus / "perftest", "ib_atomic_lat-cpufreq-warnings-connectx3.txt"))
    assert atomic.test_name == "Atomic FETCH_AND_ADD Latency Test"
    assert len(atomic.warnings) == 2 and all("Conflicting CPU frequency" in w for w in atomic.warnings)


@pytest.mark.parametrize("parse", [parse_bandwidth, parse_latency])
def test_couldnt_connect_is_tool_reported(corpus: Path, parse: object) -> None:
    text = _read(corpus / "perftest", "ib_write_bw-error-couldnt-connect-pre-fix.txt")
    with pytest.raises(ToolReportedError, match="Couldn't connect to 192.168.125.211:18515"):
        parse(text)  # type: ignore[operator]


def test_report_gbits_hdr_single_size() -> None:
    result = parse_bandwidth(_read(DATA, "ib_write_bw-report_gbits-8M-q4-hdr-constructed.txt"))
    row = result.row_at(8388608)
    assert (row.bw_peak_gbps, row.bw_average_gbps) == (196.53, 196.21)
    assert (result.num_qps, result.link_type, result.reported_unit) == (4, "IB", "Gb/sec")
    assert result.gid_index is None and result.tos is None


def test_old_latency_three_columns() -> None:
    row = parse_latency(_read(DATA, "ib_write_lat-old-3-columns-constructed.txt")).rows[0]
    assert (row.size_bytes, row.iterations) == (2, 1000)
    assert (row.latency_min_us, row.latency_max_us, row.latency_typical_us) == (1.12, 5.87, 1.16)
    assert row.latency_avg_us is None and row.latency_p99_us is None and row.latency_p99_9_us is None


def test_latency_duration_mode() -> None:
    row = parse_latency(_read(DATA, "ib_send_lat-duration-D-constructed.txt")).row_at(2)
    assert (row.latency_avg_us, row.tps_average, row.iterations) == (1.08, 923451.22, 4513256)
    assert row.latency_typical_us is None


def test_missing_size_lists_sizes(corpus: Path) -> None:
    result = parse_bandwidth(_read(corpus / "perftest", "ib_write_bw-roce-q4-report_gbits-oci-vf.txt"))
    with pytest.raises(ParseError, match=r"perftest-bw: no row for 8388608 bytes; sizes present: 65536"):
        result.row_at(8388608)


def test_wrong_kind_and_garbage(corpus: Path) -> None:
    with pytest.raises(UnrecognizedOutput, match="perftest-lat: .*no t_"):
        parse_latency(_read(corpus / "perftest", "ib_write_bw-roce-q4-report_gbits-oci-vf.txt"))
    with pytest.raises(UnrecognizedOutput, match="perftest-bw: .*'BW average'"):
        parse_bandwidth(_read(corpus / "perftest", "ib_write_lat-a-all-sizes-connectx3-40g.txt"))
    with pytest.raises(UnrecognizedOutput, match="perftest-bw"):
        parse_bandwidth("")
    truncated = _read(corpus / "perftest", "ib_write_bw-a-all-sizes-connectx3-40g-MBps.txt").split(" #bytes")[0]
    with pytest.raises(UnrecognizedOutput, match="no '#bytes' results table"):
        parse_bandwidth(truncated)
