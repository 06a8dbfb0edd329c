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
    assert [(t.category, t.name, t.result) for t in result.tests] == [
        ("Deployment", "software", "Pass")
    ]
    assert result.tests[0].gpu_results == {i: "Pass" for i in range(8)}
    assert result.passed and result.failed_tests == ()


def test_own_sample_dcgm3_pcie_fails_on_gpu3() -> None:
    result = parse_dcgmi_diag((DATA / "dcgm3-r3-8gpu-pcie-fail-gpu3-constructed.txt").read_text())
    assert result.dcgm_version == "3.3.5"
    assert not result.passed
    (failed,) = result.failed_tests
    assert (failed.category, failed.name, failed.gpu_results) == (
        "Integration",
        "PCIe",
        {3: "Fail"},
    )
    assert failed.messages[0].startswith("Warning: GPU 3 GPU to Host bandwidth too low.")
    assert failed.messages[0].endswith("replay errors.")
    results = {t.name: t.result for t in result.tests}
    assert results["Targeted Power"] == "Skip" and results["Memory Bandwidth"] == "Pass"
    assert len(result.tests) == 15


def test_dcgm_error_before_table() -> None:
    with pytest.raises(ToolReportedError, match="host engine"):
        parse_dcgmi_diag("Error: unable to establish a connection to the specified host engine.\n")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Successfully ran diagnostic for group.\n",
        "|-----  Stress  ---+---|\n| SM Stress | Maybe |\n",
    ],
)
def test_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="dcgmi-diag"):
        parse_dcgmi_diag(text)


# DCGM 4 (issue 20): the 4.x table with per-GPU rows, wrapped messages, and the -j JSON of 3.x and 4.x.

DCGM4_TABLE = "dcgm4-r2-4gpu-warn-gpu0-pcie-fail-gpu1-wrapped-constructed.txt"


def test_dcgm4_table_reads_per_gpu_rows_and_wrapped_warnings() -> None:
    result = parse_dcgmi_diag((DATA / DCGM4_TABLE).read_text())
    assert (result.dcgm_version, result.driver_version) == ("4.2.3", "570.148.08")
    assert [(t.category, t.name, t.result) for t in result.tests] == [
        ("Deployment", "software", "Warn"),
        ("Hardware", "memory", "Pass"),
        ("Integration", "pcie", "Fail"),
        ("Stress", "targeted_stress", "Skip"),
        ("Stress", "memory_bandwidth", "Pass"),
    ]
    software, _, pcie, stress, _ = result.tests
    # The message continued on rows after it is one message, and GPU1..3 after it are results.
    assert software.messages == (
        "Warning: GPU0: Persistence mode for GPU 0 is disabled. Enable persistence mode by running "
        '"nvidia-smi -i <gpuId> -pm 1 " as root.',
    )
    assert software.gpu_results == {0: "Warn", 1: "Pass", 2: "Pass", 3: "Pass"}
    assert pcie.gpu_results == {0: "Pass", 1: "Fail", 2: "Pass", 3: "Pass"}
    assert pcie.messages[0].endswith(
        "required bandwidth of 20.00. Verify that your minimum bandwidth "
        "setting is appropriate for the topology of each GPU."
    )
    assert stress.gpu_results == {g: "Skip" for g in range(4)}
    assert result.failed_tests == (pcie,) and result.skipped == ()


def test_dcgm4_warned_gpu_printed_fail_does_not_fail_the_test() -> None:
    # Diag.cpp prints a warned GPU as 'GPU0: Fail' under the test's 'Warn': a warning, not a failure.
    result = parse_dcgmi_diag((DATA / DCGM4_TABLE).read_text())
    software = result.tests[0]
    assert not software.failed


def test_dcgm4_recorded_excerpt_with_pod_banner_is_skipped_not_fatal() -> None:
    result = parse_dcgmi_diag(
        (DATA / "dcgm4.2.3-4gpu-26b9-pod-banner-issue253-excerpt.txt").read_text()
    )
    assert result.dcgm_version == "4.2.3" and result.gpu_device_ids == ("26b9",) * 4
    assert [(t.name, t.gpu_results) for t in result.tests] == [
        ("software", {i: "Pass" for i in range(4)})
    ]
    assert result.skipped == ("Executing in Pod nvidia-dcgm-rz9cr on Host 10.0.7.139",)
    assert result.skipped_count == 1


def test_dcgm3_recorded_excerpt_cut_mid_table() -> None:
    result = parse_dcgmi_diag(
        (DATA / "dcgm3.3.1-r2-1gpu-1eb8-go-dcgm-issue52-excerpt.txt").read_text()
    )
    assert result.dcgm_version == "3.3.1" and result.gpu_device_ids == ("1eb8",)
    assert len(result.tests) == 7 and result.passed


