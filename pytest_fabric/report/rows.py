"""The results table's rows: each check's cells and evidence, written small.  Pure: records in, HTML out.

pytest-html's Test column names the check's layer, check and subject
(``conformance/inter_node/test_tcp.py::test_tcp_throughput[node01<->node03]``); the columns added after it
say what the check found: measured, expected, margin and outcome (and the change, with
``--compare``).

pytest-html 4 keeps every row it lists as JSON inside one HTML attribute of the page
(``data-jsonblob``): the row's cells, a second copy of each sortable cell (its sorting reads
that), the extras (our evidence) and the log.  JSON and then the attribute escape our HTML once
more, so a ``"`` costs 6 bytes in the file and an ``&lt;`` 8; on 64 nodes (~3,000 rows) whatever
a row repeats is multiplied.  So a row here

- is plain HTML: one-word classes unquoted, only ``<`` and ``&`` escaped in text (all HTML needs
  there), no entities, a sort key as a hidden ``<i>`` before the figure it sorts, no second copy
  of a cell sorting it would not help (expected, outcome);
- shows what its cells and log do not: a failed or errored check's message is pytest-html's log
  of it already, so an error that ran no command has no evidence block at all; where an expected
  value came from is said once per check above the tables (``page.expectations_table``);
- cuts outputs to a short tail (a tool's summary is at its end), shorter for what passed;
- writes a long text that many rows share once, in the page's own section below the tables
  (plain HTML, escaped once), and links to it: a probe's long command line, an output more than
  one check shows (one node's ``ip -o addr show``, read by every pair check it is in).

Attribute values that are not a single word, and the summary tables outside the JSON, still
go through :func:`html.escape`.  ``--evidence-dir`` keeps every output whole and the JSON
record every command whole.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_fabric.report.htmltext import text
from pytest_fabric.report.summary import (
    format_expected,
    format_margin,
    format_quantity,
    numeric_value,
)
from pytest_fabric.report.witnesses import corroborations_html, tool_identity_html

__all__ = [
    "COLUMNS", "COMMAND_CHARS", "SORTABLE", "SharedTexts", "compact_cell", "compact_cells", "evidence_html", "row_cells",
    "sort_key", "text",
]

Check = Mapping[str, Any]

#: of one output, the tail a failed or errored check shows inline (a tool's summary is at its end)
OUTPUT_CHARS = 500
#: of one failed or errored check's outputs together; further outputs are named, not shown
CHECK_CHARS = 1_000
#: the same for a check that passed (or was skipped): its figure is in its row, its outputs matter less
PASSED_OUTPUT_CHARS = 160
PASSED_CHECK_CHARS = 320
#: an output this short is shown even past the check's budget: saying it is not shown takes as long
SMALL_OUTPUT_CHARS = 100
#: of an output many checks share, what its one copy below the tables shows
SHARED_OUTPUT_CHARS = 2_000
#: a command line longer than this (a probe's script, not a tool's flags) shows its start and links to it whole
COMMAND_CHARS = 80
#: the whole copy of a command line stops here (a probe's script); the record has it whole
SHARED_COMMAND_CHARS = 4_000
#: of an output's sha256, what a row shows: enough to find its file in --evidence-dir (``ls DIR/<prefix>*``)
DIGEST_CHARS = 12

_QUOTED_CLASS = re.compile(r'class="([\w-]+)"')
_EMPTY_LINKS = "<td class=col-links></td>"
_RECORD_CUT = re.compile(r"\[\.\.\. (\d+) characters cut \.\.\.\]\n")  # record.py's mark before a kept tail
#: the columns after pytest-html's Result and Test (whose test id already starts with the layer)
COLUMNS = ("measured", "expected", "margin", "outcome")
#: of those, the ones pytest-html sorts (it keeps a second copy of every sortable cell on every row)
SORTABLE = ("measured", "margin", "change")


def compact_cell(cell: str) -> str:
    """A cell with its one-word class unquoted (``<td class=col-result>``): 12 bytes less a cell in the file."""
    return _QUOTED_CLASS.sub(r"class=\1", cell)


def compact_cells(cells: list[str]) -> list[str]:
    """pytest-html's cells of a row, compacted; its Links cell left out when empty (we attach no links).

    A row may end early: the last column is then blank, as the empty cell was.
    """
    cells = [compact_cell(c) for c in cells]
    return cells[:-1] if cells and cells[-1] == _EMPTY_LINKS else cells


def _cell(column: str, content: str) -> str:
    # pytest-html names a sortable cell's copy after its col-<name> class and reads the text between
    # the tags: the cell must stay one <td ...>...</td> on one line.
    return f"<td class=col-{column}>{content}</td>"


def sort_key(v: float) -> str:
    """A fixed-width key whose string order is the numbers' order, for any finite number: 11 characters.

    pytest-html sorts a column by comparing its cells as strings.  Sign first (``0`` negative, ``1``
    zero, ``2`` positive), then the decimal exponent, then the mantissa; a negative number's
    exponent and mantissa are complemented, so -5 sorts before -0.5.
    """
    if v == 0:
        return "1"
    e = math.floor(math.log10(abs(v)))
    m = round(abs(v) / 10.0**e, 5)
    if m >= 10:  # 9.999996 rounds up a decade
        m, e = m / 10, e + 1
    e = max(-99, min(99, e))
    return f"2{e + 100:03d}{m:.5f}" if v > 0 else f"0{99 - e:03d}{10 - m:.5f}"


def _sortable(key: str | None, shown: str) -> str:
    """``shown`` after a hidden sort key: pytest-html sorts a column by comparing its cells as strings.

    A cell without a value sorts after every value (``~`` after the digits): an error or a skip has
    no figure to rank.
    """
    return f"<i>{key or '~'}</i>{text(shown)}"


def _outcome(c: Check) -> str:
    # Coloured by the row's own class (pytest-html puts the result on its <tbody>): no markup here.
    outcome = str(c.get("outcome"))
    return text(f"{outcome} ({c.get('waiver')})" if outcome == "waived" and c.get("waiver") else outcome)


def _change(c: Check) -> str:
    prev = c.get("previous")
    if not isinstance(prev, dict):
        return ""
    status = re.sub(r"\W", "", str(prev.get("status", "")).split(" ")[0])
    return f"<span class=fabric-chg-{status}>{text(prev.get('text') or prev.get('status'))}</span>"


def row_cells(c: Check | None, with_change: bool) -> list[str]:
    """The extra results-table cells of one test (blank for tests that are not conformance checks)."""
    columns = COLUMNS + (("change",) if with_change else ())
    if c is None:
        return [_cell(n, "") for n in columns]
    margin = c.get("margin")
    mkey = sort_key(margin) if isinstance(margin, (int, float)) and math.isfinite(margin) else None
    v = numeric_value(c.get("measured"))
    vkey = sort_key(v) if v is not None else None
    cells = [
        _cell("measured", _sortable(vkey, format_quantity(c.get("measured")))),
        _cell("expected", text(format_expected(c.get("expected")))),
        _cell("margin", _sortable(mkey, format_margin(margin) if mkey else "")),
        _cell("outcome", _outcome(c)),
    ]
    if with_change:
        cells.append(_cell("change", _change(c)))
    return cells


class SharedTexts:
    """Texts many rows would repeat, each written once below the tables; rows link to that copy.

    One per page (the HTML plugin keeps it across rows).  It also remembers which check showed
    an output inline first, so a later check with the same output links to one copy of it instead.
    """

    def __init__(self) -> None:
        self._shown_by: dict[str, str] = {}  # output sha256 -> the check that showed it inline
        self._texts: dict[str, tuple[int, str, str]] = {}  # key -> (number, title, body HTML)

    def shown_by(self, digest: str) -> str | None:
        """The check that showed this output inline, if one did."""
        return self._shown_by.get(digest)

    def showing(self, digest: str, here: str) -> None:
        """``here`` shows this output inline (the first to)."""
        self._shown_by.setdefault(digest, here)

    def link(self, key: str, title: str, body: str, label: str) -> str:
        """``<a href=#fabric-s3>label</a>`` to the one copy of ``body`` (HTML), written the first time ``key`` is."""
        number = self._texts.setdefault(key, (len(self._texts) + 1, title, body))[0]
        return f"<a href=#fabric-s{number}>{label}</a>"

    def section_html(self) -> str:
        """The copies, numbered as rows link to them: collapsed, a browser opens it at a link's target."""
        if not self._texts:
            return ""
        items = "".join(f'<div id="fabric-s{n}"><p><b>{n}</b> {title}</p>{body}</div>'
                        for n, title, body in sorted(self._texts.values()))
        return ('<div class="fabric-section fabric-evidence" id="fabric-shared"><details class="fabric-all">'
                f"<summary>{len(self._texts)} long command lines and outputs that many checks share, "
                "written once here (the results table links to them)</summary>" + items + "</details></div>")


