"""gpu_pcie reads each GPU's link under load (MockTransport): never judged on an idle reading or on Max."""

from __future__ import annotations

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.parsers._nvidia_smi_gpu import GpuInfo, NvidiaSmiReport
from pytest_fabric.probes import gpu
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

QUERY = r"^nvidia-smi --query-gpu=index,pstate,pcie\.link\.gen\.current,pcie\.link\.width\.current --format=csv,noheader,nounits$"
LOAD = r"^nvbandwidth -t host_to_all_memcpy_ce$"
FOUND = {r"^command -v nvbandwidth$": "/usr/local/bin/nvbandwidth\n"}


def handle(transport: MockTransport) -> NodeHandle:
    return NodeHandle(Node(name=transport.node, host="10.0.0.1"), ConnectionPool(lambda name: transport))


def idle_a100s(count: int = 2) -> gpu.GpuInventory:
    """What ``nvidia-smi -q -x`` shows of idle A100s: Gen1 now (power saving), Gen4 x16 max."""
    gpus = tuple(
        GpuInfo(index=i, bus_id=f"00000000:{0x07 + i:02X}:00.0", product_name="NVIDIA A100-SXM4-80GB",
                pcie_generation_current=1, pcie_generation_max=4, pcie_link_width_current=16, pcie_link_width_max=16)
        for i in range(count)
    )
    report = NvidiaSmiReport(driver_version="535.54.03", cuda_version="12.2", attached_gpus=count, timestamp=None, gpus=gpus)
    return gpu.GpuInventory("gpu01", report, "nvidia-smi -q -x", ())


def sample_under_load(answers: dict[str, str | CannedCommand], **kwargs: float) -> tuple[gpu.LinksUnderLoad, MockTransport]:
    transport = MockTransport("gpu01", {**FOUND, **answers})
    return gpu.links_under_load(handle(transport), idle_a100s(), interval_s=0, **kwargs), transport


def test_a_link_that_trained_down_fails_on_its_reading_under_load_not_on_its_max() -> None:
    load, transport = sample_under_load({LOAD: "", QUERY: "0, P0, 4, 16\n1, P0, 3, 16\n"}, window_s=0.2)
    healthy = gpu.gpu_pcie(idle_a100s(), 0, load)
    degraded = gpu.gpu_pcie(idle_a100s(), 1, load)
    assert healthy.bounds["generation"].value == 4 and degraded.bounds["generation"].value == 3
    assert "Gen3 x16 under load" in degraded.detail and "max Gen4" in degraded.detail
    assert "trained below its max" in degraded.detail and "nvbandwidth -t host_to_all_memcpy_ce" in degraded.detail
    assert "trained below" not in healthy.detail
    assert transport.started and transport.started[0].command == "nvbandwidth -t host_to_all_memcpy_ce"
    assert not transport.started[0].is_running()  # the copy is stopped once sampling ends


def test_sampling_stops_as_soon_as_every_gpu_reads_its_max_under_load() -> None:
    load, transport = sample_under_load({LOAD: "", QUERY: "0, P0, 4, 16\n1, P0, 4, 16\n"}, window_s=60)
    assert load.samples == 1 and "every GPU had read its max" in load.load_ended
    assert [c for c in transport.calls if c.startswith("nvidia-smi")] == [transport.calls[-1]]


def test_an_idle_sample_does_not_count_and_a_gpu_never_seen_busy_is_an_error() -> None:
    # GPU 1 stays in P8 at Gen1 throughout: it was never loaded, so its link is unknown, not "Gen1".
    load, _ = sample_under_load({LOAD: "", QUERY: "0, P0, 4, 16\n1, P8, 1, 16\n"}, window_s=0.2)
    with pytest.raises(MeasurementError, match=r"GPU 1 .*never showed busy .*states seen: P8"):
        gpu.gpu_pcie(idle_a100s(), 1, load)
    assert gpu.gpu_pcie(idle_a100s(), 0, load).bounds["generation"].value == 4


def test_no_load_generator_is_an_error_that_names_it_and_the_fix() -> None:
    transport = MockTransport("gpu01", {r"^command -v nvbandwidth$": CannedCommand(exit_code=1)})
    with pytest.raises(MeasurementError) as info:
        gpu.links_under_load(handle(transport), idle_a100s(), interval_s=0)
    text = str(info.value)
    assert "nvbandwidth is not on PATH" in text and "https://github.com/NVIDIA/nvbandwidth" in text
    assert not transport.started


def test_a_load_generator_that_fails_is_an_error_with_its_words() -> None:
    class Ended(MockTransport):
        def start(self, command: str, *, timeout: float):  # type: ignore[no-untyped-def]
            process = super().start(command, timeout=timeout)
            process.wait(0)  # it ends by itself before the first sample
            return process

    transport = Ended("gpu01", {**FOUND, LOAD: CannedCommand(exit_code=1, stdout="CUDA_ERROR_NO_DEVICE"), QUERY: "0, P8, 1, 16\n1, P8, 1, 16\n"})
    with pytest.raises(MeasurementError, match=r"load generator failed \(exit 1\): CUDA_ERROR_NO_DEVICE"):
        gpu.links_under_load(handle(transport), idle_a100s(), interval_s=0)
