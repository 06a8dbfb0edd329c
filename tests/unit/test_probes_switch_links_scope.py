"""switch_links judges only the switch ports facing the inventory's nodes and their leaves' uplinks
(probes/switch_links.in_scope): another tenant's degraded port or leaf uplink fails nobody here."""

from __future__ import annotations

from decimal import Decimal

from simcluster.switches import fabric_scan

from pytest_fabric.parsers.iblinkinfo import parse_iblinkinfo
from pytest_fabric.probes.switch_links import bad_links, in_scope

NODES = [f"node0{i}" for i in range(1, 9)]  # node01-04 on leaf1, node05-08 on leaf2
SCAN = parse_iblinkinfo(fabric_scan(NODES, {("leaf1", 3): ("2X", "53.125"),      # node03's port: ours
                                            ("leaf2", 1): ("4X", "25.78125"),    # node05's: another tenant's
                                            ("leaf2", 41): ("4X", "25.78125")}))  # leaf2's uplink


def _bad(hosts: list[str]) -> tuple[int, int, list[str]]:
    ours, left_out = in_scope(SCAN, hosts)
    judged, bad = bad_links(ours, width=4, rate_gbps=Decimal(200), could_be=True)
    return judged, left_out, [b.ends for b in bad]


def test_the_whole_subnet_is_ours_when_the_inventory_holds_every_node() -> None:
    judged, left_out, bad = _bad(NODES)
    assert (judged, left_out) == (12, 0) and len(bad) == 3


def test_only_the_inventorys_node_ports_and_its_leaves_uplinks_are_judged() -> None:
    judged, left_out, bad = _bad(["node01", "node02", "NODE03.cluster.example", "node04"])
    assert (judged, left_out) == (6, 6)  # 4 node ports + leaf1's 2 uplinks; leaf2's 4 ports and 2 uplinks left out
    assert bad == ["leaf1 (0x08c0eb0300a0b101) port 3 <-> node03 mlx5_0 (LID 13) port 1"]


def test_an_inventory_of_nodes_no_ca_names_judges_nothing() -> None:
    judged, left_out, bad = _bad(["gpu01"])
    assert (judged, left_out, bad) == (0, 12, [])
