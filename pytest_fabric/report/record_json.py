"""``--conformance-json PATH``: the machine-readable record, rewritten as results arrive.

Shape (docs/report.md, "The JSON record"; the schema is ``record.schema.json``)::

    {"run": {...}, "checks": [{...}, ...], "sha256": "..."}

The file is replaced atomically (write a temporary file, then ``os.replace``)
after every check, so an interrupted run -- Ctrl-C, a lost controller, a killed
job -- leaves a valid, sealed record of what was measured, with
``run.status`` still ``"running"`` and no verdict.  The last write, at the end
of the session, holds the run's verdict (:func:`.collect.final_verdict`, which the
terminal, HTML and JUnit outputs read too), what did not run and why
(``run.not_run``), and the nodes to send back (``run.send_back``).  Each check is serialised once, when it
arrives, and the file is assembled from those pieces, so a rewrite costs a
string join, a hash and a write rather than re-encoding every check: for
2,000 checks the whole run's rewrites take a few seconds in total (see
``tests/unit/test_report_record_json.py::test_rewrites_stay_cheap``).
Rewrites closer together than :data:`MIN_INTERVAL_S` are deferred to the next
check or the end of the session, so bursts of skipped checks cost nothing.

A rewrite that fails (the record's filesystem full, over quota, gone read-only) removes its
temporary file and is said once, on the terminal: the path, the bytes it needed and the space
there, and what to do. The run goes on (a measurement is not lost for want of disk on the
controller); every later rewrite tries again, and the summary says whether the last one was
written.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import time
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_fabric.record.runinfo import RunInfo, get_run_info, utc_now
from pytest_fabric.report.collect import (
    CHECKS_KEY,
    SOAK_KEY,
    final_verdict,
    get_checks,
    is_controller,
    record_of,
    soak_record,
    soak_send_back,
)
from pytest_fabric.report.compare import PREVIOUS_KEY
from pytest_fabric.report.run_verdict import RunVerdict
from pytest_fabric.report.summary import (
    OUTCOMES,
    blame_findings,
    cannot_tell,
    nodeset,
    not_measured,
    outcome_counts,
    plan_vs_actual,
    seconds_between,
    send_back,
    tool_versions,
)
from pytest_fabric.report.verify import canonical_json

__all__ = ["SCHEMA_VERSION", "WRITER_KEY", "RecordWriter", "build_run", "seal_record", "timed_plan"]

SCHEMA_VERSION = 1
MIN_INTERVAL_S = 0.2


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fabric")
    group.addoption(
        "--conformance-json",
        metavar="PATH",
        default=None,
        help="write the machine-readable conformance record (run, checks, sha256) to PATH, "
        "updated after every check.",
    )


def build_run(
    info: RunInfo, checks: Sequence[dict[str, Any]], *, verdict: RunVerdict | None = None,
    compared_with: str | None = None, evidence_dir: str | None = None, finished: str | None = None,
    counts: dict[str, int] | None = None, tools: dict[str, list[str]] | None = None,
    comparison_warnings: Sequence[str] = (), host_keys: Sequence[dict[str, Any]] = (),
    plan: dict[str, Any] | None = None, plan_checks: Sequence[dict[str, Any]] | None = None,
    took_s: float | None = None, soak: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``run`` object: what was tested against what, when, with which versions, and the verdict.

    ``verdict`` is the run's (:func:`.run_verdict.judge_run`); without one the run is still
    running and has none.  ``counts`` and ``tools``, when given, stand for
    ``outcome_counts(checks)`` and ``tool_versions(checks)`` (the writer keeps them as running tallies).
    ``comparison_warnings`` say how the ``--compare`` record asked another question (profile, nodes);
    ``host_keys`` what the connections did with each node's host key (verified, accepted new, ...).
    ``plan``: what collection planned (:meth:`pytest_fabric.run.plan.RunPlan.to_json`); the record keeps
    it with what the run took, overall and per phase (:func:`.summary.plan_vs_actual`), from
    ``plan_checks`` (default ``checks``): the records so far; ``took_s``: the run's wall time so far
    (default: from its ISO start to ``finished``, whole seconds). ``soak``: a ``--soak``'s cycles, figures,
    telemetry and judgement (``run.soak``; the nodes its faults name are sent back too).
    """
    counts = counts if counts is not None else outcome_counts(checks)
    checks_for_plan = checks if plan_checks is None else plan_checks
    judged = verdict.to_json() if verdict is not None else {"verdict": None, "status": "running", "not_run": {}}
    return {
        "schema_version": SCHEMA_VERSION,
        "cluster": info.cluster_name,
        "inventory": info.inventory_path,
        "inventory_sha256": info.inventory_sha256,
        "slurm_job": info.slurm_job,
        "profile": info.profile_name,
        "profile_path": info.profile_path,
        "profile_sha256": info.profile_sha256,
        "profile_extends": list(info.profile_extends),
        "profile_description": info.profile_description,
        "overrides": list(info.overrides),
        "nodes": list(info.nodes),
        "node_count": len(info.nodes),
        "node_labels": {n: dict(v) for n, v in info.node_labels.items()},
        "started": info.started,
        "finished": finished or info.finished,
        **judged,
        "send_back": nodeset(send_back(checks) + soak_send_back(soak)) if verdict is not None else None,
        "not_measured": not_measured(checks) if verdict is not None else {},
        "cannot_tell": cannot_tell(checks) if verdict is not None else [],
        # attribution's findings that send no node back: link faults, fabric shortfalls, cannot tell
        "blame": blame_findings(checks) if verdict is not None else {},
        "counts": counts,
        "pytest_fabric_version": info.pytest_fabric_version,
        "pytest_version": pytest.__version__,
        "python_version": platform.python_version(),
        "controller": info.controller,
        "tool_versions": tools if tools is not None else tool_versions(checks),
        "compared_with": compared_with,
        "comparison_warnings": list(comparison_warnings),
        "host_key_policy": info.host_key_policy,
        "host_keys": list(host_keys),
        "evidence_dir": evidence_dir,
        "plan": plan_vs_actual(plan, checks_for_plan,
                               took_s if took_s is not None else seconds_between(info.started, finished or utc_now())),
        **({"soak": soak} if soak is not None else {}),
    }


