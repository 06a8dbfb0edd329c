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
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from ..record import REPORT_ATTRIBUTE
from ..runinfo import get_run_info
from .compare import annotate
from .evidence import EVIDENCE_DIR_KEY, slim_evidence

__all__ = ["CHECKS_KEY", "get_checks", "is_controller", "json_safe", "record_of"]

CHECKS_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()


def is_controller(config: pytest.Config) -> bool:
    """False in a pytest-xdist worker: reports are written once, by the process that sees them all."""
    return not hasattr(config, "workerinput")


def get_checks(config: pytest.Config) -> list[dict[str, Any]]:
    """The records gathered so far, in arrival order (empty without ``--cluster`` or on a worker)."""
    return list(config.stash.get(CHECKS_KEY, {}).values())


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
        annotate(self.config, check)
        store = self.config.stash[CHECKS_KEY]
        store.pop(report.nodeid, None)  # re-reported: move to the end, where it now arrived
        store[report.nodeid] = check


def pytest_configure(config: pytest.Config) -> None:
    if is_controller(config):
        config.pluginmanager.register(Collector(config), "fabric-report-collector")
