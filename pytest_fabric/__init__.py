"""pytest-fabric: measure a GPU cluster's fabric over SSH and judge it against a profile.

Public API for extensions and custom checks.
"""

from __future__ import annotations

__version__ = "0.1.0"

from pytest_fabric.config.units import Dimension, Quantity, QuantityError, parse_quantity
from pytest_fabric.judge.verdict import Expectation, Measurement, Op, Verdict, judge

__all__ = [
    "__version__",
    "Dimension",
    "Expectation",
    "Measurement",
    "Op",
    "Quantity",
    "QuantityError",
    "Verdict",
    "judge",
    "parse_quantity",
]
