"""Fake RDMA / GPU hardware for the simulated cluster: a model, and stand-in tools that print it.

Tests describe what each node's fabric looks like (a port that trained at 100G, a symbol-error
counter that grows, a slow cable between two nodes) and install it::

    install_hardware(cluster, {
        "node03": FakeHardware(ports=[FakePort(rate_gbps=100), *default_ports()[1:]]),
        "node04": FakeHardware(ports=[FakePort(counter_growth={"SymbolErrorCounter": 7})]),
        "node05": FakeHardware(slow_peers={"node06": 0.5}),
    })
    try:
        ...  # ibstat, perfquery, ib_write_bw, mpirun all_reduce_perf ... over SSH
    finally:
        uninstall_hardware(cluster)

Nodes not named get ``FakeHardware()`` (4 x HDR 200G InfiniBand, 8 GPUs). The whole cluster's
hardware goes into one JSON file (:data:`HARDWARE_FILE`) next to the stand-ins in every node's
/usr/local/bin, because two-sided tools need the other side's model too: ``mpirun`` computes a
multi-node result from every host's entry, and perftest's two sides exchange theirs over a real
TCP connection between the nodes' namespaces, exactly as perftest exchanges QP numbers.

The stand-ins are one Python program (``standins/fabric_standin.py``) installed under each tool
name; it dispatches on the name it was started as. Outputs follow the recorded real outputs in
the shared corpus and are checked with our own parsers (tests/integration/test_standins.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import os
import shutil
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simcluster.cluster import SimCluster, SimNode
from simcluster.gpu import nccl_nvlink_busbw

__all__ = [
    "HARDWARE_FILE",
    "LINK_FILE",
    "STANDIN_TOOLS",
    "FakeHardware",
    "FakePort",
    "default_ports",
    "hardware_installed",
    "install_hardware",
    "uninstall_hardware",
]

# Next to the stand-ins in each node's /usr/local/bin; the stand-ins find it beside themselves.
HARDWARE_FILE = "fabric-hardware.json"
STANDIN_SOURCE = Path(__file__).parent / "standins" / "fabric_standin.py"
# Every name the multi-call stand-in answers to.
STANDIN_TOOLS: tuple[str, ...] = (
    "ibstat", "ibv_devinfo", "ibdev2netdev", "rdma", "perfquery",
    "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat",
    "mpirun", "all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf",
    "broadcast_perf", "mlnx_qos", "iblinkinfo", "ethtool",
)
# The option tables of the tools the stand-ins imitate (tests/data/option-tables/, each naming its
# source): perftest's getopt_long table and Open MPI's mpirun options. They travel in the model.
OPTION_TABLES_DIR = Path(__file__).resolve().parents[1] / "data" / "option-tables"
OPTION_TABLES = {"perftest": "perftest-6.10.txt", "mpirun": "mpirun-openmpi-4.1.6.txt"}
# Text every installed copy of our stand-in contains: install and uninstall touch only those, so
# another stand-in set (tests/simcluster/gpu.py also provides all_reduce_perf) keeps its tools.
_MARKER = "Stand-ins for RDMA and NCCL tools on a simulated node"
# First LID handed out to InfiniBand ports that do not set one; LID 1 is the subnet manager.
_FIRST_LID = 11


@dataclass
class FakePort:
    """One RDMA port as ibstat / ibv_devinfo / perfquery see it."""

    device: str = "mlx5_0"
    port: int = 1
    state: str = "Active"  # ibstat State: Active, Down, Initializing, Armed
    phys_state: str = "LinkUp"  # ibstat Physical state: LinkUp, Polling, Disabled, ...
    rate_gbps: int = 200  # what the port trained at (ibstat 'Rate')
    link_layer: str = "InfiniBand"  # or "Ethernet" (RoCE)
    active_mtu: int = 4096
    netdev: str = "ib0"
    # perfquery names; the stand-in prints 0 for every counter not named here.
    counters: dict[str, int] = field(default_factory=dict)
    # Added to the stored counters on every perfquery call: errors growing during a run.
    counter_growth: dict[str, int] = field(default_factory=dict)
    lid: int = 0  # 0: install_hardware assigns a cluster-unique LID to InfiniBand ports
    # ib_*_bw on this rail carries at most this (Gb/s) though the port trained at full rate:
    # a bad transceiver or cable on one rail. None: the node's rdma_bw_fraction of line.
    rdma_bw_gbps: float | None = None
    # The switch port at the other end of an InfiniBand cable (perfquery SWITCH_LID PORT):
    # errors on the host-to-switch direction are counted there, not on the HCA.
    switch_counters: dict[str, int] = field(default_factory=dict)
    switch_counter_growth: dict[str, int] = field(default_factory=dict)
    # perfquery (IB) or rdma statistic (RoCE) prints nothing for this port: a reading that
    # must be an error, not "no counter grew".
    empty_counters: bool = False
    # The first N perfquery reads of this port time out: the reading before the run fails.
    fail_reads: int = 0
    # RoCE settings of this port's netdev; None: the node's (FakeHardware.roce_*).
    roce_trust: str | None = None
    roce_pfc: list[int] | None = None
    roce_ecn: list[int] | None = None  # priorities with ECN on (sysfs ecn/roce_np and roce_rp)


def default_ports() -> list[FakePort]:
    """Four HDR InfiniBand ports at 200G, mlx5_0..3 on ib0..3 (a fresh list each call)."""
    return [FakePort(device=f"mlx5_{i}", netdev=f"ib{i}") for i in range(4)]


@dataclass
class FakeHardware:
    """One node's RDMA ports, GPUs and how its links perform."""

    ports: list[FakePort] = field(default_factory=default_ports)
    # ib_*_bw large-message bandwidth as a fraction of the slower side's port rate.
    rdma_bw_fraction: float = 0.98
    rdma_lat_us: float = 1.6  # ib_*_lat typical latency at small sizes
    rdma_lat_p99_us: float = 1.9
    # Peer node name -> fraction of normal bandwidth on that link (a bad cable). Either side's
    # entry applies (the smaller wins); it also caps an NCCL run that includes both nodes.
    slow_peers: dict[str, float] = field(default_factory=dict)
    slow_peer_latency: dict[str, float] = field(default_factory=dict)  # peer -> extra us
    # Fraction of normal bandwidth whenever this node receives (the ib_write_bw / ib_send_bw
    # server, the ib_read_bw client): a receive-only fault, invisible while it only sends.
    rx_fraction: float = 1.0
    # Peer -> fraction of normal bandwidth on the first run of each rail from one of the two to
    # the other (either side's entry applies), normal from then on: a transient pair fault that
    # is gone when the pair is re-measured.
    transient_slow_peers: dict[str, float] = field(default_factory=dict)
    # A rail that retrains (4X <-> 2X): every other ib_*_bw run with this node on either end, from
    # one client to one server, carries this fraction of normal bandwidth (1.0: steady). Its
    # repeats fall on two levels, 196 and 98 Gb/s on a 200G rail at 0.5: unstable, not noise.
    flapping_fraction: float = 1.0
    # A multi-node all_reduce (NCCL_ALGO=Ring) is derived from the rails, never given: each node
    # carries nccl_efficiency x (its ports NCCL uses: NCCL_IB_HCA's, else every Active one) x the
    # slowest of those ports' rate (its rdma_bw_gbps when lower: a bad rail holds every ring back),
    # capped by host_bw_cap_gbps and scaled by rx_fraction; a run gets the minimum over its nodes,
    # times the worst slow_peers factor between them and 0.97 per doubling beyond 2 nodes. 0.9: two
    # nodes of 16 x 100G RoCE carry 180 GB/s of their 200 (shared corpus
    # nccl-tests/all_reduce_perf-2node-16x-a100-sxm4-40gb-oci-roce.txt); 4 x HDR gives 90 GB/s.
    nccl_efficiency: float = 0.9
    # What all of the node's RDMA flows together can move (a PCIe switch or host bottleneck,
    # Gb/s): concurrent ib_*_bw clients on the node share it. None: no shared limit.
    host_bw_cap_gbps: float | None = None
    # The node's leaf switch; with install_hardware(..., spine_gbps=X), flows between nodes on
    # different leaves share X Gb/s of spine capacity (an oversubscribed fabric).
    leaf: str | None = None
    # A single-node run (one host) is derived from the GPUs' NVLink as the GPU stand-in derives it
    # (simcluster.gpu.nvlink_of(gpu_name), nccl_nvlink_busbw).
    # What every NCCL run that includes this node ends in: None (clean), "wrong" (#wrong counts
    # and 'Out of bounds values : N FAILED', exit 1, as nccl-tests reports corrupted data) or
    # "crash" (a rank dies after the rows are printed: no trailer, mpirun exits 139).
    nccl_fault: str | None = None
    gpus: int = 8
    gpu_name: str = "NVIDIA H100 80GB HBM3"
    roce_trust: str = "dscp"  # mlnx_qos 'Priority trust state': dscp or pcp
    roce_pfc: list[int] = field(default_factory=lambda: [3])  # priorities with PFC enabled
    roce_ecn: list[int] = field(default_factory=lambda: [3])  # priorities with ECN enabled
    # How long an ib_*_bw/lat client retries a refused connection (the server may be starting).
    perftest_connect_retry_s: float = 5.0
    # A perftest server with no client gives up after this long, so none is ever left behind.
    perftest_server_timeout_s: float = 120.0
    # perftest -n runs (with this node on either end) last as long as real ones: -n iterations at
    # the modelled rate, so a slow rail run by count takes minutes. A -D run always lasts its -D.
    perftest_real_time: bool = False
    # RoCE traffic in a priority without PFC on both ends (perftest without --tclass/--sl runs in
    # TC 0): the share of its bandwidth a congested lossy class keeps. 1.0: no congestion modelled.
    roce_lossy_bw_fraction: float = 1.0
    # ibstat 'Firmware version' of every CA; None: what the ConnectX generation ships with
    firmware: str | None = None
    # ib_*_bw --use_cuda registers GPU memory (nvidia_peermem loaded); False: it fails as without peermem
    gpudirect: bool = True
    # perftest built with CUDA; False (most MLNX_OFED builds): --use_cuda is an unknown option to getopt
    perftest_cuda: bool = True


