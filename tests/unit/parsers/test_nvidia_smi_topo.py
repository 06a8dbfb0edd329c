"""nvidia-smi topo -m / -mp, proven on the recorded corpus and our own samples."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.nvidia_smi_topo import (
    Link,
    gpu_pairs_without_nvlink,
    nearest_nics,
    parse_nvidia_smi_topo,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "nvidia-smi-topo"


def corpus_text(name: str) -> str:
    """A file of shared/corpus/nvidia-smi-topo; skips when the corpus is not checked out."""
    root = Path(os.environ.get("FABRIC_CORPUS") or Path(__file__).resolve().parents[3].parent / "shared" / "corpus")
    path = root / "nvidia-smi-topo" / name
    if not path.is_file():
        pytest.skip(f"corpus file {path} not present")
    return path.read_text()


def test_a800_nv8_all_to_all_and_nic_affinity() -> None:
    topo = parse_nvidia_smi_topo(corpus_text("a800-8gpu-nv8-4nic-mlx5.txt"))
    assert topo.gpus == tuple(f"GPU{i}" for i in range(8))
    assert topo.nics == ("NIC0", "NIC1", "NIC2", "NIC3")
    assert topo.link(0, 7) == Link("NV", 8)
    assert topo.link(0, 7).text == "NV8"
    assert topo.link("GPU0", "NIC0").kind == "NODE"
    assert topo.link("GPU1", "NIC0").kind == "PIX"
    assert topo.link("GPU0", "NIC2").kind == "SYS"
    assert gpu_pairs_without_nvlink(topo) == []
    assert topo.cpu_affinity["GPU4"] == "32-63,96-127"
    assert topo.numa_affinity["GPU0"] == 0 and topo.numa_affinity["GPU7"] == 1
    assert topo.gpu_numa_id == {f"GPU{i}": None for i in range(8)}
    assert topo.nic_device("NIC3") == "mlx5_3"
    assert nearest_nics(topo, 1) == ("NIC0",)
    assert nearest_nics(topo, 7) == ("NIC2", "NIC3")
    assert nearest_nics(topo, 0) == ("NIC0", "NIC1")  # both NODE: a tie is reported, not hidden


def test_dgx1_hybrid_cube_mesh_has_sys_pairs() -> None:
    topo = parse_nvidia_smi_topo(corpus_text("dgx1-8x-v100-hybrid-cube-mesh-4nic-ansi.txt"))
    assert topo.link(0, 5).kind == "SYS"
    assert topo.link(0, 1) == Link("NV", 1)
    assert topo.link(0, 3) == Link("NV", 2)
    assert topo.link(4, 0) == Link("NV", 2)
    missing = gpu_pairs_without_nvlink(topo)
    assert ("GPU0", "GPU5") in missing and ("GPU0", "GPU1") not in missing
    assert len(missing) == 12  # 28 pairs, each GPU has NVLink to 4 peers: 16 linked pairs
    assert topo.numa_affinity["GPU5"] == 1
    assert topo.gpu_numa_id["GPU5"] is None  # "N/A" after an empty tab cell
    assert nearest_nics(topo, 2) == ("NIC1", "NIC2")
    assert topo.link("NIC3", "GPU4").kind == "PIX"


def test_topo_mp_is_pcie_only_so_every_pair_lacks_nvlink() -> None:
    topo = parse_nvidia_smi_topo(corpus_text("dgx1-8x-v100-topo-mp-pcie-only-view.txt"))
    assert topo.link(0, 1).kind == "PIX"
    assert topo.link(0, 2).kind == "PHB"
    assert len(gpu_pairs_without_nvlink(topo)) == 28
    assert topo.nic_names["NIC3"] == "mlx5_3"


def test_single_gpu_vm_with_ansi_underline() -> None:
    topo = parse_nvidia_smi_topo(corpus_text("h100-80gb-single-gpu-vm-ansi-underline.txt"))
    assert topo.devices == ("GPU0",)
    assert topo.link(0, 0).kind == "X"
    assert topo.cpu_affinity["GPU0"] == "0-19"
    assert topo.numa_affinity["GPU0"] == 0
    assert gpu_pairs_without_nvlink(topo) == []
    assert nearest_nics(topo, 0) == ()


def test_two_pcie_gpus_behind_one_switch() -> None:
    topo = parse_nvidia_smi_topo(corpus_text("2x-rtx2080ti-pcie-pix-no-nvlink.txt"))
    assert topo.link(0, 1).kind == "PIX"
    assert gpu_pairs_without_nvlink(topo) == [("GPU0", "GPU1")]
    assert topo.numa_affinity["GPU1"] == 1
    assert topo.nic_names == {}


def test_pod_with_ten_nics() -> None:
    topo = parse_nvidia_smi_topo(corpus_text("l40s-1gpu-10nic-topo-mp-pod.txt"))
    assert len(topo.nics) == 10
    assert topo.cpu_affinity["GPU0"] == "0,2,4,6,8,10"
    assert topo.link("NIC1", "NIC2").kind == "PIX"
    assert topo.link(0, "NIC9").kind == "NODE"
    assert topo.nic_device("NIC9") == "mlx5_9"


def test_own_sample_one_pcie_only_pair() -> None:
    topo = parse_nvidia_smi_topo((DATA / "h100-8gpu-nv18-gpu2-gpu5-pcie-only-8nic-constructed.txt").read_text())
    assert gpu_pairs_without_nvlink(topo) == [("GPU2", "GPU5")]
    assert topo.link(2, 5).kind == "NODE"
    assert topo.link(0, 1) == Link("NV", 18)
    assert [nearest_nics(topo, i) for i in range(8)] == [(f"NIC{i}",) for i in range(8)]
    assert topo.numa_affinity["GPU6"] == 1


@pytest.mark.parametrize("text", ["", "garbage\n", "GPU0\tGPU1\nGPU0\t X \tNV4\n", "GPU0 GPU1\nGPU0 X FOO\nGPU1 FOO X\n"])
def test_garbage_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError, match="nvidia-smi-topo"):
        parse_nvidia_smi_topo(text)


def test_truncated_matrix_is_unrecognized() -> None:
    text = (DATA / "h100-8gpu-nv18-gpu2-gpu5-pcie-only-8nic-constructed.txt").read_text()
    for cut in range(0, len(text) // 2, 37):
        with pytest.raises(UnrecognizedOutput):
            parse_nvidia_smi_topo(text[:cut])
