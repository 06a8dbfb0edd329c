"""Gather the per-check records on the controller: what every other report module reads.

The plugin core attaches ``CheckRecord.to_dict()`` to each test report as
``report.fabric_check``.  This module keeps one record per test (the call
phase's replaces a setup phase's), in the order results arrive, in
``config.stash[CHECKS_KEY]``.  It runs on the controller only: under
pytest-xdist the reports travel back from the workers with the record on them,
so nothing here depends on where a test ran.

The stored copy is the record as the JSON file holds it: outputs replaced by
their hashes (and files, with ``--evidence-dir``), values made JSON-safe, and
``previous`` added with ``--compare``.  The HTML evidence reads the outputs
from the report itself.

It also keeps what the run's verdict needs beyond the records: the
:class:`~.run_verdict.Plan` (every conformance test collection found, selected
or deselected; under pytest-xdist each worker sends its own in
``workeroutput``), and whether the run was stopped.  :func:`final_verdict` puts
them together; every output reads the verdict from there.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_fabric.record.check_record import PLANNED_KEY, REPORT_ATTRIBUTE, PlannedCheck
from pytest_fabric.record.runinfo import get_run_info
from pytest_fabric.report.compare import annotate
from pytest_fabric.report.errors import TRACEBACK_ATTRIBUTE
from pytest_fabric.report.evidence import EVIDENCE_DIR_KEY, slim_evidence, write_output
from pytest_fabric.report.run_verdict import Plan, RunVerdict, judge_run, with_soak

__all__ = ["CHECKS_KEY", "SOAK_KEY", "get_checks", "get_plan", "is_controller", "json_safe", "record_of", "final_verdict",
           "soak_record", "soak_send_back"]

CHECKS_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()
PLAN_KEY = pytest.StashKey[Plan]()
STOPPED_KEY = pytest.StashKey[bool]()
SESSION_KEY = pytest.StashKey[pytest.Session]()
_WORKEROUTPUT = "fabric_plan"


def is_controller(config: pytest.Config) -> bool:
    """False in a pytest-xdist worker: reports are written once, by the process that sees them all."""
    return not hasattr(config, "workerinput")


def get_checks(config: pytest.Config) -> list[dict[str, Any]]:
    """The records gathered so far, in arrival order (empty without ``--cluster`` or on a worker)."""
    return list(config.stash.get(CHECKS_KEY, {}).values())


def get_plan(config: pytest.Config) -> Plan:
    """What collection found (on the controller under xdist: what the workers sent)."""
    return config.stash.get(PLAN_KEY, Plan())


def run_stopped(config: pytest.Config) -> bool:
    """The run was cut short: Ctrl-C or ``pytest.exit`` (also how xdist stops), ``-x``/``--maxfail``."""
    session = config.stash.get(SESSION_KEY, None)
    stopped = session is not None and bool(session.shouldstop or session.shouldfail)
    return stopped or config.stash.get(STOPPED_KEY, False)


def final_verdict(config: pytest.Config) -> RunVerdict:
    """The run's verdict, as the terminal, HTML, JUnit and JSON outputs all show it (at the session's end)."""
    status = "interrupted" if run_stopped(config) else "complete"
    verdict = judge_run(get_checks(config), get_plan(config), status=status)
    soak = soak_record(config)
    return with_soak(verdict, (soak.get("judgement") or {}).get("verdict")) if soak is not None else verdict


#: with ``--soak``: what gives the record's ``run.soak`` (session/soak.py puts it here; ``force``:
#: built afresh now, not the copy of the last few seconds)
SOAK_KEY = pytest.StashKey[Callable[..., dict[str, Any]]]()


def soak_send_back(soak: dict[str, Any] | None) -> list[str]:
    """The nodes a soak's faults are about: a node's own check or telemetry (a failure, a drift, a counter;
    not an unmeasured cycle). A pair's fault names no end, as a lone failed pair does not (send_back)."""
    faults = ((soak or {}).get("judgement") or {}).get("faults") or []
    return [str(f["nodes"][0]) for f in faults if f.get("kind") != "errored" and len(f.get("nodes") or []) == 1]