def _python_for_nodes() -> str:
    """An interpreter path visible inside the nodes.

    Their /usr/local/bin and /root are other directories (the node's bin dir and home), so an
    interpreter from either (python Docker images, pyenv) would not be found there.
    """
    candidates = ["/usr/bin/python3", sys.executable]
    for path in candidates:
        real = os.path.realpath(path)
        hidden = any(p == d or p.startswith(d + "/") for p in (path, real)
                     for d in ("/usr/local/bin", "/root", "/tmp"))
        if os.access(path, os.X_OK) and not hidden:
            return path
    raise RuntimeError(
        "no python3 that the simulated nodes can see (tried /usr/bin/python3 and "
        f"{sys.executable}); apt-get install python3"
    )


# Directories a node sees as its own (bound over the host's inside its mount namespace).
_NODE_PRIVATE = ("/usr/local/bin", "/root", "/tmp", "/run")


#: The stand-ins' modules. A launcher imports one from the checkout where the nodes can see it, else
#: from the node's own /usr/local/bin, where install_standin_modules copies them: either way python
#: caches the bytecode (it never caches a script's, and compiling the 2,000-line fabric_standin took
#: 0.05 s of the 0.09 s of CPU each start cost: 4,096 iperf3 starts in a 512-node run of 4 rounds).
STANDIN_MODULES = ("standin_base", "fabric_standin", "cpu_free_iperf3", "cpu_free_fio")
_NODE_BIN = "/usr/local/bin"


