"""The software layer's pure judgement: one stack across nodes, minimum versions, preflight readings."""

from __future__ import annotations

import pytest
from unit.bundled_registry import bundled_registry

from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.probes.preflight import (
    gpudirect,
    preflight_from,
    preflight_script,
    required_tools,
)
from pytest_fabric.probes.software import (
    NodeStack,
    below_minimum,
    compare_versions,
    consistency,
    stack_from,
)


def stack(node: str, **versions: str | None) -> NodeStack:
    base: dict[str, str | None] = {"kernel": "5.15.0-105-generic", "driver": "550.90.07", "hca_firmware": "20.35.2000"}
    base.update(versions)
    firmware = {"mlx5_0": base["hca_firmware"]} if base.get("hca_firmware") else {}
    return NodeStack(node, base, firmware)


def test_consistency_names_the_odd_node_against_the_majority() -> None:
    stacks = {f"gpu{i:02d}": stack(f"gpu{i:02d}") for i in range(1, 65)}
    stacks["gpu07"] = stack("gpu07", hca_firmware="20.31.1014")
    assert consistency(stacks, ["hca_firmware", "driver"]) == ["gpu07: HCA firmware 20.31.1014; 63 others 20.35.2000"]


def test_consistency_folds_nodes_and_reports_each_odd_group() -> None:
    stacks = {f"n{i}": stack(f"n{i}") for i in range(1, 9)}
    for n in ("n2", "n3"):
        stacks[n] = stack(n, driver="535.104.05")
    stacks["n8"] = stack("n8", driver=None)
    assert consistency(stacks, ["driver"]) == [
        "n8: driver not found; 5 others 550.90.07",
        "n[2-3]: driver 535.104.05; 5 others 550.90.07",
    ]
    assert consistency({n: stack(n) for n in ("a", "b")}, ["driver", "kernel"]) == []


def test_a_tie_keeps_the_newer_version_as_the_majority() -> None:
    stacks = {"a": stack("a", driver="550.90.07"), "b": stack("b", driver="535.104.05")}
    assert consistency(stacks, ["driver"]) == ["b: driver 535.104.05; 1 other 550.90.07"]


@pytest.mark.parametrize(("a", "b", "want"), [
    ("23.10-1.1.9.0", "23.10", 1), ("5.15.0-91-generic", "5.15.0-105-generic", -1), ("2.21.5", "2.21.5", 0),
    ("12.4", "12.10", -1), ("20.31.1014", "20.35.2000", -1),
])
def test_versions_compare_by_their_numbers(a: str, b: str, want: int) -> None:
    assert compare_versions(a, b) == want


def test_below_minimum_per_component_and_firmware_family() -> None:
    node = NodeStack("n1", {"driver": "535.104.05", "nccl": None, "cuda": "12.4"},
                     {"mlx5_0": "28.39.1002", "mlx5_1": "28.37.1014", "mlx5_8": "22.36.1010"})
    got = below_minimum(node, {"driver": "550.54.15", "nccl": "2.20", "cuda": "12.2",
                               "hca_firmware": "28.39.1002, 22.39.1002"})
    assert got == [
        "driver 535.104.05 is older than the profile's minimum 550.54.15",
        "NCCL not found (the profile asks for at least 2.20)",
        "HCA firmware mlx5_1 28.37.1014 is older than the profile's minimum 28.39.1002",
        "HCA firmware mlx5_8 22.36.1010 is older than the profile's minimum 22.39.1002",
    ]
    assert below_minimum(node, {"hca_firmware": "20.35.2000"}) == [
        "HCA firmware: no adapter of the 20.x family the profile pins (20.35.2000); "
        "found mlx5_0 28.39.1002, mlx5_1 28.37.1014, mlx5_8 22.36.1010"]


STACK_OUTPUT = """@@kernel
5.15.0-105-generic
@@ofed_info
MLNX_OFED_LINUX-23.10-1.1.9.0:
@@rdma_core
2307mlnx47-1.2310119
@@ldconfig
1503 libs found in cache `/etc/ld.so.cache'
\tlibnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2
@@nccl_files
/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5
@@ibstat
CA 'mlx5_0'
\tCA type: MT4129
\tNumber of ports: 1
\tFirmware version: 28.39.1002
\tHardware version: 0
\tNode GUID: 0x946dae0300b1a2c4
\tSystem image GUID: 0x946dae0300b1a2c4
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: 400
\t\tBase lid: 12
\t\tLMC: 0
\t\tSM lid: 1
\t\tCapability mask: 0xa651e848
\t\tPort GUID: 0x946dae0300b1a2c4
\t\tLink layer: InfiniBand
@@ethtool mlx5_0 ib0
driver: mlx5_core[ib_ipoib]
version: 23.10-1.1.9
firmware-version: 28.39.1002 (MT_0000000838)
bus-info: 0000:17:00.0
@@ethtool mlx5_8 eth8
driver: mlx5_core
version: 23.10-1.1.9
firmware-version: 22.36.1010 (MT_0000000359)
bus-info: 0000:ab:00.0
"""


