"""The GPU health probe on canned dcgmi output: failures and warnings per GPU, a cut table an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.probes import dcgm
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

DATA = Path(__file__).resolve().parents[1] / "data" / "dcgmi-diag"


def node(stdout: str, exit_code: int = 0) -> NodeHandle:
    transport = MockTransport(
        "gpu07", {r"^dcgmi diag -r 2$": CannedCommand(stdout=stdout, exit_code=exit_code)}
    )
    return NodeHandle(Node(name="gpu07", host="10.0.0.7"), ConnectionPool(lambda _n: transport))


def test_dcgm4_failure_names_the_gpu_the_test_and_dcgms_words_and_not_the_warned_gpu() -> None:
    text = (DATA / "dcgm4-r2-4gpu-warn-gpu0-pcie-fail-gpu1-wrapped-constructed.txt").read_text()
    measured = dcgm.diagnose(node(text, exit_code=226), 2)
    assert measured.value == "fail"
    assert measured.detail == (
        "dcgmi diag -r 2: GPU1: pcie (Warning: GPU1: Bandwidth of GPU 1 in direction d2h of 3.11 did not exceed "
        "minimum required bandwidth of 20.00. Verify that your minimum bandwidth setting is appropriate for the "
        "topology of each GPU.)"
    )


def test_dcgm4_warning_alone_passes_and_is_shown() -> None:
    text = (DATA / "dcgm4-r2-4gpu-warn-gpu0-pcie-fail-gpu1-wrapped-constructed.txt").read_text()
    healthy = text.replace(
        "| pcie                      | Fail ", "| pcie                      | Pass "
    ).replace("GPU1: Fail", "GPU1: Pass")
    measured = dcgm.diagnose(node(healthy), 2)
    assert measured.value == "pass", measured.detail
    assert "skipped: targeted_stress" in measured.detail
    assert (
        "warnings: GPU0: software warned (Warning: GPU0: Persistence mode for GPU 0 is disabled."
        in measured.detail
    )


def test_a_table_cut_short_is_an_error_naming_the_node() -> None:
    text = (DATA / "dcgm4.2.3-4gpu-26b9-pod-banner-issue253-excerpt.txt").read_text()
    with pytest.raises(MeasurementError, match="gpu07.*stops after 1 test"):
        dcgm.diagnose(node(text, exit_code=137), 2)


def test_a_memory_fault_nvidia_smi_shows_fails_a_node_the_diagnostic_passed() -> None:
    from pytest_fabric.parsers.nvidia_smi_q import parse_nvidia_smi_q

    text = (DATA / "dcgm4-r2-4gpu-warn-gpu0-pcie-fail-gpu1-wrapped-constructed.txt").read_text()
    healthy = text.replace(
        "| pcie                      | Fail ", "| pcie                      | Pass "
    ).replace("GPU1: Fail", "GPU1: Pass")
    passed = dcgm.diagnose(node(healthy), 2)
    smi = (
        DATA.parent
        / "nvidia-smi-q"
        / "h200-2of8gpu-570-remap-pending-ecc-fabric-in-progress-constructed.txt"
    )
    gpus = parse_nvidia_smi_q(smi.read_text()).gpus
    measured = dcgm.with_memory_faults(passed, gpus, "nvidia-smi -q", ())
    assert (passed.value, measured.value) == ("pass", "fail")
    assert measured.detail.startswith(
        "nvidia-smi -q: GPU1 (00000000:1B:00.0): 3 uncorrectable volatile ECC error(s) (SRAM 1, DRAM 2); "
        "row remapping pending (reset the GPU); dcgmi diag -r 2: 5 test(s) passed"
    )
    assert "GPU0 (" not in measured.detail
    # No fault: the diagnostic's measurement as it was.
    assert dcgm.with_memory_faults(passed, gpus[:1], "nvidia-smi -q", ()) is passed
