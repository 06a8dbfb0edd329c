"""Verdict, counts, worst checks, per-node rows and display strings.  Pure: records in, data out.

Every function takes the check dicts of the record (``CheckRecord.to_dict()``
shape, see :mod:`pytest_fabric.record.check_record`), so the terminal summary, the HTML page
and the JSON record agree on one reading of the same data.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pytest_fabric.config.hostlist import HostlistError, fold
from pytest_fabric.config.units import QuantityError, parse_quantity
from pytest_fabric.judge.blame import Blame, blame
from pytest_fabric.judge.blame_inputs import figures_of
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.plan import builtin_checks, format_duration, phase_of

__all__ = [
    "LAYERS",
    "OUTCOMES",
    "NodeRow",
    "attributions",
    "blame_findings",
    "format_expected",
    "format_margin",
    "format_number",
    "format_quantity",
    "higher_is_better",
    "node_rows",
    "nodeset",
    "not_measured",
    "recorded_blame",
    "numeric_value",
    "outlier_text",
    "outcome_counts",
    "plan_lines",
    "plan_vs_actual",
    "seconds_between",
    "send_back",
    "cannot_tell",
    "culprit",
    "sort_problems_first",
    "tool_versions",
    "worst_per_layer",
]

LAYERS = ("software", "intra_node", "inter_node", "storage", "egress")
OUTCOMES = ("passed", "failed", "error", "waived", "skipped")
# Failures first, then errors: a failure is a measured shortfall (the SLA
# question), an error means the measurement itself is missing.
_OUTCOME_ORDER = {"failed": 0, "error": 1, "waived": 2, "skipped": 3, "passed": 4}

Check = Mapping[str, Any]


def outcome_counts(checks: Iterable[Check]) -> dict[str, int]:
    """Number of checks per outcome; every outcome is present, zero when absent."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for c in checks:
        outcome = str(c.get("outcome", "error"))
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


def nodeset(names: Iterable[str]) -> str:
    """Node names folded as Slurm and clush write them (``gpu[03,17]``), ready for ``srun --exclude``.

    A name a nodeset cannot hold (only a record not made from an inventory has one) is listed as
    it is, comma-separated, rather than folded into a string that would name other nodes.
    """
    listed = sorted(set(names))
    try:
        return fold(listed)
    except HostlistError:
        return ",".join(listed)


_NAMED_NODE = re.compile(r"^node (\S+?):")


def culprit(check: Check) -> str | None:
    """The node an error is about: the one the transport's error names (``extra["error_node"]``, or a
    message ``node gpu04: ...``), which may be another than the check's own (a peer's sshd stopped)."""
    if check.get("outcome") != "error":
        return None
    named = (check.get("extra") or {}).get("error_node")
    if not named:
        found = _NAMED_NODE.match(str(check.get("message") or ""))
        named = found.group(1) if found else None
    return str(named) if named else None


#: attribution verdicts that are a measured fault of the node itself (pytest_fabric.judge.blame)
NODE_FAULTS = ("node fault", "unstable")
#: the checks that state attribution's verdicts (a link fault or cannot tell fails them too)
ATTRIBUTION_CHECKS = ("attribution", "fabric_attribution")
#: attribution verdicts that blame nothing of the node ("ok": records before issue 29)
NOT_BLAMED = ("healthy", "fabric", "ok")


def blame_findings(checks: Iterable[Check]) -> dict[str, Any]:
    """What attribution found that is no node's to send back, apart: ``links`` (a cable or switch
    path: each ``{"series", "nodes", "message"}``), ``fabric`` (shortfalls with no node pattern),
    ``cannot_tell`` (each ``{"node", "message", "tell"}``: the run that would tell). Read from the
    ``fabric_attribution`` check's record; empty lists where it did not run."""
    for c in checks:
        found = (c.get("extra") or {}).get("fabric_attribution")
        if isinstance(found, dict) and "links" in found:
            out = {key: [x for x in found.get(key) or [] if isinstance(x, (dict, str))]
                   for key in ("links", "fabric", "cannot_tell")}
            loaded = [str(p) for p in found.get("under_load") or []]
            if loaded:
                out["fabric"].append(f"fails under load (short inside their round, good alone, short in it again): "
                                     f"{', '.join(loaded)}")
            return out
    return {"links": [], "fabric": [], "cannot_tell": []}


