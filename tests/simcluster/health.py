"""A node's kernel log and PCIe AER counters for the simulated cluster: a model, and stand-ins that show it.

Tests describe what a node logged (an Xid 79, forty link-downs of a port before the run) and which
AER errors its GPUs and NICs counted, and install it on one node::

    install_health(cluster, "node03", FakeHealth(kernel_log=[xid_line("0000:2a:00", 79, 120)]))
    try:
        ...  # dmesg, journalctl -k, /sys/bus/pci/devices/*/aer_dev_* over SSH
    finally:
        uninstall_health(cluster, "node03")

``dmesg`` and ``journalctl`` are one program (``standins/health_standin.py``) with the node's log
baked in, printing util-linux's and systemd's formats (tests/data/kernel-log). The AER files are a
tree bound over /sys/bus/pci/devices inside the node's own mount namespace (no other node and not
the host see it): a directory per GPU and NIC of the GPU stand-ins' addresses, with ``vendor``,
``class`` and the three ``aer_dev_*`` files as Linux prints them. PCIe replays are the GPU
stand-ins' (``FakeGpus(replays=...)``); port error counters the RDMA stand-ins' (``FakePort(counters=...)``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from simcluster.cluster import SimCluster, SimNode

__all__ = ["HEALTH_TOOLS", "FakeHealth", "GPU_BUS_IDS", "NIC_BUS_IDS", "install_health", "link_line",
           "uninstall_health", "xid_line"]

STANDIN_SOURCE = Path(__file__).parent / "standins" / "health_standin.py"
HEALTH_TOOLS: tuple[str, ...] = ("dmesg", "journalctl")
_MARKER = "Kernel-log stand-in for the simulated cluster"
# The addresses the GPU stand-ins' nvidia-smi and lspci print (standins/gpu_standin.py GPU_BUS, NIC_BUS)
GPU_BUS_IDS = tuple(f"0000:{b}:00.0" for b in ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db"))
NIC_BUS_IDS = tuple(f"0000:{b}:00.0" for b in ("17", "29", "39", "5c", "99", "aa", "b9", "da"))
# drivers/pci/pcie/aer.c: the names each aer_dev_* file lists, then its total
AER_CORRECTABLE = ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr", "HeaderOF")
AER_UNCORRECTABLE = ("Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP",
                     "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr",
                     "PoisonTLPBlocked")
_AER_FILES = {"aer_dev_correctable": (AER_CORRECTABLE, "TOTAL_ERR_COR"),
              "aer_dev_fatal": (AER_UNCORRECTABLE, "TOTAL_ERR_FATAL"),
              "aer_dev_nonfatal": (AER_UNCORRECTABLE, "TOTAL_ERR_NONFATAL")}
_SYSFS_TREE = "/run/fabric-health-pci"
_UNMOUNT = (f"if grep -q ' /sys/bus/pci/devices ' /proc/self/mounts; then umount /sys/bus/pci/devices; fi; "
            f"rm -rf {_SYSFS_TREE}")


def xid_line(bus_id: str, code: int, seconds_ago: float, text: str = "GPU has fallen off the bus.",
             pid: str = "'<unknown>'", name: str = "<unknown>") -> tuple[float, str]:
    """An Xid report as NVRM logs it (``NVRM: Xid (PCI:0000:2a:00): 79, pid=..., ...``), ``seconds_ago``
    before the install."""
    return seconds_ago, f"NVRM: Xid (PCI:{bus_id}): {code}, pid={pid}, name={name}, {text}"


def link_line(device: str, port: int, state: str, seconds_ago: float, pci: str = "0000:17:00.0") -> tuple[float, str]:
    """mlx5's port state line (``mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link DOWN``), ``seconds_ago`` before."""
    return seconds_ago, f"mlx5_core {pci} {device}: Port: {port} Link {state.upper()}"


