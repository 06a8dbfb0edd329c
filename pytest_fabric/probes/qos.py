"""RoCE lossless settings of a node's RoCE netdevs: trust mode and PFC (mlnx_qos), ECN (sysfs).

Only the netdevs of RoCE ports count: ibdev2netdev also lists the IPoIB netdevs of
InfiniBand ports (ib0, ...), which have no PFC or ECN to judge.  Every RoCE netdev is
read; when they agree the node's value is theirs, and when they differ the value names
each netdev with its own setting, so one misconfigured port fails the node by name
instead of being hidden behind a good one.

ECN is on for a priority when both MLNX_OFED switches are: ``ecn/roce_np/enable/<prio>``
(the notification point: the receiver sends CNPs for marked packets) and
``ecn/roce_rp/enable/<prio>`` (the reaction point: the sender slows down on a CNP).
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers import ibdev2netdev, mlnx_qos
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill, join

__all__ = ["roce_settings", "ECN_ROLES"]

ECN_ROLES = ("roce_np", "roce_rp")


def _ecn(node: NodeHandle, netdev: str, priorities: list[int]) -> tuple[str, CommandResult]:
    """``on`` when every ECN switch of every priority reads 1, else ``off (...which are 0)``."""
    paths = [
        f"/sys/class/net/{netdev}/ecn/{role}/enable/{prio}"
        for prio in priorities
        for role in ECN_ROLES
    ]
    result = node.run(
        "grep -H . " + join(paths), timeout=15, check=False
    )
    values: dict[str, str] = {}
    for line in result.stdout.splitlines():
        path, sep, value = line.rpartition(":")
        if sep:
            values[path] = value.strip()
    missing = [p for p in paths if p not in values]
    if missing:
        raise MeasurementError(
            node.name,
            f"cannot read ECN of {netdev}: {missing[0]} "
            + ((result.stderr or "").strip()[-200:] or "is missing"),
            command=result.command,
            fix="these are MLNX_OFED's per-priority ECN switches; check that the driver exposes them "
            "(ls /sys/class/net/IFACE/ecn) or drop `ecn` from the profile's roce check",
        )
    off = [p.split("/ecn/", 1)[1] for p in paths if values[p] != "1"]
    return ("on" if not off else f"off ({', '.join(off)} not 1)"), result


def _combine(per_netdev: dict[str, str]) -> str:
    """The shared value, or every netdev with its own when they differ."""
    distinct = set(per_netdev.values())
    if len(distinct) == 1:
        return distinct.pop()
    return (
        "; ".join(f"{netdev}: {value}" for netdev, value in per_netdev.items()) + " (ports differ)"
    )


def roce_settings(
    node: NodeHandle,
    *,
    ecn_priorities: list[int],
    roce_ports: Iterable[tuple[str, int]] | None = None,
) -> Measurement:
    """Trust mode, PFC priorities and (when asked) ECN of every RoCE netdev of the node.

    ``roce_ports``: the (device, port) pairs whose link layer is Ethernet; None reads every
    netdev ibdev2netdev lists that does not look like IPoIB (``ib*``).
    """
    mapping_result = node.run("ibdev2netdev", timeout=30)
    entries = parse_or_raise(ibdev2netdev.parse_ibdev2netdev, mapping_result)
    if roce_ports is not None:
        wanted = set(roce_ports)
        netdevs = [e.netdev for e in entries if (e.device, e.port) in wanted]
        unmapped = sorted(f"{d}/{p}" for d, p in wanted - {(e.device, e.port) for e in entries})
        if unmapped:
            raise MeasurementError(
                node.name,
                f"ibdev2netdev names no netdev for RoCE port(s) {', '.join(unmapped)}",
                command=mapping_result.command,
                fix="check the RoCE ports' drivers (ip link)",
            )
    else:
        netdevs = [e.netdev for e in entries if not e.netdev.startswith("ib")]
    netdevs = list(dict.fromkeys(netdevs))  # a netdev shared by two ports (bonding) is read once
    if not netdevs:
        raise MeasurementError(
            node.name,
            "no RoCE netdev to read (ibdev2netdev lists none on an Ethernet port)",
            command=mapping_result.command,
            fix="check that the node's RDMA ports run RoCE (ibstat 'Link layer')",
        )
    evidence: list[CommandResult] = [mapping_result]
    trust: dict[str, str] = {}
    pfc: dict[str, str] = {}
    ecn: dict[str, str] = {}
    warned: list[str] = []
    for netdev in netdevs:
        result = node.run(fill("mlnx_qos -i {netdev}", netdev=netdev), timeout=30)
        evidence.append(result)
        qos = parse_or_raise(mlnx_qos.parse_mlnx_qos, result)
        trust[netdev] = (qos.trust or "unknown").lower()
        pfc[netdev] = ",".join(str(p) for p in sorted(qos.pfc_priorities)) or "none"
        # lldpad running may rewrite these settings after they were read: say so beside them.
        warned += [f"mlnx_qos on {netdev} warned: {w}" for w in qos.warnings]
        if ecn_priorities:
            ecn[netdev], ecn_result = _ecn(node, netdev, ecn_priorities)
            evidence.append(ecn_result)
    bounds: dict[str, str] = {"trust": _combine(trust), "pfc_priorities": _combine(pfc)}
    if ecn:
        bounds["ecn"] = _combine(ecn)
    per_dev = "; ".join(
        [
            f"{d}: trust {trust[d]}, PFC [{pfc[d]}]" + (f", ECN {ecn[d]}" if d in ecn else "")
            for d in netdevs
        ]
        + list(dict.fromkeys(warned))
    )
    summary = ", ".join(f"{key} {value}" for key, value in bounds.items())
    return Measurement(
        value=summary,
        detail=per_dev,
        evidence=tuple(evidence),
        bounds=dict(bounds),
        extra={
            "netdevs": {
                d: {"trust": trust[d], "pfc_priorities": pfc[d], "ecn": ecn.get(d)} for d in netdevs
            }
        },
    )
