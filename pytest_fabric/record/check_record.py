"""The per-check record: what the JSON record, JUnit properties and HTML report are built from.

The plugin builds one :class:`CheckRecord` per conformance test in
``pytest_runtest_makereport`` and attaches ``record.to_dict()`` to the test
report as ``report.fabric_check``.  pytest-xdist ships report attributes that
are plain JSON back to the controller, so every consumer (the JSON writer, the
HTML report, the terminal summary) reads the same dict whether or not the test
ran in another process.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from typing import Any

import pytest

from pytest_fabric.config.units import Dimension, Quantity
from pytest_fabric.judge.verdict import Verdict, display_unit
from pytest_fabric.transport.outputcap import MESSAGE_CHARS, cap_text
from pytest_fabric.transport.results import CommandResult

__all__ = [
    "CheckRecord", "EvidenceItem", "PLANNED_KEY", "PlannedCheck", "REPORT_ATTRIBUTE", "quantity_json",
    "evidence_from_results",
]

# Name of the attribute on pytest's TestReport carrying the record dict.
REPORT_ATTRIBUTE = "fabric_check"



@dataclass(frozen=True)
class PlannedCheck:
    """A conformance test as collection knows it, before it runs (or is deselected and never runs).

    The run's verdict needs it for what has no record: a check the profile sets that ``-k``, ``-m``,
    ``--lf`` or ``--deselect`` left out, or one the run stopped before.  ``profile_key`` is the
    profile's ``layer.check`` that judges it (``inter_node.outlier`` for ``tcp_throughput_outlier``);
    ``profile_sets`` says whether the profile sets that check at all, ``optional`` whether it marks
    it ``optional: true``.
    """

    nodeid: str
    layer: str
    check: str
    subject: str
    profile_key: str
    profile_sets: bool
    #: the profile marks the check ``optional: true``: not measuring it does not block ACCEPT
    optional: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# Where the plugin core puts an item's PlannedCheck at collection (item.stash).
PLANNED_KEY = pytest.StashKey[PlannedCheck]()

# Raw output kept inline per command: enough to read a tool's table, small
# enough that a 64-node report stays a page and not a dump.
INLINE_OUTPUT_LIMIT = 16_384


@dataclass(frozen=True)
class EvidenceItem:
    """One command a check ran: where, what, how it ended, and what it printed."""

    node: str
    command: str
    exit_code: int
    duration_s: float
    stdout: str
    stderr: str
    stdout_sha256: str
    stderr_sha256: str


def evidence_from_results(results: tuple[CommandResult, ...] | list[CommandResult]) -> list[EvidenceItem]:
    items = []
    for r in results:
        items.append(
            EvidenceItem(
                node=r.node,
                command=r.command,
                exit_code=r.exit_code,
                duration_s=round(r.duration_s, 3),
                stdout=_tail(r.stdout),
                stderr=_tail(r.stderr),
                stdout_sha256=hashlib.sha256(r.stdout.encode()).hexdigest(),
                stderr_sha256=hashlib.sha256(r.stderr.encode()).hexdigest(),
            )
        )
    return items


def _tail(text: str) -> str:
    if len(text) <= INLINE_OUTPUT_LIMIT:
        return text
    return f"[... {len(text) - INLINE_OUTPUT_LIMIT} characters cut ...]\n" + text[-INLINE_OUTPUT_LIMIT:]


def quantity_json(value: Any, unit: str | None) -> dict[str, Any] | None:
    """``{"value": 191.3, "unit": "Gb/s"}`` for a quantity; plain values keep ``unit: null``."""
    if value is None:
        return None
    if isinstance(value, Quantity):
        if value.dimension in (Dimension.COUNT,):
            return {"value": _num(value.value), "unit": None}
        if value.dimension in (Dimension.LINE_SHARE, Dimension.PERCENT):
            return {"value": _num(value.value * 100), "unit": "% line" if value.is_line_share else "%"}
        use = unit or value.display().split(" ", 1)[-1]
        return {"value": _num(value.to(use)), "unit": use}
    if isinstance(value, bool):
        return {"value": value, "unit": None}
    if isinstance(value, (int, float)):
        return {"value": value, "unit": None}
    return {"value": cap_text(str(value), MESSAGE_CHARS), "unit": None}  # text read from a node: any size


def _num(value: Decimal) -> float | int:
    if value == value.to_integral_value():
        return int(value)
    return round(float(value), 6)


@dataclass
class CheckRecord:
    """One check on one subject, as the record and the reports show it."""

    nodeid: str
    layer: str
    check: str
    subject: str
    outcome: str  # passed | failed | skipped | error | waived
    message: str = ""
    measured: dict[str, Any] | None = None
    expected: dict[str, Any] | None = None  # {"op", "value", "unit", "key", "source", "as_written"}
    margin: float | None = None  # signed fraction: -0.124 = 12.4 % below a floor
    nodes: list[str] = field(default_factory=list)
    waiver: str | None = None
    detail: str = ""
    evidence: list[EvidenceItem] = field(default_factory=list)
    started: str | None = None
    finished: str | None = None
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)  # check-specific data, e.g. per-GPU-pair matrices

    @classmethod
    def from_verdict(cls, *, nodeid: str, subject: str, nodes: list[str], verdict: Verdict) -> CheckRecord:
        e = verdict.expectation
        unit = display_unit(e)
        expected = quantity_json(verdict.expected_value, unit) or {"value": None, "unit": None}
        expected.update({"op": e.op.value, "key": e.key, "source": e.source, "as_written": str(e.value)})
        return cls(
            nodeid=nodeid,
            layer=e.layer,
            check=e.check,
            subject=subject,
            outcome="passed" if verdict.passed else "failed",
            message=verdict.message,
            measured=quantity_json(verdict.measured.value, unit),
            expected=expected,
            margin=float(verdict.margin) if verdict.margin is not None else None,
            nodes=nodes,
            waiver=e.waiver,
            detail=cap_text(verdict.measured.detail, MESSAGE_CHARS),
            evidence=evidence_from_results(verdict.measured.evidence),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
