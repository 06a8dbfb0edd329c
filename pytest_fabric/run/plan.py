"""What a run will do and how long it takes: an estimate and a bound, from its items and the profile's settings.

Pure: the plugin hands :func:`plan_run` one :class:`PlannedSubject` per selected test
(after ``-k``/``-m``) of a check the profile sets and prints :meth:`RunPlan.summary` before
the first measurement::

    fabric: plan: about 25 s (at most 3.3 min with retests), 3 checks on 8 nodes: 52 tests, 7 rounds x ~2 s
    + 3 waves ~2 s, 64 nodes at once; times from the previous run of this inventory (2026-12-03 07:41 UTC)
    for tcp_throughput, sequential_write; estimated for mtu

The schedule is the run's own: a pair check is measured a round of disjoint pairs at a time,
:func:`~pytest_fabric.run.batches.members_at_once` of them at once (``--fabric-fanout`` counts
nodes), every pair check of a round one after the other; a per-node check (node, GPU, port, mount,
egress target) is one wave under the same cap, and subjects that share a resource (one node's GPUs,
a shared mount measured alone, an egress server) at most that resource's limit at once
(:func:`pytest_fabric.run.sharing.at_once`, the rule the run's fixtures use); retests run in the
rounds of disjoint pairs :func:`pytest_fabric.run.retests.schedule` makes of them, as
``measurements/inter_node.retest_alone`` runs them.

Two figures come out of it:

- **the estimate** (:attr:`RunPlan.total_s`): each measurement as long as it took in the previous run
  of the same inventory and profile (:class:`PreviousRun`, kept in pytest's cache by
  :mod:`pytest_fabric.report.check_times`), else as the settings say (``duration`` x ``repeat``,
  fio ``runtime``, ``size`` over the floor; a read's files laid out first; a transfer's ``bytes``
  over its floor) plus what starting its tools costs; an NCCL check the all_reduce_perf runs its
  probe makes (:func:`nccl_runs`), each its start and the probe's collectives at the floor
  (:func:`allreduce_seconds`); else the check's declared typical time. Retests: what the previous
  run's took, else an expected share (:data:`RETEST_SHARE`) of the pairs re-measured alone.
- **the bound** (:attr:`RunPlan.bound_s`): the longest a passing run takes: each measurement at its
  floor (never shorter than the previous run took), and every check that re-measures taking the
  most retests it declares (:class:`~pytest_fabric.checks.base.Retests`: steps, each at most every
  pair of the sweep alone in retest rounds, ``samples`` each, and the sweep's rounds again).
  ``--time-budget`` is judged against it.

A check declared ``one_at_a_time`` goes through a pair's rails (or a node's GPUs) one after the other.
Opening the connections and every batch's start are in it too.

The plan is kept per phase (:func:`phase_of`: a layer's per-node checks, its pair rounds, its
cluster-wide checks) so the report can set each beside what it took (:meth:`RunPlan.to_json`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_fabric.checks.base import Check, CheckRegistry
from pytest_fabric.config.profile import CheckSpec
from pytest_fabric.probes import nccl
from pytest_fabric.run import retests, sharing
from pytest_fabric.run.batches import DEFAULT_FANOUT, Share, members_at_once

__all__ = [
    "BATCH_S",
    "CONNECT_S",
    "NCCL_START_PER_RANK_S",
    "NCCL_START_S",
    "PER_TEST_S",
    "RETEST_REPEATS",
    "RETEST_SHARE",
    "TRANSFER_CONNECT_S",
    "PlannedSubject",
    "CheckPlan",
    "CheckTime",
    "PreviousRun",
    "RunPlan",
    "allreduce_seconds",
    "builtin_checks",
    "layout_seconds",
    "measurement_seconds",
    "nccl_runs",
    "plan_run",
    "planned_subject",
    "start_seconds",
    "format_duration",
    "phase_of",
]

#: seconds every measurement adds to its tool's own time: SSH channel, tool start, servers on the peer
OVERHEAD_S = 0.7

#: a download or upload's connect before its first byte: DNS, TCP and a TLS handshake, a few round
#: trips of a path to the outside world (100 ms each at worst, as connect_latency's ceilings go)
TRANSFER_CONNECT_S = 0.5

#: a reading (ibstat, nvidia-smi, findmnt, sysfs): about a second
READING_S = 0.3

#: opening one node's connection (SSH handshake and authentication), ``fanout`` nodes at a time
CONNECT_S = 1.0

#: each wave or round: starting its members, gathering their results
BATCH_S = 0.1

#: each collected test, skipped ones too: pytest's own run of it, its record, the JSON rewrite
#: (1.3-3 ms a test on an idle controller, measured with benchmarks/bench_plan_accuracy.py: the upper end)
PER_TEST_S = 0.003

#: the share of a check's pairs an outlier check or attribution is expected to find suspect and
#: re-measure alone; a healthy cluster has none, a sick one a few per cent
RETEST_SHARE = 0.02

#: samples of a pair re-measured alone (measurements/inter_node.py RETEST_REPEATS, OUTLIER_REPEATS)
RETEST_REPEATS = 3

#: one all_reduce_perf run's start and end around its collectives: mpirun's daemons over ssh (or srun's
#: step), a CUDA context and the send, receive and expected buffers on every GPU, NCCL's communicator
#: init and teardown. A per-run estimate, not a figure measured by this project: about 8 s on one or two
#: 8-GPU nodes (NCCL's maintainers call 5-6 s for one communicator init "more than it should",
#: NVIDIA/nccl#534, so launch, CUDA and NCCL together take a few seconds each at that scale)
NCCL_START_S = 8.0

#: what each rank adds to a run's start, also an estimate: NCCL's bootstrap allgather takes N-1 steps one
#: after the other (NVIDIA/nccl#1791) and its ring search grows faster (NVIDIA/nccl#1789: dozens of
#: seconds of it at 96K ranks), and a launch reaches more nodes; 1 ms a rank is of that order
#: (4,096 ranks, 512 nodes x 8 GPUs: +4 s)
NCCL_START_PER_RANK_S = 0.001

_LAYER_WORDS = {"intra_node": "intra-node", "inter_node": "inter-node"}
_KIND_WORDS = {"wave": "", "pair": " pairs", "cluster": " cluster checks"}  # in the order a layer runs them
_LAYER_ORDER = {layer: i for i, layer in enumerate(("software", "intra_node", "inter_node", "storage", "egress"))}


def _registry(checks: CheckRegistry | None) -> CheckRegistry:
    """The run's declarations, else every built-in check's (the families' too), read at the call: a
    module importing the plan does not assemble the families."""
    if checks is not None:
        return checks
    # at the call, not at import: the plugin imports the plan before pytest registers the family
    # modules as plugins, and a family imported first is left without pytest's assertion rewriting
    from pytest_fabric.checks.builtin import builtin_registry
    return builtin_registry()


def builtin_checks() -> CheckRegistry:
    """Every built-in check's declaration, the families' too, assembled at the call (see :func:`_registry`)."""
    return _registry(None)


def phase_of(layer: str, check: str, kind: str | None = None, checks: CheckRegistry | None = None) -> str:
    """The phase ``check`` runs in, as the plan and the report name it: ``inter-node pairs``,
    ``storage``, ``inter-node cluster checks``. From the check's declaration in ``checks`` (its subject:
    pairs go in rounds, the cluster in one measurement, the rest in waves), else from ``kind``."""
    declared = _registry(checks).check_of(check)
    if declared is not None:
        kind = "pair" if declared.subject == "node_pair" else "cluster" if declared.subject == "cluster" else "wave"
    return _LAYER_WORDS.get(layer, layer) + _KIND_WORDS.get(kind or "wave", "")


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
    ends: tuple[str, str] | None = None  # pair tests: (sender, receiver), what retest rounds are made of


@dataclass(frozen=True)
class CheckTime:
    """What one check took in a previous run of the same inventory and profile."""

    measurement_s: float  # one measurement: a slot of its waves or rounds
    retest_s: float = 0.0  # everything it re-measured before judging, together


@dataclass(frozen=True)
class PreviousRun:
    """The per-check times of the previous run of this inventory and profile (pytest's cache)."""

    when: str  # when it ended, as the plan line says it (``2026-12-03 07:41 UTC``)
    checks: Mapping[str, CheckTime]
    outside_s: float | None = None  # what no check's tests held: connections, collection, reports


@dataclass(frozen=True)
class CheckPlan:
    """One check's share of the run: the estimate, and the bound beside it."""

    layer: str
    check: str
    kind: str
    tests: int
    rounds: int  # pair checks: rounds of disjoint pairs; waves: 1; cluster checks: 1
    seconds: float  # one measurement, as estimated
    slots: int  # measurements one after the other, summed over the check's rounds or its wave
    retest_s: float = 0.0  # the expected re-measurements alone of the pairs it finds suspect
    phase: str = ""  # phase_of(layer, check, kind)
    order: int = 0  # the declared phase: when it runs relative to the others
    bound_seconds: float | None = None  # one measurement at its floor (None: as ``seconds``)
    retest_bound_s: float = 0.0  # the most retests it declares, in retest rounds
    previous: bool = False  # its times come from the previous run of this inventory and profile
    #: ``layer.key`` whose ``retest: false`` leaves its retests out (attribution's), "" where none does
    retest_off: str = ""
    batch_s: float = BATCH_S  # each wave's or round's start

    @property
    def batches(self) -> int:
        """Waves or rounds this check starts (each costs ``batch_s``); none for a check that measures nothing."""
        return self.rounds if self.seconds > 0 or (self.bound_seconds or 0) > 0 else 0

    @property
    def total_s(self) -> float:
        """The estimate."""
        return self.seconds * self.slots + self.batches * self.batch_s + self.retest_s

    @property
    def bound_s(self) -> float:
        """The longest a passing run of it takes: every measurement at its floor, the most retests."""
        one = self.seconds if self.bound_seconds is None else max(self.bound_seconds, self.seconds)
        return one * self.slots + self.batches * self.batch_s + max(self.retest_bound_s, self.retest_s)

    @property
    def planned(self) -> bool:
        """It takes time of its own (a reads check with no retests takes none)."""
        return self.total_s > 0 or self.bound_s > 0


@dataclass(frozen=True)
class RunPlan:
    """The run as the header states it."""

    tests: int
    checks: list[CheckPlan] = field(default_factory=list)
    fanout: int = DEFAULT_FANOUT
    connect_s: float = 0.0  # opening every node's connection before the first check
    bookkeeping_s: float = 0.0  # every collected test's own cost, skipped ones too (PER_TEST_S)
    nodes: int = 0  # the inventory's
    previous_when: str | None = None  # the previous run whose times it holds (None: none used)
    #: why no previous run's times were used where none were (no cache, nothing kept for this inventory)
    times_note: str = ""
    previous_outside_s: float | None = None  # what the previous run spent outside the checks
    spent_s: float = 0.0  # what the session spent before the plan (collecting): measured, not estimated

    @property
    def outside_s(self) -> float:
        """What no planned check's measurement holds: the connections and every test's bookkeeping
        (as the previous run of this inventory spent it, where known: never less than the connections)."""
        if self.previous_outside_s is not None:
            return max(self.previous_outside_s, self.connect_s + self.spent_s)
        return self.spent_s + self.connect_s + self.bookkeeping_s

    @property
    def rounds(self) -> int:
        """Rounds of pairs the pair checks sweep (the most any one pair check has)."""
        return max((c.rounds for c in self.checks if c.kind == "pair" and c.batches), default=0)

    @property
    def waves(self) -> int:
        return sum(1 for c in self.checks if c.kind == "wave" and c.batches)

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
        """The estimate: what the run is expected to take."""
        return self.rounds_s + self.waves_s + self.cluster_s + self.outside_s

    @property
    def bound_s(self) -> float:
        """The bound: the longest a passing run takes (floors, the most retests); never below the estimate."""
        return max(self.total_s, sum(c.bound_s for c in self.checks) + self.outside_s)

    @property
    def retest_bound_s(self) -> float:
        return sum(max(c.retest_bound_s, c.retest_s) for c in self.checks)

    def sources(self) -> tuple[list[str], list[str]]:
        """The checks whose times come from the previous run, and those estimated (each taking time)."""
        timed = [c for c in self.checks if c.planned]
        return ([c.check for c in timed if c.previous], [c.check for c in timed if not c.previous])

    def times_said(self) -> str:
        """Where the figures come from: ``times from the previous run of this inventory (...) for a, b;
        estimated for c``, or ``times estimated (no previous run ...)``."""
        previous, estimated = self.sources()
        if not previous:
            return f"times estimated ({self.times_note})" if self.times_note else "times estimated"
        said = f"times from the previous run of this inventory ({self.previous_when}) for {', '.join(previous)}"
        return f"{said}; estimated for {', '.join(estimated)}" if estimated else said

    def summary(self) -> str:
        """``about 25 s (at most 3.3 min with retests), 3 checks on 8 nodes: 52 tests, 7 rounds x ~2 s
        + 3 waves ~2 s, 64 nodes at once; times ...``."""
        parts = []
        if self.rounds:
            parts.append(f"{self.rounds} round{'s' if self.rounds > 1 else ''} x "
                         f"~{format_duration(self.rounds_s / self.rounds)}")
        if self.waves:
            parts.append(f"{self.waves} wave{'s' if self.waves > 1 else ''} ~{format_duration(self.waves_s)}")
        cluster = sum(1 for c in self.checks if c.kind == "cluster" and c.batches)
        if cluster:
            parts.append(f"{cluster} cluster check{'s' if cluster > 1 else ''} ~{format_duration(self.cluster_s)}")
        checks = len({c.check for c in self.checks if c.planned})
        on = f" on {self.nodes} node{'s' if self.nodes != 1 else ''}" if self.nodes else ""
        if not parts:
            return f"nothing to measure, {self.tests:,} tests{on}"
        retests = " with retests" if self.retest_bound_s > 0 else ""
        return (f"about {format_duration(self.total_s)} (at most {format_duration(self.bound_s)}{retests}), "
                f"{checks} check{'s' if checks != 1 else ''}{on}: {self.tests:,} tests, {' + '.join(parts)}, "
                f"{self.fanout} nodes at once; {self.times_said()}")

    def phases(self) -> list[tuple[str, float]]:
        """Each phase and its planned seconds, in the order the run reaches them: by declared phase,
        then layer (software first, egress last), then per-node checks, pair rounds, cluster checks."""
        return [(name, estimate) for name, estimate, _ in self._phases()]

    def _phases(self) -> list[tuple[str, float, float]]:
        first: dict[str, tuple[int, int, int]] = {}
        seconds: dict[str, float] = defaultdict(float)
        bound: dict[str, float] = defaultdict(float)
        for c in self.checks:
            key = (c.order, _LAYER_ORDER.get(c.layer, len(_LAYER_ORDER)), list(_KIND_WORDS).index(c.kind)
                   if c.kind in _KIND_WORDS else len(_KIND_WORDS))
            first[c.phase] = min(first.get(c.phase, key), key)
            seconds[c.phase] += c.total_s
            bound[c.phase] += c.bound_s
        return [(name, seconds[name], bound[name]) for name in sorted(first, key=lambda n: (first[n], n))]

    def to_json(self) -> dict[str, Any]:
        """The plan as the JSON record keeps it (``run.plan``); the report adds what each phase took."""
        previous, estimated = self.sources()
        return {
            "summary": self.summary(),
            "planned_s": round(self.total_s, 1),
            "bound_s": round(self.bound_s, 1),
            "connect_s": round(self.connect_s, 1),
            "outside_s": round(self.outside_s, 1),
            "fanout": self.fanout,
            "tests": self.tests,
            "times": {"previous_run": self.previous_when if previous else None, "from_previous_run": previous,
                      "estimated": estimated},
            "phases": [
                {"phase": name, "planned_s": round(planned, 1), "bound_s": round(most, 1),
                 "checks": sorted({c.check for c in self.checks if c.phase == name})}
                for name, planned, most in self._phases()
            ],
        }

    def dominant(self, count: int = 3) -> list[CheckPlan]:
        """The checks that take the most of the bound, longest first."""
        return sorted((c for c in self.checks if c.bound_s > 0), key=lambda c: -c.bound_s)[:count]

    def over_budget(self, budget_s: float) -> str | None:
        """Why the run may not fit ``budget_s`` (naming what dominates its bound), or None when its bound does.

        The bound, not the estimate: a budget is a promise, and a slow node's retests (minutes the
        estimate does not foresee) are what overrun it."""
        if self.bound_s <= budget_s:
            return None
        parts = ", ".join(f"{c.layer}.{c.check} at most {format_duration(c.bound_s)}"
                          + (f" ({format_duration(max(c.retest_bound_s, c.retest_s))} of it retests)"
                             if max(c.retest_bound_s, c.retest_s) > 0 else "")
                          for c in self.dominant() if c.bound_s >= 1)
        phases = ", ".join(f"{name} at most {format_duration(most)}" for name, _, most in
                           sorted(self._phases(), key=lambda p: -p[2])[:2] if most > 0)
        optional = next((c for c in self.checks if c.retest_off and c.retest_bound_s > 0), None)
        retests = (f", or leave {optional.check}'s retests out ({optional.retest_off}: {{retest: false}})"
                   if optional is not None else "")
        return (f"the plan takes at most {format_duration(self.bound_s)} (about {format_duration(self.total_s)}), "
                f"more than --time-budget {format_duration(budget_s)}; most of it: {parts} (phases: {phases}). "
                f"Give a budget of at least {format_duration(self.bound_s)}, select fewer checks (-k, -m), "
                f"sample pairs (pairs: random:K){retests}")


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


def allreduce_seconds(size_bytes: float, busbw: float, ranks: int) -> float:
    """The longest one all_reduce_perf run of the probe's takes when it passes: its start
    (:data:`NCCL_START_S`, :data:`NCCL_START_PER_RANK_S` a rank), then the collectives it makes
    (:data:`pytest_fabric.probes.nccl.COLLECTIVES_PER_RUN`) of ``size_bytes`` each at the algorithm
    bandwidth the ``busbw`` floor (bytes a second) means over ``ranks``. nccl-tests' PERFORMANCE.md: an
    all_reduce's busbw is algbw x 2(n-1)/n, so algbw = busbw x n / (2(n-1)); one rank is taken as two."""
    n = max(2, ranks)
    algbw = busbw * n / (2 * (n - 1))
    return NCCL_START_S + NCCL_START_PER_RANK_S * ranks + nccl.COLLECTIVES_PER_RUN * size_bytes / algbw


def nccl_runs(check: str, spec: Any, *, gpus: int, nodes: int = 0, source: Any = None,
              checks: CheckRegistry | None = None) -> list[tuple[float, float, int]] | None:
    """The all_reduce_perf runs one measurement of an NCCL check makes, as (bytes, busbw floor in bytes
    a second, ranks) each; None for other checks and where the settings give no size and floor.

    By what its declaration says (``Check.allreduce``): ``"pair"``, one run over a pair, ``gpus`` ranks a
    node; ``"node"``, one over a node's ``gpus``; ``"scaling"`` (``spec``: its share; ``source``: the
    settings of the check it is ``sized_by``, whose size the probe runs at): what
    :func:`pytest_fabric.probes.nccl.scaling` runs on the inventory's ``nodes`` (None: not known),
    :data:`~pytest_fabric.probes.nccl.SCALING_SAMPLES` runs of each baseline pair at the floor and of
    each node count at the floor x the share, the slowest a passing curve runs at.
    """
    declared = _registry(checks).check_of(check)
    kind = declared.allreduce if declared is not None else None
    if kind is None:
        return None
    settings = source if kind == "scaling" else spec
    try:
        size = float(settings.size.to("B"))
        floor = float(settings.min.to("B/s"))
    except (AttributeError, ValueError, TypeError):
        return None
    if size <= 0 or floor <= 0:
        return None
    gpus = max(1, gpus)
    if kind == "pair":
        return [(size, floor, 2 * gpus)]
    if kind == "node":
        return [(size, floor, gpus)]
    if nodes <= 0:
        return None
    share: Any = getattr(spec, "min", None)
    try:
        curve_floor = floor * float(share.to("%")) / 100
    except (AttributeError, ValueError, TypeError):
        curve_floor = floor
    pairs, counts = nccl.scaling_groups(nodes)
    runs = [(size, floor, 2 * gpus)] * pairs + [(size, curve_floor, count * gpus) for count in counts]
    return [run for run in runs for _ in range(nccl.SCALING_SAMPLES)]


def start_seconds(check: str, checks: CheckRegistry | None = None) -> float:
    """What one measurement of ``check`` adds to its tools' own time: its declared ``start_s``,
    else :data:`OVERHEAD_S`."""
    declared = _registry(checks).check_of(check)
    return declared.start_s if declared is not None and declared.start_s is not None else OVERHEAD_S


def measurement_seconds(check: str, spec: Any, *, gpus: int = 1, nodes: int = 0, source: Any = None,
                        checks: CheckRegistry | None = None) -> float:
    """About how long one measurement of ``check`` takes with the profile's ``spec`` (None: not set);
    an NCCL check's from the runs its probe makes (:func:`nccl_runs`: ``gpus`` a node, the inventory's
    ``nodes``, the ``source`` settings scaling runs at); ``checks``: the run's declarations."""
    declared = _registry(checks).check_of(check)
    if declared is not None and not declared.measures:
        return 0.0
    runs = nccl_runs(check, spec, gpus=gpus, nodes=nodes, source=source, checks=checks)
    if runs is not None:
        return sum(allreduce_seconds(size, floor, ranks) for size, floor, ranks in runs)
    own = spec.seconds() if isinstance(spec, CheckSpec) else None
    if own is not None:  # the settings say how long it runs, not as a duration (DCGM's level)
        return own
    repeat = int(getattr(spec, "repeat", 1) or 1)
    duration = _seconds(getattr(spec, "duration", None)) or _seconds(getattr(spec, "runtime", None))
    if duration is not None:
        return repeat * (duration + start_seconds(check, checks))
    size: Any = getattr(spec, "size", None)
    floor: Any = getattr(spec, "min", None)
    bounded: Any = getattr(spec, "bytes", None) if check in ("download", "upload") else None
    if bounded is not None:
        # a transfer the profile bounds: its connect, then bytes at the floor, the longest a passing one takes
        try:
            return TRANSFER_CONNECT_S + OVERHEAD_S + float(bounded.to("B")) / float(floor.to("B/s"))
        except (AttributeError, ValueError, TypeError, ZeroDivisionError):
            pass
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
             *, rails: int = 1, gpus: int = 1, nodes: int = 0, items: int = 0,
             checks: CheckRegistry | None = None, previous: PreviousRun | None = None, times_note: str = "",
             spent_s: float = 0.0, last_failed: bool = False) -> RunPlan:
    """The plan of a run of ``subjects``; ``specs`` maps (layer, check) to the profile's settings
    (the checks it sets: a reads check retests only when the check it reads is there).

    ``rails`` and ``gpus``: what a check declared ``one_at_a_time`` goes through in one measurement
    (latency a pair's rails one after the other, aggregate each rail alone). ``nodes``: the
    inventory's, whose connections open ``fanout`` at a time before the first check. ``items``:
    every collected test, the skipped ones of checks the profile does not set too. ``checks``: the
    run's declarations (an extension's checks' typical times and phases), the built-in ones by default.
    ``previous``: the previous run of this inventory and profile, whose per-check times the estimate
    takes where it holds them; ``times_note``: why there is none (the plan line says it). ``spent_s``:
    what the session spent before the plan (collection), part of the run's time, measured. ``last_failed``:
    under ``--lf`` a pair check's rounds run whole again, and the pairs that fail there are re-measured
    alone, each round's at once (measurements/inter_node.py ``_retest_round_failures``):
    :data:`RETEST_REPEATS` samples a round, in the estimate and the bound (the pairs selected failed before).
    """
    by_check: dict[tuple[str, str, str], list[PlannedSubject]] = defaultdict(list)
    tests = 0
    for subject in subjects:
        tests += 1
        by_check[(subject.layer, subject.check, subject.kind)].append(subject)
    per_round = members_at_once(fanout, 2)  # the run's rule: a round runs fanout // 2 pairs at once
    registry = _registry(checks)
    took = previous.checks if previous is not None else {}
    sweeps = {check: members for (_, check, kind), members in by_check.items() if kind == "pair"}
    plans: list[CheckPlan] = []
    for (layer, check, kind), members in by_check.items():
        floor = _one_measurement(layer, check, specs, rails, gpus, nodes, registry)
        declared = registry.check_of(check)
        if kind == "pair":
            rounds, slots = _round_slots(members, per_round)
        elif kind == "wave":
            rounds, slots = 1, _wave_slots(members, fanout)
        else:
            rounds, slots = 1, len(members)
        seen = took.get(check)
        seconds = seen.measurement_s if seen is not None and floor > 0 else floor
        retest_s = retest_bound_s = 0.0
        retested = declared.retests if declared is not None else None
        sources = _retest_sources(declared, specs, registry)
        if retested is not None and _retests(check, specs.get((layer, check))):
            for source in sources:  # each pair check it reads is retested in rounds of its own
                sweep = sweeps.get(source, [])
                one = _one_measurement(layer, source, specs, rails, gpus, nodes, registry)
                measured = took.get(source)
                typical = measured.measurement_s if measured is not None else one
                retest_bound_s += _retest_bound(sweep, per_round, retested.steps, retested.samples,
                                                retested.rounds_again, max(one, typical), both_ways=retested.both_ways)
                retest_s += _retest_seconds(len(sweep), per_round, typical, retested.samples)
            if seen is not None and sources:
                retest_s = seen.retest_s
        if last_failed and kind == "pair" and floor > 0:
            again = rounds * (RETEST_REPEATS * max(floor, seconds) + BATCH_S)
            retest_s, retest_bound_s = retest_s + again, retest_bound_s + again
        plans.append(CheckPlan(layer, check, kind, len(members), rounds, seconds, slots, retest_s,
                               phase_of(layer, check, kind, registry), declared.phase if declared is not None else 0,
                               bound_seconds=floor, retest_bound_s=retest_bound_s,
                               previous=seen is not None, retest_off=_retest_off(declared)))
    connect_s = CONNECT_S * math.ceil(nodes / members_at_once(fanout)) if tests else 0.0
    used = previous is not None and any(c.previous for c in plans)
    return RunPlan(tests, plans, fanout, connect_s, PER_TEST_S * max(items, tests), nodes,
                   previous.when if used and previous is not None else None, times_note,
                   previous.outside_s if used and previous is not None else None, spent_s)


