"""Software, per node, before any measurement: tools, devices, GPUDirect, locked memory, PCIe ACS (one reading per node)."""

import pytest

pytestmark = pytest.mark.software


def test_preflight(node, preflight, judge):
    """Every tool the profile's checks run is on PATH (else an error naming the package); the GPUs and HCAs the profile expects are visible."""
    judge(preflight, "software.preflight")


def test_gpudirect(node, gpudirect, judge):
    """nvidia_peermem is loaded, or dma-buf is possible (open kernel module, Linux 5.12+), as the profile's via asks."""
    judge(gpudirect, "software.gpudirect")


def test_memlock(node, memlock, judge):
    """ulimit -l is unlimited in the sessions the checks run in: RDMA registers (pins) memory."""
    judge(memlock, "software.memlock")


def test_pcie_acs(node, pcie_acs, judge):
    """No PCIe bridge above a GPU or NIC has ACS redirection on (lspci -vvv ACSCtl): it defeats GPUDirect P2P."""
    judge(pcie_acs, "software.pcie_acs")
