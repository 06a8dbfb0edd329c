"""The run's verdict: one pure function, read by the terminal line, the HTML banner, JUnit and the JSON record.

docs/report.md, "The verdict": ``accept`` only when every check the profile sets ran on every subject and
passed (waived checks count); ``reject`` when any check failed; ``incomplete`` when checks the
profile sets were deselected, errored, skipped (measured nothing), never reported or never
collected, and none failed (a skip of a check marked ``optional: true`` is listed, not counted);
``interrupted`` when the run was stopped (Ctrl-C, ``-x``/``--maxfail``, ``pytest.exit``); no
verdict at all (``None``) when nothing was measured.

It reads the records (what ran) and the :class:`Plan` (what collection found, selected or not),
so a check that never produced a record still counts against ACCEPT.  Pure: no pytest, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_fabric.record.check_record import PlannedCheck
from pytest_fabric.report.summary import outcome_counts

__all__ = ["NOT_RUN_REASONS", "Plan", "RunVerdict", "VERDICTS", "judge_run", "with_soak"]

VERDICTS = ("accept", "reject", "incomplete", "interrupted")

#: Why a check the profile sets did not give a result, in the order reports list them.  All but
#: ``optional`` make a run ``incomplete``: the provider being judged writes the inventory and
#: installs the nodes, so a check the profile sets that measured nothing (a tool or a label left
#: out) is never a pass.  ``optional`` (the profile marks the check ``optional: true``) is listed only.
NOT_RUN_REASONS = {
    "deselected": "deselected (-k, -m, --lf, --deselect)",
    "errored": "errored (could not measure)",
    "unreported": "selected but never reported (the run stopped first, or its worker died)",
    "not collected": "set by the profile, but no test of it was collected (test paths or files left it out)",
    "skipped": "skipped: the profile sets it but nothing was measured",
    "optional": "not measured, and it does not block (marked optional: true, or it cannot exist on this inventory)",
}
_BLOCKING = ("deselected", "errored", "unreported", "not collected", "skipped")

Check = Mapping[str, Any]


@dataclass(frozen=True)
class Plan:
    """What collection found: every conformance test, and whether it was selected to run.

    ``profile_checks`` is the profile's ``layer.check`` list; empty when unknown (then a check the
    profile sets but the suite never collected cannot be noticed).
    """

    selected: Mapping[str, PlannedCheck] = field(default_factory=dict)
    deselected: Mapping[str, PlannedCheck] = field(default_factory=dict)
    profile_checks: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON, as pytest-xdist carries it from a worker to the controller."""
        return {"selected": [p.to_dict() for p in self.selected.values()],
                "deselected": [p.to_dict() for p in self.deselected.values()],
                "profile_checks": list(self.profile_checks)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        def items(key: str) -> dict[str, PlannedCheck]:
            return {d["nodeid"]: PlannedCheck(**d) for d in data.get(key) or []}

        return cls(items("selected"), items("deselected"), tuple(data.get("profile_checks") or ()))

    def merged(self, other: Plan) -> Plan:
        """Both plans (each xdist worker collects the same tests; a test selected anywhere is selected)."""
        selected = {**self.selected, **other.selected}
        deselected = {k: v for k, v in {**self.deselected, **other.deselected}.items() if k not in selected}
        return Plan(selected, deselected, tuple(dict.fromkeys(self.profile_checks + other.profile_checks)))


@dataclass(frozen=True)
class RunVerdict:
    """The verdict, the run's status, the counts, and what did not run, per reason and per check."""

    verdict: str | None  # accept | reject | incomplete | interrupted; None: nothing was measured (or still running)
    status: str  # running | complete | interrupted
    counts: dict[str, int]
    #: reason (a key of NOT_RUN_REASONS) -> ``layer.check`` -> number of subjects
    not_run: dict[str, dict[str, int]]
    #: ``layer.check`` -> the first skip message, for the ``skipped`` entries
    skip_reasons: dict[str, str] = field(default_factory=dict)

    @property
    def word(self) -> str:
        """``ACCEPT``, ``REJECT``, ``INCOMPLETE``, ``INTERRUPTED`` or ``NO VERDICT``."""
        return self.verdict.upper() if self.verdict else "NO VERDICT"

    @property
    def css(self) -> str:
        """The HTML banner's class: the verdict, or ``none``."""
        return self.verdict or "none"

    def not_run_count(self, *reasons: str) -> int:
        """Subjects not run for these reasons (deselected, unreported and not collected when none are
        named: what the verdict line's "N not run" counts; a check never collected counts once)."""
        chosen = reasons or ("deselected", "unreported", "not collected")
        return sum(sum(self.not_run.get(r, {}).values()) for r in chosen)

    def to_json(self) -> dict[str, Any]:
        """``verdict``, ``status`` and ``not_run`` as the JSON record's ``run`` object holds them."""
        return {"verdict": self.verdict, "status": self.status,
                "not_run": {r: dict(sorted(v.items())) for r, v in self.not_run.items() if v}}


def _key(c: Check) -> str:
    return f"{c.get('layer')}.{c.get('check')}"


def judge_run(checks: Iterable[Check], plan: Plan | None = None, *, status: str = "complete") -> RunVerdict:
    """The run's verdict from its records and what collection planned (see the module docstring).

    ``status`` is ``running`` (no verdict yet), ``complete`` or ``interrupted``.  A record's check
    counts as set by the profile when its planned test says so or, without a plan, when the record
    carries an expectation.  Errors count whatever the check: a node that could not be measured is
    never silently passed.
    """
    plan = plan or Plan()
    checks = list(checks)
    counts = outcome_counts(checks)
    not_run: dict[str, dict[str, int]] = {r: {} for r in NOT_RUN_REASONS}
    skip_reasons: dict[str, str] = {}

    def add(reason: str, key: str) -> None:
        not_run[reason][key] = not_run[reason].get(key, 0) + 1

    reported = set()
    for c in checks:
        nodeid = str(c.get("nodeid"))
        reported.add(nodeid)
        planned = plan.selected.get(nodeid)
        sets = planned.profile_sets if planned is not None else bool(c.get("expected"))
        optional = planned.optional if planned is not None else bool((c.get("expected") or {}).get("optional"))
        outcome = c.get("outcome")
        if outcome == "error":
            add("errored", _key(c))
        elif outcome == "skipped" and sets:
            reason = "optional" if optional else "skipped"
            add(reason, _key(c))
            skip_reasons.setdefault(_key(c), str(c.get("message") or ""))
    for p in plan.deselected.values():
        if p.profile_sets:
            add("deselected", f"{p.layer}.{p.check}")
    for p in plan.selected.values():
        if p.profile_sets and p.nodeid not in reported:
            add("unreported", f"{p.layer}.{p.check}")
    if plan.profile_checks and (plan.selected or plan.deselected):
        collected = {p.profile_key for p in (*plan.selected.values(), *plan.deselected.values())}
        for key in plan.profile_checks:
            if key not in collected:
                add("not collected", key)

    measured = counts["passed"] + counts["failed"] + counts["waived"]
    verdict: str | None
    if status == "running":
        verdict = None
    elif status == "interrupted":
        verdict = "interrupted"
    elif counts["failed"]:
        verdict = "reject"
    elif not measured:
        verdict = None
    elif any(not_run[r] for r in _BLOCKING):
        verdict = "incomplete"
    else:
        verdict = "accept"
    return RunVerdict(verdict, status, counts, {r: v for r, v in not_run.items() if v}, skip_reasons)


def with_soak(verdict: RunVerdict, soak: str | None) -> RunVerdict:
    """The run's verdict joined with a ``--soak``'s judgement over time (``judge/soak.py``).

    The records hold each test's last cycle; a fault the soak found in an earlier cycle (a failure,
    a drift, a telemetry fault) makes the run ``reject`` whatever the last cycle said, interrupted
    or not (a fault found is a fault); a cycle that could not measure makes an ``accept``
    ``incomplete``. Otherwise the run's verdict stands.
    """
    if soak == "reject" and verdict.verdict != "reject":
        return replace(verdict, verdict="reject")
    if soak == "incomplete" and verdict.verdict == "accept":
        return replace(verdict, verdict="incomplete")
    return verdict
