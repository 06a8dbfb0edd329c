"""The stand-ins' option tables (tests/data/option-tables/) and the parsers that read them, without a cluster.

Each table names its source on its first line; the stand-ins parse the words they are given as the
real tool does (glibc getopt_long for perftest, opal_cmd_line for Open MPI's mpirun,
boost::program_options for nvbandwidth), so the suite's own command lines must get through, and
a misspelt option must not. The integration tests (tests/integration/test_standins.py) run the
same stand-ins over SSH; these check the parsing alone, in milliseconds.
"""

from __future__ import annotations

import runpy
import shlex
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from simcluster.gpu import OPTION_TABLES_DIR, FakeGpus
from simcluster.gpu import STANDIN_SOURCE as GPU_STANDIN
from simcluster.hardware import OPTION_TABLES, standin_module

from pytest_fabric.probes import nccl

TABLES = sorted(OPTION_TABLES_DIR.glob("*.txt"))


FABRIC: ModuleType = standin_module("fabric_standin")
DOC = {"option_tables": {tool: (OPTION_TABLES_DIR / name).read_text() for tool, name in OPTION_TABLES.items()}}


def _gpu() -> dict[str, Any]:
    table = (OPTION_TABLES_DIR / "nvbandwidth-v0.7.txt").read_text()
    return runpy.run_path(str(GPU_STANDIN), init_globals={"MODEL_JSON": FakeGpus().to_json(), "NVBANDWIDTH_TABLE": table},
                          run_name="gpu_standin_under_test")


GPU = _gpu()


@pytest.mark.parametrize("table", TABLES, ids=lambda p: p.name)
def test_every_table_names_its_source(table: Path) -> None:
    first = table.read_text().splitlines()[0]
    assert first.startswith("# ") and "github.com/" in first and "commit" in first and "tag" in first, first


def perftest(argv: str, cuda: bool = True, tool: str = "ib_write_bw") -> tuple[dict[str, str], str | None]:
    return FABRIC._parse_perftest(tool, shlex.split(argv), FABRIC._perftest_table(DOC, cuda))


def test_perftest_takes_the_suites_command_lines() -> None:
    # rdma.py's client: -d -i -p -F, then -s -q --report_gbits -D; RoCE adds --tclass/--sl and --gid-index,
    # GPUDirect --use_cuda=N; the latency test runs with -n
    opts, host = perftest("-d mlx5_0 -i 1 -p 18515 -F --tclass=96 --gid-index=3 --use_cuda=2 -s 8388608 -q 4 "
                          "--report_gbits -D 5 10.0.0.2")
    assert host == "10.0.0.2"
    assert (opts["ib-dev"], opts["ib-port"], opts["size"], opts["qp"], opts["duration"]) == ("mlx5_0", "1", "8388608", "4", "5")
    assert (opts["tclass"], opts["gid-index"], opts["use_cuda"], opts["report_gbits"]) == ("96", "3", "2", "1")
    opts, host = perftest("-d mlx5_1 -i 1 -p 18600 -F --sl=3 -s 2 -n 10000", tool="ib_write_lat")
    assert host is None and (opts["sl"], opts["iters"], opts["size"]) == ("3", "10000", "2")
    # glibc's permutation: the host may come first; a unique prefix of a long option is that option
    opts, host = perftest("10.0.0.2 --report_gbit -s 64K")
    assert host == "10.0.0.2" and "report_gbits" in opts and opts["size"] == "65536"


