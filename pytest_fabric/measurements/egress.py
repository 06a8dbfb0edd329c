"""Egress measurements: name resolution for each target, from each node."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from ..fixtures import EgressTarget
from ..probes import egress
from ..verdict import Measurement


@pytest.fixture
def dns_resolve(egress_target: EgressTarget, spec: Callable[[str], Any]) -> Measurement:
    spec("egress.dns_resolve")
    return egress.dns_resolve(egress_target.node, egress_target.target)
