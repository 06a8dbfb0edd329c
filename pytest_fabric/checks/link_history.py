"""``inter_node.link_history``: what each RDMA port has been through before the run.

``error_counters`` judges what grows during the run; a port that went down forty times and
collected fifty thousand symbol errors before it passes there as long as the run adds nothing.
This check reads, before any traffic of the run (phase -20), each port's error counters as they
stand (``perfquery -x`` on InfiniBand, at both ends of the cable unless ``both_ends: false``;
``rdma statistic`` and ``ethtool -S`` on RoCE: probes/counters.py) and the link-down events the
kernel logged within ``window:`` (probes/kernel_log.py; mlx5's ``Port: 1 Link DOWN``, a netdev's
``Link down`` or ``Lost carrier``), and judges each port on its own:

- ``link_down_events_max`` (1) link-down events in the kernel log within ``window`` (6 h): the
  rule of Azure's azurehpc-health-checks (customTests/azure_ib_link_flapping.nhc: a second IB
  link-down within ``TIME_INTERVAL_HOURS``, default 6, is a link flap, fault code NHC2005);
- ``link_downed_max`` (1) on ``LinkDownedCounter`` (RoCE: ``link_down_events_phy``), the
  times the port's training failed to recover the link and downed it (IBTA Vol. 1
  PortCounters): the same one-loss allowance, as the counter has no window;
- ``ber_max`` (1e-12) on the symbol-error rate as it stands: ``SymbolErrorCounter`` (RoCE:
  ``rx_symbol_err_phy``, the errors left after FEC on HDR/NDR, which NVIDIA's ibdiagnet
  manual calls "the actual errors seen by the application level") over the bits the port
  could carry at its rate since the node booted (an upper bound of the bits behind the
  counters, so the lowest rate the count allows); 1e-12 is ibdiagnet's default BER threshold.

Events the kernel log names by a netdev are matched to their port with ``rdma link``; one that
names no port of the node is judged on the node (``<node> kernel log``). Other fault counters
(LinkErrorRecovery, LocalLinkIntegrityErrors, PortRcvErrors, ...) are reported with the port.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any, Literal

import pytest
from pydantic import BeforeValidator, Field, field_validator

from pytest_fabric.checks.base import Check
from pytest_fabric.config.profile import CheckSpec
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge.verdict import Measurement, Op
from pytest_fabric.parsers import rdma_link
from pytest_fabric.parsers.base import ParseError
from pytest_fabric.parsers.kernel_log import LinkEvent, link_events, since, window_start
from pytest_fabric.probes import counters, rdma
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.probes.kernel_log import KernelLogReading, read_kernel_log
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.waves import wave
from pytest_fabric.transport.base import TransportError
from pytest_fabric.transport.results import CommandResult

__all__ = ["LINK_HISTORY", "LinkHistory", "PortHistory", "link_history", "link_history_measurement",
           "pytest_fabric_checks"]

#: the counters of a link going down, and of symbol errors, by link layer's names
LINK_DOWNED = ("LinkDownedCounter", "link_down_events_phy")
SYMBOL_ERRORS = ("SymbolErrorCounter", "rx_symbol_err_phy")
_HOURS = re.compile(r"^\s*(?P<n>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>h|hours?|min|d|days?)\s*$")


def _hours_to_seconds(value: Any) -> Any:
    """``6 h``, ``90 min``, ``2 d`` as seconds: a window is written in hours, the units module has seconds."""
    if isinstance(value, str) and (m := _HOURS.match(value)):
        unit = m.group("unit")
        scale = 60 if unit == "min" else {"h": 3600, "d": 86400}[unit[0]]
        return f"{Decimal(m.group('n')) * scale} s"
    return value


class LinkHistory(CheckSpec):
    """``link_down_events_max``: link-down events of a port in the kernel log within ``window`` (1 in
    6 h, azurehpc-health-checks' flap rule). ``link_downed_max``: the port's LinkDownedCounter as it
    stands (1). ``ber_max``: symbol errors as they stand over the bits the port could carry since
    boot (1e-12, ibdiagnet's threshold). ``both_ends``: read the switch port at the other end of an
    InfiniBand cable too. ``log``: ``auto``, ``journal`` or ``dmesg``."""

    BOUNDS = (
        ("link_down_events_max", Op.MAX, Dimension.COUNT),
        ("link_downed_max", Op.MAX, Dimension.COUNT),
        ("ber_max", Op.MAX, Dimension.COUNT),
    )
    SCALAR_FIELD = "link_downed_max"
    link_down_events_max: QuantityField | None = Field(default_factory=lambda: parse_quantity(1))
    link_downed_max: QuantityField | None = Field(default_factory=lambda: parse_quantity(1))
    ber_max: QuantityField | None = Field(default_factory=lambda: parse_quantity("1e-12"))
    window: Annotated[QuantityField, BeforeValidator(_hours_to_seconds)] = Field(
        default_factory=lambda: parse_quantity("21600 s"))
    both_ends: bool = True
    log: Literal["auto", "journal", "dmesg"] = "auto"

    @field_validator("window")
    @classmethod
    def _window(cls, value: Quantity) -> Quantity:
        return parse_quantity(value, dimension=Dimension.TIME)


#: test_link_history in the inter_node layer, one test per node (each port judged on its own), read
#: before any traffic of the run (phase -20: the run's own load must not add to what stood before)
LINK_HISTORY: Check[LinkHistory] = Check(
    "link_history", "inter_node", LinkHistory, "node", "wave", phase=-20, typical_s=2.0,
    tools_by_link_layer={"infiniband": ("ibstat", "perfquery", "iblinkinfo", "dmesg"), "ethernet": ("ibstat", "rdma", "ethtool", "dmesg")})


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [LINK_HISTORY]


@dataclass(frozen=True)
class PortHistory:
    """One port's counters as they stand (by end), its rate, and the netdev the kernel may name it by."""

    port: rdma.RdmaPort
    counters: counters.PortCounters
    netdev: str | None = None


def _largest(reading: counters.PortCounters, names: tuple[str, ...]) -> tuple[int, str]:
    """The largest of ``names`` over the ends read, and which end and counter it was."""
    best, where = 0, ""
    for end in reading.readings:
        for name in names:
            if end.counters.get(name, 0) > best:
                best, where = end.counters[name], f"{end.end} {name}"
    return best, where


def _reported(reading: counters.PortCounters) -> str:
    faults = []
    for end in reading.readings:
        for name, value in sorted(end.counters.items()):
            kind = counters.classify(name, infiniband=reading.infiniband)
            if value and kind in ("fault", "receive") and name not in LINK_DOWNED:
                faults.append(f"{end.end} {name} {value}")
    return ", ".join(faults)


def _owner(event: LinkEvent, ports: list[PortHistory]) -> PortHistory | None:
    for history in ports:
        if event.port is not None and event.device == history.port.device and event.port == history.port.port:
            return history
        if event.port is None and history.netdev is not None and event.device == history.netdev:
            return history
    return None


def link_history_measurement(node: str, ports: list[PortHistory], log: KernelLogReading,
                             settings: LinkHistory) -> Measurement:
    """Pure: each port judged on its counters as they stand and its link-down events in the window;
    down events that name no port of the node judged on the node."""
    seconds = float(settings.window.to("s"))
    windowed, undated = since(log.log, window_start(log.now_epoch, seconds), uptime_start=log.uptime_s - seconds)
    downs = [e for e in link_events(windowed) if e.down]
    evidence = log.evidence + tuple(e for p in ports for e in p.counters.evidence)
    shown = f"{seconds / 3600:g} h" if seconds >= 3600 else str(settings.window)
    span = f"in the last {shown} ({log.source}" + (f"; {undated} undated line(s) counted" if undated else "") + ")"
    parts: list[tuple[str, Measurement]] = []
    for history in ports:
        mine = [e for e in downs if _owner(e, ports) is history]
        downed, downed_at = _largest(history.counters, LINK_DOWNED)
        symbols, symbols_at = _largest(history.counters, SYMBOL_ERRORS)
        bits = float(history.port.rate_gbps) * 1e9 * max(log.uptime_s, 1.0)
        ber = float(f"{symbols / bits:.3g}") if bits else 0.0
        said = [f"{len(mine)} link-down event(s) {span}"]
        if mine:
            said[-1] += f", last: {mine[-1].line.text.strip()}"
        said.append(f"LinkDowned {downed}" + (f" ({downed_at})" if downed_at else ""))
        said.append(f"symbol errors {symbols}" + (f" ({symbols_at})" if symbols_at else "")
                    + f": BER {ber:.3g} over {log.uptime_s / 3600:.1f} h at {history.port.rate_gbps} Gb/s")
        if other := _reported(history.counters):
            said.append(f"also: {other}")
        parts.append((f"{node} {history.port.name}", Measurement(
            value=parse_quantity(downed), detail="; ".join(said), evidence=evidence,
            bounds={"link_down_events_max": parse_quantity(len(mine)), "link_downed_max": parse_quantity(downed),
                    "ber_max": parse_quantity(ber)},
            extra={"link_down_events": len(mine), "link_downed": downed, "symbol_errors": symbols, "ber": ber,
                   "ends": [r.end for r in history.counters.readings], "log_source": log.source})))
    stray = [e for e in downs if _owner(e, ports) is None]
    if stray:
        names = ", ".join(sorted({e.device + (f"/{e.port}" if e.port is not None else "") for e in stray}))
        parts.append((f"{node} kernel log", Measurement(
            value=parse_quantity(len(stray)),
            detail=f"{len(stray)} link-down event(s) {span} of {names}, no port of this node's ibstat; "
                   f"last: {stray[-1].line.text.strip()}",
            evidence=log.evidence, bounds={"link_down_events_max": parse_quantity(len(stray)),
                                           "link_downed_max": parse_quantity(0), "ber_max": parse_quantity(0)})))
    if not parts:
        raise MeasurementError(node, "ibstat lists no RDMA port, so no link history can be read",
                                        fix="check the HCA driver (ibstat, rdma link)")
    return Measurement.of_parts(parts)


def _netdevs(node: NodeHandle) -> tuple[dict[tuple[str, int], str], CommandResult | None]:
    """(device, port) -> netdev from ``rdma link``; empty where rdma is not there (events then by port only)."""
    try:
        result = node.run("rdma link show", timeout=30, check=False)
    except TransportError:
        return {}, None
    if result.exit_code != 0:
        return {}, result
    try:
        links = rdma_link.parse_rdma_link(result.stdout)
    except ParseError:
        return {}, result
    return {(link.device, link.port): link.netdev for link in links if link.netdev}, result


def read_link_history(node: NodeHandle, settings: LinkHistory) -> Measurement:
    """The node's ports' counters as they stand, their netdevs and the kernel log, judged."""
    ports, listing = rdma.list_ports(node)
    netdevs, names = _netdevs(node)
    histories = [PortHistory(port, counters.read_port(node, port.device, port.port,
                                                      infiniband=port.link_layer.lower() == "infiniband",
                                                      both_ends=settings.both_ends),
                             netdevs.get((port.device, port.port)))
                 for port in ports]
    log = read_kernel_log(node, settings.log)
    extra = tuple(listing) + ((names,) if names is not None else ())
    log = KernelLogReading(log.node, log.log, log.source, log.now_epoch, log.uptime_s, log.evidence + extra)
    return link_history_measurement(node.name, histories, log, settings)


@pytest.fixture
@wave("node")
def link_history(node: NodeHandle, spec: SpecLookup) -> Measurement:
    """Every port of the node, its counters as they stand and its link-downs in the kernel log."""
    return read_link_history(node, spec(LINK_HISTORY))
