"""ruff and mypy --strict pass on the tree.

CI runs the README's test command (.ci/run, which stays as it is), so the linters run as tests:
with the tools the ``test`` extra installs into the same environment as pytest, each run as
``python -m`` of this interpreter.  Their settings are pyproject.toml's ([tool.ruff], [tool.mypy]);
the paths are tox.ini's lint and type environments'.  A failure shows the tool's own findings.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# On the CI's 2 cores mypy --strict of the whole package from an empty cache took about 10 s
# (docs/development.md); ten times that is a hang or a tree that grew past what this test is for.
LIMIT_S = 120


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(tool) is None:
        pytest.fail(f"{tool} is not installed in {sys.prefix}: pip install '.[test]' (pyproject.toml's test extra)")
    if not (ROOT / "pyproject.toml").is_file() or not (ROOT / "pytest_fabric").is_dir():
        pytest.fail(f"{ROOT} is not a checkout of pytest-fabric (no pyproject.toml, pytest_fabric/)")
    return subprocess.run(
        [sys.executable, "-m", tool, *args], cwd=ROOT, capture_output=True, text=True, timeout=LIMIT_S, check=False
    )


def test_ruff_check_passes() -> None:
    done = _run("ruff", "check", "--no-cache", "--output-format", "concise", "pytest_fabric", "conformance", "tests", "benchmarks", "setup.py")
    assert done.returncode == 0, f"ruff check found (fix it, or `ruff check --fix`):\n{done.stdout}{done.stderr}"


def test_mypy_strict_passes() -> None:
    start = time.monotonic()
    done = _run("mypy", "--strict", "pytest_fabric", "conformance")
    took = time.monotonic() - start
    assert done.returncode == 0, f"mypy --strict found ({took:.0f} s):\n{done.stdout}{done.stderr}"
