"""GPUs inside one node: inventory, links, copy bandwidth and single-node NCCL.

Commands (one node each, nothing runs across nodes):

- ``nvidia-smi -q -x`` (falls back to ``nvidia-smi -q`` on drivers whose XML
  output is broken or absent): GPU names, bus ids, PCIe link, driver/CUDA.
- ``nvbandwidth -t host_to_all_memcpy_ce`` in the background, sampled with
  ``nvidia-smi --query-gpu=index,pstate,pcie.link.gen.current,pcie.link.width.current
  --format=csv,noheader,nounits``: each GPU's PCIe link while it is busy (see
  :func:`links_under_load`).
- ``nvidia-smi topo -m``: the GPU-GPU link matrix (NV# or a PCIe path).
- ``nvidia-smi nvlink --status``: per-GPU NVLink state (all links inactive).
- ``nvbandwidth -t <testcase>``: copy-engine (CE) bandwidth.  SM copies are
  asymmetric (NVIDIA/nvbandwidth#24), so every figure here is a CE copy.
- ``all_reduce_perf -b S -e S -f 2 -g N -c 1``: bus bandwidth at the profile's size; wrong
  results fail the node (see :func:`node_allreduce`).
- ``lspci -vv -d 15b3:``: PCIe link of Mellanox/NVIDIA NICs, named from
  ``/sys/class/infiniband/*/device``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_fabric.config.units import bandwidth, parse_quantity
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers import (
    lspci,
    nccl_tests,
    nvbandwidth,
    nvidia_smi_nvlink,
    nvidia_smi_q,
    nvidia_smi_query_gpu,
    nvidia_smi_topo,
    nvidia_smi_xml,
)
from pytest_fabric.parsers._nvidia_smi_gpu import GpuInfo, NvidiaSmiReport
from pytest_fabric.parsers.base import ParseError
from pytest_fabric.probes import nccl
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.outcome import judge as judge_result
from pytest_fabric.transport.results import CommandResult

__all__ = [
    "D2D_TESTCASE",
    "D2H_TESTCASE",
    "H2D_TESTCASE",
    "LOAD_TESTCASE",
    "GpuInventory",
    "LinkReading",
    "LinksUnderLoad",
    "gpu_absent",
    "gpu_count",
    "gpu_interconnect",
    "gpu_model",
    "gpu_pcie",
    "host_bandwidth",
    "inventory",
    "links_under_load",
    "nic_pcie",
    "node_allreduce",
    "nvlink_bandwidth",
    "with_fabric_state",
]

D2D_TESTCASE = "device_to_device_memcpy_read_ce"
H2D_TESTCASE = "host_to_device_memcpy_ce"
D2H_TESTCASE = "device_to_host_memcpy_ce"
# The load under which gpu_pcie reads each link: host -> GPU copies on every GPU at once, so no
# GPU idles while another takes its turn (host_to_device_memcpy_ce copies one GPU at a time).
LOAD_TESTCASE = "host_to_all_memcpy_ce"
LINK_FIELDS = ("index", "pstate", "pcie.link.gen.current", "pcie.link.width.current")
LINK_QUERY = f"nvidia-smi --query-gpu={','.join(LINK_FIELDS)} --format=csv,noheader,nounits"
LOAD_WINDOW_S = 120.0  # sample at most this long; nvbandwidth ends sooner on a healthy node
SAMPLE_INTERVAL_S = 0.5
# nvbandwidth on 8 GPUs takes tens of seconds per testcase; a hung GPU must not hang the run.
NVBANDWIDTH_TIMEOUT_S = 600.0
NCCL_TIMEOUT_S = 900.0
MELLANOX_VENDOR = "15b3"  # ConnectX NICs keep the Mellanox PCI vendor id under NVIDIA
NVSMI_FIX = "run `nvidia-smi -q` on the node by hand; a driver/library version mismatch needs a reboot or driver reinstall"


@dataclass(frozen=True)
class GpuInventory:
    """What ``nvidia-smi`` says about a node's GPUs, in nvidia-smi index order, and the commands run."""

    node: str
    report: NvidiaSmiReport
    command: str
    evidence: tuple[CommandResult, ...]

    @property
    def gpus(self) -> tuple[GpuInfo, ...]:
        return self.report.gpus

    def tool_versions(self) -> dict[str, str]:
        """Driver and CUDA versions, for the report's per-node tool table."""
        out: dict[str, str] = {}
        if self.report.driver_version:
            out["nvidia-driver"] = self.report.driver_version
        if self.report.cuda_version:
            out["cuda"] = self.report.cuda_version
        return out


