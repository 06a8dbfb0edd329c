"""GPUDirect RDMA bandwidth between node pairs, in the pair rounds, each GPU with its nearest NIC
(see :mod:`~pytest_fabric.probes.gpudirect`). A round is batched like every pair check's
(:func:`~pytest_fabric.run.waves.wave` over ``node_pair``): the selected pairs of the test's round at
once, the whole round under ``--lf``."""

from __future__ import annotations

import pytest

from pytest_fabric.checks.gpu import node_gpus, node_topology
from pytest_fabric.checks.rdma import GPUDIRECT_BANDWIDTH, GPUDIRECT_BANDWIDTH_PORTS
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.measurements import cross_checked
from pytest_fabric.measurements.inter_node import measure_function, node_ports, rdma_traffic
from pytest_fabric.parsers.base import ParseError
from pytest_fabric.probes import affinity, gpudirect, rdma
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.run.waves import wave, whole_round
from pytest_fabric.transport.base import TransportError


def _state(request: pytest.FixtureRequest) -> FabricState:
    state = get_state(request.config)
    assert state is not None  # `spec` skips first when the plugin is not configured
    return state


@wave("node_pair")
def gpudirect_bandwidth(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    """ib_write_bw from each GPU of one node (named by its bus id) to the same GPU of the other, over their nearest NICs."""
    settings = spec(GPUDIRECT_BANDWIDTH)
    state = _state(request)
    run = rdma.RdmaSettings(size_bytes=int(settings.size.to("B")), qps=settings.qps, repeat=settings.repeat,
                            duration_s=int(settings.duration.to("s")), port=GPUDIRECT_BANDWIDTH_PORTS.port(node_pair.slot),
                            ports=GPUDIRECT_BANDWIDTH_PORTS.lanes(node_pair.slot),  # every GPU at once, a port each
                            traffic=rdma_traffic(state))  # the RoCE class and GID every RDMA tool uses
    ports_a, _ = node_ports(request, node_pair.a)
    ports_b, _ = node_ports(request, node_pair.b)
    return gpudirect.pair_gpudirect(
        node_pair, run, rails_a=affinity.rails(node_topology(request, node_pair.a)[0]),
        rails_b=affinity.rails(node_topology(request, node_pair.b)[0]), ports_a=ports_a, ports_b=ports_b,
        bus_ids_a=_bus_ids(request, node_pair.a), bus_ids_b=_bus_ids(request, node_pair.b))


_measure_pair = gpudirect_bandwidth  # the wave: its round measured at once, the check named after it


@pytest.fixture(name="gpudirect_bandwidth")
def _gpudirect_cross_checked(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    """The pair's GPUDirect figures (after its whole round), each held to host RDMA between the same ports."""
    measured = _measure_pair(request=request, node_pair=node_pair, spec=spec)
    return cross_checked.bounded(_state(request), GPUDIRECT_BANDWIDTH, node_pair, measured, measure_function,
                                 whole=whole_round(request.config))


def _bus_ids(request: pytest.FixtureRequest, node: NodeHandle) -> dict[str, str]:
    """``GPU3`` (topo -m's name, nvidia-smi's index) -> its PCI bus id, from the node's GPU inventory
    (read once per run); empty where it cannot be read (the GPUs are then named by index, and said)."""
    try:
        inventory = node_gpus(request, node)
    except (TransportError, ParseError):
        return {}
    return {f"GPU{gpu.index}": gpu.bus_id for gpu in inventory.report.gpus if gpu.bus_id}
