"""Error counters of an RDMA port, at both ends of its link, sorted into classes.

InfiniBand: ``perfquery -x`` on the HCA port, and on the port at the other end of
its cable (the switch port facing the HCA, found with ``iblinkinfo -D 0``, a
one-hop partial scan): errors on the host-to-switch direction are counted by the
switch's receiver, not the host's.  RoCE (Ethernet link layer): perfquery cannot
open a MAD port there, so the counters come from ``rdma statistic show link``
(the RDMA transport's hardware counters) and ``ethtool -S`` on the port's netdev
(the physical port).

Every counter read is one of these classes (:func:`classify`):

- ``fault``: events a healthy link does not have (the link went down or retrained,
  malformed or misrouted packets, P_Key and MTU drops); any growth fails (``max: 0``).
- ``symbol`` and ``receive``: bit errors on the wire (symbol errors; packets received
  corrupt).  A link within its bit error ratio has a few of these, so they are judged
  by rate, per link per hour (``symbol_errors_per_hour``, ``receive_errors_per_hour``),
  over the time between the reading before the run and the one after it (:func:`rate`).
- ``congestion``: the fabric was full or a receiver slow; our own aggregate and
  oversubscription checks provoke these, so they have their own bound
  (``congestion_max``), judged per counter.
- ``ignored``: the counters ibqueryerrors treats as common: reported, never judged.

Everything else (traffic counts, pause frames, congestion notifications, completion
errors of applications tearing down their queue pairs) is ``other``: not reported.

A reading that is empty, unreadable or missing the counters this module judges
is a :class:`MeasurementError`: nothing here passes on "no counters, no growth".
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field

from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers import ethtool, iblinkinfo, perfquery, rdma_link, rdma_statistic
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill, join

__all__ = [
    "CLASSES",
    "CONFIDENCE",
    "IB_FAULT",
    "IB_CONGESTION",
    "IB_IGNORED",
    "IB_RECEIVE",
    "IB_SYMBOL",
    "ROCE_FAULT",
    "ROCE_CONGESTION",
    "ROCE_RECEIVE",
    "ROCE_SYMBOL",
    "RATED",
    "Rate",
    "Reading",
    "PortCounters",
    "Growth",
    "classify",
    "read_port",
    "growth",
    "measurement",
    "poisson_lower_limit",
    "rate",
]

CLASSES = ("fault", "symbol", "receive", "congestion", "ignored")  # and "other": traffic counts, not reported
#: the classes judged by rate (per link per hour), and the bound of each
RATED = {"symbol": "symbol_errors_per_hour", "receive": "receive_errors_per_hour"}
#: a rate fails only when even its lower confidence limit is above the bound (see :func:`rate`)
CONFIDENCE = 0.95

# InfiniBand PortCounters (IBTA Vol. 1, 16.1.3.5) and the PortRcvErrorDetails /
# PortXmitDiscardDetails breakdowns, as perfquery names them.
# Bit errors on the wire, which a link within its BER has a few of: judged by rate.
IB_SYMBOL: frozenset[str] = frozenset({"SymbolErrorCounter"})
# Packets received corrupt (CRC errors: PortRcvErrors, whose physical part
# PortLocalPhysicalErrors details), or marked bad (EBP) by the switch that received
# them corrupt.  PortRcvErrors also counts the malformed and misrouted packets below,
# which stay faults by their own detail counters.
IB_RECEIVE: frozenset[str] = frozenset({"PortRcvErrors", "PortRcvRemotePhysicalErrors", "PortLocalPhysicalErrors"})
# Details counted in a total beside them: listed, not added to the class's count twice.
_IN_A_TOTAL: frozenset[str] = frozenset({"PortLocalPhysicalErrors"})
IB_FAULT: frozenset[str] = frozenset({
    # link-integrity events: the link retrained or went down, or bad symbols exceeded the
    # port's own LocalPhyErrors threshold; flow control failed
    "LinkErrorRecoveryCounter", "LinkDownedCounter",
    "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors",
    # receive-error details that no bit error explains: malformed or misrouted packets
    "PortMalformedPktErrors", "PortBufferOverrunErrors", "PortDLIDMappingErrors",
    "PortVLMappingErrors", "PortLoopingErrors",
    # packets dropped for partition (P_Key) or MTU mismatches: configuration faults
    "PortXmitConstraintErrors", "PortRcvConstraintErrors", "PortNeighborMTUDiscards",
    "PortInactiveDiscards",
})
# Full buffers, not broken links: a sender waited for credits (PortXmitWait) or the
# switch dropped a packet that waited too long (PortXmitDiscards and its
# lifetime-limit details); management packets dropped for want of buffers.
IB_CONGESTION: frozenset[str] = frozenset({
    "PortXmitDiscards", "PortXmitWait", "PortSwLifetimeLimitDiscards",
    "PortSwHOQLifetimeLimitDiscards", "VL15Dropped", "QP1Dropped",
})
# ibqueryerrors --suppress-common suppresses exactly this one ("Right now this is the
# only 'common' error", rdma-core infiniband-diags/ibqueryerrors.c): switches count
# relay errors for routine reasons (packets to a LID being reconfigured, multicast).
IB_IGNORED: frozenset[str] = frozenset({"PortRcvSwitchRelayErrors"})

# RoCE: the mlx5 driver's names.  Transport counters (rdma statistic, NVIDIA
# "Understanding mlx5 Linux counters"): on a lossless fabric (PFC, the `roce` check)
# sequence errors and ack timeouts mean packets were lost on the wire.
_ROCE_FAULT_TRANSPORT = {"out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "implied_nak_seq_err"}
# Physical port counters (ethtool -S; Linux Documentation/networking/device_drivers/
# ethernet/mellanox/mlx5/counters.rst, type "Error"): corrupt, malformed or
# wrong-size frames and link flaps.  Symbol errors and CRC errors are bit errors on
# the wire, judged by rate as InfiniBand's are; the rest are faults.
ROCE_SYMBOL: frozenset[str] = frozenset({"rx_symbol_err_phy", "rx_pcs_symbol_err_phy"})
ROCE_RECEIVE: frozenset[str] = frozenset({"rx_crc_errors_phy"})
_ROCE_FAULT_PHY = {
    "link_down_events_phy",
    "rx_in_range_len_errors_phy", "rx_out_of_range_len_phy", "rx_oversize_pkts_phy",
    "rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy", "tx_errors_phy",
    "rx_unsupported_op_phy",
}
ROCE_FAULT: frozenset[str] = frozenset(_ROCE_FAULT_TRANSPORT | _ROCE_FAULT_PHY)
# What ethtool -S must print some of for the reading to be one of this check's.
_ROCE_PHY_KNOWN = frozenset(_ROCE_FAULT_PHY | ROCE_SYMBOL | ROCE_RECEIVE)
# counters.rst: rx_discards_phy "implies that the adapter is congested", tx_discards_phy
# counts head-of-line drops and pauses from the network; out_of_buffer / rx_out_of_buffer:
# the host did not post receive buffers fast enough.  Drops on a PFC (lossless)
# priority are faults instead: see classify().
ROCE_CONGESTION: frozenset[str] = frozenset({"rx_discards_phy", "tx_discards_phy", "rx_out_of_buffer", "out_of_buffer"})
_PRIO_DISCARDS_RE = re.compile(r"^rx_prio(?P<prio>[0-7])_discards$")

# A reading without any of these is not a reading of this check's counters (another
# driver's names, a perfquery that printed a header only): an error, not a pass.
_IB_REQUIRED = ("SymbolErrorCounter", "LinkDownedCounter", "PortRcvErrors")


def classify(name: str, *, infiniband: bool, lossless_priorities: tuple[int, ...] = ()) -> str:
    """``fault``, ``symbol``, ``receive``, ``congestion``, ``ignored`` or ``other`` for one counter name
    (see the module docstring)."""
    if infiniband:
        if name in IB_SYMBOL:
            return "symbol"
        if name in IB_RECEIVE:
            return "receive"
        if name in IB_FAULT:
            return "fault"
        if name in IB_CONGESTION:
            return "congestion"
        return "ignored" if name in IB_IGNORED else "other"
    if name in ROCE_SYMBOL:
        return "symbol"
    if name in ROCE_RECEIVE:
        return "receive"
    if name in ROCE_FAULT:
        return "fault"
    prio = _PRIO_DISCARDS_RE.match(name)
    if prio:
        # PFC on that priority exists to make drops impossible: a drop there is a fault.
        return "fault" if int(prio.group("prio")) in lossless_priorities else "congestion"
    if name in ROCE_CONGESTION:
        return "congestion"
    return "other"


@dataclass(frozen=True)
class Reading:
    """The counters of one end of the link, as read once."""

    end: str  # "mlx5_0/1" (the host's port) or "peer LID 7 port 12" (the switch port facing it)
    counters: dict[str, int]


@dataclass(frozen=True)
class PortCounters:
    """Both ends of one port's link (IB), or the port's two counter sources (RoCE)."""

    node: str
    port: str  # "mlx5_0/1"
    infiniband: bool
    readings: tuple[Reading, ...]
    evidence: tuple[CommandResult, ...] = ()
    #: when the reading began (time.time(), the controller's clock): rates are per the time between two
    read_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class Growth:
    """What grew between two readings, by class: ``{class: {"end counter": delta}}``."""

    by_class: dict[str, dict[str, int]] = field(default_factory=dict)
    elapsed_s: float = 0.0  # between the two readings

    def total(self, kind: str) -> int:
        """The class's growth summed over its counters and both ends (a detail counted in its total, once)."""
        return sum(delta for key, delta in self.by_class.get(kind, {}).items() if key.rsplit(" ", 1)[-1] not in _IN_A_TOTAL)

    def largest(self, kind: str) -> int:
        return max(self.by_class.get(kind, {}).values(), default=0)


