"""Fixtures for tests that run against the simulated cluster (tests/simcluster).

One 8-node cluster per test session (per xdist worker), shared by every integration test. Tests
that break a node do it through ``break_node``, which restores the node however the test ends, so
the shared cluster is healthy for the next test.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# tests/ must be importable for `simcluster`; pytest's config adds it (pythonpath), but a plain
# `pytest` run from elsewhere would not. Never the repository root: its pytest_fabric/ would
# shadow the installed copy under test.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from simcluster import NodeBreaker, SimCluster, missing_prerequisites  # noqa: E402
from simcluster.slurm import SlurmSim, missing_slurm  # noqa: E402

SIM_NODES = 8
_SIM_FIXTURES = {"simcluster", "sim_inventory", "break_node", "slurm_cluster"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the cluster, so `-m "not simcluster"` deselects them."""
    for item in items:
        if _SIM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.simcluster)


@pytest.fixture(scope="session")
def simcluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    """A running 8-node SimCluster, shared by the whole session; skips where it cannot run."""
    missing = missing_prerequisites()
    if missing:
        pytest.skip("simulated cluster unavailable: " + "; ".join(missing))
    cluster = SimCluster(SIM_NODES, tmp_path_factory.mktemp("simcluster"), name="sim")
    with cluster:
        yield cluster


@pytest.fixture(scope="session")
def slurm_cluster(simcluster: SimCluster) -> Iterator[SlurmSim]:
    """A real Slurm (munged, slurmctld, one slurmd per node) over the session cluster; skips without Slurm."""
    missing = missing_slurm()
    if missing:
        pytest.skip("simulated Slurm unavailable: " + "; ".join(missing))
    with SlurmSim(simcluster) as slurm:
        yield slurm


@pytest.fixture
def sim_inventory(simcluster: SimCluster, tmp_path: Path) -> Path:
    """An inventory YAML for every node of the session cluster, in this test's tmp dir."""
    return simcluster.write_inventory(tmp_path / "inventory.yaml")


@pytest.fixture
def break_node(simcluster: SimCluster) -> Iterator[NodeBreaker]:
    """A NodeBreaker for the session cluster; every touched node is healthy again afterwards."""
    breaker = NodeBreaker(simcluster)
    try:
        yield breaker
    finally:
        breaker.restore_all()
