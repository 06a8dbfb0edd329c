"""Measurement + Expectation -> Verdict.  Pure: no SSH, no pytest.

The rule follows the best acceptance tools: a value meets its floor (``min``) or
ceiling (``max``); a floor written as a share of line rate (``90% line``) is
resolved against the rate the port actually reports, and the message says both
numbers.  The margin is how far the measurement sits from the expectation,
as a signed fraction: ``-0.124`` means 12.4 % short of a floor.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pytest_fabric.config.units import Dimension, Quantity
from pytest_fabric.transport.outputcap import MESSAGE_CHARS, cap_text
from pytest_fabric.transport.results import CommandResult

__all__ = ["Op", "Expectation", "Measurement", "Verdict", "judge", "display_unit"]


class Op(str, enum.Enum):
    MIN = ">="
    MAX = "<="
    EQUAL = "=="
    CONTAINS = "contains"


@dataclass(frozen=True)
class Expectation:
    """One expected value from the profile, with where it came from."""

    layer: str
    check: str
    op: Op
    value: Quantity | str | int | bool
    key: str  # the profile path, e.g. "inter_node.tcp_throughput.min"
    profile: str = ""
    source: str | None = None
    waiver: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.op.value} {self.value}"


@dataclass(frozen=True)
class Measurement:
    """What a probe measured, how, and the commands that prove it."""

    value: Quantity | str | int | bool
    detail: str = ""  # e.g. "median of 3 runs: 9.1, 9.4, 9.3 Gb/s"
    line_rate: Quantity | None = None  # the port rate the link reports, for '% line' floors
    evidence: tuple[CommandResult, ...] = ()
    samples: tuple[Quantity, ...] = ()
    #: a value per named bound when one measurement answers several (rdma_latency: max and p99)
    bounds: dict[str, Quantity | str | int | bool] = field(default_factory=dict)
    #: set when the subject the profile expects is not there (a mount not mounted,
    #: a name that does not resolve), or when the tool reported a fault no bound
    #: expresses (NCCL returned wrong results): the check fails with this reason
    missing: str | None = None
    #: check-specific data for reports (tool versions, per-stream figures, matrices)
    extra: dict[str, Any] = field(default_factory=dict)
    #: (subject, measurement) of each GPU or port when one test judges a whole node's
    #: (:meth:`of_parts`): each is judged on its own
    parts: tuple[tuple[str, Measurement], ...] = ()

    @classmethod
    def of_parts(cls, parts: Sequence[tuple[str, Measurement]]) -> Measurement:
        """One test's measurement of several subjects (a node's GPUs), each judged on its own."""
        if not parts:
            raise ValueError("a measurement of parts needs at least one part")
        evidence = {id(e): e for _, m in parts for e in m.evidence}  # the node's ibstat, once
        return cls(value=parts[0][1].value, detail=f"{len(parts)} judged: {', '.join(s for s, _ in parts)}",
                   evidence=tuple(evidence.values()), parts=tuple(parts))

    @classmethod
    def absent(cls, reason: str, evidence: tuple[CommandResult, ...] = ()) -> Measurement:
        """The expected subject is not there; judging this fails the check with ``reason``."""
        return cls(value="absent", missing=reason, evidence=evidence)


@dataclass(frozen=True)
class Verdict:
    """The outcome of comparing one measurement with one expectation."""

    passed: bool
    measured: Measurement
    expectation: Expectation
    expected_value: Quantity | str | int | bool  # after resolving '% line'
    margin: Decimal | None
    message: str


def display_unit(expectation: Expectation, measured: Any = None) -> str | None:
    """The unit a check is reported in: the one the profile's author wrote, when they wrote one."""
    value = expectation.value
    if isinstance(value, Quantity):
        if value.dimension is Dimension.LINE_SHARE:
            return "Gb/s"
        text = value.text.strip()
        unit = text.lstrip("+-0123456789.eE ").strip()
        if unit and unit not in ("%",):
            try:
                value.to(unit)
                return unit
            except Exception:  # the text was a bare number or an odd spelling
                pass
        return {
            Dimension.BANDWIDTH: "Gb/s",
            Dimension.SIZE: "GiB",
            Dimension.TIME: "us",
            Dimension.COUNT: "",
        }.get(value.dimension)
    return None


def _format(value: Any, unit: str | None) -> str:
    if isinstance(value, Quantity):
        if unit and value.dimension not in (Dimension.COUNT, Dimension.LINE_SHARE, Dimension.PERCENT):
            return value.display(unit)
        return value.display()
    return str(value)


def judge(subject: str, measurement: Measurement, expectation: Expectation) -> Verdict:
    """Compare ``measurement`` with ``expectation`` for ``subject`` (``gpu01``, ``gpu01<->gpu02``)."""
    expected: Quantity | str | int | bool = expectation.value
    if measurement.missing is not None:
        message = f"{subject}: {measurement.missing}"
        return Verdict(False, measurement, expectation, expected, None, message)
    if isinstance(expected, Quantity) and expected.is_line_share:
        if measurement.line_rate is None:
            raise ValueError(
                f"{expectation.key} is '{expected}' but the probe reported no line rate for {subject}; "
                "write an absolute value (e.g. '180 Gb/s') in the profile"
            )
        expected = expected.of(measurement.line_rate)

    unit = display_unit(expectation)
    got = measurement.bounds.get(expectation.key.rsplit(".", 1)[-1], measurement.value)
    margin: Decimal | None = None
    if expectation.op in (Op.MIN, Op.MAX):
        if not isinstance(got, Quantity) or not isinstance(expected, Quantity):
            raise TypeError(f"{expectation.key}: {expectation.op.value} needs quantities, got {got!r} vs {expected!r}")
        if expected.value != 0:
            margin = (got.value - expected.value) / abs(expected.value)
        passed = got >= expected if expectation.op is Op.MIN else got <= expected
    elif expectation.op is Op.EQUAL:
        if isinstance(got, Quantity) and isinstance(expected, Quantity):
            passed = got.value == expected.value
        else:
            passed = str(got).strip().lower() == str(expected).strip().lower()
    else:
        passed = str(expected).lower() in str(got).lower()

    # A value read from a node (a GPU's name) and a detail quoting its output can be any size.
    measured_text = cap_text(_format(got, unit), MESSAGE_CHARS)
    expected_text = _format(expected, unit)
    if isinstance(expectation.value, Quantity) and expectation.value.is_line_share and measurement.line_rate:
        expected_text = (
            f"{_format(expected, unit)} ({expectation.value} of the {measurement.line_rate.display(unit)} "
            "the port reports)"
        )
    margin_text = f" ({float(margin) * 100:+.1f}%)" if margin is not None else ""
    verb = "meets" if passed else "does not meet"
    bound = expectation.key.rsplit(".", 1)[-1]
    # Name the bound when one check has several (gpu_pcie generation/width, rdma_latency p99).
    what = f"{bound} " if bound not in ("min", "max", "equal", "value") else ""
    message = f"{subject}: {what}measured {measured_text}{margin_text}, {verb} {expectation.op.value} {expected_text}"
    if measurement.detail:
        message += f"; {cap_text(measurement.detail, MESSAGE_CHARS)}"
    if expectation.source and not passed:
        message += f" [expected value from: {expectation.source}]"
    return Verdict(passed, measurement, expectation, expected, margin, message)
