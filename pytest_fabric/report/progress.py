"""The run's progress in the terminal: what it will do, then where each wave or round stands.

After collection, one line says what the run will do and about how long it takes
(:mod:`pytest_fabric.run.plan`). While a wave or a round of pairs is measured, a live line
(rewritten in place, on a terminal) shows the check, how many of its subjects are done,
the time so far and the time left; when the batch ends, its line stays (a batch every member of
which skipped, a check the profile does not set, leaves none). Without a
terminal (CI logs) only that last line is written: a line per wave or round, not per test.
A batch of one subject (one node, a pair re-measured alone) writes nothing: its test's
outcome says as much.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from pytest_fabric.config.profile import Count
from pytest_fabric.probes import mount_sharing
from pytest_fabric.report import check_times
from pytest_fabric.report.collect import get_checks, is_controller, run_stopped
from pytest_fabric.run import sharing
from pytest_fabric.run.batches import BatchProgress
from pytest_fabric.run.plan import CheckPlan, RunPlan, format_duration, plan_run, planned_subject
from pytest_fabric.run.state import CHECK_KEY, get_state
from pytest_fabric.run.waves import whole_round

__all__ = ["PLAN_KEY", "ProgressLine", "describe", "plan_items"]

#: the plan stated after collection (what the header line said)
PLAN_KEY = pytest.StashKey[RunPlan]()
_LINE_KEY = pytest.StashKey["ProgressLine"]()
#: time.monotonic() as the session started: what collection spent before the plan, and what the run took
#: (for the times kept for the next plan)
_STARTED_KEY = pytest.StashKey[float]()


def describe(progress: BatchProgress, rounds: int = 0, expected_s: float | None = None) -> str:
    """``tcp_throughput round 3/17: 12/2,048 pairs, 8 s, ~1.2 min left``; ``expected_s``: the plan's
    time for the batch, which says what is left before the first member ends."""
    if isinstance(progress.batch, tuple) and len(progress.batch) == 2 and progress.batch[0] == "round":
        of = f"/{rounds}" if rounds else ""
        what, unit = f"{progress.check} round {progress.batch[1] + 1}{of}", "pairs"
    else:
        what, unit = f"{progress.check} wave", "measured"
    # a skip is no failure to measure: a batch of a check its subjects skip says so, not "not measured"
    notes = []
    if progress.failed:
        notes.append(f"{progress.failed} not measured")
    if progress.skipped:
        notes.append(f"{progress.skipped} skipped")
    failed = f" ({', '.join(notes)})" if notes else ""
    if progress.finished:
        return f"fabric: {what}: {progress.total:,} {unit} in {format_duration(progress.elapsed_s)}{failed}"
    left = progress.remaining_s
    if left is None and expected_s is not None:
        left = max(expected_s - progress.elapsed_s, 0.0)
    remaining = f", ~{format_duration(left)} left" if left is not None else ""
    return (f"fabric: {what}: {progress.done:,}/{progress.total:,} {unit}, "
            f"{format_duration(progress.elapsed_s)}{remaining}{failed}")


class ProgressLine:
    """Writes batch progress to pytest's terminal reporter; safe to call from any thread."""

    def __init__(self, reporter: Any, rounds: int = 0, expected: Callable[[str], float | None] | None = None,
                 interval_s: float = 0.5, uncaptured: Callable[[], AbstractContextManager[Any]] | None = None) -> None:
        self.reporter = reporter
        # batches run in test setup, where pytest captures the terminal's file descriptor
        self.uncaptured = uncaptured or contextlib.nullcontext
        self.live = bool(getattr(reporter, "isatty", False))
        self.rounds = rounds
        self.expected = expected or (lambda check: None)
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._active: list[tuple[BatchProgress, float]] = []  # (latest progress, when it came), innermost last
        self._written = 0.0
        self._open = False  # our last line has no newline yet (pytest's next result adds one)
        self._live_open = False  # the line at the cursor is a live one, rewritten in place
        self._pytest_line: object = None  # pytest's current file (or -v test) line that ours ended
        self._ticker: threading.Thread | None = None
        self._stop = threading.Event()

    def update(self, progress: BatchProgress) -> None:
        """A batch's news: the callback :class:`~pytest_fabric.run.batches.BatchCache` calls."""
        if progress.total <= 1:
            return  # one subject: its test's own outcome says as much
        with self._lock, self.uncaptured():
            key = (progress.check, progress.batch)
            self._active = [(p, t) for p, t in self._active if (p.check, p.batch) != key]
            if progress.finished and progress.skipped >= progress.total:
                # every member skipped (a check the profile does not set): nothing was to be measured
                if self.live and self._live_open:
                    self.reporter.rewrite("", erase=True)
                    self._open = self._live_open = False
                    if not self._active:
                        self._give_the_line_back(on_a_new_line=False)
                return
            if progress.finished:
                final = describe(progress, self.rounds)
                if self.live and self._live_open:
                    self.reporter.rewrite(final, erase=True)
                else:
                    self._new_line()
                    self.reporter.write(final, flush=True)
                self._open, self._live_open = True, False
                if not self._active:
                    self._give_the_line_back()
                return
            if not self.live:
                return
            now = time.monotonic()
            self._active.append((progress, now))
            self._start_ticker()
            if not self._live_open:
                self._new_line()
                self._rewrite(now)
            elif now - self._written >= self.interval_s:
                self._rewrite(now)

    def close(self) -> None:
        self._stop.set()

    def _new_line(self) -> None:
        """Start a line of our own: end pytest's (its file's dots) or our last one."""
        current = getattr(self.reporter, "currentfspath", None)
        if current:
            self._pytest_line = current
            self.reporter.ensure_newline()
        elif self._open or not self._pytest_tracks_lines():
            self.reporter.write("\n")
        self._open = False

    def _give_the_line_back(self, on_a_new_line: bool = True) -> None:
        """After the last batch's line: pytest's results go on, on a line of their own (or on ours,
        erased, when ``on_a_new_line`` is False)."""
        ended, self._pytest_line = self._pytest_line, None
        if isinstance(ended, Path):
            # without -v pytest writes its dots after the file's name with no newline of its
            # own, so the file's line starts again below ours
            start = getattr(self.reporter, "startpath", None)
            name = str(ended.relative_to(start)) if start is not None and ended.is_relative_to(start) else str(ended)
            newline = "\n" if on_a_new_line else ""
            self.reporter.write(f"{newline}{name} ", flush=True)
            self.reporter.currentfspath = ended
            self._open = False
        elif not self._pytest_tracks_lines() and on_a_new_line:
            self.reporter.write("\n", flush=True)
            self._open = False
        # under -v pytest starts a new line before the test's outcome itself

    def _pytest_tracks_lines(self) -> bool:
        # under -q pytest writes its dots without a current file, so it would not end our line
        return bool(getattr(self.reporter, "showfspath", True))

    def _rewrite(self, now: float) -> None:
        progress, at = self._active[-1]
        ticking = dataclasses.replace(progress, elapsed_s=progress.elapsed_s + (now - at))
        self.reporter.rewrite(describe(ticking, self.rounds, self.expected(progress.check)), erase=True)
        self._written = now
        self._open = self._live_open = True

    def _start_ticker(self) -> None:
        if self._ticker is not None:
            return

        def tick() -> None:
            # the elapsed time moves on a terminal even while every member of a wave still runs
            while not self._stop.wait(1.0):
                with self._lock:
                    if self._active:
                        with self.uncaptured():
                            self._rewrite(time.monotonic())

        self._ticker = threading.Thread(target=tick, name="fabric-progress", daemon=True)
        self._ticker.start()