def test_stack_from_the_listing() -> None:
    got = stack_from("n1", STACK_OUTPUT, driver="550.90.07", cuda="12.4")
    assert got.versions == {"kernel": "5.15.0-105-generic", "driver": "550.90.07", "cuda": "12.4", "nccl": "2.21.5",
                            "ofed": "23.10-1.1.9.0", "rdma_core": "2307mlnx47-1.2310119",
                            "hca_firmware": "22.36.1010, 28.39.1002"}
    # ibstat names mlx5_0; ethtool -i adds the Ethernet adapter ibstat did not list, without its PSID.
    assert got.firmware == {"mlx5_0": "28.39.1002", "mlx5_8": "22.36.1010"}
    assert got.tool_versions()["mlnx_ofed"] == "23.10-1.1.9.0" and got.tool_versions()["nccl"] == "2.21.5"
    empty = stack_from("n2", "@@kernel\n6.8.0-45-generic\n@@ofed_info\n@@nccl_files\n", driver=None, cuda=None)
    assert empty.versions["nccl"] is None and empty.versions["ofed"] is None and empty.shown("ofed") == "not found"


PREFLIGHT_OUTPUT = """@@tool iperf3 /usr/bin/iperf3
iperf 3.16 (cJSON 1.7.15)
Linux gpu01 6.8.0-45-generic #45-Ubuntu SMP
@@missing ib_write_bw
@@tool nvbandwidth /usr/local/bin/nvbandwidth
@@gpus
GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)
@@hcas
mlx5_0
mlx5_1
@@lsmod
Module                  Size  Used by
nvidia_uvm           4648960  4
@@nvidia_version
NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build
@@kernel
6.8.0-45-generic
@@memlock
unlimited
@@lspci
"""


def test_preflight_from_the_listing() -> None:
    got = preflight_from("gpu01", PREFLIGHT_OUTPUT)
    assert got.tools == {"iperf3": "/usr/bin/iperf3", "nvbandwidth": "/usr/local/bin/nvbandwidth"}
    assert got.versions == {"iperf3": "3.16"} and got.missing == ("ib_write_bw",)
    assert (got.gpus, got.hcas, got.memlock, got.kernel) == (2, ("mlx5_0", "mlx5_1"), "unlimited", "6.8.0-45-generic")
    assert got.modules == frozenset({"nvidia_uvm"}) and got.open_kernel_module and got.acs is None
    # No peermem, but the open kernel module on 6.8 gives dma-buf.
    assert gpudirect(got, "peermem")[0] is False
    ok, why = gpudirect(got, "either")
    assert ok and why.startswith("nvidia_peermem is not loaded (lsmod); dma-buf available"), why
    old = preflight_from("gpu02", PREFLIGHT_OUTPUT.replace("Open Kernel Module", "Kernel Module"))
    ok, why = gpudirect(old, "dmabuf")
    assert not ok and "the NVIDIA driver is not the open kernel module" in why
    with pytest.raises(MeasurementError, match="lsmod printed nothing"):
        gpudirect(preflight_from("gpu03", "@@gpus\n@@lsmod\n"), "either")


def test_required_tools_follow_the_profile() -> None:
    tools = required_tools(["inter_node.tcp_throughput", "inter_node.error_counters", "storage.sequential_read",
                            "software.min_versions"], "ethernet", ["jq"], bundled_registry())
    assert tools == {"iperf3": ["inter_node.tcp_throughput"], "rdma": ["inter_node.error_counters"],
                     "ethtool": ["inter_node.error_counters"], "fio": ["storage.sequential_read"],
                     "jq": ["software.preflight.tools"]}
    script = preflight_script(tools)
    assert "timeout 5 iperf3 --version" in script and r"printf '@@missing %s\n' jq" in script
    assert "nvbandwidth --" not in preflight_script(["nvbandwidth"])  # it has no version flag: it would run