def _run_checked_for_missing(node: NodeHandle, command: str, timeout: float) -> CommandResult:
    """Run ``command`` without failing on exit status, but still raise ToolMissing for exit 127.

    nvidia-smi exits non-zero for answers we want to read (``-q -x`` on some
    drivers, ``nvlink`` when all links are inactive), so the exit status alone
    cannot decide; a missing program, though, must be an error that says so.
    """
    result = node.run(command, timeout=timeout, check=False)
    if result.exit_code == 127:
        judge_result(result, check=True)
    return result


def inventory(node: NodeHandle) -> GpuInventory:
    """The node's GPUs from ``nvidia-smi -q -x``, or ``nvidia-smi -q`` where the XML cannot be read."""
    xml = _run_checked_for_missing(node, "nvidia-smi -q -x", timeout=60)
    evidence: list[CommandResult] = [xml]
    if xml.exit_code == 0:
        try:
            return GpuInventory(node.name, nvidia_smi_xml.parse_nvidia_smi_xml(xml.stdout), xml.command, (xml,))
        except ParseError:
            pass  # some vGPU/old drivers print broken XML; the text log carries the same facts
    text = node.run("nvidia-smi -q", timeout=60, check=False)
    evidence.append(text)
    if text.exit_code != 0 and not text.stdout.strip():
        judge_result(text, check=True)  # raises CommandFailed with the tool's own words
    report = parse_or_raise(nvidia_smi_q.parse_nvidia_smi_q, text, fix=NVSMI_FIX)
    return GpuInventory(node.name, report, text.command, tuple(evidence))


def gpu_count(inv: GpuInventory) -> Measurement:
    """How many GPUs the driver shows, with their names."""
    names: dict[str, int] = {}
    for gpu in inv.gpus:
        names[gpu.product_name or "unnamed GPU"] = names.get(gpu.product_name or "unnamed GPU", 0) + 1
    shown = ", ".join(f"{n} x {name}" for name, n in names.items()) or "none"
    detail = f"{inv.command} shows {shown}"
    if inv.report.attached_gpus is not None and inv.report.attached_gpus != len(inv.gpus):
        detail += f" (driver reports {inv.report.attached_gpus} attached)"
    return Measurement(
        value=parse_quantity(len(inv.gpus)),
        detail=detail,
        evidence=inv.evidence,
        extra={"tool_versions": inv.tool_versions()},
    )


def _missing_gpu(inv: GpuInventory, index: int) -> Measurement:
    return Measurement.absent(
        f"gpu{index} is missing: {inv.command} on {inv.node} shows {len(inv.gpus)} GPU(s) "
        f"({', '.join(g.bus_id or '?' for g in inv.gpus) or 'none'})",
        inv.evidence,
    )


def gpu_model(inv: GpuInventory, index: int) -> Measurement:
    """The product name of the ``index``-th GPU (nvidia-smi order)."""
    if index >= len(inv.gpus):
        return _missing_gpu(inv, index)
    gpu = inv.gpus[index]
    return Measurement(
        value=gpu.product_name or "unnamed",
        detail=f"GPU {index} at {gpu.bus_id}",
        evidence=inv.evidence,
        extra={"tool_versions": inv.tool_versions()},
    )


def gpu_absent(inv: GpuInventory, index: int) -> Measurement | None:
    """The failing measurement for a GPU the node does not show, or None when it is there."""
    return _missing_gpu(inv, index) if index >= len(inv.gpus) else None