def _tail(output: str, budget: int) -> str:
    """The last ``budget`` characters of an output as ``<pre>``, saying how much was cut before them."""
    if len(output) <= budget:
        return f"<pre>{text(output)}</pre>"
    # The record keeps an output's last 16 KiB, saying what it cut before them: that counts too.
    kept = _RECORD_CUT.match(output)
    before = int(kept.group(1)) - kept.end() if kept else 0
    cut = f"[{before + len(output) - budget} earlier characters cut; --evidence-dir keeps the whole output]"
    return f"<pre><span class=fabric-cut>{cut}</span>\n{text(output[-budget:])}</pre>"


def _command(command: str, shared: SharedTexts | None) -> str:
    """A command line as ``<code>``: a long one (a probe's script) as its start and a link to it whole."""
    if len(command) <= COMMAND_CHARS:
        return f"<code>{text(command)}</code>"
    start = f"<code>{text(command[:COMMAND_CHARS])}</code>"
    if shared is None:
        return f"{start} [... {len(command) - COMMAND_CHARS} more characters in the record]"
    whole = command[:SHARED_COMMAND_CHARS]
    more = f" [... {len(command) - len(whole)} more characters in the record]" if len(whole) < len(command) else ""
    body = f"<p><code>{html.escape(whole)}</code>{more}</p>"
    return f"{start} {shared.link(f'command{chr(0)}{command}', 'a command line', body, '[whole]')}"


