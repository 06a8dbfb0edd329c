"""The pytest-html report: verdict, run facts, per-layer and per-node tables, heatmaps, evidence.

Registered only when pytest-html is installed and ``--html`` is given, and only
on the controller (pytest-html's hooks run there; xdist workers write nothing).
It does nothing without ``--cluster``.  What it adds:

- title: ``Fabric conformance: <cluster> vs <profile>``
- top of the summary: the run's verdict in big type (ACCEPT, REJECT, INCOMPLETE,
  INTERRUPTED or NO VERDICT, as the terminal, JUnit and JSON say it), counts,
  what did not run and why, cluster, profile
  (name, sha256, extends), nodes, start/end, versions of pytest-fabric and of
  the tools the nodes ran
- below the filters: checks per layer (failures first), the per-node table with
  attribution, node x node heatmaps per pair check, per-GPU-pair NVLink matrices
- results table: sortable columns layer, check, subject, measured, expected,
  margin, outcome (and change with ``--compare``); each row's extras hold the
  evidence: the commands per node, their outputs, the expectation and its source
- last of the summary: ``nodes to send back: gpu[03,17]``, a nodeset to paste
  into ``srun --exclude``
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from ..runinfo import get_run_info, utc_now
from . import page
from .collect import CHECKS_KEY, final_verdict, get_checks, is_controller, record_of
from .compare import summary_line

__all__ = ["FabricHtml"]

_COLUMNS = ["layer", "check", "subject", "measured", "expected", "margin", "outcome"]


class FabricHtml:
    """pytest-html hook implementations; registered as a plugin object when pytest-html is active."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seen_outputs: dict[str, str] = {}  # sha256 -> the check whose evidence shows it

    def _active(self) -> bool:
        return get_run_info(self.config) is not None

    def _with_change(self) -> bool:
        return bool(self.config.getoption("compare", None))

    def pytest_html_report_title(self, report: Any) -> None:
        info = get_run_info(self.config)
        if info is not None:
            report.title = f"Fabric conformance: {info.cluster_name} vs {info.profile_name}"

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        if not self._active():
            return
        names = _COLUMNS + (["change"] if self._with_change() else [])
        # After pytest-html's Result and Test columns, so the page still opens on "failures first".
        cells[2:2] = [f'<th class="sortable" data-column-type="{n}">{n.capitalize()}</th>' for n in names]

    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        if not self._active():
            return
        rec = record_of(report)
        check = None
        if rec is not None:
            # The collector's copy carries "previous" (--compare); fall back to the report's own.
            check = self.config.stash.get(CHECKS_KEY, {}).get(report.nodeid, rec)
            if page.not_set(check):
                # Not asked for: thousands of rows on a large cluster, counted in the banner instead.
                del cells[:]  # pytest-html leaves a test with no cells out of its table
                return
        cells[2:2] = page.row_cells(check, self._with_change())

    @pytest.hookimpl(tryfirst=True)  # before pytest-html turns the report's extras into its data
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        rec = record_of(report)
        if rec is None or not self._active():
            return
        if rec.get("outcome") == "skipped" and not rec.get("evidence"):
            return  # its reason is pytest-html's log line already; on 64 nodes these are thousands of rows
        extras = list(getattr(report, "extras", []) or [])
        extras.append({"name": "evidence", "format_type": "html", "content": page.evidence_html(rec, self.seen_outputs),
                       "mime_type": None, "extension": None})
        report.extras = extras  # type: ignore[attr-defined]  # pytest-html's convention

    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str]) -> None:
        info = get_run_info(self.config)
        if info is None:
            return
        checks = get_checks(self.config)
        verdict = final_verdict(self.config)
        finished = info.finished or utc_now()
        prefix.extend([
            page.STYLE,
            page.verdict_banner(verdict, _took(info.started, finished)),
            page.not_run_table(verdict, checks),
            page.run_table(info, checks, finished, summary_line(self.config, checks)),
        ])
        postfix.extend([page.layer_tables(checks), page.node_table(info, checks), page.heatmaps_html(info, checks),
                        page.send_back_line(checks)])


def _took(started: str | None, finished: str | None) -> str | None:
    """``00:04:22`` between two ISO times, as pytest-html writes a duration; None when either is unknown."""
    try:
        seconds = int((datetime.fromisoformat(str(finished)) - datetime.fromisoformat(str(started))).total_seconds())
    except ValueError:
        return None
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}" if seconds >= 0 else None


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if (
        is_controller(config)
        and config.pluginmanager.hasplugin("html")
        and config.getoption("htmlpath", None)
    ):
        config.pluginmanager.register(FabricHtml(config), "fabric-report-html")