def soak_record(config: pytest.Config, *, force: bool = False) -> dict[str, Any] | None:
    """The record's ``run.soak`` (None without ``--soak``): cycles, figures per cycle, telemetry, judgement."""
    soak = config.stash.get(SOAK_KEY, None)
    return soak(force=force) if soak is not None else None


def record_of(report: pytest.TestReport) -> dict[str, Any] | None:
    """The record the plugin core attached to a test report, if any."""
    rec = getattr(report, REPORT_ATTRIBUTE, None)
    return rec if isinstance(rec, dict) else None


def json_safe(value: Any) -> Any:
    """A copy that ``json.dumps(allow_nan=False)`` accepts: NaN/inf become None, unknown objects text."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


class Collector:
    """Registered on the controller; turns reports into stored records."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        config.stash[CHECKS_KEY] = {}

    @pytest.hookimpl(tryfirst=True)  # before the JSON writer and pytest-html read the store
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        rec = record_of(report)
        if rec is None or get_run_info(self.config) is None:
            return
        check = json_safe({k: v for k, v in rec.items() if k != "evidence"})
        json_path = self.config.getoption("conformance_json", None)
        base = Path(json_path).expanduser().resolve().parent if json_path else Path.cwd()
        check["evidence"] = slim_evidence(rec.get("evidence") or [], self.config.stash.get(EVIDENCE_DIR_KEY, None), base)
        check["evidence"] = json_safe(check["evidence"])
        directory = self.config.stash.get(EVIDENCE_DIR_KEY, None)
        traceback = getattr(report, TRACEBACK_ATTRIBUTE, None)
        if traceback and directory is not None:  # the message replaced it on the report (report/errors.py)
            check["traceback_file"] = os.path.relpath(directory / write_output(directory, str(traceback)), base)
        annotate(self.config, check)
        store = self.config.stash[CHECKS_KEY]
        store.pop(report.nodeid, None)  # re-reported: move to the end, where it now arrived
        store[report.nodeid] = check


class PlanRecorder:
    """Registered in every process that collects: notes each conformance test, selected or not."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.selected: dict[str, PlannedCheck] = {}
        self.deselected: dict[str, PlannedCheck] = {}

    def _store(self) -> None:
        info = get_run_info(self.config)
        plan = Plan(dict(self.selected), dict(self.deselected), tuple(info.profile_checks) if info else ())
        self.config.stash[PLAN_KEY] = plan
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_WORKEROUTPUT] = plan.to_dict()

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        for item in items:
            planned = item.stash.get(PLANNED_KEY, None)
            if planned is not None:
                self.deselected[planned.nodeid] = planned
                self.selected.pop(planned.nodeid, None)

    @pytest.hookimpl(trylast=True)  # after every plugin that deselects in its own collection_finish
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            planned = item.stash.get(PLANNED_KEY, None)
            if planned is not None:
                self.selected[planned.nodeid] = planned
        self._store()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.config.stash[SESSION_KEY] = session

    def pytest_keyboard_interrupt(self) -> None:
        self.config.stash[STOPPED_KEY] = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """pytest-xdist, on the controller: a worker finished; take its plan."""
        data = (getattr(node, "workeroutput", None) or {}).get(_WORKEROUTPUT)
        if data:
            self.config.stash[PLAN_KEY] = get_plan(self.config).merged(Plan.from_dict(data))


def pytest_configure(config: pytest.Config) -> None:
    # Both read the run info when they are called: a conftest may put it in the stash after this.
    config.pluginmanager.register(PlanRecorder(config), "fabric-report-plan")
    if is_controller(config):
        config.pluginmanager.register(Collector(config), "fabric-report-collector")