@dataclass(frozen=True)
class LinkReading:
    """One GPU in one ``--query-gpu`` sample."""

    pstate: str | None
    generation: int | None
    width: int | None

    @property
    def busy(self) -> bool:
        """P0-P2: the GPU is awake, so its link runs at the speed it trained at (P3+ is power saving)."""
        state = (self.pstate or "").upper()
        return state.startswith("P") and state[1:].isdigit() and int(state[1:]) <= 2


@dataclass(frozen=True)
class LinksUnderLoad:
    """Every GPU's PCIe link as sampled while ``load_command`` kept the GPUs busy."""

    node: str
    load_command: str
    readings: dict[int, tuple[LinkReading, ...]]  # nvidia-smi index -> one reading per sample
    samples: int
    load_ended: str  # why sampling stopped, for messages
    evidence: tuple[CommandResult, ...]


def _all_at_max(readings: dict[int, list[LinkReading]], inv: GpuInventory) -> bool:
    """True once every GPU has been read busy at its maximum generation and width: nothing can read higher."""
    for index, gpu in enumerate(inv.gpus):
        if gpu.pcie_generation_max is None or gpu.pcie_link_width_max is None:
            return False
        if not any(r.busy and r.generation is not None and r.width is not None
                   and r.generation >= gpu.pcie_generation_max and r.width >= gpu.pcie_link_width_max
                   for r in readings.get(index, [])):
            return False
    return True


def links_under_load(
    node: NodeHandle, inv: GpuInventory, *, window_s: float = LOAD_WINDOW_S, interval_s: float = SAMPLE_INTERVAL_S
) -> LinksUnderLoad:
    """Sample every GPU's current PCIe generation and width while ``nvbandwidth`` copies host -> GPU.

    An idle GPU drops its link to Gen1-3 to save power, and the link's Max is
    its capability, which does not change when the link trains down; only a
    reading taken while the GPU is busy says what the link runs at.  The copy
    runs in the background; ``nvidia-smi --query-gpu`` is read every
    ``interval_s`` until every GPU has been seen busy at its maximum (nothing
    can read higher, so the copy is stopped), the copy ends, or ``window_s``
    passes.  Readings keep their performance state, so a sample taken before
    the copy woke a GPU is told apart from one taken under load.
    """
    load_command = f"nvbandwidth -t {LOAD_TESTCASE}"
    found = node.run("command -v nvbandwidth", timeout=15, check=False)
    if found.exit_code != 0 or not found.stdout.strip():
        raise MeasurementError(
            node.name,
            "gpu_pcie reads each link while a host-to-GPU copy keeps the GPU busy (idle, a GPU shows a "
            "power-saving generation, and Max is only what the link could do); the load generator "
            "nvbandwidth is not on PATH",
            command=load_command,
            fix="install nvbandwidth (https://github.com/NVIDIA/nvbandwidth) on the node's PATH, as the "
            "nvlink_bandwidth and host_to_device_bandwidth checks also need",
        )
    readings: dict[int, list[LinkReading]] = {}
    sampled: list[CommandResult] = []
    load = node.start(load_command, timeout=NVBANDWIDTH_TIMEOUT_S)
    deadline = time.monotonic() + window_s
    ended = f"`{load_command}` ended"
    stopped_by_us = False
    try:
        while True:
            running = load.is_running()
            result = node.run(LINK_QUERY, timeout=60)
            sampled.append(result)
            parsed = parse_or_raise(
                lambda text: nvidia_smi_query_gpu.parse_nvidia_smi_query_gpu(text, LINK_FIELDS), result, fix=NVSMI_FIX
            )
            for row in parsed.rows:
                if row.index is not None:
                    readings.setdefault(row.index, []).append(
                        LinkReading(row.get("pstate"), row.pcie_link_gen_current, row.pcie_link_width_current)
                    )
            if _all_at_max(readings, inv):
                ended, stopped_by_us = "stopped once every GPU had read its max under load", True
                break
            if not running:
                break
            if time.monotonic() >= deadline:
                ended, stopped_by_us = f"stopped after the {window_s:g} s sampling window", True
                break
            time.sleep(interval_s)
    finally:
        finished = load.stop() if load.is_running() else load.wait(timeout=30)
    if not stopped_by_us and finished.exit_code != 0:
        raise MeasurementError(
            node.name,
            f"the load generator failed (exit {finished.exit_code}): "
            + (finished.stderr or finished.stdout).strip()[-300:],
            command=load_command,
            fix=f"run `{load_command}` by hand on the node; every GPU must be visible (CUDA_VISIBLE_DEVICES unset)",
        )
    # Every sample would bloat the record on a slow copy; the first and last show the wake-up and the load.
    kept = sampled if len(sampled) <= 12 else sampled[:6] + sampled[-6:]
    return LinksUnderLoad(
        node=node.name,
        load_command=load_command,
        readings={index: tuple(r) for index, r in readings.items()},
        samples=len(sampled),
        load_ended=ended,
        evidence=(found, *kept, finished),
    )


