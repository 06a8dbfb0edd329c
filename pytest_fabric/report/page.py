"""HTML fragments of the conformance page.  Pure: run info and records in, escaped HTML strings out.

Everything from a record or the inventory (hostnames, commands, outputs,
messages, even numbers) passes through :func:`_e` (``html.escape``): a node
named ``<script>`` or a tool printing markup must show as text.  No scripts,
no external resources: the page reads offline and inside ``--self-contained-html``.
"""

from __future__ import annotations

import hashlib
import html
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_fabric.record.runinfo import RunInfo
from pytest_fabric.report.causes import Cause, group_by_cause
from pytest_fabric.report.causes import reason as cause_reason
from pytest_fabric.report.heatmap import MAX_NODES, matrix_heatmaps, pair_heatmaps
from pytest_fabric.report.run_verdict import NOT_RUN_REASONS, RunVerdict
from pytest_fabric.report.summary import (
    LAYERS,
    NOT_BLAMED,
    blame_findings,
    cannot_tell,
    format_expected,
    format_margin,
    format_quantity,
    node_rows,
    nodeset,
    not_measured,
    outcome_counts,
    outlier_text,
    plan_lines,
    send_back,
    sort_problems_first,
    tool_versions,
)

__all__ = [
    "STYLE", "cause_anchor", "expectations_table", "heatmaps_html", "layer_tables", "node_table", "not_run_table",
    "not_set", "run_table", "seal_html", "send_back_line", "verdict_banner",
]

Check = Mapping[str, Any]
PROBLEM_LIMIT = 25  # rows of failed/errored/waived checks shown per layer before "and N more"
FULL_TABLE_LIMIT = 100  # rows per layer in the "all checks" table (problems first)


def not_set(c: Check) -> bool:
    """A check the profile does not set: skipped with no expectation.  Listed only as a count."""
    return c.get("outcome") == "skipped" and not c.get("expected")

STYLE = """<style>
.fabric-verdict{font-size:40px;font-weight:bold;padding:10px 18px;margin:8px 0;border-radius:4px;color:#fff;display:inline-block}
.fabric-verdict.accept{background:#1b7a2f}.fabric-verdict.reject{background:#b00020}
.fabric-verdict.incomplete{background:#a15c00}.fabric-verdict.interrupted{background:#5b3a8c}.fabric-verdict.none{background:#555}
.fabric-send-back{font-size:16px;font-weight:bold;color:#000;margin:10px 0}
.fabric-verdict small{font-size:18px;font-weight:normal;margin-left:14px}
.fabric-status{color:#b00020;font-weight:bold;font-size:14px}
.fabric-section{color:#000;margin:14px 0}
.fabric-section h2{margin:18px 0 6px}
table.fabric-table{border-collapse:collapse;color:#000;font-size:12px;margin:4px 0}
table.fabric-table th,table.fabric-table td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
table.fabric-table th{background:#f0f0f0}
table.fabric-table td.num{text-align:right;font-variant-numeric:tabular-nums}
.fabric-o-failed,.fabric-o-error{color:#b00020;font-weight:bold}
.fabric-o-waived{color:#a15c00;font-weight:bold}.fabric-o-skipped{color:#777}.fabric-o-passed{color:#1b7a2f}
.fabric-chg-regressed,.fabric-chg-newly{color:#b00020}.fabric-chg-fixed,.fabric-chg-improved{color:#1b7a2f}
.fabric-note{color:#444;font-style:italic;max-width:900px}
.fabric-maps{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.fabric-evidence{color:#000;font-size:12px;margin:4px 0}
.fabric-evidence pre{background:#f6f6f6;border:1px solid #ddd;padding:4px;max-height:300px;overflow:auto;white-space:pre-wrap}
.fabric-evidence code{background:#f0f0f0;padding:1px 3px}
#results-table tbody.failed td.col-outcome,#results-table tbody.error td.col-outcome{color:#b00020;font-weight:bold}
#results-table tbody.xfailed td.col-outcome{color:#a15c00;font-weight:bold}
#results-table tbody.skipped td.col-outcome{color:#777}#results-table tbody.passed td.col-outcome{color:#1b7a2f}
#results-table td.col-measured,#results-table td.col-margin{white-space:nowrap}
#results-table td.col-measured>i,#results-table td.col-margin>i{display:none}
details.fabric-all>summary{cursor:pointer;color:#0645ad}
body{display:flex;flex-direction:column}
#environment-header,#environment{order:1}#environment{align-self:flex-start}
#results-table,body>footer{order:2}
.summary__data p.run-count{display:none}
.fabric-took{color:#000;font-size:14px;margin:2px 0 8px}
.fabric-evidence .fabric-cut{color:#777}
table.fabric-problems td:nth-child(n+3):nth-child(-n+5){white-space:nowrap}
</style>"""
# The verdict comes first: pytest-html puts its Environment box above the summary, so the page is a
# flex column and that box moves below the summary (CSS only; the page stays script-free).  Its
# "N tests took" line counts only passed and failed tests: the banner's own line replaces it.


