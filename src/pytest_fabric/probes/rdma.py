"""RDMA ports and traffic: ibstat, ibv_devinfo, perfquery, perftest (ib_write_bw / ib_write_lat).

Ports are listed in a stable order (device name, port number), optionally kept
to one link layer, so "port 2 of node07" means the same device in every
process and every run.  Pair measurements run the perftest server on ``b`` and
the client on ``a`` against ``b``'s data address, rail by rail (port i with
port i), and take the median of ``repeat`` runs per rail.
"""

from __future__ import annotations

import shlex
import statistics
import time
from dataclasses import dataclass, field
from decimal import Decimal

from ..cluster import NodeHandle, NodePair
from ..parsers import ibstat, ibv_devinfo, perfquery, perftest
from ..transport.base import BackgroundProcess, CommandResult
from ..units import Quantity, bandwidth, parse_quantity
from ..verdict import Measurement
from .base import MeasurementError, parse_or_raise

__all__ = [
    "RdmaPort",
    "list_ports",
    "RdmaSettings",
    "rail_bandwidth",
    "pair_bandwidth",
    "pair_latency",
    "read_counters",
]


@dataclass(frozen=True)
class RdmaPort:
    node: str
    device: str
    port: int
    state: str
    physical_state: str
    rate_gbps: Decimal
    link_layer: str
    active_mtu: int | None = None

    @property
    def name(self) -> str:
        return f"{self.device}/{self.port}"

    @property
    def rate(self) -> Quantity:
        return parse_quantity(f"{self.rate_gbps} Gb/s")


def list_ports(node: NodeHandle, link_layer: str | None = None) -> tuple[list[RdmaPort], list[CommandResult]]:
    """Every RDMA port ibstat reports (and its active MTU from ibv_devinfo), sorted by device and port."""
    result = node.run("ibstat", timeout=30)
    cas = parse_or_raise(ibstat.parse_ibstat, result)
    evidence = [result]
    mtus: dict[tuple[str, int], int | None] = {}
    info = node.run("ibv_devinfo", timeout=30, check=False)
    evidence.append(info)
    if info.exit_code == 0:
        try:
            for device in ibv_devinfo.parse_ibv_devinfo(info.stdout):
                for port in device.ports:
                    mtus[(device.name, port.port)] = port.active_mtu_bytes
        except Exception:  # the MTU is extra; ibstat alone still lists the ports
            pass
    ports = [
        RdmaPort(
            node=node.name,
            device=ca.name,
            port=p.port,
            state=p.state,
            physical_state=p.physical_state,
            rate_gbps=p.rate_gbps,
            link_layer=p.link_layer,
            active_mtu=mtus.get((ca.name, p.port)),
        )
        for ca in cas
        for p in ca.ports
    ]
    if link_layer is not None:
        ports = [p for p in ports if p.link_layer.lower() == link_layer.lower()]
    return sorted(ports, key=lambda p: (_natural(p.device), p.port)), evidence


def _natural(name: str) -> tuple[str, int]:
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return head, int(tail) if tail else -1


@dataclass(frozen=True)
class RdmaSettings:
    size_bytes: int = 8 * 2**20
    qps: int = 1
    repeat: int = 3
    port: int = 18515
    tool: str = "ib_write_bw"
    extra_args: tuple[str, ...] = field(default_factory=tuple)


SERVER_START_S = 10.0


def _perftest_args(device: str, ib_port: int, settings: RdmaSettings, port: int) -> str:
    args = [
        f"-d {shlex.quote(device)}",
        f"-i {ib_port}",
        f"-p {port}",
        "-F",
    ]
    return " ".join(args + list(settings.extra_args))


def _server_listening(node: NodeHandle, port: int, server: BackgroundProcess) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        result = node.run(f"ss -Hltn 'sport = :{port}'", timeout=10, check=False)
        if result.stdout.strip():
            return
        if not server.is_running():
            done = server.stop()
            raise MeasurementError(
                node.name,
                "the perftest server exited before listening: " + (done.stderr or done.stdout).strip()[-300:],
                command=server.command,
                fix=f"check the RDMA device on {node.name} (ibv_devinfo) and that port {port} is free",
            )
        time.sleep(0.05)
    raise MeasurementError(node.name, f"perftest server not listening on {port}", command=server.command)


def _run_pair(
    pair: NodePair, a_port: RdmaPort, b_port: RdmaPort, settings: RdmaSettings, port: int, client_args: str
) -> tuple[CommandResult, list[CommandResult]]:
    server_cmd = f"{settings.tool} {_perftest_args(b_port.device, b_port.port, settings, port)} {client_args}"
    server = pair.b.start(server_cmd, timeout=120)
    evidence: list[CommandResult] = []
    try:
        _server_listening(pair.b, port, server)
        client_cmd = (
            f"{settings.tool} {_perftest_args(a_port.device, a_port.port, settings, port)} {client_args} "
            f"{shlex.quote(pair.b.address)}"
        )
        client = pair.a.run(client_cmd, timeout=120, check=False)
    finally:
        evidence.append(server.stop())
    return client, evidence


