"""dcgmi diag tables, proven on the recorded corpus and a DCGM 3 failure sample."""

from __future__ import annotations

from pathlib import Path

import pytest
from unit.parsers.corpus import corpus_text

from pytest_fabric.parsers.base import ParseError, ToolReportedError
from pytest_fabric.parsers.dcgmi_diag import parse_dcgmi_diag

DATA = Path(__file__).resolve().parents[2] / "data" / "dcgmi-diag"


def test_dcgm4_r1_all_pass() -> None:
    result = parse_dcgmi_diag(corpus_text("dcgmi-diag", "dgx1-8x-v100-dcgm-4.1.1-r1.txt"))
    assert (result.dcgm_version, result.driver_version) == ("4.1.1", "570.124.06")
    assert result.gpu_device_ids == ("1db5",) * 8
    assert [(t.category, t.name, t.result) for t in result.tests] == [("Deployment", "software", "Pass")]
    assert result.tests[0].gpu_results == {i: "Pass" for i in range(8)}
    assert result.passed and result.failed_tests == ()


def test_own_sample_dcgm3_pcie_fails_on_gpu3() -> None:
    result = parse_dcgmi_diag((DATA / "dcgm3-r3-8gpu-pcie-fail-gpu3-constructed.txt").read_text())
    assert result.dcgm_version == "3.3.5"
    assert not result.passed
    (failed,) = result.failed_tests
    assert (failed.category, failed.name, failed.gpu_results) == ("Integration", "PCIe", {3: "Fail"})
    assert failed.messages[0].startswith("Warning: GPU 3 GPU to Host bandwidth too low.")
    assert failed.messages[0].endswith("replay errors.")
    results = {t.name: t.result for t in result.tests}
    assert results["Targeted Power"] == "Skip" and results["Memory Bandwidth"] == "Pass"
    assert len(result.tests) == 15


def test_dcgm_error_before_table() -> None:
    with pytest.raises(ToolReportedError, match="host engine"):
        parse_dcgmi_diag("Error: unable to establish a connection to the specified host engine.\n")


@pytest.mark.parametrize("text", ["", "Successfully ran diagnostic for group.\n", "|-----  Stress  ---+---|\n| SM Stress | Maybe |\n"])
def test_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="dcgmi-diag"):
        parse_dcgmi_diag(text)
