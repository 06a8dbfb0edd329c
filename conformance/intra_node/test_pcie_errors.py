"""Intra-node, the PCIe links of the GPUs and NICs: replays and AER errors, before and during the run."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.intra_node


def test_pcie_errors(node: NodeHandle, pcie_errors: Measurement, judge: Judge) -> None:
    """Each GPU replays at most intra_node.pcie_errors.replays_per_minute (DCGM's 8) during the run and
    since boot; no GPU or NIC has more uncorrectable (fatal, non-fatal) AER errors than
    aer_uncorrectable_max (none); correctable ones are reported. Read before any traffic and again
    last, so the growth is this run's. A failure names the device by bus id."""
    judge(pcie_errors)