def _pair_evidence(checks: list[Check]) -> tuple[set[str], dict[str, set[str]], list[Check]]:
    """(nodes a check of their own blames, node -> peers of its failed pairs, failed pairs naming no node).

    Only measured shortfalls (failed checks, attribution's node faults) are evidence: an error is a
    measurement that is missing, and its node is listed apart (:func:`not_measured`)."""
    faulty: set[str] = set()
    peers: dict[str, set[str]] = {}
    unnamed: list[Check] = []
    judged = attributions(checks)
    for c in checks:
        nodes = [str(n) for n in c.get("nodes") or []]
        if c.get("outcome") != "failed" or c.get("check") in ATTRIBUTION_CHECKS:
            continue  # attribution's verdict, not its outcome, says whether its node is at fault
        if len(nodes) == 1:
            faulty.add(nodes[0])
        elif len(nodes) == 2:
            a, b = nodes
            peers.setdefault(a, set()).add(b)
            peers.setdefault(b, set()).add(a)
            unnamed.append(c)
    faulty.update(n for n, v in judged.items() if v.get("verdict") in NODE_FAULTS)
    if not judged:  # no attribution in the run: the same model on the pairs' recorded figures (no retests)
        found = recorded_blame(checks)
        faulty.update(found.send_back if found is not None else ())
    return faulty, peers, unnamed


def recorded_blame(checks: Iterable[Check]) -> Blame | None:
    """judge/blame.py on the pair checks' figures as recorded (each pair's value, its rails, its floor),
    for a run without the attribution check (``-k tcp_throughput``, a profile without it): the one
    model, without the retests attribution would run. None when no pair check has a figure."""
    figures = []
    fed = builtin_checks().blame_inputs()  # how each built-in pair check declares its figures
    for c in checks:
        check, names = str(c.get("check")), [str(n) for n in c.get("nodes") or []]
        value = c.get("measured") or {}
        if check not in fed or len(names) != 2 or c.get("outcome") not in ("passed", "failed") or not value.get("unit"):
            continue
        expected = c.get("expected") or {}
        try:
            measured = parse_quantity(f"{value.get('value')} {value.get('unit')}")
            floors = [parse_quantity(str(expected.get("as_written") or f"{expected.get('value')} {expected.get('unit')}"))
                      ] if expected.get("op") == ">=" else []
        except (QuantityError, ValueError):
            continue
        figures += figures_of(check, (names[0], names[1]), Measurement(value=measured, extra=dict(c.get("extra") or {})),
                              floors, fed[check])
    return blame(sorted({n for f in figures for n in f.nodes}), figures) if figures else None


def not_measured(checks: Iterable[Check]) -> dict[str, str]:
    """The nodes that could not be reached or measured, each with the first reason (and its fix),
    never among the nodes to send back: an error is a measurement that is missing, not a fault
    measured. A node an error names (a peer's sshd stopped) is that node; a node's own check that
    errored is its own; an error of a pair naming neither end is no node's."""
    checks = list(checks)
    blamed = set(send_back(checks))
    out: dict[str, str] = {}
    for c in checks:
        if c.get("outcome") != "error":
            continue
        nodes = [str(n) for n in c.get("nodes") or []]
        named = culprit(c) or (nodes[0] if len(nodes) == 1 else None)
        if named is None or named in blamed or named in out:
            continue
        message = str(c.get("message") or "").strip().splitlines()
        reason = f"{c.get('check')} {c.get('subject')}: {message[0] if message else 'error'}"
        fix = str((c.get("extra") or {}).get("fix") or "").strip()
        out[named] = f"{reason}; fix: {fix}" if fix else reason
    return dict(sorted(out.items()))


