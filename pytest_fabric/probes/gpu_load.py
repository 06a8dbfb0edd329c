"""GPUs under load on one node: a tensor-core GEMM with its clock-event reasons sampled, and HBM copies.

- :func:`run_gemm_load` runs ``dcgmproftester<CUDA major> --no-dcgm-validation -t 1004 -d SECONDS``
  (DCGM's load generator: half-precision matrix multiply-accumulates on every GPU's tensor cores at
  once) in the background and reads ``nvidia-smi --query-gpu=index,pci.bus_id,clocks.sm,
  clocks_event_reasons.* --format=csv`` every ``interval_s`` while it runs (drivers before R535 name
  the fields ``clocks_throttle_reasons.*``: the probe asks once and falls back).  It is the load
  ``gemm_throughput`` judges and ``clock_throttling`` watches, and the soak's load (issue 31): a
  plain function of a node and a duration.
- :func:`hbm_bandwidth` runs ``nvbandwidth -t device_local_copy``: each GPU copies between two
  buffers of its own memory, one GPU after the other.

Nothing here judges: the figures go to :mod:`pytest_fabric.judge.gpu_peers`.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field

from pytest_fabric.parsers import nvbandwidth
from pytest_fabric.parsers.base import ParseError, ToolReportedError
from pytest_fabric.parsers.dcgmproftester import DcgmProfTesterResult, parse_dcgmproftester
from pytest_fabric.parsers.nvidia_smi_clock_events import (
    PREFIXES,
    ClockEvents,
    parse_clock_events,
    query_fields,
)
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import ToolMissing
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill

__all__ = [
    "DCGM_PACKAGE",
    "GEMM_TOOLS",
    "GemmLoad",
    "GpuRate",
    "HbmCopy",
    "gemm_command",
    "hbm_bandwidth",
    "run_gemm_load",
]

#: dcgmproftester is built per CUDA major version; the newest the node has is used
GEMM_TOOLS = ("dcgmproftester13", "dcgmproftester12", "dcgmproftester11")
DCGM_PACKAGE = "datacenter-gpu-manager (DCGM 3.x or 4.x: it installs dcgmproftester11/12/13)"
GEMM_FIELD = 1004  # DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: the load is tensor-core HMMA
#: beyond the load's own duration: CUDA contexts on 8 GPUs, DCGM's start, the workers' exit
GEMM_GRACE_S = 120.0
NVBANDWIDTH_TIMEOUT_S = 600.0
_NOT_A_FIELD = re.compile(r'Field "[^"]+" is not a valid field')
_KEEP_SAMPLES = 12  # evidence: the first and last samples of a long load, not every one


@dataclass(frozen=True)
class GpuRate:
    """One GPU's GEMM rate: nvidia-smi index, bus id, the median of its readings (TFLOP/s), how many."""

    index: int
    bus_id: str | None
    tflops: float
    readings: int