def gpu_pcie(inv: GpuInventory, index: int, load: LinksUnderLoad) -> Measurement:
    """The GPU's PCIe link under load as the bounds ``generation`` and ``width`` (each judged as a floor).

    The best reading among the samples that show the GPU busy (P0-P2) is
    judged: a link that trained down never reads above what it trained at,
    and a healthy one reads its maximum as soon as the copy wakes it.  A GPU
    never seen busy is an error, not a pass on its idle reading or its Max.
    """
    absent = gpu_absent(inv, index)
    if absent is not None:
        return absent
    gpu = inv.gpus[index]
    seen = load.readings.get(index, ())
    busy = [r for r in seen if r.busy]
    how = f"{load.samples} sample(s) of `{LINK_QUERY}` while `{load.load_command}` ran ({load.load_ended})"
    if not busy:
        states = ", ".join(sorted({r.pstate or "?" for r in seen})) or "GPU not in the output"
        raise MeasurementError(
            load.node,
            f"GPU {index} ({gpu.bus_id}) never showed busy (P0-P2) in {how}; states seen: {states}: "
            "its link was not read under load",
            command=load.load_command,
            fix=f"run `{load.load_command}` by hand and watch `{LINK_QUERY}`; every GPU must be visible to it",
        )
    measured = [r for r in busy if r.generation is not None and r.width is not None]
    if not measured:
        raise MeasurementError(
            load.node,
            f"GPU {index} ({gpu.bus_id}): nvidia-smi reports no current PCIe generation/width (N/A)",
            command=LINK_QUERY,
            fix="a VM or MIG instance may hide the PCIe link; measure on the host",
        )
    best = max(measured, key=lambda r: (r.generation or 0, r.width or 0))
    generation, width = int(best.generation or 0), int(best.width or 0)
    maximum, max_width = gpu.pcie_generation_max, gpu.pcie_link_width_max
    note = (
        f"Gen{generation} x{width} under load (best of {len(measured)} busy reading(s), {best.pstate}; {how}); "
        f"before the copy it read Gen{gpu.pcie_generation_current or '?'} x{gpu.pcie_link_width_current or '?'}, "
        f"max Gen{maximum or '?'} x{max_width or '?'}"
    )
    if maximum is not None and generation < maximum or max_width is not None and width < max_width:
        note += ": the link trained below its max"
    return Measurement(
        value=f"Gen{generation} x{width}",
        detail=f"GPU {index} at {gpu.bus_id}: {note}",
        evidence=(*inv.evidence, *load.evidence),
        bounds={"generation": parse_quantity(generation), "width": parse_quantity(width)},
        extra={"pcie": {
            "under_load": {"generation": generation, "width": width, "pstate": best.pstate},
            "idle": {"generation": gpu.pcie_generation_current, "width": gpu.pcie_link_width_current},
            "max_generation": maximum, "max_width": max_width,
            "load": load.load_command, "samples": load.samples,
        }},
    )


