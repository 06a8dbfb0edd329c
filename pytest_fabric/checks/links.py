"""Links of the fabric (``inter_node.switch_links``, ``inter_node.oversubscription``): the switch links
of the InfiniBand fabric, once for the cluster, from one node (see :mod:`~pytest_fabric.probes.switch_links`),
and the spine under load, cross-leaf pairs alone and all at once (with the RDMA family's settings where
the profile sets them, else TCP's): settings, declarations and fixtures.

The node's own ports and links (``link_layer``, ``ports``, ``port_state``, ``port_rate``, ``mtu``,
``roce``, ``error_counters``) are still declared in checks/base.py with their fixtures in
measurements/inter_node.py: the pair checks read them.  The family registers its checks through
``pytest_fabric_checks``, as an extension does.
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
from pytest_fabric.config.profile import Finding, Share
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge import consistency
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.measurements import inter_node as pairs
from pytest_fabric.probes import rdma as rdma_probe
from pytest_fabric.probes import switch_links as probe
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import Cluster, NodeHandle, NodePair
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.pairs import circle_rounds
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.transport.base import NodeUnreachable

__all__ = ["OVERSUBSCRIPTION", "OVERSUBSCRIPTION_PORTS", "SWITCH_LINKS", "SwitchLinks", "oversubscription",
           "pytest_fabric_checks", "switch_links"]

#: bad links named in the message; the record's extra keeps them all
SHOWN = 20


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


#: iblinkinfo on one node only: not a tool every node needs
SWITCH_LINKS = Check("switch_links", "inter_node", SwitchLinks, "cluster", "cluster", needs=("infiniband",))
#: after the pair rounds (it reads their figures), a slot of 16 rails a crossing pair in its port block
OVERSUBSCRIPTION = Check("oversubscription", "inter_node", Share, "cluster", "cluster", phase=25,
                         typical_s=60.0, ports=PortBlock(22115, 4200), needs=("leaves",))
#: the block the crossing pairs' ib_write_bw servers listen on
OVERSUBSCRIPTION_PORTS: PortBlock = OVERSUBSCRIPTION.ports  # type: ignore[assignment]


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [SWITCH_LINKS, OVERSUBSCRIPTION]


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