def _require(result: CommandResult, counters: dict[str, int], known: frozenset[str] | tuple[str, ...], what: str) -> None:
    if not any(name in counters for name in known):
        shown = ", ".join(sorted(known)[:4])
        raise MeasurementError(
            result.node,
            f"{what} printed none of the counters this check judges ({shown}, ...); "
            f"it printed {len(counters)} other(s)",
            command=result.command,
            fix="run the command by hand; on a non-mlx5 NIC the counter names differ and this check cannot judge them",
        )


def _perfquery(node: NodeHandle, device: str, ib_port: int, target: str) -> tuple[dict[str, int], CommandResult]:
    result = node.run(fill("perfquery -x -C {device} -P {ib_port}", device=device, ib_port=ib_port) + target, timeout=30)
    blocks = parse_or_raise(perfquery.parse_perfquery, result)
    counters: dict[str, int] = {}
    for block in blocks:
        counters.update(block.counters)
    _require(result, counters, _IB_REQUIRED, "perfquery")
    return counters, result


def _peer(node: NodeHandle, device: str, ib_port: int) -> tuple[int, int, str | None, CommandResult]:
    """LID and port number of the port at the other end of the cable (iblinkinfo, one hop)."""
    result = node.run(fill("iblinkinfo -C {device} -P {ib_port} -D 0", device=device, ib_port=ib_port), timeout=60)
    lines = parse_or_raise(iblinkinfo.parse_iblinkinfo, result)
    mine = [p for p in lines if p.port == ib_port and p.node_type != "Switch"]
    if not mine or mine[0].peer_lid is None or mine[0].peer_port is None:
        raise MeasurementError(
            node.name,
            f"iblinkinfo shows no port at the other end of {device}/{ib_port}, so its switch-side counters cannot be read",
            command=result.command,
            fix=f"check the cable of {device}/{ib_port}; or set error_counters.both_ends: false to judge the host side only",
        )
    return mine[0].peer_lid, mine[0].peer_port, mine[0].peer_name, result


