"""The end of the terminal output: worst checks per layer, the comparison, and the verdict line.

    ======================= fabric conformance: pod1 vs hdr200 =======================
    inter_node:
      FAILED tcp_throughput node01<->node03: 120.5 Gb/s, expected >= 180 Gb/s (-33.1%)
      ERROR  tcp_throughput node04 with node[01-03] (3 pairs): node04 unreachable: ...
             fix: check the node is up and sshd listens on 10.0.0.14:22
    waived: port_rate node03:mlx5_0/1 (cable swap scheduled)
    compared with previous.json: 1 regressed, 2 fixed, 60 unchanged
    REJECT: 3 failed, 1 errored (40 passed, 1 waived, 2 skipped; 47 checks on 4 nodes)
    nodes to send back: node[03-04]

A run that left checks of the profile out says so above the verdict line::

    not run (the verdict counts none of these):
      deselected (-k, -m, --lf, --deselect): inter_node.tcp_throughput (28), storage.sequential_read (8)
    INCOMPLETE: 0 failed, 0 errored, 36 not run (8 passed; 8 checks on 8 nodes)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pytest_fabric.record.runinfo import get_run_info
from pytest_fabric.report.causes import Cause, group_by_cause, one_cause
from pytest_fabric.report.collect import (
    final_verdict,
    get_checks,
    is_controller,
    soak_record,
    soak_send_back,
)
from pytest_fabric.report.compare import summary_line
from pytest_fabric.report.record_json import WRITER_KEY, timed_plan
from pytest_fabric.report.run_verdict import NOT_RUN_REASONS, RunVerdict
from pytest_fabric.report.safetext import safe_text, text_lines
from pytest_fabric.report.summary import (
    blame_findings,
    cannot_tell,
    format_expected,
    format_margin,
    format_quantity,
    nodeset,
    not_measured,
    outlier_text,
    plan_lines,
    send_back,
    worst_per_layer,
)

__all__ = [
    "blame_lines", "cannot_tell_line", "error_groups", "error_lines", "not_measured_lines", "not_run_lines", "problem_line", "send_back_line", "value_lines", "verdict_line",
]

WORST_PER_LAYER = 5
CHECKS_PER_REASON = 8  # checks named per reason; the JSON record's run.not_run has them all


def verdict_line(verdict: RunVerdict, node_count: int) -> str:
    """``ACCEPT: ...``, ``REJECT: 3 failed, 1 errored (...)``, ``INCOMPLETE: 0 failed, 0 errored, 28 not run (...)``."""
    counts = verdict.counts
    rest = ", ".join(f"{counts[o]} {o}" for o in ("passed", "waived", "skipped") if counts[o])
    head = f"{verdict.word}: {counts['failed']} failed, {counts['error']} errored"
    if verdict.not_run_count():
        head += f", {verdict.not_run_count()} not run"
    if verdict.verdict is None and verdict.status != "running":
        head += ", nothing measured"
    total = sum(counts.values())
    return f"{head} ({rest + '; ' if rest else ''}{total} checks on {node_count} nodes)"


def not_run_lines(verdict: RunVerdict) -> list[str]:
    """Per reason, the checks of the profile that gave no result, with how many subjects each."""
    lines = []
    for reason, text in NOT_RUN_REASONS.items():
        per_check = verdict.not_run.get(reason)
        if not per_check:
            continue
        ranked = sorted(per_check.items(), key=lambda kv: (-kv[1], kv[0]))
        shown = [f"{check} ({n})" for check, n in ranked[:CHECKS_PER_REASON]]
        if reason == "skipped":  # the skip message says what subject was missing
            shown = [f"{check} ({n}: {verdict.skip_reasons.get(check, '')})" for check, n in ranked[:CHECKS_PER_REASON]]
        more = f", +{len(ranked) - CHECKS_PER_REASON} more checks" if len(ranked) > CHECKS_PER_REASON else ""
        lines.append(f"  {text}: {', '.join(shown)}{more}")
    return (["not run (the verdict counts none of these):"] + lines) if lines else []


def not_measured_lines(checks: Sequence[Mapping[str, Any]]) -> list[str]:
    """``nodes not measured: node03`` and a line per node with why (and the fix): never sent back,
    as nothing was measured on them; none when every node was measured."""
    missing = not_measured(checks)
    if not missing:
        return []
    return [f"nodes not measured (not sent back): {nodeset(missing)}",
            *(f"  {node}: {safe_text(reason)}" for node, reason in missing.items())]


def send_back_line(checks: Sequence[Mapping[str, Any]], also: Sequence[str] = ()) -> str:
    """``nodes to send back: gpu[03,17]``, a nodeset to paste into ``srun --exclude`` (``none`` when none);
    ``also``: nodes a ``--soak`` fault names."""
    return f"nodes to send back: {nodeset([*send_back(checks), *also]) or 'none'}"


def blame_lines(checks: Sequence[Mapping[str, Any]]) -> list[str]:
    """Attribution's findings that send no node back, each class apart with its reasons: link faults
    (a cable or switch path), fabric shortfalls (no node pattern), and cannot tell (with the run that
    would tell)."""
    found = blame_findings(checks)
    lines: list[str] = []
    if found["links"]:
        lines.append("link faults (the cable or switch path between two good nodes; no node sent back):")
        lines += [f"  {'<->'.join(map(str, lf.get('nodes') or []))} ({lf.get('series')}): {safe_text(str(lf.get('message')))}"
                  for lf in found["links"] if isinstance(lf, Mapping)]
    if found["fabric"]:
        lines.append("fabric findings (short with no node pattern; no node sent back):")
        lines += [f"  {safe_text(str(text))}" for text in found["fabric"]]
    if found["cannot_tell"]:
        lines.append("cannot tell node from link (not sent back):")
        lines += [f"  {c.get('node')}: {safe_text(str(c.get('tell')))}" for c in found["cannot_tell"] if isinstance(c, Mapping)]
    return lines


def cannot_tell_line(checks: Sequence[Mapping[str, Any]]) -> str | None:
    """Failed pairs no evidence puts on either end, or None: said, never guessed into a node."""
    pairs = cannot_tell(checks)
    if not pairs:
        return None
    shown = ", ".join(pairs[:5]) + (f" and {len(pairs) - 5} more" if len(pairs) > 5 else "")
    return (f"cannot tell with this selection which end is at fault: {shown} (one failed pair per node; "
            "run the whole sweep, or attribution, to find the node)")


def problem_line(c: Mapping[str, Any]) -> str:
    """One failed or errored check: what, where, and the numbers or the cause."""
    what = f"{c.get('check')} {c.get('subject')}"
    if c.get("outcome") == "error":
        return f"ERROR  {what}: {c.get('message') or 'could not measure'}"
    said = outlier_text(c)
    if said:  # "12 % below the median of 15 pairs; limit 7 %", not "12 %, expected <= 7 % (+71.4%)"
        return f"FAILED {what}: {said}"
    measured, expected = format_quantity(c.get("measured")), format_expected(c.get("expected"))
    if (c.get("measured") or {}).get("value") == "absent":
        # Nothing was there to measure (cannot connect, no such port): the message says what was found.
        measured = ""
    said = str(c.get("message") or "").removeprefix(f"{c.get('subject')}: ")
    numbers = f"{measured}, expected {expected}" if measured and expected else said
    margin = format_margin(c.get("margin"))
    return f"FAILED {what}: {numbers}" + (f" ({margin})" if margin else "")


def error_groups(errors: Sequence[Mapping[str, Any]], node_names: Sequence[str] = ()) -> list[Cause]:
    """Errors of one cause together (:mod:`.causes`): one node down errs every pair it is in, one
    missing tool every check that needs it on every node that lacks it; the largest group first.
    ``node_names`` (the run's nodes) are taken out of the messages too, as the HTML tables do."""
    return group_by_cause(errors, node_names)


def error_lines(group: Cause | Sequence[Mapping[str, Any]]) -> list[str]:
    """One line for errors of one cause, node lists folded, then the message's further lines (the fix).

    Pairs of one check that share one node (a node down errs every pair it is in) read as
    ``ERROR  tcp_throughput node04 with node[01-03,05-08] (7 pairs): cause``; other groups as
    ``ERROR  link_layer, port_rate on gpu[01-64] (128 checks): node gpu[01-64]: ibstat: command not found``.
    """
    cause = group if isinstance(group, Cause) else one_cause(group)
    group = cause.checks
    if len(group) == 1:
        return text_lines(problem_line(group[0])) or [""]
    lines = text_lines(cause.message()) or ["could not measure"]
    node_sets = [{str(n) for n in c.get("nodes") or []} for c in group]
    shared = set.intersection(*node_sets)
    if len(cause.check_names) == 1 and cause.all_pairs and len(shared) == 1:
        node = shared.pop()
        peers = nodeset(set.union(*node_sets) - {node})
        lines[0] = f"ERROR  {cause.check_names[0]} {node} with {peers} ({len(group)} pairs): {lines[0]}"
    else:
        lines[0] = f"ERROR  {cause.what()} {cause.where()}: {lines[0]}"
    return lines


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("fabric").addoption(
        "--fabric-values",
        dest="fabric_values",
        action="store_true",
        default=False,
        help="also show what the passing checks measured, closest to their limit first (so does -rA or -rp)",
    )


def _shows_values(config: pytest.Config) -> bool:
    chars = str(config.getoption("reportchars", "") or "")
    return bool(config.getoption("fabric_values", False)) or "A" in chars or "p" in chars


def value_lines(checks: Sequence[Mapping[str, Any]]) -> list[str]:
    """The passing checks' figures: per check the closest margin and where, then every passing check.

    Acceptance is also about how much room what passed has: 28 pairs at +2 % of the floor are not
    28 pairs at +40 %.  Closest to the limit first; checks without a margin (counts, versions) after.
    """
    passed = [c for c in checks if c.get("outcome") == "passed" and c.get("measured")]
    if not passed:
        return []

    def margin(c: Mapping[str, Any]) -> float:
        m = c.get("margin")
        return float(m) if isinstance(m, (int, float)) else float("inf")

    lines = ["measured values of passing checks (closest to the limit first):"]
    by_check: dict[str, list[Mapping[str, Any]]] = {}
    for c in sorted(passed, key=lambda c: (margin(c), str(c.get("subject")))):
        by_check.setdefault(f"{c.get('layer')}.{c.get('check')}", []).append(c)
    for key, rows in by_check.items():
        closest = rows[0]
        room = format_margin(closest.get("margin"))
        lines.append(f"  {key}: {len(rows)} passed; closest {closest.get('subject')} "
                     f"{format_quantity(closest.get('measured'))}, expected {format_expected(closest.get('expected'))}"
                     + (f" ({room})" if room else ""))
        for c in rows:
            room = format_margin(c.get("margin"))
            lines.append(f"    {c.get('subject')}: {format_quantity(c.get('measured'))}" + (f" ({room})" if room else ""))
    return lines


class _EscapingWriter:
    """The terminal reporter's line writers with node text's control characters escaped (messages,
    subjects and values quote what nodes printed)."""

    def __init__(self, reporter: Any) -> None:
        self._reporter = reporter

    def write_sep(self, sep: str, title: str, **markup: bool) -> None:
        self._reporter.write_sep(sep, safe_text(title), **markup)

    def write_line(self, line: str, **markup: bool) -> None:
        self._reporter.write_line(safe_text(line), **markup)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    info = get_run_info(config)
    if info is None or not is_controller(config) or config.option.collectonly:
        return  # --collect-only meant to measure nothing: there is no verdict to give
    checks = get_checks(config)
    tr = _EscapingWriter(terminalreporter)
    tr.write_sep("=", f"fabric conformance: {info.cluster_name} vs {info.profile_name}")
    if not checks:
        tr.write_line("no conformance checks ran (deselected, or collection failed)", yellow=True)
    # A finding about the whole fabric (a shortfall of every pair, failure under load) explains the
    # pair failures below it: it comes first, and is never hidden behind the five worst pairs.
    cluster_wide = [c for c in checks if c.get("outcome") == "failed" and not c.get("nodes")]
    if cluster_wide:
        tr.write_line("cluster-wide findings (they explain the failures below):", red=True, bold=True)
        for finding in cluster_wide:
            said = text_lines(str(finding.get("message") or ""))
            tr.write_line(f"  FAILED {finding.get('check')}: {said[0]}" if said else "  " + problem_line(finding),
                          red=True)
    for layer, rows in worst_per_layer([c for c in checks if not any(c is w for w in cluster_wide)],
                                       len(checks)).items():
        failed = [c for c in rows if c.get("outcome") == "failed"]
        errors = error_groups([c for c in rows if c.get("outcome") == "error"], info.nodes)
        more = f" (worst {WORST_PER_LAYER} of {len(failed)} failed)" if len(failed) > WORST_PER_LAYER else ""
        tr.write_line(f"{layer}:{more}")
        for c in failed[:WORST_PER_LAYER]:
            tr.write_line("  " + problem_line(c), red=True)
        for group in errors[:WORST_PER_LAYER]:
            for n, text in enumerate(error_lines(group)):
                tr.write_line(("  " if n == 0 else "         ") + text, red=True)
        if len(errors) > WORST_PER_LAYER:
            tr.write_line(f"  ... and {len(errors) - WORST_PER_LAYER} more causes of errors", red=True)
    if _shows_values(config):
        for text in value_lines(checks):
            tr.write_line(text)
    for c in (c for c in checks if c.get("outcome") == "waived"):
        tr.write_line(f"waived: {c.get('check')} {c.get('subject')} ({c.get('waiver')})", yellow=True)
    for c in checks:  # what dead runs (a controller killed outright) left on the nodes, removed before measuring
        for text in (c.get("extra") or {}).get("leftovers_removed", ()):
            tr.write_line(f"cleaned up: {text}", yellow=True)
    line = summary_line(config, checks)
    if line:
        tr.write_line(line)
    for text in plan_lines(timed_plan(config, checks)):
        tr.write_line(text)
    json_path = config.getoption("conformance_json", None)
    if json_path:
        writer = config.stash.get(WRITER_KEY, None)
        if writer is not None and writer.failure is not None:  # said when it first failed: here only that it is not there
            tr.write_line(f"conformance record: NOT written to {writer.path}: {writer.failure}", red=True, bold=True)
        else:
            tr.write_line(f"conformance record: {json_path}")
    verdict = final_verdict(config)
    for n, text in enumerate(not_run_lines(verdict)):
        tr.write_line(text, yellow=True, bold=n == 0)
    accept = verdict.verdict == "accept"
    tr.write_line(verdict_line(verdict, len(info.nodes)), green=accept, red=not accept, bold=True)
    soaked = soak_send_back(soak_record(config))
    tr.write_line(send_back_line(checks, soaked), red=bool(send_back(checks) or soaked), bold=True)
    for n, text in enumerate(not_measured_lines(checks)):
        tr.write_line(text, yellow=True, bold=n == 0)
    for text in blame_lines(checks):
        tr.write_line(text, yellow=True, bold=not text.startswith(" "))
    undecided = cannot_tell_line(checks)
    if undecided:
        tr.write_line(undecided, yellow=True)
