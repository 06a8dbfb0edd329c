"""A soak judged over time: every cycle's checks, each figure's drift, and the telemetry between them.

``--soak 8h`` runs the selected checks in cycles and samples telemetry the whole time
(``pytest_fabric.session.soak``); this module decides, from what that gathered, whether the soak
passed, and names the moment each fault began.  Pure: plain data in, a :class:`SoakVerdict` out
(no pytest, no I/O), so the plugin, the record and the tests read one judgement.

The rules (docs/running.md, "A burn-in"):

- **every cycle passes**: a check that failed in cycle *k* is a fault of cycle *k* (the first
  cycle it failed in is named: that is when it began); one that could not measure in cycle *k*
  is said the same way, and makes the soak incomplete rather than failed (nothing unmeasured
  counts toward a verdict);
- **no drift** (where the profile's ``soak.max_drift`` is set): a figure more than ``max_drift``
  worse than the best it showed in an earlier cycle fails from that cycle on, even while it
  stays above its floor (a link at 90 Gb/s that falls to 76 Gb/s overnight against a floor of
  50 Gb/s).  Only the worse direction counts: a figure that improves after a cold first cycle is
  no fault.  Each figure's spread (best to worst over all cycles) is kept for the record;
- **telemetry**: a counter that must not grow (ECC errors, remapped rows, a port's error
  counters) grew; a state that must hold (a port up) changed; a flag that must stay clear (a GPU
  throttled by heat, power brake or hardware slowdown) was raised.  Each is named with the node,
  the series and when it was first seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

__all__ = ["FAULT_KINDS", "SAMPLE_KINDS", "Fault", "Figure", "Sample", "SoakVerdict", "judge_soak", "spread"]

#: how a telemetry series is judged: ``level`` (temperature, clocks, power) is drawn, not judged;
#: ``counter`` must not grow; ``state`` must keep its first value; ``flag`` must stay 0
SAMPLE_KINDS = ("level", "counter", "state", "flag")
#: what a fault is, in the order a report lists them
FAULT_KINDS = ("failed", "drift", "counter", "state", "flag", "errored")
_BLOCKING = frozenset(FAULT_KINDS) - {"errored"}


@dataclass(frozen=True)
class Figure:
    """One check's result in one cycle: its subject's figure, as the check's record gave it."""

    cycle: int  # 1-based
    at: float  # seconds since the soak started, when the check finished
    nodeid: str
    key: str  # ``layer.check``
    subject: str
    nodes: tuple[str, ...]
    outcome: str  # passed | failed | error | skipped | waived
    value: float | None  # None: no number (text, a boolean, an error)
    unit: str = ""
    higher_is_better: bool = True
    margin: float | None = None  # signed, from the expectation: (value - expected) / |expected|
    message: str = ""

    @property
    def headroom(self) -> float | None:
        """How far inside its limit (negative: outside), whichever way the limit points."""
        if self.margin is None:
            return None
        return self.margin if self.higher_is_better else -self.margin


@dataclass(frozen=True)
class Sample:
    """One telemetry reading of one series on one node (``gpu0 temperature``, ``eth0 state``)."""

    at: float  # seconds since the soak started
    node: str
    series: str
    value: float | None  # None: the tool answered but gave no number for it ([N/A])
    unit: str = ""
    kind: str = "level"  # one of SAMPLE_KINDS
    text: str = ""  # how the node said it, where that is not the number (a port's ``down``)


@dataclass(frozen=True)
class Fault:
    """Where and when something went wrong: the first cycle (or sample) it was seen in."""

    kind: str  # one of FAULT_KINDS
    at: float  # seconds since the soak started
    when: str  # the same moment, ISO 8601 UTC
    subject: str  # a check's subject, or a node for telemetry
    nodes: tuple[str, ...]
    what: str  # ``layer.check`` or the telemetry series
    message: str
    cycle: int | None = None  # None: telemetry between cycles

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "cycle": self.cycle, "at_s": round(self.at, 3), "when": self.when,
                "subject": self.subject, "nodes": list(self.nodes), "what": self.what, "message": self.message}


