"""A check that could not measure reads as its message (node, command, fix), not as a Python traceback.

The transport and the probes raise typed errors (:class:`~pytest_fabric.transport.base.TransportError`
and its subclasses, :class:`~pytest_fabric.probes.base.MeasurementError`) whose text already says
what a person needs.  pytest would print each one under a traceback of the fixture chain, some 60
lines of reprs and source per check; here the report's ``longrepr`` becomes that text, so the
terminal's ERRORS section, the short summary (``ERROR test_x[node01] - node node01: ibstat: command
not found``), pytest-html's log and JUnit's ``<error>`` all show the message, as a failure does.
In the terminal a cause is said in full once; its other errors print one line that points back.

The traceback stays available: ``--tb=long`` (or ``native``) keeps pytest's own report, and with
``--evidence-dir`` every such traceback is written there and named from the record
(``traceback_file``).  An exception that is not one of ours is a bug and keeps its traceback.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

# pytest has no public names for these (pytest 8 and 9 export neither): TestReport.longrepr is
# typed ``... | TerminalRepr``, so a longrepr of our own subclasses it, and its ``reprcrash`` is
# the ReprFileLocation that the short summary and JUnit read the message from, as they do for
# pytest's own reports.  The excinfo comes from pytest.CallInfo, which is public.
from _pytest._code.code import ReprFileLocation, TerminalRepr

from pytest_fabric.record.runinfo import get_run_info
from pytest_fabric.report.causes import cause_key
from pytest_fabric.report.safetext import safe_text, text_lines
from pytest_fabric.run.state import CHECK_KEY
from pytest_fabric.transport.base import TransportError

if TYPE_CHECKING:  # only toterminal's annotation: nothing of _pytest._io is needed at run time
    from _pytest._io import TerminalWriter

__all__ = ["MessageRepr", "TRACEBACK_ATTRIBUTE", "message_lines"]

#: the original traceback's text, kept on the report for ``--evidence-dir``
TRACEBACK_ATTRIBUTE = "fabric_traceback"
#: pytest's --tb styles under which the message replaces the traceback (auto is the default)
_SHORT_STYLES = ("auto", "short")
_HINT = "(the Python traceback: run again with --tb=long)"
#: cause (the message without the check's own node names) -> the first test that met it
_FIRST_OF_CAUSE = pytest.StashKey[dict[str, str]]()
_RUN_NODES = pytest.StashKey[frozenset[str]]()


@dataclass(eq=False)
class MessageRepr(TerminalRepr):
    """A report's ``longrepr`` that is the error's own text; ``reprcrash`` feeds the short summary and JUnit.

    ``shown`` is what the terminal prints: the whole text for the first error of a cause, one line
    pointing back to it for the others (one missing tool on 64 nodes is said in full once).  JUnit
    reads ``str()``, always the whole text.
    """

    reprcrash: ReprFileLocation
    lines: list[str]
    shown: list[str] = field(default_factory=list)

    def toterminal(self, tw: TerminalWriter) -> None:
        for line in self.shown or self.lines:
            tw.line(line, red=not line.startswith("("))

    def __str__(self) -> str:
        return "\n".join(self.lines)


def _run_nodes(config: pytest.Config) -> frozenset[str]:
    """Every node of the run, as a set made once (keying an error looks each word of it up)."""
    nodes = config.stash.get(_RUN_NODES, None)
    if nodes is None:
        run = get_run_info(config)
        nodes = config.stash[_RUN_NODES] = frozenset(run.nodes if run is not None else ())
    return nodes


def message_lines(exc: TransportError) -> list[str]:
    """The error's text as lines: ``node n: what happened``, ``command: ...``, ``fix: ...``."""
    return text_lines(str(exc)) or [f"node {exc.node}: {type(exc).__name__}"]


@pytest.hookimpl(wrapper=True, trylast=True)  # innermost: the core's record is made from what this leaves
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report: pytest.TestReport = yield
    excinfo = call.excinfo
    if excinfo is None or not report.failed or not isinstance(excinfo.value, TransportError):
        return _escaped(item, report)
    if item.config.getoption("tbstyle", "auto") not in _SHORT_STYLES:
        return _escaped(item, report)
    setattr(report, TRACEBACK_ATTRIBUTE, str(report.longrepr))
    path, lineno, _ = item.location
    # Node text (a tool's output tail) reaches the terminal and JUnit only with its controls escaped.
    lines = [safe_text(line) for line in message_lines(excinfo.value)]
    info = item.stash.get(CHECK_KEY, None)
    # The cause as the summary groups it (node names out, the run's other nodes' too), so an
    # attribution that quotes other nodes' pairs is said once as well.
    cause = cause_key({"message": "\n".join(lines), "nodes": info.nodes if info is not None else []},
                      _run_nodes(item.config))
    first = item.config.stash.setdefault(_FIRST_OF_CAUSE, {}).setdefault(cause, item.nodeid)
    shown = [] if first == item.nodeid else [f"{lines[0]}  (as for {first.rpartition('::')[2]} above)"]
    report.longrepr = MessageRepr(ReprFileLocation(path, (lineno or 0) + 1, "\n".join(lines)), [*lines, _HINT], shown)
    return _escaped(item, report)


class _EscapeControls(logging.Filter):
    """Log records (ours quote node text; paramiko's quote a node's banner) with their controls escaped."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        safe = safe_text(message)
        if safe is not message:
            record.msg, record.args = safe, None
        return True


@pytest.hookimpl(trylast=True)  # after pytest's logging plugin made its handlers
def pytest_configure(config: pytest.Config) -> None:
    """Escape control characters in what pytest's log handlers write: the live log (``--log-cli-level``),
    ``--log-file`` and the captured logs a report shows."""
    logging_plugin = config.pluginmanager.get_plugin("logging-plugin")
    for name in ("log_cli_handler", "log_file_handler", "report_handler", "caplog_handler"):
        handler = getattr(logging_plugin, name, None)
        if isinstance(handler, logging.Handler):
            handler.addFilter(_EscapeControls())


def _escaped(item: pytest.Item, report: pytest.TestReport) -> pytest.TestReport:
    """The report with the control characters of what pytest will print (its longrepr, its captured
    output and logs) escaped: a failure's message, a skip's reason or a traceback can quote node text.

    A longrepr with nothing to escape stays pytest's own (colours and all); one with something to
    escape becomes its escaped text, with the crash line the short summary and JUnit read.
    """
    if any(safe_text(content) is not content for _, content in report.sections):
        report.sections = [(title, safe_text(content)) for title, content in report.sections]
    longrepr = report.longrepr
    if longrepr is None or isinstance(longrepr, MessageRepr):
        return report
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # a skip: (path, line, "Skipped: why")
        report.longrepr = (longrepr[0], longrepr[1], safe_text(longrepr[2]))
        return report
    text = str(longrepr)
    if safe_text(text) is text:
        return report
    crash = getattr(longrepr, "reprcrash", None)
    path, lineno, _ = item.location
    where = ReprFileLocation(
        crash.path if crash is not None else path,
        crash.lineno if crash is not None else (lineno or 0) + 1,
        safe_text(crash.message if crash is not None else text.strip().rpartition("\n")[2]),
    )
    report.longrepr = MessageRepr(where, [safe_text(line) for line in text_lines(text)])
    return report
