"""RDMA ports and traffic: ibstat, ibv_devinfo, perfquery, perftest (ib_write_bw / ib_write_lat).

Ports are listed in a stable order (device name, port number), optionally kept
to one link layer, so "port 2 of node07" means the same device in every
process and every run.  Pair measurements run the perftest server on ``b`` and
the client on ``a`` against ``b``'s data address and take the median of
``repeat`` runs per rail.  Bandwidth runs every rail of the pair at once (each
rail on its own TCP port, each judged on its own figure), as a training job
loads them, for a duration (``-D``), so a slow rail ends with its number.
Latency runs rail by rail for a count (``-n``), which is what perftest prints
percentiles for (see :func:`pair_latency` for why not at once).

A rail is a port *by identity*: the i-th port the inventory (``rdma_ports``) or
the profile (``ports.names``) names on each side, else the same device name on
both sides.  A port Down or missing on one side fails that rail by name; the
others still pair like with like, so a test never sends cross-rail traffic over
a rail-optimised fabric's spine.  Each side runs bound to its HCA's NUMA node
(numactl, from sysfs), as ngc_multinode_perf and Azure's health checks do.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import zip_longest

from pytest_fabric.config.units import Quantity, bandwidth, parse_quantity
from pytest_fabric.judge import corroboration
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers import ibstat, ibv_devinfo, perfquery, perftest
from pytest_fabric.parsers.base import ParseError
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.probes.witness import PortBytes, hca_port_bytes
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.transport.base import BackgroundProcess, CommandFailed, TransportError
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill, join, quote

__all__ = [
    "RdmaPort",
    "list_ports",
    "RdmaSettings",
    "Rail",
    "Lane",
    "LaneResult",
    "lanes_at_once",
    "plan_rails",
    "pair_rails",
    "NumaNote",
    "numa_prefix",
    "rail_bandwidth",
    "rails_at_once",
    "rails_one_by_one",
    "lane_groups",
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
    """How one perftest run between two ports is made."""

    size_bytes: int = 8 * 2**20
    qps: int = 1
    repeat: int = 3
    port: int = 18515
    #: the TCP ports of the perftests run at once (rail i on ``ports[i]``); empty: ``port`` alone,
    #: so one perftest at a time. A measurement with more lanes than ports runs them in groups.
    ports: tuple[int, ...] = ()
    tool: str = "ib_write_bw"
    #: perftest -D: a run lasts this long whatever the rail does (bandwidth)
    duration_s: int = 5
    #: perftest -n instead of -D (latency: duration mode prints no percentiles)
    iterations: int | None = None
    #: --tclass=N or --sl=N: the RoCE traffic class the profile's ``roce`` check requires
    traffic: tuple[str, ...] = ()
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    #: judge perftest's iterations x size over its window against its bandwidth (a run always does)
    corroborate: bool = False
    #: read both ports' PortXmitData/PortRcvData before and after each run (the witness perftest does not
    #: control); a run sets it from --fabric-no-witness (on unless asked off)
    witness: bool = False

    @property
    def lane_ports(self) -> tuple[int, ...]:
        """The ports perftests run at once on: ``ports``, else ``port`` alone."""
        return self.ports or (self.port,)

    @property
    def run_args(self) -> str:
        return f"-n {self.iterations}" if self.iterations is not None else f"-D {self.duration_s}"

    @property
    def timeout_s(self) -> float:
        """How long the client may take: the run itself plus connection set-up on a loaded node."""
        if self.iterations is not None:
            return LATENCY_TIMEOUT_S
        return self.duration_s + RUN_SLACK_S


SERVER_START_S = 10.0
# perftest's own warm-up margins (-f, 2 s by default), QP exchange over TCP, a busy node.
RUN_SLACK_S = 60.0
LATENCY_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Rail:
    """One rail of a pair: the port each side uses, or why the rail cannot be measured."""

    a_name: str
    b_name: str
    a_port: RdmaPort | None
    b_port: RdmaPort | None
    problem: str | None = None

    @property
    def name(self) -> str:
        return self.a_name if self.a_name == self.b_name else f"{self.a_name}->{self.b_name or '?'}"


def _side_problem(node: NodeHandle, name: str, port: RdmaPort | None, ports: dict[str, RdmaPort], named: bool) -> str | None:
    if port is None:
        where = " (the inventory or profile names it)" if named else ""
        listed = ", ".join(ports) or "none"
        return f"{node.name} has no port {name}{where}; ibstat lists {listed}"
    if port.state.lower() != "active":
        return f"{name} on {node.name} is {port.state} ({port.physical_state})"
    return None


def plan_rails(
    pair: NodePair,
    a_ports: Sequence[RdmaPort],
    b_ports: Sequence[RdmaPort],
    names: Sequence[str] = (),
    expected: int | None = None,
) -> list[Rail]:
    """Pair ``a``'s ports with ``b``'s by identity, never by position in a list of active ports.

    Named ports (inventory ``rdma_ports`` per node, else the profile's ``ports.names``)
    pair by their place in the list; otherwise ports pair by device name.  A port that
    only one side has is a rail of its own (failing) when the pair has fewer common
    ports than the profile expects; otherwise it is another fabric's (a storage HCA).
    """
    by_a = {p.name: p for p in a_ports}
    by_b = {p.name: p for p in b_ports}
    a_named = tuple(pair.a.spec.rdma_ports) or tuple(names)
    b_named = tuple(pair.b.spec.rdma_ports) or tuple(names)
    if a_named and b_named:
        wanted = [(x or "", y or "") for x, y in zip_longest(a_named, b_named)]
    elif a_named or b_named:
        wanted = [(n, n) for n in a_named or b_named]
    else:
        common = sorted(set(by_a) & set(by_b), key=_natural_port)
        wanted = [(n, n) for n in common]
        if expected is not None and len(common) < expected:
            wanted += [(n, n) for n in sorted(set(by_a) ^ set(by_b), key=_natural_port)]
            wanted.sort(key=lambda w: _natural_port(w[0]))
    rails = []
    for a_name, b_name in wanted:
        a_port, b_port = by_a.get(a_name), by_b.get(b_name)
        if not a_name or not b_name:
            lacking, other, name = (pair.a, pair.b, b_name) if not a_name else (pair.b, pair.a, a_name)
            problem: str | None = f"{lacking.name}'s rdma_ports has no port to pair with {other.name}:{name}"
        else:
            found = [
                _side_problem(pair.a, a_name, a_port, by_a, bool(a_named)),
                _side_problem(pair.b, b_name, b_port, by_b, bool(b_named)),
            ]
            problem = "; ".join(p for p in found if p) or None
        rails.append(Rail(a_name, b_name, a_port, b_port, problem))
    return rails


def _natural_port(name: str) -> tuple[str, int, int]:
    device, _, port = name.partition("/")
    head, number = _natural(device)
    return head, number, int(port) if port.isdigit() else 0


def pair_rails(
    pair: NodePair, link_layer: str | None, names: Sequence[str] = (), expected: int | None = None
) -> tuple[list[Rail], list[CommandResult]]:
    """The pair's rails (see :func:`plan_rails`); a pair with no rail at all cannot be measured."""
    a_ports, a_ev = list_ports(pair.a, link_layer)
    b_ports, b_ev = list_ports(pair.b, link_layer)
    rails = plan_rails(pair, a_ports, b_ports, names, expected)
    if not rails:
        side = pair.a if not a_ports else pair.b
        kind = f"{link_layer} " if link_layer else ""
        raise MeasurementError(
            side.name,
            f"no {kind}RDMA port that both {pair.a.name} and {pair.b.name} have",
            command="ibstat",
            fix=f"bring a port up on {side.name} (ibstat shows each port's State), or name the rails in the inventory's rdma_ports",
        )
    return rails, a_ev + b_ev


@dataclass(frozen=True)
class NumaNote:
    """What one side of a rail was bound to: ``numa`` is None when it ran unbound, for ``reason``."""

    node: str
    device: str
    numa: str | None
    reason: str = ""


def numa_prefix(node: NodeHandle, device: str) -> tuple[str, CommandResult, NumaNote]:
    """``numactl`` binding to the HCA's NUMA node, and a note saying what was bound.

    sysfs reports -1 (or nothing) where the machine has one NUMA node or the
    firmware does not say: then nothing is bound.
    """
    result = node.run(
        fill("n=$(cat /sys/class/infiniband/{device}/device/numa_node 2>/dev/null); ", device=device)
        + 'echo "${n:--1} $(command -v numactl >/dev/null 2>&1 && echo numactl)"',
        timeout=15,
        check=False,
    )
    words = result.stdout.split()
    numa = words[0] if words else "-1"
    if not numa.isdigit():
        return "", result, NumaNote(node.name, device, None, "sysfs gives no NUMA node")
    if "numactl" not in words[1:]:
        return "", result, NumaNote(node.name, device, None, f"NUMA node {numa}, but numactl is missing")
    return f"numactl --cpunodebind={numa} --membind={numa} ", result, NumaNote(node.name, device, numa)


def _perftest_args(device: str, ib_port: int, settings: RdmaSettings, port: int) -> str:
    args = [
        f"-d {quote(device)}",
        f"-i {ib_port}",
        f"-p {port}",
        "-F",
        *settings.traffic,
    ]
    return " ".join(args) + (" " + join(settings.extra_args) if settings.extra_args else "")


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


@dataclass
class _Binding:
    """Each side's numactl prefix for one rail, with the evidence and notes that say so."""

    a: str
    b: str
    evidence: list[CommandResult]
    notes: list[NumaNote]


def _bind(pair: NodePair, a_port: RdmaPort, b_port: RdmaPort) -> _Binding:
    a_prefix, a_result, a_note = numa_prefix(pair.a, a_port.device)
    b_prefix, b_result, b_note = numa_prefix(pair.b, b_port.device)
    return _Binding(a_prefix, b_prefix, [a_result, b_result], [a_note, b_note])


def _run_pair(
    pair: NodePair,
    a_port: RdmaPort,
    b_port: RdmaPort,
    settings: RdmaSettings,
    port: int,
    client_args: str,
    binding: _Binding,
    server_settings: RdmaSettings | None = None,
) -> tuple[CommandResult, list[CommandResult]]:
    served = server_settings or settings
    server_cmd = f"{binding.b}{pair.b.tool(settings.tool)} {_perftest_args(b_port.device, b_port.port, served, port)} {client_args}"
    server = pair.b.start(server_cmd, timeout=settings.timeout_s + SERVER_START_S)
    evidence: list[CommandResult] = []
    try:
        _server_listening(pair.b, port, server)
        client_cmd = (
            f"{binding.a}{pair.a.tool(settings.tool)} {_perftest_args(a_port.device, a_port.port, settings, port)} {client_args} "
            f"{quote(pair.b.address)}"
        )
        client = pair.a.run(client_cmd, timeout=settings.timeout_s, check=False)
    finally:
        evidence.append(server.stop())
    return client, evidence


@dataclass(frozen=True)
class Lane:
    """One perftest of a measurement, run at the same time as the others: a rail, or a GPU through its NICs."""

    name: str
    a_port: RdmaPort
    b_port: RdmaPort
    #: options this lane adds to the settings' (``--use_cuda_bus_id=ID``: the GPU whose memory it sends)
    extra_args: tuple[str, ...] = ()
    #: the server's own, where they differ from the client's (its GPU's bus id); None: ``extra_args``
    b_extra_args: tuple[str, ...] | None = None


@dataclass(frozen=True)
class LaneResult:
    """One lane's median over the repeats, its samples, what it ran and how each side was bound."""

    lane: Lane
    median: Quantity
    samples: tuple[Quantity, ...]
    evidence: tuple[CommandResult, ...]
    notes: tuple[NumaNote, ...]
    #: each run's corroborations: perftest's own figures against each other, the ports' counters against them
    corroborations: tuple[corroboration.Corroboration, ...] = ()


def _bandwidth_sample(
    pair: NodePair, lane: Lane, settings: RdmaSettings, port: int, binding: _Binding
) -> tuple[Quantity, list[CommandResult], list[corroboration.Corroboration]]:
    run = dataclasses.replace(settings, extra_args=(*settings.extra_args, *lane.extra_args))
    served = None if lane.b_extra_args is None else dataclasses.replace(
        settings, extra_args=(*settings.extra_args, *lane.b_extra_args))
    args = f"-s {settings.size_bytes} -q {settings.qps} --report_gbits {settings.run_args}"
    # Each lane's own two ports: lanes run at once never share one (lane_groups), so the growth is this run's.
    before = _port_bytes(pair, lane) if settings.witness else ()
    client, server_evidence = _run_pair(pair, lane.a_port, lane.b_port, run, port, args, binding, served)
    after = _port_bytes(pair, lane) if settings.witness else ()
    witnessed = [r.evidence for r in (*before, *after) if r.evidence is not None]
    if client.exit_code != 0 and not _has_bandwidth_table(client.stdout):
        # No table at all: perftest's own words (Couldn't allocate MR, a refused option on stderr
        # while its usage goes to stdout, ...) say more than the parser.
        raise CommandFailed(client)
    parsed = parse_or_raise(perftest.parse_bandwidth, client)
    row = parsed.row_at(settings.size_bytes) if any(r.size_bytes == settings.size_bytes for r in parsed.rows) else parsed.largest_row
    duration = None if settings.iterations is not None else settings.duration_s
    found = [corroboration.perftest_internal(pair.a.name, row, duration)] if settings.corroborate else []
    if settings.corroborate and duration is not None:
        # A -D run's figure is over -D; a client command that returned sooner did not measure it.
        found.append(corroboration.covers_duration(pair.a.name, settings.tool, duration, client.duration_s))
    if before and after:
        # perftest sends for all of -D, its margins too; a -n run its iterations on every QP.
        claimed = (row.bw_average_gbps * 1e9 / 8 * duration if duration is not None
                   else row.iterations * row.size_bytes * settings.qps)
        (a0, b0), (a1, b1) = before, after
        witness = "HCA port counters"
        found += [
            corroboration.counter_witness(witness, pair.a.name, f"{a1.where} PortXmitData", claimed, a0.sent, a1.sent,
                                          why=a0.problem or a1.problem),
            corroboration.counter_witness(witness, pair.a.name, f"{b1.where} PortRcvData", claimed, b0.received,
                                          b1.received, why=b0.problem or b1.problem),
        ]
    return bandwidth(row.bw_average_gbps, "Gb/s"), [client, *server_evidence, *witnessed], found


def _port_bytes(pair: NodePair, lane: Lane) -> tuple[PortBytes, PortBytes]:
    """Both ports' counters at once (one command on each end): the witness adds one round trip, not two."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        a = pool.submit(hca_port_bytes, pair.a, lane.a_port.device, lane.a_port.port)
        b = pool.submit(hca_port_bytes, pair.b, lane.b_port.device, lane.b_port.port)
        return a.result(), b.result()


def lane_groups(lanes: Sequence[Lane], width: int) -> list[list[int]]:
    """Which lanes run together: at most ``width`` (the ports there are), never two through one port.

    Two GPUs behind one NIC would each see half of it: they go in different groups, so each
    lane is still judged on what its own path carries.
    """
    groups: list[list[int]] = []
    for index, lane in enumerate(lanes):
        for group in groups:
            if len(group) < width and all(
                lanes[j].a_port.name != lane.a_port.name and lanes[j].b_port.name != lane.b_port.name for j in group
            ):
                group.append(index)
                break
        else:
            groups.append([index])
    return groups


def lanes_at_once(
    pair: NodePair,
    lanes: Sequence[Lane],
    settings: RdmaSettings,
    failed: Callable[[Lane, TransportError], BaseException] | None = None,
) -> list[LaneResult]:
    """ib_write_bw on every lane at the same time, ``repeat`` runs each; one result per lane, in order.

    Lane ``k`` of a group listens on ``settings.lane_ports[k]``. Every repeat starts all lanes of
    a group together and waits for all of them, so each sample is taken with the other lanes
    loaded (runs of ``-D`` seconds end together). ``failed`` turns a lane's transport error into
    the error to raise (naming the GPU, say); without it the error is raised as it is.
    """
    if not lanes:
        return []
    ports = settings.lane_ports
    groups = lane_groups(lanes, len(ports))

    def sample(lane: Lane, port: int, binding: _Binding
               ) -> tuple[Quantity, list[CommandResult], list[corroboration.Corroboration]]:
        try:
            return _bandwidth_sample(pair, lane, settings, port, binding)
        except TransportError as exc:
            if failed is None:
                raise
            raise failed(lane, exc) from exc

    # One pair's lanes at once: together they are one measurement of one subject, not subjects of
    # a batch, so this is not under --fabric-fanout (batches.fan_out); their count is the pair's
    # rails or GPUs (at most a node's HCAs), a thread each while they wait on their commands.
    with ThreadPoolExecutor(max_workers=max(len(g) for g in groups)) as pool:
        bindings = list(pool.map(lambda lane: _bind(pair, lane.a_port, lane.b_port), lanes))
        samples: list[list[Quantity]] = [[] for _ in lanes]
        evidence: list[list[CommandResult]] = [list(b.evidence) for b in bindings]
        found: list[list[corroboration.Corroboration]] = [[] for _ in lanes]
        for group in groups:
            for _ in range(settings.repeat):
                done = list(pool.map(sample, [lanes[i] for i in group], ports, [bindings[i] for i in group]))
                for k, (value, ran, said) in enumerate(done):
                    samples[group[k]].append(value)
                    evidence[group[k]] += ran
                    found[group[k]] += said
    return [
        LaneResult(
            lane,
            bandwidth(statistics.median(float(s.to("Gb/s")) for s in samples[i]), "Gb/s"),
            tuple(samples[i]),
            tuple(evidence[i]),
            tuple(bindings[i].notes),
            tuple(found[i]),
        )
        for i, lane in enumerate(lanes)
    ]


def rail_bandwidth(
    pair: NodePair, a_port: RdmaPort, b_port: RdmaPort, settings: RdmaSettings, port: int
) -> tuple[Quantity, list[Quantity], list[CommandResult], list[NumaNote]]:
    """Median ib_write_bw bandwidth over ``repeat`` runs of ``duration_s`` between one port of ``a`` and one of ``b``,
    with nothing else of the pair running.

    Returns the median, the samples, the evidence and notes on NUMA binding.
    """
    lane = Lane(a_port.name, a_port, b_port)
    (result,) = lanes_at_once(pair, [lane], dataclasses.replace(settings, ports=(port,)))
    return result.median, list(result.samples), list(result.evidence), list(result.notes)


def _has_bandwidth_table(stdout: str) -> bool:
    try:
        perftest.parse_bandwidth(stdout)
    except ParseError:
        return False
    return True


def _lanes(rails: Sequence[Rail]) -> list[Lane]:
    return [
        Lane(r.name, r.a_port, r.b_port)
        for r in rails
        if r.problem is None and r.a_port is not None and r.b_port is not None
    ]


def rails_at_once(
    pair: NodePair, rails: Sequence[Rail], settings: RdmaSettings, base_port: int
) -> tuple[list[Quantity], list[CommandResult]]:
    """Every usable rail of the pair at the same time (one perftest per rail, ports ``base_port + i``)."""
    lanes = _lanes(rails)
    ports = tuple(base_port + i for i in range(len(lanes)))
    done = lanes_at_once(pair, lanes, dataclasses.replace(settings, ports=ports))
    return [r.median for r in done], [e for r in done for e in r.evidence]


def rails_one_by_one(
    pair: NodePair, rails: Sequence[Rail], settings: RdmaSettings, port: int
) -> tuple[list[Quantity], list[CommandResult]]:
    """Every usable rail of the pair alone, one after the other, all on ``port``: what each carries unloaded."""
    rates: list[Quantity] = []
    evidence: list[CommandResult] = []
    for lane in _lanes(rails):
        median, _, ran, _ = rail_bandwidth(pair, lane.a_port, lane.b_port, settings, port)
        rates.append(median)
        evidence += ran
    return rates, evidence


def _numa_summary(notes: Sequence[NumaNote]) -> str:
    """Per node: which HCA ran on which NUMA node, or why the node ran unbound (``gpu01 mlx5_0 on
    node 0, mlx5_4 on node 1; gpu02 unbound: sysfs gives no NUMA node``)."""
    by_node: dict[str, dict[str, list[str]]] = {}
    for note in dict.fromkeys(notes):
        status = f"on node {note.numa}" if note.numa is not None else f"unbound: {note.reason}"
        by_node.setdefault(note.node, {}).setdefault(status, []).append(note.device)
    parts = []
    for node, statuses in by_node.items():
        if len(statuses) == 1 and next(iter(statuses)).startswith("unbound"):
            parts.append(f"{node} {next(iter(statuses))}")
        else:
            parts.append(f"{node} " + ", ".join(f"{','.join(devices)} {status}" for status, devices in statuses.items()))
    return "NUMA: " + "; ".join(parts) if parts else ""


def _unmeasurable(rails: Sequence[Rail], measured: str, evidence: list[CommandResult], extra: dict[str, object]) -> Measurement:
    broken = [r for r in rails if r.problem]
    text = "; ".join(f"rail {r.name}: {r.problem}" for r in broken)
    reason = f"{len(broken)} of {len(rails)} rail(s) cannot be measured: {text}"
    if measured:
        reason += f"; the other rails: {measured}"
    return Measurement(value="absent", missing=reason, evidence=tuple(evidence), extra=extra)


def pair_bandwidth(
    pair: NodePair,
    settings: RdmaSettings,
    *,
    link_layer: str | None,
    names: Sequence[str] = (),
    expected: int | None = None,
) -> Measurement:
    """ib_write_bw on every rail of the pair at once, each rail judged on its own figure; the verdict
    value is the rail furthest below its line rate, and every rail is listed.

    All at once because that is how a job loads a node: a PCIe switch or host path that two HCAs
    share shows in each rail's figure, which one rail at a time never sees (and it takes one
    rail's time, not the rails' sum). A rail that cannot run (a port Down or missing on one side) fails the pair by name;
    every other rail is still measured and reported.
    """
    rails, evidence = pair_rails(pair, link_layer, names, expected)
    lanes = _lanes(rails)
    done = lanes_at_once(pair, lanes, settings)
    by_name = {r.name: r for r in rails}
    results = []
    notes: list[NumaNote] = []
    found: list[corroboration.Corroboration] = []
    for lane_result in done:
        rail = by_name[lane_result.lane.name]
        evidence += lane_result.evidence
        notes += lane_result.notes
        found += lane_result.corroborations
        line = min(lane_result.lane.a_port.rate, lane_result.lane.b_port.rate)
        median, samples = lane_result.median, list(lane_result.samples)
        results.append((median.value / line.value, median, samples, line, rail))
    rails_text = ", ".join(f"{r.name} {m.display('Gb/s')}" for _, m, _, _, r in results)
    together = max((len(g) for g in lane_groups(lanes, len(settings.lane_ports))), default=0)
    extra: dict[str, object] = {
        # each rail's runs and line rate too: attribution judges every rail on its own (judge/blame.py)
        "rails": [{"a": r.a_name, "b": r.b_name, "gbps": float(m.to("Gb/s")), "line_gbps": float(line.to("Gb/s")),
                   "repeats": [round(float(s.to("Gb/s")), 3) for s in runs]} for _, m, runs, line, r in results],
        "rails_at_once": together,
    }
    if settings.corroborate or settings.witness:
        extra["corroborations"] = [f.to_dict() for f in found]
    at_once = f"{together} rails at once, " if together > 1 else ""
    how = (
        f"ib_write_bw {settings.size_bytes // 2**20} MiB x {settings.qps} QP for {settings.duration_s} s"
        f"{' ' + ' '.join(settings.traffic) if settings.traffic else ''}, {at_once}median of {settings.repeat}"
    )
    if any(r.problem for r in rails):
        return _unmeasurable(rails, rails_text, evidence, extra)
    worst = min(results, key=lambda r: (r[0], r[1].value))
    _, value, samples, line, rail = worst
    detail = f"{how}; worst rail {rail.name} (line {line.display('Gb/s')}); rails: {rails_text}"
    numa = _numa_summary(notes)
    if numa:
        detail += f"; {numa}"
    if settings.corroborate or settings.witness:
        detail += "; " + corroboration.summary(found)
    # Peers are compared on the slowest rail in absolute terms: a port that trained
    # at 100G meets '90% line' of its own rate but is still half its peers.
    extra["consistency_value"] = float(min(m.value for _, m, _, _, _ in results))
    # The worst rail's runs: --compare takes their spread as this figure's own noise.
    extra["repeats"] = {"values": [round(float(s.to("Gb/s")), 3) for s in samples], "unit": "Gb/s"}
    return Measurement(
        value=value,
        detail=detail,
        line_rate=line,
        evidence=tuple(evidence),
        samples=tuple(samples),
        missing=corroboration.failure(found),
        extra=extra,
    )


def pair_latency(
    pair: NodePair,
    settings: RdmaSettings,
    *,
    link_layer: str | None,
    names: Sequence[str] = (),
    expected: int | None = None,
    need_p99: bool = False,
) -> Measurement:
    """ib_write_lat on every rail, ``repeat`` runs of ``iterations`` each, median per rail.

    ``max`` is judged on the worst rail's typical latency, ``p99`` on the worst rail's
    99% percentile; a profile that sets ``p99`` on a run that printed none is an error,
    never a p99 read from the typical figure.

    Rail by rail, not at once like bandwidth: the SLA figure is a rail's unloaded latency, and
    the p99 of a 1-2 us ping-pong moves with whatever else the node does (seven more busy-polling
    ib_write_lat processes on the same cores, caches and PCIe root), so a rail would be judged on
    its neighbours' noise. A rail's run is a second or two, so going one after another costs little.
    """
    rails, evidence = pair_rails(pair, link_layer, names, expected)
    size = settings.size_bytes
    per_rail: list[tuple[Rail, float, float | None]] = []
    notes: list[NumaNote] = []
    for rail in rails:
        if rail.problem is not None or rail.a_port is None or rail.b_port is None:
            continue
        binding = _bind(pair, rail.a_port, rail.b_port)
        evidence += binding.evidence
        notes += binding.notes
        typicals: list[float] = []
        p99s: list[float] = []
        for _ in range(settings.repeat):
            client, ev = _run_pair(pair, rail.a_port, rail.b_port, settings, settings.port, f"-s {size} {settings.run_args}", binding)
            evidence += [client, *ev]
            row = parse_or_raise(perftest.parse_latency, client).smallest_row
            typical = row.latency_typical_us if row.latency_typical_us is not None else row.latency_avg_us
            if typical is None:
                raise MeasurementError(pair.a.name, "ib_write_lat printed no typical or average latency", command=client.command)
            if row.latency_p99_us is None and need_p99:
                raise MeasurementError(
                    pair.a.name,
                    "ib_write_lat printed no '99% percentile' column, and the profile sets a p99 bound",
                    command=client.command,
                    fix="run a perftest that prints percentiles (they come with -n, not -D), or drop rdma_latency.p99",
                )
            typicals.append(typical)
            if row.latency_p99_us is not None:
                p99s.append(row.latency_p99_us)
        per_rail.append((rail, statistics.median(typicals), statistics.median(p99s) if p99s else None))

    def us(value: float) -> str:
        return f"{value:.2f}".rstrip("0").rstrip(".")

    rails_text = ", ".join(
        f"{r.name} {us(t)} us" + (f" (p99 {us(p)} us)" if p is not None else "") for r, t, p in per_rail
    )
    extra: dict[str, object] = {
        "rails": [{"a": r.a_name, "b": r.b_name, "typical_us": t, "p99_us": p} for r, t, p in per_rail],
    }
    if any(r.problem for r in rails):
        return _unmeasurable(rails, rails_text, evidence, extra)
    worst_rail, worst_typical, _ = max(per_rail, key=lambda r: r[1])
    bounds: dict[str, Quantity | str | int | bool] = {"max": parse_quantity(f"{worst_typical} us")}
    p99_rails = [(r, p) for r, _, p in per_rail if p is not None]
    p99_text = ""
    if p99_rails:
        p99_rail, p99 = max(p99_rails, key=lambda r: r[1])
        bounds["p99"] = parse_quantity(f"{p99} us")
        p99_text = f", worst p99 {us(p99)} us on {p99_rail.name}"
    detail = (
        f"ib_write_lat {size} B, {settings.iterations} iterations{' ' + ' '.join(settings.traffic) if settings.traffic else ''}, "
        f"median of {settings.repeat} per rail: worst typical {us(worst_typical)} us on {worst_rail.name}{p99_text}; "
        f"rails: {rails_text}"
    )
    numa = _numa_summary(notes)
    if numa:
        detail += f"; {numa}"
    return Measurement(value=bounds["max"], detail=detail, evidence=tuple(evidence), bounds=bounds, extra=extra)


def read_counters(node: NodeHandle, port: RdmaPort) -> tuple[dict[str, int], CommandResult]:
    """The port's error counters (extended perfquery) by name."""
    result = node.run(fill("perfquery -x -C {device} -P {port}", device=port.device, port=port.port), timeout=30)
    parsed = parse_or_raise(perfquery.parse_perfquery, result)
    counters: dict[str, int] = {}
    for entry in parsed:
        counters.update(perfquery.error_counters(entry))
    return counters, result
