"""NCCL between nodes (``inter_node.nccl_allreduce``, ``inter_node.scaling_efficiency``): all_reduce_perf
over each pair's GPUs, a round of disjoint pairs at once, and the bus bandwidth at 4, 8, ... all nodes
against the two-node figure: declarations, how one pair is measured, fixtures.

The launch is :mod:`pytest_fabric.probes.nccl` (mpirun, the HCAs and RoCE class NCCL is told); the
rounds, retests and attribution every pair check shares are
:mod:`pytest_fabric.measurements.inter_node`'s, which measures a pair of this family through the
function registered here (:func:`~pytest_fabric.measurements.inter_node.pair_check`).  The settings
model, :class:`~pytest_fabric.config.profile.NcclBandwidth`, is the GPU family's NCCL inside a node's
too (checks/gpu.py), so it stays with the profile's shared models.  The family registers its checks
through ``pytest_fabric_checks``, as an extension does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_fabric.checks.base import BlameInput, Bound, Check
from pytest_fabric.checks.rdma import RDMA_BANDWIDTH
from pytest_fabric.config.profile import NcclBandwidth, Share
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.measurements import cross_checked
from pytest_fabric.measurements import inter_node as pairs
from pytest_fabric.probes import nccl
from pytest_fabric.run.cluster import Cluster, NodePair
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.state import FabricState
from pytest_fabric.run.waves import whole_round

__all__ = ["NCCL_ALLREDUCE", "SCALING_EFFICIENCY", "nccl_allreduce", "pytest_fabric_checks", "scaling_efficiency"]

#: attribution: one figure a pair, no direction (a ring has no sender), GB/s busbw; read where its rounds
#: ran, never swept for attribution alone. Bounded by the sum of the pair's rails (NCCL_ALGO=Ring crosses
#: the network through the node's HCAs): NCCL's ring moves its payload plus a few per cent of protocol
#: (LL128 flags, chunk headers) and perftest's figure is one run of each rail, so 10 % above the rails'
#: sum is beyond both; a ring that carries under half what its rails can is held back by something that
#: is not the rails (a finding, no fault)
NCCL_ALLREDUCE = Check("nccl_allreduce", "inter_node", NcclBandwidth, "node_pair", "round",
                       tools=("mpirun", "all_reduce_perf"), typical_s=60.0,  # sweep up to 8-16 GiB
                       ceiling="all_rails", allreduce="pair", blame=BlameInput("GB/s", directed=False),
                       bounded_by=Bound(RDMA_BANDWIDTH.name, "rails_sum", tolerance=0.10, below=0.5))
SCALING_EFFICIENCY = Check("scaling_efficiency", "inter_node", Share, "cluster", "cluster", phase=26,
                           typical_s=300.0,  # NCCL at 2, 4, 8, ... nodes, three runs each
                           needs=("three_nodes",), allreduce="scaling", sized_by=NCCL_ALLREDUCE.name)


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [NCCL_ALLREDUCE, SCALING_EFFICIENCY]


@pairs.pair_check(NCCL_ALLREDUCE.name)
def measure_nccl(state: FabricState, port_offset: int) -> Callable[[NodePair], Measurement]:
    """How to measure one pair with the profile's ``nccl_allreduce`` settings: one launch from the pair's
    first node over both nodes' GPUs (NCCL picks its own ports: ``port_offset`` plays no part)."""
    nccl_spec = pairs.settings_of(state, NCCL_ALLREDUCE)

    def measure(pair: NodePair) -> Measurement:
        return nccl.allreduce([pair.a, pair.b], size_bytes=int(nccl_spec.size.to("B")),
                              gpus_per_node=pairs.gpus_per_node(state), launch=pairs.nccl_launch(state, [pair.a, pair.b]))

    return pairs.charging_launch(measure)


@pytest.fixture
def nccl_allreduce(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    spec(NCCL_ALLREDUCE)
    measured = pairs.pair_measurement(request, NCCL_ALLREDUCE.name, node_pair)
    return cross_checked.bounded(pairs.state_of(request), NCCL_ALLREDUCE, node_pair, measured, pairs.measure_function,
                                 whole=whole_round(request.config))


@pytest.fixture
def scaling_efficiency(request: pytest.FixtureRequest, cluster: Cluster, spec: SpecLookup) -> Measurement:
    """NCCL bus bandwidth at 4, 8, ... all nodes against the two-node figure (see :func:`nccl.scaling`)."""
    spec(SCALING_EFFICIENCY)
    nccl_spec = spec(NCCL_ALLREDUCE)
    state = pairs.state_of(request)
    nodes = cluster.nodes
    if len(nodes) < nccl.SCALING_MIN_NODES:
        pytest.skip(f"scaling needs at least {nccl.SCALING_MIN_NODES} nodes; the inventory has {len(nodes)}")
    return nccl.scaling(nodes, size_bytes=int(nccl_spec.size.to("B")), gpus_per_node=pairs.gpus_per_node(state),
                        launch=pairs.nccl_launch(state, list(nodes)))
