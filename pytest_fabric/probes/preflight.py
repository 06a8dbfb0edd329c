"""Preflight: what a node has before anything is measured on it, read with one command.

:func:`preflight_script` prints, each under an ``@@section`` line:

- ``@@tool NAME PATH`` and the first lines of ``NAME --version`` (or its own version flag)
  for each tool the profile's checks run, ``@@missing NAME`` for each one not on PATH;
- ``nvidia-smi -L`` (GPUs the driver sees) and ``ibstat -l`` (RDMA devices; ``/sys/class/infiniband``
  where ibstat is missing);
- ``lsmod`` (is ``nvidia_peermem`` loaded), ``/proc/driver/nvidia/version`` (the open kernel
  module, which dma-buf GPUDirect needs) and ``uname -r`` (dma-buf needs Linux 5.12+);
- ``ulimit -l`` in the session the checks run in (RDMA pins memory: it must be unlimited);
- ``lspci -vvv`` cut to device lines, bus ranges and ACS lines (PCIe ACS redirection on a
  bridge above a GPU or NIC sends their peer traffic through the root complex).

Which tools a check runs is in its declaration (:mod:`pytest_fabric.checks.base`); :func:`required_tools`
reads them for a profile.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pytest_fabric.checks.base import NO_CHECKS, CheckRegistry
from pytest_fabric.parsers import lsmod, lspci_acs, nvidia_smi_list
from pytest_fabric.parsers.base import ParseError
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.probes.software import compare_versions, sections
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.packages import package_for
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill

__all__ = [
    "NodePreflight",
    "acs_on_paths",
    "gpudirect",
    "install_hint",
    "preflight_from",
    "preflight_script",
    "read_preflight",
    "required_tools",
]

# How each tool prints its version without doing anything else. Tools missing here (nvbandwidth,
# all_reduce_perf: they would start measuring) are only looked up on PATH.
VERSION_FLAGS = {
    "nvidia-smi": "--version", "iperf3": "--version", "fio": "--version", "ib_write_bw": "--version",
    "ib_write_lat": "--version", "mpirun": "--version", "curl": "--version", "ibstat": "-V",
    "perfquery": "-V", "iblinkinfo": "-V", "lspci": "--version", "ethtool": "--version",
    "getent": "--version", "dcgmi": "--version", "mlnx_qos": "--version", "rdma": "-V",
    "dcgmproftester12": "--version",  # TCLAP's: prints the version and exits, no load
}
_VERSION = re.compile(r"(?<![0-9A-Za-z.])v?([0-9]+(?:\.[0-9]+)+)")
_KERNEL_DMABUF = "5.12"  # the first kernel whose RDMA stack takes dma-buf memory (ib_umem_dmabuf)


def required_tools(set_checks: Iterable[str], link_layer: str | None, extra: Iterable[str] = (),
                   checks: CheckRegistry = NO_CHECKS) -> dict[str, list[str]]:
    """tool -> the ``layer.check`` names (of those the profile sets) that run it (the tools ``checks``
    declares: the run's registry, an extension's checks included)."""
    out = checks.tools_for(set_checks, link_layer)
    for tool in extra:
        out.setdefault(tool, []).append("software.preflight.tools")
    return out


def preflight_script(tools: Iterable[str], pinned: Mapping[str, tuple[str, str]] | None = None) -> str:
    """The one command preflight runs on a node; ``pinned`` maps a tool the tenant pins to its copy's path
    and the words that run it (run/tenant_tools.py): that copy is the one asked, never the node's PATH."""
    lines = []
    for tool in sorted(set(tools)):
        if pinned and tool in pinned:
            path, command = pinned[tool]
            flag = VERSION_FLAGS.get(tool)
            # the command is already shell words (built by shellcmd): its braces are kept as they are
            words = command.replace("{", "{{").replace("}", "}}")
            show = "; timeout 5 " + words + " {flag} </dev/null 2>&1 | head -n 4" if flag else ""
            lines.append(fill("printf '@@tool %s %s\\n' {tool} {path}" + show, tool=tool, path=path, flag=flag or ""))
            continue
        # The name travels as a quoted word into every place it appears, the @@ lines included:
        # printf prints it as data (issue 27: it once ran inside `echo "@@tool NAME"`).
        flag = VERSION_FLAGS.get(tool)
        show = "; timeout 5 {tool} {flag} </dev/null 2>&1 | head -n 4" if flag else ""
        template = (
            "if p=$(command -v {tool}); then printf '@@tool %s %s\\n' {tool} \"$p\"" + show
            + "; else printf '@@missing %s\\n' {tool}; fi"
        )
        lines.append(fill(template, tool=tool, flag=flag or ""))
    lines += [
        "echo @@gpus; nvidia-smi -L 2>&1",
        "echo @@hcas; ibstat -l 2>/dev/null || ls /sys/class/infiniband 2>/dev/null",
        "echo @@lsmod; lsmod 2>/dev/null",
        "echo @@nvidia_version; cat /proc/driver/nvidia/version 2>/dev/null",
        "echo @@kernel; uname -r",
        "echo @@memlock; ulimit -l",
        "echo @@lspci; lspci -vvv 2>/dev/null | grep -E '^[0-9a-fA-F]|ACSC|Bus: primary'",
        "true",
    ]
    return "\n".join(lines)