def _visible_standins() -> str | None:
    """The checkout's standins folder where the nodes see it as the host does, else None."""
    folder = str(STANDIN_SOURCE.resolve().parent)
    return None if any(folder == d or folder.startswith(d + "/") for d in _NODE_PRIVATE) else folder


def standin_launcher(module: str) -> str:
    """A tool that runs ``module.main()``, by a ``python3 -S`` (stdlib only: site's .pth files, a few
    to tens of ms a start on a host with many, are not read)."""
    folder = _visible_standins() or _NODE_BIN
    return (f"#!{_python_for_nodes()} -S\n# {_MARKER} (a launcher: the program is {module}.py)\n"
            f"import sys\nsys.path.insert(0, {folder!r})\nimport {module}\nsys.exit({module}.main())\n")


def standin_module(module: str) -> Any:
    """A stand-in module imported as the nodes import it (its folder on sys.path: they import each
    other by plain name), for tests that check a figure against the stand-ins' own arithmetic."""
    folder = str(STANDIN_SOURCE.parent)
    if folder not in sys.path:
        sys.path.append(folder)
    return importlib.import_module(module)


def install_standin_modules(node: SimNode) -> None:
    """Copy the stand-ins' modules into the node's /usr/local/bin where it cannot see the checkout's."""
    if _visible_standins() is not None:
        return
    for module in STANDIN_MODULES:
        source = STANDIN_SOURCE.parent / f"{module}.py"
        tmp = node.bindir / f".{module}.py.tmp"
        tmp.write_text(source.read_text())
        tmp.replace(node.bindir / f"{module}.py")