def _e(x: object) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _outcome(c: Check) -> str:
    o = str(c.get("outcome"))
    text = f'<span class="fabric-o-{_e(o)}">{_e(o)}</span>'
    if o == "waived" and c.get("waiver"):
        text += f" ({_e(c.get('waiver'))})"
    return text


def _change(c: Check) -> str:
    prev = c.get("previous")
    if not isinstance(prev, dict):
        return ""
    status = str(prev.get("status", ""))
    return f'<span class="fabric-chg-{_e(status.split(" ")[0])}">{_e(prev.get("text") or status)}</span>'


def verdict_banner(verdict: RunVerdict, took: str | None = None) -> str:
    """The run's verdict in big type (the one the terminal, JUnit and JSON show), with the counts.

    ``took`` (``00:04:22``) adds the line that replaces pytest-html's "N tests took", counting every
    check the banner counts.
    """
    counts = verdict.counts
    small = f"{counts['failed']} failed, {counts['error']} errored, {counts['waived']} waived, " \
            f"{counts['passed']} passed, {counts['skipped']} skipped"
    if verdict.not_run_count():
        small += f", {verdict.not_run_count()} not run"
    out = f'<div class="fabric-verdict {_e(verdict.css)}" id="fabric-verdict">{_e(verdict.word)}<small>{_e(small)}</small></div>'
    if took:
        out += f'<p class="fabric-took" id="fabric-took">{sum(counts.values())} checks in {_e(took)}</p>'
    if verdict.status == "interrupted":
        out += '<p class="fabric-status">Run interrupted: it stopped before every check had run.</p>'
    elif verdict.verdict is None:
        out += '<p class="fabric-status">Nothing was measured: there is no verdict.</p>'
    elif verdict.verdict == "incomplete":
        out += ('<p class="fabric-status">Incomplete: checks the profile sets did not run or could not '
                "measure (listed below); none failed.</p>")
    return out


def not_run_table(verdict: RunVerdict, checks: Sequence[Check] = (), node_names: Sequence[str] = ()) -> str:
    """What did not run and why: per reason, each check of the profile with how many subjects.

    With ``checks``, an errored check's reason is its commonest cause of errors (``node_names``, the
    run's nodes, taken out of the messages as Checks per layer does).
    """
    errored: dict[str, list[Check]] = {}
    for c in checks:
        if c.get("outcome") == "error":
            errored.setdefault(f"{c.get('layer')}.{c.get('check')}", []).append(c)
    rows = []
    for reason, text in NOT_RUN_REASONS.items():
        for check, n in sorted((verdict.not_run.get(reason) or {}).items(), key=lambda kv: (-kv[1], kv[0])):
            why = verdict.skip_reasons.get(check, "") if reason in ("skipped", "optional") else ""
            if reason == "errored" and errored.get(check):
                causes = group_by_cause(errored[check], node_names)
                why = cause_reason(causes[0].message()) + (f" (+{len(causes) - 1} other causes)" if len(causes) > 1 else "")
            rows.append(f'<tr><td>{_e(text)}</td><td>{_e(check)}</td><td class="num">{n}</td><td>{_e(why)}</td></tr>')
    if not rows:
        return ""
    return ('<div class="fabric-section" id="fabric-not-run"><h2>Not run</h2>'
            '<p class="fabric-note">Checks the profile sets that gave no result; the verdict counts none of them.</p>'
            '<table class="fabric-table"><tr><th>Why</th><th>Check</th><th>Subjects</th><th>Reason given</th></tr>'
            + "".join(rows) + "</table></div>")


