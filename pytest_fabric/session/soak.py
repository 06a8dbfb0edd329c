"""``--soak DURATION``: a burn-in. The selected checks run in cycles until DURATION has passed.

Every cycle measures afresh: the run's caches of readings (``state.once``) and of measured
batches (``state.batches``) are new each cycle, and each test's fixtures are set up again. While
the cycles run, a thread samples every node's telemetry at a steady interval (the profile's
``soak.interval``, default 30 s; :mod:`pytest_fabric.probes.telemetry`), and what it could not
sample (no ``nvidia-smi``) is said per node, not left out silently.

The soak ends with one verdict: the run's (the last cycle's records, as without ``--soak``)
joined with the soak's own judgement over time (:mod:`pytest_fabric.judge.soak`: every cycle
passed, no figure drifted beyond ``soak.max_drift``, no telemetry fault), which names the cycle
and the time a fault began. The JSON record's ``run.soak`` holds the cycles, every figure of
every cycle and the telemetry series; it is rewritten (sealed) after every check and every
cycle, so a controller killed at hour 20 leaves 20 hours of sealed evidence. Ctrl-C or SIGTERM
(session/stopping.py) ends the soak cleanly: the cycle running is cut short (its checks are not
judged over time), what the completed cycles show is judged, and the run says ``interrupted``
unless they already found a fault.

A cycle starts while time is left, so the soak ends after DURATION by at most one cycle: the
plan prices one cycle (its ``planned_s``) before the first, and the progress line says after
each cycle how many are left.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pytest

from pytest_fabric.judge.soak import Figure, Sample, SoakVerdict, judge_soak
from pytest_fabric.parsers.telemetry import THROTTLE_REASONS
from pytest_fabric.probes.gpu_load import run_gemm_load
from pytest_fabric.probes.telemetry import sample
from pytest_fabric.run.batches import BatchCache, fan_out
from pytest_fabric.run.once import Once
from pytest_fabric.run.plan import format_duration
from pytest_fabric.run.state import ELAPSED_KEY, STARTED_KEY, VERDICTS_KEY, FabricState, get_state
from pytest_fabric.run.stopgate import RunStopped

__all__ = ["SOAK_KEY", "SoakLog", "allocation_plan_s", "cycles_left", "progress_text", "soak_seconds"]

#: telemetry every this many seconds unless the profile's soak.interval says otherwise
DEFAULT_INTERVAL_S = 30.0
#: the record's copy of run.soak is rebuilt at most this often between cycles
SNAPSHOT_S = 10.0
#: a level series (temperature, power) beyond this many points keeps every other one (a day at 30 s: 2,880)
MAX_LEVEL_POINTS = 720


def soak_seconds(config: pytest.Config) -> float | None:
    """``--soak``'s duration in seconds; None without it (a usage error names a duration that is none)."""
    text = config.getoption("fabric_soak", None)
    if not text:
        return None
    # its error names --time-budget: ours is said instead
    from pytest_fabric.report.progress import budget_seconds

    try:
        seconds = budget_seconds(str(text))
    except pytest.UsageError:
        raise pytest.UsageError(f"--soak {text}: give a duration such as 40s, 30m or 24h") from None
    if seconds <= 0:
        raise pytest.UsageError(f"--soak {text}: give a duration longer than 0 s")
    return seconds


def allocation_plan_s(plan_s: float | None, soak_s: float | None) -> float | None:
    """What a Slurm allocation must hold for a run: its plan, or with ``--soak`` the soak's length and one
    more cycle (a cycle starts while time is left, so the last may begin just before the end)."""
    if not soak_s:
        return plan_s
    return soak_s + (plan_s or 0.0)


