"""What a run will do and about how long it takes, from its items and the profile's settings.

Pure: the plugin hands :func:`plan_run` one :class:`PlannedSubject` per selected test
(after ``-k``/``-m``) and prints :meth:`RunPlan.summary` before the first measurement::

    fabric: plan: 41,409 tests: 9 rounds x ~2.0 min + 31 waves ~8 min ~ 26 min (64 nodes at once)

A pair check is measured a round of disjoint pairs at a time, every pair check of a round
one after the other; a per-node check (node, GPU, port, mount, egress target) is one wave.
Either runs at most ``fanout`` subjects at once, and subjects that share a resource (one
node's GPUs, a shared mount, the egress uplink) at most that resource's limit at once.
The time of one measurement comes from the check's settings where the profile gives them
(``duration`` x ``repeat``, fio ``runtime``, ``size`` over the floor) and otherwise from
the check's declared typical time (:mod:`pytest_fabric.checks`); checks that only read
other checks' results (outliers, attribution) take none. It is an estimate: re-measurements of suspect pairs, slow nodes
and connection setup are not in it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .checks import check_of

__all__ = [
    "PlannedSubject",
    "CheckPlan",
    "RunPlan",
    "measurement_seconds",
    "plan_run",
    "planned_subject",
    "format_duration",
]

#: seconds every measurement adds to its tool's own time: SSH channel, tool start, servers on the peer
OVERHEAD_S = 2.0

#: a reading (ibstat, nvidia-smi, findmnt, sysfs): about a second
READING_S = 1.0


@dataclass(frozen=True)
class PlannedSubject:
    """One selected test: its check, how it is measured, and what it must not share."""

    layer: str
    check: str
    kind: str  # "pair" (rounds), "wave" (per node, GPU, port, mount, egress target) or "cluster"
    round: int | None = None  # pair tests: the round of its pair
    resource: str | None = None  # what it shares with other subjects of its wave (a shared mount)
    limit: int = 1  # how many holding ``resource`` run at once
    once_per: str | None = None  # subjects with the same key are one measurement (a node's GPUs: one reading)


@dataclass(frozen=True)
class CheckPlan:
    """One check's share of the run."""

    layer: str
    check: str
    kind: str
    tests: int
    rounds: int  # pair checks: rounds of disjoint pairs; waves: 1; cluster checks: 1
    seconds: float  # one measurement
    slots: int  # measurements one after the other, summed over the check's rounds or its wave

    @property
    def total_s(self) -> float:
        return self.seconds * self.slots


@dataclass(frozen=True)
class RunPlan:
    """The run as the header states it."""

    tests: int
    checks: list[CheckPlan] = field(default_factory=list)
    fanout: int = 64

    @property
    def rounds(self) -> int:
        """Rounds of pairs the pair checks sweep (the most any one pair check has)."""
        return max((c.rounds for c in self.checks if c.kind == "pair" and c.seconds > 0), default=0)

    @property
    def waves(self) -> int:
        return sum(1 for c in self.checks if c.kind == "wave" and c.seconds > 0)

    @property
    def rounds_s(self) -> float:
        return sum(c.total_s for c in self.checks if c.kind == "pair")

    @property
    def waves_s(self) -> float:
        return sum(c.total_s for c in self.checks if c.kind == "wave")

    @property
    def cluster_s(self) -> float:
        return sum(c.total_s for c in self.checks if c.kind == "cluster")

    @property
    def total_s(self) -> float:
        return self.rounds_s + self.waves_s + self.cluster_s

    def summary(self) -> str:
        """``41,409 tests: 9 rounds x ~2.0 min + 31 waves ~8 min + 3 cluster checks ~6 min ~ 26 min``."""
        parts = []
        if self.rounds:
            parts.append(f"{self.rounds} rounds x ~{format_duration(self.rounds_s / self.rounds)}")
        if self.waves:
            parts.append(f"{self.waves} waves ~{format_duration(self.waves_s)}")
        cluster = sum(1 for c in self.checks if c.kind == "cluster" and c.seconds > 0)
        if cluster:
            parts.append(f"{cluster} cluster check{'s' if cluster > 1 else ''} ~{format_duration(self.cluster_s)}")
        what = " + ".join(parts) if parts else "nothing to measure"
        tail = f" ~ {format_duration(self.total_s)}" if parts else ""
        return f"{self.tests:,} tests: {what}{tail} (at most {self.fanout} subjects at once)"


    def dominant(self, count: int = 3) -> list[CheckPlan]:
        """The checks that take the most of the plan, longest first."""
        return sorted((c for c in self.checks if c.total_s > 0), key=lambda c: -c.total_s)[:count]

    def over_budget(self, budget_s: float) -> str | None:
        """Why the plan does not fit ``budget_s`` (naming what dominates it), or None when it does."""
        if self.total_s <= budget_s:
            return None
        parts = ", ".join(f"{c.layer}.{c.check} ~{format_duration(c.total_s)}" for c in self.dominant())
        return (f"the plan takes ~{format_duration(self.total_s)}, more than --time-budget "
                f"{format_duration(budget_s)}; most of it: {parts}. Select fewer checks (-k, -m), sample "
                "pairs (pairs: random:K), or give a larger budget")