def rail_bandwidth(
    pair: NodePair, a_port: RdmaPort, b_port: RdmaPort, settings: RdmaSettings, port: int
) -> tuple[Quantity, list[Quantity], list[CommandResult]]:
    """Median ib_write_bw bandwidth over ``repeat`` runs between one port of ``a`` and one of ``b``."""
    samples: list[Quantity] = []
    evidence: list[CommandResult] = []
    args = f"-s {settings.size_bytes} -q {settings.qps} --report_gbits"
    for _ in range(settings.repeat):
        client, server_evidence = _run_pair(pair, a_port, b_port, settings, port, args)
        evidence += [client, *server_evidence]
        parsed = parse_or_raise(perftest.parse_bandwidth, client)
        row = parsed.row_at(settings.size_bytes) if any(r.size_bytes == settings.size_bytes for r in parsed.rows) else parsed.largest_row
        samples.append(bandwidth(row.bw_average_gbps, "Gb/s"))
    median = bandwidth(statistics.median(float(s.to("Gb/s")) for s in samples), "Gb/s")
    return median, samples, evidence


def _rails(pair: NodePair, link_layer: str | None, ports: int | None) -> tuple[list[tuple[RdmaPort, RdmaPort]], list[CommandResult]]:
    a_ports, a_ev = list_ports(pair.a, link_layer)
    b_ports, b_ev = list_ports(pair.b, link_layer)
    a_active = [p for p in a_ports if p.state.lower() == "active"]
    b_active = [p for p in b_ports if p.state.lower() == "active"]
    count = min(len(a_active), len(b_active))
    if ports is not None:
        count = min(count, ports)
    if count == 0:
        side = pair.a if not a_active else pair.b
        raise MeasurementError(
            side.name,
            "no active RDMA port to measure with",
            command="ibstat",
            fix=f"bring a port up on {side.name} (ibstat shows each port's State and Physical state)",
        )
    return list(zip(a_active[:count], b_active[:count])), a_ev + b_ev


def pair_bandwidth(pair: NodePair, settings: RdmaSettings, *, link_layer: str | None, ports: int | None) -> Measurement:
    """ib_write_bw rail by rail; the verdict value is the rail furthest below its line rate."""
    rails, evidence = _rails(pair, link_layer, ports)
    results = []
    for index, (a_port, b_port) in enumerate(rails):
        median, samples, ev = rail_bandwidth(pair, a_port, b_port, settings, settings.port)
        evidence += ev
        line = min(a_port.rate, b_port.rate)
        results.append((median.value / line.value, median, samples, line, a_port, b_port))
    worst = min(results, key=lambda r: (r[0], r[1].value))
    _, value, samples, line, a_port, b_port = worst
    rails_text = ", ".join(
        f"{a.name}->{b.name} {m.display('Gb/s')}" for _, m, _, _, a, b in results
    )
    detail = (
        f"ib_write_bw {settings.size_bytes // 2**20} MiB x {settings.qps} QP, median of {settings.repeat}; "
        f"worst rail {a_port.name}->{b_port.name} (line {line.display('Gb/s')}); rails: {rails_text}"
    )
    return Measurement(
        value=value,
        detail=detail,
        line_rate=line,
        evidence=tuple(evidence),
        samples=tuple(samples),
        extra={
            "rails": [{"a": a.name, "b": b.name, "gbps": float(m.to("Gb/s"))} for _, m, _, _, a, b in results],
            # Peers are compared on the slowest rail in absolute terms: a port that trained
            # at 100G meets '90% line' of its own rate but is still half its peers.
            "consistency_value": float(min(m.value for _, m, _, _, _, _ in results)),
        },
    )


def pair_latency(pair: NodePair, *, size: int, link_layer: str | None, port: int = 18515, iterations: int = 1000) -> Measurement:
    """ib_write_lat on the first rail: typical latency, with p99 as a second bound."""
    rails, evidence = _rails(pair, link_layer, 1)
    a_port, b_port = rails[0]
    settings = RdmaSettings(tool="ib_write_lat")
    client, ev = _run_pair(pair, a_port, b_port, settings, port, f"-s {size} -n {iterations}")
    evidence += [client, *ev]
    parsed = parse_or_raise(perftest.parse_latency, client)
    row = parsed.smallest_row
    typical = row.latency_typical_us if row.latency_typical_us is not None else row.latency_avg_us
    if typical is None:
        raise MeasurementError(pair.a.name, "ib_write_lat printed no typical or average latency", command=client.command)
    bounds: dict[str, Quantity | str | int | bool] = {"max": parse_quantity(f"{typical} us")}
    if row.latency_p99_us is not None:
        bounds["p99"] = parse_quantity(f"{row.latency_p99_us} us")
    p99 = f", p99 {row.latency_p99_us} us" if row.latency_p99_us is not None else ""
    return Measurement(
        value=bounds["max"],
        detail=f"ib_write_lat {size} B on {a_port.name}->{b_port.name}: typical {typical} us{p99}",
        evidence=tuple(evidence),
        bounds=bounds,
    )


def read_counters(node: NodeHandle, port: RdmaPort) -> tuple[dict[str, int], CommandResult]:
    """The port's error counters (extended perfquery) by name."""
    result = node.run(f"perfquery -x -C {shlex.quote(port.device)} -P {port.port}", timeout=30)
    parsed = parse_or_raise(perfquery.parse_perfquery, result)
    counters: dict[str, int] = {}
    for entry in parsed:
        counters.update(perfquery.error_counters(entry))
    return counters, result