#: storage checks that read files another node (or the node itself) lays out first (probes/storage.py
#: _prepare): a write of ``size`` x ``jobs`` before the measured window, alone or together alike
LAID_OUT_READS = frozenset({"sequential_read", "random_read_iops"})


def layout_seconds(check: str, specs: Mapping[tuple[str, str], Any]) -> float:
    """The longest laying out a read check's files takes on a passing mount: ``size`` x ``jobs`` at the
    sequential write floor (else the sequential read floor), plus a fio start; 0 for other checks."""
    if check not in LAID_OUT_READS:
        return 0.0
    spec: Any = specs.get(("storage", check))
    floors = [getattr(specs.get(("storage", name)), "min", None) for name in ("sequential_write", "sequential_read")]
    try:
        nbytes = float(spec.size.to("B")) * int(getattr(spec, "jobs", 1) or 1)
        rate = next(float(f.to("B/s")) for f in floors if f is not None)
        return nbytes / rate + OVERHEAD_S
    except (AttributeError, ValueError, TypeError, ZeroDivisionError, StopIteration):
        return 0.0


def _one_measurement(layer: str, check: str, specs: Mapping[tuple[str, str], Any], rails: int, gpus: int,
                     nodes: int = 0, checks: CheckRegistry | None = None) -> float:
    # a check sized by another's settings (scaling: its pair check's size) is priced at that size
    declared = _registry(checks).check_of(check)
    sizer = _registry(checks).check_of(declared.sized_by) if declared is not None and declared.sized_by else None
    source = specs.get((sizer.layer, sizer.setting)) if sizer is not None else None
    seconds = measurement_seconds(check, specs.get((layer, check)), gpus=gpus, nodes=nodes, source=source,
                                  checks=checks)
    if layer == "storage":
        seconds += layout_seconds(check, specs)
    gemm = specs.get(("intra_node", "gemm_throughput"))
    if check == "clock_throttling" and gemm is not None:
        # One GEMM load a node serves both checks (checks/gpu_load.py), as long as the longer of their
        # durations: it is gemm_throughput's time; this check adds only what its duration runs past it.
        seconds = max(READING_S, seconds - measurement_seconds("gemm_throughput", gemm, checks=checks))
    if declared is not None and declared.one_at_a_time is not None:
        seconds *= max(1, rails if declared.one_at_a_time == "rails" else gpus)
    return seconds


