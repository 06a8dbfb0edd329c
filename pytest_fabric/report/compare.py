"""``--compare previous.json``: each check's change since a previous record.

Checks are matched by ``(check, subject)`` (test ids can change when tests
move; a pair of nodes measured for the same thing is the same question).
Values are compared as values, not spellings: ``50 MB/s`` before and
``0.0425 GB/s`` now is a 15 % drop, whatever units the profiles were written in.

A value counts as changed when it moved beyond the threshold that fits the
figure: ``--compare-tolerance`` (default 5 %, or per check:
``dns_resolve=20%``, ``dns_resolve=5ms``), widened to the check's own spread
when it was measured in repeats (``extra.repeats``: a rail whose three runs
differ by 8 % has not regressed by moving 6 %).  A single DNS lookup moves by
milliseconds, so ``dns_resolve`` counts only beyond 5 ms unless told otherwise.
The direction that matters follows the expectation: bandwidth regresses when it
drops, latency when it rises.

A check that was measured before and could not be now (skipped, errored after
failing) is "not measured", never "unchanged".  A record of another profile,
cluster or node set is still compared, with a warning that says so.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_fabric.checks.builtin import builtin_registry
from pytest_fabric.config.hostlist import fold
from pytest_fabric.config.units import Quantity, QuantityError, parse_quantity
from pytest_fabric.record.runinfo import RunInfo, get_run_info
from pytest_fabric.report.summary import format_number, higher_is_better, numeric_value
from pytest_fabric.report.untrusted import RECORD_MAX_BYTES, loads_strict, read_capped
from pytest_fabric.report.verify import check_file

__all__ = [
    "PREVIOUS_KEY", "STATUSES", "Previous", "Tolerance", "Tolerances",
    "compare_check", "comparison_warnings", "index_checks", "load_previous", "parse_tolerances", "seal_warning",
    "summary_line",
]

# In the order the terminal line lists them: what needs attention first.
STATUSES = ("regressed", "newly failing", "not measured", "fixed", "improved", "unchanged", "new")
_BAD = ("failed", "error")
_MEASURED = ("passed", "failed", "waived")
_UNMEASURED = ("skipped", "error")


@dataclass(frozen=True)
class Tolerance:
    """How far a check's value may move and still be unchanged: a share, an amount, or both must be passed."""

    relative: float  # a fraction: 0.05
    absolute: Quantity | None = None  # '5 ms': a change below it is noise whatever its share

    def describe(self) -> str:
        share = f"{format_number(self.relative * 100)}%"
        return f"{share} and {self.absolute}" if self.absolute is not None else share


@dataclass(frozen=True)
class Tolerances:
    """The run's thresholds: one share for every check, and per-check ones (``check`` or ``layer.check``)."""

    default: float = 0.05
    per_check: Mapping[str, Tolerance] = field(default_factory=dict)

    def for_check(self, check: Mapping[str, Any]) -> Tolerance:
        name, layer = str(check.get("check")), str(check.get("layer"))
        for key in (f"{layer}.{name}", name):
            if key in self.per_check:
                return self.per_check[key]
        declared = builtin_registry().check_of(name)
        if declared is not None and declared.noise is not None:
            # its run-to-run noise is an amount, not a share (Check.noise: a DNS lookup's milliseconds)
            return Tolerance(self.default, declared.noise)
        return Tolerance(self.default)

_USAGE = "write PERCENT, CHECK=PERCENT or CHECK=QUANTITY (e.g. 5, dns_resolve=20%, dns_resolve=5ms)"