def cycles_left(elapsed: float, duration: float, cycle_s: float) -> int:
    """About how many more cycles start before ``duration`` (a cycle starts while time is left)."""
    if elapsed >= duration:
        return 0
    return max(1, -(-int(duration - elapsed) // max(1, int(round(cycle_s)))))


def progress_text(cycle: int, elapsed: float, duration: float, cycle_s: float, worst: Figure | None) -> str:
    """``soak: cycle 3 of about 8 done in 5 s; 25 s left; worst: local inter_node.tcp_throughput 12.1 Gb/s (+1110%)``."""
    total = cycle + cycles_left(elapsed, duration, cycle_s)
    left = max(0.0, duration - elapsed)
    text = (f"soak: cycle {cycle} of about {total} done in {format_duration(cycle_s)}; "
            f"{format_duration(left) if left else 'no time'} left")
    if worst is not None:
        # here: report/'s modules are plugins registered after this one (assertion rewriting)
        from pytest_fabric.report.summary import format_number

        figure = f"{format_number(worst.value)} {worst.unit}".strip() if worst.value is not None else worst.outcome
        room = worst.headroom
        margin = "" if room is None else (f" ({room * 100:.0f}% inside its limit)" if room >= 0
                                          else f" ({-room * 100:.0f}% beyond its limit)")
        text += f"; worst of the cycle: {worst.subject} {worst.key} {figure}{margin}"
        if worst.outcome != "passed":
            text += f" {worst.outcome.upper()}"
    return text


def _worst(figures: list[Figure]) -> Figure | None:
    """A cycle's worst figure: a failure or an error before any pass, then the least headroom."""
    order = {"failed": 0, "error": 1}

    def key(f: Figure) -> tuple[int, float]:
        return (order.get(f.outcome, 2), f.headroom if f.headroom is not None else float("inf"))

    return min(figures, key=key) if figures else None


@dataclass
class CycleSpan:
    """One cycle: when it began and ended (seconds into the soak), and its checks' outcomes."""

    cycle: int
    start: float
    end: float | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"cycle": self.cycle, "start_s": round(self.start, 3),
                "end_s": None if self.end is None else round(self.end, 3), "counts": dict(self.counts)}


class SoakLog:
    """What a soak gathered: its cycles, each check's figure per cycle, the telemetry. Thread-safe."""

    def __init__(self, duration_s: float, interval_s: float, max_drift: float | None) -> None:
        self.duration_s = duration_s
        self.interval_s = interval_s
        self.max_drift = max_drift
        self.started = time.time()
        self._mono = time.monotonic()
        self.spans: list[CycleSpan] = []
        self.figures: list[Figure] = []
        #: (node, series) -> its samples as kept (see _keep), and the latest one taken
        self._telemetry: dict[tuple[str, str], list[Sample]] = {}
        self._latest: dict[tuple[str, str], Sample] = {}
        self.not_sampled: dict[str, str] = {}
        self.status = "running"
        self.verdict: SoakVerdict | None = None
        self._lock = threading.Lock()
        self._limits: dict[str, float] = {}  # nodeid -> the check's floor or ceiling, in the figure's unit
        self.load_runs = 0
        self.load_not_run: dict[str, str] = {}
        self._snapshot: dict[str, Any] | None = None
        self._snapshot_at = 0.0

    def elapsed(self) -> float:
        return time.monotonic() - self._mono

    @property
    def complete_cycles(self) -> int:
        return sum(1 for s in self.spans if s.end is not None)

    def begin(self, cycle: int) -> None:
        with self._lock:
            self.spans.append(CycleSpan(cycle, self.elapsed()))

    def end(self, cycle: int) -> None:
        with self._lock:
            span = self.spans[-1]
            span.end = self.elapsed()
            for f in self.figures:
                if f.cycle == cycle:
                    span.counts[f.outcome] = span.counts.get(f.outcome, 0) + 1

    def add_check(self, record: dict[str, Any]) -> None:
        """A check's record of the cycle running (a skipped one measured nothing: not a figure)."""
        # here: report/'s modules are plugins registered after this one (assertion rewriting)
        from pytest_fabric.report.summary import higher_is_better, numeric_value

        if record.get("outcome") == "skipped" or not self.spans:
            return
        measured = record.get("measured") or {}
        expected = record.get("expected") or {}
        limit = numeric_value(expected)
        nodeid = str(record.get("nodeid"))
        margin = record.get("margin")
        figure = Figure(
            cycle=self.spans[-1].cycle, at=self.elapsed(), nodeid=nodeid,
            key=f"{record.get('layer')}.{record.get('check')}", subject=str(record.get("subject")),
            nodes=tuple(record.get("nodes") or ()), outcome=str(record.get("outcome")), value=numeric_value(measured),
            unit=str(measured.get("unit") or ""), higher_is_better=higher_is_better(record),
            margin=float(margin) if isinstance(margin, (int, float)) else None,
            message=str(record.get("message") or "")[:500])
        with self._lock:
            self.figures.append(figure)
            if limit is not None and (expected.get("unit") or "") == figure.unit:
                self._limits[nodeid] = limit

    def add_load(self, cycle: int, load: Any) -> None:
        """One node's GEMM load after ``cycle`` (a ``GemmLoad``): each GPU's rate, and its throttling."""
        at = self.elapsed()
        with self._lock:
            self.load_runs += 1
            for rate in load.rates:
                subject = f"{load.node}:gpu{rate.index}"
                self.figures.append(Figure(cycle, at, f"soak load {subject}", "soak.gemm_load", subject, (load.node,),
                                           "passed", float(rate.tflops), "TFLOP/s", True))
            for index, reasons in load.reasons.items():
                throttled = sorted(r for r in reasons if r in THROTTLE_REASONS)
                self._keep(Sample(at, load.node, f"gpu{index} throttled under load",
                                  1.0 if throttled else 0.0, "", "flag", ", ".join(throttled)))

    def add_load_error(self, node: str, why: str) -> None:
        with self._lock:
            self.load_not_run.setdefault(node, why)

    def _keep(self, sample: Sample) -> None:
        """Keep a sample (under the lock) as much as a day of them can be kept: a counter, state or flag only
        where it changed (all the judgement reads), a level (temperature, power) thinned to every other
        point once it has :data:`MAX_LEVEL_POINTS`; the latest sample of each series is kept apart."""
        key = (sample.node, sample.series)
        kept = self._telemetry.setdefault(key, [])
        self._latest[key] = sample
        if sample.kind != "level":
            if not kept or (kept[-1].value, kept[-1].text) != (sample.value, sample.text):
                kept.append(sample)
            return
        kept.append(sample)
        if len(kept) > MAX_LEVEL_POINTS:
            kept[:] = kept[::2]

    @property
    def samples(self) -> list[Sample]:
        """The telemetry kept, every series (see :meth:`_keep`)."""
        with self._lock:
            return [s for kept in self._telemetry.values() for s in kept]

    def add_samples(self, samples: list[Sample], not_sampled: dict[str, str]) -> None:
        with self._lock:
            for sample in samples:
                self._keep(sample)
            for node, why in not_sampled.items():
                self.not_sampled.setdefault(node, why)

    def judge(self) -> SoakVerdict:
        """The soak's judgement over its complete cycles (a cycle cut short is left out)."""
        with self._lock:
            done = {s.cycle for s in self.spans if s.end is not None}
            figures = [f for f in self.figures if f.cycle in done]
            samples = [s for kept in self._telemetry.values() for s in kept]
            spans = [(s.cycle, s.start, s.end) for s in self.spans]
        self.verdict = judge_soak(figures, samples, cycles=len(done), started=self.started, max_drift=self.max_drift,
                                  spans=spans)
        return self.verdict

    def snapshot(self, *, force: bool = False) -> dict[str, Any]:
        """``run.soak`` as the record's rewrites take it: built afresh at most every :data:`SNAPSHOT_S`
        (a day's soak holds ~10^5 figures, and the record is rewritten after every check) unless
        ``force`` (a cycle's end, the soak's end)."""
        now = time.monotonic()
        if force or self._snapshot is None or now - self._snapshot_at >= SNAPSHOT_S:
            self._snapshot, self._snapshot_at = self.to_json(), now
        return self._snapshot

    def to_json(self) -> dict[str, Any]:
        """``run.soak`` of the JSON record (see docs/report.md)."""
        with self._lock:
            series: dict[str, dict[str, Any]] = {}
            for f in self.figures:
                entry = series.setdefault(f.nodeid, {
                    "nodeid": f.nodeid, "key": f.key, "subject": f.subject, "nodes": list(f.nodes), "unit": f.unit,
                    "higher_is_better": f.higher_is_better, "limit": self._limits.get(f.nodeid), "points": []})
                entry["points"].append([f.cycle, round(f.at, 3), f.value, f.outcome])
            telemetry: dict[tuple[str, str], dict[str, Any]] = {}
            for key, kept in self._telemetry.items():
                latest = self._latest[key]
                shown = kept + ([latest] if latest is not kept[-1] else [])  # a steady series still reaches now
                telemetry[key] = {"node": latest.node, "series": latest.series, "unit": latest.unit, "kind": latest.kind,
                                  "points": [[round(s.at, 3), s.value, s.text] for s in shown]}
            spans = [s.to_json() for s in self.spans]
            not_sampled = dict(sorted(self.not_sampled.items()))
        return {
            "duration_s": self.duration_s,
            "started": datetime.fromtimestamp(self.started, timezone.utc).isoformat(timespec="seconds"),
            "elapsed_s": round(self.elapsed(), 3),
            "status": self.status,
            "cycles": sum(1 for s in spans if s["end_s"] is not None),
            "cycle_spans": spans,
            "max_drift": self.max_drift,
            "load": None if not (self.load_runs or self.load_not_run) else {
                "runs": self.load_runs, "not_run": dict(sorted(self.load_not_run.items()))},
            "figures": list(series.values()),
            "telemetry": {"interval_s": self.interval_s, "series": list(telemetry.values()), "not_sampled": not_sampled},
            "judgement": self.verdict.to_json() if self.verdict is not None else None,
        }


class Sampler:
    """A thread sampling every node's telemetry each ``interval`` seconds into the log."""

    def __init__(self, state: FabricState, log: SoakLog) -> None:
        self.state = state
        self.log = log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fabric-soak-telemetry", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, last: bool = True) -> None:
        """End the sampling; ``last``: one more sample, so a counter's growth to the end is seen."""
        self._stop.set()
        self._thread.join(timeout=30)
        if last and not self._thread.is_alive():
            self._sample_quietly()

    def _sample_quietly(self) -> None:
        if self.state.cluster is None or self.state.cluster.gate.stopping:
            return
        try:
            self.sample_once()
        except Exception:  # a sample never ends the soak; the next one tries again
            pass

    def _loop(self) -> None:
        # The first sample as soon as the cluster is connected (by the first test), then steadily.
        while self.state.cluster is None and not self._stop.wait(0.2):
            pass
        while not self._stop.is_set():
            began = time.monotonic()
            self._sample_quietly()
            self._stop.wait(max(0.0, self.log.interval_s - (time.monotonic() - began)))

    def sample_once(self) -> None:
        cluster = self.state.cluster
        assert cluster is not None
        nodes = cluster.nodes

        def one(node: Any) -> tuple[list[Sample], dict[str, str]]:
            at = self.log.elapsed()
            try:
                telemetry = sample(node)
            except RunStopped:  # the run is stopping and refused the command: nothing about the node
                return [], {}
            except Exception as exc:  # the node did not answer: a fault of its own (state: answered)
                why = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
                return [Sample(at, node.name, "answers telemetry", 0.0, "", "state", f"no: {why}")], {}
            out = [Sample(at, node.name, "answers telemetry", 1.0, "", "state", "yes")]
            out += [Sample(at, node.name, r.series, r.value, r.unit, r.kind, r.text) for r in telemetry.readings]
            return out, {node.name: "; ".join(f"{part}: {why}" for part, why in telemetry.not_sampled.items())
                         } if telemetry.not_sampled else {}

        for samples, not_sampled in fan_out(nodes, one, self.state.batches.fanout):
            self.log.add_samples(samples, not_sampled)


def _fresh_caches(state: FabricState) -> None:
    """A cycle measures afresh: nothing read or measured in the last cycle is reused."""
    on_progress = state.batches.on_progress
    state.batches = BatchCache(state.batches.fanout)
    state.batches.on_progress = on_progress
    state.once = Once()


def _fresh_item(item: pytest.Item) -> None:
    """A test runs again: its verdicts, its time and its fixtures' request start over."""
    keys: tuple[pytest.StashKey[Any], ...] = (VERDICTS_KEY, ELAPSED_KEY, STARTED_KEY)
    for key in keys:
        if key in item.stash:
            del item.stash[key]
    initrequest: Callable[[], None] | None = getattr(item, "_initrequest", None)
    if initrequest is not None:  # pytest.Function: a fresh FixtureRequest, as pytest-rerunfailures does
        initrequest()


class SoakPlugin:
    """Registered with ``--soak``: runs the cycles, gathers each cycle's figures, samples telemetry."""

    def __init__(self, config: pytest.Config, log: SoakLog, load_s: float | None = None) -> None:
        self.config = config
        self.log = log
        self.cycle = 0
        self.load_s = load_s  # the profile's soak.load: the GEMM on every GPU between cycles

    def _load(self, state: FabricState, seconds: float) -> None:
        """The GEMM load on every node between two cycles (probes/gpu_load.py); each GPU's rate is a
        figure of the soak (judged for drift like a check's), its throttling a telemetry flag."""
        cluster = state.cluster
        if cluster is None or seconds < 1:
            return
        cycle = self.cycle

        def one(node: Any) -> None:
            try:
                load = run_gemm_load(node, seconds)
            except Exception as exc:  # no dcgmproftester, no GPU: said, and the soak goes on without it
                self.log.add_load_error(node.name, str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__)
                return
            self.log.add_load(cycle, load)

        fan_out(cluster.nodes, one, state.batches.fanout)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            raise session.Interrupted(
                f"{session.testsfailed} error{'s' if session.testsfailed != 1 else ''} during collection")
        if session.config.option.collectonly:
            return True
        state = get_state(self.config)
        assert state is not None
        sampler = Sampler(state, self.log)
        sampler.start()
        try:
            self._cycles(session, state)
            self.log.status = "complete"
        except BaseException:
            self.log.status = "interrupted"
            sampler.stop(last=False)  # the run is stopping: nothing new starts on a node
            raise
        finally:
            sampler.stop()
            self.log.judge()
            self._seal()
        return True

    def _cycles(self, session: pytest.Session, state: FabricState) -> None:
        items = session.items
        while True:
            self.cycle += 1
            if self.cycle > 1:
                _fresh_caches(state)
            self.log.begin(self.cycle)
            for i, item in enumerate(items):
                if self.cycle > 1:
                    _fresh_item(item)
                # Every cycle ends with its fixtures torn down: the next sets them up afresh.
                nextitem = items[i + 1] if i + 1 < len(items) else None
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
                if session.shouldfail:
                    raise session.Failed(session.shouldfail)
                if session.shouldstop:
                    raise session.Interrupted(session.shouldstop)
            self.log.end(self.cycle)
            self._seal()
            self._progress()
            if self.log.elapsed() >= self.log.duration_s or not items:
                return
            if self.load_s:
                self._load(state, min(self.load_s, self.log.duration_s - self.log.elapsed()))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # report/ is imported when called: imported at the top, it escapes assertion rewriting (plugin.py)
        from pytest_fabric.report.collect import record_of

        record = record_of(report)
        if record is not None:
            self.log.add_check(record)

    def _seal(self) -> None:
        """Rewrite the JSON record now (run.soak as it stands), whatever the writer's pace."""
        # here: report/'s modules are plugins registered after this one (assertion rewriting)
        from pytest_fabric.report.record_json import WRITER_KEY

        self.log.snapshot(force=True)
        writer = self.config.stash.get(WRITER_KEY, None)
        if writer is not None:
            writer.write()

    def _progress(self) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        spans = [s for s in self.log.spans if s.end is not None]
        cycle_s = sum((s.end or 0) - s.start for s in spans) / max(1, len(spans))
        worst = _worst([f for f in self.log.figures if f.cycle == self.cycle])
        reporter.ensure_newline()
        reporter.write_line(progress_text(self.cycle, self.log.elapsed(), self.log.duration_s, cycle_s, worst))

    @pytest.hookimpl(trylast=True)  # after report/progress.py priced the plan
    def pytest_report_collectionfinish(self, config: pytest.Config, items: list[pytest.Item]) -> list[str]:
        # here: report/'s modules are plugins registered after this one (assertion rewriting)
        from pytest_fabric.report.progress import PLAN_KEY

        plan = config.stash.get(PLAN_KEY, None)
        duration = self.log.duration_s
        line = f"fabric: soak: {format_duration(duration)} of cycles"
        if plan is not None and plan.total_s > 0:
            line += (f", a cycle planned ~{format_duration(plan.total_s)}: about "
                     f"{cycles_left(0.0, duration, plan.total_s)} cycles")
        line += f"; telemetry every {format_duration(self.log.interval_s)}"
        return [line]

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        verdict = self.log.verdict
        if verdict is None:
            return
        said = verdict.verdict.upper()
        if self.log.status == "interrupted" and verdict.verdict == "accept":
            said = "interrupted; no fault in the cycles that ran to their end"
        terminalreporter.write_sep("-", f"soak: {self.log.complete_cycles} cycles in "
                                        f"{format_duration(self.log.elapsed())}: {said}")
        if verdict.max_drift is None:
            terminalreporter.write_line("drift not judged: the profile sets no soak.max_drift")
        for fault in verdict.faults:
            terminalreporter.write_line(fault.message, red=fault.kind != "errored", yellow=fault.kind == "errored")
        for node, why in sorted(self.log.not_sampled.items()):
            terminalreporter.write_line(f"telemetry not sampled on {node}: {why}")
        for node, why in sorted(self.log.load_not_run.items()):
            terminalreporter.write_line(f"soak.load not run on {node}: {why}")


SOAK_KEY = pytest.StashKey[SoakLog]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("fabric").addoption(
        "--soak", dest="fabric_soak", default=None, metavar="DURATION",
        help="burn-in: run the selected checks in cycles until DURATION (40s, 30m, 24h) has passed, sampling "
        "telemetry meanwhile; judged over time (every cycle passes, no drift beyond the profile's soak.max_drift)",
    )


@pytest.hookimpl(trylast=True)  # after plugin.py's configure loaded the profile
def pytest_configure(config: pytest.Config) -> None:
    duration = soak_seconds(config)
    state = get_state(config)
    if duration is None or state is None:
        return
    if hasattr(config, "workerinput") or config.getoption("numprocesses", None):
        raise pytest.UsageError("--soak runs its cycles in one process: leave out -n (pytest-xdist)")
    written = state.inventory.slurm.time_limit_min if state.inventory.slurm is not None else None
    if written is not None and any(n.transport == "slurm" for n in state.inventory.nodes) and written * 60 < duration:
        # An allocation that ends first cuts the soak short, and its last cycles with it.
        raise pytest.UsageError(
            f"--soak {config.getoption('fabric_soak')}: inventory {state.inventory.path}: slurm: time {written} "
            f"(minutes) ends before the soak does: raise it past {format_duration(duration)} and a cycle, or leave "
            "it out to have the allocation take the soak's length and one more cycle")
    settings = getattr(state.profile.document, "soak", None)
    interval = getattr(settings, "interval_s", None) or DEFAULT_INTERVAL_S
    max_drift = getattr(settings, "max_drift_fraction", None)
    # here: report/'s modules are plugins registered after this one (assertion rewriting)
    from pytest_fabric.report.collect import SOAK_KEY as RECORD_SOAK_KEY

    log = SoakLog(duration, interval, max_drift)
    config.stash[SOAK_KEY] = log
    config.stash[RECORD_SOAK_KEY] = log.snapshot  # what the record, the verdict and the page read
    config.pluginmanager.register(SoakPlugin(config, log, getattr(settings, "load_s", None)), "fabric-soak")


def get_soak(config: pytest.Config) -> SoakLog | None:
    """The run's soak log (None without ``--soak``)."""
    return config.stash.get(SOAK_KEY, None)