def send_back_line(checks: Sequence[Check], also: Sequence[str] = ()) -> str:
    """``nodes to send back: gpu[03,17]``: the nodes with a measured fault, a nodeset for ``srun --exclude``
    (``also``: nodes a ``--soak`` fault names); then the nodes not measured, apart, each with why."""
    nodes = nodeset([*send_back(checks), *also]) or "none"
    line = f'<p class="fabric-send-back" id="fabric-send-back">nodes to send back: {_e(nodes)}</p>'
    missing = not_measured(checks)
    if missing:
        line += (f'<p class="fabric-not-measured" id="fabric-not-measured">nodes not measured (not sent back): '
                 f'{_e(nodeset(missing))}</p><ul class="fabric-not-measured">'
                 + "".join(f"<li>{_e(node)}: {_e(reason)}</li>" for node, reason in missing.items()) + "</ul>")
    found = blame_findings(checks)
    classes = (
        ("links", "link faults (the cable or switch path between two good nodes; no node sent back)",
         lambda x: f"{'<->'.join(map(str, x.get('nodes') or []))} ({x.get('series')}): {x.get('message')}"),
        ("fabric", "fabric findings (short with no node pattern; no node sent back)", str),
        ("cannot_tell", "cannot tell node from link (not sent back)", lambda x: f"{x.get('node')}: {x.get('message')}; {x.get('tell')}"),
    )
    for key, title, show in classes:
        if found[key]:
            line += (f'<p class="fabric-blame-{key}">{_e(title)}:</p><ul class="fabric-blame-{key}">'
                     + "".join(f"<li>{_e(show(x))}</li>" for x in found[key]) + "</ul>")
    pairs = cannot_tell(checks)
    if pairs:
        line += ('<p class="fabric-cannot-tell">cannot tell with this selection which end is at fault: '
                 f'{_e(", ".join(pairs))} (one failed pair per node)</p>')
    return line


def expectations_table(checks: Sequence[Check]) -> str:
    """Each expectation the run judged checks by, once: the check, the expected value, the profile key
    as written and where the figure came from (``source:``), and how many subjects it judged.

    The rows of the results table do not repeat it: on 64 nodes one source was said 243 times.
    """
    groups: dict[tuple[str, ...], list[Check]] = {}
    for c in checks:
        e = c.get("expected")
        if not e or not_set(c):
            continue
        group = (f"{c.get('layer')}.{c.get('check')}", str(e.get("key") or ""), str(e.get("as_written") or ""),
                 str(e.get("source") or ""))
        groups.setdefault(group, []).append(c)
    if not groups:
        return ""
    body = []
    for (check, key, written, source), mine in groups.items():
        values = list(dict.fromkeys(format_expected(c.get("expected")) for c in mine))
        shown = ", ".join(values[:3]) + (f" (+{len(values) - 3} more)" if len(values) > 3 else "")
        body.append(f"<tr><td>{_e(check)}</td><td>{_e(shown)}</td><td><code>{_e(key)}</code>: {_e(written)}</td>"
                    f"<td>{_e(source or 'not given')}</td><td class=\"num\">{len(mine)}</td></tr>")
    return ('<details class="fabric-all fabric-section" id="fabric-expected"><summary>Expected values: '
            f"{len(groups)}, with where each came from</summary>"
            '<table class="fabric-table"><tr><th>Check</th><th>Expected</th><th>Profile key: as written</th>'
            "<th>Source</th><th>Subjects</th></tr>" + "".join(body) + "</table></details>")


def run_table(info: RunInfo, checks: Sequence[Check], finished: str | None, compare_line: str | None,
              plan: Mapping[str, Any] | None = None) -> str:
    """Cluster, profile (name, sha256, extends), nodes, times, the versions of everything that ran,
    and the plan beside what the run took, overall and per phase (``plan``: the record's ``run.plan``)."""
    tools = tool_versions(checks)
    tool_text = ", ".join(
        f"{_e(t)} {' / '.join(_e(v) for v in vs)}" + (" (differs between nodes)" if len(vs) > 1 else "")
        for t, vs in tools.items()
    ) or "none reported"
    rows = [
        ("Cluster", f"{_e(info.cluster_name)} <small>({_e(info.inventory_path)})</small>"),
        ("Profile", f"<b>{_e(info.profile_name)}</b> <small>{_e(info.profile_path)}</small>"),
        ("Inventory sha256", f"<code>{_e(info.inventory_sha256)}</code>"),
        ("Profile sha256", f"<code>{_e(info.profile_sha256)}</code>"),
        ("Extends", _e(" -> ".join(info.profile_extends)) or "none"),
        ("Description", _e(info.profile_description)),
        ("Overrides", _e(", ".join(info.overrides)) or "none"),
        *([("Slurm job", f"{_e(info.slurm_job.get('job_id', ''))} <small>{_e(info.slurm_job.get('allocation', ''))}</small>")]
          if info.slurm_job else []),
        ("Nodes", f"{len(info.nodes)}: <code>{_e(nodeset(info.nodes))}</code>"),
        ("Started / finished", f"{_e(info.started)} / {_e(finished or info.finished or 'running')}"),
        ("pytest-fabric", _e(info.pytest_fabric_version)),
        ("Tools on the nodes", tool_text),
    ]
    timing = plan_lines(plan)
    if timing:
        head, *phases = timing
        items = "".join(f"<li>{_e(line.strip())}</li>" for line in phases)
        rows.append(("Plan", f"{_e(head.removeprefix('plan vs actual: '))}<ul>{items}</ul>"))
    if compare_line:
        rows.append(("Comparison", _e(compare_line)))
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="fabric-table" id="fabric-run">{body}</table>'


