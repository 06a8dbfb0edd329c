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
    "ib_read_bw-a-all-sizes-connectx3-40g-MBps.txt": (
        8388608,
        3666.17,
        MIB_GBPS,
        1,
        2048,
        "IB",
        23,
    ),
    "ib_send_bw-a-all-sizes-connectx3-40g-MBps.txt": (
        8388608,
        3661.76,
        MIB_GBPS,
        1,
        2048,
        "IB",
        23,
    ),
    "ib_write_bw-a-all-sizes-connectx3-40g-MBps.txt": (
        8388608,
        3665.25,
        MIB_GBPS,
        1,
        2048,
        "IB",
        23,
    ),
    "ib_write_bw-gpudirect-use_cuda-dmabuf-q16-D60-client-roce.txt": (
        65536,
        181.46,
        1.0,
        16,
        1024,
        "Ethernet",
        1,
    ),
    "ib_write_bw-gpudirect-use_cuda-dmabuf-q16-D60-server-roce.txt": (
        65536,
        181.46,
        1.0,
        16,
        1024,
        "Ethernet",
        1,
    ),
    "ib_write_bw-loopback-8M-server+client-interleaved-MBps.txt": (
        8388608,
        24056.72,
        MIB_GBPS,
        1,
        4096,
        "IB",
        1,
    ),
    "ib_write_bw-loopback-all-sizes-interleaved-MBps.txt": (
        8388608,
        23240.68,
        MIB_GBPS,
        1,
        4096,
        "IB",
        23,
    ),
    "ib_write_bw-roce-q4-report_gbits-oci-vf.txt": (65536, 98.01, 1.0, 4, 4096, "Ethernet", 1),
}
# file -> (size, t_typical, t_avg, p99, p99.9, row count)
LATENCY = {
    "ib_atomic_lat-cpufreq-warnings-connectx3.txt": (8, 2.34, 2.37, 2.56, 10.20, 1),
    "ib_read_lat-a-all-sizes-connectx3-40g.txt": (2, 1.99, 2.01, 2.13, 9.95, 23),
    "ib_send_lat-a-all-sizes-connectx3-40g.txt": (2, 1.07, 1.11, 1.68, 5.00, 23),
    "ib_write_lat-a-all-sizes-connectx3-40g.txt": (2, 0.98, 1.03, 1.21, 5.42, 23),
}
ERRORS = {
    "ib_write_bw-error-couldnt-connect-pre-fix.txt": "Couldn't connect to 192.168.125.211:18515"
}


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
    result = parse_bandwidth(
        _read(corpus / "perftest", "ib_write_bw-loopback-8M-server+client-interleaved-MBps.txt")
    )
    row = result.row_at(8388608)
    assert row.bw_average_gbps == pytest.approx(201.802, abs=1e-3)
    assert row.bw_peak_gbps == pytest.approx(24056.74 * MIB_GBPS)
    assert (row.iterations, row.msg_rate_mpps) == (20000, 0.003007)
    assert result.reported_unit == "MB/sec" and result.device == "ib0"
    assert result.uses_cuda is False and result.duration_mode is False


def test_interleaved_all_sizes_keeps_first_header_and_all_rows(corpus: Path) -> None:
    result = parse_bandwidth(
        _read(corpus / "perftest", "ib_write_bw-loopback-all-sizes-interleaved-MBps.txt")
    )
    assert [row.size_bytes for row in result.rows] == [2**n for n in range(1, 24)]
    assert result.row_at(4096).bw_average_gbps == pytest.approx(9948.41 * MIB_GBPS)
    assert result.header["ibv_wr* API"] == "ON"
    assert result.header["PCIe relax order"] == "ON"


def test_gpudirect_duration_mode_roce(corpus: Path) -> None:
    result = parse_bandwidth(
        _read(corpus / "perftest", "ib_write_bw-gpudirect-use_cuda-dmabuf-q16-D60-client-roce.txt")
    )
    row = result.row_at(65536)
    assert row.bw_peak_gbps is None  # printed 0.00: not measured in -D mode
    assert row.iterations == 10384867 and row.msg_rate_mpps == pytest.approx(0.3461)
    assert result.duration_mode and result.reported_unit == "Gb/sec"
    assert result.uses_cuda and result.cuda_device_name == "NVIDIA A40"
    assert (result.device, result.gid_index, result.tos, result.connection_type) == (
        "mlx5_1",
        3,
        41,
        "RC",
    )
    assert any("Requested mtu is higher than active mtu" in w for w in result.warnings)
    assert any("BW peak won't be measured" in w for w in result.warnings)


