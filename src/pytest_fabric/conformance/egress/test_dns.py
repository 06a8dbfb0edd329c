"""Egress: every node resolves every target's name quickly."""

import pytest

pytestmark = pytest.mark.egress


def test_dns_resolve(egress_target, dns_resolve, judge):
    judge(dns_resolve, "egress.dns_resolve")