def _reason(c: Check) -> str:
    """Why a row is what it is, when its numbers do not say: an error's cause, a waiver, a finding without a value."""
    outcome = c.get("outcome")
    if outlier_text(c):
        return outlier_text(c)
    if outcome == "error" or (outcome in ("failed", "skipped") and not c.get("measured")):
        return cause_reason(str(c.get("message") or ""))
    if outcome == "waived":
        return str(c.get("waiver") or "")
    return ""


def seal_html(record: str | None, sha256: str | None, failure: str | None) -> str:
    """Whether a record seals the figures on this page: its name and sha256, and how to check them.

    ``record``: the --conformance-json file's name (None: none was asked for); ``sha256``: its seal as
    written; ``failure``: why the last write failed.
    """
    if record is None:
        return ('<p class="fabric-seal"><b>This page is not sealed: no conformance record was written '
                "(--conformance-json PATH)</b>; nothing but this file shows what the run measured.</p>")
    name = _e(record)
    if failure or not sha256:
        return (f'<p class="fabric-seal"><b>Record {name} was not written</b> ({_e(failure or "no write")}): '
                "nothing seals this page's figures.</p>")
    return (f'<p class="fabric-seal">Record {name}: sealed, sha256 <code>{_e(sha256)}</code>. '
            f"<code>python -m pytest_fabric.report.verify {name}</code> checks the record and its evidence "
            "against the seal (EDITED when they no longer match); the figures on this page are the record's.</p>")


def cause_anchor(layer: str, key: str) -> str:
    """The HTML id of a cause's row in Checks per layer, from its layer and key (:func:`.causes.cause_key`).

    Stable, so a row of the results table links to it before the causes are counted and sorted.
    """
    return "fabric-cause-" + hashlib.sha256(f"{layer}\0{key}".encode()).hexdigest()[:12]


def _check_rows(checks: Sequence[Check], with_change: bool, row_id: str | None = None) -> str:
    out = []
    for c in checks:
        change = f"<td>{_change(c)}</td>" if with_change else ""
        tr = f'<tr id="{_e(row_id)}">' if row_id else "<tr>"
        out.append(
            f"{tr}<td>{_e(c.get('check'))}</td><td>{_e(c.get('subject'))}</td>"
            f'<td class="num">{_e(format_quantity(c.get("measured")))}</td>'
            f"<td>{_e(format_expected(c.get('expected')))}</td>"
            f'<td class="num">{"" if outlier_text(c) else _e(format_margin(c.get("margin")))}</td><td>{_outcome(c)}</td>'
            f"<td>{_e(_reason(c))}</td>{change}</tr>"
        )
    return "".join(out)


def _subjects(cause: Cause) -> str:
    """Every errored check of a cause with its subjects, folded (``link_layer: node[01-64]``), collapsed.

    The results table lists the first error of a cause only: here is where each of the others is.
    """
    by_check: dict[str, list[str]] = {}
    for c in cause.checks:
        by_check.setdefault(str(c.get("check")), []).append(str(c.get("subject")))
    lines = "<br>".join(f"{_e(check)}: {_e(nodeset(subjects))}" for check, subjects in by_check.items())
    return f"<details><summary>{_e(cause.where())}</summary>{lines}</details>"


