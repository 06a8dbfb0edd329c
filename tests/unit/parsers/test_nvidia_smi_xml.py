"""nvidia-smi -q -x XML, proven on the recorded corpus and our Gen4 x8 sample."""

from __future__ import annotations

from pathlib import Path

import pytest
from unit.parsers.corpus import corpus_text

from pytest_fabric.parsers.base import ParseError
from pytest_fabric.parsers.nvidia_smi_xml import parse_nvidia_smi_xml

DATA = Path(__file__).resolve().parents[2] / "data" / "nvidia-smi-xml"


def test_a100_mig_v12() -> None:
    report = parse_nvidia_smi_xml(
        corpus_text("nvidia-smi-xml", "a100-sxm4-80gb-mig-dtd-v12-535.54.03.xml")
    )
    assert (report.driver_version, report.cuda_version, report.attached_gpus) == (
        "535.54.03",
        "12.2",
        4,
    )
    gpu = report.gpus[0]
    assert gpu.product_name == "NVIDIA A100-SXM4-80GB"
    assert gpu.bus_id == "00000000:01:00.0"
    assert gpu.mig_enabled and gpu.mig_device_count == 4
    assert (gpu.pcie_generation_current, gpu.pcie_generation_max, gpu.pcie_generation_host_max) == (
        4,
        4,
        4,
    )
    assert (gpu.pcie_link_width_current, gpu.pcie_link_width_max) == (16, 16)
    assert gpu.module_id == 4 and gpu.minor_number == 1


def test_t4_v11_runs_at_x8_of_x16() -> None:
    gpu = parse_nvidia_smi_xml(
        corpus_text("nvidia-smi-xml", "tesla-t4-dtd-v11-515.105.01.xml")
    ).gpus[0]
    assert gpu.product_name == "Tesla T4"
    assert gpu.bus_id == "00000000:00:1E.0"
    assert (gpu.pcie_generation_current, gpu.pcie_generation_max) == (3, 3)
    assert (gpu.pcie_link_width_current, gpu.pcie_link_width_max) == (8, 16)
    assert gpu.pcie_generation_device_current is None  # v11 has no device/host split
    assert gpu.mig_mode_current is None


def test_rtx4000_v13_tabs_idle_gen1() -> None:
    report = parse_nvidia_smi_xml(corpus_text("nvidia-smi-xml", "rtx-4000-sff-ada-dtd-v13.xml"))
    gpu = report.gpus[0]
    assert report.cuda_version == "13.2"
    assert gpu.product_name == "NVIDIA RTX 4000 SFF Ada Generation"
    assert (gpu.pcie_generation_current, gpu.pcie_generation_max) == (1, 4)  # idle power saving
    assert gpu.module_id == 1


def test_own_sample_gen4_x8_of_gen5_x16() -> None:
    report = parse_nvidia_smi_xml(
        (DATA / "h100-pcie-trained-gen4-x8-dtd-v12-constructed.xml").read_text()
    )
    slow, good = report.gpus
    assert (slow.pcie_generation_current, slow.pcie_generation_max) == (4, 5)
    assert (slow.pcie_link_width_current, slow.pcie_link_width_max) == (8, 16)
    assert slow.pcie_replays_since_reset == 37
    assert (good.pcie_generation_current, good.pcie_link_width_current) == (5, 16)
    assert report.gpu(1).bus_id == "00000000:D6:00.0"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "<nvidia_smi_log><gpu>",
        "<other/>",
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><nvidia_smi_log>&lol2;</nvidia_smi_log>',
        '<!DOCTYPE x SYSTEM "http://example.invalid/x.dtd" [<!ELEMENT x ANY>]><x/>',
    ],
)
def test_garbage_and_entities_raise_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nvidia-smi-xml"):
        parse_nvidia_smi_xml(text)


def test_truncated_xml_raises_parse_error() -> None:
    text = (DATA / "h100-pcie-trained-gen4-x8-dtd-v12-constructed.xml").read_text()
    for cut in range(0, len(text) - 20, 97):
        with pytest.raises(ParseError):
            parse_nvidia_smi_xml(text[:cut])


# Recent drivers (issue 20): ECC errors, retired pages, remapped rows and the NVLink fabric state in the XML.

H200_XML = "h200-2of8gpu-dtd-v13-580-remap-failure-ecc-fabric-insufficient-constructed.xml"


def test_v13_ecc_remapped_rows_and_fabric() -> None:
    good, bad = parse_nvidia_smi_xml((DATA / H200_XML).read_text()).gpus
    assert (
        good.ecc_mode_current == "Enabled"
        and good.memory_faults == ()
        and good.fabric_problem is None
    )
    assert (good.fabric_clique_id, good.fabric_cluster_uuid, good.fabric_health_summary) == (
        32766,
        "4f0b2c3a-7a51-4d8e-9c2e-6b1d0e5a9f12",
        "Healthy",
    )
    assert good.fabric_health == {"bandwidth": "Full"}
    assert good.ecc_aggregate is not None and good.ecc_aggregate.correctable == 15
    assert bad.memory_faults == (
        "3 uncorrectable volatile ECC error(s) (SRAM 1, DRAM 2)",
        "row remapping pending (reset the GPU)",
        "row remapping failed",
    )
    assert bad.fabric_problem == "NVLink fabric state Completed, status Insufficient Resources"
    assert (bad.remapped_rows_uncorrectable, bad.retired_pages_pending) == (1, None)


def test_recorded_v11_retired_pages_and_v12_without_remapped_rows() -> None:
    (t4,) = parse_nvidia_smi_xml(
        corpus_text("nvidia-smi-xml", "tesla-t4-dtd-v11-515.105.01.xml")
    ).gpus
    assert (t4.retired_pages_single_bit, t4.retired_pages_double_bit, t4.retired_pages_pending) == (
        0,
        0,
        False,
    )
    assert (
        t4.ecc_volatile is not None
        and t4.ecc_volatile.uncorrectable == 0
        and t4.fabric_state is None
    )
    (a100,) = parse_nvidia_smi_xml(
        corpus_text("nvidia-smi-xml", "a100-sxm4-80gb-mig-dtd-v12-535.54.03.xml")
    ).gpus
    # <remapped_rows>N/A</remapped_rows> under MIG; <fabric> N/A: nothing to judge, nothing invented.
    assert (a100.remapped_rows_pending, a100.fabric_state, a100.memory_faults) == (None, None, ())
