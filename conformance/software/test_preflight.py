"""Software, per node, before any measurement: tools, devices, GPUDirect, locked memory, PCIe ACS (one reading per node)."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.software


def test_preflight(node: NodeHandle, preflight: Measurement, judge: Judge) -> None:
    """Every tool the profile's checks run is on PATH (else an error naming the package); the GPUs and HCAs the profile expects are visible."""
    judge(preflight)


def test_gpudirect(node: NodeHandle, gpudirect: Measurement, judge: Judge) -> None:
    """nvidia_peermem is loaded, or dma-buf is possible (open kernel module, Linux 5.12+), as the profile's via asks."""
    judge(gpudirect)


def test_memlock(node: NodeHandle, memlock: Measurement, judge: Judge) -> None:
    """ulimit -l is unlimited in the sessions the checks run in: RDMA registers (pins) memory."""
    judge(memlock)


def test_pcie_acs(node: NodeHandle, pcie_acs: Measurement, judge: Judge) -> None:
    """No PCIe bridge above a GPU or NIC has ACS redirection on (lspci -vvv ACSCtl): it defeats GPUDirect P2P."""
    judge(pcie_acs)