# The cpu-free stand-ins' view of a node's link (SimCluster(cpu_free=True)), beside them in the
# node's /usr/local/bin: its tbf rate, its modelled disk, and the option tables of the tools imitated.
LINK_FILE = "fabric-link.json"
CPU_FREE_TABLES = {"iperf3": "iperf3-3.12.txt", "fio": "fio-3.33.txt"}
#: A node disk of the cpu-free fio: an NVMe drive's sequential MB/s (all of a run's jobs together)
#: and 4 KiB random-read IOPS (capped at disk_mbps by the block size)
DEFAULT_DISK_MBPS = 2000
DEFAULT_DISK_IOPS = 200_000


def link_document(node: str, rate_mbit: int | None, disk_mbps: float = DEFAULT_DISK_MBPS,
                  disk_iops: float = DEFAULT_DISK_IOPS) -> dict[str, Any]:
    """What a cpu-free stand-in reads of its node: name, tbf rate (None: unshaped, the veth's speed),
    its disk's sequential MB/s and random-read IOPS."""
    return {"node": node, "rate_mbit": rate_mbit, "disk_mbps": disk_mbps, "disk_iops": disk_iops,
            "option_tables": {tool: (OPTION_TABLES_DIR / name).read_text() for tool, name in CPU_FREE_TABLES.items()}}


#: The cpu-free stand-ins by the tool name each is installed as.
CPU_FREE_TOOLS = {"iperf3": "cpu_free_iperf3", "fio": "cpu_free_fio"}


def cpu_free_standin_script(tool: str = "iperf3") -> str:
    """The stand-in program installed as ``tool`` (iperf3 or fio) on a cpu-free cluster's nodes."""
    return standin_launcher(CPU_FREE_TOOLS[tool])


def spine_dir(cluster: SimCluster) -> Path:
    """Where stand-ins register cross-leaf flows: shared by all nodes (unlike their /tmp)."""
    return Path("/var/tmp") / f"fabric-standin-spine-{cluster.prefix}"


