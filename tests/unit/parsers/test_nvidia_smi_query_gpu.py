"""nvidia-smi --query-gpu CSV, proven on the recorded corpus."""

from __future__ import annotations

import pytest
from unit.parsers.corpus import corpus_text

from pytest_fabric.parsers.base import ParseError, ToolReportedError
from pytest_fabric.parsers.nvidia_smi_query_gpu import parse_nvidia_smi_query_gpu


def test_h100_all_fields() -> None:
    result = parse_nvidia_smi_query_gpu(corpus_text("nvidia-smi-query-gpu", "h100-80gb-all-fields-590.48.01.csv"))
    assert len(result.fields) == 212 and len(result.rows) == 1
    row = result.rows[0]
    assert row.name == "NVIDIA H100 80GB HBM3"
    assert row.index == 0
    assert row.pci_bus_id == "00000000:00:09.0"
    assert (row.pcie_link_gen_current, row.pcie_link_gen_max) == (5, 5)
    assert (row.pcie_link_width_current, row.pcie_link_width_max) == (16, 16)
    assert row.get("pcie.link.gen.hostmax") is None  # [N/A]
    assert row.get_int("memory.used") == 0  # "0 MiB", unit from the header stripped
    assert row.units["memory.used"] == "MiB"
    assert row.get("driver_version") == "590.48.01"


def test_l40s_under_load() -> None:
    row = parse_nvidia_smi_query_gpu(corpus_text("nvidia-smi-query-gpu", "l40s-all-fields-595.80-load.csv")).rows[0]
    assert row.name == "NVIDIA L40S"
    assert (row.pcie_link_gen_current, row.pcie_link_width_current) == (4, 16)
    assert row.get_int("memory.used") == 1235
    assert row.get_int("clocks_event_reasons_counters.sw_power_cap") == 204642816


def test_p100_subset_nounits_no_trailing_newline() -> None:
    result = parse_nvidia_smi_query_gpu(corpus_text("nvidia-smi-query-gpu", "tesla-p100-pcie-subset-fields.csv"))
    row = result.rows[0]
    assert len(result.fields) == 15
    assert row.name == "Tesla P100-PCIE-16GB"
    assert row.get("fan.speed") is None
    assert row.get_int("memory.used") == 0
    assert row.pcie_link_gen_current is None  # not queried
    with pytest.raises(KeyError, match="not queried"):
        row.get("pcie.link.gen.max")


def test_noheader_with_field_list() -> None:
    text = "0, NVIDIA H100 80GB HBM3, 5, 5, 16, 16\n1, NVIDIA H100 80GB HBM3, 4, 5, 8, 16\n"
    fields = ["index", "name", "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max"]
    rows = parse_nvidia_smi_query_gpu(text, fields).rows
    assert [(r.index, r.pcie_link_gen_current, r.pcie_link_width_current) for r in rows] == [(0, 5, 16), (1, 4, 8)]


def test_invalid_field_is_reported() -> None:
    with pytest.raises(ToolReportedError):
        parse_nvidia_smi_query_gpu('Field "pcie.bogus" is not a valid field to query.\n')


@pytest.mark.parametrize("text", ["", "0, NVIDIA H100, 5\n", "name, index\nA\n", 'name, "unterminated\n'])
def test_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nvidia-smi-query-gpu"):
        parse_nvidia_smi_query_gpu(text)
