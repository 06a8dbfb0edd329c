"""nccl-tests parser on every recorded nccl-tests output."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.nccl_tests import busbw_at, largest_size_row, parse, row_at

DATA = Path(__file__).resolve().parents[2] / "data" / "nccl-tests"

# file -> (largest size, its out-of-place busbw, in-place busbw, ranks, rows, NCCL version, avg busbw)
EXPECTED = {
    "all_gather_perf-2x-rtx2080ti-pcie-no-p2p.txt": (1073741824, 3.79, 3.84, 2, 28, None, 1.6651),
    "all_gather_perf-8x-a100-sxm4-40gb-old-format.txt": (8589934592, 223.39, 230.07, 8, 34, None, 58.2651),
    "all_reduce_perf-2node-16x-a100-sxm4-40gb-oci-roce.txt": (10737418240, 180.06, 180.08, 16, 2, "2.14.3+cuda11.7", 175.531),
    "all_reduce_perf-2node-16x-h100-gcp-a3mega.txt": (8589934592, 338.82, 337.35, 16, 31, None, 70.742),
    "all_reduce_perf-2node-16x-h200-socket-NCCL_IB_DISABLE.txt": (17179869184, 92.33, 92.35, 16, 32, "2.27.3+cuda12.9", 36.2205),
    "all_reduce_perf-2node-2x-l40s-roce.txt": (8589934592, 8.11, 8.12, 2, 31, "2.27.3+cuda12.9", 3.98762),
    "all_reduce_perf-2x-rtx2080ti-pcie-no-p2p.txt": (1073741824, 4.00, 4.00, 2, 28, None, 2.05774),
    "all_reduce_perf-2x-v100-nvlink-single-size.txt": (33554432, 5.63, 5.75, 2, 1, None, 5.68719),
    "all_reduce_perf-32node-128x-gb200-nccl2.29-excerpt.txt": (34359738368, 683.57, 683.49, 128, 33, "2.29.2+cuda13.1", 152.682),
    "all_reduce_perf-8x-a100-sxm4-40gb-old-format.txt": (8589934592, 235.26, 235.03, 8, 34, None, 68.4048),
    "alltoall_perf-2x-rtx2080ti-pcie-no-p2p.txt": (1073741824, 4.61, 4.73, 2, 28, None, 2.06935),
    "alltoall_perf-8x-a100-sxm4-40gb-old-format.txt": (8589934592, 224.31, 226.16, 8, 34, None, 58.6481),
}


def _parse(corpus: Path, name: str):  # type: ignore[no-untyped-def]
    return parse((corpus / "nccl-tests" / name).read_text(encoding="utf-8"))


def test_every_nccl_corpus_file_has_expectations(corpus: Path) -> None:
    assert {p.name for p in (corpus / "nccl-tests").iterdir()} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_busbw_at_largest_size(corpus: Path, name: str) -> None:
    size, busbw, in_place, ranks, rows, version, avg = EXPECTED[name]
    result = _parse(corpus, name)
    assert largest_size_row(result).size_bytes == size
    assert busbw_at(result, size) == busbw
    assert busbw_at(result, size, in_place=True) == in_place
    assert (result.num_ranks, len(result.rows), result.nccl_version) == (ranks, rows, version)
    assert result.avg_busbw_gbytes_per_s == avg
    assert result.out_of_bounds == 0 and result.out_of_bounds_ok is True


def test_old_layout_without_redop_root_and_na_wrong(corpus: Path) -> None:
    gather = _parse(corpus, "all_gather_perf-8x-a100-sxm4-40gb-old-format.txt")
    row = largest_size_row(gather)
    assert (row.type, row.redop, row.root, row.wrong, row.time_us) == ("float", None, None, None, 33646.0)
    assert gather.wrong_total is None
    reduce = _parse(corpus, "all_reduce_perf-8x-a100-sxm4-40gb-old-format.txt")
    assert (largest_size_row(reduce).redop, largest_size_row(reduce).root) == ("sum", None)
    assert reduce.ranks[0].host == "localhost" and reduce.ranks[0].name == "A100-SXM4-40GB"
    assert reduce.ranks[0].group is None


def test_alltoall_blank_redop_and_mixed_wrong(corpus: Path) -> None:
    old = _parse(corpus, "alltoall_perf-8x-a100-sxm4-40gb-old-format.txt")
    assert largest_size_row(old).redop is None
    new = _parse(corpus, "alltoall_perf-2x-rtx2080ti-pcie-no-p2p.txt")
    row = largest_size_row(new)
    assert (row.redop, row.root, row.wrong, row.in_place_wrong) == ("none", -1, 0, None)


def test_multinode_noise_and_ranks(corpus: Path) -> None:
    result = _parse(corpus, "all_reduce_perf-2node-16x-a100-sxm4-40gb-oci-roce.txt")
    assert result.hosts == ("nccl-test-a100-worker-0", "nccl-test-a100-worker-1")
    assert result.ranks[8].device == 0 and result.ranks[8].bus_id == "0x0f"
    assert (result.min_bytes, result.max_bytes, result.gpus_per_thread) == (1073741824, 10737418240, 1)
    assert busbw_at(result, 1073741824) == 170.99
    h200 = _parse(corpus, "all_reduce_perf-2node-16x-h200-socket-NCCL_IB_DISABLE.txt")
    assert (h200.gpus_per_thread, len(h200.ranks), h200.ranks[15].name) == (8, 16, "NVIDIA H200")


def test_gb200_trailer(corpus: Path) -> None:
    result = _parse(corpus, "all_reduce_perf-32node-128x-gb200-nccl2.29-excerpt.txt")
    assert result.collective == "all_reduce_perf" and result.concluded
    assert busbw_at(result, 8589934592) == 660.36
    assert len(result.ranks) == 1 and result.ranks[0].rank == 127


def test_avg_is_not_the_large_message_figure(corpus: Path) -> None:
    # The reason busbw_at exists: the sweep average is a third of what 8 GiB achieves.
    result = _parse(corpus, "all_reduce_perf-8x-a100-sxm4-40gb-old-format.txt")
    assert result.avg_busbw_gbytes_per_s is not None
    assert busbw_at(result, 8 * 2**30) > 3 * result.avg_busbw_gbytes_per_s


def test_missing_size_lists_sizes(corpus: Path) -> None:
    result = _parse(corpus, "all_reduce_perf-2node-16x-a100-sxm4-40gb-oci-roce.txt")
    with pytest.raises(ParseError, match=r"nccl-tests: no row for 8589934592 bytes; sizes present: 1073741824, 10737418240"):
        busbw_at(result, 8 * 2**30)


def test_nccl_failure_is_tool_reported() -> None:
    text = (DATA / "all_reduce_perf-test-nccl-failure-constructed.txt").read_text(encoding="utf-8")
    with pytest.raises(ToolReportedError, match="Test NCCL failure common.cu:1005 'unhandled system error"):
        parse(text)


def test_header_without_rows_and_garbage(corpus: Path) -> None:
    text = (corpus / "nccl-tests" / "all_reduce_perf-2x-v100-nvlink-single-size.txt").read_text(encoding="utf-8")
    with pytest.raises(UnrecognizedOutput, match="nccl-tests: .*no result rows"):
        parse(text.split("  33554432")[0])
    with pytest.raises(UnrecognizedOutput, match="nccl-tests"):
        parse("Warning: Permanently added 'x' (ED25519) to the list of known hosts.\n")


def _data(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "name",
    [
        "all_reduce_perf-2node-mpirun-tag-output-constructed.txt",
        "all_reduce_perf-2node-ompi5-tag-output-constructed.txt",
        "all_reduce_perf-2node-16task-srun-label-constructed.txt",
    ],
)
def test_rank_prefixes_of_mpirun_and_srun_are_read_through(name: str) -> None:
    # Output relayed by `mpirun --tag-output` ([1,0]<stdout>:) or `srun -l` ( 0: ) reads as the tool printed it.
    result = parse(_data(name))
    assert result.sizes == (8388608, 16777216, 33554432)
    assert busbw_at(result, 33554432) == 32.24
    assert result.num_ranks in (4, 16) and len(result.hosts) == 2
    assert result.wrong_total == 0 and result.out_of_bounds == 0 and result.out_of_bounds_ok is True


def test_tagged_output_keeps_the_version_and_ranks() -> None:
    result = parse(_data("all_reduce_perf-2node-mpirun-tag-output-constructed.txt"))
    assert result.nccl_version == "2.19.3+cuda12.3"
    assert result.hosts == ("gpu-a01", "gpu-a02") and result.ranks[2].pid == 38817


def test_tasks_that_each_ran_their_own_test_are_not_one_job() -> None:
    # srun of an nccl-tests build without MPI: every task prints its own one-rank table.
    with pytest.raises(UnrecognizedOutput, match=r"tasks 0, 1: each task ran its own test"):
        parse(_data("all_reduce_perf-srun-without-mpi-two-single-rank-runs-constructed.txt"))


def test_old_error_column_is_a_magnitude_not_a_count() -> None:
    result = parse(_data("all_reduce_perf-8x-v100-old-error-column-constructed.txt"))
    first = result.rows[0]
    # 7e-07 is the largest deviation from the expected values, not "0 wrong elements".
    assert (first.error, first.in_place_error) == (7e-07, 7e-07)
    assert (first.wrong, first.in_place_wrong) == (None, None)
    assert result.wrong_total is None
    assert result.max_error == 1e-06
    assert result.out_of_bounds == 0 and result.out_of_bounds_ok is True


def test_new_wrong_column_is_a_count() -> None:
    result = parse(_data("all_reduce_perf-2node-wrong-results-constructed.txt"))
    row = row_at(result, 16777216)
    assert (row.wrong, row.in_place_wrong, row.error) == (1043, 1043, None)
    assert result.wrong_total == 1043 + 1043 + 2
    assert result.max_error is None
    assert (result.out_of_bounds, result.out_of_bounds_ok) == (3, False)


def test_oldest_trailer_without_hash() -> None:
    # The first nccl-tests printed " Out of bounds values" and " Avg bus bandwidth" without '#'.
    text = _data("all_reduce_perf-8x-v100-old-error-column-constructed.txt")
    text = text.replace("# Out of bounds values : 0 OK", " Out of bounds values : 2 FAILED")
    text = text.replace("# Avg bus bandwidth", " Avg bus bandwidth")
    result = parse(text)
    assert (result.out_of_bounds, result.out_of_bounds_ok) == (2, False)
    assert result.avg_busbw_gbytes_per_s == 79.4433


def test_wrong_results_with_rank_failures_after_the_table_still_read() -> None:
    # nccl-tests exits 1 on wrong results; ranks that then fail print their own `Test ... failure`
    # lines after the table. The table, the #wrong counts and the trailer are still the run's verdict.
    result = parse(_data("all_reduce_perf-1node-wrong-results-rank-failures-constructed.txt"))
    assert result.sizes == (8388608, 16777216, 33554432)
    row = row_at(result, 16777216)
    assert (row.wrong, row.in_place_wrong, row.busbw_gbytes_per_s) == (1043, 1043, 30.64)
    assert result.wrong_total == 2086
    assert (result.out_of_bounds, result.out_of_bounds_ok) == (2, False)
    assert result.avg_busbw_gbytes_per_s == 30.205
    assert result.nccl_version == "2.21.5+cuda12.4" and result.hosts == ("gpu-b07",)
    # What it skipped: each failure line once, as nccl-tests printed it.
    assert result.failures == (
        "gpu-b07: Test CUDA failure common.cu:1156 'an illegal memory access was encountered'",
        ".. gpu-b07 pid 52213: Test failure common.cu:1320",
        "gpu-b07: Test NCCL failure common.cu:1127 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / "
        "Cuda failure 'an illegal memory access was encountered''",
        ".. gpu-b07 pid 52214: Test failure common.cu:1320",
    )
    # Cut before the trailer (the failing rank was rank 0): rows and counts, no average.
    cut = parse(_data("all_reduce_perf-1node-wrong-results-rank-failures-constructed.txt").split("# Out of bounds")[0])
    assert cut.wrong_total == 2086 and cut.avg_busbw_gbytes_per_s is None and cut.out_of_bounds is None
    assert len(cut.failures) == 4


def test_a_clean_run_reports_no_failures() -> None:
    assert parse(_data("all_reduce_perf-2node-wrong-results-constructed.txt")).failures == ()


# Recorded outputs of today's versions (issue 20): nccl-tests 2.17 and rccl-tests (tests/data/SOURCES-perf-tools.md).
RCCL = Path(__file__).resolve().parents[2] / "data" / "rccl-tests"


def test_nccl_tests_2_17_header_lines_b200() -> None:
    result = parse((DATA / "all_reduce_perf-2node-b200-nccl-tests-2.17.6-dstack-lambda.txt").read_text(encoding="utf-8"))
    assert (result.tests_version, result.library_version_code, result.library_version) == ("2.17.6", 22602, "2.26.2")
    assert result.collective == "all_reduce_perf" and result.concluded is False  # 'starting' only, no trailer
    assert len(result.rows) == 29 and result.sizes[0] == 8
    assert busbw_at(result, 2147483648) == 696.06
    assert busbw_at(result, 2147483648, in_place=True) == 702.91
    assert busbw_at(result, 1073741824) == 677.35
    assert row_at(result, 524288).time_us == 240.71
    assert result.avg_busbw_gbytes_per_s == 137.179
    assert (result.out_of_bounds, result.out_of_bounds_ok, result.wrong_total) == (0, True, 0)
    assert result.nccl_version is None and result.skipped == () and result.skipped_count == 0


def test_rccl_tests_2node_mi300x() -> None:
    result = parse((RCCL / "all_reduce_perf-2node-16x-mi300x-rccl-2.22.3-rocm-6.4.2.txt").read_text(encoding="utf-8"))
    assert (result.tests_version, result.nccl_version) == ("develop:448c4c7", "2.22.3-HEAD:7d8d67c")
    assert result.num_ranks == 16 and result.hosts == ("gpu-53", "gpu-56")
    assert result.ranks[8].pid == 366643 and result.ranks[8].group is None
    assert result.ranks[15].bus_id == "0000:e5:00.0" and result.ranks[15].name == "AMD Instinct MI300X"
    assert len(result.rows) == 32 and largest_size_row(result).size_bytes == 17179869184
    assert busbw_at(result, 17179869184) == 357.46 and busbw_at(result, 17179869184, in_place=True) == 357.41
    assert row_at(result, 2147483648).time_us == 11574.0
    assert (result.avg_busbw_gbytes_per_s, result.out_of_bounds_ok) == (92.3318, True)
    # HIP/ROCm/Hostname/Librccl banner lines are read as known, not skipped
    assert result.skipped == ()


def test_rccl_tests_mi355x_excerpt_without_trailer_or_gpu_names() -> None:
    result = parse((RCCL / "all_reduce_perf-2node-16x-mi355x-rccl-2.26.6-rocm-7.0.1-no-trailer.txt").read_text(encoding="utf-8"))
    assert (result.tests_version, result.nccl_version) == ("develop:5272cd1", "2.26.6-HEAD:6ade506")
    assert result.num_ranks == 16 and result.ranks[0].name == "" and result.ranks[9].host == "mi355-gpu-24"
    assert len(result.rows) == 31
    assert busbw_at(result, 8589934592) == 369.04 and busbw_at(result, 8589934592, in_place=True) == 369.08
    assert row_at(result, 4194304).time_us == 118.6
    assert (result.avg_busbw_gbytes_per_s, result.out_of_bounds, result.concluded) == (None, None, False)


def test_2_17_timestamps_unknown_line_and_timeout_trailer() -> None:
    name = "all_reduce_perf-2.17-timestamps-unknown-line-timeout-constructed.txt"
    result = parse((DATA / name).read_text(encoding="utf-8"))
    assert (result.tests_version, result.library_version) == ("2.17.10", "2.28.3")
    assert result.sizes == (1048576, 2097152, 4194304)
    assert busbw_at(result, 4194304) == 38.73 and row_at(result, 4194304).timestamp == "2026-03-05 10:00:02"
    assert result.skipped == ("node0002: unexpected tool line that no parser knows",) and result.skipped_count == 1
    assert result.unknown_rows == ()
    assert result.failures == ("node0001: Test timeout (600s) common.cu:433",)
    assert result.last_error is not None and result.last_error.startswith("NET/IB : Got completion from peer")
    assert result.concluded is False and result.out_of_bounds is None


def test_unknown_row_layout_is_skipped_and_reported_not_fatal() -> None:
    text = (DATA / "all_reduce_perf-2node-b200-nccl-tests-2.17.6-dstack-lambda.txt").read_text(encoding="utf-8")
    odd = "    4194304       1048576     float     sum      -1   118.25   35.47   66.50       0   117.11   35.82   67.15   0   extra"
    lines = text.splitlines()
    lines.insert(10, odd)
    result = parse("\n".join(lines))
    assert len(result.rows) == 29 and busbw_at(result, 2147483648) == 696.06
    assert result.skipped == (odd.strip(),) and result.unknown_rows == (odd.strip(),)
