"""sockperf ping-pong client output: text -> :class:`SockperfResult`.

sockperf colours some lines with ANSI escapes; they are stripped first.  Two
labellings exist: older releases print ``avg-lat=`` and ``Summary: Latency is``,
which (without ``--full-rtt``) is half the round trip; newer ones print
``avg-rtt=`` and ``Summary: Round trip is``, the full round trip.  The figures
are kept as printed and ``round_trip`` says which they are; ``rtt_avg_us`` always
gives the round trip.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput, register

__all__ = ["SockperfResult", "parse"]

TOOL = "sockperf"

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_VERSION_RE = re.compile(r"== version #(?P<version>\S+)")
_TARGET_RE = re.compile(r"IP = (?P<ip>\S+)\s+PORT =\s*(?P<port>\d+)\s*#\s*(?P<protocol>TCP|UDP)")
_VALID_RE = re.compile(
    r"\[Valid Duration\] RunTime=(?P<runtime>\d+(?:\.\d+)?) sec; SentMessages=(?P<sent>\d+); ReceivedMessages=(?P<received>\d+)"
)
_AVG_RE = re.compile(r"avg-(?P<kind>lat|rtt)=\s*(?P<avg>\d+(?:\.\d+)?)\s*\(std-dev=\s*(?P<stdev>\d+(?:\.\d+)?)")
_SUMMARY_RE = re.compile(r"Summary: (?P<kind>Latency|Round trip) is\s+(?P<value>\d+(?:\.\d+)?)\s+usec")
_DROPS_RE = re.compile(
    r"# dropped messages = (?P<dropped>\d+); # duplicated messages = (?P<dup>\d+); # out-of-order messages = (?P<ooo>\d+)"
)
_OBSERVATIONS_RE = re.compile(r"Total (?P<count>\d+) observations")
_PERCENTILE_RE = re.compile(r"---> percentile\s+(?P<point>\d+(?:\.\d+)?)\s*=\s*(?P<value>\d+(?:\.\d+)?)")
_OLD_PERCENTILE_RE = re.compile(r"Total (?P<point>\d+(?:\.\d+)?) Percentile is\s+(?P<value>\d+(?:\.\d+)?) usec")
_MINMAX_RE = re.compile(r"---> <(?P<which>MIN|MAX)> observation\s*=\s*(?P<value>\d+(?:\.\d+)?)")
_ERROR_RE = re.compile(r"sockperf: (?:ERROR|error)\b.*|.*\b(?:Connection refused|No route to host)\b.*")


@dataclass(frozen=True)
class SockperfResult:
    """A parsed ``sockperf ping-pong`` run; latencies in microseconds."""

    version: str | None
    protocol: str | None
    server: str | None
    round_trip: bool
    """True when the figures are full round trips (``avg-rtt``), False for ``avg-lat`` (half)."""
    latency_avg_us: float
    latency_stdev_us: float | None
    latency_min_us: float | None
    latency_max_us: float | None
    percentiles_us: dict[float, float] = field(default_factory=dict)
    """``99.0 -> us``, as printed."""
    observations: int | None = None
    runtime_s: float | None = None
    sent_messages: int | None = None
    received_messages: int | None = None
    dropped_messages: int | None = None
    duplicated_messages: int | None = None
    out_of_order_messages: int | None = None

    @property
    def rtt_avg_us(self) -> float:
        """Average round trip in us, whichever labelling the version used."""
        return self.latency_avg_us if self.round_trip else 2 * self.latency_avg_us


@register(TOOL, "sockperf ping-pong: average latency, std-dev, percentiles in us", corpus=("sockperf",))
def parse(text: str) -> SockperfResult:
    """Parse ``sockperf ping-pong`` (``pp``) client output, ANSI colours and either labelling."""
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    clean = _ANSI_RE.sub("", text)
    avg = _AVG_RE.search(clean)
    summary = _SUMMARY_RE.search(clean)
    if avg is None and summary is None:
        errors = [m.group(0).strip() for m in _ERROR_RE.finditer(clean)]
        if errors:
            raise ToolReportedError(TOOL, "; ".join(errors))
        raise UnrecognizedOutput(TOOL, "no 'avg-lat=' / 'avg-rtt=' or 'Summary:' latency line found")
    if avg is not None:
        round_trip = avg.group("kind") == "rtt"
        average = float(avg.group("avg"))
        stdev: float | None = float(avg.group("stdev"))
    else:
        assert summary is not None
        round_trip = summary.group("kind") == "Round trip"
        average = float(summary.group("value"))
        stdev = None
    percentiles = {float(m.group("point")): float(m.group("value")) for m in _PERCENTILE_RE.finditer(clean)}
    for m in _OLD_PERCENTILE_RE.finditer(clean):
        percentiles.setdefault(float(m.group("point")), float(m.group("value")))
    extremes = {m.group("which"): float(m.group("value")) for m in _MINMAX_RE.finditer(clean)}
    version = _VERSION_RE.search(clean)
    target = _TARGET_RE.search(clean)
    valid = _VALID_RE.search(clean)
    drops = _DROPS_RE.search(clean)
    observations = _OBSERVATIONS_RE.search(clean)
    return SockperfResult(
        version=version.group("version") if version else None,
        protocol=target.group("protocol") if target else None,
        server=target.group("ip") if target else None,
        round_trip=round_trip,
        latency_avg_us=average,
        latency_stdev_us=stdev,
        latency_min_us=extremes.get("MIN"),
        latency_max_us=extremes.get("MAX"),
        percentiles_us=percentiles,
        observations=int(observations.group("count")) if observations else None,
        runtime_s=float(valid.group("runtime")) if valid else None,
        sent_messages=int(valid.group("sent")) if valid else None,
        received_messages=int(valid.group("received")) if valid else None,
        dropped_messages=int(drops.group("dropped")) if drops else None,
        duplicated_messages=int(drops.group("dup")) if drops else None,
        out_of_order_messages=int(drops.group("ooo")) if drops else None,
    )