def _cause_rows(causes: Sequence[Cause], layer: str, with_change: bool) -> str:
    """One row per cause of errors: the checks, how many subjects on which nodes, the cause once."""
    out = []
    for cause in causes:
        anchor = cause_anchor(layer, cause.key)
        if len(cause.checks) == 1:
            out.append(_check_rows(cause.checks, with_change, anchor))
            continue
        expected = {format_expected(c.get("expected")) for c in cause.checks} - {""}
        out.append(
            f'<tr class="fabric-cause" id="{anchor}"><td>{_e(cause.what(limit=4))}</td><td>{_subjects(cause)}</td><td></td>'
            f"<td>{_e(expected.pop() if len(expected) == 1 else '')}</td><td></td>"
            f'<td><span class="fabric-o-error">error</span></td><td>{_e(cause_reason(cause.message()))}</td>'
            + ("<td></td>" if with_change else "") + "</tr>"
        )
    return "".join(out)


def layer_tables(checks: Sequence[Check], node_names: Sequence[str] = ()) -> str:
    """Per layer: counts, the failed checks (largest shortfall first), the errors one row per cause and the
    waived checks, then all checks on demand.  Every problem row says why in its Reason column.

    Every cause is a row (the results table lists only the first error of each and links here);
    ``node_names`` (the run's nodes) are taken out of the messages as the results table does.
    """
    with_change = any("previous" in c for c in checks)
    head = ("<tr><th>Check</th><th>Subject</th><th>Measured</th><th>Expected</th><th>Margin</th><th>Outcome</th>"
            "<th>Reason</th>" + ("<th>Change</th>" if with_change else "") + "</tr>")
    layers = [x for x in LAYERS if any(c.get("layer") == x for c in checks)]
    layers += sorted({str(c.get("layer")) for c in checks} - set(LAYERS))
    out = ['<div class="fabric-section" id="fabric-layers"><h2>Checks per layer</h2>']
    unset = sum(1 for c in checks if not_set(c))
    if unset:
        out.append(f'<p class="fabric-note">{unset} checks the profile does not set were skipped; they are '
                   "counted, but neither listed here nor in the results table.</p>")
    if any(c.get("outcome") == "error" for c in checks):
        out.append('<p class="fabric-note">Errors of one cause are one row: open its subjects for every check it '
                   "errored. The results table lists the first error of each cause and links here.</p>")
    unmeasured = sum(1 for c in checks if c.get("outcome") == "skipped" and not not_set(c) and not c.get("evidence"))
    if unmeasured:
        out.append(f'<p class="fabric-note">{unmeasured} checks the profile sets had nothing to measure here: '
                   "Not run counts them with the reason; the results table does not list them.</p>")
    for layer in layers:
        mine = sort_problems_first([c for c in checks if c.get("layer") == layer])
        counts = outcome_counts(mine)
        summary = ", ".join(f"{n} {o}" for o, n in counts.items() if n)
        out.append(f'<h3 id="fabric-layer-{_e(layer)}">{_e(layer)}: {_e(summary)}</h3>')
        mine = [c for c in mine if not not_set(c)]
        if not mine:
            continue
        failed = [c for c in mine if c.get("outcome") == "failed"]
        causes = group_by_cause((c for c in mine if c.get("outcome") == "error"), node_names)
        waived = [c for c in mine if c.get("outcome") == "waived"]
        if failed or causes or waived:
            out.append(f'<table class="fabric-table fabric-problems">{head}'
                       f"{_check_rows(failed[:PROBLEM_LIMIT], with_change)}"
                       f"{_cause_rows(causes, layer, with_change)}"
                       f"{_check_rows(waived[:PROBLEM_LIMIT], with_change)}</table>")
            left = [f"{n} more {what}" for n, what in (
                (len(failed) - PROBLEM_LIMIT, "failed checks"), (len(waived) - PROBLEM_LIMIT, "waived checks")) if n > 0]
            if left:
                out.append(f'<p class="fabric-note">and {_e(", ".join(left))}: see all checks below</p>')
        shown = mine[:FULL_TABLE_LIMIT]
        more = f" (the first {FULL_TABLE_LIMIT})" if len(mine) > len(shown) else ""
        out.append(f'<details class="fabric-all"><summary>all {len(mine)} {_e(layer)} checks{more}</summary>'
                   f'<table class="fabric-table">{head}{_check_rows(shown, with_change)}</table></details>')
    out.append("</div>")
    return "".join(out)