def topology(node: NodeHandle) -> tuple[nvidia_smi_topo.TopologyMatrix, CommandResult]:
    """The ``nvidia-smi topo -m`` matrix."""
    result = node.run("nvidia-smi topo -m", timeout=60)
    return parse_or_raise(nvidia_smi_topo.parse_nvidia_smi_topo, result, fix=NVSMI_FIX), result


def gpu_interconnect(node: NodeHandle) -> Measurement:
    """How the node's GPU pairs connect: ``nvlink`` (every pair NV#), ``pcie`` (none) or ``mixed``.

    The value is one of those words so that the profile's ``contains`` test
    cannot be fooled by text; the detail names every PCIe-only pair with its path
    (``GPU2<->GPU5 is SYS``) because that is what someone fixes.
    """
    matrix, result = topology(node)
    gpus = matrix.gpus
    total = len(gpus) * (len(gpus) - 1) // 2
    without = nvidia_smi_topo.gpu_pairs_without_nvlink(matrix)
    pairs_text = ", ".join(f"{a}<->{b} is {matrix.link(a, b).text}" for a, b in without)
    if total == 0:
        value, detail = "none", f"{len(gpus)} GPU in topo -m: no GPU pairs"
    elif not without:
        kinds = sorted({matrix.link(a, b).text for i, a in enumerate(gpus) for b in gpus[i + 1 :]})
        value, detail = "nvlink", f"all {total} GPU pairs NVLink ({', '.join(kinds)})"
    elif len(without) == total:
        value, detail = "pcie", f"no GPU pair has NVLink: {pairs_text}"
    else:
        value, detail = "mixed", f"{len(without)} of {total} GPU pairs PCIe-only: {pairs_text}"
    return Measurement(value=value, detail=detail, evidence=(result,), extra={"pcie_only_pairs": [f"{a}<->{b}" for a, b in without]})


def with_fabric_state(measured: Measurement, inv: GpuInventory) -> Measurement:
    """``gpu_interconnect``'s reading failed by name where a GPU is not registered with the NVLink fabric.

    On NVSwitch systems (HGX H100/H200/B200, GB200) a GPU joins the NVLink fabric
    through the fabric manager; until its state is ``Completed`` with status
    ``Success``, CUDA on it fails (``system not yet initialized``) although ``topo -m``
    already shows its NV# links.  Where nvidia-smi shows no fabric state (``N/A``:
    no NVSwitch, or a driver before 525) there is nothing to judge.
    """
    problems = [f"GPU{gpu.index} ({gpu.bus_id}): {gpu.fabric_problem}" for gpu in inv.gpus if gpu.fabric_problem]
    read = [gpu for gpu in inv.gpus if gpu.fabric_state is not None]
    if not read:
        return measured
    evidence = measured.evidence + inv.evidence
    if not problems:
        detail = f"{measured.detail}; NVLink fabric Completed/Success on all {len(read)} GPUs ({inv.command})"
        return Measurement(value=measured.value, detail=detail, evidence=evidence, extra=measured.extra)
    reason = (
        f"{inv.node}: {len(problems)} of {len(inv.gpus)} GPU(s) not registered with the NVLink fabric "
        f"({inv.command}): {'; '.join(problems)}; check nvidia-fabricmanager (and NVLSM on NVLink 5) on the node"
    )
    return Measurement(value=measured.value, detail=measured.detail, evidence=evidence, extra=measured.extra,
                       missing=reason)


def nvlink_status(node: NodeHandle) -> tuple[nvidia_smi_nvlink.NvlinkStatus, CommandResult]:
    """``nvidia-smi nvlink --status``; a GPU whose links are all down is a finding, not an error."""
    result = _run_checked_for_missing(node, "nvidia-smi nvlink --status", timeout=60)
    return parse_or_raise(nvidia_smi_nvlink.parse_nvidia_smi_nvlink, result, fix=NVSMI_FIX), result


