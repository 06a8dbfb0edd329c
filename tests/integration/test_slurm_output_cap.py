"""Under Slurm too, a node's flood of output is kept as its head and tail, whichever way commands run."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from simcluster.slurm import SlurmSim

from pytest_fabric.transport.slurm import SlurmAllocation, SlurmSettings, SlurmTransport

FLOOD = "head -c 3000000 /dev/zero | tr '\\0' x; echo tail-end; exit 4"


@pytest.fixture
def slurm_env(slurm_cluster: SlurmSim, monkeypatch: pytest.MonkeyPatch) -> SlurmSim:
    """Slurm's client commands talk to the simulated cluster, every slurmd up."""
    slurm_cluster.ensure_slurmds()
    monkeypatch.setenv("SLURM_CONF", str(slurm_cluster.conf))
    for name in [k for k in os.environ if k.startswith("SLURM_") and k != "SLURM_CONF"]:
        monkeypatch.delenv(name)
    return slurm_cluster


@pytest.fixture(params=["agent", "per-command"])
def allocation(slurm_env: SlurmSim, request: pytest.FixtureRequest) -> Iterator[SlurmAllocation]:
    alloc = SlurmAllocation(slurm_env.nodes, SlurmSettings(partition="sim", wait_s=10, time_limit_min=10,
                                                           steps=request.param))
    try:
        yield alloc
    finally:
        alloc.release()
        assert slurm_env.jobs() == []


def test_a_flood_is_kept_as_head_and_tail_with_its_exit_code(
    allocation: SlurmAllocation, monkeypatch: pytest.MonkeyPatch
) -> None:
    for where in ("transport.slurm.transport", "transport.slurm.agent_step", "transport.pipes"):
        monkeypatch.setattr(f"pytest_fabric.{where}.KEEP_BYTES", 1000)
    node = SlurmTransport("node02", allocation)
    node.connect()
    result = node.run(FLOOD, timeout=60, check=False)
    assert result.exit_code == 4
    assert len(result.stdout) < 1200, len(result.stdout)
    assert result.stdout.startswith("x" * 400) and result.stdout.endswith("tail-end\n")
    assert "bytes dropped by pytest-fabric" in result.stdout
    server = node.start(FLOOD, timeout=60)
    ended = server.wait(60)
    assert ended.exit_code == 4 and len(ended.stdout) < 1200 and ended.stdout.endswith("tail-end\n")