def read_port(node: NodeHandle, device: str, ib_port: int, *, infiniband: bool, both_ends: bool = True) -> PortCounters:
    """Read one port's counters (and, for InfiniBand, its peer's)."""
    name = f"{device}/{ib_port}"
    read_at = time.time()
    if infiniband:
        own, result = _perfquery(node, device, ib_port, "")
        readings = [Reading(name, own)]
        evidence = [result]
        if both_ends:
            lid, peer_port, peer_name, link = _peer(node, device, ib_port)
            label = f"peer LID {lid} port {peer_port}" + (f" ({peer_name})" if peer_name else "")
            peer, peer_result = _perfquery(node, device, ib_port, " " + join([lid, peer_port]))
            readings.append(Reading(label, peer))
            evidence += [link, peer_result]
        return PortCounters(node.name, name, True, tuple(readings), tuple(evidence), read_at)
    stats = node.run(fill("rdma statistic show link {name}", name=name), timeout=30)
    ports = parse_or_raise(rdma_statistic.parse_rdma_statistic, stats)
    mine = [p for p in ports if p.device == device and p.port == ib_port]
    if not mine:
        raise MeasurementError(node.name, f"rdma statistic printed no line for {name}", command=stats.command)
    _require(stats, mine[0].counters, frozenset(_ROCE_FAULT_TRANSPORT), "rdma statistic")
    link_result = node.run(fill("rdma link show {name}", name=name), timeout=30)
    links = parse_or_raise(rdma_link.parse_rdma_link, link_result)
    netdev = next((link.netdev for link in links if link.device == device and link.port == ib_port), None)
    if not netdev:
        raise MeasurementError(node.name, f"rdma link names no netdev for {name}; its Ethernet counters cannot be read",
                               command=link_result.command)
    phy_result = node.run(fill("ethtool -S {netdev}", netdev=netdev), timeout=30)
    phy = parse_or_raise(ethtool.parse_ethtool_stats, phy_result)
    _require(phy_result, phy, _ROCE_PHY_KNOWN, "ethtool -S")
    return PortCounters(
        node.name, name, False,
        (Reading(name, mine[0].counters), Reading(netdev, phy)),
        (stats, link_result, phy_result),
        read_at,
    )