def run_nvbandwidth(node: NodeHandle, testcase: str) -> tuple[nvbandwidth.NvbandwidthResult, nvbandwidth.NvbandwidthTestcase, CommandResult]:
    """One nvbandwidth testcase; an ``ERROR`` or ``waived`` testcase is a MeasurementError."""
    result = node.run(f"nvbandwidth -t {testcase}", timeout=NVBANDWIDTH_TIMEOUT_S)
    parsed = parse_or_raise(nvbandwidth.parse_nvbandwidth, result)
    try:
        case = parsed.testcase(testcase)
    except KeyError as exc:
        raise MeasurementError(node.name, str(exc), command=result.command) from None
    if case.error or case.waived or not case.matrices:
        raise MeasurementError(
            node.name,
            f"nvbandwidth did not measure {testcase}: {case.error or 'waived'}",
            command=result.command,
            fix="check that every GPU is visible (CUDA_VISIBLE_DEVICES unset) and peer access is enabled",
        )
    return parsed, case, result


def _nvbandwidth_versions(parsed: nvbandwidth.NvbandwidthResult) -> dict[str, str]:
    out = {}
    if parsed.version:
        out["nvbandwidth"] = parsed.version.lstrip("v")
    if parsed.driver_version:
        out["nvidia-driver"] = parsed.driver_version
    return out


def nvlink_bandwidth(node: NodeHandle) -> Measurement:
    """The slowest GPU pair's unidirectional CE copy bandwidth (``device_to_device_memcpy_read_ce``).

    The whole GPU x GPU matrix goes into ``extra["matrix"]`` for the report.  The
    check fails outright (``missing``) when a GPU's NVLinks are all inactive or a
    pair could not be measured (``N/A``: no peer access), because a floor per
    pair cannot be met by a pair that moves nothing over NVLink.
    """
    status, status_result = nvlink_status(node)
    parsed, case, result = run_nvbandwidth(node, D2D_TESTCASE)
    matrix = case.matrix()
    gpus = sorted(set(matrix.rows) | set(matrix.columns))
    values: list[list[float | None]] = [[None if a == b else matrix.cells.get((a, b)) for b in gpus] for a in gpus]
    extra: dict[str, Any] = {
        "matrix": {"gpus": [f"GPU{g}" for g in gpus], "values": values, "unit": "GB/s", "testcase": D2D_TESTCASE},
        "tool_versions": _nvbandwidth_versions(parsed),
    }
    evidence = (status_result, result)
    problems = []
    inactive = [g for g in status.gpus if g.all_links_inactive]
    if inactive:
        problems.append("all NVLinks inactive on " + ", ".join(f"GPU{g.index}" for g in inactive))
    unmeasured = [f"GPU{a}->GPU{b}" for a in gpus for b in gpus if a != b and matrix.cells.get((a, b)) is None]
    if unmeasured:
        problems.append(f"no peer copy (N/A) for {len(unmeasured)} pair(s): {', '.join(unmeasured[:8])}" + (" ..." if len(unmeasured) > 8 else ""))
    measured = {(a, b): v for (a, b), v in matrix.cells.items() if a != b and v is not None}
    if not measured:
        problems.append("nvbandwidth measured no GPU pair")
    if problems:
        return Measurement(value="absent", missing="; ".join(problems), evidence=evidence, extra=extra)
    (slow_a, slow_b), slowest = min(measured.items(), key=lambda kv: (kv[1], kv[0]))
    median = statistics.median(measured.values())
    detail = (
        f"slowest pair GPU{slow_a}->GPU{slow_b} {slowest:.2f} GB/s (median of {len(measured)} pairs {median:.2f} GB/s); "
        f"nvbandwidth {D2D_TESTCASE}"
    )
    extra["slowest_pair"] = f"GPU{slow_a}->GPU{slow_b}"
    return Measurement(
        value=bandwidth(slowest, "GB/s"),
        detail=detail,
        evidence=evidence,
        samples=tuple(bandwidth(v, "GB/s") for _, v in sorted(measured.items())),
        extra=extra,
    )


