"""Ports and links (``inter_node.*``): each node's RDMA ports and links, the switch links of the
InfiniBand fabric and the spine under load: settings, declarations and fixtures.

Per node: ``link_layer``, ``ports``, ``mtu``, ``roce``; per port (``node01:mlx5_0``): ``port_state``,
``port_rate``, ``error_counters`` (growth during the run, from a reading before any traffic, last of
the run).  The profile's settings of ``link_layer``, ``ports`` and ``roce`` are its word on the
hardware, which the pair families read through the run's registry (``Check.states``,
``CheckRegistry.statement``), not from this module: they register before it.  Once for the cluster:
``switch_links`` (iblinkinfo from one node, see :mod:`~pytest_fabric.probes.switch_links`) and
``oversubscription``, cross-leaf pairs alone and all at once (with the RDMA family's settings where
the profile sets them, else TCP's).  The family registers its checks through ``pytest_fabric_checks``,
as an extension does.
"""

from __future__ import annotations

import statistics
from decimal import Decimal
from typing import Any

import pytest
from pydantic import Field, field_validator

from pytest_fabric.checks.base import Check, PortBlock
from pytest_fabric.checks.rdma import RDMA_BANDWIDTH, rdma_settings
from pytest_fabric.checks.tcp import TCP_THROUGHPUT
from pytest_fabric.config.profile import (
    CheckSpec,
    Count,
    Finding,
    Ports,
    Roce,
    Share,
    Text,
)
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge import consistency
from pytest_fabric.judge.verdict import Measurement, Op
from pytest_fabric.measurements import inter_node as pairs
from pytest_fabric.probes import counters, netdev, qos
from pytest_fabric.probes import rdma as rdma_probe
from pytest_fabric.probes import switch_links as probe
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run import batches
from pytest_fabric.run.cluster import Cluster, NodeHandle, NodePair
from pytest_fabric.run.fixtures import HcaHandle, SpecLookup
from pytest_fabric.run.pairs import circle_rounds
from pytest_fabric.run.state import CHECK_KEY, FabricState, get_state
from pytest_fabric.run.waves import wave
from pytest_fabric.transport.base import NodeUnreachable

__all__ = ["ERROR_COUNTERS", "LINK_LAYER", "MTU", "OVERSUBSCRIPTION", "OVERSUBSCRIPTION_PORTS", "PORTS", "PORT_RATE",
           "PORT_STATE", "ROCE", "SWITCH_LINKS", "ErrorCounters", "Mtu", "PortRate", "SwitchLinks", "error_counters",
           "link_layer", "mtu", "oversubscription", "port_rate", "port_state", "ports", "pytest_fabric_checks", "roce",
           "switch_links"]

#: bad links named in the message; the record's extra keeps them all
SHOWN = 20


class Mtu(Count):
    """The node's active MTU (``mtu: 4096``: exactly that; ``mtu: {min: 2048}``: at least)."""


class PortRate(CheckSpec):
    BOUNDS = (("min", Op.MIN, Dimension.BANDWIDTH),)
    min: QuantityField | None = None


class ErrorCounters(CheckSpec):
    """``max``: growth of the fault counters (link downed, link error recovery, link integrity,
    malformed or misrouted packets; RoCE sequence errors and frame errors other than CRC and
    symbol errors), summed over both ends of the link.  ``symbol_errors_per_hour`` and
    ``receive_errors_per_hour``: the bit errors a link within its BER has a few of (symbol
    errors; packets received corrupt), per link (both ends) per hour of the run, judged by the
    lower 95% confidence limit of the rate (probes/counters.py ``rate``); unset, each is 0: none
    may grow, as faults.  ``congestion_max``: the growth each congestion counter
    (PortXmitDiscards, PortXmitWait; RoCE discards) may show, since the suite's own load provokes
    them; unset, they are reported and not judged.  ``both_ends``: also read the port at the
    other end of an InfiniBand cable (the switch port facing the HCA)."""

    BOUNDS = (
        ("max", Op.MAX, Dimension.COUNT),
        ("symbol_errors_per_hour", Op.MAX, Dimension.COUNT),
        ("receive_errors_per_hour", Op.MAX, Dimension.COUNT),
        ("congestion_max", Op.MAX, Dimension.COUNT),
    )
    SCALAR_FIELD = "max"
    max: QuantityField | None = None
    symbol_errors_per_hour: QuantityField | None = Field(default_factory=lambda: parse_quantity(0))
    receive_errors_per_hour: QuantityField | None = Field(default_factory=lambda: parse_quantity(0))
    congestion_max: QuantityField | None = None
    both_ends: bool = True


