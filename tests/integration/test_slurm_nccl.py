"""GPUs in the allocation and NCCL launched the Slurm way, on a real Slurm with real MPI.

The simulated Slurm gives each node ``Gres=gpu:8`` (gres.conf device files, select/cons_tres);
the nodes run Debian's Open MPI and an ``all_reduce_perf`` that is a real MPI program
(tests/simcluster/mpi.py), which records the ranks and hosts MPI gave it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster
from simcluster.hardware import FakeHardware, hardware_installed
from simcluster.mpi import missing_mpi, mpi_installed, runs
from simcluster.slurm import SlurmSim

from pytest_fabric.transport.base import TransportError
from pytest_fabric.transport.slurm import SlurmAllocation, SlurmSettings, SlurmTransport

PROFILE = """\
name: sim-slurm-nccl
extends: base
intra_node:
  gpu_count: 2
inter_node:
  link_layer: infiniband
  ports: 4
  nccl_allreduce: {min: 80 GB/s, size: 1 GiB}  # of 4 x 25 GB/s: what a 4-port HDR node carries
  pairs: all
"""


@pytest.fixture
def slurm_env(slurm_cluster: SlurmSim, monkeypatch: pytest.MonkeyPatch) -> SlurmSim:
    """Slurm's client commands talk to the simulated cluster, every slurmd up."""
    slurm_cluster.ensure_slurmds()
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    for name in [k for k in os.environ if k.startswith("SLURM_") and k != "SLURM_CONF"]:
        monkeypatch.delenv(name)
    return slurm_cluster


@pytest.fixture
def mpi(simcluster: SimCluster) -> SimCluster:
    missing = missing_mpi()
    if missing:
        pytest.skip("real MPI unavailable on the simulated nodes: " + "; ".join(missing))
    return simcluster


def _allocation(nodes: list[str], **settings: Any) -> SlurmAllocation:
    return SlurmAllocation(nodes, SlurmSettings(partition="sim", wait_s=10, time_limit_min=10, **settings))


@pytest.fixture
def released(slurm_env: SlurmSim) -> Iterator[list[SlurmAllocation]]:
    made: list[SlurmAllocation] = []
    yield made
    for allocation in made:
        allocation.release()
    assert slurm_env.jobs() == []


# ----------------------------------------------------------------- GPUs in the allocation


@pytest.mark.parametrize("request_as", ["auto", "gres"])
def test_the_allocation_asks_for_the_profiles_gpus(slurm_env: SlurmSim, released: list[SlurmAllocation],
                                                   request_as: str) -> None:
    allocation = _allocation(slurm_env.nodes[:2], gpus_per_node=8, gpu_request=request_as)
    released.append(allocation)
    step = SlurmTransport("node01", allocation)
    step.connect()
    shown = slurm_env.run(["scontrol", "show", "job", "-d", str(allocation.job_id)]).stdout
    assert "TresPerNode=gres:gpu:8" in shown, shown
    assert "GRES=gpu:8(IDX:0-7)" in shown, shown
    # A step of the job sees the job's GPUs (Slurm sets CUDA_VISIBLE_DEVICES from gres.conf's files).
    assert step.run("echo $CUDA_VISIBLE_DEVICES", timeout=20).stdout.strip() == "0,1,2,3,4,5,6,7"


def test_more_gpus_than_slurm_gives_refuses_before_anything_runs(slurm_env: SlurmSim,
                                                                 released: list[SlurmAllocation]) -> None:
    allocation = _allocation(slurm_env.nodes[:2], gpus_per_node=16)
    released.append(allocation)
    with pytest.raises(TransportError) as refused:
        SlurmTransport("node02", allocation).connect()
    message = str(refused.value)
    assert "Slurm gives node01 8 GPUs (sinfo -o %G: gpu:8), the profile expects 16 per node (gpu_count)" in message
    assert allocation.job_id is None  # nothing was asked of salloc


# ----------------------------------------------------------------- NCCL launched by Slurm


def _run(simcluster: SimCluster, slurm: SlurmSim, work: Path, slurm_extra: dict[str, Any]) -> dict[str, Any]:
    profile = work / "profile.yaml"
    profile.write_text(PROFILE)
    inventory = slurm.write_inventory(work / "inventory.yaml", nodes=slurm.nodes[:2],
                                      extra={"slurm": {"partition": "sim", "wait": 10, "time": 10, **slurm_extra}})
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile), "-m", "inter_node",
         "-k", "nccl_allreduce", "-p", "no:cacheprovider", "--conformance-json", "record.json", "-q", "-rfE"],
        cwd=work, capture_output=True, text=True, timeout=400, env={**os.environ, "SLURM_CONF": str(slurm.conf)},
    )
    record: dict[str, Any] = json.loads((work / "record.json").read_text())
    record["_stdout"] = result.stdout + result.stderr
    record["_runs"] = runs(simcluster)
    (check,) = [c for c in record["checks"] if c["check"] == "nccl_allreduce"]
    record["_check"] = check
    return record