def host_bandwidth(node: NodeHandle, testcase: str) -> Measurement:
    """The slowest GPU's CE copy bandwidth between host memory and GPU (``host_to_device``/``device_to_host``)."""
    parsed, case, result = run_nvbandwidth(node, testcase)
    matrix = case.matrix()
    per_gpu = {column: matrix.cells.get((matrix.rows[0], column)) for column in matrix.columns}
    extra: dict[str, Any] = {
        "per_gpu": {f"GPU{g}": v for g, v in per_gpu.items()},
        "tool_versions": _nvbandwidth_versions(parsed),
    }
    unmeasured = [f"GPU{g}" for g, v in per_gpu.items() if v is None]
    if unmeasured:
        return Measurement(value="absent", missing=f"nvbandwidth {testcase} measured nothing (N/A) for {', '.join(unmeasured)}",
                           evidence=(result,), extra=extra)
    gpu, slowest = min(((g, v) for g, v in per_gpu.items() if v is not None), key=lambda gv: (gv[1], gv[0]))
    return Measurement(
        value=bandwidth(slowest, "GB/s"),
        detail=f"slowest GPU{gpu} {slowest:.2f} GB/s of {len(per_gpu)} GPUs (nvbandwidth {testcase})",
        evidence=(result,),
        samples=tuple(bandwidth(v, "GB/s") for v in per_gpu.values() if v is not None),
        extra=extra,
    )


def node_allreduce(node: NodeHandle, *, size_bytes: int, gpus: int) -> Measurement:
    """Single-node all_reduce bus bandwidth at ``size_bytes`` over ``gpus`` GPUs in one process.

    Wrong results (``#wrong`` > 0, ``Out of bounds values : N FAILED``; nccl-tests exits 1)
    fail the node whatever the bandwidth, as on the multi-node path (:func:`nccl.read_run`);
    a run that cannot be judged raises.
    """
    # -c 1: nccl-tests checks every result against the expected values (its default, made explicit).
    command = f"all_reduce_perf -b {size_bytes} -e {size_bytes} -f 2 -g {gpus} -c 1"
    result = node.run(command, timeout=NCCL_TIMEOUT_S, check=False)
    parsed, corrupted = nccl.read_run(result, fix="run all_reduce_perf by hand on the node; check that every GPU is visible")
    try:
        busbw = nccl_tests.busbw_at(parsed, size_bytes)
    except ParseError as exc:
        raise MeasurementError(node.name, str(exc), command=command) from exc
    version = f" (NCCL {parsed.nccl_version})" if parsed.nccl_version else ""
    value = bandwidth(busbw, "GB/s")
    missing = None
    if corrupted is not None:
        missing = (
            f"all_reduce over {gpus} GPUs of {node.name} returned wrong results: {corrupted} "
            f"(exit code {result.exit_code}). Measured {value.display('GB/s')}, but data was corrupted inside "
            "the node: check its GPUs (dcgmi diag -r 3), their NVLink error counters (nvidia-smi nvlink -e) "
            "and the kernel log for Xid errors"
        )
    return Measurement(
        value=value,
        detail=f"all_reduce_perf busbw at {size_bytes} B over {gpus} GPUs{version}",
        evidence=(result,),
        missing=missing,
        extra={"tool_versions": {"nccl": parsed.nccl_version} if parsed.nccl_version else {}},
    )


# Lists each RDMA device with the PCI function behind it, to name NICs in messages.
_RDMA_DEVICES = 'for d in /sys/class/infiniband/*; do [ -e "$d/device" ] && echo "${d##*/} $(readlink -f "$d/device")"; done; true'


def _rdma_names(node: NodeHandle) -> tuple[dict[str, str], CommandResult]:
    """PCI address (``3b:00.0``, lower case, no domain) -> RDMA device name (``mlx5_3``)."""
    result = node.run(_RDMA_DEVICES, timeout=30, check=False)
    names = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            address = parts[1].rstrip("/").rsplit("/", 1)[-1].lower()
            names[address.split(":", 1)[1] if address.count(":") == 2 else address] = parts[0]
    return names, result


