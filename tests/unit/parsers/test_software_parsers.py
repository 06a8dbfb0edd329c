"""Parsers of the software layer: ofed_info -s, lsmod, ldconfig -p, nvidia-smi -L, lspci -vvv ACS."""

from __future__ import annotations

from pathlib import Path

import pytest
from unit.parsers.corpus import corpus_text

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.ldconfig import parse_ldconfig
from pytest_fabric.parsers.lsmod import parse_lsmod
from pytest_fabric.parsers.lspci_acs import parse_lspci_acs
from pytest_fabric.parsers.nvidia_smi_list import parse_nvidia_smi_list
from pytest_fabric.parsers.ofed_info import parse_ofed_info
from pytest_fabric.probes.preflight import acs_on_paths

DATA = Path(__file__).resolve().parents[2] / "data"


def test_ofed_info_mlnx_and_doca() -> None:
    # both recorded (tests/data/SOURCES-software.md)
    mlnx = parse_ofed_info((DATA / "ofed_info" / "mlnx-ofed-23.07-s-connectx5-daocloud.txt").read_text())
    assert (mlnx.distribution, mlnx.version, mlnx.label) == ("MLNX_OFED_LINUX", "23.07-0.5.1.2", "MLNX_OFED")
    doca = parse_ofed_info((DATA / "ofed_info" / "doca-ofed-24.10-s-dgx-os-7.0.2.txt").read_text())
    assert (doca.version, doca.label) == ("24.10-1.1.4.0.200", "DOCA-OFED")
    with pytest.raises(UnrecognizedOutput, match="ofed_info"):
        parse_ofed_info("ofed_info: command not found\n")


def test_lsmod_modules_and_users() -> None:
    modules = parse_lsmod((DATA / "lsmod" / "gpu-node-peermem-constructed.txt").read_text())
    assert "nvidia_peermem" in modules and modules["nvidia"].used_by == ("nvidia_uvm", "nvidia_peermem", "nvidia_modeset")
    assert modules["nvidia"].use_count == 2163 and modules["nvidia_peermem"].used_by == ()
    with pytest.raises(UnrecognizedOutput):
        parse_lsmod("nvidia_peermem 16384 0\n")  # no header: not lsmod


def test_ldconfig_libraries() -> None:
    libs = parse_ldconfig((DATA / "ldconfig" / "nccl-2.21.5-ubuntu-constructed.txt").read_text())
    assert [lib.soname for lib in libs][:2] == ["libnccl.so.2", "libnccl.so"]
    assert libs[-1].path == "/lib/x86_64-linux-gnu/libc.so.6"  # the OS ABI note does not hide the path
    assert parse_ldconfig("0 libs found in cache `/etc/ld.so.cache'\n") == []


def test_nvidia_smi_list_leaves_mig_lines_out() -> None:
    # recorded on a DGX A100 with four MIG devices on each GPU (tests/data/SOURCES-software.md)
    gpus = parse_nvidia_smi_list((DATA / "nvidia-smi-L" / "dgx-a100-8gpu-mig-head10-deepops.txt").read_text())
    assert [(g.index, g.name) for g in gpus] == [(0, "NVIDIA A100-SXM4-80GB"), (1, "NVIDIA A100-SXM4-80GB")]
    with pytest.raises(ToolReportedError, match="couldn't communicate"):
        parse_nvidia_smi_list("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")


def test_acs_on_above_a_gpu_and_nic_only() -> None:
    parsed = parse_lspci_acs((DATA / "lspci-acs" / "pex-switch-acs-on-above-gpu-constructed.txt").read_text())
    assert [a.bdf for a in parsed.acs] == ["16:00.0", "30:00.0"]
    assert parsed.acs[0].above("18:00.0") and not parsed.acs[0].above("31:00.0")
    # The root port above the NVMe drive has ACS on too: it guards no GPU or NIC, so it is left alone.
    assert acs_on_paths(parsed) == ["16:00.0 (above 17:00.0, 18:00.0): SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+"]


def test_acs_on_the_recorded_hgx_h100() -> None:
    """The real HGX H100: ACS is on only at root ports and a switch with no GPU or NIC below."""
    parsed = parse_lspci_acs(corpus_text("lspci", "hgx-h100-8gpu-cx7-full-vvv.txt"))
    assert len(parsed.acs) == 55
    assert {a.bdf for a in parsed.acs if a.enabled} == {"00:0c.0", "00:0e.0", "82:00.0", "82:01.0", "82:02.0", "82:03.0"}
    assert acs_on_paths(parsed) == []
    bridge = next(a for a in parsed.acs if a.bdf == "15:01.0")
    assert (bridge.secondary_bus, bridge.subordinate_bus) == (0x16, 0x1c) and bridge.above("19:00.0")
