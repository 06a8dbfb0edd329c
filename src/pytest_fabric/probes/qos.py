"""RoCE lossless settings of a node's RDMA netdevs: trust mode and PFC (mlnx_qos), ECN (sysfs)."""

from __future__ import annotations

import shlex

from ..cluster import NodeHandle
from ..parsers import ibdev2netdev, mlnx_qos
from ..transport.base import CommandResult
from ..verdict import Measurement
from .base import MeasurementError, parse_or_raise

__all__ = ["roce_settings"]


def roce_settings(node: NodeHandle, *, ecn_priorities: list[int]) -> Measurement:
    """Trust mode, PFC priorities and (when asked) ECN of the node's first RoCE netdev that is up.

    Every RoCE netdev is read; the measurement reports the first that differs
    from the others so a single misconfigured port is not hidden.
    """
    mapping_result = node.run("ibdev2netdev", timeout=30)
    entries = parse_or_raise(ibdev2netdev.parse_ibdev2netdev, mapping_result)
    netdevs = [e.netdev for e in entries if e.netdev and (e.netdev_state or "").lower() == "up"]
    if not netdevs:
        raise MeasurementError(node.name, "no RDMA netdev is up", command="ibdev2netdev", fix="bring the RoCE ports up")
    evidence: list[CommandResult] = [mapping_result]
    seen: dict[str, tuple[str, str, str]] = {}
    for netdev in netdevs:
        result = node.run(f"mlnx_qos -i {shlex.quote(netdev)}", timeout=30)
        evidence.append(result)
        qos = parse_or_raise(mlnx_qos.parse_mlnx_qos, result)
        ecn = "unknown"
        if ecn_priorities:
            states = []
            for priority in ecn_priorities:
                path = f"/sys/class/net/{shlex.quote(netdev)}/ecn/roce_np/enable/{priority}"
                ecn_result = node.run(f"cat {path}", timeout=15, check=False)
                evidence.append(ecn_result)
                states.append(ecn_result.stdout.strip() == "1")
            ecn = "on" if all(states) else "off"
        pfc = ",".join(str(p) for p in sorted(qos.pfc_priorities))
        seen[netdev] = ((qos.trust or "unknown").lower(), pfc, ecn)
    distinct = sorted(set(seen.values()))
    trust, pfc, ecn = distinct[-1] if len(distinct) > 1 else distinct[0]
    per_dev = "; ".join(f"{d}: trust {t}, PFC [{p or 'none'}], ECN {e}" for d, (t, p, e) in seen.items())
    return Measurement(
        value=f"trust {trust}, PFC [{pfc or 'none'}], ECN {ecn}",
        detail=per_dev,
        evidence=tuple(evidence),
        bounds={"trust": trust, "pfc_priorities": pfc, "ecn": ecn},
    )