def plan_items(items: list[pytest.Item], config: pytest.Config, *, read_mounts: bool = True) -> RunPlan | None:
    """The plan of the selected ``items`` (None without ``--cluster``).

    Where a selected check loads a mount, whether the mount is shared is decided first from what
    findmnt shows on the nodes (mount_sharing.py: once per run, the decision the run then uses),
    unless ``read_mounts`` is False or nothing is to run (``--collect-only``): then from the
    inventory alone.
    """

    state = get_state(config)
    if state is None:
        return None
    if read_mounts and not config.option.collectonly:
        loading = _loaded_mounts(items, state)
        if loading and PLAN_KEY not in config.stash:
            # A Slurm allocation sizes itself by the plan as its nodes open: it gets the plan the
            # inventory alone gives (an unstated mount as shared, the longer), then findmnt is read.
            provisional = plan_items(items, config, read_mounts=False)
            if provisional is not None:
                config.stash[PLAN_KEY] = provisional
        mount_sharing.decide_before_plan(config, loading)
    specs: dict[tuple[str, str], Any] = {}
    subjects = []
    for item in items:
        info = item.stash.get(CHECK_KEY, None)
        if info is None:
            continue
        if info.fixture is not None and info.param is None:
            continue  # an empty parameter set: the test skips, nothing to measure
        if (info.layer, info.check) not in specs:
            specs[(info.layer, info.check)] = state.profile.spec(info.layer,
                                                                 state.checks.profile_key_of(info.check, info.layer))
        if specs[(info.layer, info.check)] is None and info.check != "mount":
            continue  # a check the profile does not set skips: it is not in the plan
        share = None if info.fixture is None else sharing.share_for(
            state.inventory, state.profile, info.check, info.fixture, info.param,
            lambda path: mount_sharing.decided(state, path))
        subjects.append(planned_subject(info.layer, info.check, info.fixture, info.param, share))
    rails = _count(state.checks.statement(state.profile, "rails", Count))
    gpus = _count(state.checks.statement(state.profile, "gpus", Count))
    previous, note = check_times.read(config, _times_key(state), _settings(specs))
    return plan_run(subjects, {k: v for k, v in specs.items() if v is not None}, state.batches.fanout,
                    rails=rails, gpus=gpus, nodes=len(state.inventory.nodes), items=len(items), checks=state.checks,
                    previous=previous, times_note=note, spent_s=_spent(config), last_failed=whole_round(config))