def _share(text: str) -> float | None:
    match = re.fullmatch(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*%?\s*", text)
    return float(match.group(1)) / 100 if match else None


def parse_tolerances(values: Sequence[str]) -> Tolerances:
    """``--compare-tolerance`` values: ``5`` (every check), ``dns_resolve=20%``, ``inter_node.rdma_latency=0.2us``."""
    default = 0.05
    per_check: dict[str, Tolerance] = {}
    for value in values:
        name, sep, amount = (str(value)).partition("=")
        if not sep:
            share = _share(name)
            if share is None:
                raise ValueError(f"--compare-tolerance {value}: {_USAGE}")
            default = share
            continue
        name = name.strip()
        share = _share(amount)
        if share is not None and name:
            per_check[name] = Tolerance(share)
            continue
        try:
            quantity = parse_quantity(amount.strip())
        except QuantityError:
            quantity = None
        if not name or quantity is None:
            raise ValueError(f"--compare-tolerance {value}: {_USAGE}")
        per_check[name] = Tolerance(-1.0, quantity)  # the share is the run's default, filled in below
    return Tolerances(default, {k: Tolerance(default if t.relative < 0 else t.relative, t.absolute)
                                for k, t in per_check.items()})


@dataclass
class Previous:
    """The previous record, indexed, and what has been compared with it so far."""

    path: Path
    index: dict[tuple[str, str], Mapping[str, Any]]
    tolerance: Tolerances | float
    #: what differs between the two runs' profile, cluster or nodes (empty: the same question)
    warnings: list[str] = field(default_factory=list)
    #: why the previous record's figures may not be what its run wrote (EDITED, not sealed); None: intact
    seal: str | None = None

    @property
    def all_warnings(self) -> list[str]:
        """What the record keeps as ``comparison_warnings``: the seal's first, then the question's."""
        return ([self.seal] if self.seal else []) + self.warnings


PREVIOUS_KEY = pytest.StashKey[Previous]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fabric")
    group.addoption(
        "--compare",
        metavar="PREVIOUS_JSON",
        default=None,
        help="compare each check with the same check and subject in a previous --conformance-json record.",
    )
    group.addoption(
        "--compare-tolerance",
        metavar="[CHECK=]TOLERANCE",
        action="append",
        default=[],
        help="a value that moved less than this counts as unchanged: PERCENT for every check (default 5), "
        "or per check as a share or an amount, e.g. dns_resolve=20%% or dns_resolve=5ms (repeatable). "
        "A check measured in repeats also allows the spread of its repeats.",
    )


def _run_of(info: RunInfo) -> dict[str, Any]:
    return {"profile": info.profile_name, "profile_sha256": info.profile_sha256, "cluster": info.cluster_name,
            "inventory": info.inventory_path, "nodes": list(info.nodes), "overrides": list(info.overrides)}


# First, so the record writer (trylast at session start) finds the comparison's warnings.
@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    path = config.getoption("compare", None)
    info = get_run_info(config)
    # Loaded at session start, after every plugin's configure, so run info is there.
    if not path or info is None or hasattr(config, "workerinput"):
        return
    try:
        tolerances = parse_tolerances(config.getoption("compare_tolerance") or [])
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    run, checks = load_record(path)
    config.stash[PREVIOUS_KEY] = Previous(
        Path(path), index_checks(checks), tolerances, comparison_warnings(run, _run_of(info)), seal_warning(path)
    )


def seal_warning(path: str | Path) -> str | None:
    """Why a previous record's figures may not be the ones its run wrote; None when its seal holds.

    Whoever holds a record can edit it; a change since it was sealed (or a record with no seal) is said
    wherever the comparison is, so a tenant does not read an edited "before" as the provider's.
    """
    name = Path(path).name
    result = check_file(path)
    how = f"python -m pytest_fabric.report.verify {name} says why"
    if result.status == "edited":
        return f"{name} is EDITED: its content does not match its seal, so its figures may not be its run's ({how})"
    if result.status == "not sealed":
        return f"{name} is not sealed (no sha256): nothing shows its figures are its run's ({how})"
    if result.status == "cannot read":
        return f"{name}'s seal cannot be checked: " + "; ".join(result.problems[:3])
    return None


def load_record(path: str | Path) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]]:
    """The ``run`` and ``checks`` of a previous record; a clear usage error when it cannot be read."""
    try:
        # Another run's file, perhaps another party's: read capped, a regular file only, and strictly
        # (no NaN, Infinity or key given twice) -- as verify reads it (report/untrusted.py).
        data = loads_strict(read_capped(path, RECORD_MAX_BYTES).decode("utf-8"))
        checks = data["checks"]
        if not isinstance(checks, list):
            raise TypeError("'checks' is not a list")
        for i, check in enumerate(checks):
            if not isinstance(check, dict):
                raise TypeError(f"checks[{i}] is not an object")
        run = data.get("run")
        if not isinstance(run, dict):
            raise TypeError("'run' is not a mapping")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise pytest.UsageError(
            f"--compare {path}: not a readable pytest-fabric record ({exc}); "
            "give the file a previous run wrote with --conformance-json"
        ) from exc
    return run, checks