def _retests(check: str, spec: Any) -> bool:
    """Whether a reads check re-measures the pairs it finds suspect (attribution: unless ``retest: false``)."""
    return bool(getattr(spec, "retest", True))


def _retest_off(declared: Check[Any] | None) -> str:
    """``layer.key`` of a check whose settings switch its retests (a ``retest`` field), else ""."""
    if declared is None or declared.model is None or "retest" not in declared.model.model_fields:
        return ""
    return f"{declared.layer}.{declared.setting}"


def _retest_sources(declared: Check[Any] | None, specs: Mapping[tuple[str, str], Any],
                    checks: CheckRegistry | None = None) -> list[str]:
    """The pair checks whose pairs ``declared`` re-measures: the one it reads, or, for a check that judges
    the pair checks (``needs=("pair_checks",)``: attribution), the one its settings name
    (``NAMES_BLAME_INPUT``), else every pair check the profile sets that declares it feeds the blame
    model (measurements/attribution.py)."""
    if declared is None:
        return []
    if declared.reads_from is not None:
        return [declared.reads_from] if ("inter_node", declared.reads_from) in specs else []
    if "pair_checks" not in declared.needs:
        return []
    spec = specs.get((declared.layer, declared.setting))
    field_name = spec.NAMES_BLAME_INPUT if isinstance(spec, CheckSpec) else None
    named = getattr(spec, field_name, None) if field_name is not None else None
    fed = list(_registry(checks).blame_inputs())
    return [c for c in ([str(named)] if named else fed) if ("inter_node", c) in specs]