@dataclass
class _Stream:
    """How a row gives one stream of a command: a clause of the command's line, or a block under it."""

    clause: str = ""  # a link to the one copy below the tables, or that it is not shown
    block: str = ""  # the tail of the output
    used: int = 0  # characters of the check's budget it took


def _stream(item: Mapping[str, Any], stream: str, here: str, budget: int, shared: SharedTexts | None) -> _Stream:
    """One stream of a command: its tail if the budget allows; a link to one copy of an output another
    check showed first; or, past the budget, that it is not shown (--evidence-dir has it)."""
    output = str(item.get(stream) or "")
    digest = str(item.get(f"{stream}_sha256") or "")
    label = f"{stream} {digest[:DIGEST_CHARS]}"
    first = shared.shown_by(digest) if shared is not None and digest else None
    if shared is not None and first is not None and first != here:
        title = (f"{html.escape(stream)} of <code>{html.escape(str(item.get('command') or '')[:COMMAND_CHARS])}</code>"
                 f" on {html.escape(str(item.get('node')))}, sha256 {html.escape(digest)}, first shown by "
                 f"{html.escape(first)}")
        return _Stream(clause=shared.link(digest, title, _tail(output, SHARED_OUTPUT_CHARS), label))
    if budget <= 0 and len(output) > SMALL_OUTPUT_CHARS:
        return _Stream(clause=f"{label} not shown")
    if shared is not None and digest:
        shared.showing(digest, here)
    return _Stream(block=f"<div>{label}{_tail(output, max(budget, SMALL_OUTPUT_CHARS))}</div>",
                   used=min(len(output), max(budget, 0)))


def _runs(items: list[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], int]]:
    """The commands with the same run on one node, ending and printing the same, folded: (first, times)."""
    runs: dict[tuple[object, ...], list[Any]] = {}
    for item in items:
        key = tuple(item.get(k) for k in ("node", "command", "exit_code", "stdout_sha256", "stderr_sha256"))
        runs.setdefault(key, [item, 0])[1] += 1
    return [(item, times) for item, times in runs.values()]


