"""GPUDirect RDMA bandwidth between node pairs, in the pair rounds, each GPU with its nearest NIC
(see :mod:`~pytest_fabric.probes.gpudirect`)."""

from __future__ import annotations

import pytest

from .. import checks
from ..checks import GPUDIRECT_BANDWIDTH_PORTS
from ..cluster import NodePair
from ..fixtures import SpecLookup
from ..probes import affinity, gpudirect, rdma
from ..state import FabricState, get_state
from ..verdict import Measurement
from .affinity import node_topology
from .inter_node import rdma_traffic


def _state(request: pytest.FixtureRequest) -> FabricState:
    state = get_state(request.config)
    assert state is not None  # `spec` skips first when the plugin is not configured
    return state


@pytest.fixture
def gpudirect_bandwidth(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    """ib_write_bw --use_cuda=N from each GPU of one node to the same GPU of the other, over their nearest NICs."""
    settings = spec(checks.GPUDIRECT_BANDWIDTH)
    state = _state(request)
    assert state.cluster is not None
    layer = state.profile.spec("inter_node", "link_layer")
    link_layer = str(getattr(layer, "value", "")) or None
    selected = state.selected_pairs.get("gpudirect_bandwidth")
    round_pairs = [state.cluster.pair(p.a, p.b, p.round, p.slot) for p in state.rounds_index().get(node_pair.round, [])
                   if selected is None or p.id in selected]

    def measure(pair: NodePair) -> Measurement:
        run = rdma.RdmaSettings(size_bytes=int(settings.size.to("B")), qps=settings.qps, repeat=settings.repeat,
                                duration_s=int(settings.duration.to("s")), port=GPUDIRECT_BANDWIDTH_PORTS.port(pair.slot),
                                traffic=rdma_traffic(state))  # the RoCE class and GID every RDMA tool uses
        ports_a, _ = rdma.list_ports(pair.a, link_layer)
        ports_b, _ = rdma.list_ports(pair.b, link_layer)
        return gpudirect.pair_gpudirect(
            pair, run, rails_a=affinity.rails(node_topology(request, pair.a)[0]),
            rails_b=affinity.rails(node_topology(request, pair.b)[0]), ports_a=ports_a, ports_b=ports_b)

    return state.rounds.measure("gpudirect_bandwidth", node_pair, round_pairs or [node_pair], measure)
