"""The project's own test session: which pytest_fabric is under test.

The suite tests the installed package (``pip install '.[test]'``), not the source tree: with
the src layout nothing puts ``src/`` on the path. The header says which copy was imported, and
under tox (``FABRIC_REQUIRE_INSTALLED=1``) a copy from the checkout stops the run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import pytest_fabric

REPO = Path(__file__).resolve().parents[1]
IMPORTED_FROM = Path(pytest_fabric.__file__).resolve().parent
FROM_SOURCE = IMPORTED_FROM.is_relative_to(REPO / "src")  # a tox env under .tox/ is an installed copy


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("FABRIC_REQUIRE_INSTALLED") == "1" and FROM_SOURCE:
        raise pytest.UsageError(
            f"pytest_fabric was imported from the checkout ({IMPORTED_FROM}), not an installed copy: "
            "run the tests through tox, or pip install . (not -e) first"
        )


def pytest_report_header(config: pytest.Config) -> str:
    where = "source checkout (editable)" if FROM_SOURCE else "installed copy"
    return f"pytest_fabric under test: {pytest_fabric.__version__} from {IMPORTED_FROM} ({where})"