class SwitchLinks(Finding):
    """``iblinkinfo`` from one node: every switch port with a peer at ``width`` lanes and ``rate``,
    and no "Could be" hint (a link trained below what both ends support) unless ``could_be: false``."""

    width: int | None = Field(default=None, ge=1, le=12)  # lanes: 4 for 4X
    rate: QuantityField | None = None  # per link, lanes x lane rate: 400 Gb/s for 4X NDR
    could_be: bool = True
    node: str | None = None  # where iblinkinfo runs; the first reachable node by default

    @field_validator("rate")
    @classmethod
    def _rate(cls, value: Quantity | None) -> Quantity | None:
        return None if value is None else parse_quantity(value, dimension=Dimension.BANDWIDTH)


#: error counters last: they see the growth caused by all the traffic of the run
PHASE_LAST = 99

LINK_LAYER = Check("link_layer", "inter_node", Text, "node", "wave", tools=("ibstat",), states="link_layer")
PORTS = Check("ports", "inter_node", Ports, "node", "wave", tools=("ibstat",), states="rails")
PORT_STATE = Check("port_state", "inter_node", Text, "hca", "wave", tools=("ibstat",))
PORT_RATE = Check("port_rate", "inter_node", PortRate, "hca", "wave", tools=("ibstat",))
ROCE = Check("roce", "inter_node", Roce, "node", "wave", tools=("mlnx_qos",), states="roce")
MTU = Check("mtu", "inter_node", Mtu, "node", "wave")
ERROR_COUNTERS = Check("error_counters", "inter_node", ErrorCounters, "hca", "wave", phase=PHASE_LAST,
                       tools_by_link_layer={"infiniband": ("perfquery",), "ethernet": ("rdma", "ethtool")})
#: iblinkinfo on one node only: not a tool every node needs
SWITCH_LINKS = Check("switch_links", "inter_node", SwitchLinks, "cluster", "cluster", needs=("infiniband",))
#: after the pair rounds (it reads their figures), a slot of 16 rails a crossing pair in its port block
OVERSUBSCRIPTION = Check("oversubscription", "inter_node", Share, "cluster", "cluster", phase=25,
                         typical_s=60.0, ports=PortBlock(22115, 4200), needs=("leaves",))
#: the block the crossing pairs' ib_write_bw servers listen on
OVERSUBSCRIPTION_PORTS: PortBlock = OVERSUBSCRIPTION.ports  # type: ignore[assignment]


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [LINK_LAYER, PORTS, PORT_STATE, PORT_RATE, ROCE, MTU, ERROR_COUNTERS, SWITCH_LINKS, OVERSUBSCRIPTION]


def _same_node(state: FabricState, hca: HcaHandle) -> batches.Share:
    """One node's ports take turns in a wave: the first lists the node's ports, the others reuse it."""
    return batches.Share(f"{hca.node.name}'s ports", 1)


def _hca_port(request: pytest.FixtureRequest, hca: HcaHandle) -> tuple[rdma_probe.RdmaPort | None, Measurement | None]:
    ports, evidence = pairs.node_ports(request, hca.node)
    state = pairs.state_of(request)
    if isinstance(hca.index, str):
        named = next((p for p in ports if p.name == hca.index), None)
        if named is not None:
            return named, None
        where = "the inventory lists it under rdma_ports" if hca.node.spec.rdma_ports else "the profile names it under ports.names"
        return None, Measurement.absent(
            f"{hca.node.name} has no RDMA port {hca.index} (it reports {', '.join(p.name for p in ports) or 'none'}); {where}",
            tuple(evidence),
        )
    if hca.index < len(ports):
        return ports[hca.index], None
    layer = pairs.link_layer_of(state)
    kind = f"{layer} " if layer else ""
    return None, Measurement.absent(
        f"{hca.node.name} has {len(ports)} {kind}RDMA port(s) ({', '.join(p.name for p in ports) or 'none'}); "
        f"profile {state.profile.name} expects {pairs.expected_ports(state)}",
        tuple(evidence),
    )


