"""qperf client output (``qperf HOST rc_bw rc_lat ...``): text -> :class:`QperfResult`.

qperf prints each test name followed by indented ``name = value unit`` lines.
Rates use decimal prefixes (qperf's ``GB/sec`` is 10^9 bytes/s, ``Gb/sec`` 10^9
bits/s) and are normalized to Gb/s; times (``ns``, ``us``, ``ms``, ``sec``) to us.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput, register

__all__ = ["QperfResult", "QperfTest", "parse"]

TOOL = "qperf"

_TEST_RE = re.compile(r"^(?P<name>[a-z][a-z0-9_]*):\s*$")
_VALUE_RE = re.compile(r"^(?P<key>[a-z][a-z0-9_ ]*?)\s*=\s*(?P<value>[-+]?\d+(?:\.\d+)?)\s*(?P<unit>\S+)?\s*$")
_ERROR_RE = re.compile(r"^qperf: .*|.*\bfailed to (?:connect|resolve)\b.*|.*\bConnection refused\b.*", re.IGNORECASE)
# bytes or bits per second -> Gb/s (qperf uses decimal prefixes throughout)
_RATE_GBPS = {
    "bytes/sec": 8e-9, "KB/sec": 8e-6, "MB/sec": 8e-3, "GB/sec": 8.0, "TB/sec": 8e3,
    "bits/sec": 1e-9, "Kb/sec": 1e-6, "Mb/sec": 1e-3, "Gb/sec": 1.0, "Tb/sec": 1e3,
}
_TIME_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "sec": 1e6, "s": 1e6}


@dataclass(frozen=True)
class QperfTest:
    """One qperf test's results: bandwidth in Gb/s and latency in us where the test measures them."""

    name: str
    bw_gbps: float | None
    latency_us: float | None
    msg_rate_per_s: float | None
    values: dict[str, str] = field(default_factory=dict)
    """Every ``name = value unit`` line as printed (``bw`` -> ``4.67 GB/sec``)."""

    @property
    def bw_gbytes_per_s(self) -> float | None:
        """The bandwidth in GB/s (10^9 bytes/s)."""
        return None if self.bw_gbps is None else self.bw_gbps / 8


@dataclass(frozen=True)
class QperfResult:
    """Every test of a qperf run, in the order run."""

    tests: tuple[QperfTest, ...]

    def test(self, name: str) -> QperfTest:
        """The test called ``name`` (``rc_bw``); :class:`ParseError` lists the tests present otherwise."""
        for test in self.tests:
            if test.name == name:
                return test
        raise ParseError(TOOL, f"no test {name!r}; tests present: {', '.join(t.name for t in self.tests) or 'none'}")


def _rate(value: float, unit: str | None, line: int) -> float:
    if unit is None or unit not in _RATE_GBPS:
        raise ParseError(TOOL, f"unknown bandwidth unit {unit!r}", line=line)
    return value * _RATE_GBPS[unit]


def _time(value: float, unit: str | None, line: int) -> float:
    if unit is None or unit not in _TIME_US:
        raise ParseError(TOOL, f"unknown time unit {unit!r}", line=line)
    return value * _TIME_US[unit]


_COUNT = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


@register(TOOL, "qperf rc_bw / rc_rdma_*_bw / rc_lat ...: bandwidth in Gb/s, latency in us", corpus=("qperf",))
def parse(text: str) -> QperfResult:
    """Parse ``qperf HOST TEST...`` client output (default or ``-v`` verbose)."""
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    tests: list[QperfTest] = []
    current: dict[str, object] | None = None
    errors: list[str] = []

    def close() -> None:
        if current is not None:
            tests.append(QperfTest(**current))  # type: ignore[arg-type]

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if found := _TEST_RE.match(line):
            close()
            current = {"name": found.group("name"), "bw_gbps": None, "latency_us": None, "msg_rate_per_s": None, "values": {}}
            continue
        found = _VALUE_RE.match(line)
        if found and current is not None:
            key, unit = found.group("key").strip(), found.group("unit")
            value = float(found.group("value"))
            values = current["values"]
            assert isinstance(values, dict)
            values[key] = f"{found.group('value')} {unit}".strip() if unit else found.group("value")
            if key == "bw":
                current["bw_gbps"] = _rate(value, unit, number)
            elif key == "latency":
                current["latency_us"] = _time(value, unit, number)
            elif key == "msg_rate" and unit and unit.endswith("/sec"):
                current["msg_rate_per_s"] = value * _COUNT.get(unit[: -len("/sec")], 1.0)
            continue
        if _ERROR_RE.match(line):
            errors.append(line)
    close()
    if errors and not any(t.bw_gbps is not None or t.latency_us is not None for t in tests):
        raise ToolReportedError(TOOL, "; ".join(errors))
    if not tests:
        raise UnrecognizedOutput(TOOL, "no qperf test block ('rc_bw:' followed by 'bw = ...') found")
    if not any(t.values for t in tests):
        raise UnrecognizedOutput(TOOL, f"test {tests[0].name!r} has no results (output truncated?)")
    return QperfResult(tests=tuple(tests))