def send_back(checks: Iterable[Check]) -> list[str]:
    """The nodes to send back: those a measured fault is about, sorted.

    Evidence about a node is a failed check of that node (a GPU, a port, a mount, the node itself)
    or attribution's ``node fault`` or ``unstable`` (:mod:`pytest_fabric.judge.blame`, which every
    pair check feeds: its ``send_back``). A failed pair names neither end by itself: attribution
    decides; in a run without it (``-k tcp_throughput``, a profile without ``attribution``) the same
    model judges the recorded figures (:func:`recorded_blame`), and a pair whose ends it cannot tell
    apart (``-k node03``: no baseline without node03) is listed by :func:`cannot_tell`. A node that could not be reached or measured (an errored check, whichever node
    its error names) is never sent back: :func:`not_measured` lists it. Checks of the whole cluster
    name no node.
    """
    faulty, _, _ = _pair_evidence(list(checks))
    return sorted(faulty)


def cannot_tell(checks: Iterable[Check]) -> list[str]:
    """Failed pairs whose fault no evidence puts on either end (``gpu01<->gpu02``): with this
    selection (one pair of a node, ``-k``, ``--lf``, no attribution, attribution that errored) it
    cannot be told. Attribution's own findings that name no node are :func:`blame_findings`."""
    checks = list(checks)
    blamed = set(send_back(checks))
    _, _, unnamed = _pair_evidence(checks)
    out = []
    for c in unnamed:
        if not blamed & {str(n) for n in c.get("nodes") or []}:
            subject = str(c.get("subject"))
            if subject not in out:
                out.append(subject)
    return out


def numeric_value(q: Mapping[str, Any] | None) -> float | None:
    """The number in a ``{"value", "unit"}`` quantity, or None for text, booleans and absent values."""
    if not q:
        return None
    v = q.get("value")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if not math.isfinite(v):
        return None
    return float(v)


def higher_is_better(check: Check) -> bool:
    """A ceiling (``max:``, op ``<=``) is met by smaller values: latency, error counts, DNS time."""
    expected = check.get("expected") or {}
    return expected.get("op") != "<="


def sort_problems_first(checks: Iterable[Check]) -> list[Check]:
    """Failed (largest shortfall first), errored, waived, skipped, passed; stable by layer and name."""

    def key(c: Check) -> tuple[int, float, str, str, str]:
        margin = c.get("margin")
        m = margin if isinstance(margin, (int, float)) and math.isfinite(margin) else 0.0
        layer_pos = str(LAYERS.index(c["layer"])) if c.get("layer") in LAYERS else str(c.get("layer"))
        return (_OUTCOME_ORDER.get(str(c.get("outcome")), 5), m, layer_pos, str(c.get("check")), str(c.get("subject")))

    return sorted(checks, key=key)


def worst_per_layer(checks: Iterable[Check], limit: int = 5) -> dict[str, list[Check]]:
    """Per layer, its failed checks (largest negative margin first) then its errored ones, at most ``limit``."""
    out: dict[str, list[Check]] = {}
    for c in sort_problems_first(checks):
        if c.get("outcome") not in ("failed", "error"):
            continue
        rows = out.setdefault(str(c.get("layer")), [])
        if len(rows) < limit:
            rows.append(c)
    # Layer order as the design lists them, unknown layers after.
    return dict(sorted(out.items(), key=lambda kv: LAYERS.index(kv[0]) if kv[0] in LAYERS else len(LAYERS)))


def attributions(checks: Iterable[Check]) -> dict[str, dict[str, Any]]:
    """Per node, the attribution verdict the checks recorded (``extra["attribution"]``).

    The strongest verdict a check recorded wins (a node fault over unstable over a link fault
    over cannot tell): the one a provider has to act on.
    """
    rank = {"node fault": 0, "unstable": 1, "link fault": 2, "cannot tell": 3, "fabric": 4, "healthy": 5, "ok": 5}
    out: dict[str, dict[str, Any]] = {}
    for c in checks:
        raw = (c.get("extra") or {}).get("attribution")
        items = raw if isinstance(raw, list) else [raw] if isinstance(raw, dict) else []
        for a in items:
            if not isinstance(a, dict) or not a.get("node"):
                continue
            node = str(a["node"])
            old = out.get(node)
            if old is None or rank.get(str(a.get("verdict")), 3) < rank.get(str(old.get("verdict")), 3):
                out[node] = dict(a)
    return out


