"""Egress from a node: name resolution, TCP connect time, download and upload throughput.

Everything is timed on the node itself, so the figure is the node's path to
the target and not the SSH round trip: ``date +%s%N`` around ``getent ahosts``
for DNS, bash's ``$EPOCHREALTIME`` around ``/dev/tcp`` opens for the connect
time (no fork between the two clock reads), and curl's own ``-w`` statistics
for transfers.

A target the node cannot reach (no such name, refused, no answer, connection
cut) is a *failed* check: the inventory names it as something the cluster must
reach, so "cannot connect" is the finding, reported with curl's or bash's own
words.  A missing tool, a URL that answers 404, or output we cannot read is an
*error*: the check could not say anything about the egress.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import urlsplit

from pytest_fabric.config.units import bandwidth, parse_quantity
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import ToolMissing
from pytest_fabric.transport.packages import missing_tool, package_for
from pytest_fabric.transport.shellcmd import fill

__all__ = [
    "CONNECT_REPEAT",
    "TRANSFER_MAX_TIME_S",
    "UPLOAD_BYTES",
    "ConnectOutcome",
    "CurlStats",
    "connect_error",
    "connect_latency",
    "dns_resolve",
    "download",
    "is_url",
    "parse_connect_output",
    "parse_curl_stats",
    "range_outcome",
    "target_host",
    "target_port",
    "upload",
]

#: TCP connects per measurement; the median is reported, so one slow SYN does not decide.
CONNECT_REPEAT = 3
CONNECT_TIMEOUT_S = 10
#: a transfer stops here; a slow link still yields a figure (bytes so far / time)
TRANSFER_MAX_TIME_S = 30
#: what an upload sends (zeros, from memory on the node; nothing is written to its disk)
UPLOAD_BYTES = 32 * 2**20

# curl exit codes that mean "the node cannot reach the target": a failed egress
# check, not a broken tool.  (`man curl`, EXIT CODES.)
_CURL_UNREACHABLE = {
    5: "could not resolve the proxy",
    6: "could not resolve the host",
    7: "could not connect",
    28: "timed out",
    35: "TLS handshake failed",
    52: "the server sent nothing",
    55: "sending data failed",
    56: "receiving data failed",
}
_STATS_MARK = "pytest-fabric-curl"


def target_host(target: str) -> str:
    """The host part of ``https://host/path`` or ``host:port``."""
    parts = urlsplit(target if "://" in target else f"tcp://{target}")
    return parts.hostname or target


def target_port(target: str) -> int | None:
    """The TCP port a target listens on: explicit, else the scheme's (80, 443); None for a bare host."""
    parts = urlsplit(target if "://" in target else f"tcp://{target}")
    if parts.port is not None:
        return parts.port
    return {"http": 80, "https": 443}.get(parts.scheme)


def is_url(target: str) -> bool:
    """Whether the target is an http(s) URL (something to download or upload), not host:port."""
    return urlsplit(target).scheme in ("http", "https")


def dns_resolve(node: NodeHandle, target: str) -> Measurement:
    """Time to resolve the target's host name on the node."""
    host = target_host(target)
    command = fill(
        "s=$(date +%s%N); getent ahosts {host} >/dev/null; rc=$?; e=$(date +%s%N); "
        'echo "$rc $((e - s))"', host=host,
    )
    result = node.run(command, timeout=30)
    fields = result.stdout.split()
    if len(fields) != 2 or not all(f.lstrip("-").isdigit() for f in fields):
        raise MeasurementError(
            node.name,
            f"could not read the timing line from {result.stdout.strip()!r}",
            command=command,
            fix="the node needs getent (libc-bin) and GNU date",
        )
    rc, elapsed_ns = int(fields[0]), int(fields[1])
    if rc != 0:
        reason = {2: "the name does not exist (NXDOMAIN)", 1: "bad arguments", 3: "getent cannot enumerate"}.get(
            rc, f"getent exited {rc}"
        )
        return Measurement.absent(f"{host} did not resolve on {node.name}: {reason}", (result,))
    return Measurement(
        value=parse_quantity(f"{elapsed_ns} ns"),
        detail=f"getent ahosts {host} on {node.name}",
        evidence=(result,),
    )


# ---------------------------------------------------------------------------
# TCP connect time


