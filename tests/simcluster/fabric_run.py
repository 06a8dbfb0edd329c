"""Run pytest-fabric's command line against a simulated cluster from a pytester test, and read its record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def run_with_record(
    pytester: pytest.Pytester, inventory: Path, profile: Path, *args: str, timeout: float = 240
) -> tuple[pytest.RunResult, dict[str, Any]]:
    """``pytest --cluster INVENTORY --profile PROFILE ARGS`` in a subprocess, and its JSON record."""
    record = pytester.path / "record.json"
    result = pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", str(profile), "-p", "no:cacheprovider", "-rA",
        f"--conformance-json={record}", *args, timeout=timeout,
    )
    return result, json.loads(record.read_text())
