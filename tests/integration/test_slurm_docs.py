"""docs/slurm.md's commands, run as written on the simulated Slurm (issue 33): inside an allocation
(`salloc ... pytest --cluster slurm --profile hdr200`) and with an inventory that asks for one. Each
run is cut to two checks with -k (the whole profile takes minutes); what failed was the load.

The bundled `slurm` inventory has no mounts, egress targets or leaf labels: the run goes on, names
those checks as not measured with the command that writes a copy to fill in, and never points into
the installed package. The terminal and the record name the job and its allocation line (sacct)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from simcluster.slurm import SlurmSim

from pytest_fabric.config.bundled import inventories_dir

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
# two checks: one the nodes answer, one the bundled inventory gives nothing to measure
SELECT = ["-k", "gpu_count or sequential_read"]


def _run(slurm: SlurmSim, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**slurm.env, "FABRIC_TEST_CHECKOUT": "1"}
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def _job_named(result: subprocess.CompletedProcess[str], record: Path) -> str:
    out = result.stdout
    assert result.returncode in (0, 1), out[-4000:] + result.stderr[-2000:]  # a verdict, never a usage error
    job = json.loads(record.read_text())["run"]["slurm_job"]
    assert job is not None and job["allocation"], job
    assert f"fabric: slurm job {job['job_id']}: {job['allocation']} (sacct -j {job['job_id']} shows it)" in out
    return out


def test_inside_an_allocation_with_the_bundled_slurm_inventory(slurm_cluster: SlurmSim, tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    # docs: salloc -N 16 -p gpu -A proj42 --exclusive; .venv/bin/pytest --cluster slurm --profile hdr200
    argv = ["salloc", "-N", "2", "-p", "gpu", "-A", "proj42", "--exclusive",
            *PYTEST, "--cluster", "slurm", "--profile", "hdr200", *SELECT, f"--conformance-json={record}"]
    out = _job_named(_run(slurm_cluster, argv, tmp_path), record)
    assert "fabric: not measured with the bundled inventory 'slurm' (listed as not run):" in out
    assert "python -m pytest_fabric.inventories slurm my-slurm.yaml writes a copy to fill in;" in out
    package = str(inventories_dir())
    assert not [line for line in out.splitlines() if package in line and not line.startswith("fabric: cluster slurm from")]
    checks = json.loads(record.read_text())["checks"]
    assert {c["outcome"] for c in checks if c["check"] == "sequential_read"} == {"skipped"}


def test_an_inventory_that_asks_for_its_allocation(slurm_cluster: SlurmSim, tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    nodes = f"{slurm_cluster.nodes[0]},{slurm_cluster.nodes[1]}"
    # docs: slurm: {partition: gpu, account: proj42, nodes: "gpu[001-128]"} (the simulated nodes' names)
    (tmp_path / "gpu-slurm.yaml").write_text(f'slurm: {{partition: gpu, account: proj42, nodes: "{nodes}"}}\n')
    argv = [*PYTEST, "--cluster", "gpu-slurm.yaml", "--profile", "hdr200", "-k", "gpu_count",
            f"--conformance-json={record}"]
    out = _job_named(_run(slurm_cluster, argv, tmp_path), record)
    assert "salloc --no-shell" in out and "--partition=gpu --account=proj42" in out


def test_the_starter_copy_loads_and_says_where_it_is(tmp_path: Path) -> None:
    made = subprocess.run([sys.executable, "-m", "pytest_fabric.inventories", "slurm", "my-slurm.yaml"], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "FABRIC_TEST_CHECKOUT": "1"}, timeout=60)
    assert made.returncode == 0, made.stderr
    assert "wrote my-slurm.yaml" in made.stdout and "--cluster my-slurm.yaml" in made.stdout
    text = (tmp_path / "my-slurm.yaml").read_text()
    assert "allocation: current" in text and "#   mounts:" in text and "data_address" in text
    again = subprocess.run([sys.executable, "-m", "pytest_fabric.inventories", "slurm", "my-slurm.yaml"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "exists" in again.stderr