def test_roce_report_gbits_header(corpus: Path) -> None:
    result = parse_bandwidth(
        _read(corpus / "perftest", "ib_write_bw-roce-q4-report_gbits-oci-vf.txt")
    )
    assert (result.device, result.gid_index, result.tos, result.transport_type) == (
        "mlx5_5",
        3,
        41,
        "IB",
    )
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
    row = parse_latency(
        _read(corpus / "perftest", "ib_send_lat-a-all-sizes-connectx3-40g.txt")
    ).row_at(8388608)
    assert (row.latency_min_us, row.latency_max_us, row.latency_stdev_us) == (
        2239.42,
        4189.77,
        65.03,
    )
    atomic = parse_latency(
        _read(corpus / "perftest", "ib_atomic_lat-cpufreq-warnings-connectx3.txt")
    )
    assert atomic.test_name == "Atomic FETCH_AND_ADD Latency Test"
    assert len(atomic.warnings) == 2 and all(
        "Conflicting CPU frequency" in w for w in atomic.warnings
    )


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
    assert (
        row.latency_avg_us is None and row.latency_p99_us is None and row.latency_p99_9_us is None
    )


def test_latency_duration_mode() -> None:
    row = parse_latency(_read(DATA, "ib_send_lat-duration-D-constructed.txt")).row_at(2)
    assert (row.latency_avg_us, row.tps_average, row.iterations) == (1.08, 923451.22, 4513256)
    assert row.latency_typical_us is None


def test_missing_size_lists_sizes(corpus: Path) -> None:
    result = parse_bandwidth(
        _read(corpus / "perftest", "ib_write_bw-roce-q4-report_gbits-oci-vf.txt")
    )
    with pytest.raises(
        ParseError, match=r"perftest-bw: no row for 8388608 bytes; sizes present: 65536"
    ):
        result.row_at(8388608)


def test_wrong_kind_and_garbage(corpus: Path) -> None:
    with pytest.raises(UnrecognizedOutput, match="perftest-lat: .*no t_"):
        parse_latency(_read(corpus / "perftest", "ib_write_bw-roce-q4-report_gbits-oci-vf.txt"))
    with pytest.raises(UnrecognizedOutput, match="perftest-bw: .*'BW average'"):
        parse_bandwidth(_read(corpus / "perftest", "ib_write_lat-a-all-sizes-connectx3-40g.txt"))
    with pytest.raises(UnrecognizedOutput, match="perftest-bw"):
        parse_bandwidth("")
    truncated = _read(corpus / "perftest", "ib_write_bw-a-all-sizes-connectx3-40g-MBps.txt").split(
        " #bytes"
    )[0]
    with pytest.raises(UnrecognizedOutput, match="no '#bytes' results table"):
        parse_bandwidth(truncated)


# --- perftest 24.x / 25.x (issue 20) ------------------------------------------------------------


def test_25x_mib_per_sec_is_mebibytes_and_warning_inside_table() -> None:
    # 24.07 renamed MB/sec to MiB/sec (the same 2^20 B/s); the cpufreq warning lands between
    # the table header and its row when stderr and stdout are captured together.
    result = parse_bandwidth(
        _read(DATA, "ib_write_bw-25.10-MiBps-64K-ndr-cpufreq-warning-in-table-constructed.txt")
    )
    row = result.row_at(65536)
    assert row.bw_average_gbps == pytest.approx(46776.51 * MIB_GBPS)
    assert row.bw_peak_gbps == pytest.approx(46781.22 * MIB_GBPS)
    assert (row.iterations, row.msg_rate_mpps) == (5000, 0.748424)
    assert result.reported_unit == "MiB/sec"
    assert (
        result.header["CQE Poll Batch"] == "Dynamic"
        and result.header["Using Enhanced Reorder"] == "OFF"
    )
    assert result.header["Lock-free"] == "OFF" and result.mtu_bytes == 4096
    assert len(result.warnings) == 1 and "Conflicting CPU frequency" in result.warnings[0]
    assert (result.skipped, result.skipped_count) == ((), 0)


