"""GPUs under load (issue 30): ``intra_node.gemm_throughput``, ``intra_node.memory_bandwidth``,
``intra_node.clock_throttling``: settings, declarations, floors by GPU model, and fixtures.

A node whose GPUs all pass DCGM's quick diagnostic can still hold one card with a tensor-core or
HBM fault, or one that slows its clocks as soon as it is busy.  These checks load every GPU:

- ``gemm_throughput``: dense FP16 tensor-core GEMM (``dcgmproftester12 -t 1004``) TFLOP/s per GPU,
  against the model's floor and the node's other GPUs;
- ``clock_throttling``: nvidia-smi's clock-event reasons sampled during that same load (one load
  per node serves both, run for the longer of their ``duration``s);
- ``memory_bandwidth``: HBM copy bandwidth per GPU (``nvbandwidth -t device_local_copy``), against
  the model's floor and the node's other GPUs.

Each check is one test per node that names the failing GPUs by index and bus id, so only that node
is sent back.  ``{}`` takes the floors below, chosen by the GPU model nvidia-smi reports; a model
without one is an error asking for ``min`` (nothing unmeasured passes).  The probe is
:mod:`pytest_fabric.probes.gpu_load` (its :func:`~pytest_fabric.probes.gpu_load.run_gemm_load` is
the soak's load too); the judging is :mod:`pytest_fabric.judge.gpu_peers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pytest
from pydantic import Field, field_validator

from pytest_fabric.checks.base import Check
from pytest_fabric.checks.gpu import node_gpus
from pytest_fabric.config.profile import Finding
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge import gpu_peers
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.probes import gpu_load as probe
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.run.waves import wave

__all__ = [
    "CLOCK_THROTTLING",
    "GEMM_THROUGHPUT",
    "MEMORY_BANDWIDTH",
    "ClockThrottling",
    "GemmThroughput",
    "GpuFloor",
    "MemoryBandwidth",
    "floor_of",
    "gemm_throughput",
    "memory_bandwidth",
    "clock_throttling",
    "pytest_fabric_checks",
]

Reason = Literal["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown", "sw_power_cap"]


@dataclass(frozen=True)
class GpuFloor:
    """A GPU model's sourced floors: ``match`` is a substring of the name nvidia-smi reports."""

    match: str
    tflops: float  # dense FP16 tensor-core GEMM, TFLOP/s, as dcgmproftester -t 1004 reads it
    hbm_gbytes: float  # nvbandwidth device_local_copy, GB/s (each byte counted once)
    source: str