@dataclass(frozen=True)
class GemmLoad:
    """What one GEMM load on a node gave: each GPU's rate, and each GPU's clock-event reasons as sampled.

    ``reasons[index]`` counts, per reason, the samples it was active in; ``samples`` is how many
    nvidia-smi readings were taken while the load ran (0: the load ended before the first).
    """

    node: str
    command: str
    duration_s: float
    rates: tuple[GpuRate, ...]
    reasons: dict[int, Counter[str]]
    bus_ids: dict[int, str]
    samples: int
    field_prefix: str
    tool: str  # the dcgmproftester build the node had (dcgmproftester12: CUDA 12)
    evidence: tuple[CommandResult, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class HbmCopy:
    """Each GPU's ``device_local_copy`` (GB/s, each byte counted once) and bus id, by nvidia-smi index."""

    node: str
    gbytes_per_s: dict[int, float | None]
    bus_ids: dict[int, str]
    version: str | None
    evidence: tuple[CommandResult, ...]


def gemm_command(tool: str, seconds: int) -> str:
    """The load's command line (``-d`` whole seconds, at least 1)."""
    return fill(f"{{tool}} --no-dcgm-validation -t {GEMM_FIELD} -d {{seconds}}", tool=tool, seconds=str(max(1, seconds)))


def _find_gemm_tool(node: NodeHandle) -> tuple[str, CommandResult]:
    probe = "for t in " + " ".join(GEMM_TOOLS) + '; do command -v "$t" && exit 0; done; exit 1'
    found = node.run(probe, timeout=15, check=False)
    path = found.stdout.strip().splitlines()[0] if found.exit_code == 0 and found.stdout.strip() else ""
    if not path:
        raise ToolMissing(node.name, "/".join(GEMM_TOOLS), command=probe, package=DCGM_PACKAGE)
    return path.rsplit("/", 1)[-1], found


def _sample(node: NodeHandle, prefix: str) -> CommandResult:
    return node.run(f"nvidia-smi --query-gpu={','.join(query_fields(prefix))} --format=csv", timeout=60, check=False)


def _reason_fields(node: NodeHandle) -> tuple[str, tuple[CommandResult, ...]]:
    """The spelling of the reason fields this node's nvidia-smi knows (R535 renamed them), asked once."""
    asked: list[CommandResult] = []
    for prefix in PREFIXES:
        result = _sample(node, prefix)
        asked.append(result)
        if result.exit_code == 127:
            raise ToolMissing(node.name, "nvidia-smi", command=result.command, package="the NVIDIA driver")
        if not _NOT_A_FIELD.search(result.stdout + result.stderr):
            return prefix, tuple(asked)
    raise MeasurementError(
        node.name, "nvidia-smi knows neither clocks_event_reasons.* nor clocks_throttle_reasons.*",
        command=asked[-1].command, fix="update the NVIDIA driver (R450 or later)")


def _idle_bus_ids(result: CommandResult) -> dict[int, str]:
    """Each GPU's bus id from the reading taken before the load (so a load too short to sample still names them)."""
    try:
        return {gpu.index: gpu.bus_id for gpu in parse_clock_events(result.stdout) if gpu.bus_id}
    except ParseError:
        return {}  # the samples under load say why, or the load's own output names the GPUs


def run_gemm_load(node: NodeHandle, seconds: float, *, interval_s: float = 1.0) -> GemmLoad:
    """Run the tensor-core GEMM on every GPU of ``node`` for ``seconds``, sampling clock-event reasons.

    The soak (issue 31) calls this for its load; gemm_throughput and clock_throttling read its result.
    Raises :class:`ToolMissing` (no dcgmproftester) or :class:`MeasurementError` (the load failed, or
    printed no reading; nvidia-smi could not be read) naming the node, the command and the fix.
    """
    tool, found = _find_gemm_tool(node)
    prefix, asked = _reason_fields(node)  # before the load: its seconds are for samples
    command = gemm_command(tool, round(seconds))
    load = node.start(command, timeout=seconds + GEMM_GRACE_S)
    sampled: list[CommandResult] = []
    reasons: dict[int, Counter[str]] = {}
    bus_ids = _idle_bus_ids(asked[-1])
    samples = 0
    # the node kills the load at its timeout; sampling stops then too, whatever the transport says
    deadline = time.monotonic() + seconds + GEMM_GRACE_S
    try:
        time.sleep(min(interval_s, 1.0))  # the workers start their CUDA contexts first
        while load.is_running() and time.monotonic() < deadline:
            result = _sample(node, prefix)
            if not load.is_running():
                break  # read after the load ended: not a sample of it
            sampled.append(result)
            events: tuple[ClockEvents, ...] = parse_or_raise(
                lambda text: parse_clock_events(text), result,
                fix="run the command by hand on the node; an nvidia-smi that cannot read the GPUs needs the driver fixed")
            samples += 1
            for gpu in events:
                reasons.setdefault(gpu.index, Counter()).update(gpu.active)
                if gpu.bus_id:
                    bus_ids[gpu.index] = gpu.bus_id
            time.sleep(interval_s)
    finally:
        finished = load.stop() if load.is_running() else load.wait(timeout=GEMM_GRACE_S)
    parsed = _read_load(node, command, finished)
    rates = _rates(parsed, bus_ids)
    kept = sampled if len(sampled) <= _KEEP_SAMPLES else sampled[: _KEEP_SAMPLES // 2] + sampled[-_KEEP_SAMPLES // 2:]
    return GemmLoad(
        node=node.name, command=command, duration_s=seconds, rates=rates, reasons=reasons, bus_ids=bus_ids,
        samples=samples, field_prefix=prefix, tool=tool, evidence=(found, *asked, *kept, finished),
    )


def _read_load(node: NodeHandle, command: str, finished: CommandResult) -> DcgmProfTesterResult:
    try:
        parsed = parse_dcgmproftester(finished.stdout + "\n" + finished.stderr)
    except ToolReportedError as exc:
        raise MeasurementError(node.name, f"dcgmproftester reported: {exc}", command=command,
                               fix="run it by hand on the node; with DCGM 3.x and 4.x it needs the GPUs free "
                                   "of other jobs and, in a container, CAP_SYS_ADMIN") from exc
    except ParseError as exc:
        tail = (finished.stderr or finished.stdout).strip()[-300:]
        raise MeasurementError(node.name, f"the GEMM load printed no reading (exit {finished.exit_code}): {tail or exc}",
                               command=command, fix="run the command by hand on the node") from exc
    if finished.exit_code != 0:
        tail = (finished.stderr or finished.stdout).strip()[-300:]
        raise MeasurementError(node.name, f"the GEMM load failed (exit {finished.exit_code}): {tail}", command=command,
                               fix="run the command by hand on the node; every GPU must be free and visible")
    return parsed


def _rates(parsed: DcgmProfTesterResult, sampled_bus_ids: dict[int, str]) -> tuple[GpuRate, ...]:
    """Each whole-GPU worker's rate, by nvidia-smi index: matched on the bus id the worker named, else
    DCGM's GPU id (DCGM numbers GPUs in PCI bus order, as nvidia-smi does)."""
    by_bus = {_bus_key(bus): index for index, bus in sampled_bus_ids.items()}
    out = []
    for worker in parsed.by_gpu().values():
        index = by_bus.get(_bus_key(worker.bus_id), worker.gpu) if worker.bus_id else worker.gpu
        out.append(GpuRate(index, worker.bus_id or sampled_bus_ids.get(index), worker.median_tflops, len(worker.gflops)))
    return tuple(sorted(out, key=lambda r: r.index))


def _bus_key(bus: str | None) -> str:
    """``00000000:5D:00.0`` and ``0000:5d:00`` as one key: domain dropped, lower case, function dropped."""
    if not bus:
        return ""
    parts = bus.lower().split(":")
    return ":".join(parts[-2:]).split(".")[0]


def hbm_bandwidth(node: NodeHandle) -> HbmCopy:
    """``nvbandwidth -t device_local_copy`` on ``node``: each GPU's copy within its own memory."""
    command = "nvbandwidth -t device_local_copy"
    result = node.run(command, timeout=NVBANDWIDTH_TIMEOUT_S, check=True)
    parsed = parse_or_raise(nvbandwidth.parse_nvbandwidth, result,
                            fix="run the command by hand on the node (nvbandwidth v0.5 or later has device_local_copy)")
    try:
        local = nvbandwidth.device_local_bandwidths(parsed)
    except KeyError as exc:
        raise MeasurementError(node.name, f"nvbandwidth ran no device_local_copy: {exc}", command=command,
                               fix="install nvbandwidth v0.5 or later (https://github.com/NVIDIA/nvbandwidth)") from exc
    bus_ids = {}
    for index, name in parsed.devices.items():
        if match := re.search(r"\(([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+)\)\s*$", name):
            bus_ids[index] = match.group(1)
    return HbmCopy(node.name, local, bus_ids, parsed.version, (result,))