def test_unknown_rows_are_skipped_and_named() -> None:
    text = (
        (DATA / DCGM4_TABLE)
        .read_text()
        .replace("| memory_bandwidth          | Pass ", "| memory_bandwidth          | Maybe")
    )
    result = parse_dcgmi_diag(text)
    assert "memory_bandwidth" not in {t.name for t in result.tests}
    assert result.skipped[0].startswith("| memory_bandwidth          | Maybe")
    # Its GPU rows belong to no test read: skipped too, not taken as the test before's.
    assert result.skipped_count == 5
    assert result.tests[3].gpu_results == {g: "Skip" for g in range(4)}


def test_not_run_and_cpu_entities() -> None:
    text = (DATA / DCGM4_TABLE).read_text().replace("GPU3: Skip", "CPU0: Not Run")
    stress = parse_dcgmi_diag(text).tests[3]
    assert stress.entity_results == {"CPU0": "Not Run"} and 3 not in stress.gpu_results


def test_dcgm4_json_layout() -> None:
    result = parse_dcgmi_diag(
        (DATA / "dcgm4-r2-j-4gpu-warn-gpu0-pcie-fail-gpu1-constructed.json").read_text()
    )
    assert (result.dcgm_version, result.driver_version) == ("4.2.3", "570.148.08")
    assert result.gpu_device_ids == ("2330",) * 4
    names = [(t.category, t.name, t.result) for t in result.tests]
    assert names == [
        ("Deployment", "software", "Fail"),  # DCGM 4's JSON writes the warning as Fail
        ("Hardware", "memory", "Pass"),
        ("Integration", "pcie", "Fail"),
        ("Stress", "targeted_stress", "Skip"),
        ("Stress", "memory_bandwidth", "Pass"),
    ]
    pcie = result.tests[2]
    assert pcie.gpu_results == {0: "Pass", 1: "Fail", 2: "Pass", 3: "Pass"}
    # The summary repeats GPU1's warning: kept once, with the GPU named.
    assert len(pcie.messages) == 1 and pcie.messages[0].startswith(
        "Warning: GPU1: Bandwidth of GPU 1"
    )


def test_dcgm3_json_layout() -> None:
    result = parse_dcgmi_diag(
        (DATA / "dcgm3-r2-j-2gpu-pcie-fail-gpu1-constructed.json").read_text()
    )
    assert result.dcgm_version == "3.3.1"
    assert len(result.tests) == 12
    (failed,) = result.failed_tests
    assert (failed.category, failed.name, failed.result, failed.gpu_results) == (
        "Integration",
        "PCIe",
        "Fail",
        {0: "Pass", 1: "Fail"},
    )
    assert failed.messages == ("Warning: GPU1: GPU 1 GPU to Host bandwidth too low. 2.74 < 20.00",)
    assert result.tests[0].gpu_results == {0: "Pass", 1: "Pass"}
    assert {t.name: t.result for t in result.tests}["Targeted Power"] == "Skip"


def test_json_runtime_error_is_the_tools_words() -> None:
    text = '{"DCGM Diagnostic": {"runtime_error": "Error: GPU 0 is busy", "version": "4.2.3"}}'
    with pytest.raises(ToolReportedError, match="GPU 0 is busy"):
        parse_dcgmi_diag(text)


@pytest.mark.parametrize(
    "text", ['{"DCGM Diagnostic": {}}', '{"other": 1}', '{"DCGM Diagnostic": ']
)
def test_unreadable_json_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="dcgmi-diag"):
        parse_dcgmi_diag(text)


def test_a_table_cut_before_its_border_says_so() -> None:
    cut = parse_dcgmi_diag(
        (DATA / "dcgm3.3.1-r2-1gpu-1eb8-go-dcgm-issue52-excerpt.txt").read_text()
    )
    whole = parse_dcgmi_diag((DATA / DCGM4_TABLE).read_text() + "some trailing line\n")
    assert not cut.complete and whole.complete
    assert parse_dcgmi_diag(corpus_text("dcgmi-diag", "dgx1-8x-v100-dcgm-4.1.1-r1.txt")).complete


def test_recorded_dcgm4_json_test_with_info_per_gpu() -> None:
    # NVIDIA/DCGM#215 quotes one test of a DCGM 4 `dcgmi diag -r 4 -j` run (it ends with the comma
    # after the test): put it in the document it came from.
    fragment = (
        (DATA / "dcgm4-r4-j-diagnostic-8gpu-info-issue215-excerpt.json-fragment")
        .read_text()
        .rstrip()
        .rstrip(",")
    )
    text = (
        '{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": ['
        + fragment
        + "]}]}}"
    )
    (test,) = parse_dcgmi_diag(text).tests
    assert (test.category, test.name, test.result) == ("Hardware", "diagnostic", "Pass")
    assert test.gpu_results == {g: "Pass" for g in range(8)}
    assert (
        test.messages[2]
        == "Info: GPU0: GPU 0 calculated at approximately 859.08 gigaflops during this test"
    )
    assert len(test.messages) == 8 and not test.failed