def _cluster_document(cluster: SimCluster, hardware: Mapping[str, FakeHardware],
                      spine_gbps: float | None = None,
                      leaf_uplink_gbps: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The JSON every node gets: each node's hardware, the address->name map, a generation id."""
    unknown = sorted(set(hardware) - {n.name for n in cluster.nodes})
    if unknown:
        raise KeyError(f"install_hardware: no node {', '.join(unknown)} in cluster "
                       f"{cluster.prefix}; have {[n.name for n in cluster.nodes]}")
    nodes: dict[str, Any] = {}
    used = {p.lid for hw in hardware.values() for p in hw.ports if p.lid}
    next_lid = _FIRST_LID
    for node in cluster.nodes:
        entry = dataclasses.asdict(hardware.get(node.name) or FakeHardware())
        for port in entry["ports"]:
            # Ethernet (RoCE) ports have no LID; InfiniBand ones get one unique in the fabric,
            # which is what `perfquery LID PORT` addresses.
            if port["link_layer"].lower() == "infiniband" and not port["lid"]:
                while next_lid in used:
                    next_lid += 1
                port["lid"] = next_lid
                used.add(next_lid)
        entry["address"] = node.address
        # what a single-node all_reduce over NVLink carries, from the GPU model's NVLink
        entry["nccl_local_busbw_gbytes"] = nccl_nvlink_busbw(entry["gpu_name"], int(entry["gpus"]))
        nodes[node.name] = entry
    # One leaf switch per `leaf` (all nodes on one when none is set), LIDs above every HCA's;
    # each IB port is cabled to the next free port of its node's leaf switch.
    switch_lids: dict[str, int] = {}
    switch_ports: dict[str, int] = {}
    for entry in nodes.values():
        leaf = entry.get("leaf") or "leaf1"
        for port in entry["ports"]:
            if port["link_layer"].lower() != "infiniband":
                continue
            if leaf not in switch_lids:
                while next_lid in used:
                    next_lid += 1
                switch_lids[leaf] = next_lid
                used.add(next_lid)
            switch_ports[leaf] = switch_ports.get(leaf, 0) + 1
            port.update(switch_lid=switch_lids[leaf], switch_port=switch_ports[leaf], switch_name=f"switch-{leaf}")
    return {
        # A new id per install: perfquery keeps counter state per id in the node's /tmp, so a
        # reinstall starts from the model's counters, not from an earlier test's.
        "generation": uuid.uuid4().hex[:12],
        "nodes": nodes,
        "addresses": {n.address: n.name for n in cluster.nodes},
        "option_tables": {tool: (OPTION_TABLES_DIR / name).read_text() for tool, name in OPTION_TABLES.items()},
        "spine": {"capacity_gbps": spine_gbps, "flows_dir": str(spine_dir(cluster)),
                  "leaf_uplinks": dict(leaf_uplink_gbps or {})}
        if spine_gbps or leaf_uplink_gbps else None,
    }


def install_hardware(cluster: SimCluster, hardware: Mapping[str, FakeHardware], *,
                     spine_gbps: float | None = None,
                     leaf_uplink_gbps: Mapping[str, float] | None = None) -> None:
    """Describe the cluster's hardware and put the stand-in tools on every node's PATH.

    `hardware` maps node name -> FakeHardware; nodes not named get ``FakeHardware()``. Calling it
    again replaces the model everywhere (and resets perfquery counters). A tool name another
    stand-in set already installed on a node (the GPU stand-ins' all_reduce_perf) is left to it.
    Raises KeyError for a node name the cluster does not have. `leaf_uplink_gbps` maps a leaf to
    what its uplinks carry (Gb/s): cross-leaf flows with an end on that leaf share it (a leaf
    with 1600 Gb/s of ports and 800 of uplinks is 2:1 oversubscribed).
    """
    doc = _cluster_document(cluster, hardware, spine_gbps, leaf_uplink_gbps)
    if spine_gbps or leaf_uplink_gbps:
        spine_dir(cluster).mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1, sort_keys=True)
    script = standin_launcher("fabric_standin")
    for node in cluster.nodes:
        install_standin_modules(node)
        # The model first: a tool that starts meanwhile must find the new model, not none.
        tmp = node.bindir / f".{HARDWARE_FILE}.tmp"
        tmp.write_text(text)
        tmp.replace(node.bindir / HARDWARE_FILE)
        for name in STANDIN_TOOLS:
            if _foreign(node.bindir / name):
                continue  # another stand-in set owns this name on this node; leave it be
            cluster.install_tool(node, name, script)
        _install_sysfs(cluster, node, doc["nodes"][node.name])