@dataclass
class NodeRow:
    """One node's line in the per-node table."""

    node: str
    labels: dict[str, str] = field(default_factory=dict)
    checks: int = 0
    failed: list[Check] = field(default_factory=list)
    errored: list[Check] = field(default_factory=list)
    waived: int = 0
    attribution: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """No failed or errored check involves this node, and no attribution blames it."""
        blamed = bool(self.attribution) and (self.attribution or {}).get("verdict") not in NOT_BLAMED
        return not self.failed and not self.errored and not blamed


def node_rows(
    checks: Iterable[Check], nodes: Sequence[str] = (), labels: Mapping[str, Mapping[str, str]] | None = None
) -> list[NodeRow]:
    """One row per node (inventory order, then any node only the records name), problems counted per node."""
    labels = labels or {}
    rows: dict[str, NodeRow] = {n: NodeRow(n, dict(labels.get(n, {}))) for n in nodes}
    checks = list(checks)
    for c in checks:
        for n in c.get("nodes") or []:
            row = rows.setdefault(n, NodeRow(n, dict(labels.get(n, {}))))
            row.checks += 1
            outcome = c.get("outcome")
            if outcome == "failed":
                row.failed.append(c)
            elif outcome == "error":
                row.errored.append(c)
            elif outcome == "waived":
                row.waived += 1
    for node, a in attributions(checks).items():
        rows.setdefault(node, NodeRow(node, dict(labels.get(node, {})))).attribution = a
    return list(rows.values())


def tool_versions(checks: Iterable[Check]) -> dict[str, list[str]]:
    """Tool name -> the distinct versions the nodes reported (more than one is itself a finding)."""
    seen: dict[str, set[str]] = {}
    for c in checks:
        versions = (c.get("extra") or {}).get("tool_versions") or {}
        if isinstance(versions, dict):
            for tool, version in versions.items():
                if version is not None:
                    seen.setdefault(str(tool), set()).add(str(version))
    return {tool: sorted(v) for tool, v in sorted(seen.items())}


def format_number(v: float) -> str:
    """A measurement as people read it: ``191.2``, ``2.35``, ``0.0123``, ``50000``."""
    if isinstance(v, int) or float(v).is_integer():
        return str(int(v))
    a = abs(v)
    if a >= 1:
        text = f"{v:.1f}" if a >= 100 else f"{v:.2f}"
        return text.rstrip("0").rstrip(".")  # 2.5 us as the profile wrote it, not 2.50
    return f"{v:.3g}"


def format_quantity(q: Mapping[str, Any] | None) -> str:
    """``191.2 Gb/s``; text and booleans as they are; empty when there is no value."""
    if not q or q.get("value") is None:
        return ""
    v = q["value"]
    text = format_number(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)
    unit = q.get("unit")
    return f"{text} {unit}" if unit else text


def format_expected(e: Mapping[str, Any] | None) -> str:
    """``>= 180 Gb/s``, with the profile's own wording when it differs (``>= 180 Gb/s (90% line)``)."""
    if not e:
        return ""
    base = format_quantity(e)
    op = e.get("op") or ""
    text = f"{op} {base}".strip()
    written = e.get("as_written")
    if written and str(written).replace(" ", "") not in text.replace(" ", ""):
        text += f" ({written})"
    return text


def outlier_text(c: Check) -> str:
    """How a peer-relative check says its finding (``12 % below the median of 15 pairs; limit 7 %``), or empty.

    Its measured value is a share of the median and its margin a change of that share: as numbers
    beside a limit they read as ``94.24 % <= 7 % (+1246.3%)``; the sentence says what they mean.
    """
    outlier = (c.get("extra") or {}).get("outlier")
    return str(outlier.get("text") or "") if isinstance(outlier, dict) else ""