@pytest.mark.parametrize(("argv", "first_line"), [
    ("--report-gbits", "ib_write_bw: unrecognized option '--report-gbits'"),
    ("-Y 3", "ib_write_bw: invalid option -- 'Y'"),  # ethertype is long-only: 'Y' is not in the optstring
    ("-s", "ib_write_bw: option requires an argument -- 's'"),
    ("--duration", "ib_write_bw: option '--duration' requires an argument"),
    ("--all=yes", "ib_write_bw: option '--all' doesn't allow an argument"),
    ("--re", "ib_write_bw: option '--re' is ambiguous; possibilities: '--report-cycles' '--report-histogrm' "
             "'--report-unsorted' '--report-counters' '--remote_mac' '--remote_ip' '--remote_port' '--report_gbits' "
             "'--report-both' '--reversed' '--retry_count' '--report-per-port' '--reply_every' '--recv_post_list'"),
])
def test_perftest_refuses_as_getopt_long_does(argv: str, first_line: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        perftest(argv)
    assert stop.value.code == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == first_line
    assert err[1:] == [" Invalid Command or flag.", " Please check command line and run again.", "",
                       " Parser function exited with Error"]


def test_perftest_without_cuda_has_no_use_cuda(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        perftest("-d mlx5_0 --use_cuda=0 10.0.0.2", cuda=False)
    assert capsys.readouterr().err.startswith("ib_write_bw: unrecognized option '--use_cuda=0'\n")


@pytest.mark.parametrize(("argv", "message"), [
    ("-q 0", " num of Qps should be between 1 and 16384"),
    ("-p 18x", " Port argument 18x should be int"),
    ("-D 0", " Duration period must be positive"),
    ("-x 65", " Gid index should be between 0 and 64"),
    ("-s 0", " Message Size should be between 1 and 2147483647"),
    ("--use_cuda=-1", " CUDA device must be non-negative int"),
    ("a b", " Invalid Command line. Please check command rerun "),
])
def test_perftest_checks_values_as_its_parser_does(argv: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        perftest(argv)
    assert stop.value.code == 1
    assert capsys.readouterr().err.splitlines() == [message, " Parser function exited with Error"]


class _Node:
    def __init__(self, address: str) -> None:
        self.address = address


def test_mpirun_takes_the_nccl_probes_command_line() -> None:
    command = nccl._command([_Node("10.0.0.1"), _Node("10.0.0.2")], 2**30, 8, "Ring",
                            nccl.Launch(hcas=("mlx5_0:1", "mlx5_1:1"), nccl_env=("NCCL_IB_TC=106",)))
    words = shlex.split(command)
    assert words[0] == "mpirun"
    hosts, np_, _, env, program, given = FABRIC._parse_mpirun(DOC, "mpirun", words[1:])
    assert hosts == [("10.0.0.1", 8), ("10.0.0.2", 8)] and np_ == 16
    assert env["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1" and env["NCCL_ALGO"] == "Ring" and env["NCCL_IB_TC"] == "106"
    assert program[0] == "all_reduce_perf" and "allow-run-as-root" in given and "mca" in given


@pytest.mark.parametrize(("argv", "message"), [
    ("--allow-run-as-rot -np 2 a.out", 'mpirun: Error: unknown option "--allow-run-as-rot"'),
    ("-np", 'mpirun: Error: option "-np" did not have enough parameters (1)'),
    ("--mca btl", 'mpirun: Error: option "--mca" did not have enough parameters (2)'),
    ("-zq a.out", 'mpirun: Error: unknown option "-zq"'),  # split_shorts: 'z' is no short option
])
def test_mpirun_refuses_as_open_mpi_does(argv: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        FABRIC._parse_mpirun(DOC, "mpirun", shlex.split(argv))
    assert stop.value.code == 1
    assert capsys.readouterr().err.splitlines() == [message, "Type 'mpirun --help' for usage."]


def test_mpirun_options_after_the_program_are_the_programs() -> None:
    *_, program, given = FABRIC._parse_mpirun(DOC, "mpirun", ["-np", "1", "all_reduce_perf", "--bogus", "-np", "9"])
    assert program == ["all_reduce_perf", "--bogus", "-np", "9"] and given == {"np"}


def test_nvbandwidth_takes_the_gpu_probes_command_lines() -> None:
    options = GPU["nvbandwidth_table"]()["option"]
    assert GPU["boost_parse"](["-t", "host_to_all_memcpy_ce"], options) == {"testcase": ["host_to_all_memcpy_ce"]}
    assert GPU["boost_parse"](["--testcase=0", "3", "-vj"], options) == {"testcase": ["0", "3"], "verbose": True, "json": True}


@pytest.mark.parametrize("argv", [["--testcases", "x"], ["--version"], ["-i", "many"], ["extra"], ["--test", "x"], ["-t"]])
def test_nvbandwidth_refuses_what_boost_refuses(argv: list[str]) -> None:
    options = GPU["nvbandwidth_table"]()["option"]
    with pytest.raises(GPU["InvalidArguments"]):
        GPU["boost_parse"](argv, options)
