"""Egress: every node resolves every target's name quickly."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.fixtures import EgressTarget, Judge

pytestmark = pytest.mark.egress


def test_dns_resolve(egress_target: EgressTarget, dns_resolve: Measurement, judge: Judge) -> None:
    judge(dns_resolve)
