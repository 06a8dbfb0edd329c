"""Links of the fabric (``inter_node.switch_links``): the switch links of the InfiniBand fabric, once
for the cluster, from one node (see :mod:`~pytest_fabric.probes.switch_links`): settings, declaration
and fixture.

The node's own ports and links (``link_layer``, ``ports``, ``port_state``, ``port_rate``, ``mtu``,
``roce``, ``error_counters``) are still declared in checks/base.py with their fixtures in
measurements/inter_node.py: the pair checks read them.  The family registers its checks through
``pytest_fabric_checks``, as an extension does.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pydantic import Field, field_validator

from pytest_fabric.checks.base import Check
from pytest_fabric.config.profile import Finding
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.probes import switch_links as probe
from pytest_fabric.run.cluster import Cluster, NodeHandle
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.state import get_state
from pytest_fabric.transport.base import NodeUnreachable

__all__ = ["SWITCH_LINKS", "SwitchLinks", "pytest_fabric_checks", "switch_links"]

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


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [SWITCH_LINKS]


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