def _round_slots(members: Iterable[PlannedSubject], per_round: int) -> tuple[int, int]:
    """Rounds, and measurements one after the other over them: each round ``per_round`` pairs at once."""
    in_round: dict[int | None, int] = defaultdict(int)
    for m in members:
        in_round[m.round] += 1
    return len(in_round), sum(math.ceil(n / per_round) for n in in_round.values())


def _retest_seconds(pairs: int, per_round: int, seconds: float, samples: int = RETEST_REPEATS) -> float:
    """The expected time of re-measuring :data:`RETEST_SHARE` of ``pairs`` alone: retest rounds of
    disjoint pairs (a round of ``per_round`` pairs at once), each pair ``samples`` samples.
    Below one expected pair, the chance of one round."""
    expected = RETEST_SHARE * pairs
    rounds = math.ceil(expected / per_round) if expected >= 1 else expected
    return rounds * (samples * seconds + BATCH_S)


def _retest_bound(sweep: list[PlannedSubject], per_round: int, steps: int, samples: int, rounds_again: bool,
                  seconds: float, *, both_ways: bool = False) -> float:
    """The most a check's retests take: ``steps`` steps, each at most every pair of the ``sweep`` alone (in
    both directions with ``both_ways``), in the retest rounds :func:`pytest_fabric.run.retests.schedule`
    makes of them (``samples`` each, a round's samples together), and with ``rounds_again`` every round of
    the sweep measured again."""
    if not sweep:
        return 0.0
    ends = [m.ends for m in sweep if m.ends is not None]
    sweep_rounds, sweep_slots = _round_slots(sweep, per_round)
    # the schedule of every pair of the sweep, as the run makes it; without the pairs' ends, the sweep's slots
    if both_ways:
        ends += [(b, a) for a, b in ends]
    alone = (retests.rounds_needed(ends, per_round) if len(ends) == len(sweep) * (2 if both_ways else 1)
             else sweep_slots * (2 if both_ways else 1))
    total = steps * alone * (samples * seconds + BATCH_S)
    if rounds_again:
        total += sweep_slots * seconds + sweep_rounds * BATCH_S
    return total