def format_duration(seconds: float) -> str:
    """``40 s``, ``2.0 min``, ``45 min``, ``3.2 h``: as a header reads best."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 10:
        return f"{minutes:.1f} min"
    if minutes < 120:
        return f"{minutes:.0f} min"
    return f"{minutes / 60:.1f} h"


def _seconds(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(value.to("s"))
    except (AttributeError, ValueError, TypeError):
        return None


def measurement_seconds(check: str, spec: Any) -> float:
    """About how long one measurement of ``check`` takes with the profile's ``spec`` (None: not set)."""
    declared = check_of(check)
    if declared is not None and not declared.measures:
        return 0.0
    repeat = int(getattr(spec, "repeat", 1) or 1)
    duration = _seconds(getattr(spec, "duration", None)) or _seconds(getattr(spec, "runtime", None))
    if duration is not None:
        return repeat * (duration + OVERHEAD_S)
    size: Any = getattr(spec, "size", None)
    floor: Any = getattr(spec, "min", None)
    if declared is not None and declared.typical_s is not None:
        return repeat * declared.typical_s
    # storage: size per job x jobs at the floor's rate is the longest a passing run takes
    # (a checkpoint's size is its total, split over its writers)
    jobs = 1 if check == "checkpoint_write" else int(getattr(spec, "jobs", 1) or 1)
    try:
        nbytes = float(size.to("B")) * jobs
        rate = float(floor.to("B/s"))
        return repeat * (nbytes / rate + OVERHEAD_S)
    except (AttributeError, ValueError, TypeError, ZeroDivisionError):
        pass
    return repeat * READING_S


def plan_run(subjects: Iterable[PlannedSubject], specs: Mapping[tuple[str, str], Any], fanout: int,
             *, rails: int = 1, gpus: int = 1) -> RunPlan:
    """The plan of a run of ``subjects``; ``specs`` maps (layer, check) to the profile's settings.

    ``rails`` and ``gpus``: what a check declared ``one_at_a_time`` goes through in one measurement
    (a pair's rails measured one after the other, a node's GPUs for GPUDirect).
    """
    by_check: dict[tuple[str, str, str], list[PlannedSubject]] = defaultdict(list)
    tests = 0
    for subject in subjects:
        tests += 1
        by_check[(subject.layer, subject.check, subject.kind)].append(subject)
    checks = []
    for (layer, check, kind), members in by_check.items():
        seconds = measurement_seconds(check, specs.get((layer, check)))
        declared = check_of(check)
        if declared is not None and declared.one_at_a_time is not None:
            seconds *= max(1, rails if declared.one_at_a_time == "rails" else gpus)
        if kind == "pair":
            per_round: dict[int | None, int] = defaultdict(int)
            for m in members:
                per_round[m.round] += 1
            rounds = len(per_round)
            # --fabric-fanout counts nodes: a round runs fanout // 2 pairs at once
            slots = sum(math.ceil(n / max(1, fanout // 2)) for n in per_round.values())
        elif kind == "wave":
            rounds, slots = 1, _wave_slots(members, fanout)
        else:
            rounds, slots = 1, len(members)
        checks.append(CheckPlan(layer, check, kind, len(members), rounds, seconds, slots))
    return RunPlan(tests, checks, fanout)


def planned_subject(
    layer: str, check: str, subject: str | None, param: Any, spec: Any, shared_mounts: Iterable[str] = ()
) -> PlannedSubject:
    """A test's :class:`PlannedSubject` from its subject fixture and parameter (None: a cluster check).

    The shares follow the measurement fixtures': one node's GPUs (or ports) take turns and
    the first reads the node for the others; a shared mount and the egress uplink take
    the check's ``concurrency`` (default 1) nodes at a time.
    """
    concurrency = int(getattr(spec, "concurrency", 1) or 1)
    if subject is None:
        return PlannedSubject(layer, check, "cluster")
    if subject == "node_pair":
        return PlannedSubject(layer, check, "pair", round=int(param.round))
    if subject in ("gpu", "hca"):
        return PlannedSubject(layer, check, "wave", once_per=str(param[0]))
    if subject == "mount" and param[1] in set(shared_mounts):
        return PlannedSubject(layer, check, "wave", resource=f"shared mount {param[1]}", limit=concurrency)
    if subject == "egress_target":
        return PlannedSubject(layer, check, "wave", resource="the egress uplink", limit=concurrency)
    return PlannedSubject(layer, check, "wave")


def _wave_slots(members: list[PlannedSubject], fanout: int) -> int:
    """Measurements one after the other in a wave: the fan-out cap, or the busiest shared resource."""
    holding: dict[str, int] = defaultdict(int)
    limits: dict[str, int] = {}
    measured: set[str] = set()
    for index, m in enumerate(members):
        if m.once_per is not None and m.once_per in measured:
            continue
        measured.add(m.once_per if m.once_per is not None else f"\0{index}")
        if m.resource is not None:
            holding[m.resource] += 1
            limits[m.resource] = max(1, m.limit)
    busiest = max((math.ceil(n / limits[r]) for r, n in holding.items()), default=1)
    return max(math.ceil(len(measured) / fanout), busiest)