def _spent(config: pytest.Config) -> float:
    """What the session has spent so far (collecting): the part of the run before the plan, measured."""
    started = config.stash.get(_STARTED_KEY, None)
    return time.monotonic() - started if started is not None else 0.0


def _times_key(state: Any) -> str:
    """Where this inventory and profile keep their per-check times in pytest's cache."""
    return check_times.cache_key(state.inventory.sha256, state.profile.name)


def _settings(specs: dict[tuple[str, str], Any]) -> dict[str, str]:
    """Each check's settings digest: a time measured with other settings is not reused."""
    return {check: check_times.settings_digest(spec) for (_, check), spec in specs.items()}


def _loaded_mounts(items: list[pytest.Item], state: Any) -> list[str]:
    """The mount paths a selected check the profile sets loads with fio (sharing.loads_mount)."""
    paths: dict[str, None] = {}
    set_checks: dict[str, bool] = {}
    for item in items:
        info = item.stash.get(CHECK_KEY, None)
        if info is None or info.fixture != "mount" or info.param is None:
            continue
        if info.check not in set_checks:
            set_checks[info.check] = sharing.loads_mount(state.profile, info.check)
        if set_checks[info.check] and info.param[1] is not None:
            paths[info.param[1]] = None
    return list(paths)


def _count(spec: Count | None) -> int:
    """The count a profile states (``ports: 4``, ``gpu_count: 8``), 1 when it states none."""
    return (spec.stated if spec is not None else None) or 1




def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("fabric").addoption(
        "--time-budget", dest="fabric_time_budget", default=None, metavar="DURATION",
        help="refuse to start (a usage error) when the run's plan may take longer (its bound: every "
             "measurement at its floor, the most retests), e.g. 30m, 2h, 90s",
    )


