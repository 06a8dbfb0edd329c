"""The pytest-html report: verdict, run facts, per-layer and per-node tables, heatmaps, evidence.

Registered only when pytest-html is installed and ``--html`` is given, and only
on the controller (pytest-html's hooks run there; xdist workers write nothing).
It does nothing without ``--cluster``.  What it adds:

- title: ``Fabric conformance: <cluster> vs <profile>``
- top of the summary: the run's verdict in big type (ACCEPT, REJECT, INCOMPLETE,
  INTERRUPTED or NO VERDICT, as the terminal, JUnit and JSON say it), counts,
  what did not run and why, cluster, profile
  (name, sha256, extends), the conformance record's seal (its sha256, or that nothing seals the page),
  nodes, start/end, versions of pytest-fabric and of
  the tools the nodes ran, the host-key policy and what it did with each node's key
  (every key accepted new, changed or refused listed with its fingerprint, :mod:`.trust`),
  and each expected value once with its source
- below the filters: checks per layer (failures first, errors one row per cause
  with every subject it errored), the per-node table with attribution, node x node
  heatmaps per pair check, per-GPU-pair NVLink matrices
- results table: every check that measured something, and the first error of each
  cause (linking to its row above); checks the profile does not set, the other errors
  of a cause and skips with nothing to measure are counted above, not listed.  After
  pytest-html's Test column (layer, check and subject in the test id) the columns
  measured and margin (sortable), expected, outcome (and change, with ``--compare``);
  each row's extras hold the evidence: the commands per node, their exit codes and the
  tails of their outputs (written small, :mod:`.rows`: pytest-html stores every row
  escaped twice, and on 64 nodes the rows were most of an 8.7 MB page)
- below the tables: the long command lines and outputs many rows share, once
- last of the summary: ``nodes to send back: gpu[03,17]``, a nodeset to paste
  into ``srun --exclude``
"""

from __future__ import annotations

import html
from datetime import datetime
from typing import Any

import pytest

from pytest_fabric.record.runinfo import get_run_info, utc_now
from pytest_fabric.report import page, rows
from pytest_fabric.report.causes import cause_key
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
from pytest_fabric.report.compare import summary_line
from pytest_fabric.report.errors import MessageRepr
from pytest_fabric.report.record_json import seal_record, timed_plan
from pytest_fabric.report.soak_charts import soak_section

__all__ = ["FabricHtml"]

_NO_LOG = "No log output captured."  # what pytest-html logs for a test that printed nothing


