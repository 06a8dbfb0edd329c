"""`python -m simcluster` as docs/simulated-cluster.md tells a newcomer to use it: start a cluster
with Slurm and a profile's hardware, run the documented pytest command, set faults from another
shell and run bundled profiles through `run` (issue 33). One lab of 2 nodes with Slurm, ~70 s in all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from simcluster import missing_prerequisites
from simcluster.slurm import missing_slurm

TESTS = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(TESTS), "FABRIC_TEST_CHECKOUT": "1"}


def simcluster(workdir: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "simcluster", "--workdir", str(workdir), *args], env=_env(),
                          capture_output=True, text=True, timeout=timeout, cwd=workdir.parent)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    missing = missing_prerequisites() + missing_slurm()
    if missing:
        pytest.skip("simulated cluster with Slurm unavailable: " + "; ".join(missing))
    workdir = tmp_path_factory.mktemp("lab") / "sim"
    up = subprocess.Popen([sys.executable, "-m", "simcluster", "--workdir", str(workdir), "up", "--nodes", "2",
                           "--slurm", "--hardware", "hdr200"], env=_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        assert up.stdout is not None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            line = up.stdout.readline()
            lines.append(line)
            if not line or "Ctrl-C or SIGTERM tears it down" in line:
                break
        assert (workdir / "lab.json").exists(), "".join(lines)
        yield workdir
    finally:
        up.send_signal(signal.SIGTERM)
        out, _ = up.communicate(timeout=120)
        assert up.returncode == 0, "".join(lines) + out
        assert "tearing down" in out and not (workdir / "lab.json").exists()


def test_the_documented_command_passes_on_the_cluster_up_started(lab: Path) -> None:
    # docs/simulated-cluster.md: `pytest --cluster /tmp/fabric-sim/inventory.yaml --profile localhost`
    result = subprocess.run([sys.executable, "-m", "pytest", "--cluster", str(lab / "inventory.yaml"),
                             "--profile", "localhost", "-p", "no:cacheprovider"], env=_env(),
                            capture_output=True, text=True, timeout=300, cwd=lab.parent)
    assert result.returncode == 0 and "ACCEPT" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]


def test_a_fault_set_from_the_command_line_fails_its_check_and_restore_undoes_it(lab: Path) -> None:
    said = simcluster(lab, "fault", "port-rate", "node02", "100")
    assert said.returncode == 0 and "node02: mlx5_0 trained at 100 Gb/s" in said.stdout, said.stderr
    try:
        failed = simcluster(lab, "run", "--profile", "hdr200", "-p", "no:cacheprovider", "-k", "port_rate")
        assert failed.returncode == 1, failed.stdout[-3000:]
        assert "FAILED conformance/inter_node/test_ports.py::test_port_rate[node02:port0]" in failed.stdout
        assert "1 failed, 7 passed" in failed.stdout
    finally:
        restored = simcluster(lab, "fault", "restore", "node02")
        assert restored.returncode == 0 and "node02: restored" in restored.stdout, restored.stderr


def test_a_bundled_profile_runs_through_slurm(lab: Path) -> None:
    result = simcluster(lab, "run", "--slurm", "--profile", "hdr200", "-p", "no:cacheprovider", "-k", "gpu_count")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "fabric: slurm: the allocation asks for whole nodes" in result.stdout
    assert "INCOMPLETE: 0 failed, 0 errored" in result.stdout and "2 passed" in result.stdout


def test_a_fault_needs_a_running_lab_and_a_known_node(lab: Path, tmp_path: Path) -> None:
    unknown = simcluster(lab, "fault", "shape", "node09", "100")
    assert unknown.returncode == 1 and "no node 'node09'" in unknown.stderr
    nothing = simcluster(tmp_path / "none", "fault", "shape", "node01", "100")
    assert nothing.returncode == 2 and "python -m simcluster up" in nothing.stderr
    listed = simcluster(lab, "faults")
    for name in ("shape", "mtu", "stop-sshd", "port-rate", "symbol-errors", "slow-cable", "pcie-only-pair", "ofed", "drain"):
        assert f"fault {name} " in listed.stdout
