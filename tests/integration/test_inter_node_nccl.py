"""NCCL across nodes against stand-in nccl-tests: corrupted results fail, a crashed rank errors.

Two runs of the real command line on the simulated cluster at once, on nodes of their own,
selecting only the NCCL checks. In the first (node01-04), every all_reduce that includes node03
returns wrong results (``#wrong`` counts, ``Out of bounds values : N FAILED``, exit 1) at full
bandwidth; in the second (node05-07), a rank on node06 crashes after its rows are printed (exit 139).
Bandwidth alone would pass every one of these runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster, SimNode
from simcluster.hardware import FakeHardware, hardware_installed

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-rdma.yaml"


def run(simcluster: SimCluster, work: Path, nodes: list[SimNode], select: str) -> dict[str, Any]:
    inventory = simcluster.write_inventory(work / "inventory.yaml", nodes=nodes)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(PROFILE), "-m", "inter_node",
         "-k", select, "-p", "no:cacheprovider", "--conformance-json", "record.json", "-q", "-rfE"],
        cwd=work, capture_output=True, text=True, timeout=400,
    )
    leftovers = {n.name: simcluster.processes(n) for n in nodes}
    record: dict[str, Any] = json.loads((work / "record.json").read_text())
    record["_stdout"] = result.stdout + result.stderr
    record["_leftovers"] = leftovers
    return record


def checks(record: dict[str, Any], check: str) -> dict[frozenset[str], dict[str, Any]]:
    return {frozenset(c["subject"].split("<->")): c for c in record["checks"] if c["check"] == check}


@pytest.fixture(scope="module")
def nccl_records(simcluster: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Both runs at once under one hardware model, each on nodes of its own (a run locks only its nodes,
    and mostly waits on them): wrong results from node03 on node01-04, a crashed rank on node06 of node05-07."""
    hardware = {"node03": FakeHardware(nccl_fault="wrong"), "node06": FakeHardware(nccl_fault="crash")}
    runs = {"wrong": (simcluster.nodes[:4], "nccl_allreduce or scaling_efficiency"),
            "crash": (simcluster.nodes[4:7], "nccl_allreduce")}
    with hardware_installed(simcluster, hardware), ThreadPoolExecutor(max_workers=len(runs)) as pool:
        done = {name: pool.submit(run, simcluster, tmp_path_factory.mktemp(f"nccl_{name}"), nodes, select)
                for name, (nodes, select) in runs.items()}
        return {name: future.result() for name, future in done.items()}


@pytest.fixture(scope="module")
def wrong_results(nccl_records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return nccl_records["wrong"]


@pytest.fixture(scope="module")
def crashed_rank(nccl_records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return nccl_records["crash"]


def test_wrong_results_fail_every_pair_with_the_node_and_only_those(wrong_results: dict[str, Any]) -> None:
    pairs = checks(wrong_results, "nccl_allreduce")
    assert len(pairs) == 6, wrong_results["_stdout"][-3000:]
    bad = {pair for pair, c in pairs.items() if c["outcome"] != "passed"}
    assert bad == {pair for pair in pairs if "node03" in pair}
    for pair in bad:
        check = pairs[pair]
        # a failure, not an error: the run was measured and the data came back corrupted
        assert check["outcome"] == "failed", check
        assert "returned wrong results" in check["message"] and "Out of bounds values : 2 FAILED" in check["message"]
        assert "wrong elements" in check["message"] and "exit code 1" in check["message"]


def test_scaling_fails_when_its_runs_return_wrong_results(wrong_results: dict[str, Any]) -> None:
    (check,) = checks(wrong_results, "scaling_efficiency").values()
    assert check["outcome"] == "failed", check
    assert "returned wrong results" in check["message"]


def test_a_rank_that_crashes_after_its_rows_is_an_error_naming_node_and_command(crashed_rank: dict[str, Any]) -> None:
    pairs = checks(crashed_rank, "nccl_allreduce")
    assert {pair: c["outcome"] for pair, c in pairs.items()} == {
        frozenset({"node05", "node06"}): "error",
        frozenset({"node06", "node07"}): "error",
        frozenset({"node05", "node07"}): "passed",
    }, crashed_rank["_stdout"][-3000:]
    message = pairs[frozenset({"node05", "node06"})]["message"]
    assert "exited with code 139" in message and "Segmentation fault" in message and "node06" in message
    assert "mpirun --allow-run-as-root" in message and "NCCL_ALGO=Ring" in message
    assert "passwordless SSH" in message


def test_nothing_is_left_running(wrong_results: dict[str, Any], crashed_rank: dict[str, Any]) -> None:
    for record in (wrong_results, crashed_rank):
        assert record["_leftovers"] == {n: [] for n in record["_leftovers"]}
