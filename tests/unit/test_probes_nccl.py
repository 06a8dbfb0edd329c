"""Multi-node NCCL probe against canned nccl-tests output: wrong results fail, broken runs error, scaling is fair."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Expectation, Op, judge
from pytest_fabric.probes import nccl
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import CommandFailed
from pytest_fabric.transport.mock import Answer, CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

DATA = Path(__file__).resolve().parents[1] / "data" / "nccl-tests"
SIZE = 16777216  # a row of every sample below
FLOOR = Expectation("inter_node", "nccl_allreduce", Op.MIN, parse_quantity("10 GB/s"), "inter_node.nccl_allreduce.min")


def table(busbw: float, size: int = SIZE) -> str:
    """A clean newer-layout all_reduce_perf run at one size with this bus bandwidth."""
    return (
        f"# nThread 1 nGpus 1 minBytes {size} maxBytes {size} step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
        "#\n# Using devices\n"
        "#  Rank  0 Group  0 Pid   1001 on     node01 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
        "#  Rank  1 Group  0 Pid   1002 on     node02 device  0 [0x18] NVIDIA H100 80GB HBM3\n"
        "#\n"
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n"
        f"{size:12d}  {size // 4:12d}     float     sum      -1    812.6  {busbw / 2:6.2f}  {busbw:6.2f}      0    809.3  {busbw / 2:6.2f}  {busbw:6.2f}      0\n"
        "# Out of bounds values : 0 OK\n"
        f"# Avg bus bandwidth    : {busbw} \n#\n"
    )


def nodes(count: int, answers: dict[str, Answer]) -> tuple[list[NodeHandle], list[MockTransport]]:
    transports = [MockTransport(f"node{i + 1:02d}", answers) for i in range(count)]
    handles = [
        NodeHandle(Node(name=t.node, host=f"10.0.0.{i + 1}"), ConnectionPool(lambda _name, t=t: t))  # type: ignore[misc]
        for i, t in enumerate(transports)
    ]
    return handles, transports


def test_wrong_results_fail_the_check_whatever_the_bandwidth() -> None:
    text = (DATA / "all_reduce_perf-2node-wrong-results-constructed.txt").read_text()
    pair, _ = nodes(2, {r"all_reduce_perf": CannedCommand(stdout=text, exit_code=1)})
    measured = nccl.allreduce(pair, size_bytes=SIZE, gpus_per_node=2)
    assert measured.missing is not None
    assert "node01, node02 returned wrong results" in measured.missing
    assert "2088 wrong elements (1043 at 16777216 B out-of-place, 1043 at 16777216 B in-place, 2 at 33554432 B out-of-place)" in measured.missing
    assert "Out of bounds values : 3 FAILED" in measured.missing and "exit code 1" in measured.missing
    verdict = judge("node01<->node02", measured, FLOOR)
    # 30.97 GB/s clears the 10 GB/s floor, and the check still fails on the corruption.
    assert not verdict.passed and "wrong results" in verdict.message


def test_out_of_bounds_alone_fails_in_the_old_layout() -> None:
    # Old nccl-tests have no #wrong column: their verdict on the results is only the trailer line.
    text = (DATA / "all_reduce_perf-8x-v100-old-error-column-constructed.txt").read_text()
    text = text.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 2 FAILED")
    pair, _ = nodes(2, {r"all_reduce_perf": CannedCommand(stdout=text, exit_code=1)})
    measured = nccl.allreduce(pair, size_bytes=SIZE, gpus_per_node=8)
    assert measured.missing is not None and "'Out of bounds values : 2 FAILED'" in measured.missing
    assert "wrong elements" not in measured.missing


def test_old_layout_error_magnitude_alone_is_not_a_fault() -> None:
    text = (DATA / "all_reduce_perf-8x-v100-old-error-column-constructed.txt").read_text()
    pair, _ = nodes(2, {r"all_reduce_perf": text})
    measured = nccl.allreduce(pair, size_bytes=SIZE, gpus_per_node=8)
    assert measured.missing is None and measured.value.display("GB/s") == "80.46 GB/s"  # type: ignore[union-attr]


def test_a_rank_that_exits_non_zero_after_its_rows_is_an_error() -> None:
    # The table is complete and clean, but a rank crashed before the trailer: nothing to trust.
    stdout = table(30.0).split("# Out of bounds")[0]
    stderr = "mpirun noticed that process rank 1 with PID 1002 on node node02 exited on signal 11 (Segmentation fault).\n"
    pair, _ = nodes(2, {r"all_reduce_perf": CannedCommand(stdout=stdout, stderr=stderr, exit_code=139)})
    with pytest.raises(CommandFailed) as raised:
        nccl.allreduce(pair, size_bytes=SIZE, gpus_per_node=1)
    message = str(raised.value)
    assert raised.value.node == "node01" and "exited with code 139" in message and "Segmentation fault" in message
    assert "mpirun --allow-run-as-root" in message and "passwordless SSH" in message


def test_mpirun_that_starts_nothing_is_an_error_naming_its_output() -> None:
    stderr = "ssh: connect to host 10.0.0.2 port 22: Connection refused\nORTE was unable to reliably start one or more daemons.\n"
    pair, _ = nodes(2, {r"all_reduce_perf": CannedCommand(stderr=stderr, exit_code=1)})
    with pytest.raises(CommandFailed, match="Connection refused"):
        nccl.allreduce(pair, size_bytes=SIZE, gpus_per_node=1)


def test_every_run_pins_ring_and_checks_results() -> None:
    for count in (2, 4):
        group, transports = nodes(count, {r"all_reduce_perf": table(30.0)})
        nccl.allreduce(group, size_bytes=SIZE, gpus_per_node=1)
        command = transports[0].calls[-1]
        assert " -x NCCL_ALGO=Ring " in command and command.endswith(" -c 1"), command


def test_baseline_pairs_are_spread_over_the_nodes() -> None:
    group, _ = nodes(64, {})
    assert [(a.name, b.name) for a, b in nccl.baseline_pairs(group)] == [
        ("node01", "node02"), ("node32", "node33"), ("node63", "node64"),
    ]
    small, _ = nodes(3, {})
    assert [(a.name, b.name) for a, b in nccl.baseline_pairs(small)] == [("node01", "node02"), ("node02", "node03")]


def test_scaling_baseline_is_the_median_of_several_pairs_not_the_first_two_nodes() -> None:
    # node01+node02 is a slow pair; the first two nodes as baseline would make 4 and 6 nodes
    # look three times as good as two. The median of three pairs is the healthy figure.
    answers: dict[str, Answer] = {
        r"-H 10\.0\.0\.1:1,10\.0\.0\.2:1 ": table(10.0),
        r"-H 10\.0\.0\.3:1,10\.0\.0\.4:1 ": table(32.0),
        r"-H 10\.0\.0\.5:1,10\.0\.0\.6:1 ": table(31.0),
        r"-H (10\.0\.0\.\d:1,){3}10\.0\.0\.\d:1 ": table(30.0),
        r"-H (10\.0\.0\.\d:1,){5}10\.0\.0\.\d:1 ": table(24.8),
    }
    group, transports = nodes(6, answers)
    measured = nccl.scaling(group, size_bytes=SIZE, gpus_per_node=1)
    assert measured.value.display() == "80%"  # type: ignore[union-attr]  # 24.8 / 31.0 at 6 nodes
    assert "worst at 6 nodes" in measured.detail and "median of node01+node02 10.0, node03+node04 32.0, node05+node06 31.0" in measured.detail
    commands = [c for t in transports for c in t.calls]
    # three samples of each: three pairs, then 4 and 6 nodes
    assert len(commands) == 3 * (3 + 2)
    assert all(" -x NCCL_ALGO=Ring " in c for c in commands)
    assert [entry["nodes"] for entry in measured.extra["scaling"]] == [2, 4, 6]
    assert measured.extra["scaling"][1]["samples"] == [30.0, 30.0, 30.0]


def test_scaling_takes_the_median_of_its_samples() -> None:
    runs = iter([table(31.0), table(31.0), table(31.0), table(5.0), table(30.0), table(29.0)])

    class Varying(MockTransport):
        def run(self, command: str, *, timeout: float, check: bool = True):  # type: ignore[no-untyped-def]
            self.calls.append(command)
            from pytest_fabric.transport.results import CommandResult

            return CommandResult(self.node, command, 0, next(runs), "")

    transports = [Varying(f"node{i + 1:02d}", {}) for i in range(3)]
    group = [NodeHandle(Node(name=t.node, host=f"10.0.0.{i + 1}"), ConnectionPool(lambda _n, t=t: t)) for i, t in enumerate(transports)]  # type: ignore[misc]
    measured = nccl.scaling(group, size_bytes=SIZE, gpus_per_node=1, pairs=1)
    # One slow run of three (5.0) at 3 nodes does not set the figure: the median 29.0 does.
    assert measured.extra["scaling"][1]["samples"] == [5.0, 30.0, 29.0]
    assert measured.extra["scaling"][1]["busbw_gbytes"] == 29.0


def test_scaling_fails_when_any_run_returns_wrong_results() -> None:
    wrong = (DATA / "all_reduce_perf-2node-wrong-results-constructed.txt").read_text()
    answers: dict[str, Answer] = {
        r"-H (10\.0\.0\.\d:1,){3}10\.0\.0\.\d:1 ": CannedCommand(stdout=wrong, exit_code=1),
        r"all_reduce_perf": table(30.0),
    }
    group, _ = nodes(4, answers)
    measured = nccl.scaling(group, size_bytes=SIZE, gpus_per_node=1)
    assert measured.missing is not None and "node01, node02, node03, node04 returned wrong results" in measured.missing


def test_the_patterns_above_tell_the_groups_apart() -> None:
    # Guard for the scaling test: the 4-node pattern must not match a 6-node command.
    six = "-H 10.0.0.1:1,10.0.0.2:1,10.0.0.3:1,10.0.0.4:1,10.0.0.5:1,10.0.0.6:1 "
    assert not re.search(r"-H (10\.0\.0\.\d:1,){3}10\.0\.0\.\d:1 ", six)


def test_the_launch_line_carries_the_environment_the_hcas_and_the_roce_class() -> None:
    # A real DGX pair: ranks must find all_reduce_perf and libnccl (PATH, LD_LIBRARY_PATH), Open MPI must
    # wire up over the hosts' network and not load hcoll, and NCCL must use the inventory's HCAs in the
    # class perftest is given (RoCE), not every HCA it finds in the lossy class.
    pair, transports = nodes(2, {r"all_reduce_perf": table(40.0)})
    launch = nccl.Launch(hcas=nccl.nccl_hcas(["mlx5_0/1", "mlx5_3"]), nccl_env=("NCCL_IB_TC=106", "NCCL_IB_GID_INDEX=3"))
    nccl.allreduce(pair, size_bytes=SIZE, gpus_per_node=2, launch=launch)
    (line,) = transports[0].calls
    for option in ("-x PATH", "-x LD_LIBRARY_PATH", "--mca coll_hcoll_enable 0",
                   "--mca oob_tcp_if_include 10.0.0.1/32,10.0.0.2/32", "--mca btl_tcp_if_exclude 127.0.0.1/8,sppp,docker0,virbr0",
                   "-x NCCL_IB_HCA==mlx5_0:1,mlx5_3:1", "-x NCCL_IB_TC=106", "-x NCCL_IB_GID_INDEX=3"):
        assert option in line, (option, line)
    assert line.index("-x NCCL_IB_HCA") < line.index("all_reduce_perf")


def test_roce_profiles_give_perftest_and_nccl_the_same_class_and_gid() -> None:
    from pytest_fabric.config.profile import Roce

    roce = Roce(pfc_priorities=[3], ecn=True, trust="dscp", gid_index=3)
    assert roce.perftest_args() == ("--tclass=106", "--gid-index=3")
    assert roce.nccl_env() == ("NCCL_IB_TC=106", "NCCL_IB_GID_INDEX=3")
    pcp = Roce(pfc_priorities=[4], trust="pcp")
    assert pcp.perftest_args() == ("--sl=4",) and pcp.nccl_env() == ("NCCL_IB_SL=4",)


def test_a_perftest_built_without_cuda_is_told_from_a_missing_peermem() -> None:
    from pytest_fabric.probes.gpudirect import built_without_cuda

    # perftest before 4.5-0.20: getopt has no --use_cuda; from 4.5-0.20 it parses and the run refuses.
    assert built_without_cuda("ib_write_bw: unrecognized option '--use_cuda=0'\n Invalid Command or flag.")
    assert built_without_cuda(" Unsupported memory type\n")
    assert not built_without_cuda(" Couldn't allocate MR\n failed to create mr\n")  # no nvidia_peermem
