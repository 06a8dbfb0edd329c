"""GPUDirect RDMA bandwidth: ``ib_write_bw --use_cuda_bus_id=ID`` between two nodes, each GPU with its nearest NIC.

For every GPU of the client node, the NIC ``nvidia-smi topo -m`` puts nearest to it (its rail)
sends from that GPU's memory to the same GPU index on the server node, through that node's
nearest NIC for it: the path NCCL's GPUDirect RDMA takes. Every GPU sends at once (GPUs that
share a NIC take turns), each on its own TCP port and judged on its own figure. A GPU whose memory cannot be
registered (no nvidia_peermem: perftest's ``Couldn't allocate MR``) is an error naming the GPU;
the verdict value is the GPU furthest below its NIC's line rate.

A GPU is named to perftest by its PCI bus id, as nvidia-smi read it (``--use_cuda_bus_id``): ``GPU3``
of ``nvidia-smi topo -m`` is nvidia-smi's index, in PCI order, while ``--use_cuda=3`` is CUDA's,
fastest first unless ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, so on a node of mixed or differently
enumerated GPUs an index can send from another GPU than the one whose NIC was picked. Where the bus
ids are not known, the index is used and the detail says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.probes.affinity import GpuRail
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.probes.rdma import Lane, RdmaPort, RdmaSettings, lane_groups, lanes_at_once
from pytest_fabric.run.cluster import NodePair
from pytest_fabric.transport.base import TransportError
from pytest_fabric.transport.results import CommandResult

__all__ = ["gpu_option", "pair_gpudirect"]

FIX = "load nvidia_peermem (modprobe nvidia_peermem) or use --use_cuda_dmabuf with the open kernel module; see software.gpudirect"
#: what perftest's getopt says of --use_cuda when it was built without CUDA (HAVE_CUDA unset), as most
#: MLNX_OFED / DOCA-OFED perftest packages are: the option does not exist, and peermem is not the cause
NO_CUDA_FIX = ("this perftest was built without CUDA (most MLNX_OFED and DOCA-OFED packages are): build perftest "
               "with CUDA (./autogen.sh && ./configure CUDA_H_PATH=/usr/local/cuda/include/cuda.h && make) and put "
               "that ib_write_bw first on PATH; nvidia_peermem is not the cause")


def built_without_cuda(text: str) -> bool:
    """perftest without CUDA: before 4.5-0.20 getopt refuses ``--use_cuda`` (``unrecognized option
    '--use_cuda=0'``); from then on the option always parses and the run says ``Unsupported memory type``."""
    refused = "--use_cuda" in text and ("unrecognized option" in text or "invalid option" in text)
    return refused or "Unsupported memory type" in text


def _port(ports: Sequence[RdmaPort], device: str) -> RdmaPort | None:
    return next((p for p in ports if p.device == device and p.state == "Active"), None)


def gpu_option(gpu: str, bus_ids: Mapping[str, str]) -> str:
    """perftest's option naming ``gpu`` (``GPU3``): by its bus id where known, else by index."""
    bus = bus_ids.get(gpu)
    return f"--use_cuda_bus_id={bus}" if bus else f"--use_cuda={gpu.removeprefix('GPU')}"


def pair_gpudirect(pair: NodePair, settings: RdmaSettings, *, rails_a: Sequence[GpuRail], rails_b: Sequence[GpuRail],
                   ports_a: Sequence[RdmaPort], ports_b: Sequence[RdmaPort],
                   bus_ids_a: Mapping[str, str] | None = None, bus_ids_b: Mapping[str, str] | None = None) -> Measurement:
    """Each GPU of ``pair.a`` to the same GPU of ``pair.b`` through their nearest NICs, every GPU at once.

    At once as a job's GPUs send, each judged on its own figure against its NIC's line rate; two
    GPUs behind one NIC take turns (:func:`~pytest_fabric.probes.rdma.lane_groups`), so neither is
    judged on half a NIC.
    """
    by_gpu = {r.gpu: r for r in rails_b}
    lanes: list[Lane] = []
    problems = []
    for rail in rails_a:
        peer = by_gpu.get(rail.gpu)
        a_port = _port(ports_a, rail.nics[0]) if rail.nics else None
        b_port = _port(ports_b, peer.nics[0]) if peer is not None and peer.nics else None
        if a_port is None or b_port is None:
            side, device = (pair.a.name, rail.nic_text) if a_port is None else (pair.b.name, peer.nic_text if peer else "no NIC")
            problems.append(f"{rail.gpu}: no Active port of its nearest NIC {device} on {side}")
            continue
        lanes.append(Lane(rail.gpu, a_port, b_port, (gpu_option(rail.gpu, bus_ids_a or {}),),
                          (gpu_option(rail.gpu, bus_ids_b or {}),)))

    def failed(lane: Lane, exc: TransportError) -> MeasurementError:
        result = getattr(exc, "result", None)  # a CommandFailed keeps the whole output, not its tail
        output = f"{result.stdout}\n{result.stderr}" if result is not None else str(exc)
        fix = NO_CUDA_FIX if built_without_cuda(output) else FIX
        what = "ib_write_bw has no --use_cuda (perftest built without CUDA)" if fix is NO_CUDA_FIX else exc.detail
        return MeasurementError(exc.node, f"{lane.name} via {lane.a_port.device} -> {lane.b_port.device}: {what}",
                                command=exc.command, fix=fix)

    done = lanes_at_once(pair, lanes, settings, failed)
    evidence: list[CommandResult] = [e for r in done for e in r.evidence]
    results = []
    for r in done:
        line = min(r.lane.a_port.rate, r.lane.b_port.rate)
        results.append((r.median.value / line.value, r.median, line, r.lane.name, r.lane.a_port.device, r.lane.b_port.device))
    shown = ", ".join(f"{gpu} {a}->{b} {m.display('Gb/s')}" for _, m, _, gpu, a, b in results)
    together = max((len(g) for g in lane_groups(lanes, len(settings.lane_ports))), default=0)
    extra = {"gpus": [{"gpu": gpu, "a": a, "b": b, "gbps": float(m.to("Gb/s"))} for _, m, _, gpu, a, b in results],
             "gpus_at_once": together}
    if problems or not results:
        reason = "; ".join(problems) or f"nvidia-smi topo -m on {pair.a.name} shows no GPU"
        return Measurement(value="absent", missing=reason + (f"; measured: {shown}" if shown else ""),
                           evidence=tuple(evidence), extra=extra)
    _, value, line, gpu, a, b = min(results, key=lambda r: (r[0], r[1].value))
    at_once = f"{together} GPUs at once, " if together > 1 else ""
    by_bus = all(lane.name in (bus_ids_a or {}) and lane.name in (bus_ids_b or {}) for lane in lanes)
    chosen = "GPUs by PCI bus id" if by_bus else "GPUs by index (nvidia-smi gave no bus id: CUDA's order may differ)"
    how = f"ib_write_bw --use_cuda {settings.size_bytes // 2**20} MiB x {settings.qps} QP for {settings.duration_s} s, {chosen}"
    return Measurement(value=value, line_rate=line, evidence=tuple(evidence), extra=extra,
                       detail=f"{how}, {at_once}median of {settings.repeat}; worst {gpu} via {a} -> {b}; GPUs: {shown}")