# Inside a node: /sys/class/net becomes a copy of itself (the real entries as the same
# symlinks into /sys/devices) plus a directory per modelled RoCE netdev holding the MLNX_OFED
# ECN switches, ecn/roce_np/enable/<prio> and ecn/roce_rp/enable/<prio>. The node's mount
# namespace is private, so no other node and not the host see it.
_SYSFS_TREE = "/run/fabric-standin-sysfs"
_SYSFS_UNMOUNT = "if grep -q ' /sys/class/net ' /proc/self/mounts; then umount /sys/class/net; fi; " \
                 f"rm -rf {_SYSFS_TREE}"


def _install_sysfs(cluster: SimCluster, node: SimNode, entry: dict[str, Any]) -> None:
    roce = [p for p in entry["ports"] if p["link_layer"].lower() != "infiniband"]
    if not roce or node.sshd_pid is None:
        return
    lines = [_SYSFS_UNMOUNT, f"mkdir -p {_SYSFS_TREE}",
             f'for e in /sys/class/net/*; do [ -L "$e" ] && ln -s "$(readlink "$e")" {_SYSFS_TREE}/"${{e##*/}}"; done; true']
    for port in roce:
        on = entry["roce_ecn"] if port.get("roce_ecn") is None else port["roce_ecn"]
        base = f"{_SYSFS_TREE}/{port['netdev']}"
        lines.append(f"rm -rf {base}")
        for role in ("roce_np", "roce_rp"):
            lines.append(f"mkdir -p {base}/ecn/{role}/enable")
            lines += [f"echo {int(prio in on)} > {base}/ecn/{role}/enable/{prio}" for prio in range(8)]
    lines.append(f"mount --bind {_SYSFS_TREE} /sys/class/net")
    done = cluster.exec(node, ["sh", "-ec", "\n".join(lines)], timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"{node.name}: fake ECN sysfs not installed: {done.stderr.strip()[-300:]}")


def _foreign(path: Path) -> bool:
    """True when `path` is a tool some other stand-in set installed (not ours, not absent)."""
    try:
        return _MARKER not in path.read_text(errors="replace")
    except FileNotFoundError:
        return False


def uninstall_hardware(cluster: SimCluster) -> None:
    """Remove our stand-ins (not another set's), the model and perfquery's state from every node.

    Safe to call when nothing is installed, and on nodes whose sshd is stopped (their /tmp is
    gone with their mount namespace anyway).
    """
    for node in cluster.nodes:
        for name in STANDIN_TOOLS:
            if not _foreign(node.bindir / name):
                cluster.remove_tool(node, name)
        (node.bindir / HARDWARE_FILE).unlink(missing_ok=True)
        _clear_node_state(cluster, node)
    shutil.rmtree(spine_dir(cluster), ignore_errors=True)


def _clear_node_state(cluster: SimCluster, node: SimNode) -> None:
    """Delete perfquery's state files from the node's private /tmp (best effort)."""
    if node.sshd_pid is None or node.frozen:
        return
    # The node's /tmp is visible only inside its mount namespace, hence exec, not a host path.
    with contextlib.suppress(Exception):
        cluster.exec(node, ["sh", "-c", f"rm -rf /tmp/.fabric-standin-*; {_SYSFS_UNMOUNT}"], timeout=10)


@contextlib.contextmanager
def hardware_installed(cluster: SimCluster, hardware: Mapping[str, FakeHardware], *,
                       spine_gbps: float | None = None,
                       leaf_uplink_gbps: Mapping[str, float] | None = None) -> Iterator[SimCluster]:
    """install_hardware for the duration of the block, uninstall_hardware however it ends."""
    install_hardware(cluster, hardware, spine_gbps=spine_gbps, leaf_uplink_gbps=leaf_uplink_gbps)
    try:
        yield cluster
    finally:
        uninstall_hardware(cluster)