@dataclass(frozen=True)
class SoakVerdict:
    """The soak's judgement: ``reject`` on any blocking fault, ``incomplete`` when only errors
    (or no complete cycle), ``accept`` otherwise."""

    verdict: str
    cycles: int
    faults: tuple[Fault, ...]
    #: nodeid -> (best - worst) / |best| over every cycle that gave a number (only where 2+ did)
    spreads: Mapping[str, float] = field(default_factory=dict)
    max_drift: float | None = None  # None: drift is not judged (the profile sets no soak.max_drift)

    @property
    def nodes_at_fault(self) -> list[str]:
        """The nodes a blocking fault names, sorted."""
        return sorted({n for f in self.faults if f.kind in _BLOCKING for n in f.nodes})

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "cycles": self.cycles, "max_drift": self.max_drift,
                "faults": [f.to_json() for f in self.faults],
                "spreads": {k: round(v, 6) for k, v in sorted(self.spreads.items())}}


def _when(started: float, at: float) -> str:
    return (datetime.fromtimestamp(started, timezone.utc) + timedelta(seconds=at)).isoformat(timespec="seconds")


def _clock(at: float) -> str:
    """``+1h02m05s``: how far into the soak (reads better than an epoch beside the cycle)."""
    s = int(round(at))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"+{h}h{m:02d}m{sec:02d}s" if h else f"+{m}m{sec:02d}s"


def _number(v: float, unit: str) -> str:
    text = f"{v:.4g}"
    return f"{text} {unit}".strip()


def spread(values: Sequence[float], higher_is_better: bool = True) -> float | None:
    """(best - worst) / |best| of a figure's values; None for fewer than two or a best of 0."""
    if len(values) < 2:
        return None
    best = max(values) if higher_is_better else min(values)
    worst = min(values) if higher_is_better else max(values)
    if best == 0:
        return None
    return abs(best - worst) / abs(best)


def _check_faults(figures: Sequence[Figure], started: float, max_drift: float | None) -> list[Fault]:
    faults: list[Fault] = []
    by_test: dict[str, list[Figure]] = {}
    for f in sorted(figures, key=lambda f: (f.cycle, f.at)):
        by_test.setdefault(f.nodeid, []).append(f)
    for series in by_test.values():
        failed = next((f for f in series if f.outcome == "failed"), None)
        if failed is not None:
            faults.append(Fault("failed", failed.at, _when(started, failed.at), failed.subject, failed.nodes,
                                failed.key, f"{failed.subject}: {failed.key} failed in cycle {failed.cycle} "
                                f"({_clock(failed.at)}, {_when(started, failed.at)}): {failed.message}".rstrip(": "),
                                failed.cycle))
        errored = next((f for f in series if f.outcome == "error"), None)
        if errored is not None:
            faults.append(Fault("errored", errored.at, _when(started, errored.at), errored.subject, errored.nodes,
                                errored.key, f"{errored.subject}: {errored.key} could not measure in cycle "
                                f"{errored.cycle} ({_clock(errored.at)}, {_when(started, errored.at)}): "
                                f"{errored.message}".rstrip(": "), errored.cycle))
        if max_drift is None:
            continue
        best: Figure | None = None
        for f in series:
            if f.value is None or f.outcome not in ("passed", "failed", "waived"):
                continue
            if best is not None and best.value:
                assert best.value is not None
                worse = (best.value - f.value) if f.higher_is_better else (f.value - best.value)
                drift = worse / abs(best.value)
                if drift > max_drift:
                    faults.append(Fault(
                        "drift", f.at, _when(started, f.at), f.subject, f.nodes, f.key,
                        f"{f.subject}: {f.key} drifted {drift * 100:.1f}% from its best in cycle {f.cycle} "
                        f"({_clock(f.at)}, {_when(started, f.at)}): {_number(f.value, f.unit)} against "
                        f"{_number(best.value, best.unit)} in cycle {best.cycle}; soak.max_drift "
                        f"{max_drift * 100:g}%", f.cycle))
                    break
            if best is None or best.value is None or (
                f.value > best.value if f.higher_is_better else f.value < best.value
            ):
                best = f
    return faults