@dataclass(frozen=True)
class ConnectOutcome:
    """What the connect script printed: the address tried and each connect's seconds."""

    resolved: bool
    address: str | None
    exit_code: int | None  # of the connect loop: 0 ok, 124 no answer in time, other: refused/unreachable
    seconds: tuple[Decimal, ...]


def _connect_command(host: str, port: int, repeat: int, timeout_s: int) -> str:
    # Resolve first and connect to the address, so name lookup is not in the figure
    # (dns_resolve measures that).  Inside one bash, $EPOCHREALTIME is read without a
    # fork on either side of the open, unlike `date`.
    loop = (
        'for i in $(seq "$2"); do s=$EPOCHREALTIME; exec 3<>"/dev/tcp/$0/$1" || exit 3; '
        'e=$EPOCHREALTIME; exec 3>&-; echo "connect $s $e"; done'
    )
    return fill(
        "a=$(getent ahosts {host} | awk 'NR==1 {{print $1; exit}}'); "
        'if [ -z "$a" ]; then echo unresolved; exit 0; fi; echo "address $a"; '
        'LC_ALL=C timeout {timeout_s} bash -c {loop} "$a" {port} {repeat}; echo "rc $?"',
        host=host, timeout_s=timeout_s, loop=loop, port=port, repeat=repeat,
    )


def parse_connect_output(text: str) -> ConnectOutcome:
    """Read the connect script's lines (``address A``, ``connect S E``..., ``rc N`` or ``unresolved``).

    Raises ValueError when the lines are not there (no bash 5, no getent): the
    probe turns that into a measurement error naming the node.
    """
    address: str | None = None
    exit_code: int | None = None
    seconds: list[Decimal] = []
    for line in text.splitlines():
        fields = line.split()
        if fields == ["unresolved"]:
            return ConnectOutcome(False, None, None, ())
        if len(fields) == 2 and fields[0] == "address":
            address = fields[1]
        elif len(fields) == 2 and fields[0] == "rc" and fields[1].isdigit():
            exit_code = int(fields[1])
        elif len(fields) == 3 and fields[0] == "connect":
            # A locale with a decimal comma would print 1700000000,123456.
            start, end = (Decimal(f.replace(",", ".")) for f in fields[1:])
            seconds.append(end - start)
        elif len(fields) == 1 and fields[0] == "connect":
            raise ValueError("bash did not set $EPOCHREALTIME (bash 5 or later is needed)")
    if address is None or exit_code is None:
        raise ValueError(f"expected 'address' and 'rc' lines, got {text.strip()!r}")
    return ConnectOutcome(True, address, exit_code, tuple(seconds))


def connect_latency(node: NodeHandle, target: str, repeat: int = CONNECT_REPEAT) -> Measurement:
    """Median time of ``repeat`` TCP connects from the node to the target's host and port."""
    host, port = target_host(target), target_port(target)
    if port is None:
        raise MeasurementError(
            node.name, f"{target} names no port", fix="write the target as host:port or as an http(s) URL"
        )
    command = _connect_command(host, port, repeat, CONNECT_TIMEOUT_S)
    result = node.run(command, timeout=CONNECT_TIMEOUT_S + 20)
    try:
        outcome = parse_connect_output(result.stdout)
    except ValueError as exc:
        raise MeasurementError(
            node.name, f"could not read the connect timings: {exc}", command=command,
            fix="the node needs bash 5, getent (libc-bin), awk and timeout (coreutils)",
        ) from None
    where = f"{host}:{port}"
    if not outcome.resolved:
        return Measurement.absent(f"{host} did not resolve on {node.name}", (result,))
    if outcome.exit_code == 124:
        return Measurement.absent(
            f"no answer from {where} ({outcome.address}) on {node.name} within {CONNECT_TIMEOUT_S} s", (result,)
        )
    if outcome.exit_code != 0 or not outcome.seconds:
        said = connect_error(result.stderr) or f"exit code {outcome.exit_code}"
        return Measurement.absent(f"cannot connect to {where} ({outcome.address}) from {node.name}: {said}", (result,))
    samples = tuple(parse_quantity(f"{s} s") for s in outcome.seconds)
    median = statistics.median(outcome.seconds)
    shown = ", ".join(f"{float(s) * 1000:.3g}" for s in outcome.seconds)
    return Measurement(
        value=parse_quantity(f"{median} s"),
        detail=f"median of {len(samples)} TCP connects from {node.name} to {where} ({outcome.address}): {shown} ms",
        evidence=(result,),
        samples=samples,
        # --compare takes the spread of the connects as this figure's own noise.
        extra={"repeats": {"values": [round(float(s) * 1000, 3) for s in outcome.seconds], "unit": "ms"}},
    )


