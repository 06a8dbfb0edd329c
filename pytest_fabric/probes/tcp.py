"""TCP throughput between two nodes with iperf3.

The server runs on ``b`` (one process per port, ``-1`` so it exits after one
test, and killed by the transport in any case), the client on ``a`` with
``-J``.  Above ~40 Gb/s one iperf3 process is CPU-bound before 3.16, so
``processes`` > 1 runs several client/server pairs on consecutive ports and
sums what the receivers got.

What a pair asks of each end that does not change during a run (its data
interface, that interface's rate, its NUMA node) is asked once per node and run
through the run's ``once`` (``pytest_fabric/run/once.py``); a pair then costs its
servers, one readiness wait and its clients.
"""

from __future__ import annotations

import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal

from pytest_fabric.config.units import Quantity, bandwidth
from pytest_fabric.judge import corroboration
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers import iperf3
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.probes.netdev import LinkRate, data_interface, link_rate
from pytest_fabric.probes.witness import PortBytes, interface_bytes
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.run.once import Once
from pytest_fabric.session.usage import FabricUsageWarning
from pytest_fabric.transport.base import BackgroundProcess
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import quote

__all__ = ["IPOIB_LINE_SHARE", "TcpSettings", "line_rate", "measure_pair"]

SERVER_READY_TIMEOUT_S = 10.0
# How long one readiness command polls on the node before answering: the controller then checks
# that the servers still run, so a server that died is told within about this long, not at the timeout.
_READY_POLL_S = 1.0
_READY_STEP_S = 0.05
# One text for every pair (its floor's key filled in, the same for every pair), so pytest's warnings
# summary shows it once with the tests it concerns.
IPOIB_LINE_SHARE = (
    "{floor} is a share of line, but TCP runs over IPoIB here: an IPoIB interface "
    "reports the InfiniBand rate (200000 Mb/s on HDR), which TCP over IPoIB does not approach, so a line "
    "share asks for far more than TCP over IB delivers. Line shares for TCP are meant for Ethernet; write an "
    "absolute floor (e.g. 'min: 25 Gb/s', as the bundled IB profiles do). The share is resolved against the "
    "IB data rate, and the check's message names the interfaces."
)


@dataclass(frozen=True)
class TcpSettings:
    streams: int = 4
    duration_s: float = 10.0
    processes: int = 1
    port: int = 5201  # first port; process i uses port + i
    #: judge iperf3's bytes over seconds against its rates (a run always does; see judge/corroboration.py)
    corroborate: bool = False
    #: read both ends' interface counters before and after (the witness iperf3 does not control);
    #: a run sets it from --fabric-no-witness (on unless asked off)
    witness: bool = False


def ready_command(ports: list[int]) -> str:
    """One command that polls ``ss`` on the node until every port listens (or about a second passed), then lists.

    The poll loop runs on the node: a poll from the controller was an SSH command each, and at
    hundreds of pairs a round those were a good share of the run's commands. ``ss``'s local
    address column is followed by a space, so ``:5201 `` does not match port 52010.
    """
    wanted = " ".join(str(p) for p in ports)
    tries = max(1, round(_READY_POLL_S / _READY_STEP_S))
    return (
        f"i=0; while :; do out=$(ss -Hltn); ok=1; for p in {wanted}; do "
        'case "$out" in *":$p "*) ;; *) ok=0 ;; esac; done; '
        f'if [ "$ok" = 1 ] || [ "$i" -ge {tries} ]; then printf "%s\\n" "$out"; exit 0; fi; '
        f"i=$((i + 1)); sleep {_READY_STEP_S:g}; done"
    )