@dataclass
class FakeHealth:
    """One node's kernel log (``(seconds before the install, message)``) and AER counts.

    ``aer``: bus id -> file (``aer_dev_fatal``) -> error name -> count; every GPU and NIC of
    :data:`GPU_BUS_IDS` / :data:`NIC_BUS_IDS` (``gpus``, ``nics`` of them) gets the three files,
    zero where not named, unless ``aer_capable`` is False (no files: AER not there).
    """

    kernel_log: list[tuple[float, str]] = field(default_factory=lambda: [
        (3600.0, "Linux version 5.15.0-105-generic (buildd@lcy02-amd64-007) (gcc 11.4.0) #115-Ubuntu SMP"),
        (3590.0, "mlx5_core 0000:17:00.0 mlx5_0: Port: 1 Link ACTIVE"),
    ])
    dmesg_restricted: bool = False  # kernel.dmesg_restrict=1 for this user: dmesg refuses
    journal: bool = True  # journalctl finds the journal's files
    aer: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    aer_capable: bool = True
    gpus: int = 8
    nics: int = 8

    def model_json(self, now: float) -> str:
        return json.dumps({"events": [[now - ago, message] for ago, message in self.kernel_log],
                           "dmesg_restricted": self.dmesg_restricted, "journal": self.journal}, sort_keys=True)


def _node(cluster: SimCluster, node: SimNode | str) -> SimNode:
    return cluster.node(node) if isinstance(node, str) else node


def _aer_text(counts: dict[str, int], names: tuple[str, ...], total: str) -> str:
    return "".join(f"{name} {counts.get(name, 0)}\n" for name in names) + f"{total} {sum(counts.values())}\n"


def _install_sysfs(cluster: SimCluster, node: SimNode, health: FakeHealth) -> None:
    lines = [_UNMOUNT, f"mkdir -p {_SYSFS_TREE}"]
    devices = [(bdf, "0x10de", "0x030200") for bdf in GPU_BUS_IDS[:health.gpus]]
    devices += [(bdf, "0x15b3", "0x020700") for bdf in NIC_BUS_IDS[:health.nics]]
    for bdf, vendor, pci_class in devices:
        base = f"{_SYSFS_TREE}/{bdf}"
        lines += [f"mkdir -p {base}", f"echo {vendor} > {base}/vendor", f"echo {pci_class} > {base}/class"]
        if health.aer_capable:
            for file, (names, total) in _AER_FILES.items():
                text = _aer_text(health.aer.get(bdf, {}).get(file, {}), names, total)
                lines.append(f"printf '%s' '{text}' > {base}/{file}")
    lines.append(f"mount --bind {_SYSFS_TREE} /sys/bus/pci/devices")
    done = cluster.exec(node, ["sh", "-ec", "\n".join(lines)], timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"{node.name}: fake AER sysfs not installed: {done.stderr.strip()[-300:]}")


def install_health(cluster: SimCluster, node: SimNode | str, health: FakeHealth | None = None) -> None:
    """Put the kernel-log stand-ins and the AER files on one node (its log dated from now)."""
    health = health or FakeHealth()
    resolved = _node(cluster, node)
    script = (f"#!/usr/bin/env python3\n# {_MARKER} (tests/simcluster/health.py)\n"
              f"MODEL_JSON = {health.model_json(time.time())!r}\n" + STANDIN_SOURCE.read_text())
    for tool in HEALTH_TOOLS:
        cluster.install_tool(resolved, tool, script)
    _install_sysfs(cluster, resolved, health)


def uninstall_health(cluster: SimCluster, node: SimNode | str | None = None) -> None:
    """Remove the stand-ins and unbind the AER tree (every node when ``node`` is None)."""
    nodes = cluster.nodes if node is None else [_node(cluster, node)]
    for each in nodes:
        for tool in HEALTH_TOOLS:
            path = each.bindir / tool
            try:
                ours = _MARKER in path.read_text(errors="replace")[:400]
            except OSError:
                ours = False
            if ours:
                cluster.remove_tool(each, tool)
        if each.sshd_pid is not None and not each.frozen:
            cluster.exec(each, ["sh", "-c", _UNMOUNT], timeout=10)