@dataclass(frozen=True)
class NodePreflight:
    """What preflight found on one node."""

    node: str
    tools: dict[str, str]  # tool -> path
    versions: dict[str, str]  # tool -> version, where it printed one
    missing: tuple[str, ...]
    gpus: int | None  # None: nvidia-smi -L did not answer
    gpu_error: str | None
    hcas: tuple[str, ...]
    modules: frozenset[str] | None  # None: no lsmod
    open_kernel_module: bool
    kernel: str | None
    memlock: str | None  # "unlimited" or KiB as printed
    acs: lspci_acs.LspciAcs | None
    evidence: tuple[CommandResult, ...] = field(default=())


def preflight_from(node: str, text: str) -> NodePreflight:
    """Read :func:`preflight_script`'s output."""
    tools: dict[str, str] = {}
    versions: dict[str, str] = {}
    missing: list[str] = []
    gpus: int | None = None
    gpu_error = None
    hcas: tuple[str, ...] = ()
    modules: frozenset[str] | None = None
    open_module = False
    kernel = memlock = None
    acs = None
    for name, args, body in sections(text):
        if name == "tool":
            tool, _, path = args.partition(" ")
            tools[tool] = path
            match = _VERSION.search(body)
            if match:
                versions[tool] = match.group(1)
        elif name == "missing":
            missing.append(args.strip())
        elif name == "gpus":
            try:
                gpus = len(nvidia_smi_list.parse_nvidia_smi_list(body))
            except ParseError as exc:
                gpu_error = body.strip().splitlines()[-1] if body.strip() else str(exc)
        elif name == "hcas":
            hcas = tuple(body.split())
        elif name == "lsmod" and body.strip():
            try:
                modules = frozenset(lsmod.parse_lsmod(body))
            except ParseError:
                modules = None
        elif name == "nvidia_version":
            open_module = "Open Kernel Module" in body
        elif name == "kernel" and body.strip():
            kernel = body.strip().splitlines()[0]
        elif name == "memlock" and body.strip():
            memlock = body.strip().splitlines()[0].strip()
        elif name == "lspci" and body.strip():
            try:
                acs = lspci_acs.parse_lspci_acs(body)
            except ParseError:
                acs = None
    return NodePreflight(node, tools, versions, tuple(missing), gpus, gpu_error, hcas, modules, open_module,
                         kernel, memlock, acs)


def read_preflight(node: NodeHandle, tools: Iterable[str]) -> NodePreflight:
    """Run preflight on ``node``: one command. A tool the tenant pins is uploaded first (once per node per
    run) and its copy asked; an upload the node altered raises here, naming the node."""
    tools = sorted(set(tools))
    pinned = {t: (copy.path, copy.command) for t in tools if (copy := node.tenant_tool(t)) is not None}
    result = node.run(preflight_script(tools, pinned), timeout=120, check=False)
    if "@@gpus" not in result.stdout:
        raise MeasurementError(
            node.name, f"the preflight listing did not finish (exit {result.exit_code}): "
            f"{(result.stderr or result.stdout).strip()[-300:]}",
            command="command -v TOOL; nvidia-smi -L; lsmod; ulimit -l; lspci -vvv",
            fix="run the commands by hand on the node",
        )
    found = preflight_from(node.name, result.stdout)
    return dataclasses.replace(found, evidence=(result,))


def install_hint(tools: Iterable[str]) -> str:
    """``install iperf3 (iperf3), ib_write_bw (perftest)``."""
    return ", ".join(f"{t} ({package_for(t) or 'its package'})" for t in tools)


def gpudirect(found: NodePreflight, via: str) -> tuple[bool, str]:
    """Whether GPUDirect RDMA can work ``via`` peermem, dmabuf or either, and why (or why not)."""
    if found.modules is None:
        raise MeasurementError(found.node, "lsmod printed nothing", command="lsmod",
                               fix="install kmod (lsmod) on the node")
    peermem = next((m for m in ("nvidia_peermem", "nv_peer_mem") if m in found.modules), None)
    kernel_ok = found.kernel is not None and compare_versions(found.kernel, _KERNEL_DMABUF) >= 0
    dmabuf = found.open_kernel_module and kernel_ok
    dmabuf_why = (
        "dma-buf available (NVIDIA open kernel module, kernel " + str(found.kernel) + ")" if dmabuf else
        "dma-buf unavailable (" + ("the NVIDIA driver is not the open kernel module"
                                   if not found.open_kernel_module else f"kernel {found.kernel} is older than 5.12") + ")"
    )
    peer_why = f"{peermem} loaded" if peermem else "nvidia_peermem is not loaded (lsmod)"
    ok = {"peermem": bool(peermem), "dmabuf": dmabuf, "either": bool(peermem) or dmabuf}[via]
    return ok, f"{peer_why}; {dmabuf_why}"


def _is_gpu_or_nic(device: lspci_acs.PciDevice) -> bool:
    text = device.description
    return ("NVIDIA" in text and ("3D controller" in text or "VGA" in text)) or (
        "Mellanox" in text and ("Infiniband controller" in text or "Ethernet controller" in text)
    )


def acs_on_paths(acs: lspci_acs.LspciAcs) -> list[str]:
    """Bridges above a GPU or NIC with ACS redirection on: ``15:01.0 (above 19:00.0, 1a:00.0): ReqRedir+ CmpltRedir+``."""
    endpoints = [d.bdf for d in acs.devices if _is_gpu_or_nic(d)]
    out = []
    for bridge in acs.acs:
        below = [bdf for bdf in endpoints if bridge.above(bdf)]
        if bridge.enabled and below:
            out.append(f"{bridge.bdf} (above {', '.join(below)}): {' '.join(b + '+' for b in bridge.enabled)}")
    return out
