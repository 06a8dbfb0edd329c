"""Attribution (``inter_node.attribution``): every pair check's figures judged by one model, a verdict
for each node (``attribution``) and one for the fabric (``fabric_attribution``): their declarations.

Attribution judges what the pair families measured (each declares how its figures feed the model,
``Check.blame``), so it is a family of its own, above none of them: it names no pair check, and needs
one of them set (``needs=("pair_checks",)``: judge/applicability.py says which to set).  Its driver and
fixtures are :mod:`pytest_fabric.measurements.attribution`, which reads these declarations (registered
before it: a plugin module must not be imported before pytest registers it); the model is
:mod:`pytest_fabric.judge.blame`.  The family registers its checks through ``pytest_fabric_checks``, as
an extension does.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import model_validator

from pytest_fabric.checks.base import Check, Retests
from pytest_fabric.config.profile import CheckSpec
from pytest_fabric.config.units import Quantity
from pytest_fabric.judge.verdict import Op

__all__ = ["ATTRIBUTION", "ATTRIBUTION_RETESTS", "FABRIC_ATTRIBUTION", "Attribution", "pytest_fabric_checks"]


class Attribution(CheckSpec):
    """Blame what fell short on nodes, links or the fabric (judge/blame.py); ``retest`` measures what it
    cannot tell yet, and each link's pair, alone before the verdict."""

    # default: every pair check the profile sets (measurements/attribution.py); one named must be a
    # registered check that declares it feeds the model (Check.blame), held at load (ProfileSchema.attributed)
    NAMES_BLAME_INPUT = "check"
    check: str | None = None
    retest: bool = True

    @model_validator(mode="after")
    def _dimensions(self) -> Any:
        return self

    def bounds(self) -> list[tuple[str, Op, Quantity | str | int | bool]]:
        return [("verdict", Op.EQUAL, "ok")]


#: what the blame model asks (measurements/attribution.py): RETEST_STEPS (2) steps of RETEST_REPEATS (3)
#: samples, suspects with helpers both ways, and the links it cleared in their rounds again
ATTRIBUTION_RETESTS = Retests(steps=2, samples=3, rounds_again=True, both_ways=True)
#: a verdict for each node, after every pair round whose figures it reads
ATTRIBUTION = Check("attribution", "inter_node", Attribution, "node", "reads", phase=30, retests=ATTRIBUTION_RETESTS,
                    needs=("pair_checks",))
#: one verdict for the fabric, judged by the same key: its shortfalls, the link faults, what cannot be told
FABRIC_ATTRIBUTION = Check("fabric_attribution", "inter_node", Attribution, "cluster", "reads", key="attribution",
                           phase=30)


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [ATTRIBUTION, FABRIC_ATTRIBUTION]
