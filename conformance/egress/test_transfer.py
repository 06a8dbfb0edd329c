"""Egress: every node connects to every target quickly and moves data to and from it at the profile's rate."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.fixtures import EgressTarget, Judge

pytestmark = pytest.mark.egress


def test_connect_latency(egress_target: EgressTarget, connect_latency: Measurement, judge: Judge) -> None:
    judge(connect_latency)


def test_download(egress_target: EgressTarget, download: Measurement, judge: Judge) -> None:
    judge(download)


def test_upload(egress_target: EgressTarget, upload: Measurement, judge: Judge) -> None:
    judge(upload)