def format_margin(margin: float | None) -> str:
    """``-12.4%`` from ``-0.124``; empty when the check has no margin."""
    if margin is None or not isinstance(margin, (int, float)) or not math.isfinite(margin):
        return ""
    return f"{margin * 100:+.1f}%"


#: the row of plan_vs_actual for what no check's tests hold: collection, connections, the reports
OUTSIDE_CHECKS = "outside the planned checks (connections, collection, skipped tests, reports)"


def seconds_between(started: str | None, finished: str | None) -> float | None:
    """Seconds from one ISO time to another (the run's ``started`` and ``finished``); None if either is unknown."""
    try:
        return (datetime.fromisoformat(str(finished)) - datetime.fromisoformat(str(started))).total_seconds()
    except ValueError:
        return None


def plan_vs_actual(plan: Mapping[str, Any] | None, checks: Iterable[Check], took_s: float | None) -> dict[str, Any] | None:
    """The plan (:meth:`pytest_fabric.run.plan.RunPlan.to_json`) with what the run took beside it.

    ``took_s``: the run's wall time. Each phase took what its tests took (setup, call and
    teardown: a wave or a round is measured in its first test's setup); the connections, and
    whatever else no planned check's tests hold, are the row :data:`OUTSIDE_CHECKS`: the wall time
    less the phases, so the rows add up to the run. Times are the controller's: under pytest-xdist
    the workers' tests overlap and a phase can show more than the wall time it spanned.
    """
    if not plan:
        return None
    spent: dict[str, float] = defaultdict(float)
    # the phase the plan put each check in (an extension's check's, from the run's registry), else its declaration's
    planned_in = {check: p["phase"] for p in plan.get("phases", []) for check in p.get("checks", [])}
    for c in checks:
        phase = planned_in.get(str(c.get("check"))) or phase_of(str(c.get("layer")), str(c.get("check")))
        spent[phase] += float(c.get("duration_s") or 0.0)
    phases = []
    for phase in plan.get("phases", []):
        phases.append({**phase, "took_s": round(spent.pop(phase["phase"], 0.0), 1)})
    # what is left in ``spent``: phases the plan holds nothing of (the skipped tests of checks the
    # profile does not set): outside the planned checks, with the connections and collection
    in_checks = sum(p["took_s"] for p in phases)
    outside = max(took_s - in_checks, 0.0) if took_s is not None else None
    planned_outside = float(plan.get("outside_s", plan.get("connect_s")) or 0.0)
    phases.append({"phase": OUTSIDE_CHECKS, "planned_s": planned_outside, "checks": [],
                   "took_s": round(outside, 1) if outside is not None else None})
    return {**plan, "took_s": round(took_s, 1) if took_s is not None else None, "phases": phases}


def plan_lines(timed: Mapping[str, Any] | None) -> list[str]:
    """``plan: 4.0 min, took 3.6 min (0.90 of the plan)`` and a line per phase
    (``inter-node pairs: planned 4.0 min, took 3.6 min``), for the terminal and the HTML report."""
    if not timed:
        return []

    def took(seconds: Any) -> str:
        return f"took {format_duration(float(seconds))}" if seconds is not None else "still running"

    planned, actual = float(timed.get("planned_s") or 0.0), timed.get("took_s")
    ratio = f" ({float(actual) / planned:.2f} of the plan)" if actual is not None and planned > 0 else ""
    lines = [f"plan vs actual: planned {format_duration(planned)}, {took(actual)}{ratio}"]
    for phase in timed.get("phases", []):
        if not phase.get("planned_s") and not phase.get("took_s"):
            continue
        lines.append(f"  {phase['phase']}: planned {format_duration(float(phase.get('planned_s') or 0.0))}, "
                     f"{took(phase.get('took_s'))}")
    return lines
