"""Egress: every node connects to every target quickly and moves data to and from it at the profile's rate."""

import pytest

pytestmark = pytest.mark.egress


def test_connect_latency(egress_target, connect_latency, judge):
    judge(connect_latency, "egress.connect_latency")


def test_download(egress_target, download, judge):
    judge(download, "egress.download")


def test_upload(egress_target, upload, judge):
    judge(upload, "egress.upload")
