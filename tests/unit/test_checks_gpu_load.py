"""checks/gpu_load.py: its settings models, sourced floors by GPU model, and its declarations."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from pytest_fabric.checks import gpu_load


def test_empty_settings_take_the_sourced_defaults() -> None:
    gemm = gpu_load.GemmThroughput.model_validate({})
    assert gemm.min_tflops is None and float(gemm.max_below_peers.value) == 0.10 and float(gemm.duration.value) == 30
    clocks = gpu_load.ClockThrottling.model_validate({})
    assert "sw_power_cap" not in clocks.fail_on and "hw_slowdown" in clocks.fail_on
    assert gpu_load.MemoryBandwidth.model_validate({}).min is None


def test_settings_are_checked_with_the_field_named() -> None:
    with pytest.raises(ValidationError, match="max_below_peers"):
        gpu_load.MemoryBandwidth.model_validate({"max_below_peers": "150%"})
    with pytest.raises(ValidationError, match="min"):
        gpu_load.MemoryBandwidth.model_validate({"min": "4 s"})
    with pytest.raises(ValidationError, match="fail_on"):
        gpu_load.ClockThrottling.model_validate({"fail_on": ["gpu_idle"]})
    with pytest.raises(ValidationError, match="interval"):
        gpu_load.ClockThrottling.model_validate({"interval": "0.01 s"})


@pytest.mark.parametrize(("name", "tflops", "hbm"), [
    ("NVIDIA A100-SXM4-40GB", 218.0, 622.0),
    ("NVIDIA A100-SXM4-80GB", 218.0, 816.0),
    ("NVIDIA A100-PCIE-40GB", 172.0, 622.0),
    ("NVIDIA H100 80GB HBM3", 692.0, 1340.0),
    ("NVIDIA H200", 692.0, 1920.0),
    ("NVIDIA B200", 1575.0, 3200.0),
])
def test_floors_by_the_name_nvidia_smi_reports(name: str, tflops: float, hbm: float) -> None:
    floor = gpu_load.floor_of(name)
    assert floor is not None and (floor.tflops, floor.hbm_gbytes) == (tflops, hbm) and "datasheet" in floor.source


@pytest.mark.parametrize("name", ["NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200 NVL", "Tesla V100-SXM2-32GB"])
def test_no_floor_for_models_without_a_source(name: str) -> None:
    assert gpu_load.floor_of(name) is None


def test_recorded_runs_clear_their_floors() -> None:
    # dcgmproftester on an A100 40GB (DCGM user guide): 253 TFLOP/s; nvbandwidth on 8 H100 SXM: 1519 GB/s
    a100, h100 = gpu_load.floor_of("NVIDIA A100-SXM4-40GB"), gpu_load.floor_of("NVIDIA H100 80GB HBM3")
    assert a100 is not None and h100 is not None
    assert 253 / a100.tflops > 1.1 and 1519 / h100.hbm_gbytes > 1.1


def test_declared_through_the_hook_as_node_checks() -> None:
    declared = gpu_load.pytest_fabric_checks(None)  # type: ignore[arg-type]
    assert [(c.profile_key, c.subject, c.batching) for c in declared] == [
        ("intra_node.gemm_throughput", "node", "wave"),
        ("intra_node.memory_bandwidth", "node", "wave"),
        ("intra_node.clock_throttling", "node", "wave"),
    ]
    assert all("nvidia-smi" in c.tools for c in declared)


def test_preflight_looks_for_the_load_tools_and_names_their_package() -> None:
    from unit.bundled_registry import bundled_registry

    from pytest_fabric.probes.preflight import install_hint, required_tools

    keys = ["intra_node.gemm_throughput", "intra_node.clock_throttling", "intra_node.memory_bandwidth"]
    needed = required_tools(keys, None, checks=bundled_registry())
    assert needed["dcgmproftester12"] == ["intra_node.gemm_throughput", "intra_node.clock_throttling"]
    assert needed["nvbandwidth"] == ["intra_node.memory_bandwidth"]
    assert "datacenter-gpu-manager" in install_hint(["dcgmproftester12"])


def test_a_profile_setting_every_issue_30_key_collects_one_test_per_check_on_local(pytester: pytest.Pytester) -> None:
    profile = pytester.path / "burn.yaml"
    profile.write_text(
        "name: burn\nextends: localhost\n"
        "intra_node:\n  gpu_health: 3\n  gemm_throughput: {}\n  clock_throttling: {}\n  memory_bandwidth: {}\n"
        "  xid_errors: {}\n  pcie_errors: {}\ninter_node:\n  link_history: {}\n"
    )
    keys = ("gpu_health", "gemm_throughput", "clock_throttling", "memory_bandwidth", "xid_errors", "pcie_errors",
            "link_history")
    result = pytester.runpytest_subprocess(
        "--cluster", "local", "--profile", str(profile), "-p", "no:cacheprovider", "--collect-only", "-q",
        "-k", " or ".join(keys))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    collected = [line for line in result.stdout.lines if "::test_" in line]
    assert sorted(line.split("::test_")[1] for line in collected) == sorted(f"{k}[local]" for k in keys), collected