def growth(before: PortCounters, after: PortCounters, *, lossless_priorities: tuple[int, ...] = ()) -> Growth:
    """What grew between two readings of the same port; a counter that went down is an error."""
    old = {r.end: r.counters for r in before.readings}
    by_class: dict[str, dict[str, int]] = {kind: {} for kind in CLASSES}
    for reading in after.readings:
        if reading.end not in old:
            raise MeasurementError(
                after.node,
                f"{after.port}: the reading before the run has no {reading.end!r} (it had {', '.join(old)}); "
                "the link changed during the run, so growth cannot be told",
                fix="re-run; if the port's peer keeps changing, check the cable and the subnet manager's logs",
            )
        for counter, value in reading.counters.items():
            start = old[reading.end].get(counter, value)
            kind = classify(counter, infiniband=after.infiniband, lossless_priorities=lossless_priorities)
            if kind not in by_class:
                continue  # traffic counts: not judged, so a reset of them does not matter
            if value < start:
                raise MeasurementError(
                    after.node,
                    f"{after.port}: {reading.end} {counter} went from {start} to {value}: the counters were reset "
                    "during the run, so their growth cannot be told",
                    fix="do not clear counters (perfquery -R, ibclearerrors) while the suite runs; re-run",
                )
            if value > start:
                by_class[kind][f"{reading.end} {counter}"] = value - start
    return Growth(by_class, max(after.read_at - before.read_at, 0.0))


@dataclass(frozen=True)
class Rate:
    """``count`` events in ``elapsed_s``: per hour as seen, and the lowest per-hour rate consistent with it."""

    count: int
    elapsed_s: float
    per_hour: float
    #: the one-sided lower confidence limit (:data:`CONFIDENCE`) of the Poisson rate: the bound judges this
    at_least_per_hour: float

    def describe(self) -> str:
        if self.count == 0:
            return f"0 in {_duration(self.elapsed_s)}"
        return (f"{self.count} in {_duration(self.elapsed_s)}: {_per_hour(self.per_hour)}/h, at least "
                f"{_per_hour(self.at_least_per_hour)}/h at {CONFIDENCE:.0%} confidence")


# one-sided normal quantile of CONFIDENCE, for the Wilson-Hilferty form of large counts
_Z = 1.6448536269514722


