"""probes/gpu_load.py on this machine, against the GPU stand-ins (the simulated cluster's, on PATH):
the GEMM load with its clock-event samples, the pre-R535 field names, HBM copies, a missing tool."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from simcluster.gpu import OPTION_TABLES_DIR, STANDIN_SOURCE, FakeGpus

from pytest_fabric.config.inventory import Node
from pytest_fabric.probes import gpu_load
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import ToolMissing
from pytest_fabric.transport.local import LocalTransport
from pytest_fabric.transport.pool import ConnectionPool


def install(bindir: Path, gpus: FakeGpus) -> None:
    """The stand-in under each tool name the probe runs, as tests/simcluster/gpu.py installs it on a node."""
    table = (OPTION_TABLES_DIR / f"nvbandwidth-{gpus.nvbandwidth_version}.txt").read_text()
    script = (f"#!/usr/bin/env python3\n# GPU stand-in (tests/simcluster/gpu.py)\nMODEL_JSON = {gpus.to_json()!r}\n"
              f"NVBANDWIDTH_TABLE = {table!r}\n" + STANDIN_SOURCE.read_text())
    for tool in ("nvidia-smi", "nvbandwidth", "dcgmproftester12"):
        (bindir / tool).write_text(script)
        (bindir / tool).chmod(0o755)


@pytest.fixture
def local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[NodeHandle, Path]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return NodeHandle(Node(name="local", host="localhost"), ConnectionPool(lambda n: LocalTransport(n))), bindir


def test_gemm_load_rates_and_reasons_on_a_pre_r535_driver(local: tuple[NodeHandle, Path]) -> None:
    node, bindir = local
    install(bindir, FakeGpus(gemm_scale={2: 0.7}, throttle_under_load={1: ["sw_thermal_slowdown"]},
                             clock_event_prefix="clocks_throttle_reasons", gemm_report_s=0.2))
    load = gpu_load.run_gemm_load(node, 2, interval_s=0.2)
    assert load.command == "dcgmproftester12 --no-dcgm-validation -t 1004 -d 2"
    assert load.field_prefix == "clocks_throttle_reasons" and load.samples >= 1
    assert [r.index for r in load.rates] == list(range(8))
    assert load.rates[2].bus_id == "00000000:3A:00.0"
    assert load.rates[2].tflops / load.rates[0].tflops == pytest.approx(0.7, abs=0.01)
    assert load.reasons[1]["sw_thermal_slowdown"] == load.samples
    assert load.reasons[0]["sw_power_cap"] == load.samples and "sw_thermal_slowdown" not in load.reasons[0]


def test_hbm_copies_per_gpu_with_bus_ids(local: tuple[NodeHandle, Path]) -> None:
    node, bindir = local
    install(bindir, FakeGpus(hbm_scale={6: 0.7}))
    copy = gpu_load.hbm_bandwidth(node)
    assert len(copy.gbytes_per_s) == 8 and copy.bus_ids[6] == "00000000:ba:00"
    assert copy.gbytes_per_s[6] == pytest.approx(0.7 * copy.gbytes_per_s[0], rel=0.01)


def test_no_dcgmproftester_names_the_package(local: tuple[NodeHandle, Path]) -> None:
    node, _ = local
    with pytest.raises(ToolMissing, match="datacenter-gpu-manager"):
        gpu_load.run_gemm_load(node, 1)