def node_table(info: RunInfo, checks: Sequence[Check]) -> str:
    """Per node: failed and errored checks, waived ones, and the attribution verdict; problem nodes first."""
    rows = node_rows(checks, info.nodes, info.node_labels)
    rows.sort(key=lambda r: (r.ok, -len(r.failed) - len(r.errored)))
    body = []
    for r in rows:
        a = r.attribution or {}
        verdict = a.get("verdict") or ("" if r.failed or r.errored else "ok")
        cls = ("fabric-o-failed" if verdict in ("node fault", "unstable", "link fault")
               else "fabric-o-passed" if verdict in NOT_BLAMED else "")
        attribution = f'<span class="{cls}">{_e(verdict)}</span>'
        if a.get("message"):
            attribution += f" {_e(a['message'])}"
        if a.get("bad_peers"):
            attribution += f" <small>(bad peers: {_e(', '.join(map(str, a['bad_peers'])))})</small>"
        cause = _problems(r.node, r.failed + r.errored, info.nodes)
        body.append(
            f"<tr><td>{_e(r.node)}</td><td>{_e(r.labels.get('leaf', ''))}</td><td class=\"num\">{r.checks}</td>"
            f'<td class="num">{len(r.failed)}</td><td class="num">{len(r.errored)}</td><td class="num">{r.waived}</td>'
            f"<td>{attribution}</td><td>{cause}</td></tr>"
        )
    return (
        '<div class="fabric-section" id="fabric-nodes"><h2>Nodes</h2>'
        '<table class="fabric-table"><tr><th>Node</th><th>Leaf</th><th>Checks</th><th>Failed</th><th>Errored</th>'
        "<th>Waived</th><th>Attribution</th><th>Problems</th></tr>" + "".join(body) + "</table></div>"
    )


def _problems(node: str, checks: Sequence[Check], node_names: Sequence[str] = (), limit: int = 3) -> str:
    """A node's own problems, one per cause with its reason, then pair problems as the peers' names."""
    own = [c for c in checks if len(c.get("nodes") or []) < 2]
    pairs = [c for c in checks if len(c.get("nodes") or []) >= 2]
    parts = []
    failed = [c for c in own if c.get("outcome") != "error"]
    for c in failed[:limit]:
        numbers = format_quantity(c.get("measured"))
        why = f"{numbers}, expected {format_expected(c.get('expected'))}" if numbers else cause_reason(str(c.get("message") or ""))
        parts.append(f"{_e(c.get('check'))} {_e(c.get('subject'))}: {_e(why)}")
    causes = group_by_cause((c for c in own if c.get("outcome") == "error"), node_names)
    for cause in causes[:limit]:
        parts.append(f"{_e(cause.what())}: {_e(cause_reason(cause.message()))}")
    by_check: dict[str, list[str]] = {}
    for c in pairs:
        peers = [n for n in c.get("nodes") or [] if n != node]
        by_check.setdefault(f"{c.get('check')} {c.get('outcome')}", []).extend(peers)
    for what, peers in by_check.items():
        parts.append(f"{_e(what)} with {_e(nodeset(peers))}")
    more = max(len(failed) - limit, 0) + max(len(causes) - limit, 0)
    return "<br>".join(parts) + (f"<br>+{more} more" if more > 0 else "")


def heatmaps_html(info: RunInfo, checks: Sequence[Check]) -> str:
    """Node x node maps per pair check, then the per-GPU-pair NVLink matrices (failing nodes first)."""
    out = ['<div class="fabric-section" id="fabric-heatmaps">']
    maps = pair_heatmaps(checks, info.nodes, info.node_labels, MAX_NODES)
    if maps:
        out.append("<h2>Node pairs</h2><p class=\"fabric-note\">Each cell is one node pair; hover for the value "
                   "and the expectation. Red outline and hatching: the pair failed; dark grey: it could not be measured.</p>")
    for check, grid, svg in maps:
        note = f'<p class="fabric-note">{_e(grid.note)}</p>' if grid.note else ""
        out.append(f'<div class="fabric-map" data-check="{_e(check)}">{note}{svg}</div>')
    matrices = matrix_heatmaps(checks)
    if matrices:
        failing = [m for m in matrices if any(cell.failed for cell in m[1].cells.values())]
        matrices.sort(key=lambda m: m not in failing)
        out.append(f"<h2>GPU pairs within each node</h2><details class=\"fabric-all\"{' open' if failing else ''}>"
                   f"<summary>{len(matrices)} nodes, {len(failing)} with failing GPU pairs</summary>"
                   '<div class="fabric-maps">')
        out.extend(f'<div class="fabric-map">{svg}</div>' for _, _, svg in matrices)
        out.append("</div></details>")
    out.append("</div>")
    return "".join(out) if maps or matrices else ""