@pytest.fixture
@wave("node")
def link_layer(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    spec(LINK_LAYER)
    ports, evidence = rdma_probe.list_ports(node, None)
    if not ports:
        return Measurement.absent(f"{node.name} reports no RDMA ports (ibstat lists none)", tuple(evidence))
    counts: dict[str, int] = {}
    for port in ports:
        counts[port.link_layer] = counts.get(port.link_layer, 0) + 1
    text = ", ".join(f"{layer} x{count}" for layer, count in sorted(counts.items()))
    return Measurement(value=text, detail=", ".join(f"{p.name}: {p.link_layer}" for p in ports), evidence=tuple(evidence))


@pytest.fixture
@wave("node")
def ports(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """Active ports among those the inventory or profile names, else among all of the link layer.

    Named ports must each be there and Active; ports nobody named (a storage HCA) are
    listed but not judged.
    """
    spec(PORTS)
    state = pairs.state_of(request)
    found, evidence = pairs.node_ports(request, node)
    detail = ", ".join(f"{p.name} {p.state}/{p.physical_state} {p.rate_gbps} Gb/s" for p in found) or "no ports"
    named = tuple(node.spec.rdma_ports) or pairs.port_names(state)
    if not named:
        active = [p for p in found if p.state.lower() == "active"]
        return Measurement(value=parse_quantity(len(active)), detail=f"active: {len(active)} of {len(found)} ({detail})", evidence=tuple(evidence))
    by_name = {p.name: p for p in found}
    where = "the inventory's rdma_ports" if node.spec.rdma_ports else "the profile's ports.names"
    problems = [
        f"{name} is not there" if name not in by_name else f"{name} is {by_name[name].state} ({by_name[name].physical_state})"
        for name in named
        if name not in by_name or by_name[name].state.lower() != "active"
    ]
    unjudged = [p.name for p in found if p.name not in named]
    aside = f"; not named, not judged: {', '.join(unjudged)}" if unjudged else ""
    if problems:
        return Measurement.absent(f"of the ports {where} names, {'; '.join(problems)} ({detail})", tuple(evidence))
    return Measurement(
        value=parse_quantity(len(named)),
        detail=f"all {len(named)} ports {where} names are Active ({detail}){aside}",
        evidence=tuple(evidence),
    )


@pytest.fixture
@wave("hca", shares=_same_node)
def port_state(request: pytest.FixtureRequest, hca: HcaHandle, spec: SpecLookup) -> Measurement:
    spec(PORT_STATE)
    port, absent = _hca_port(request, hca)
    if absent is not None:
        return absent
    assert port is not None
    return Measurement(value=f"{port.state} ({port.physical_state})", detail=f"{port.name} on {hca.node.name}")


@pytest.fixture
@wave("hca", shares=_same_node)
def port_rate(request: pytest.FixtureRequest, hca: HcaHandle, spec: SpecLookup) -> Measurement:
    spec(PORT_RATE)
    port, absent = _hca_port(request, hca)
    if absent is not None:
        return absent
    assert port is not None
    return Measurement(value=port.rate, detail=f"{port.name} on {hca.node.name} reports Rate {port.rate_gbps} ({port.state})")


#: once per node, before any traffic: (device, port) -> its error counters, or why they could not be read
_Baseline = dict[tuple[str, int], counters.PortCounters | Exception]
_BASELINE = "error counters before any traffic"


@pytest.fixture(scope="session", autouse=True)
def _error_counter_baseline(request: pytest.FixtureRequest) -> None:
    """Read every port's error counters before any traffic, so the check judges growth during this run."""
    state = get_state(request.config)
    settings = state.profile.spec_of(ERROR_COUNTERS) if state is not None else None
    if state is None or settings is None:
        return
    if not any(
        (info := item.stash.get(CHECK_KEY, None)) is not None and info.check == ERROR_COUNTERS.name
        for item in request.session.items
    ):
        return
    cluster: Cluster = request.getfixturevalue("cluster")
    layer = pairs.link_layer_of(state)
    both_ends = settings.both_ends

    def read(node: NodeHandle) -> _Baseline:
        ports, _ = rdma_probe.list_ports(node, layer)  # an error: each port's test reports it (no baseline, no verdict)
        readings: _Baseline = {}
        for port in ports:
            try:
                readings[(port.device, port.port)] = counters.read_port(
                    node, port.device, port.port, infiniband=port.link_layer.lower() == "infiniband", both_ends=both_ends
                )
            except Exception as exc:  # that port's test reports it
                readings[(port.device, port.port)] = exc
        return readings

    def snapshot(node: NodeHandle) -> None:
        try:
            state.once.get(_BASELINE, node.name, lambda: read(node))
        except Exception:  # kept: the node's port tests report it
            pass

    state.batches.fan_out(cluster.nodes, snapshot)



def _lossless_priorities(state: FabricState) -> tuple[int, ...]:
    roce_spec = state.profile.spec_of(ROCE)
    return tuple(roce_spec.pfc_priorities or ()) if roce_spec is not None else ()


@pytest.fixture
@wave("hca", shares=_same_node)
def error_counters(request: pytest.FixtureRequest, hca: HcaHandle, spec: SpecLookup) -> Measurement:
    settings = spec(ERROR_COUNTERS)
    port, absent = _hca_port(request, hca)
    if absent is not None:
        return absent
    assert port is not None
    state = pairs.state_of(request)
    before: counters.PortCounters | Exception | None
    try:  # read before any traffic, never now (peek computes nothing)
        baseline: _Baseline | None = state.once.peek(_BASELINE, hca.node.name)
        before = None if baseline is None else baseline.get((port.device, port.port))
    except Exception as exc:  # the node's ports could not be listed then
        before = exc
    if before is None or isinstance(before, BaseException):
        return counters.measurement(before, counters.PortCounters(hca.node.name, port.name, True, ()))
    now = counters.read_port(hca.node, port.device, port.port, infiniband=port.link_layer.lower() == "infiniband",
                             both_ends=settings.both_ends)
    return counters.measurement(before, now, lossless_priorities=_lossless_priorities(state))


@pytest.fixture
@wave("node")
def mtu(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """InfiniBand: the smallest active MTU of the node's IB ports.  Otherwise: the data interface's MTU."""
    spec(MTU)
    state = pairs.state_of(request)
    if (pairs.link_layer_of(state) or "").lower() != "infiniband":
        return netdev.mtu(node, state.once)
    found, evidence = pairs.node_ports(request, node)
    active = [p for p in found if p.state.lower() == "active" and p.active_mtu]
    if not active:
        raise MeasurementError(node.name, "no active InfiniBand port reports an active MTU", command="ibv_devinfo")
    smallest = min(active, key=lambda p: p.active_mtu or 0)
    listing = ", ".join(f"{p.name} {p.active_mtu}" for p in active)
    return Measurement(value=parse_quantity(smallest.active_mtu), detail=f"IB active MTU: {listing}", evidence=tuple(evidence))


@pytest.fixture
@wave("node")
def roce(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    settings = spec(ROCE)
    ports, _ = pairs.node_ports(request, node)
    # IPoIB netdevs of InfiniBand ports have no PFC or ECN: only Ethernet (RoCE) ports count.
    roce_ports = [(p.device, p.port) for p in ports if p.link_layer.lower() == "ethernet"]
    # ECN on the lossless priorities; with no PFC priority named, on every priority.
    ecn_priorities = (list(settings.pfc_priorities) or list(range(8))) if settings.ecn is not None else []
    return qos.roce_settings(node, ecn_priorities=ecn_priorities, roce_ports=roce_ports)


def _runner(cluster: Cluster, wanted: str | None) -> NodeHandle:
    """The node iblinkinfo runs on: the profile's ``node``, else the first one that answers."""
    if wanted is not None:
        return cluster.node(wanted)
    failures = []
    for node in cluster.nodes:
        try:
            _ = node.transport  # connects, or raises the node's remembered error at once
            return node
        except NodeUnreachable as exc:
            failures.append(exc)
    raise failures[0] if failures else RuntimeError("the inventory has no nodes")


@pytest.fixture
def switch_links(request: pytest.FixtureRequest, cluster: Cluster, spec: SpecLookup) -> Measurement:
    """Every switch port facing the inventory's nodes, and their leaves' uplinks, at the profile's width and
    rate, without a "Could be" hint."""
    settings = spec(SWITCH_LINKS)
    state = get_state(request.config)
    layer = state.profile.spec("inter_node", "link_layer") if state is not None else None
    if str(getattr(layer, "value", "")).lower() == "ethernet":
        pytest.skip("switch_links reads an InfiniBand subnet (iblinkinfo); this profile's link_layer is ethernet")
    if settings.node is not None and settings.node not in {n.name for n in cluster.nodes}:
        raise ValueError(f"inter_node.switch_links.node: {settings.node} is not in the inventory")
    node = _runner(cluster, settings.node)
    ports, result = probe.read_links(node)
    rate = Decimal(str(settings.rate.to("Gb/s"))) if settings.rate is not None else None
    hosts = {h for n in cluster.nodes for h in (n.name, n.spec.host)}
    ours, left_out = probe.in_scope(ports, hosts)
    judged, bad = probe.bad_links(ours, width=settings.width, rate_gbps=rate, could_be=settings.could_be)
    extra = {"switch_links": {"from": node.name, "links": judged, "bad": [str(b) for b in bad], "not_judged": left_out}}
    if not judged:
        return Measurement.absent(
            f"iblinkinfo on {node.name} shows no switch port facing the inventory's nodes (a CA's node description "
            f"starts with its host name: cat /sys/class/infiniband/*/node_desc on a node; rdma-ndd sets it); "
            f"{left_out} other link(s) not judged", (result,))
    others = f"; {left_out} link(s) of other nodes and switches not judged" if left_out else ""
    if bad:
        shown = "; ".join(str(b) for b in bad[:SHOWN]) + (f"; and {len(bad) - SHOWN} more" if len(bad) > SHOWN else "")
        return Measurement(value="degraded", evidence=(result,), extra=extra,
                           detail=f"{len(bad)} of {judged} switch links bad (iblinkinfo on {node.name}): {shown}{others}")
    return Measurement(value="ok", evidence=(result,), extra=extra,
                       detail=f"all {judged} switch links as expected (iblinkinfo on {node.name}){others}")


# ---------------------------------------------------------------------------
# The spine under load: cross-leaf pairs alone and all at once


def _leaf_rounds(leaves: dict[str, list[NodeHandle]]) -> list[list[NodePair]]:
    """Every pair of leaves, in rounds where each leaf is in one leaf pair: the nodes of the
    two leaves pair off one to one, so every node of the round sends across the spine at once."""
    rounds = []
    for leaf_round in circle_rounds(sorted(leaves)):
        crossing: list[NodePair] = []
        for first, second in leaf_round:
            for a, b in zip(leaves[first], leaves[second]):
                crossing.append(NodePair(a, b, 0, len(crossing)))
        if crossing:
            rounds.append(crossing)
    return rounds


#: crossing pairs measured alone, one after another, in a leaf round where the sweep has no figure of
#: their own: a median needs three, and the crossing pairs of one leaf round are alike (the same two
#: leaves, the same rails), so three stand for all of them: 3 x D a leaf round, not one run per pair
ALONE_SAMPLE = 3


def _sweep_figures(state: FabricState, check: str) -> dict[frozenset[str], float]:
    """Each pair's own figure from the sweep (bit/s), where it measured what oversubscription offers.

    TCP: the pair's iperf3 figure, the same run oversubscription makes. RDMA: the pair's rails
    summed, only where the sweep ran every one of them at once (``extra["rails_at_once"]``, the
    rails run together, is the rail count); rails run in turns do not offer what every rail at
    once does (a host path shared by the rails caps only the latter). Only when the check's own tests are in the run: its rounds are
    measured for them anyway (read through the once cache), never for this check alone.
    """
    if not state.selected(check, "node_pair"):
        return {}
    names = {p.id: (p.a, p.b) for p in state.pairs}
    figures: dict[frozenset[str], float] = {}
    for key, measured in pairs.all_pair_measurements(state, check).items():
        if not isinstance(measured, Measurement) or not isinstance(measured.value, Quantity) or key not in names:
            continue
        if check == TCP_THROUGHPUT.name:
            figures[frozenset(names[key])] = float(measured.value.value)
        elif (rails := measured.extra.get("rails")) and int(measured.extra.get("rails_at_once") or 0) >= len(rails):
            figures[frozenset(names[key])] = sum(float(r["gbps"]) for r in rails) * 1e9
    return figures


@pytest.fixture
def oversubscription(request: pytest.FixtureRequest, cluster: Cluster, spec: SpecLookup) -> Measurement:
    """Cross-leaf pairs, each offering its full bandwidth (every rail at once), alone and then all
    at once, for every pair of leaves; the worst round is judged.

    Alone is each pair's own figure from the sweep where it has one (:func:`_sweep_figures`),
    else the median of :data:`ALONE_SAMPLE` crossing pairs measured alone one after another. All
    at once is one batch under ``--fabric-fanout`` (fanout // 2 pairs: the cap counts nodes); a
    leaf round with more crossing pairs than that loads the spine with fewer, and says so.
    """
    spec(OVERSUBSCRIPTION)
    state = pairs.state_of(request)
    leaves: dict[str, list[NodeHandle]] = {}
    for node in cluster.nodes:
        leaf = node.labels.get("leaf")
        if leaf:
            leaves.setdefault(leaf, []).append(node)
    if len(leaves) < 2:
        pytest.skip("oversubscription needs nodes labelled with at least two `leaf` values in the inventory")
    # every rail at once where the profile sets RDMA, else TCP (a pair's iperf3, at an offset in its block)
    use_rdma = state.profile.spec_of(RDMA_BANDWIDTH) is not None
    check = RDMA_BANDWIDTH.name if use_rdma else TCP_THROUGHPUT.name
    link_layer, names, expected = pairs.link_layer_of(state), pairs.port_names(state), pairs.expected_ports(state)
    tcp_measure = None if use_rdma else pairs.measure_function(state, check, port_offset=200)
    # a pair's rails use consecutive ports from its slot's block
    block = 16

    def full(pair: NodePair) -> tuple[float, int, list[Any]]:
        """bit/s with every usable rail at once, the rail count, the evidence."""
        if tcp_measure is not None:
            measured = tcp_measure(pair)
            return float(measured.value.value), 1, list(measured.evidence)  # type: ignore[union-attr]
        rails, evidence = rdma_probe.pair_rails(pair, link_layer, names, expected)
        usable = [r for r in rails if r.problem is None][:block]
        if not usable:
            raise MeasurementError(
                pair.a.name, f"{pair.id} has no rail to load the spine with: {'; '.join(str(r.problem) for r in rails)}",
                command="ibstat",
            )
        base = OVERSUBSCRIPTION_PORTS.port(pair.slot * block)
        rates, more = rdma_probe.rails_at_once(pair, usable, rdma_settings(state, port=base, repeat=1), base)
        return sum(float(q.value) for q in rates), len(usable), evidence + more

    sweep = _sweep_figures(state, check)
    at_once = max(1, state.batches.fanout // 2)
    results = []
    evidence: list[Any] = []
    for crossing in _leaf_rounds(leaves):
        batch = crossing[:at_once]
        own = {id(p): sweep.get(frozenset((p.a.name, p.b.name))) for p in batch}
        # alone means the spine idle: the sample runs one pair after another
        sampled = {id(p): full(p) for p in [p for p in batch if own[id(p)] is None][:ALONE_SAMPLE]}
        stand_in = statistics.median(v for v, _, _ in sampled.values()) if sampled else 0.0
        alone_values = [
            own_figure if (own_figure := own[id(p)]) is not None else sampled[id(p)][0] if id(p) in sampled else stand_in
            for p in batch
        ]
        together = state.batches.fan_out(batch, full)
        together_values = [v for v, _, _ in together]
        evidence += [e for _, _, ev in [*sampled.values(), *together] for e in ev]
        leaf_pairs = sorted({f"{p.a.labels['leaf']}<->{p.b.labels['leaf']}" for p in crossing})
        from_sweep = sum(f is not None for f in own.values())
        how = [f"{from_sweep} from the sweep"] if from_sweep else []
        how += [f"{len(sampled)} measured alone one after another"] if sampled else []
        standing = len(batch) - from_sweep - len(sampled)
        how += [f"{standing} taken as their median"] if standing else []
        partial = (
            f" ({len(batch)} of {len(crossing)} at once: --fabric-fanout {state.batches.fanout} counts nodes; "
            f"{2 * len(crossing)} loads the spine with every one of them)"
            if len(batch) < len(crossing) else ""
        )
        results.append((
            consistency.concurrency_ratio(alone_values, together_values),
            f"{', '.join(leaf_pairs)}: {len(batch)} cross-leaf pairs{partial} ({check}, "
            f"{sum(r for _, r, _ in together)} rails at once): "
            f"{sum(together_values) / 1e9:.1f} Gb/s all at once vs {sum(alone_values) / 1e9:.1f} Gb/s summed alone "
            f"({', '.join(how)})",
        ))
    worst = min(results, key=lambda r: r[0])
    others = [text for ratio, text in results if text != worst[1]]
    detail = worst[1] + (f"; other rounds: {'; '.join(others)}" if others else "")
    return Measurement(value=parse_quantity(f"{worst[0] * 100:.4f}%"), detail=detail, evidence=tuple(evidence))
