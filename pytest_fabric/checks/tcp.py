"""TCP between nodes (``inter_node.tcp_throughput``): iperf3 from each pair's first node to its
second, a round of disjoint pairs at once, and how far each pair sits from the others
(``tcp_throughput_outlier``): settings, declarations, how one pair is measured, fixtures.

The pair's run is :mod:`pytest_fabric.probes.tcp`; the rounds, retests and outlier judgement every
pair check shares are :mod:`pytest_fabric.measurements.inter_node`'s, which measures a pair of this
family through the function registered here (:func:`~pytest_fabric.measurements.inter_node.pair_check`).
The family registers its checks through ``pytest_fabric_checks``, as an extension does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import Field

from pytest_fabric.checks.base import (
    OUTLIER_RETESTS,
    PHASE_READS_ROUNDS,
    BlameInput,
    Bound,
    Check,
    PortBlock,
)
from pytest_fabric.checks.rdma import RDMA_BANDWIDTH
from pytest_fabric.config.profile import BandwidthFloor, Outlier
from pytest_fabric.config.units import QuantityField, parse_quantity
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.measurements import cross_checked
from pytest_fabric.measurements import inter_node as pairs
from pytest_fabric.probes import tcp
from pytest_fabric.run.cluster import NodePair
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.state import FabricState
from pytest_fabric.run.waves import whole_round

__all__ = ["TCP_THROUGHPUT", "TCP_THROUGHPUT_OUTLIER", "TCP_THROUGHPUT_PORTS", "TcpThroughput",
           "pytest_fabric_checks", "tcp_throughput", "tcp_throughput_outlier"]


class TcpThroughput(BandwidthFloor):
    streams: int = Field(default=4, ge=1, le=128)
    duration: QuantityField = Field(default_factory=lambda: parse_quantity("10 s"))
    processes: int = Field(default=1, ge=1, le=64)  # iperf3 < 3.16 is single-threaded: one per port


# Port blocks leave room for 256 slots (512 nodes) and the retests' offset (100 slots), below the
# kernel's ephemeral range (checks/base.py). start_s: an iperf3 pair is its server's start, a
# readiness poll (50 ms steps) and the client's connect and result exchange, a few round trips: 0.14 s
# beyond -t on 8 quiet simulated nodes (benchmarks/bench_plan_accuracy.py, 2 s runs taking 2.14 s a
# round), 0.25 s with a real network's. Attribution: one figure a pair, sender first (iperf3's client
# sends), swept for attribution alone too. Bounded by host RDMA on the port under its netdev: TCP's payload
# is a smaller share of the wire than RDMA's (IP and TCP headers, IPoIB's 4 bytes), so 5 % above the
# port's RDMA figure is beyond any run-to-run difference.
TCP_THROUGHPUT = Check("tcp_throughput", "inter_node", TcpThroughput, "node_pair", "round",
                       tools=("iperf3",), start_s=0.25, ports=PortBlock(5201, 1400), ceiling="port_line",
                       shown_in="Gb/s", blame=BlameInput("Gb/s", swept_unasked=True),
                       bounded_by=Bound(RDMA_BANDWIDTH.name, "port_under", tolerance=0.05))
TCP_THROUGHPUT_OUTLIER = Check("tcp_throughput_outlier", "inter_node", Outlier, "node_pair", "reads",
                               key="outlier", phase=PHASE_READS_ROUNDS, reads_from=TCP_THROUGHPUT.name,
                               retests=OUTLIER_RETESTS, needs=("three_pairs",))
#: the block iperf3's servers listen on (a pair's slot, times its processes; retests and
#: oversubscription at an offset)
TCP_THROUGHPUT_PORTS: PortBlock = TCP_THROUGHPUT.ports  # type: ignore[assignment]


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [TCP_THROUGHPUT, TCP_THROUGHPUT_OUTLIER]


@pairs.pair_check(TCP_THROUGHPUT.name)
def measure_tcp(state: FabricState, port_offset: int) -> Callable[[NodePair], Measurement]:
    """How to measure one pair with the profile's ``tcp_throughput`` settings (iperf3, corroborated)."""
    tcp_spec = pairs.settings_of(state, TCP_THROUGHPUT)
    need_line = tcp_spec.min is not None and tcp_spec.min.is_line_share

    def measure(pair: NodePair) -> Measurement:
        settings = tcp.TcpSettings(
            streams=tcp_spec.streams,
            duration_s=float(tcp_spec.duration.to("s")),
            processes=tcp_spec.processes,
            port=TCP_THROUGHPUT_PORTS.port(port_offset + pair.slot * tcp_spec.processes),
            corroborate=True,
            witness=state.witnesses,
        )
        return tcp.measure_pair(pair, settings, need_line_rate=need_line, once=state.once,
                                floor=f"{TCP_THROUGHPUT.profile_key}.min")

    return pairs.charging(measure, "iperf3 client")


@pytest.fixture
def tcp_throughput(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    """iperf3 from ``node_pair.a`` to ``node_pair.b``; the whole round runs at once."""
    spec(TCP_THROUGHPUT)
    measured = pairs.pair_measurement(request, TCP_THROUGHPUT.name, node_pair)
    return cross_checked.bounded(pairs.state_of(request), TCP_THROUGHPUT, node_pair, measured, pairs.measure_function,
                                 whole=whole_round(request.config))


@pytest.fixture
def tcp_throughput_outlier(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    spec(TCP_THROUGHPUT_OUTLIER)
    spec(TCP_THROUGHPUT)
    return pairs.outlier_measurement(request, TCP_THROUGHPUT.name, node_pair, lower_is_better=False)