def budget_seconds(text: str) -> float:
    """``30m``, ``2h``, ``90s``, ``45 min`` as seconds; a usage error names the option otherwise."""
    spelled = text.strip().replace("min", "m")
    for suffix, factor in (("h", 3600.0), ("m", 60.0), ("s", 1.0)):
        if spelled.endswith(suffix):
            try:
                return float(spelled[: -len(suffix)].strip()) * factor
            except ValueError:
                break
    raise pytest.UsageError(f"--time-budget {text}: give a duration such as 30m, 2h or 90s")


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str] | None:
    plan = plan_items(items, config)
    if plan is None:
        return None
    config.stash[PLAN_KEY] = plan
    state = get_state(config)
    assert state is not None
    # Said once, here: the inventory's shared: that findmnt contradicts (the inventory's word is kept).
    said = [mount_sharing.decided(state, path) for path in state.inventory.mounts]
    return [f"fabric: plan: {plan.summary()}"] + [f"fabric: {d.contradiction}" for d in said if d and d.contradiction]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--time-budget``: a plan whose bound exceeds the budget stops the run before anything is measured."""
    budget = config.getoption("fabric_time_budget", None)
    state = get_state(config)
    written = state.inventory.slurm.time_limit_min if state is not None and state.inventory.slurm else None
    if not budget and written is None:
        return
    plan = plan_items(items, config)
    if plan is None:
        return
    why = plan.over_budget(budget_seconds(str(budget))) if budget else None
    if why is not None:
        raise pytest.UsageError(why)
    if written is not None and state is not None and plan.bound_s > written * 60:
        # An allocation that ends before the run does cuts its last checks (error counters run last).
        raise pytest.UsageError(
            f"inventory {state.inventory.path}: slurm: time {written} (minutes) is shorter than the run's plan "
            f"(at most {format_duration(plan.bound_s)}, about {format_duration(plan.total_s)}): raise it, or leave "
            "it out to have the allocation take the plan's bound with a margin (x1.5 + 10 min)")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    config = session.config
    state = get_state(config)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if state is None or reporter is None or config.option.collectonly:
        return
    plan = config.stash.get(PLAN_KEY, None) or plan_items(session.items, config)
    per_check: dict[str, CheckPlan] = {c.check: c for c in plan.checks} if plan is not None else {}

    def expected(check: str) -> float | None:
        found = per_check.get(check)
        if found is None:
            return None
        return found.seconds * found.slots / max(found.rounds, 1)  # one round, or the wave

    rounds = len({p.round for p in state.pairs})
    capture = config.pluginmanager.get_plugin("capturemanager")
    uncaptured = capture.global_and_fixture_disabled if capture is not None else None
    line = ProgressLine(reporter, rounds, expected, uncaptured=uncaptured)
    state.batches.on_progress = line.update
    config.stash[_LINE_KEY] = line



def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_STARTED_KEY] = time.monotonic()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Keep what each check took in pytest's cache, for the plan of the next run of this inventory and profile."""
    config = session.config
    state = get_state(config)
    plan = config.stash.get(PLAN_KEY, None)
    started = config.stash.get(_STARTED_KEY, None)
    if (state is None or plan is None or started is None or not is_controller(config) or run_stopped(config)
            or config.getoption("fabric_soak", None)):  # a soak's records are its last cycle's, not the run it planned
        return
    specs = {(layer, check): state.profile.spec(layer, state.checks.profile_key_of(check, layer))
             for layer, check in {(c.layer, c.check) for c in plan.checks}}
    check_times.write(config, _times_key(state), plan, get_checks(config), time.monotonic() - started,
                      _settings(specs))


def pytest_unconfigure(config: pytest.Config) -> None:
    line = config.stash.get(_LINE_KEY, None)
    if line is not None:
        line.close()