def planned_subject(
    layer: str, check: str, subject: str | None, param: Any, share: Share | None = None
) -> PlannedSubject:
    """A test's :class:`PlannedSubject` from its subject fixture and parameter (None: a cluster check).

    The shares follow the measurement fixtures': one node's GPUs (or ports) take turns and the
    first reads the node for the others; ``share`` is what the subject holds with others of its
    wave, as :func:`pytest_fabric.run.sharing.share_for` says (the rule the run's fixtures use: a
    shared mount measured alone, an egress server at ``egress.concurrency``); None: it runs under
    the fan-out only.
    """
    if subject is None:
        return PlannedSubject(layer, check, "cluster")
    if subject == "node_pair":
        return PlannedSubject(layer, check, "pair", round=int(param.round), ends=(str(param.a), str(param.b)))
    if subject in ("gpu", "hca"):
        return PlannedSubject(layer, check, "wave", once_per=str(param[0]))
    if share is not None:
        return PlannedSubject(layer, check, "wave", resource=share.resource, limit=share.limit)
    return PlannedSubject(layer, check, "wave")


def _wave_slots(members: list[PlannedSubject], fanout: int) -> int:
    """Measurements one after the other in a wave: the fan-out cap, or the busiest shared resource,
    each as many at once as the run's rules let (:func:`~pytest_fabric.run.batches.members_at_once`,
    :func:`~pytest_fabric.run.sharing.at_once`)."""
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
    busiest = max((math.ceil(n / sharing.at_once(Share(r, limits[r]), n, fanout)) for r, n in holding.items()),
                  default=1)
    return max(math.ceil(len(measured) / members_at_once(fanout)), busiest)
