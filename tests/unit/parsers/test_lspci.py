"""lspci -vvv on the corpus: the HGX H100 machine dump, a -x hex dump, grep excerpts."""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal

import pytest

from pytest_fabric.parsers.base import UnrecognizedOutput
from pytest_fabric.parsers.lspci import parse_lspci, pcie_generation

Read = Callable[[str], str]
HGX = "lspci/hgx-h100-8gpu-cx7-full-vvv.txt"


def test_hgx_gpus_and_nics(corpus_text: Read) -> None:
    devices = {d.bdf: d for d in parse_lspci(corpus_text(HGX))}
    assert len(devices) == 517
    gpu = devices["19:00.0"]
    assert (gpu.class_name, gpu.description) == ("3D controller", "NVIDIA Corporation Device 2330 (rev a1)")
    assert (gpu.link_cap_speed_gts, gpu.link_cap_width, gpu.link_sta_speed_gts, gpu.link_sta_width) == (Decimal(32), 16, Decimal(32), 16)
    assert (gpu.link_cap_generation, gpu.link_sta_generation, gpu.downgraded) == (5, 5, False)
    assert (gpu.kernel_driver, gpu.numa_node) == ("nvidia", 0)
    gpus = [d for d in devices.values() if d.class_name == "3D controller"]
    assert len(gpus) == 8 and all(g.link_sta_generation == 5 and g.link_sta_width == 16 for g in gpus)
    cx7 = [d for d in devices.values() if d.description and "ConnectX-7" in d.description]
    assert len(cx7) == 8 and all(d.link_sta_width == 16 and d.link_sta_speed_gts == 32 for d in cx7)
    cx6dx = devices["1b:00.1"]
    assert (cx6dx.link_sta_generation, cx6dx.link_sta_width, cx6dx.downgraded) == (4, 16, False)


def test_hgx_downgraded_links(corpus_text: Read) -> None:
    devices = {d.bdf: d for d in parse_lspci(corpus_text(HGX))}
    switch_port = devices["17:03.0"]  # PEX890xx Gen5 switch port trained at Gen4
    assert (switch_port.link_cap_speed_gts, switch_port.link_sta_speed_gts) == (Decimal(32), Decimal(16))
    assert switch_port.speed_downgraded and not switch_port.width_downgraded and switch_port.downgraded
    broadcom = devices["01:00.0"]
    assert broadcom.width_downgraded and not broadcom.speed_downgraded and broadcom.link_sta_width == 1
    assert sum(d.downgraded for d in devices.values()) == 16


def test_hgx_is_fast(corpus_text: Read) -> None:
    text = corpus_text(HGX)
    start = time.perf_counter()
    parse_lspci(text)
    assert time.perf_counter() - start < 0.5  # ~20 ms here; generous for slow CI machines


def test_connectx3_with_hex_dump(corpus_text: Read) -> None:
    (device,) = parse_lspci(corpus_text("lspci/connectx3-mt27500-vvv-x.txt"))
    assert (device.bdf, device.class_name) == ("82:00.0", "Infiniband controller")
    assert (device.vendor_id, device.device_id) == ("15b3", "1003")  # from the -x config dump
    assert (device.link_cap_generation, device.link_cap_width, device.link_sta_generation, device.link_sta_width) == (3, 8, 3, 8)
    assert device.kernel_driver == "mlx4_core" and not device.downgraded


def test_grep_width_excerpts(corpus_text: Read) -> None:
    ports = parse_lspci(corpus_text("lspci/intel-e810-8086-1592-pcie4-x16-grep-width.txt"))
    assert [(d.bdf, d.link_sta_generation, d.link_sta_width, d.downgraded) for d in ports] == [(None, 4, 16, False)] * 2
    (gen2,) = parse_lspci(corpus_text("lspci/nic-pcie-gen2-x8-grep-width.txt"))
    assert (gen2.link_cap_speed_gts, gen2.link_sta_generation, gen2.link_sta_width) == (Decimal(5), 2, 8)


def test_nn_ids_and_old_lspci_without_notes() -> None:
    text = (
        "19:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n"
        "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us\n"
        "\t\tLnkSta:\tSpeed 16GT/s, Width x8, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n"
    )
    (device,) = parse_lspci(text)
    assert (device.class_name, device.vendor_id, device.device_id) == ("3D controller", "10de", "2330")
    assert device.speed_downgraded and device.width_downgraded and device.link_sta_generation == 4


def test_generation_table() -> None:
    assert [pcie_generation(Decimal(s)) for s in ("2.5", "5", "8", "16", "32", "64")] == [1, 2, 3, 4, 5, 6]
    assert pcie_generation(None) is None and pcie_generation(Decimal("3")) is None


def test_not_lspci() -> None:
    with pytest.raises(UnrecognizedOutput, match="^lspci"):
        parse_lspci("hello\n")