def _wait_listening(node: NodeHandle, ports: list[int], servers: list[BackgroundProcess]) -> list[CommandResult]:
    """Wait until every server port listens, so the client never races the server."""
    wanted = {str(p) for p in ports}
    deadline = time.monotonic() + SERVER_READY_TIMEOUT_S
    evidence: list[CommandResult] = []
    command = ready_command(ports)
    while True:
        # the command answers within about _READY_POLL_S; its timeout only ends a node that hangs
        # (at a load of 240 on the 2-core simulated 512, 11 s was once too short)
        result = node.run(command, timeout=SERVER_READY_TIMEOUT_S + 20, check=False)
        listening = {line.split()[3].rsplit(":", 1)[-1] for line in result.stdout.splitlines() if len(line.split()) > 3}
        if wanted <= listening:
            return evidence
        for server in servers:
            if not server.is_running():
                done = server.stop()
                raise MeasurementError(
                    node.name,
                    "the iperf3 server exited before listening: " + (done.stderr or done.stdout).strip()[-300:],
                    command=server.command,
                    fix=f"check that port {sorted(wanted)} is free on {node.name} (ss -ltnp)",
                )
        if time.monotonic() > deadline:
            evidence.append(result)
            raise MeasurementError(
                node.name,
                f"iperf3 server not listening on {sorted(wanted - listening)} after {SERVER_READY_TIMEOUT_S:g} s",
                command=servers[0].command if servers else None,
                fix="check the node is not overloaded and iperf3 can bind the port",
            )


def numa_pinning(node: NodeHandle, once: Once | None = None) -> tuple[str, list[CommandResult], str]:
    """``numactl`` prefix binding to the NUMA node of the node's data NIC, when it has one and numactl exists.

    Several iperf3 processes only add up to line rate on a fast NIC when they run
    on the cores and memory next to it. With the run's ``once`` it is looked up once per node.
    """
    if once is not None:
        return once.get("numa pinning", node.name, lambda: _numa_pinning(node, once))
    return _numa_pinning(node, None)


def _numa_pinning(node: NodeHandle, once: Once | None) -> tuple[str, list[CommandResult], str]:
    interface, addr = data_interface(node, once)
    iface = quote(interface)
    result = node.run(
        f"n=$(cat /sys/class/net/{iface}/device/numa_node 2>/dev/null); "
        'if [ -n "$n" ] && [ "$n" -ge 0 ] 2>/dev/null && command -v numactl >/dev/null; then echo "$n"; fi',
        timeout=15,
        check=False,
    )
    numa = result.stdout.strip()
    if numa.isdigit():
        return f"numactl --cpunodebind={numa} --membind={numa} ", [addr, result], f"{node.name} pinned to NUMA node {numa}"
    return "", [addr, result], f"{node.name} not pinned ({interface} reports no NUMA node, or numactl is missing)"


def _end(node: NodeHandle, strict: bool, once: Once | None) -> tuple[LinkRate | None, str, list[CommandResult]]:
    """The data interface of one end and what its speed means; with ``strict`` a lookup failure raises."""
    try:
        interface, addr = data_interface(node, once)
    except MeasurementError as exc:
        if strict:
            raise
        return None, f"{node.name}: interface not found ({exc.detail})", []
    rate, result = link_rate(node, interface, once)
    return rate, f"{node.name}:{rate.describe()}", [addr, result]


def line_rate(
    pair: NodePair, *, strict: bool = True, once: Once | None = None
) -> tuple[Quantity | None, list[LinkRate], list[CommandResult], str]:
    """Both ends' data interfaces and the slower one's line rate (None if either cannot give one).

    The line rate is the data rate a share of line is taken of: the speed an
    Ethernet interface reports, the InfiniBand data rate under an IPoIB one.
    The text names both interfaces, and says when an end has no
    ``data_address`` (its SSH host address then picked the interface).
    With the run's ``once`` each end's interface and rate are read once per run.
    """
    evidence: list[CommandResult] = []
    rates: list[LinkRate] = []
    names = []
    for node in (pair.a, pair.b):
        rate, text, ev = _end(node, strict, once)
        evidence += ev
        names.append(text)
        if rate is not None:
            rates.append(rate)
    text = " -> ".join(names)
    unset = [node.name for node in (pair.a, pair.b) if not node.spec.data_address]
    if unset:
        text += (f" (no data_address for {', '.join(unset)}: the interface holding the SSH host address "
                 "was measured)")
    lines = [r.line for r in rates]
    if len(lines) < 2 or any(line is None for line in lines):
        return None, rates, evidence, text
    return min(line for line in lines if line is not None), rates, evidence, text


