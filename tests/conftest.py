"""The project's own test session: which pytest_fabric is under test.

The suite tests the installed package (``.venv/bin/pip install '.[test]'``), not the checkout:
the repository's root holds ``pytest_fabric/``, and ``python -m pytest`` from the root (which
puts the working directory first on ``sys.path``) would import that instead. A run that imported
the checkout stops here, unless it says it means to (``FABRIC_TEST_CHECKOUT=1``, for an editable
install while developing). The header says which copy was imported.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import pytest_fabric

REPO = Path(__file__).resolve().parents[1]
IMPORTED_FROM = Path(pytest_fabric.__file__).resolve().parent
FROM_SOURCE = IMPORTED_FROM == REPO / "pytest_fabric"  # a venv or tox env inside the checkout is an installed copy


def pytest_configure(config: pytest.Config) -> None:
    if FROM_SOURCE and os.environ.get("FABRIC_TEST_CHECKOUT") != "1":
        raise pytest.UsageError(
            f"pytest_fabric was imported from the checkout ({IMPORTED_FROM}), not an installed copy: "
            "install it (.venv/bin/pip install '.[test]', not -e) and run .venv/bin/pytest tests, not "
            "python -m pytest (which puts the checkout first on sys.path); FABRIC_TEST_CHECKOUT=1 "
            "allows it on purpose"
        )


def pytest_report_header(config: pytest.Config) -> str:
    where = "source checkout (editable)" if FROM_SOURCE else "installed copy"
    return f"pytest_fabric under test: {pytest_fabric.__version__} from {IMPORTED_FROM} ({where})"