# ---------------------------------------------------------------------------
# Transfers with curl


@dataclass(frozen=True)
class CurlStats:
    """curl's ``-w`` figures for one transfer."""

    http_code: int
    size_bytes: int
    speed_bytes_per_s: float
    time_total_s: float


def _write_out(direction: str) -> str:
    # On its own line behind a marker: stdout may hold a response body on a server
    # that ignores -o for some redirect, and the mark makes the line unambiguous.
    return f"\\n{_STATS_MARK} %{{http_code}} %{{size_{direction}}} %{{speed_{direction}}} %{{time_total}}\\n"


def parse_curl_stats(text: str) -> CurlStats | None:
    """The figures from our ``-w`` line, or None when curl printed none (it did not run)."""
    for line in reversed(text.splitlines()):
        fields = line.split()
        if len(fields) == 5 and fields[0] == _STATS_MARK:
            try:
                return CurlStats(
                    http_code=int(fields[1]),
                    size_bytes=int(float(fields[2].replace(",", "."))),
                    speed_bytes_per_s=float(fields[3].replace(",", ".")),
                    time_total_s=float(fields[4].replace(",", ".")),
                )
            except ValueError:
                return None
    return None


def connect_error(stderr: str) -> str:
    """What a failed connect said, as the tool and not the shell says it: ``connection refused``.

    The connect loop opens ``/dev/tcp/ADDRESS/PORT`` in bash, whose complaint is
    ``bash: line 1: /dev/tcp/10.0.0.1/9999: Connection refused``; the person reading the check
    wants the last part (the address and port are in the message already).
    """
    line = _last_line(stderr)
    found = _BASH_TCP_ERROR.search(line)
    said = found.group(1) if found else line
    return said[:1].lower() + said[1:]


_BASH_TCP_ERROR = re.compile(r"/dev/tcp/[^:]*: (.+)$")
_WRITE_OUT_ARG = re.compile(r" -w '[^']*'")


def _shown(command: str) -> str:
    """The curl command as a person would type it to try again: without our ``-w`` statistics format."""
    return _WRITE_OUT_ARG.sub("", command)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _transfer(node: NodeHandle, url: str, command: str, direction: str, asked: int | None = None) -> Measurement:
    """Run a curl transfer; unreachable -> failed check, broken tool or URL -> error.

    ``asked``: the bytes a bounded download asked for (:func:`range_outcome` says when it got other).
    """
    result = node.run(command, timeout=TRANSFER_MAX_TIME_S + 30, check=False)
    tool = missing_tool(result.exit_code, result.stderr, result.command)
    if tool is not None:
        raise ToolMissing(node.name, tool, command=_shown(command), package=package_for(tool))
    stats = parse_curl_stats(result.stdout)
    said = _last_line(result.stderr)
    verb = {"download": "download from", "upload": "upload to"}[direction]
    partial = result.exit_code == 28 and stats is not None and stats.size_bytes > 0
    if result.exit_code != 0 and not partial:
        if result.exit_code in _CURL_UNREACHABLE:
            reason = said or _CURL_UNREACHABLE[result.exit_code]
            return Measurement.absent(f"cannot {verb} {url} on {node.name}: {reason}", (result,))
        raise MeasurementError(
            node.name,
            f"curl could not {verb} {url}: {said or f'exit code {result.exit_code}'}",
            command=_shown(command),
            fix="run the curl command by hand on the node (certificates, proxy settings, curl version)",
        )
    if stats is None:
        raise MeasurementError(
            node.name, f"curl printed no transfer figures for {url}", command=_shown(command),
            fix="curl 7.x or later is needed for -w statistics",
        )
    if not 200 <= stats.http_code < 300:
        fix = (
            "give the target `upload: false` in the inventory, or point it at a URL that accepts PUT"
            if direction == "upload"
            else "check the URL in the inventory's egress.targets"
        )
        raise MeasurementError(node.name, f"{url} answered HTTP {stats.http_code} to {node.name}", command=_shown(command), fix=fix)
    if stats.size_bytes <= 0 or stats.speed_bytes_per_s <= 0:
        raise MeasurementError(node.name, f"curl moved no data to or from {url}", command=_shown(command))
    detail = f"curl {direction} {url} on {node.name}: {stats.size_bytes / 2**20:.1f} MiB in {stats.time_total_s:.2f} s"
    if partial:
        detail += f" (stopped at the {TRANSFER_MAX_TIME_S} s limit)"
    extra: dict[str, object] = {"http_code": stats.http_code, "bytes": stats.size_bytes}
    if asked is not None:
        said_range = range_outcome(stats, asked, partial)
        if said_range:
            detail += f"; {said_range}"
        extra["asked_bytes"] = asked
    return Measurement(
        value=bandwidth(stats.speed_bytes_per_s, "B/s"),
        detail=detail,
        evidence=(result,),
        extra=extra,
    )