@pytest.fixture
def two_gpu_nodes(mpi: SimCluster) -> Iterator[SimCluster]:
    with hardware_installed(mpi, {n.name: FakeHardware(gpus=2) for n in mpi.nodes}):
        yield mpi


@pytest.mark.parametrize(("setting", "launcher", "command"), [
    ({}, "srun", "--mpi=pmix -N 2 -n 4 --ntasks-per-node=2 -w node01,node02"),
    # Forced: mpirun inside the job, its daemons started by srun as steps beside the one it runs in.
    ({"mpi": "none"}, "mpirun", "OMPI_MCA_plm_slurm_args=--overlap; mpirun --allow-run-as-root -H node01:2,node02:2"),
])
def test_nccl_runs_one_job_across_the_nodes(two_gpu_nodes: SimCluster, slurm_env: SlurmSim, tmp_path: Path,
                                            setting: dict[str, Any], launcher: str, command: str) -> None:
    with mpi_installed(two_gpu_nodes):
        record = _run(two_gpu_nodes, slurm_env, tmp_path, setting)
    check = record["_check"]
    assert check["outcome"] == "passed", record["_stdout"][-3000:]
    (seen,) = record["_runs"]
    assert seen["launcher"] == launcher and seen["ranks"] == 4 and seen["allreduce_ok"]
    assert seen["hosts"] == ["node01", "node01", "node02", "node02"]
    evidence = json.dumps(check)
    assert command in evidence
    assert slurm_env.jobs() == []


def test_a_launch_that_is_not_one_job_errors_naming_the_ranks(two_gpu_nodes: SimCluster, slurm_env: SlurmSim,
                                                              tmp_path: Path) -> None:
    """nccl-tests built without MPI=1: srun starts four one-rank runs, each printing its own table."""
    with mpi_installed(two_gpu_nodes, built_with_mpi=False):
        record = _run(two_gpu_nodes, slurm_env, tmp_path, {})
    check = record["_check"]
    assert check["outcome"] == "error", record["_stdout"][-3000:]
    assert "did not start one job across the nodes" in check["message"], check["message"]
    assert "expected 4: 2 on each of node01, node02" in check["message"]
    assert "srun --jobid=" in check["message"] and "slurm: {mpi: none}" in check["message"]


# ----------------------------------------------------------------- the stand-in's options


@pytest.mark.parametrize(("args", "said"), [
    (["--bogus"], "unrecognized option '--bogus'"),
    (["-q"], "invalid option -- 'q'"),
    (["-b"], "option requires an argument -- 'b'"),
    (["--help=1"], "option '--help' doesn't allow an argument"),
    (["--d", "float"], "option '--d' is ambiguous; possibilities: '--datatype' '--device_implementation' "
                       "'--device_cta_count'"),
])
def test_the_mpi_stand_in_refuses_what_nccl_tests_refuses(tmp_path: Path, args: list[str], said: str) -> None:
    """As nccl-tests 2.17: glibc's line on stderr, "invalid option '?'" and the usage, exit 0, nothing run."""
    from simcluster.mpi import OPTION_TABLE, STANDIN

    program = tmp_path / "all_reduce_perf"
    program.write_text(STANDIN.read_text())
    (tmp_path / "nccl-tests-options.txt").write_text(OPTION_TABLE.read_text())
    done = subprocess.run(["/usr/bin/python3", str(program), *args], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    assert done.stderr == f"{program}: {said}\n"
    assert done.stdout.startswith("invalid option '?'\nUSAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n\t")
    assert "# nThread" not in done.stdout and not (tmp_path / "nccl-mpi-runs.jsonl").exists()


def test_the_mpi_stand_in_takes_what_nccl_tests_takes(tmp_path: Path) -> None:
    """Prefixes of long names, --name=value, -b8 and -hb: the usage for -h, no refusal."""
    from simcluster.mpi import OPTION_TABLE, STANDIN

    program = tmp_path / "all_reduce_perf"
    program.write_text(STANDIN.read_text())
    (tmp_path / "nccl-tests-options.txt").write_text(OPTION_TABLE.read_text())
    done = subprocess.run(["/usr/bin/python3", str(program), "--minb=8", "--maxbytes", "16", "-f2", "-hb", "8"],
                          capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("USAGE: all_reduce_perf \n")
