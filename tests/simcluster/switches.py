"""A fake InfiniBand subnet for the simulated cluster: what ``iblinkinfo`` prints for it.

Two leaf switches (the first half of the nodes on ``leaf1``, the rest on ``leaf2``), one spine,
two uplinks from each leaf, each node's HCA ``mlx5_0`` cabled to its leaf. Links run 4X HDR
(53.125 Gbps per lane) unless ``degraded`` says otherwise; a degraded link gets iblinkinfo's
``( Could be ...)`` note, as the real tool prints when both ends support more::

    text = fabric_scan(nodes, degraded={("leaf2", 41): ("4X", "25.78125"), ("leaf1", 3): ("2X", "53.125")})
    install_fabric_scan(cluster, text)   # the iblinkinfo stand-in prints it when run without -D
    ...
    uninstall_fabric_scan(cluster)

The port lines follow the recorded iblinkinfo in shared/corpus/iblinkinfo.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from simcluster.cluster import SimCluster

__all__ = ["SCAN_FILE", "fabric_scan", "install_fabric_scan", "uninstall_fabric_scan"]

SCAN_FILE = "iblinkinfo-fabric.txt"  # beside the fabric stand-in (standins/fabric_standin.py reads it)
_HDR = ("4X", "53.125")
_LIDS = {"leaf1": 101, "leaf2": 102, "spine1": 103}
_GUIDS = {"leaf1": "0x08c0eb0300a0b101", "leaf2": "0x08c0eb0300a0b102", "spine1": "0x08c0eb0300a0b103"}
UPLINKS = {("leaf1", 41): ("spine1", 1), ("leaf1", 42): ("spine1", 2),
           ("leaf2", 41): ("spine1", 3), ("leaf2", 42): ("spine1", 4)}


def _line(lid: int, port: int, link: tuple[str, str], peer_lid: int, peer_port: int, peer: str) -> str:
    width, speed = link
    note = "" if link == _HDR else f"Could be {_HDR[0] + ' ' if width != _HDR[0] else ''}{_HDR[1]} Gbps"
    return (f"{lid:>12} {port:>4}[  ] ==( {width} {speed + ' Gbps':>18} Active/  LinkUp)==> "
            f"{peer_lid:>6} {peer_port:>4}[  ] \"{peer}\" ( {note})")


def fabric_scan(nodes: Sequence[str], degraded: Mapping[tuple[str, int], tuple[str, str]] | None = None) -> str:
    """iblinkinfo's output for the subnet; ``degraded`` maps (switch, port) to (width, lane speed)."""
    degraded = dict(degraded or {})
    half = (len(nodes) + 1) // 2
    hosts = {("leaf1" if i < half else "leaf2", (i if i < half else i - half) + 1): (node, 11 + i)
             for i, node in enumerate(nodes)}
    lines: list[str] = []
    for switch in ("leaf1", "leaf2"):
        lines.append(f"Switch: {_GUIDS[switch]} {switch}:")
        for (leaf, port), (node, lid) in sorted(hosts.items()):
            if leaf == switch:
                lines.append(_line(_LIDS[switch], port, degraded.get((switch, port), _HDR), lid, 1, f"{node} mlx5_0"))
        for (leaf, port), (spine, spine_port) in sorted(UPLINKS.items()):
            if leaf == switch:
                link = degraded.get((leaf, port)) or degraded.get((spine, spine_port)) or _HDR
                lines.append(_line(_LIDS[leaf], port, link, _LIDS[spine], spine_port, spine))
        lines.append(f"{_LIDS[switch]:>12} {48:>4}[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )")
    lines.append(f"Switch: {_GUIDS['spine1']} spine1:")
    for (leaf, port), (spine, spine_port) in sorted(UPLINKS.items(), key=lambda kv: kv[1]):
        link = degraded.get((leaf, port)) or degraded.get((spine, spine_port)) or _HDR
        lines.append(_line(_LIDS[spine], spine_port, link, _LIDS[leaf], port, leaf))
    return "\n".join(lines) + "\n"


def install_fabric_scan(cluster: SimCluster, text: str) -> None:
    """Every node's iblinkinfo (the fabric stand-in) prints ``text`` when run without ``-D``."""
    for node in cluster.nodes:
        (node.bindir / SCAN_FILE).write_text(text)


def uninstall_fabric_scan(cluster: SimCluster) -> None:
    for node in cluster.nodes:
        (node.bindir / SCAN_FILE).unlink(missing_ok=True)