def measure_pair(
    pair: NodePair, settings: TcpSettings, *, need_line_rate: bool = False, once: Once | None = None,
    floor: str = "the TCP floor",
) -> Measurement:
    """Throughput from ``pair.a`` to ``pair.b`` in bits per second, summed over processes.

    ``once`` is the run's cache of per-node facts (interface, link rate, NUMA node); without it
    every pair looks them up again. ``floor``: the profile key of the floor ``need_line_rate`` is
    for (``layer.check.min``, as the caller's declaration names it), said in what to fix.
    """
    evidence: list[CommandResult] = []
    rate, rates, rate_evidence, path_text = line_rate(pair, strict=need_line_rate, once=once)
    evidence += rate_evidence
    ipoib = [r.interface for r in rates if r.ipoib]
    if need_line_rate and rate is None:
        unnamed = [r.interface for r in rates if r.ipoib and r.reported is not None and r.line is None]
        why = (f"{', '.join(unnamed)} is IPoIB and its InfiniBand port's rate names no speed (QDR or FDR10?), "
               "so its data rate is unknown" if unnamed else "a data interface reports no speed")
        raise MeasurementError(
            pair.a.name,
            f"the profile asks for a share of line rate but {why} ({path_text})",
            command="cat /sys/class/net/IFACE/speed /sys/class/net/IFACE/device/infiniband/*/ports/*/rate",
            fix=f"write an absolute floor (e.g. '90 Gb/s') for {floor} in the profile",
        )
    if need_line_rate and ipoib:
        warnings.warn(FabricUsageWarning(IPOIB_LINE_SHARE.format(floor=floor)), stacklevel=2)

    # Every run is bound to the NIC's NUMA node, one process or several, as
    # ngc_multinode_perf and Azure's checks do: a run on the far socket is slower.
    pin_notes: list[str] = []
    server_prefix, ev, note = numa_pinning(pair.b, once)
    evidence += ev
    pin_notes.append(note)
    client_prefix, ev, note = numa_pinning(pair.a, once)
    evidence += ev
    pin_notes.append(note)

    ports = [settings.port + i for i in range(settings.processes)]
    # the tenant's pinned copy where the inventory pins iperf3 (run/tenant_tools.py), else the node's;
    # asked before the counters are read, so an upload on first use is not counted in the test's bytes
    server_tool, client_tool = pair.b.tool("iperf3"), pair.a.tool("iperf3")
    # Read before any server starts, so the counters' growth covers every byte of the test.
    ends = _witness_ends(pair, once) if settings.witness else []
    before = _read_ends(ends)
    streams_each = max(1, -(-settings.streams // settings.processes))
    duration = max(1, round(settings.duration_s))
    budget = duration + 30
    servers: list[BackgroundProcess] = []
    try:
        for port in ports:
            servers.append(
                pair.b.start(f"{server_prefix}{server_tool} -s -1 -p {port}", timeout=budget + SERVER_READY_TIMEOUT_S)
            )
        _wait_listening(pair.b, ports, servers)
        target = quote(pair.b.address)

        def client(port: int) -> CommandResult:
            return pair.a.run(
                f"{client_prefix}{client_tool} -c {target} -p {port} -t {duration} -P {streams_each} -J",
                timeout=budget,
                check=False,
            )

        # One pair's iperf3 processes, all at once: they are one measurement of one subject (the
        # pair's throughput is their sum while they run together), not subjects of a batch, so
        # this is not under --fabric-fanout (batches.fan_out); their count is the profile's processes.
        with ThreadPoolExecutor(max_workers=len(ports)) as pool:
            results = list(pool.map(client, ports))
    finally:
        for server in servers:
            evidence.append(server.stop())
    after = _read_ends(ends)
    evidence = results + evidence + [r.evidence for r in before + after if r.evidence is not None]
    received = Decimal(0)
    per_process = []
    version = None
    found: list[corroboration.Corroboration] = []
    received_bytes = 0
    for result in results:
        parsed = parse_or_raise(
            iperf3.parse, result, fix=f"check that {pair.a.name} can reach {pair.b.address} (firewall, routing)"
        )
        if parsed.received_bps is None:  # a TCP run always reports it; an old UDP one does not
            raise MeasurementError(result.node, "iperf3 reported no receiver rate", command=result.command)
        received += Decimal(str(parsed.received_bps))
        per_process.append(parsed.received_bps)
        version = version or parsed.version
        if settings.corroborate:
            found += corroboration.iperf3_internal(pair.a.name, parsed)
            found.append(corroboration.covers_duration(pair.a.name, "iperf3", duration, result.duration_s))
        received_bytes += parsed.received_bytes or 0
    if settings.witness:
        found += _counter_findings(pair.a.name, before, after, received_bytes)
    measured = bandwidth(received, "b/s")
    detail = f"iperf3 {pair.a.name} -> {pair.b.name}, {settings.processes} process(es) x {streams_each} stream(s), {duration} s"
    if len(per_process) > 1:
        detail += " (" + " + ".join(f"{v / 1e9:.2f}" for v in per_process) + " Gb/s)"
    detail += f"; measured over {path_text}"
    if rate is not None:
        detail += f"; line rate {rate.display('Gb/s')}"
    if need_line_rate and ipoib:
        detail += "; a line share over IPoIB is a usage warning (see the warnings summary): write an absolute floor"
    if pin_notes:
        detail += "; " + ", ".join(pin_notes)
    extra: dict[str, object] = {"tool_versions": {"iperf3": version} if version else {}}
    if settings.corroborate or settings.witness:
        detail += "; " + corroboration.summary(found)
        extra["corroborations"] = [f.to_dict() for f in found]
    return Measurement(
        value=measured,
        detail=detail,
        line_rate=rate,
        evidence=tuple(evidence),
        missing=corroboration.failure(found),
        extra=extra,
    )


def _witness_ends(pair: NodePair, once: Once | None) -> list[tuple[NodeHandle, str]]:
    """The sender's and the receiver's data interface; an end whose interface is not found has none."""
    ends = []
    for node in (pair.a, pair.b):
        try:
            ends.append((node, data_interface(node, once)[0]))
        except MeasurementError:
            ends.append((node, ""))
    return ends


def _read_ends(ends: list[tuple[NodeHandle, str]]) -> list[PortBytes]:
    """Both ends' interface counters at once (one command each): the witness adds one round trip, not two."""
    if not ends:
        return []
    with ThreadPoolExecutor(max_workers=len(ends)) as pool:
        return list(pool.map(lambda end: interface_bytes(*end), ends))


def _counter_findings(claimant: str, before: list[PortBytes], after: list[PortBytes],
                      received: int) -> list[corroboration.Corroboration]:
    """The bytes iperf3 says arrived (the figure judged) against the sender's tx_bytes and the receiver's rx_bytes.

    Not the sender's own count: iperf3 counts what it wrote into the socket, and what is still in
    the send buffer when the test ends is never sent (a 1 s run on a 100 Mbit/s link claimed 3-6%
    more than tx_bytes grew).  What the receiver read must have left the sender and reached it.
    """
    (a0, b0), (a1, b1) = before, after
    witness = "interface counters"
    return [
        corroboration.counter_witness(witness, claimant, f"{a1.where} tx_bytes", received, a0.sent, a1.sent,
                                      why=a0.problem or a1.problem),
        corroboration.counter_witness(witness, claimant, f"{b1.where} rx_bytes", received, b0.received, b1.received,
                                      why=b0.problem or b1.problem),
    ]
