"""What each check took, kept in pytest's cache for the plan of the next run of the same inventory and profile.

At the end of a run (:func:`write`) every check whose tests all measured (passed, failed or waived:
an error or a skip may have ended at once) leaves one figure: a measuring check the time of one
measurement (what its tests took, less its batches' starts, over the measurements the plan put one
after the other), a check that only re-measures (outliers, attribution) what its retests took. The
run's time outside the checks' tests (connections, collection, reports) is kept too. Each figure
carries a digest of the check's settings: a check whose settings changed since is estimated again.

The next run's plan (:func:`read`) takes those times for its estimate
(:class:`~pytest_fabric.run.plan.PreviousRun`) and says so. The key is the inventory's sha256 and
the profile's name (:func:`cache_key`), under ``pytest_fabric/check_times/`` in ``.pytest_cache``;
with ``-p no:cacheprovider`` nothing is read or written and the plan says its times are estimated.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any, TypeGuard

import pytest

from pytest_fabric.run.plan import CheckTime, PreviousRun, RunPlan

__all__ = ["VERSION", "cache_key", "check_times", "read", "settings_digest", "write"]

#: the layout of the cached entry; an entry of another version is not read
VERSION = 1

#: outcomes whose duration is a measurement's: an error or a skip may have ended before measuring
MEASURED = frozenset({"passed", "failed", "waived"})


def cache_key(inventory_sha256: str, profile_name: str) -> str:
    """The cache key of an inventory (its sha256) and a profile (its name): one entry per pair."""
    digest = hashlib.sha256(f"{inventory_sha256}\0{profile_name}".encode()).hexdigest()[:24]
    return f"pytest_fabric/check_times/{digest}"


def settings_digest(spec: Any) -> str:
    """A short digest of a check's settings (its profile model): a figure measured with others is not reused."""
    try:
        text = spec.model_dump_json() if spec is not None else "null"
    except (AttributeError, TypeError, ValueError):
        text = repr(spec)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _cache(config: pytest.Config) -> Any:
    return getattr(config, "cache", None)


def read(config: pytest.Config, key: str, settings: Mapping[str, str]) -> tuple[PreviousRun | None, str]:
    """The previous run's times for the checks whose ``settings`` digests match, and, where none are
    used, why (for the plan line)."""
    cache = _cache(config)
    if cache is None:
        return None, "pytest's cache is off: -p no:cacheprovider"
    entry = cache.get(key, None)
    if not isinstance(entry, dict) or entry.get("version") != VERSION or not isinstance(entry.get("checks"), dict):
        return None, "no previous run of this inventory and profile in pytest's cache"
    checks: dict[str, CheckTime] = {}
    for check, kept in entry["checks"].items():
        if not isinstance(kept, dict) or check not in settings or kept.get("settings") != settings[check]:
            continue
        measurement, retest = kept.get("measurement_s"), kept.get("retest_s", 0.0)
        if _seconds_ok(measurement) and _seconds_ok(retest):
            checks[str(check)] = CheckTime(float(measurement), float(retest))
    if not checks:
        return None, "the previous run of this inventory and profile measured none of these checks with these settings"
    outside = entry.get("outside_s")
    return PreviousRun(str(entry.get("ended") or "time unknown"), checks,
                       float(outside) if _seconds_ok(outside) else None), ""


def _seconds_ok(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def check_times(plan: RunPlan, records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Each check's figure from the run's records, by the plan's schedule: ``measurement_s`` (what its tests
    took, less its batches' starts, over its measurements one after the other) and ``retest_s`` (a check
    that measures nothing: what its tests took, its retests)."""
    took: dict[str, float] = {}
    complete: dict[str, bool] = {}
    for record in records:
        check = str(record.get("check"))
        took[check] = took.get(check, 0.0) + float(record.get("duration_s") or 0.0)
        complete[check] = complete.get(check, True) and record.get("outcome") in MEASURED
    out: dict[str, dict[str, float]] = {}
    for c in plan.checks:
        if not complete.get(c.check):
            continue
        seconds = took[c.check]
        if (c.bound_seconds or c.seconds) > 0 and c.slots > 0:
            # less the retests the plan put in its own tests (--lf: its failing pairs alone)
            spent = seconds - c.batches * c.batch_s - c.retest_s
            out[c.check] = {"measurement_s": round(max(spent, 0.0) / c.slots, 3),
                            "retest_s": 0.0}
        elif c.retest_bound_s > 0 or c.retest_s > 0:
            out[c.check] = {"measurement_s": 0.0, "retest_s": round(seconds, 3)}
    return out


def write(config: pytest.Config, key: str, plan: RunPlan, records: Sequence[Mapping[str, Any]], took_s: float | None,
          settings: Mapping[str, str]) -> None:
    """Keep this run's per-check times under ``key`` (the entries of checks it did not measure stay)."""
    cache = _cache(config)
    if cache is None:
        return
    figures = check_times(plan, records)
    if not figures:
        return
    entry = cache.get(key, None)
    kept = entry.get("checks", {}) if isinstance(entry, dict) and entry.get("version") == VERSION else {}
    checks = {**(kept if isinstance(kept, dict) else {}),
              **{check: {**figure, "settings": settings.get(check, "")} for check, figure in figures.items()}}
    inside = sum(float(r.get("duration_s") or 0.0) for r in records)
    outside = round(max(took_s - inside, 0.0), 3) if took_s is not None else None
    ended = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cache.set(key, {"version": VERSION, "ended": ended, "outside_s": outside, "checks": checks})
