"""Inter-node measurements: TCP throughput between pairs, MTU per node."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from ..cluster import NodeHandle, NodePair
from ..probes import netdev, tcp
from ..state import get_state
from ..verdict import Measurement


def _round_pairs(request: pytest.FixtureRequest, check: str, pair: NodePair) -> list[NodePair]:
    """The selected pairs of ``pair``'s round: measured together, each link loaded once."""
    state = get_state(request.config)
    assert state is not None and state.cluster is not None
    selected = state.selected_pairs.get(check)
    return [
        state.cluster.pair(p.a, p.b, p.round, p.slot)
        for p in state.pairs
        if p.round == pair.round and (selected is None or p.id in selected)
    ]


@pytest.fixture
def tcp_throughput(request: pytest.FixtureRequest, node_pair: NodePair, spec: Callable[[str], Any]) -> Measurement:
    """iperf3 from ``node_pair.a`` to ``node_pair.b``; the whole round runs at once."""
    settings = spec("inter_node.tcp_throughput")
    state = get_state(request.config)
    assert state is not None
    need_line = settings.min is not None and settings.min.is_line_share

    def measure(pair: NodePair) -> Measurement:
        # Pairs of a round run at once: give each its own port range.
        port = 5201 + pair.slot * settings.processes
        return tcp.measure_pair(
            pair,
            tcp.TcpSettings(
                streams=settings.streams,
                duration_s=float(settings.duration.to("s")),
                processes=settings.processes,
                port=port,
            ),
            need_line_rate=need_line,
        )

    return state.rounds.measure("tcp_throughput", node_pair, _round_pairs(request, "tcp_throughput", node_pair), measure)


@pytest.fixture
def mtu(node: NodeHandle, spec: Callable[[str], Any]) -> Measurement:
    """The MTU of the interface that carries the node's data address."""
    spec("inter_node.mtu")
    return netdev.mtu(node)
