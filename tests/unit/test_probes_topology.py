"""GPU-NIC affinity and rails from topo -m, DCGM failures per GPU, and switch links from iblinkinfo (pure)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from unit.parsers.corpus import corpus_text

from pytest_fabric.parsers.dcgmi_diag import parse_dcgmi_diag
from pytest_fabric.parsers.iblinkinfo import parse_iblinkinfo
from pytest_fabric.parsers.nvidia_smi_topo import parse_nvidia_smi_topo
from pytest_fabric.probes.affinity import GpuRail, far_gpus, rail_differences, rails
from pytest_fabric.probes.dcgm import failures
from pytest_fabric.probes.switch_links import bad_links

DATA = Path(__file__).resolve().parents[1] / "data"


def test_every_gpu_next_to_its_own_nic() -> None:
    matrix = parse_nvidia_smi_topo((DATA / "nvidia-smi-topo" / "h100-8gpu-nv18-gpu2-gpu5-pcie-only-8nic-constructed.txt").read_text())
    found = rails(matrix)
    assert [(r.gpu, r.nics, r.path) for r in found][:2] == [("GPU0", ("mlx5_0",), "PIX"), ("GPU1", ("mlx5_1",), "PIX")]
    assert far_gpus(found, ["PIX", "PXB"]) == []


def test_recorded_a800_with_four_nics_for_eight_gpus() -> None:
    """The real A800 node: half its GPUs have a NIC on their switch, the others reach one over NODE."""
    found = rails(parse_nvidia_smi_topo(corpus_text("nvidia-smi-topo", "a800-8gpu-nv8-4nic-mlx5.txt")))
    assert found[1] == GpuRail("GPU1", ("mlx5_0",), "PIX") and found[7] == GpuRail("GPU7", ("mlx5_2", "mlx5_3"), "PIX")
    far = far_gpus(found, ["PIX", "PXB"])
    assert [line.split()[0] for line in far] == ["GPU0", "GPU2", "GPU4", "GPU5", "GPU6"]
    assert far[0] == "GPU0 reaches its nearest NIC (mlx5_0 or mlx5_1) only over NODE"
    assert far_gpus(found, ["PIX", "PXB", "NODE"]) == []


def test_rail_differences_name_the_node_and_gpu() -> None:
    same = [GpuRail(f"GPU{i}", (f"mlx5_{i}",), "PIX") for i in range(4)]
    swapped = [same[0], same[1], GpuRail("GPU2", ("mlx5_3",), "PIX"), GpuRail("GPU3", ("mlx5_2",), "PIX")]
    by_node = {f"n{i}": same for i in range(1, 9)} | {"n5": swapped}
    assert rail_differences(by_node) == ["n5: GPU2 -> mlx5_3; 7 others mlx5_2", "n5: GPU3 -> mlx5_2; 7 others mlx5_3"]
    assert rail_differences({"a": same, "b": same[:3]}) == ["b: GPU3 -> absent; 1 other mlx5_3"]


def test_dcgm_failures_per_gpu() -> None:
    parsed = parse_dcgmi_diag((DATA / "dcgmi-diag" / "dcgm3-r3-8gpu-pcie-fail-gpu3-constructed.txt").read_text())
    (line,) = failures(parsed)
    assert line.startswith("GPU3: PCIe (Warning: GPU 3 GPU to Host bandwidth too low.") and line.endswith("errors.)")
    assert failures(parse_dcgmi_diag(corpus_text("dcgmi-diag", "dgx1-8x-v100-dcgm-4.1.1-r1.txt"))) == []


def test_recorded_quantum_switch_with_edr_links_could_be_hdr() -> None:
    ports = parse_iblinkinfo(corpus_text("iblinkinfo", "quantum-hdr-switch-ports-polling-and-edr-downgrade.txt"))
    judged, bad = bad_links(ports, width=4, rate_gbps=Decimal(200), could_be=True)
    assert (judged, len(bad)) == (6, 4)
    assert str(bad[0]) == ("Quantum Mellanox Technologies (0x08c0eb0300add04e) port 21 <-> node3 HCA-2 (LID 40) port 1: "
                           "4X 100 Gb/s; 100 Gb/s, expected 200 Gb/s; iblinkinfo: Could be 53.125 Gbps")
    # Without a rate and with the hints off, the same links are not judged bad.
    assert bad_links(ports, width=4, rate_gbps=None, could_be=False) == (6, [])


def test_a_switch_to_switch_link_is_judged_once() -> None:
    text = (
        "Switch: 0x0000000000000001 leaf1:\n"
        '         101   41[  ] ==( 4X        25.78125 Gbps Active/  LinkUp)==>    103    1[  ] "spine1" ( Could be 53.125 Gbps)\n'
        "Switch: 0x0000000000000003 spine1:\n"
        '         103    1[  ] ==( 4X        25.78125 Gbps Active/  LinkUp)==>    101   41[  ] "leaf1" ( Could be 53.125 Gbps)\n'
    )
    judged, bad = bad_links(parse_iblinkinfo(text), width=None, rate_gbps=None, could_be=True)
    assert judged == 1 and [b.ends for b in bad] == ["leaf1 (0x0000000000000001) port 41 <-> spine1 (LID 103) port 1"]


def test_gpudirect_names_a_gpu_whose_nearest_nic_is_not_active() -> None:
    from types import SimpleNamespace

    from pytest_fabric.probes.gpudirect import pair_gpudirect
    from pytest_fabric.probes.rdma import RdmaPort, RdmaSettings

    pair = SimpleNamespace(a=SimpleNamespace(name="n1"), b=SimpleNamespace(name="n2"))
    down = RdmaPort("n1", "mlx5_0", 1, "Down", "Polling", Decimal(200), "InfiniBand")
    measured = pair_gpudirect(pair, RdmaSettings(), rails_a=[GpuRail("GPU0", ("mlx5_0",), "PIX")],  # type: ignore[arg-type]
                              rails_b=[GpuRail("GPU0", ("mlx5_0",), "PIX")], ports_a=[down], ports_b=[])
    assert measured.missing == "GPU0: no Active port of its nearest NIC mlx5_0 on n1"
