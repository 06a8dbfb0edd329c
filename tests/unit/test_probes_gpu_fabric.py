"""gpu_interconnect where NVLink is expected: a GPU the NVSwitch fabric has not registered fails by name."""

from __future__ import annotations

from pathlib import Path

from pytest_fabric.config.inventory import Node
from pytest_fabric.judge.verdict import Expectation, Op, Verdict, judge
from pytest_fabric.parsers.nvidia_smi_q import parse_nvidia_smi_q
from pytest_fabric.parsers.nvidia_smi_xml import parse_nvidia_smi_xml
from pytest_fabric.probes import gpu
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import MockTransport
from pytest_fabric.transport.pool import ConnectionPool

DATA = Path(__file__).resolve().parents[1] / "data"
NVLINK = Expectation(
    "intra_node", "gpu_interconnect", Op.CONTAINS, "nvlink", "intra_node.gpu_interconnect"
)
# Two H200s on one NVSwitch: every pair NVLink in topo -m, whatever the fabric manager did.
TOPO = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tNV18\t0-55\t0\t\tN/A\nGPU1\tNV18\t X \t0-55\t0\t\tN/A\n"


def interconnect(report_text: str, xml: bool = False) -> tuple[object, Verdict]:
    transport = MockTransport("gpu07", {r"^nvidia-smi topo -m$": TOPO})
    handle = NodeHandle(Node(name="gpu07", host="10.0.0.7"), ConnectionPool(lambda _n: transport))
    report = parse_nvidia_smi_xml(report_text) if xml else parse_nvidia_smi_q(report_text)
    inv = gpu.GpuInventory("gpu07", report, "nvidia-smi -q -x" if xml else "nvidia-smi -q", ())
    measured = gpu.with_fabric_state(gpu.gpu_interconnect(handle), inv)
    return measured.value, judge("gpu07", measured, NVLINK)


def test_a_gpu_whose_fabric_registration_is_in_progress_fails_the_node_by_name() -> None:
    text = (
        DATA
        / "nvidia-smi-q"
        / "h200-2of8gpu-570-remap-pending-ecc-fabric-in-progress-constructed.txt"
    ).read_text()
    value, verdict = interconnect(text)
    assert value == "nvlink"  # topo -m alone would pass it
    assert not verdict.passed
    assert "GPU1 (00000000:1B:00.0): NVLink fabric state In Progress, status N/A" in verdict.message
    assert "GPU0 (" not in verdict.message  # registered: not named


def test_completed_with_insufficient_resources_fails_too() -> None:
    text = (
        DATA
        / "nvidia-smi-xml"
        / "h200-2of8gpu-dtd-v13-580-remap-failure-ecc-fabric-insufficient-constructed.xml"
    ).read_text()
    _, verdict = interconnect(text, xml=True)
    assert not verdict.passed
    assert (
        "GPU1 (00000000:1B:00.0): NVLink fabric state Completed, status Insufficient Resources"
        in verdict.message
    )


def test_registered_gpus_pass_and_say_so() -> None:
    text = (
        DATA
        / "nvidia-smi-q"
        / "h200-2of8gpu-570-remap-pending-ecc-fabric-in-progress-constructed.txt"
    ).read_text()
    healthy = text.replace("In Progress", "Completed").replace(
        "Status                                         : N/A",
        "Status                                         : Success",
    )
    _, verdict = interconnect(healthy)
    assert verdict.passed, verdict.message


def test_no_fabric_state_shown_is_not_judged() -> None:
    # A PCIe H100 or a driver before fabric state: nvidia-smi shows N/A, and only topo -m judges.
    text = (
        DATA / "nvidia-smi-xml" / "h100-pcie-trained-gen4-x8-dtd-v12-constructed.xml"
    ).read_text()
    value, verdict = interconnect(text, xml=True)
    assert value == "nvlink" and verdict.passed