def nic_pcie(node: NodeHandle, ports: Sequence[str] = ()) -> Measurement:
    """The worst PCIe link among the node's Mellanox/NVIDIA NIC functions, as bounds ``generation``/``width``.

    NICs do not drop their link speed when idle, so the trained link
    (``LnkSta``) is judged as is.  Functions without a link status (virtual
    functions) are left out.  Each bound takes its own worst NIC.

    ``ports`` (``mlx5_0/1`` or ``mlx5_0``: the inventory's ``rdma_ports``, else the profile's
    ``ports.names``) are the rails the acceptance is about: only their NICs' functions are judged,
    so a front-end NIC (x8 by design) does not fail the node. Without them every function is.
    """
    result = node.run(f"lspci -vv -d {MELLANOX_VENDOR}:", timeout=60)
    devices = parse_or_raise(lspci.parse_lspci, result) if result.stdout.strip() else []
    names, names_result = _rdma_names(node)
    evidence = (result, names_result)
    wanted = {port.split("/", 1)[0] for port in ports}
    left_out: list[str] = []
    if wanted:
        def rdma_name(device: lspci.LspciDevice) -> str | None:
            bdf = (device.bdf or "").lower()
            return names.get(bdf.split(":", 1)[1] if bdf.count(":") == 2 else bdf)

        left_out = sorted(f"{rdma_name(d) or d.bdf}" for d in devices if rdma_name(d) not in wanted)
        devices = [d for d in devices if rdma_name(d) in wanted]
        missing = sorted(wanted - {rdma_name(d) for d in devices})
        if missing:
            raise MeasurementError(
                node.name, f"no PCI function lspci shows is the NIC of {', '.join(missing)} (named in the rails: "
                f"{', '.join(ports)}); RDMA devices found: {', '.join(sorted(names.values())) or 'none'}",
                command=result.command,
                fix="name the rails as /sys/class/infiniband names their devices (inventory rdma_ports or the "
                    "profile's ports.names), or check the NIC is in the node",
            )
    linked = [d for d in devices if d.link_sta_generation is not None and d.link_sta_width is not None]
    if not devices:
        return Measurement.absent(f"lspci shows no Mellanox/NVIDIA NIC (vendor {MELLANOX_VENDOR}) on {node.name}", evidence)
    if not linked:
        raise MeasurementError(
            node.name,
            "lspci shows the NICs but no LnkSta (link status) for any of them",
            command=result.command,
            fix="lspci needs root to read PCIe capabilities: connect as root or allow sudo lspci",
        )

    def label(device: lspci.LspciDevice) -> str:
        bdf = (device.bdf or "").lower()
        name = names.get(bdf.split(":", 1)[1] if bdf.count(":") == 2 else bdf)  # lspci -D adds the domain
        return f"{name} ({device.bdf})" if name else str(device.bdf)

    worst_gen = min(linked, key=lambda d: (d.link_sta_generation or 0, d.bdf or ""))
    worst_width = min(linked, key=lambda d: (d.link_sta_width or 0, d.bdf or ""))
    downgraded = [f"{label(d)} Gen{d.link_sta_generation} x{d.link_sta_width} of Gen{d.link_cap_generation} x{d.link_cap_width}"
                  for d in linked if d.downgraded]
    detail = f"{len(linked)} NIC function(s); slowest {label(worst_gen)} Gen{worst_gen.link_sta_generation}, narrowest {label(worst_width)} x{worst_width.link_sta_width}"
    if downgraded:
        detail += "; downgraded: " + ", ".join(downgraded)
    if left_out:
        detail += f"; not judged (not a named rail's NIC): {', '.join(left_out)}"
    return Measurement(
        value=f"Gen{worst_gen.link_sta_generation} x{worst_width.link_sta_width}",
        detail=detail,
        evidence=evidence,
        bounds={
            "generation": parse_quantity(worst_gen.link_sta_generation),
            "width": parse_quantity(worst_width.link_sta_width),
        },
        extra={"nics": {label(d): f"Gen{d.link_sta_generation} x{d.link_sta_width}" for d in linked}},
    )