def _size(nbytes: int) -> str:
    """``2.0 GiB``, ``256.0 MiB``, ``900 B``: a size as the detail shows it."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def range_outcome(stats: CurlStats, asked: int, partial: bool) -> str:
    """What a download bounded to its first ``asked`` bytes (an HTTP Range) moved, when not just that.

    A server that does not serve ranges answers 200 and sends the whole file: the figure is still
    the node's rate over what it moved, so it is measured and judged, and the detail says why the
    transfer took longer than the profile's ``bytes`` would. A file shorter than ``bytes`` answers
    206 with all of it. Empty when the server sent what was asked.
    """
    moved = _size(stats.size_bytes)
    if stats.http_code != 206:
        if partial:
            return (f"the server ignored the range (HTTP {stats.http_code}, not 206): {moved} of the whole file "
                    f"was downloaded before the {TRANSFER_MAX_TIME_S} s limit, not the {_size(asked)} asked for")
        return (f"the server ignored the range (HTTP {stats.http_code}, not 206): the whole {moved} file was "
                f"downloaded, not the {_size(asked)} asked for")
    if stats.size_bytes > asked:
        return f"the server sent {moved}, more than the {_size(asked)} range asked for"
    if stats.size_bytes < asked and not partial:
        return f"the file is smaller than bytes ({_size(asked)}): all of its {moved} was downloaded"
    return ""


def _curl(url: str, direction: str) -> str:
    # --globoff: curl reads [1-3] and {a,b} in a URL as a list of URLs, so one target would be
    # many transfers reported as one (issue 27: `f[1-3]{,,}` sent 9 GETs). The inventory refuses
    # such URLs too; here one target is one transfer whatever reaches this line.
    return fill(
        "curl -sS --globoff -o /dev/null --connect-timeout {connect} --max-time {most} -w {write_out}",
        connect=CONNECT_TIMEOUT_S, most=TRANSFER_MAX_TIME_S, write_out=_write_out(direction),
    )


def download(node: NodeHandle, url: str, size_bytes: int | None = None) -> Measurement:
    """Download throughput of ``url`` on the node (curl's average over what it moved).

    ``size_bytes``: ask for the file's first that many bytes only (``-r 0-N-1``, an HTTP Range), so
    the transfer lasts as long as the profile needs whatever the file's size; None: the whole file.
    """
    if not is_url(url):
        raise MeasurementError(node.name, f"{url} is not an http(s) URL", fix="give a URL of a file to download")
    if size_bytes is not None and size_bytes < 1:
        raise ValueError(f"size_bytes must be at least 1, not {size_bytes}")
    bounded = "" if size_bytes is None else fill(" -r {range}", range=f"0-{int(size_bytes) - 1}")
    return _transfer(node, url, _curl(url, "download") + bounded + fill(" {url}", url=url), "download", size_bytes)


def upload(node: NodeHandle, url: str, size_bytes: int | None = None) -> Measurement:
    """Upload throughput to ``url``: an HTTP PUT of ``size_bytes`` zeros (None: :data:`UPLOAD_BYTES`),
    streamed from memory."""
    size_bytes = UPLOAD_BYTES if size_bytes is None else size_bytes
    if not is_url(url):
        raise MeasurementError(node.name, f"{url} is not an http(s) URL", fix="give a URL that accepts PUT")
    # `Expect:` off: curl would otherwise wait up to a second for a 100-continue
    # that many servers never send, and count that second in the speed.
    command = (
        fill("head -c {size} /dev/zero | ", size=int(size_bytes)) + _curl(url, "upload")
        + fill(" -X PUT -H 'Expect:' -H 'Content-Type: application/octet-stream' --data-binary @- {url}", url=url)
    )
    return _transfer(node, url, command, "upload")