def load_previous(path: str | Path) -> list[Mapping[str, Any]]:
    """The checks of a previous record; a clear usage error when it cannot be read."""
    return load_record(path)[1]


def comparison_warnings(before: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What makes two runs answer different questions: another profile, an edited one, another cluster or nodes."""
    out = []
    if before.get("profile") != now.get("profile"):
        out.append(f"the previous run used profile {before.get('profile')}, this one {now.get('profile')}")
    elif before.get("profile_sha256") != now.get("profile_sha256"):
        out.append(
            f"profile {now.get('profile')} was edited since the previous run "
            f"(sha256 {str(before.get('profile_sha256'))[:12]}, now {str(now.get('profile_sha256'))[:12]})"
        )
    if list(before.get("overrides") or []) != list(now.get("overrides") or []):
        out.append(
            f"--expect differs: {', '.join(before.get('overrides') or []) or 'none'} before, "
            f"{', '.join(now.get('overrides') or []) or 'none'} now"
        )
    if before.get("cluster") != now.get("cluster"):
        out.append(f"the previous run measured cluster {before.get('cluster')}, this one {now.get('cluster')}")
    was, is_ = set(before.get("nodes") or []), set(now.get("nodes") or [])
    if was != is_:
        parts = [f"{fold(was - is_)} only before" if was - is_ else "", f"{fold(is_ - was)} only now" if is_ - was else ""]
        out.append("the nodes differ: " + ", ".join(p for p in parts if p))
    return out


def index_checks(checks: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """``(check, subject) -> check``; the last one wins when a record holds duplicates."""
    return {(str(c.get("check")), str(c.get("subject"))): c for c in checks}


def _quantity(q: Mapping[str, Any]) -> Quantity | None:
    value, unit = numeric_value(q), q.get("unit")
    if value is None or not unit:
        return None
    try:
        return parse_quantity(f"{value!r} {unit}")
    except QuantityError:
        return None


def _as_now(before: Mapping[str, Any] | None, now: Mapping[str, Any] | None) -> tuple[float, float, str] | None:
    """Both values in the unit of ``now``: ``(before, now, unit)``; None when they are not the same kind."""
    if not before or not now:
        return None
    v0, v1 = numeric_value(before), numeric_value(now)
    if v0 is None or v1 is None:
        return None
    unit0, unit1 = before.get("unit") or "", now.get("unit") or ""
    if unit0 == unit1:
        return v0, v1, unit1
    q0, q1 = _quantity(before), _quantity(now)
    if q0 is None or q1 is None or q0.dimension is not q1.dimension:
        return None  # a count against a rate, or a unit we do not know: not one figure
    try:
        return float(q0.to(unit1)), v1, unit1
    except QuantityError:
        return None


def _spread(check: Mapping[str, Any]) -> float | None:
    """The range of a check's repeated runs as a share of their median (``extra.repeats``)."""
    repeats = ((check.get("extra") or {}).get("repeats") or {}).get("values") or []
    values = [float(v) for v in repeats if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if len(values) < 2:
        return None
    median = statistics.median(values)
    return (max(values) - min(values)) / abs(median) if median else None


def _within(delta: float, unit: str, tolerance: Tolerance) -> bool | None:
    """Whether ``delta`` (in ``unit``) is below the tolerance's amount; None when it has none that applies."""
    if tolerance.absolute is None:
        return None
    moved = _quantity({"value": abs(delta), "unit": unit})
    if moved is None or moved.dimension is not tolerance.absolute.dimension:
        return None
    return moved.value <= tolerance.absolute.value


def compare_check(
    now: Mapping[str, Any], before: Mapping[str, Any] | None, tolerance: Tolerances | float = 0.05
) -> dict[str, Any]:
    """The ``previous`` entry of a check: the earlier outcome and value, the change and a sentence."""
    if before is None:
        return {"status": "new", "text": "new check"}
    tolerances = tolerance if isinstance(tolerance, Tolerances) else Tolerances(tolerance)
    rule = tolerances.for_check(now)
    out: dict[str, Any] = {
        "outcome": before.get("outcome"),
        "measured": before.get("measured"),
        "margin": before.get("margin"),
        "change": None,
    }
    was, is_ = before.get("outcome"), now.get("outcome")
    values = _as_now(before.get("measured"), now.get("measured"))
    text, noise = "", ""
    significant = False
    if values is not None:
        v0, v1, unit = values
        change = (v1 - v0) / abs(v0) if v0 else (0.0 if v1 == v0 else math.copysign(1.0, v1 - v0))
        out["change"] = round(change, 6)
        spreads = [s for s in (_spread(before), _spread(now)) if s is not None]
        relative = max([rule.relative, *spreads])
        out["threshold"] = rule.describe() if relative == rule.relative else f"{format_number(relative * 100)}% (repeats)"
        significant = abs(change) > relative
        small = _within(v1 - v0, unit, rule)
        if significant and small:
            significant, noise = False, f"within {rule.absolute}"
        elif not significant and abs(change) > rule.relative:
            noise = f"within the spread of its repeats, {relative * 100:.1f}%"
        detail = f"{change * 100:+.1f}%" + (f", {noise}" if noise else "")
        text = f"was {format_number(v0)} {unit}, now {format_number(v1)} {unit} ({detail})".replace("  ", " ")
    was_bad, is_bad = was in _BAD, is_ in _BAD
    if is_ in _UNMEASURED and was in _MEASURED and not (is_ == "error" and not was_bad):
        status = "not measured"
        shown = before.get("measured") or {}
        at = f" at {format_number(float(shown['value']))} {shown.get('unit') or ''}".rstrip() if numeric_value(shown) is not None else ""
        text = f"not measured now ({is_}; was {was}{at})"
    elif was == "skipped" and is_ in _MEASURED:
        status, text = "new", "measured now (was skipped)"
    elif is_bad and not was_bad:
        status = "newly failing"
    elif was_bad and not is_bad and is_ in ("passed", "waived"):
        status = "fixed"
    elif significant:
        better = out["change"] > 0 if higher_is_better(now) else out["change"] < 0
        status = "improved" if better else "regressed"
    else:
        status = "unchanged"
    out["status"] = status
    if status in ("newly failing", "fixed"):
        text = f"{status} (was {was})" + (f": {text}" if text else "")
    out["text"] = text or status
    return out


def annotate(config: pytest.Config, check: dict[str, Any]) -> None:
    """Add ``check["previous"]`` when ``--compare`` is in use."""
    prev = config.stash.get(PREVIOUS_KEY, None)
    if prev is not None:
        key = (str(check.get("check")), str(check.get("subject")))
        check["previous"] = compare_check(check, prev.index.get(key), prev.tolerance)


def summary_line(config: pytest.Config, checks: Iterable[Mapping[str, Any]]) -> str | None:
    """``compared with previous.json: 1 regressed, 2 fixed, 60 unchanged``; None without ``--compare``.

    When the previous run asked another question (profile, cluster, nodes) the line says so first.
    """
    prev = config.stash.get(PREVIOUS_KEY, None)
    if prev is None:
        return None
    seen: dict[str, int] = {}
    matched = set()
    for c in checks:
        status = (c.get("previous") or {}).get("status")
        if status:
            seen[status] = seen.get(status, 0) + 1
            matched.add((str(c.get("check")), str(c.get("subject"))))
    parts = [f"{seen[s]} {s}" for s in STATUSES if seen.get(s)]
    missing = len(set(prev.index) - matched)
    if missing:
        parts.append(f"{missing} not run this time")
    line = f"compared with {prev.path.name}: " + (", ".join(parts) or "nothing to compare")
    if prev.seal:
        line += f" -- WARNING: {prev.seal}"
    if prev.warnings:
        line += " -- WARNING, not the same question: " + "; ".join(prev.warnings)
    return line