class FabricHtml:
    """pytest-html hook implementations; registered as a plugin object when pytest-html is active."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.shared = rows.SharedTexts()  # what many rows would repeat, written once below the tables
        self.first_of_cause: dict[tuple[str, str], str] = {}  # (layer, cause) -> the error the table lists
        self.left_out: set[str] = set()  # node ids the results table does not list
        self.rowed: set[str] = set()  # --soak: node ids with a row already (a test reports every cycle)
        self._node_names: frozenset[str] | None = None

    def _active(self) -> bool:
        return get_run_info(self.config) is not None

    def _with_change(self) -> bool:
        return bool(self.config.getoption("compare", None))

    def _cause(self, rec: dict[str, Any], nodes: list[str]) -> tuple[str, str]:
        """(layer, cause) of an error, as Checks per layer groups it (every node name of the run taken out)."""
        if self._node_names is None:
            self._node_names = frozenset(nodes)  # made once: an error's words are looked up in it
        return str(rec.get("layer")), cause_key(rec, self._node_names)

    def pytest_html_report_title(self, report: Any) -> None:
        info = get_run_info(self.config)
        if info is not None:
            report.title = f"Fabric conformance: {info.cluster_name} vs {info.profile_name}"

    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        if not self._active():
            return
        names = list(rows.COLUMNS) + (["change"] if self._with_change() else [])
        # After pytest-html's Result and Test columns, so the page still opens on "failures first".
        cells[2:2] = [f'<th class="sortable" data-column-type="{n}">{n.capitalize()}</th>' if n in rows.SORTABLE
                      else f'<th data-column-type="{n}">{n.capitalize()}</th>' for n in names]

    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        if not self._active():
            return
        if report.nodeid in self.left_out:
            # Every phase of it: pytest-html leaves a test with no cells out of its table (and out of its data).
            del cells[:]
            return
        rec = record_of(report)
        if self.config.stash.get(SOAK_KEY, None) is not None and rec is not None:
            # --soak: a test reports every cycle; its first row stays, and a later one only when it did
            # not pass (a day of cycles would be 10^5 rows). Every cycle is drawn in Over time.
            if report.nodeid in self.rowed and rec.get("outcome") in ("passed", "skipped", "waived"):
                del cells[:]
                return
            self.rowed.add(report.nodeid)
        # The collector's copy carries "previous" (--compare); fall back to the report's own.
        check = self.config.stash.get(CHECKS_KEY, {}).get(report.nodeid, rec) if rec is not None else None
        # pytest-html's own cells too: every byte of a row is stored twice escaped, on every row.
        cells[:] = rows.compact_cells(cells)
        cells[2:2] = rows.row_cells(check, self._with_change())

    def pytest_html_results_table_html(self, report: pytest.TestReport, data: list[str]) -> None:
        """The log pytest-html shows under a row, without what says nothing on thousands of rows."""
        if not self._active() or record_of(report) is None:
            return
        if data == [_NO_LOG]:
            del data[:]  # a passing check's "No log output captured.": its evidence says what it did
        elif isinstance(report.longrepr, MessageRepr):
            # The terminal says a cause in full once and points back from its other errors; the log
            # of an error the table lists is its whole message (node, command, fix), as JUnit's <error> is.
            data[0] = html.escape(str(report.longrepr)) + "\n"
        elif report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            # pytest-html writes a skip as the repr of (path, line, reason); the reason is what a reader needs.
            data[0] = html.escape(str(report.longrepr[2])) + "\n"

    @pytest.hookimpl(tryfirst=True)  # before pytest-html turns the report's extras into its data
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        rec = record_of(report)
        info = get_run_info(self.config)
        if rec is None or info is None:
            return
        if page.not_set(rec):
            # Not asked for: thousands of rows on a large cluster, counted in the banner instead.
            self.left_out.add(report.nodeid)
            return
        cause_link = ""
        if rec.get("outcome") == "error" and report.when == "setup":
            # Errors of one cause (one missing tool on every node, every pair of a node that is down):
            # the table lists the first; Checks per layer says the cause once and lists every one.
            layer, key = self._cause(rec, info.nodes)
            if self.first_of_cause.setdefault((layer, key), report.nodeid) != report.nodeid:
                self.left_out.add(report.nodeid)
                return
            cause_link = (f"<p>Its cause is one row of <a href=#{page.cause_anchor(layer, key)}>Checks per layer</a>, "
                          "with every check it errored; this table lists its first error only.</p>")
        if rec.get("outcome") == "skipped" and not rec.get("evidence"):
            # Set by the profile but nothing to measure here (an upload target is not downloaded): Not run
            # counts it per check with the reason, Checks per layer lists it; no row of its own.
            self.left_out.add(report.nodeid)
            return
        content = cause_link + rows.evidence_html(rec, self.shared, message_in_log=_message_in_log(report, rec))
        if not content:
            return  # nothing its row and log do not already say
        extras = list(getattr(report, "extras", []) or [])
        extras.append({"name": "evidence", "format_type": "html", "content": content,
                       "mime_type": None, "extension": None})
        report.extras = extras  # type: ignore[attr-defined]  # pytest-html's convention

    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str]) -> None:
        # .trust is a plugin of its own, registered after this one: imported when called
        from pytest_fabric.report.trust import host_key_decisions, host_keys_html

        info = get_run_info(self.config)
        if info is None:
            return
        checks = get_checks(self.config)
        verdict = final_verdict(self.config)
        finished = info.finished or utc_now()
        # The record's final write, made now if its own hook has not run yet: the page names that seal.
        writer = seal_record(self.config)
        seal = page.seal_html(writer.path.name if writer is not None else None,
                              writer.sha256 if writer is not None else None,
                              writer.failure if writer is not None else None)
        prefix.extend([
            page.STYLE,
            page.verdict_banner(verdict, _took(info.started, finished)),
            seal,
            page.not_run_table(verdict, checks, info.nodes),
            _soak_html(self.config),
            page.run_table(info, checks, finished, summary_line(self.config, checks),
                           timed_plan(self.config, checks, finished)),
            host_keys_html(info.host_key_policy, host_key_decisions(self.config)),
            page.expectations_table(checks),
        ])
        postfix.extend([page.layer_tables(checks, info.nodes), page.node_table(info, checks),
                        page.heatmaps_html(info, checks), self.shared.section_html(), page.send_back_line(checks, soak_send_back(soak_record(self.config)))])


def _soak_html(config: pytest.Config) -> str:
    """``--soak``: each figure and telemetry series over time (report/soak_charts.py); empty without it."""
    soak = soak_record(config)
    return soak_section(soak) if soak is not None else ""


def _message_in_log(report: pytest.TestReport, rec: dict[str, Any]) -> bool:
    """Whether pytest-html's log of this report already holds the check's message (a failure's, an error's)."""
    message = str(rec.get("message") or "").strip()
    return bool(message) and report.outcome != "passed" and message in str(report.longrepr)


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