def _cycle_at(at: float, spans: Sequence[tuple[int, float, float | None]]) -> tuple[int | None, str]:
    """The cycle running at ``at`` (``during cycle 3``), else the last one ended before it (``after cycle 2``)."""
    for cycle, start, end in spans:
        if start <= at and (end is None or at <= end):
            return cycle, f"during cycle {cycle}"
    before = [c for c, _, end in spans if end is not None and end < at]
    return (max(before), f"after cycle {max(before)}") if before else (None, "before cycle 1")


def _telemetry_faults(samples: Iterable[Sample], started: float,
                      spans: Sequence[tuple[int, float, float | None]] = ()) -> list[Fault]:
    faults: list[Fault] = []
    first: dict[tuple[str, str], Sample] = {}
    done: set[tuple[str, str]] = set()
    for s in sorted(samples, key=lambda s: s.at):
        key = (s.node, s.series)
        if key in done or s.kind == "level" or (s.value is None and not s.text):
            continue
        base = first.setdefault(key, s)
        what = f"{s.node}: {s.series}"
        cycle, during = _cycle_at(s.at, spans)
        when = f"({during}, {_clock(s.at)}, {_when(started, s.at)})" if spans else f"({_clock(s.at)}, {_when(started, s.at)})"
        message = ""
        if s.kind == "counter" and s.value is not None and base.value is not None and s.value > base.value:
            message = f"{what} grew from {_number(base.value, s.unit)} to {_number(s.value, s.unit)} {when}"
        elif s.kind == "state" and (s.text or s.value) != (base.text or base.value):
            message = f"{what} changed from {base.text or base.value} to {s.text or s.value} {when}"
        elif s.kind == "flag" and s.value:
            message = f"{what} raised {when}" + (f": {s.text}" if s.text else "")
        if message:
            done.add(key)
            faults.append(Fault(s.kind, s.at, _when(started, s.at), s.node, (s.node,), s.series, message, cycle))
    return faults


def judge_soak(figures: Sequence[Figure], samples: Sequence[Sample] = (), *, cycles: int, started: float,
               max_drift: float | None = None, spans: Sequence[tuple[int, float, float | None]] = ()) -> SoakVerdict:
    """The soak's verdict from every complete cycle's figures and the telemetry sampled meanwhile.

    ``cycles``: the cycles that ran to their end (figures of a cycle cut short are left to the
    caller: pass only complete ones); ``started``: the soak's start, epoch seconds (each fault's
    time is told from it); ``max_drift``: the profile's ``soak.max_drift`` as a fraction (0.1 for
    10%), None where the profile sets none; ``spans``: each cycle's (number, start, end) in seconds into the
    soak, so a telemetry fault is placed ``during cycle 3`` or ``after cycle 2``.  Faults are in the order
    they began.
    """
    faults = _check_faults(figures, started, max_drift) + _telemetry_faults(samples, started, spans)
    faults.sort(key=lambda f: (f.at, FAULT_KINDS.index(f.kind)))
    spreads: dict[str, float] = {}
    by_test: dict[str, list[Figure]] = {}
    for f in figures:
        if f.value is not None and f.outcome in ("passed", "failed", "waived"):
            by_test.setdefault(f.nodeid, []).append(f)
    for nodeid, series in by_test.items():
        s = spread([f.value for f in series if f.value is not None], series[0].higher_is_better)
        if s is not None:
            spreads[nodeid] = s
    if any(f.kind in _BLOCKING for f in faults):
        verdict = "reject"
    elif cycles < 1 or faults:
        verdict = "incomplete"
    else:
        verdict = "accept"
    return SoakVerdict(verdict, cycles, tuple(faults), spreads, max_drift)