def poisson_lower_limit(count: int, confidence: float = CONFIDENCE) -> float:
    """The lowest Poisson mean under which ``count`` or more events have a chance of at least ``1 - confidence``.

    Exact (the Poisson sum, by bisection) up to 1000 events; above, Wilson and Hilferty's
    cube-root form of the chi-square quantile (2 * mean = chi2(1 - confidence, 2 * count)),
    which is within 0.1% there.
    """
    if count <= 0:
        return 0.0
    alpha = 1.0 - confidence
    if count > 1000:
        return count * (1 - 1 / (9 * count) - _Z / (3 * math.sqrt(count))) ** 3

    def at_least(mean: float) -> float:  # P(X >= count) for X ~ Poisson(mean)
        below = sum(math.exp(-mean + k * math.log(mean) - math.lgamma(k + 1)) for k in range(count))
        return 1.0 - below

    low, high = 0.0, float(count)  # P(X >= count | count) is about a half, far above alpha
    for _ in range(60):
        mid = (low + high) / 2
        if at_least(mid) < alpha:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def rate(count: int, elapsed_s: float) -> Rate:
    """``count`` errors in ``elapsed_s`` as errors per hour: as seen, and at least (:data:`CONFIDENCE`).

    A short run says little about a rate: one symbol error in two minutes is 30 an hour as
    seen, yet a link that has 3 an hour shows one in two minutes about one run in ten.  The bounds judge the lower limit, so a
    link fails only when its errors are too many for the bound at that confidence; a link
    that has more than the bound shows it over a longer run.  The interval is at least a second.
    """
    hours = max(elapsed_s, 1.0) / 3600
    return Rate(count, elapsed_s, count / hours, poisson_lower_limit(count) / hours)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _per_hour(value: float) -> str:
    return f"{value:.3g}" if value < 100 else f"{value:,.0f}"


def _listing(items: dict[str, int]) -> str:
    return ", ".join(f"{name} +{delta}" for name, delta in sorted(items.items()))


def measurement(before: PortCounters | BaseException | None, after: PortCounters, *,
                lossless_priorities: tuple[int, ...] = ()) -> Measurement:
    """The error_counters measurement of one port: fault growth as the value, congestion as a second bound.

    Without a reading from before the run (it failed, or the port was not there) the
    growth cannot be told: lifetime counts are no verdict on this run, so that is an error.
    """
    if before is None or isinstance(before, BaseException):
        why = f": {before}" if isinstance(before, BaseException) else ": the port was not listed then"
        raise MeasurementError(
            after.node,
            f"{after.port}: no counter reading from before the run{why}; lifetime counts say nothing about this run",
            command=after.evidence[0].command if after.evidence else None,
            fix="fix what stopped the first reading and re-run",
        )
    grown = growth(before, after, lossless_priorities=lossless_priorities)
    ends = " and ".join(r.end for r in after.readings)
    parts = [f"{after.port}: growth during this run ({ends}, {_duration(grown.elapsed_s)})"]
    faults, symbol, receive, congestion, ignored = (grown.by_class.get(k, {}) for k in CLASSES)
    parts.append(f"faults: {_listing(faults)}" if faults else "no fault counter grew")
    rates = {kind: rate(grown.total(kind), grown.elapsed_s) for kind in RATED}
    for kind, label in (("symbol", "symbol errors"), ("receive", "receive errors")):
        if grown.by_class.get(kind):
            parts.append(f"{label} (bound {RATED[kind]}): {_listing(grown.by_class[kind])}, "
                         f"{rates[kind].describe()}")
    if congestion:
        parts.append(f"congestion (bound congestion_max, per counter): {_listing(congestion)}")
    if ignored:
        parts.append(f"not faults (ibqueryerrors --suppress-common): {_listing(ignored)}")
    return Measurement(
        value=parse_quantity(grown.total("fault")),
        detail="; ".join(parts),
        evidence=tuple(before.evidence) + tuple(after.evidence),
        bounds={
            "max": parse_quantity(grown.total("fault")),
            # three significant digits: a small rate stays above 0, which a bound of 0 fails
            **{bound: parse_quantity(float(f"{rates[kind].at_least_per_hour:.3g}")) for kind, bound in RATED.items()},
            "congestion_max": parse_quantity(grown.largest("congestion")),
        },
        extra={
            "counters_grown": grown.by_class,
            "ends": [r.end for r in after.readings],
            "elapsed_s": round(grown.elapsed_s, 1),
            "rates": {kind: {"count": r.count, "per_hour": round(r.per_hour, 3),
                             "at_least_per_hour": round(r.at_least_per_hour, 3)} for kind, r in rates.items()},
        },
    )