def _commands(c: Check, items: list[Mapping[str, Any]], shared: SharedTexts | None) -> str:
    """Every command a check ran, on which node, how it ended, and the tails of what it printed.

    A command that exited 0 and printed nothing new (its output is one another check showed, or
    none) is a clause of one line, per node, rather than a paragraph of its own: a pair check reads
    each end's addresses, link and NUMA node, and those outputs are shown once a page.
    """
    passed = c.get("outcome") in ("passed", "skipped")
    per_output, budget = (PASSED_OUTPUT_CHARS, PASSED_CHECK_CHARS) if passed else (OUTPUT_CHARS, CHECK_CHARS)
    here = f"{c.get('check')} {c.get('subject')}"
    shown: list[str] = []
    also: dict[str, list[str]] = {}  # node -> clauses
    unshown = False
    for item, times in _runs(items):
        streams = []
        for stream in ("stdout", "stderr"):
            if item.get(stream):
                streams.append(_stream(item, stream, here, min(per_output, budget), shared))
                budget -= streams[-1].used
        command = _command(str(item.get("command") or ""), shared) + (f" ({times} times)" if times > 1 else "")
        clauses = [s.clause for s in streams if s.clause]
        unshown = unshown or any(clause.endswith(" not shown") for clause in clauses)
        node = text(item.get("node"))
        if item.get("exit_code") == 0 and all(s.clause.startswith("<a ") for s in streams):
            also.setdefault(node, []).append(" ".join([command, *clauses]))
            continue
        shown.append(f"<p>on {node}: {command} exit {text(item.get('exit_code'))} in {text(item.get('duration_s'))} s"
                     + "".join(f"; {clause}" for clause in clauses) + "</p>" + "".join(s.block for s in streams))
    if also:
        shown.append("<p>Ran with exit 0, outputs written once below the tables: "
                     + "; ".join(f"on {node}: {', '.join(clauses)}" for node, clauses in also.items()) + "</p>")
    if unshown:
        shown.append(f"<p>Outputs not shown: past the {CHECK_CHARS if not passed else PASSED_CHECK_CHARS} characters "
                     "a check shows here; --evidence-dir keeps every output whole.</p>")
    if len(items) <= 3:
        return "".join(shown)
    nodes = ", ".join(sorted({str(i.get("node")) for i in items}))
    return f"<details><summary>{len(items)} commands on {text(nodes)}</summary>{''.join(shown)}</details>"


def _waiver(c: Check) -> str:
    # The expected value is the row's Expected cell; its profile key and source are said once per
    # check above the tables (page.expectations_table).  What waived a failure is this row's own.
    return f"<p>Waived: {text(c.get('waiver'))}</p>" if c.get("waiver") and c.get("outcome") == "waived" else ""


def _said(c: Check) -> str:
    """What a check's message says that its row does not: for a pass, how it was measured (its detail)."""
    message = str(c.get("message") or "")
    detail = str(c.get("detail") or "")
    if c.get("outcome") == "passed" and detail and detail in message:
        return detail  # "measured 37.72 ms (-62.3%), meets <= 100 ms" is the row's cells
    return message.removeprefix(f"{c.get('subject')}: ")  # the row names the subject


def evidence_html(c: Check, shared: SharedTexts | None = None, *, message_in_log: bool = False) -> str:
    """What a check found and how: its message (unless its log shows it), its waiver, every command
    with its exit code and the tail of its output.  Empty when there is nothing the row and its log
    do not already say (an error that ran no command).

    ``shared`` (one per page) writes long command lines and outputs more than one check shows
    once, below the tables; without it each row says everything itself.
    """
    message = str(c.get("message") or "")
    detail = str(c.get("detail") or "")
    parts = []
    if message and not message_in_log:
        parts.append("<p>" + "<br>".join(text(line) for line in _said(c).splitlines()) + "</p>")
    if detail and detail not in message:
        parts.append(f"<p>{text(detail)}</p>")
    parts.append(_waiver(c))
    parts += [corroborations_html(c), tool_identity_html(c)]
    items = list(c.get("evidence") or [])
    if items:
        parts.append(_commands(c, items, shared))
    elif not any(parts) and c.get("outcome") not in ("error", "skipped"):  # those say why in their message
        parts.append("<p>No command output recorded for this check.</p>")
    body = "".join(parts)
    return f"<div class=fabric-evidence>{body}</div>" if body else ""