class RecordWriter:
    """Keeps each check's canonical JSON and rewrites the record file from those pieces.

    Knows nothing of pytest, so it can be driven (and timed) directly.  What a
    rewrite costs grows with the record only by a ``writelines`` of the stored
    pieces: the hash of the checks is kept running (``hashlib`` objects copy),
    and the counts and tool versions the ``run`` object shows are kept as tallies.
    """

    def __init__(self, path: Path, info: RunInfo, *, compared_with: str | None = None,
                 evidence_dir: str | None = None, min_interval_s: float = MIN_INTERVAL_S,
                 comparison_warnings: Sequence[str] = (),
                 host_keys: Callable[[], Sequence[dict[str, Any]]] | None = None,
                 plan: Callable[[], dict[str, Any] | None] | None = None,
                 took: Callable[[], float | None] | None = None,
                 on_failure: Callable[[str], None] | None = None,
                 soak: Callable[[], dict[str, Any] | None] | None = None) -> None:
        self.path = path
        self.info = info
        self.compared_with = compared_with
        self.comparison_warnings = list(comparison_warnings)
        self.host_keys = host_keys
        self.plan = plan
        self.took = took
        self.soak = soak  # --soak: run.soak as it stands (session/soak.py)
        self._timings: dict[str, dict[str, Any]] = {}  # nodeid -> what plan_vs_actual reads of the check
        self.evidence_dir = evidence_dir
        self.min_interval_s = min_interval_s
        self._pieces: dict[str, bytes] = {}  # nodeid -> canonical JSON of the check
        self._outcomes: dict[str, str] = {}  # nodeid -> outcome, to undo a replaced check's tally
        self._counts: Counter[str] = Counter(dict.fromkeys(OUTCOMES, 0))
        self._tools: dict[str, set[str]] = {}  # versions only grow: a replaced check keeps its versions
        self._hasher = hashlib.sha256(b'{"checks":[')
        #: a check was replaced: the running hash is rebuilt at the next write, not at every replacement
        #: (a --soak replaces every check every cycle: 2,000 rebuilds of 2,000 records took 14 s a cycle)
        self._stale = False
        self._last_write = 0.0
        self.writes = 0
        #: says a failed rewrite (once per run); None: nothing is said
        self.on_failure = on_failure
        #: why the last rewrite failed (None: it was written)
        self.failure: str | None = None
        self._said = False
        #: the sha256 of the last record written (None: none yet)
        self.sha256: str | None = None
        #: whether the final write (with the run's verdict) was made: :func:`seal_record` makes it once
        self.sealed = False

    def add(self, nodeid: str, check: dict[str, Any]) -> None:
        """Take in one check (a re-reported test replaces its earlier record); rewrite unless just written."""
        piece = canonical_json(check).encode("ascii")
        replaced = self._pieces.pop(nodeid, None) is not None
        if replaced:
            self._counts[self._outcomes.pop(nodeid)] -= 1
        self._pieces[nodeid] = piece
        self._outcomes[nodeid] = outcome = str(check.get("outcome"))
        self._timings[nodeid] = {k: check.get(k) for k in ("layer", "check", "duration_s")}
        self._counts[outcome] += 1
        for tool, versions in tool_versions([check]).items():
            self._tools.setdefault(tool, set()).update(versions)
        if replaced:  # a teardown error after a recorded call, a soak's next cycle: the hash starts over
            self._stale = True
        elif not self._stale:
            self._hasher.update((b"," if len(self._pieces) > 1 else b"") + piece)
        if time.monotonic() - self._last_write >= self.min_interval_s:
            self.write()

    def write(self, verdict: RunVerdict | None = None, finished: str | None = None,
              checks: Sequence[dict[str, Any]] = ()) -> None:
        """Write the record now: canonical pieces, sealed with the sha256, replaced atomically.

        Without a ``verdict`` the record says the run is still running.  The final write passes the
        run's verdict and its ``checks`` (for the nodes to send back).
        """
        run = canonical_json(build_run(
            self.info, checks, verdict=verdict, compared_with=self.compared_with, evidence_dir=self.evidence_dir,
            finished=finished, counts=dict(self._counts), tools={t: sorted(v) for t, v in sorted(self._tools.items())},
            comparison_warnings=self.comparison_warnings, host_keys=self.host_keys() if self.host_keys else (),
            plan=self.plan() if self.plan else None, plan_checks=list(self._timings.values()),
            took_s=self.took() if self.took else None, soak=self.soak() if self.soak else None,
        )).encode("ascii")
        # The hash is over canonical_json({"checks": [...], "run": {...}}) byte for byte (keys sorted,
        # compact), so verify.record_sha256 of the loaded file reproduces it.
        if self._stale:
            self._hasher = hashlib.sha256(b'{"checks":[' + b",".join(self._pieces.values()))
            self._stale = False
        hasher = self._hasher.copy()
        hasher.update(b'],"run":' + run + b"}")
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        # One check per line: still one valid JSON document, and diffable and greppable.
        parts = (b'{"run":' + run + b',\n"checks":[\n', b",\n".join(self._pieces.values()),
                 b'\n],\n"sha256":"' + hasher.hexdigest().encode("ascii") + b'"}\n')
        self._last_write = time.monotonic()
        try:
            with open(tmp, "wb") as f:
                f.writelines(parts)
            os.replace(tmp, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            self._failed(exc, sum(map(len, parts)))
            return
        self.failure = None
        self.writes += 1
        self.sha256 = hasher.hexdigest()

    def _failed(self, exc: OSError, needed: int) -> None:
        """Keep why the rewrite failed; say it the first time, with what it needed and what to do."""
        try:
            stat = os.statvfs(self.path.parent)
            room = f"{stat.f_bavail * stat.f_frsize:,} bytes free there"
        except OSError:
            room = "the space there unknown"
        why = exc.strerror or str(exc)
        self.failure = f"{why} ({needed:,} bytes needed, {room})"
        if self._said or self.on_failure is None:
            return
        self._said = True
        self.on_failure(
            f"pytest-fabric: could not write the conformance record {self.path}: {self.failure}; the run goes on "
            "and tries again after each check and at the end: free space there, or give --conformance-json a "
            "path with room next time"
        )


class _JsonPlugin:
    """Feeds the writer the checks the collector stored, as they arrive."""

    def __init__(self, config: pytest.Config, writer: RecordWriter) -> None:
        self.config = config
        self.writer = writer

    @pytest.hookimpl(trylast=True)  # after the collector stored the check
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        check = self.config.stash.get(CHECKS_KEY, {}).get(report.nodeid)
        if check is not None and record_of(report) is not None:
            self.writer.add(report.nodeid, check)


WRITER_KEY = pytest.StashKey[RecordWriter]()


def _planned(config: pytest.Config) -> dict[str, Any] | None:
    """The plan collection stated (None before collection ends, or without --cluster)."""
    from pytest_fabric.report.progress import (
        PLAN_KEY,  # a plugin of its own, registered beside this one
    )

    plan = config.stash.get(PLAN_KEY, None)
    return plan.to_json() if plan is not None else None


#: time.monotonic() when the session started: the run's wall time to the millisecond (the record's
#: ISO times are whole seconds, too coarse for a run of seconds)
SESSION_START_KEY = pytest.StashKey[float]()


def session_seconds(config: pytest.Config) -> float | None:
    """Seconds since the session started (None outside a session)."""
    started = config.stash.get(SESSION_START_KEY, None)
    return time.monotonic() - started if started is not None else None


def plan_seconds(config: pytest.Config) -> float | None:
    """What the plan is set beside: the run's wall time so far, or under ``--soak`` its last complete
    cycle's (the plan prices one cycle; the records hold each test's last cycle)."""
    spans = [s for s in (soak_record(config) or {}).get("cycle_spans") or [] if s.get("end_s") is not None]
    if spans:
        return float(spans[-1]["end_s"]) - float(spans[-1]["start_s"])
    return session_seconds(config)


def timed_plan(config: pytest.Config, checks: Sequence[dict[str, Any]], finished: str | None = None) -> dict[str, Any] | None:
    """The plan with what the run took, as the record keeps it (``run.plan``), for the terminal and the HTML report."""
    info = get_run_info(config)
    if info is None:
        return None
    took = plan_seconds(config)
    if took is None:
        took = seconds_between(info.started, finished or info.finished or utc_now())
    return plan_vs_actual(_planned(config), checks, took)


def _say(config: pytest.Config, text: str) -> None:
    """One line on the terminal, red (on stderr where there is no terminal reporter)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        os.write(2, (text + "\n").encode(errors="replace"))
        return
    reporter.ensure_newline()
    reporter.write_line(text, red=True, bold=True)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # .trust is a plugin of its own, registered after this one: imported when called
    from pytest_fabric.report.trust import host_key_decisions

    config = session.config
    config.stash[SESSION_START_KEY] = time.monotonic()
    path = config.getoption("conformance_json", None)
    info = get_run_info(config)
    if not path or info is None or not is_controller(config):
        return
    if config.getoption("collectonly"):
        return  # nothing is measured: the last run's record stays as it was
    target = Path(path).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    cmp, ev = config.getoption("compare", None), config.getoption("evidence_dir", None)
    previous = config.stash.get(PREVIOUS_KEY, None)  # loaded before this hook (tryfirst there)
    writer = RecordWriter(target, info, compared_with=str(cmp) if cmp else None, evidence_dir=str(ev) if ev else None,
                          comparison_warnings=previous.all_warnings if previous is not None else (),
                          host_keys=partial(host_key_decisions, config), plan=partial(_planned, config),
                          took=partial(plan_seconds, config), on_failure=partial(_say, config),
                          soak=partial(soak_record, config) if config.stash.get(SOAK_KEY, None) else None)
    config.stash[WRITER_KEY] = writer
    config.pluginmanager.register(_JsonPlugin(config, writer), "fabric-report-json")
    writer.write()  # a record exists from the start, even if the first check never ends


def seal_record(config: pytest.Config) -> RecordWriter | None:
    """Write the record with the run's verdict, once, and return its writer (None: no record this run).

    Called at the session's end by this module and by the HTML report, whichever comes first (both are
    ``trylast``): the page names the seal of the file as written, so the two must be one write.
    """
    writer = config.stash.get(WRITER_KEY, None)
    if writer is None or writer.sealed:
        return writer
    writer.write(final_verdict(config), finished=utc_now(), checks=get_checks(config))
    writer.sealed = True
    return writer


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    seal_record(session.config)