# Floors, most specific names first.  How each is derived (docs/profiles.md, "GPUs under load"):
# - GEMM: 0.7 of the datasheet's dense FP16/BF16 tensor-core peak (0.55 for PCIe cards, held to
#   250-300 W).  Recorded: an A100 40GB (SXM) reads 253 TFLOP/s under dcgmproftester -t 1004, 0.81
#   of 312 (DCGM user guide); an A100-PCIE-40GB 189-197, 0.61 (DCGM 3.3.5, tests/data/dcgmproftester).
# - HBM: 0.8 of half the datasheet's memory bandwidth (a copy reads and writes each byte; nvbandwidth
#   counts it once).  Recorded: 8 H100 SXM read 1519 GB/s each, 0.907 of 3350 / 2 (Hugging Face,
#   The Smol Training Playbook, nvbandwidth -t device_local_copy).
# Datasheet peaks (dense, without sparsity): A100 SXM4/PCIe 312 TFLOP/s, 1555 GB/s (40GB), 2039 GB/s
# (80GB SXM4), 1935 GB/s (80GB PCIe); H100 SXM 989 TFLOP/s, 3350 GB/s; H200 SXM 989 TFLOP/s, 4800
# GB/s; B200 2250 TFLOP/s (HGX B200: 36 PFLOP/s sparse for 8 GPUs), 8000 GB/s.
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (312 TFLOP/s dense FP16/BF16"
FLOORS: tuple[GpuFloor, ...] = (
    GpuFloor("A100-SXM4-80GB", 218.0, 816.0, f"{_A100}; 2039 GB/s HBM2e)"),
    GpuFloor("A100-SXM4-40GB", 218.0, 622.0, f"{_A100}; 1555 GB/s HBM2)"),
    GpuFloor("A100 80GB PCIe", 172.0, 774.0, f"{_A100}; 1935 GB/s HBM2e; a 300 W PCIe card)"),
    GpuFloor("A100-PCIE-40GB", 172.0, 622.0, f"{_A100}; 1555 GB/s HBM2; a 250 W PCIe card)"),
    GpuFloor("H100 80GB HBM3", 692.0, 1340.0, "NVIDIA H100 Tensor Core GPU datasheet, SXM (989 TFLOP/s dense FP16/BF16; 3.35 TB/s HBM3)"),
    GpuFloor("H200", 692.0, 1920.0, "NVIDIA H200 Tensor Core GPU datasheet, SXM (989 TFLOP/s dense FP16/BF16; 4.8 TB/s HBM3e)"),
    GpuFloor("B200", 1575.0, 3200.0, "NVIDIA HGX B200 datasheet (2.25 PFLOP/s dense FP16/BF16 a GPU; 8 TB/s HBM3e)"),
)
#: PCIe and NVL variants of H100/H200 run at other power limits: no sourced floor (set min)
_NO_FLOOR = ("PCIe", "NVL")


def floor_of(model: str) -> GpuFloor | None:
    """The sourced floors of the GPU model nvidia-smi names (``NVIDIA H100 80GB HBM3``); None: none known."""
    if ("H100" in model or "H200" in model) and any(word in model for word in _NO_FLOOR):
        return None
    return next((f for f in FLOORS if f.match in model), None)


class _Peers(Finding):
    OK: ClassVar[str] = "pass"
    #: a GPU more than this below the median of the node's other GPUs fails: recorded healthy nodes'
    #: GPUs lie within 1% of each other (8 H100s' device_local_copy 1518.86-1519.60 GB/s; an A100's
    #: dcgmproftester readings 250.4-254.0 TFLOP/s), so 10% is ten times that spread
    max_below_peers: QuantityField = Field(default_factory=lambda: parse_quantity("10%"))

    @field_validator("max_below_peers")
    @classmethod
    def _peers(cls, value: Quantity) -> Quantity:
        parsed = parse_quantity(value, dimension=Dimension.PERCENT)
        if not 0 < float(parsed.value) < 1:
            raise ValueError("max_below_peers: a share between 0% and 100% (10%: a GPU 10% below its peers fails)")
        return parsed


class GemmThroughput(_Peers):
    """Dense FP16 tensor-core GEMM per GPU for ``duration`` (``dcgmproftester12 -t 1004``): at least
    ``min_tflops`` (default: the model's sourced floor) and within ``max_below_peers`` of its node's other GPUs."""

    min_tflops: float | None = Field(default=None, gt=0)
    duration: QuantityField = Field(default_factory=lambda: parse_quantity("30 s"))


class MemoryBandwidth(_Peers):
    """HBM copy bandwidth per GPU (``nvbandwidth -t device_local_copy``): at least ``min`` (default: the
    model's sourced floor) and within ``max_below_peers`` of its node's other GPUs."""

    min: QuantityField | None = None

    @field_validator("min")
    @classmethod
    def _min(cls, value: Quantity | None) -> Quantity | None:
        return None if value is None else parse_quantity(value, dimension=Dimension.BANDWIDTH)


_FAILING: tuple[Reason, ...] = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
assert set(_FAILING) == set(gpu_peers.FAILING_REASONS)


class ClockThrottling(Finding):
    """No clock-event reason of ``fail_on`` on any GPU while the GEMM load runs for ``duration``
    (nvidia-smi read every ``interval``); the others seen (SW power cap) are reported."""

    OK: ClassVar[str] = "pass"
    fail_on: list[Reason] = Field(default_factory=lambda: list(_FAILING))
    duration: QuantityField = Field(default_factory=lambda: parse_quantity("30 s"))
    interval: QuantityField = Field(default_factory=lambda: parse_quantity("1 s"))

    @field_validator("interval")
    @classmethod
    def _interval(cls, value: Quantity) -> Quantity:
        parsed = parse_quantity(value, dimension=Dimension.TIME)
        if not 0.1 <= float(parsed.value) <= 60:
            raise ValueError("interval: between 0.1 s and 60 s (nvidia-smi takes ~0.1 s a reading)")
        return parsed


# start_s: CUDA contexts on every GPU and DCGM's start before the first reading, and the workers' exit.
GEMM_THROUGHPUT = Check("gemm_throughput", "intra_node", GemmThroughput, "node", "wave",
                        tools=("nvidia-smi", "dcgmproftester12"), typical_s=30.0, start_s=10.0)
CLOCK_THROTTLING = Check("clock_throttling", "intra_node", ClockThrottling, "node", "wave",
                         tools=("nvidia-smi", "dcgmproftester12"), typical_s=30.0, start_s=10.0)
# device_local_copy: 8 GPUs one after the other, each a few seconds of copies
MEMORY_BANDWIDTH = Check("memory_bandwidth", "intra_node", MemoryBandwidth, "node", "wave",
                         tools=("nvidia-smi", "nvbandwidth"), typical_s=15.0)


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """The family's declarations, registered as an extension's are."""
    return [GEMM_THROUGHPUT, MEMORY_BANDWIDTH, CLOCK_THROTTLING]


def _state(request: pytest.FixtureRequest) -> FabricState:
    state = get_state(request.config)
    assert state is not None
    return state


def _seconds(value: Quantity) -> float:
    return float(parse_quantity(value, dimension=Dimension.TIME).value)


def node_gemm_load(request: pytest.FixtureRequest, node: NodeHandle) -> probe.GemmLoad:
    """The node's one GEMM load of the run, shared by gemm_throughput and clock_throttling: as long as
    the longer of their durations, sampled at clock_throttling's interval (1 s when it is not set)."""
    state = _state(request)
    gemm: Any = state.profile.spec("intra_node", "gemm_throughput")
    clocks: Any = state.profile.spec("intra_node", "clock_throttling")
    seconds = max(_seconds(s.duration) for s in (gemm, clocks) if s is not None)
    interval = _seconds(clocks.interval) if clocks is not None else 1.0
    return state.once.get("gpu gemm load", node.name, lambda: probe.run_gemm_load(node, seconds, interval_s=interval))


def _model(request: pytest.FixtureRequest, node: NodeHandle) -> str:
    gpus = node_gpus(request, node).gpus
    return gpus[0].product_name or "" if gpus else ""


def _floor(request: pytest.FixtureRequest, node: NodeHandle, given: float | None, key: str, what: str) -> tuple[float, str]:
    """The floor the profile gives, else the model's sourced one; neither is an error naming the key to set."""
    if given is not None:
        return given, "the profile's"
    model = _model(request, node)
    found = floor_of(model)
    if found is None:
        raise MeasurementError(
            node.name, f"no sourced {what} floor for GPU model {model or '(unnamed)'}",
            command="nvidia-smi -q -x", fix=f"set {key} in the profile (the floors known: "
            + ", ".join(f.match for f in FLOORS) + ")")
    return (found.tflops if what == "GEMM" else found.hbm_gbytes), f"{found.match}'s ({found.source})"


def _finding(judged: gpu_peers.PeerJudgement, head: str, evidence: tuple[Any, ...], extra: dict[str, Any]) -> Measurement:
    if judged.ok:
        return Measurement(value="pass", detail=f"{head}: " + "; ".join(judged.lines), evidence=evidence, extra=extra)
    return Measurement(value="fail", detail=f"{head}: " + "; ".join(judged.failures)
                       + ("; all: " + "; ".join(judged.lines) if judged.lines else ""), evidence=evidence, extra=extra)


@pytest.fixture
@wave("node")
def gemm_throughput(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """Every GPU's dense FP16 GEMM rate: at least the floor, and within max_below_peers of its siblings."""
    settings = spec(GEMM_THROUGHPUT)
    # the floor first: a model without one errors before the GPUs are loaded for nothing
    floor, whose = _floor(request, node, settings.min_tflops, "intra_node.gemm_throughput.min_tflops", "GEMM")
    load = node_gemm_load(request, node)
    figures = [gpu_peers.GpuFigure(r.index, r.bus_id, r.tflops) for r in load.rates]
    judged = gpu_peers.judge_figures(figures, floor=floor, max_below_peers=float(settings.max_below_peers.value),
                                     unit="TFLOP/s")
    extra = {"tflops": {f"GPU{r.index}": round(r.tflops, 1) for r in load.rates}, "floor_tflops": floor,
             "load_tool": load.tool}
    head = f"{load.command} (median of each GPU's readings; floor {floor:.0f} TFLOP/s, {whose})"
    return _finding(judged, head, load.evidence, extra)


@pytest.fixture
@wave("node")
def clock_throttling(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """No GPU shows a failing clock-event reason while the GEMM load runs."""
    settings = spec(CLOCK_THROTTLING)
    load = node_gemm_load(request, node)
    if load.samples == 0:
        raise MeasurementError(node.name, "the GEMM load ended before nvidia-smi was read once under it",
                               command=load.command, fix="give clock_throttling a longer duration")
    judged = gpu_peers.judge_reasons(load.reasons, load.bus_ids, load.samples, failing=settings.fail_on)
    extra = {"reasons": {f"GPU{i}": dict(c) for i, c in sorted(load.reasons.items())}, "samples": load.samples,
             "fields": load.field_prefix}
    head = (f"{load.samples} nvidia-smi {load.field_prefix}.* samples under `{load.command}`"
            + ("" if judged.failures or judged.lines else ": no reason active on any GPU"))
    return _finding(judged, head, load.evidence, extra)


@pytest.fixture
@wave("node")
def memory_bandwidth(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """Every GPU's HBM copy bandwidth: at least the floor, and within max_below_peers of its siblings."""
    settings = spec(MEMORY_BANDWIDTH)
    given = float(settings.min.to("GB/s")) if settings.min is not None else None
    floor, whose = _floor(request, node, given, "intra_node.memory_bandwidth.min", "HBM")
    copy = probe.hbm_bandwidth(node)
    figures = [gpu_peers.GpuFigure(i, copy.bus_ids.get(i), v) for i, v in sorted(copy.gbytes_per_s.items())]
    judged = gpu_peers.judge_figures(figures, floor=floor, max_below_peers=float(settings.max_below_peers.value),
                                     unit="GB/s")
    extra = {"gbytes_per_s": {f"GPU{i}": v for i, v in sorted(copy.gbytes_per_s.items())}, "floor_gbytes_per_s": floor,
             **({"tool_versions": {"nvbandwidth": copy.version}} if copy.version else {})}
    head = f"nvbandwidth -t device_local_copy (each byte counted once; floor {floor:.0f} GB/s, {whose})"
    return _finding(judged, head, copy.evidence, extra)
