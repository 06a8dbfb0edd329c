"""Does anything but the tool vouch for the figure it printed?  Pure: figures in, findings out.

The provider has root on every node and installs the tools, so a tool's output is the provider's
word. Two kinds of corroboration are judged here:

- **internal**: the tool's own figures agree with each other (perftest's iterations x size over
  its measuring window give its bandwidth; fio's io_bytes over its runtime give its bw; iperf3's
  bytes over seconds give its bits_per_second, on the sender's and the receiver's side). Free, and
  it catches a wrapper that edits one number; a wrapper that edits them all consistently passes.
- **a witness the tool does not control**: counters the kernel or the HCA keeps, read before and
  after the measurement on both ends (``/sys/class/net/IF/statistics/{tx,rx}_bytes`` for TCP,
  PortXmitData/PortRcvData for RDMA), or on the node that ran fio (the block device's sectors in
  ``/proc/diskstats``, an NFS mount's server bytes in ``/proc/self/mountstats``). The bytes the
  tool claims must have crossed the port, or reached the device.

Each finding is a :class:`Corroboration` naming the node whose tool claimed the figure; a check
with one ``uncorroborated`` fails on that node (:func:`failure`). What each witness proves and
what it cannot (a kernel or firmware that lies) is in docs/report.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_fabric.parsers.fio import FioIo
from pytest_fabric.parsers.iperf3 import Iperf3Result
from pytest_fabric.parsers.perftest import PerftestBandwidthRow
from pytest_fabric.parsers.storage_counters import StorageCounters

__all__ = [
    "AGREES", "NOT_RUN", "UNCORROBORATED", "COUNTER_TOLERANCE", "INTERNAL_TOLERANCE",
    "Corroboration", "counter_witness", "covers_duration", "failure", "fio_internal",
    "iperf3_internal", "perftest_internal", "perftest_window_s", "storage_witness", "summary",
]

AGREES = "agrees"
UNCORROBORATED = "uncorroborated"
NOT_RUN = "not run"

#: a tool's own figures are computed from each other; they agree to the digits it prints
INTERNAL_TOLERANCE = 0.02
#: how far a claim may exceed what the port's counters saw. The counters also carry headers
#: (Ethernet, IP, TCP: 66 of every 1514 bytes; IB: LRH/BTH/ICRC) and whatever else crossed the port
#: (SSH, the tool's control connection), so they read more than the payload, never less: a claim 2 %
#: above them is already bytes that never crossed the port.
COUNTER_TOLERANCE = 0.02


@dataclass(frozen=True)
class Corroboration:
    """One corroboration of one figure: which witness, whose claim, and what it found."""

    witness: str
    """``internal``, ``duration``, ``interface counters``, ``HCA port counters``, ``block device counters``,
    ``NFS client counters`` or ``storage counters`` (a filesystem that has neither)."""
    node: str
    """The node whose tool printed the figure (a mismatch is that node's)."""
    status: str
    """:data:`AGREES`, :data:`UNCORROBORATED` or :data:`NOT_RUN` (with why in :attr:`detail`)."""
    detail: str
    claimed: float | None = None
    witnessed: float | None = None
    unit: str = ""
    tolerance: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON for the record."""
        return asdict(self)


def _share(value: float) -> str:
    return f"{value * 100:.1f} %"


def _agree(witness: str, node: str, what: str, claimed: float, derived: float, unit: str,
           tolerance: float) -> Corroboration:
    """Two figures the tool computed from each other: equal within ``tolerance`` of the derived one."""
    if derived <= 0 and claimed <= 0:
        return Corroboration(witness, node, AGREES, f"{what}: both 0", claimed, derived, unit, tolerance)
    off = abs(claimed - derived) / max(abs(derived), 1e-12)
    status = AGREES if off <= tolerance else UNCORROBORATED
    text = (f"{what}: claims {claimed:.6g} {unit}, its own figures give {derived:.6g} {unit} "
            f"({_share(off)} apart, tolerance {_share(tolerance)})")
    return Corroboration(witness, node, status, text, claimed, derived, unit, tolerance)


def perftest_window_s(duration_s: int) -> float:
    """The window perftest measures a ``-D`` run over: the duration less its margin at each end.

    perftest's default margin in duration mode is ``duration / 4`` (integer division;
    src/perftest_parameters.c: ``if (test_type == DURATION && margin == DEF_INIT_MARGIN) margin =
    duration / 4``), and it counts iterations only between the two margins: a 60 s run is measured
    over 30 s (perftest issue 273's ``-D 60`` run: 224958464 x 8 B over 30 s is its 0.48 Gb/s).
    """
    return float(duration_s - 2 * (duration_s // 4))


def perftest_internal(node: str, row: PerftestBandwidthRow, duration_s: int | None, *,
                      bidirectional: bool = False, tolerance: float = INTERNAL_TOLERANCE) -> Corroboration:
    """perftest's iterations x message size over its measuring window against its average bandwidth."""
    if duration_s is None:
        return Corroboration("internal", node, NOT_RUN,
                             "perftest iterations x size / window: a -n run prints no window to divide by")
    window = perftest_window_s(duration_s)
    if window <= 0:
        return Corroboration("internal", node, NOT_RUN, f"perftest -D {duration_s}: no measuring window")
    derived = row.iterations * row.size_bytes * 8 * (2 if bidirectional else 1) / window / 1e9
    return _agree("internal", node, f"perftest {row.iterations} iterations x {row.size_bytes} B / {window:g} s",
                  row.bw_average_gbps, derived, "Gb/s", tolerance)


def covers_duration(node: str, tool: str, asked_s: float, took_s: float, *,
                    slack_s: float = 0.05) -> Corroboration:
    """The command that ran ``tool`` for ``asked_s`` seconds (``-D``, ``-t``) took at least that long.

    A command no transport timed (0 s) is not run: nothing says how long it took.
    """
    if took_s <= 0:
        return Corroboration("duration", node, NOT_RUN, f"{tool}: the transport did not time its command")
    status = AGREES if took_s + slack_s >= asked_s else UNCORROBORATED
    text = f"{tool} was asked to run {asked_s:g} s; its command took {took_s:.2f} s"
    if status == UNCORROBORATED:
        text += ": it cannot have measured for the time its figure is over"
    return Corroboration("duration", node, status, text, asked_s, took_s, "s", None)


def fio_internal(node: str, io: FioIo, direction: str, *, tolerance: float = INTERNAL_TOLERANCE) -> Corroboration:
    """fio's io_bytes over its runtime against its bandwidth (``bw_bytes``)."""
    if io.runtime_ms is None or io.runtime_ms <= 0:
        return Corroboration("internal", node, NOT_RUN, f"fio {direction}: no runtime printed")
    derived = io.io_bytes / (io.runtime_ms / 1000)
    return _agree("internal", node, f"fio {direction} {io.io_bytes} B / {io.runtime_ms / 1000:g} s",
                  io.bw_bytes_per_s, derived, "B/s", tolerance)


def iperf3_internal(node: str, result: Iperf3Result, *, tolerance: float = INTERNAL_TOLERANCE) -> list[Corroboration]:
    """iperf3's bytes over seconds against bits_per_second, the sender's and the receiver's, each flow."""
    found: list[Corroboration] = []
    for flow in result.flows:
        for end, nbytes, seconds, bps in (
            ("sender", flow.sent_bytes, flow.duration_s, flow.sent_bps),
            ("receiver", flow.received_bytes, flow.received_duration_s or flow.duration_s, flow.received_bps),
        ):
            what = f"iperf3 {flow.direction} {end}"
            if nbytes is None or bps is None or not seconds:
                found.append(Corroboration("internal", node, NOT_RUN, f"{what}: bytes, seconds or rate not printed"))
                continue
            found.append(_agree("internal", node, f"{what} {nbytes} B / {seconds:g} s", bps,
                                nbytes * 8 / seconds, "b/s", tolerance))
    return found


def counter_witness(witness: str, node: str, what: str, claimed_bytes: float, before: int | None,
                    after: int | None, *, tolerance: float = COUNTER_TOLERANCE,
                    why: str | None = None, crossed: str = "crossed the port") -> Corroboration:
    """The bytes a tool claims against a counter's growth over the measurement (read before and after).

    The counter carries headers and other traffic too, so it may read more than the claim; a claim
    above it by more than ``tolerance`` is bytes that never crossed the port.
    """
    if before is None or after is None:
        said = f" ({why})" if why else ""
        return Corroboration(witness, node, NOT_RUN, f"{what}: counter not readable before and after{said}",
                             claimed_bytes, None, "B", tolerance)
    seen = after - before
    if seen < 0:
        return Corroboration(witness, node, NOT_RUN, f"{what}: the counter went back ({before} -> {after}): "
                             "reset or wrapped during the measurement", claimed_bytes, None, "B", tolerance)
    limit = seen * (1 + tolerance)
    if claimed_bytes <= limit:
        text = f"{what}: the tool claims {claimed_bytes:.6g} B, the counter grew {seen} B"
        return Corroboration(witness, node, AGREES, text, claimed_bytes, float(seen), "B", tolerance)
    ratio = claimed_bytes / seen if seen else float("inf")
    text = (f"{what}: the tool claims {claimed_bytes:.6g} B but the counter grew only {seen} B "
            f"({'x' + format(ratio, '.2f') if seen else 'nothing'}; tolerance {_share(tolerance)}): "
            f"the bytes it reports never {crossed}")
    return Corroboration(witness, node, UNCORROBORATED, text, claimed_bytes, float(seen), "B", tolerance)


def storage_witness(node: str, direction: str, claimed_bytes: float, before: StorageCounters | None,
                    after: StorageCounters | None, *, tolerance: float = COUNTER_TOLERANCE,
                    why: str | None = None) -> Corroboration:
    """The bytes fio claims it read or wrote against what the storage under its directory counted meanwhile.

    A block device's sectors (``/proc/diskstats``) count every request that reached it, the
    filesystem's metadata and journal and other programs' I/O too, so they read more than fio's
    bytes, never less; an NFS client's server bytes count what its READ and WRITE calls moved. A
    filesystem with neither (tmpfs, overlay, a FUSE or btrfs device number no device line has) has
    no witness here: that is said, never passed as corroborated.
    """
    if before is None or after is None:
        said = f" ({why})" if why else ""
        return Corroboration("storage counters", node, NOT_RUN, f"fio {direction}: storage counters not readable "
                             f"before and after{said}", claimed_bytes, None, "B", tolerance)
    if (before.major_minor, before.target) != (after.major_minor, after.target):
        return Corroboration("storage counters", node, NOT_RUN,
                             f"fio {direction}: the directory was on {before.fstype} {before.major_minor} "
                             f"({before.target}) before and on {after.fstype} {after.major_minor} ({after.target}) "
                             "after: remounted during the run", claimed_bytes, None, "B", tolerance)
    reading = direction == "read"
    if after.device is not None:
        field = "sectors read" if reading else "sectors written"
        return counter_witness("block device counters", node,
                               f"fio {direction} on {after.fstype} {after.target}: {after.device} {field} x 512",
                               claimed_bytes, before.bytes_read if reading else before.bytes_written,
                               after.bytes_read if reading else after.bytes_written, tolerance=tolerance,
                               crossed="reached the device")
    if after.nfs_server_read is not None:
        field = "serverreadbytes" if reading else "serverwritebytes"
        return counter_witness("NFS client counters", node,
                               f"fio {direction} on {after.fstype} {after.target}: mountstats {field}",
                               claimed_bytes, before.bytes_read if reading else before.bytes_written,
                               after.bytes_read if reading else after.bytes_written, tolerance=tolerance,
                               crossed="went to the server")
    return Corroboration("storage counters", node, NOT_RUN,
                         f"fio {direction}: no witness on this filesystem ({after.fstype} on {after.target}, device "
                         f"{after.major_minor}: no block device line in /proc/diskstats, no NFS bytes in mountstats)",
                         claimed_bytes, None, "B", tolerance)


def failure(found: Iterable[Corroboration]) -> str | None:
    """The reason a check fails when a corroboration found the claim unsupported; ``None`` when none did."""
    bad = [c for c in found if c.status == UNCORROBORATED]
    if not bad:
        return None
    nodes = sorted({c.node for c in bad})
    return f"uncorroborated on {', '.join(nodes)}: " + "; ".join(f"{c.node}: {c.detail}" for c in bad)


def summary(found: Sequence[Corroboration]) -> str:
    """One line for the check's detail: each witness and how many of its findings agreed."""
    if not found:
        return "no corroboration ran"
    parts = []
    for witness in dict.fromkeys(c.witness for c in found):
        mine = [c for c in found if c.witness == witness]
        counts = {s: sum(1 for c in mine if c.status == s) for s in (AGREES, UNCORROBORATED, NOT_RUN)}
        parts.append(f"{witness}: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return "corroborated by " + "; ".join(parts)