def test_25x_latency_percentiles_and_warnings() -> None:
    result = parse_latency(
        _read(DATA, "ib_send_lat-25.10-percentiles-cpufreq-warnings-constructed.txt")
    )
    row = result.row_at(2)
    assert (row.latency_min_us, row.latency_max_us, row.latency_typical_us) == (1.24, 5.19, 1.27)
    assert (row.latency_avg_us, row.latency_stdev_us) == (1.28, 0.03)
    assert (row.latency_p99_us, row.latency_p99_9_us) == (1.37, 5.19)
    assert result.header["Max inline data"] == "236[B]" and result.header["TX depth"] == "1"
    assert len(result.warnings) == 2
    assert result.skipped == ()  # 'Disabling dynamic polling' and the address lines are known


def test_25x_dual_port_per_port_columns_and_unknown_line_skipped() -> None:
    result = parse_bandwidth(
        _read(DATA, "ib_write_bw-25.10-dualport-report-per-port-gbits-unknown-line-constructed.txt")
    )
    row = result.row_at(1048576)
    assert (row.bw_average_gbps, row.bw_port1_gbps, row.bw_port2_gbps) == (192.87, 96.45, 96.42)
    assert (row.msg_rate_mpps, row.msg_rate_port1_mpps, row.msg_rate_port2_mpps) == (
        0.022994,
        0.011497,
        0.011497,
    )
    assert result.header["GID index2"] == "3" and result.gid_index == 3 and result.num_qps == 2
    assert result.skipped == ("Actual inline-size(0) < requested inline-size(220)",)
    assert result.skipped_count == 1


def test_25x_run_cut_short_by_a_completion_error_is_tool_reported() -> None:
    # Rows up to 4096 B were printed, then the QP failed: the run measured nothing to judge.
    text = _read(DATA, "ib_write_bw-25.10-a-roce-completion-error-cut-short-constructed.txt")
    with pytest.raises(
        ToolReportedError, match=r"Completion with error at client; Failed status 12: .*; scnt=128"
    ):
        parse_bandwidth(text)


def test_25x_server_left_waiting_with_an_empty_table() -> None:
    text = _read(DATA, "ib_write_bw-25.10-rdma_cm-server-table-header-no-rows-constructed.txt")
    with pytest.raises(UnrecognizedOutput, match="results table has no rows"):
        parse_bandwidth(text)


def test_recorded_post_list_run_from_perftest_issue_273() -> None:
    result = parse_bandwidth(
        _read(DATA, "ib_write_bw-post-list-8B-D60-report_gbits-roce-perftest-issue-273.txt")
    )
    row = result.row_at(8)
    assert (row.iterations, row.bw_average_gbps, row.msg_rate_mpps) == (224958464, 0.48, 7.498617)
    assert row.bw_peak_gbps is None  # printed 0.00: not measured
    assert result.test_name == "RDMA_Write Post List BW Test"
    assert (result.header["Post List"], result.header["PCIe relax order"]) == ("128", "Unsupported")
    assert (result.gid_index, result.link_type) == (2, "Ethernet")


def test_qos_sl_column_does_not_shift_the_iterations() -> None:
    # RESULT_FMT_QOS / REPORT_FMT_QOS of perftest 25.10 (raw Ethernet QoS runs): #sl before #iterations.
    text = (
        "                    Send BW Test\n"
        " #bytes    #sl      #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
        " 1500       3           100000           1178.35            1177.93                  0.823452\n"
    )
    row = parse_bandwidth(text).rows[0]
    assert (row.size_bytes, row.sl, row.iterations) == (1500, 3, 100000)
    assert row.bw_average_gbps == pytest.approx(1177.93 * MIB_GBPS)


def test_a_row_cut_short_is_skipped_and_the_others_kept() -> None:
    text = _read(DATA, "ib_write_bw-25.10-MiBps-64K-ndr-cpufreq-warning-in-table-constructed.txt")
    text = text.replace(
        " 65536      5000",
        " 32768      5000             23390.11            23388.20\t\t     0.748422\n 65536      5000",
        1,
    )
    cut = text.replace("46776.51\t\t     0.748424", "")
    result = parse_bandwidth(cut)
    assert [row.size_bytes for row in result.rows] == [32768]
    assert len(result.skipped) == 1 and result.skipped[0].startswith("65536")
