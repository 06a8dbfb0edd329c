"""judge/corroboration.py: a tool's figures against each other and against counters it does not keep."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_fabric.judge import corroboration as c
from pytest_fabric.parsers import fio, iperf3, perftest, storage_counters

DATA = Path(__file__).resolve().parents[1] / "data"


def test_perftest_window_is_the_duration_less_its_margins() -> None:
    assert c.perftest_window_s(60) == 30
    assert c.perftest_window_s(5) == 3
    assert c.perftest_window_s(2) == 2


def test_recorded_perftest_duration_run_agrees_with_itself() -> None:
    # perftest issue 273, a real -D 60 run: 224958464 x 8 B over its 30 s window is its 0.48 Gb/s.
    run = perftest.parse_bandwidth((DATA / "perftest" / "ib_write_bw-post-list-8B-D60-report_gbits-roce-perftest-issue-273.txt").read_text())
    found = c.perftest_internal("gpu01", run.largest_row, 60)
    assert found.status == c.AGREES, found.detail


def test_perftest_bandwidth_edited_alone_is_uncorroborated() -> None:
    run = perftest.parse_bandwidth((DATA / "perftest" / "ib_write_bw-post-list-8B-D60-report_gbits-roce-perftest-issue-273.txt").read_text())
    inflated = dataclasses.replace(run.largest_row, bw_average_gbps=run.largest_row.bw_average_gbps * 4)
    found = c.perftest_internal("gpu01", inflated, 60)
    assert found.status == c.UNCORROBORATED and found.node == "gpu01"
    assert "iterations" in found.detail


def test_perftest_iteration_mode_says_why_it_is_not_run() -> None:
    row = perftest.PerftestBandwidthRow(65536, 5000, None, 190.0, None)
    assert c.perftest_internal("n", row, None).status == c.NOT_RUN


def test_duration_must_cover_what_was_asked() -> None:
    assert c.covers_duration("n", "ib_write_bw", 5, 5.3).status == c.AGREES
    short = c.covers_duration("n", "ib_write_bw", 5, 0.4)
    assert short.status == c.UNCORROBORATED and "0.40 s" in short.detail
    assert c.covers_duration("n", "iperf3", 5, 0.0).status == c.NOT_RUN  # a command no transport timed


def test_recorded_fio_agrees_and_edited_bandwidth_does_not() -> None:
    result = fio.parse((DATA / "fio" / "json-seqread-1M-8M-fio-3.33.json").read_text())
    io = result.jobs[0].read
    assert c.fio_internal("n", io, "read").status == c.AGREES
    edited = dataclasses.replace(io, bw_bytes_per_s=io.bw_bytes_per_s * 3)
    assert c.fio_internal("n", edited, "read").status == c.UNCORROBORATED


@pytest.mark.parametrize("name", ["json-client-P4-loopback-3.12.json", "json-client-P2-bidir-loopback-3.21.json"])
def test_recorded_iperf3_agrees_on_both_ends(name: str) -> None:
    result = iperf3.parse((DATA / "iperf3" / name).read_text())
    found = c.iperf3_internal("n", result)
    assert {f.status for f in found} == {c.AGREES}, [f.detail for f in found]
    assert len(found) == 2 * len(result.flows)


def test_iperf3_rate_edited_without_bytes_is_uncorroborated() -> None:
    result = iperf3.parse((DATA / "iperf3" / "json-client-P4-loopback-3.12.json").read_text())
    edited = dataclasses.replace(result, received_bps=(result.received_bps or 0) * 2)
    found = c.iperf3_internal("n", edited)
    assert [f.status for f in found] == [c.AGREES, c.UNCORROBORATED]


def test_counter_witness_allows_headers_and_other_traffic() -> None:
    # The port carried more than the payload (headers, SSH): the claim stands.
    found = c.counter_witness("interface counters", "a", "a tx", 1_000_000, 10, 10 + 1_050_000)
    assert found.status == c.AGREES


def test_counter_witness_catches_bytes_that_never_crossed() -> None:
    found = c.counter_witness("interface counters", "a", "a tx", 4_000_000, 0, 1_000_000)
    assert found.status == c.UNCORROBORATED and "x4.00" in found.detail
    assert c.failure([found]) is not None and c.failure([found]).startswith("uncorroborated on a:")  # type: ignore[union-attr]


def test_counter_witness_just_above_tolerance_fails() -> None:
    assert c.counter_witness("w", "a", "x", 1_030_000, 0, 1_000_000).status == c.UNCORROBORATED
    assert c.counter_witness("w", "a", "x", 1_019_000, 0, 1_000_000).status == c.AGREES


def test_counter_unreadable_or_wrapped_is_not_run() -> None:
    unread = c.counter_witness("w", "a", "x", 5, None, 7, why="perfquery: Failed to open 'mlx5_0'")
    assert unread.status == c.NOT_RUN and "Failed to open" in unread.detail
    assert c.counter_witness("w", "a", "x", 5, 9, 7).status == c.NOT_RUN


def test_summary_and_failure() -> None:
    ok = c.counter_witness("interface counters", "a", "x", 1, 0, 10)
    bad = c.counter_witness("interface counters", "b", "y", 100, 0, 10)
    skipped = c.perftest_internal("a", perftest.PerftestBandwidthRow(8, 1, None, 1.0, None), None)
    assert c.failure([ok, skipped]) is None
    assert c.failure([ok, bad]) == f"uncorroborated on b: b: {bad.detail}"
    assert c.summary([ok, bad, skipped]) == (
        "corroborated by interface counters: 1 agrees, 1 uncorroborated; internal: 1 not run")
    assert ok.to_dict()["status"] == "agrees"


def _storage(name: str) -> storage_counters.StorageCounters:
    return storage_counters.parse((DATA / "storage-counters" / name).read_text())


def test_a_real_fio_write_agrees_with_its_loop_devices_sectors() -> None:
    before, after = _storage("ext4-loop-before-fio-write-16M.txt"), _storage("ext4-loop-after-fio-write-16M.txt")
    found = c.storage_witness("node01", "write", 16 * 2**20, before, after)  # fio 3.33's io_bytes for that run
    assert (found.witness, found.status, found.node) == ("block device counters", c.AGREES, "node01"), found.detail
    assert "loop0 sectors written x 512" in found.detail


def test_a_write_claiming_more_than_reached_the_device_is_uncorroborated_on_its_node() -> None:
    before, after = _storage("ext4-loop-before-fio-write-16M.txt"), _storage("ext4-loop-after-fio-write-16M.txt")
    found = c.storage_witness("node02", "write", 4 * 16 * 2**20, before, after)  # a wrapper's x4
    assert (found.status, found.node) == (c.UNCORROBORATED, "node02")
    assert found.witnessed == (1537420 - 1499538) * 512 and "never reached the device" in found.detail
    # reads are held to the sectors read, which did not grow by 16 MiB during a write
    assert c.storage_witness("node02", "read", 16 * 2**20, before, after).status == c.UNCORROBORATED


def test_nfs_is_held_to_its_clients_server_bytes() -> None:
    after = _storage("nfs4-home-constructed.txt")
    before = dataclasses.replace(after, nfs_server_written=after.nfs_server_written - 16 * 2**20)  # type: ignore[operator]
    assert c.storage_witness("n", "write", 16 * 2**20, before, after).status == c.AGREES
    found = c.storage_witness("n", "write", 32 * 2**20, before, after)
    assert (found.witness, found.status) == ("NFS client counters", c.UNCORROBORATED)


def test_a_filesystem_without_counters_says_so_and_does_not_pass_as_corroborated() -> None:
    tmpfs = _storage("tmpfs-tmp.txt")
    found = c.storage_witness("n", "write", 16 * 2**20, tmpfs, tmpfs)
    assert found.status == c.NOT_RUN and "no witness on this filesystem (tmpfs on /tmp" in found.detail
    assert c.failure([found]) is None and "storage counters: 1 not run" in c.summary([found])


def test_a_remount_or_an_unreadable_reading_is_not_run() -> None:
    before, after = _storage("ext4-vda-bind-var-tmp.txt"), _storage("ext4-loop-after-fio-write-16M.txt")
    assert "remounted during the run" in c.storage_witness("n", "write", 1, before, after).detail
    unread = c.storage_witness("n", "write", 1, None, after, why="findmnt: not installed")
    assert unread.status == c.NOT_RUN and "(findmnt: not installed)" in unread.detail
