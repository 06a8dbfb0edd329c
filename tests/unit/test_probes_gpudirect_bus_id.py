"""GPUDirect names each GPU to perftest by the PCI bus id nvidia-smi read (probes/gpudirect.py), each side
its own: ``--use_cuda=N`` is CUDA's index, fastest first, which need not be nvidia-smi's GPU N."""

from __future__ import annotations

from decimal import Decimal

from unit.test_probes_rdma import ibstat, meeting_node, node

from pytest_fabric.probes import rdma
from pytest_fabric.probes.affinity import GpuRail
from pytest_fabric.probes.gpudirect import gpu_option, pair_gpudirect
from pytest_fabric.run.cluster import NodePair


def _port(node_name: str, device: str) -> rdma.RdmaPort:
    return rdma.RdmaPort(node_name, device, 1, "Active", "LinkUp", Decimal(200), "InfiniBand")


def test_each_side_sends_from_its_gpu_named_by_its_own_bus_id() -> None:
    rails = [GpuRail("GPU0", ("mlx5_0",), "PIX"), GpuRail("GPU1", ("mlx5_1",), "PIX")]
    a = meeting_node("gpu01", "10.0.0.1", ibstat("mlx5_0", "mlx5_1"), count=2)
    b = node("gpu02", "10.0.0.2", ibstat("mlx5_0", "mlx5_1"))
    bus_a = {"GPU0": "00000000:18:00.0", "GPU1": "00000000:2A:00.0"}
    bus_b = {"GPU0": "00000000:19:00.0", "GPU1": "00000000:3B:00.0"}
    measured = pair_gpudirect(NodePair(a, b), rdma.RdmaSettings(repeat=1, ports=(19315, 19316)), rails_a=rails,
                              rails_b=rails, ports_a=[_port("gpu01", "mlx5_0"), _port("gpu01", "mlx5_1")],
                              ports_b=[_port("gpu02", "mlx5_0"), _port("gpu02", "mlx5_1")],
                              bus_ids_a=bus_a, bus_ids_b=bus_b)
    clients = [c for c in a.transport.calls if "ib_write_bw" in c]  # type: ignore[attr-defined]
    servers = [p.command for p in b.transport.started]  # type: ignore[attr-defined]
    assert sorted(c.split("--use_cuda_bus_id=")[1].split()[0] for c in clients) == sorted(bus_a.values())
    assert sorted(c.split("--use_cuda_bus_id=")[1].split()[0] for c in servers) == sorted(bus_b.values())
    assert not any("--use_cuda=" in c for c in clients + servers)
    assert "GPUs by PCI bus id" in measured.detail


def test_without_a_bus_id_the_gpu_is_named_by_index_and_the_detail_says_so() -> None:
    assert gpu_option("GPU3", {}) == "--use_cuda=3"
    assert gpu_option("GPU3", {"GPU3": "00000000:9D:00.0"}) == "--use_cuda_bus_id=00000000:9D:00.0"
