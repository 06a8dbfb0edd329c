"""``--compare previous.json``: each check's change since a previous record.

Checks are matched by ``(check, subject)`` (test ids can change when tests
move; a pair of nodes measured for the same thing is the same question).  A
value counts as changed when it moved more than ``--compare-tolerance``
(default 5 %) in either direction; the direction that matters follows the
expectation: bandwidth regresses when it drops, latency when it rises.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..runinfo import get_run_info
from .summary import format_number, higher_is_better, numeric_value

__all__ = ["PREVIOUS_KEY", "STATUSES", "Previous", "compare_check", "index_checks", "load_previous", "summary_line"]

# In the order the terminal line lists them: what needs attention first.
STATUSES = ("regressed", "newly failing", "fixed", "improved", "unchanged", "new")
_BAD = ("failed", "error")


@dataclass
class Previous:
    """The previous record, indexed, and what has been compared with it so far."""

    path: Path
    index: dict[tuple[str, str], Mapping[str, Any]]
    tolerance: float


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
        metavar="PERCENT",
        type=float,
        default=5.0,
        help="a value that moved less than this (percent, default 5) counts as unchanged.",
    )


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    path = config.getoption("compare", None)
    # Loaded at session start, after every plugin's configure, so run info is there.
    if not path or get_run_info(config) is None or hasattr(config, "workerinput"):
        return
    config.stash[PREVIOUS_KEY] = Previous(
        Path(path), index_checks(load_previous(path)), config.getoption("compare_tolerance") / 100
    )


def load_previous(path: str | Path) -> list[Mapping[str, Any]]:
    """The checks of a previous record; a clear usage error when it cannot be read."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        checks = data["checks"]
        if not isinstance(checks, list):
            raise TypeError("'checks' is not a list")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise pytest.UsageError(
            f"--compare {path}: not a readable pytest-fabric record ({exc}); "
            "give the file a previous run wrote with --conformance-json"
        ) from exc
    return checks


def index_checks(checks: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """``(check, subject) -> check``; the last one wins when a record holds duplicates."""
    return {(str(c.get("check")), str(c.get("subject"))): c for c in checks}


def compare_check(now: Mapping[str, Any], before: Mapping[str, Any] | None, tolerance: float = 0.05) -> dict[str, Any]:
    """The ``previous`` entry of a check: the earlier outcome and value, the change and a sentence."""
    if before is None:
        return {"status": "new", "text": "new check"}
    out: dict[str, Any] = {
        "outcome": before.get("outcome"),
        "measured": before.get("measured"),
        "margin": before.get("margin"),
        "change": None,
    }
    v0, v1 = numeric_value(before.get("measured")), numeric_value(now.get("measured"))
    same_unit = (before.get("measured") or {}).get("unit") == (now.get("measured") or {}).get("unit")
    text = ""
    if v0 is not None and v1 is not None and same_unit:
        unit = (now.get("measured") or {}).get("unit") or ""
        change = (v1 - v0) / abs(v0) if v0 else (0.0 if v1 == v0 else math.copysign(1.0, v1 - v0))
        out["change"] = round(change, 6)
        text = f"was {format_number(v0)} {unit}, now {format_number(v1)} {unit} ({change * 100:+.1f}%)".replace("  ", " ")
    was_bad, is_bad = before.get("outcome") in _BAD, now.get("outcome") in _BAD
    if is_bad and not was_bad:
        status = "newly failing"
    elif was_bad and not is_bad and now.get("outcome") in ("passed", "waived"):
        status = "fixed"
    elif out["change"] is not None and abs(out["change"]) > tolerance:
        better = out["change"] > 0 if higher_is_better(now) else out["change"] < 0
        status = "improved" if better else "regressed"
    else:
        status = "unchanged"
    out["status"] = status
    if status in ("newly failing", "fixed"):
        text = f"{status} (was {before.get('outcome')})" + (f": {text}" if text else "")
    out["text"] = text or status
    return out


def annotate(config: pytest.Config, check: dict[str, Any]) -> None:
    """Add ``check["previous"]`` when ``--compare`` is in use."""
    prev = config.stash.get(PREVIOUS_KEY, None)
    if prev is not None:
        key = (str(check.get("check")), str(check.get("subject")))
        check["previous"] = compare_check(check, prev.index.get(key), prev.tolerance)


def summary_line(config: pytest.Config, checks: Iterable[Mapping[str, Any]]) -> str | None:
    """``compared with previous.json: 1 regressed, 2 fixed, 60 unchanged``; None without ``--compare``."""
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
    return f"compared with {prev.path.name}: " + (", ".join(parts) or "nothing to compare")
