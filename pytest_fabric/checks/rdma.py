"""RDMA between nodes (``inter_node.rdma_bandwidth``, ``rdma_latency``, ``aggregate_rdma_bandwidth``,
``gpudirect_bandwidth`` and the outlier checks of the first two): perftest over each pair's rails, a
round of disjoint pairs at once: settings, declarations, how one pair is measured, fixtures.

The runs are :mod:`pytest_fabric.probes.rdma`'s; the rounds, retests, outlier judgement and the
node's ports every pair check shares are :mod:`pytest_fabric.measurements.inter_node`'s, which
measures a pair of this family through the functions registered here
(:func:`~pytest_fabric.measurements.inter_node.pair_check`).  GPUDirect's fixture is
:mod:`pytest_fabric.measurements.gpudirect` (it reads the GPU family's topology).  The family
registers its checks through ``pytest_fabric_checks``, as an extension does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import Field, field_validator, model_validator

from pytest_fabric.checks.base import (
    OUTLIER_RETESTS,
    PHASE_READS_ROUNDS,
    BlameInput,
    Bound,
    Check,
    PortBlock,
)
from pytest_fabric.config.profile import BandwidthFloor, CheckSpec, Outlier, Share
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge.verdict import Measurement, Op
from pytest_fabric.measurements import inter_node as pairs
from pytest_fabric.probes import rdma
from pytest_fabric.run.cluster import NodePair
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.state import FabricState
from pytest_fabric.run.waves import wave

__all__ = [
    "AGGREGATE_RDMA_BANDWIDTH",
    "AGGREGATE_RDMA_BANDWIDTH_PORTS",
    "GPUDIRECT_BANDWIDTH",
    "GPUDIRECT_BANDWIDTH_PORTS",
    "P99_MIN_ITERATIONS",
    "RDMA_BANDWIDTH",
    "RDMA_BANDWIDTH_OUTLIER",
    "RDMA_BANDWIDTH_PORTS",
    "RDMA_LATENCY",
    "RDMA_LATENCY_OUTLIER",
    "RDMA_LATENCY_PORTS",
    "LatencyCeiling",
    "LatencyOutlier",
    "RdmaBandwidth",
    "pytest_fabric_checks",
    "rdma_settings",
]

# ---------------------------------------------------------------------------
# Settings


class RdmaBandwidth(BandwidthFloor):
    size: QuantityField = Field(default_factory=lambda: parse_quantity("8 MiB"))
    qps: int = Field(default=1, ge=1, le=256)
    repeat: int = Field(default=3, ge=1, le=50)
    # perftest -D: each run lasts this long whatever the rail does, so a slow rail ends
    # with its number instead of running its 5000 iterations into the timeout.
    duration: QuantityField = Field(default_factory=lambda: parse_quantity("5 s"))

    @field_validator("duration")
    @classmethod
    def _whole_seconds(cls, value: Quantity) -> Quantity:
        seconds = float(parse_quantity(value, dimension=Dimension.TIME).to("s"))
        if seconds < 1 or seconds != int(seconds):
            raise ValueError(f"{value}: perftest's -D takes whole seconds, at least 1 (e.g. '5 s')")
        return value


#: the fewest ib_write_lat iterations a 99th percentile is read from (100 samples above it)
P99_MIN_ITERATIONS = 10_000


class LatencyCeiling(CheckSpec):
    """``max``: typical latency (perftest's t_typical); ``p99``: its 99% percentile column."""

    BOUNDS = (("max", Op.MAX, Dimension.TIME), ("p99", Op.MAX, Dimension.TIME))
    SCALAR_FIELD = "max"
    max: QuantityField | None = None
    p99: QuantityField | None = None
    size: int = Field(default=2, ge=1)
    repeat: int = Field(default=1, ge=1, le=50)
    # perftest -n; duration mode (-D) prints no percentiles, so latency runs by count.
    iterations: int = Field(default=P99_MIN_ITERATIONS, ge=5, le=100_000_000)

    @model_validator(mode="after")
    def _enough_for_p99(self) -> Any:
        if self.p99 is not None and self.iterations < P99_MIN_ITERATIONS:
            raise ValueError(
                f"iterations: {self.iterations} is too few for a p99 (the 1% above it is "
                f"{self.iterations // 100} samples); give at least {P99_MIN_ITERATIONS}"
            )
        return self


class LatencyOutlier(CheckSpec):
    """Latency that differs between node pairs: a pair this far above the median is a finding."""

    BOUNDS = (("max_above_median", Op.MAX, Dimension.PERCENT),)
    SCALAR_FIELD = "max_above_median"
    max_above_median: QuantityField | None = None


# ---------------------------------------------------------------------------
# Declarations: port blocks as checks/base.py lays them out (256 slots, the retests' offset, a pair's
# rails or GPUs at once taking LANES_PER_SLOT ports a slot, below the ephemeral range)

# attribution: a figure per rail, each rail a series; swept for attribution alone too (its pair is all it needs)
RDMA_BANDWIDTH = Check("rdma_bandwidth", "inter_node", RdmaBandwidth, "node_pair", "round",
                       tools=("ibstat", "ib_write_bw"), ports=PortBlock(18515, 2900),  # rails at once
                       ceiling="port_line", shown_in="Gb/s",
                       blame=BlameInput("Gb/s", parts="rails", swept_unasked=True))
RDMA_LATENCY = Check("rdma_latency", "inter_node", LatencyCeiling, "node_pair", "round",
                     tools=("ibstat", "ib_write_lat"), typical_s=2.0,  # 10,000 iterations a rail
                     ports=PortBlock(21415, 400), one_at_a_time="rails", shown_in="us")
# attribution: a figure per GPU, a series per GPU name (GPU0 of every node crosses the same kind of path);
# read where its rounds ran, never swept for attribution alone (it needs each node's topology and GPUs).
# Bounded by host RDMA between the same two ports: the same perftest from GPU memory, only run-to-run
# noise apart, so 5 % above it is impossible
GPUDIRECT_BANDWIDTH = Check("gpudirect_bandwidth", "inter_node", RdmaBandwidth, "node_pair", "round",
                            tools=("ibstat", "ib_write_bw", "nvidia-smi"),
                            ports=PortBlock(26315, 2900), ceiling="port_line",  # GPUs at once
                            shown_in="Gb/s", blame=BlameInput("Gb/s", parts="gpus", part_name="gpu"),
                            bounded_by=Bound(RDMA_BANDWIDTH.name, "same_ports", tolerance=0.05))
# reads rdma_bandwidth's rails (measured at once) and measures each rail alone, once, one after the
# other: typical_s is one such run at rdma_bandwidth's usual 5 s, its set-up and server start
AGGREGATE_RDMA_BANDWIDTH = Check("aggregate_rdma_bandwidth", "inter_node", Share, "node_pair", "round",
                                 phase=21, typical_s=7.0, ports=PortBlock(29215, 400), one_at_a_time="rails")
RDMA_BANDWIDTH_OUTLIER = Check("rdma_bandwidth_outlier", "inter_node", Outlier, "node_pair", "reads",
                               key="outlier", phase=PHASE_READS_ROUNDS, reads_from=RDMA_BANDWIDTH.name,
                               retests=OUTLIER_RETESTS, needs=("three_pairs",))
RDMA_LATENCY_OUTLIER = Check("rdma_latency_outlier", "inter_node", LatencyOutlier, "node_pair", "reads",
                             key="latency_outlier", phase=PHASE_READS_ROUNDS, reads_from=RDMA_LATENCY.name,
                             retests=OUTLIER_RETESTS, needs=("three_pairs",))

# The blocks the probes take their ports from, by name (the declarations hold them).
RDMA_BANDWIDTH_PORTS: PortBlock = RDMA_BANDWIDTH.ports  # type: ignore[assignment]
RDMA_LATENCY_PORTS: PortBlock = RDMA_LATENCY.ports  # type: ignore[assignment]
GPUDIRECT_BANDWIDTH_PORTS: PortBlock = GPUDIRECT_BANDWIDTH.ports  # type: ignore[assignment]
AGGREGATE_RDMA_BANDWIDTH_PORTS: PortBlock = AGGREGATE_RDMA_BANDWIDTH.ports  # type: ignore[assignment]


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [RDMA_BANDWIDTH, RDMA_LATENCY, GPUDIRECT_BANDWIDTH, AGGREGATE_RDMA_BANDWIDTH, RDMA_BANDWIDTH_OUTLIER,
            RDMA_LATENCY_OUTLIER]


# ---------------------------------------------------------------------------
# One pair


def rdma_settings(
    state: FabricState, *, port: int, repeat: int | None = None, ports: tuple[int, ...] = ()
) -> rdma.RdmaSettings:
    """ib_write_bw as the profile's ``rdma_bandwidth`` sets it (size, QPs, duration, RoCE class);
    ``ports``: one per rail run at once (empty: one rail at a time, on ``port``). The links family's
    oversubscription check measures with them too."""
    spec = pairs.settings_of(state, RDMA_BANDWIDTH)
    return rdma.RdmaSettings(
        size_bytes=int(spec.size.to("B")),
        qps=spec.qps,
        repeat=spec.repeat if repeat is None else repeat,
        duration_s=int(spec.duration.to("s")),
        traffic=pairs.rdma_traffic(state),
        port=port,
        ports=ports,
        corroborate=True,
        witness=state.witnesses,
    )


@pairs.pair_check(RDMA_BANDWIDTH.name)
def measure_bandwidth(state: FabricState, port_offset: int) -> Callable[[NodePair], Measurement]:
    """ib_write_bw over every rail of a pair at once, as the profile's ``rdma_bandwidth`` sets it."""
    link_layer, names, expected = pairs.link_layer_of(state), pairs.port_names(state), pairs.expected_ports(state)

    def measure(pair: NodePair) -> Measurement:
        # every rail at once, each on its own port of the pair's slot (a slot per pair of the round)
        lanes = RDMA_BANDWIDTH_PORTS.lanes(port_offset + pair.slot)
        settings = rdma_settings(state, port=lanes[0], ports=lanes)
        return rdma.pair_bandwidth(pair, settings, link_layer=link_layer, names=names, expected=expected)

    return pairs.charging(measure, "ib_write_bw client")


@pairs.pair_check(RDMA_LATENCY.name)
def measure_latency(state: FabricState, port_offset: int) -> Callable[[NodePair], Measurement]:
    """ib_write_lat rail by rail, as the profile's ``rdma_latency`` sets it."""
    link_layer, names, expected = pairs.link_layer_of(state), pairs.port_names(state), pairs.expected_ports(state)
    lat_spec = pairs.settings_of(state, RDMA_LATENCY)

    def measure(pair: NodePair) -> Measurement:
        settings = rdma.RdmaSettings(
            tool="ib_write_lat",
            size_bytes=lat_spec.size,
            repeat=lat_spec.repeat,
            iterations=lat_spec.iterations,
            traffic=pairs.rdma_traffic(state),
            port=RDMA_LATENCY_PORTS.port(port_offset + pair.slot),
        )
        return rdma.pair_latency(
            pair, settings, link_layer=link_layer, names=names, expected=expected, need_p99=lat_spec.p99 is not None
        )

    return pairs.charging(measure, "ib_write_lat client")


# ---------------------------------------------------------------------------
# Fixtures


@pytest.fixture
def rdma_bandwidth(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    spec(RDMA_BANDWIDTH)
    return pairs.pair_measurement(request, RDMA_BANDWIDTH.name, node_pair)


@pytest.fixture
def rdma_latency(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    spec(RDMA_LATENCY)
    return pairs.pair_measurement(request, RDMA_LATENCY.name, node_pair)


@pytest.fixture
def rdma_bandwidth_outlier(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    spec(RDMA_BANDWIDTH_OUTLIER)
    spec(RDMA_BANDWIDTH)
    return pairs.outlier_measurement(request, RDMA_BANDWIDTH.name, node_pair, lower_is_better=False)


@pytest.fixture
def rdma_latency_outlier(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    spec(RDMA_LATENCY_OUTLIER)
    spec(RDMA_LATENCY)
    return pairs.outlier_measurement(request, RDMA_LATENCY.name, node_pair, lower_is_better=True)


@pytest.fixture
@wave("node_pair")
def aggregate_rdma_bandwidth(request: pytest.FixtureRequest, node_pair: NodePair, spec: SpecLookup) -> Measurement:
    """All rails of a pair at once against the rail count times one rail alone, a round of pairs at once.

    Pairs of a round share no node, so their aggregates run together like any pair check:
    N-1 rounds for ``pairs: all``, not N(N-1)/2 measurements one after another.
    """
    spec(AGGREGATE_RDMA_BANDWIDTH)
    spec(RDMA_BANDWIDTH)
    return _aggregate_rails(request, node_pair)


def _aggregate_rails(request: pytest.FixtureRequest, node_pair: NodePair) -> Measurement:
    # rdma_bandwidth measures every rail at once: its per-rail figures, summed, are the pair's
    # aggregate (read from its round, measured once for both checks); what is measured here is the
    # reference, each rail alone, once, one after the other
    single = pairs.pair_measurement(request, RDMA_BANDWIDTH.name, node_pair)
    rails = single.extra.get("rails", [])
    if len(rails) < 2:
        pytest.skip(f"{node_pair.id} has {len(rails)} rail(s); aggregation needs at least 2")
    a_ports, _ = pairs.node_ports(request, node_pair.a)
    b_ports, _ = pairs.node_ports(request, node_pair.b)
    by_name_a = {p.name: p for p in a_ports}
    by_name_b = {p.name: p for p in b_ports}
    # the rails rdma_bandwidth measured, paired as it paired them (by identity)
    rails_paired = [rdma.Rail(r["a"], r["b"], by_name_a[r["a"]], by_name_b[r["b"]]) for r in rails]
    state = pairs.state_of(request)
    port = AGGREGATE_RDMA_BANDWIDTH_PORTS.port(node_pair.slot)
    alone_each, evidence = rdma.rails_one_by_one(node_pair, rails_paired, rdma_settings(state, port=port, repeat=1), port)
    total = sum(r["gbps"] for r in rails)
    alone = sum(float(q.to("Gb/s")) for q in alone_each)
    each = ", ".join(f"{rail.name} {r['gbps']:.1f} Gb/s (alone {q.display('Gb/s')})" for rail, r, q in zip(rails_paired, rails, alone_each))
    return Measurement(
        value=parse_quantity(f"{total / alone * 100:.4f}%"),
        detail=(
            f"{len(rails_paired)} rails at once: {total:.1f} Gb/s (rdma_bandwidth's figures) vs {alone:.1f} Gb/s as the sum "
            f"of each rail alone ({each})"
        ),
        evidence=tuple(evidence),
    )
