"""A fake software stack for the simulated cluster: a model per node, and stand-ins that print it.

Tests describe a node's OFED, NCCL, kernel, loaded modules and DCGM results and install them::

    install_stack(cluster, "node03", FakeStack(ofed="23.04-0.5.3.3", modules=["nvidia_uvm"]))
    try:
        ...  # ofed_info -s, ldconfig -p, uname -r, lsmod, dcgmi diag -r 1 over SSH
    finally:
        uninstall_stack(cluster)

The stand-ins are one program (``standins/stack_standin.py``) with the node's model baked in,
installed under each tool name in the node's /usr/local/bin, which comes before /usr/sbin and
/usr/bin on PATH; a tool the model leaves unset (``kernel=None``) runs the real one. Locked
memory is not a stand-in: :func:`limit_memlock` lowers RLIMIT_MEMLOCK of the node's sshd, so
every new session there has the lower ``ulimit -l``, as a node with a default limits.conf.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from simcluster.cluster import SimCluster, SimNode

__all__ = ["STACK_TOOLS", "FakeStack", "install_stack", "limit_memlock", "restore_memlock", "uninstall_stack"]

STANDIN_SOURCE = Path(__file__).parent / "standins" / "stack_standin.py"
STACK_TOOLS: tuple[str, ...] = ("ofed_info", "ldconfig", "uname", "lsmod", "dcgmi")
_MARKER = "Software-stack stand-in for the simulated cluster"


@dataclass
class FakeStack:
    """One node's software stack. ``None``: that tool is the host's own."""

    ofed: str | None = "23.10-1.1.9.0"
    nccl: str | None = "2.21.5"
    kernel: str | None = "5.15.0-105-generic"
    modules: list[str] = field(default_factory=lambda: ["nvidia_peermem", "nvidia_uvm", "mlx5_ib", "ib_uverbs",
                                                       "mlx5_core", "ib_core"])
    dcgm: bool = True  # dcgmi installed
    dcgm_failures: dict[int, str] = field(default_factory=dict)  # GPU -> the diag test it fails ("PCIe")
    gpus: int = 8

    def to_json(self) -> str:
        data = dataclasses.asdict(self)
        data["dcgm_failures"] = {str(k): v for k, v in self.dcgm_failures.items()}
        return json.dumps(data, sort_keys=True)


def _node(cluster: SimCluster, node: SimNode | str) -> SimNode:
    return cluster.node(node) if isinstance(node, str) else node


def install_stack(cluster: SimCluster, node: SimNode | str, stack: FakeStack | None = None) -> None:
    """Install the stack stand-ins on one node."""
    stack = stack or FakeStack()
    from simcluster.hardware import _python_for_nodes

    body = STANDIN_SOURCE.read_text()
    script = f"#!{_python_for_nodes()}\n{body.splitlines()[0]}\nMODEL_JSON = {stack.to_json()!r}\n" + body
    for tool in STACK_TOOLS:
        if tool == "dcgmi" and not stack.dcgm:
            _remove(cluster, _node(cluster, node), tool)
            continue
        cluster.install_tool(node, tool, script)


def _remove(cluster: SimCluster, node: SimNode, tool: str) -> None:
    path = node.bindir / tool
    if path.exists() and _MARKER in path.read_text(errors="replace")[:400]:
        cluster.remove_tool(node, tool)


def uninstall_stack(cluster: SimCluster, node: SimNode | str | None = None) -> None:
    """Remove the stack stand-ins from one node (every node when ``node`` is None)."""
    for each in cluster.nodes if node is None else [_node(cluster, node)]:
        for tool in STACK_TOOLS:
            _remove(cluster, each, tool)


def limit_memlock(cluster: SimCluster, node: SimNode | str, kib: int) -> int:
    """Lower the soft RLIMIT_MEMLOCK of the node's sshd to ``kib`` (new sessions inherit it); returns
    the soft limit it had, in KiB, for :func:`restore_memlock`. Only the soft limit moves: raising a
    hard limit back needs CAP_SYS_RESOURCE, which a container may not have."""
    pid = str(_node(cluster, node).sshd_pid)
    shown = subprocess.run(["prlimit", f"--pid={pid}", "--memlock", "--raw", "--noheadings", "--output=SOFT"],
                           check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["prlimit", f"--pid={pid}", f"--memlock={kib * 1024}:"], check=True)
    return -1 if shown == "unlimited" else int(shown) // 1024


def restore_memlock(cluster: SimCluster, node: SimNode | str, kib: int) -> None:
    """Put back the soft limit :func:`limit_memlock` returned (-1: unlimited)."""
    value = "unlimited" if kib < 0 else str(kib * 1024)
    subprocess.run(["prlimit", f"--pid={_node(cluster, node).sshd_pid}", f"--memlock={value}:"], check=True)
