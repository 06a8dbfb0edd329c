"""Which package provides which tool, and which tool a failed command was missing.

A check that errors with "iperf3: command not found" is only half an answer; the
operator wants to know what to install.  This table is the one place that knows
(Debian/Ubuntu package names, which RHEL mostly shares; vendor stacks are named
as such).  It is data, not logic, so probes and docs can read it too.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["PACKAGES", "missing_tool", "package_for"]

_PERFTEST = "perftest"
_IB_DIAGS = "infiniband-diags"

# tool -> the package (or vendor stack) that provides it.
PACKAGES: Mapping[str, str] = MappingProxyType(
    {
        # TCP and storage benchmarks
        "iperf3": "iperf3",
        "fio": "fio",
        # RDMA benchmarks (perftest)
        **{
            tool: _PERFTEST
            for tool in (
                "ib_write_bw",
                "ib_write_lat",
                "ib_read_bw",
                "ib_read_lat",
                "ib_send_bw",
                "ib_send_lat",
                "ib_atomic_bw",
                "ib_atomic_lat",
                "raw_ethernet_bw",
                "raw_ethernet_lat",
            )
        },
        # InfiniBand diagnostics
        **{
            tool: _IB_DIAGS
            for tool in (
                "ibstat",
                "ibstatus",
                "perfquery",
                "iblinkinfo",
                "ibnetdiscover",
                "ibdiagnet",
                "ibswitches",
                "ibhosts",
                "smpquery",
                "sminfo",
            )
        },
        "ibv_devinfo": "ibverbs-utils",
        "ibv_devices": "ibverbs-utils",
        "ibdev2netdev": "mlnx-tools (MLNX_OFED / DOCA-OFED)",
        "mlnx_qos": "mlnx-tools (MLNX_OFED / DOCA-OFED)",
        "show_gids": "mlnx-tools (MLNX_OFED / DOCA-OFED)",
        "rdma": "iproute2",
        "ip": "iproute2",
        "tc": "iproute2",
        "ss": "iproute2",
        "ethtool": "ethtool",
        "lspci": "pciutils",
        "setpci": "pciutils",
        # GPU stack
        "nvidia-smi": "the NVIDIA driver (nvidia-utils-<version>)",
        "nvbandwidth": "nvbandwidth (build from https://github.com/NVIDIA/nvbandwidth)",
        "all_reduce_perf": "nccl-tests (build from https://github.com/NVIDIA/nccl-tests)",
        "all_gather_perf": "nccl-tests (build from https://github.com/NVIDIA/nccl-tests)",
        "alltoall_perf": "nccl-tests (build from https://github.com/NVIDIA/nccl-tests)",
        "dcgmi": "datacenter-gpu-manager",
        # DCGM's load generator, one build per CUDA major (the GEMM and clock-throttling checks' load)
        "dcgmproftester11": "datacenter-gpu-manager (DCGM 3.x or 4.x)",
        "dcgmproftester12": "datacenter-gpu-manager (DCGM 3.x or 4.x)",
        "dcgmproftester13": "datacenter-gpu-manager (DCGM 4.x)",
        "mpirun": "openmpi-bin",
        "mpiexec": "openmpi-bin",
        # the kernel log (xid_errors, link_history)
        "dmesg": "util-linux",
        "journalctl": "systemd",
        # egress and name resolution
        "getent": "libc-bin",
        "dig": "dnsutils (bind9-dnsutils)",
        "host": "bind9-host",
        "nslookup": "dnsutils (bind9-dnsutils)",
        "curl": "curl",
        "wget": "wget",
        # basics a check may lean on
        "timeout": "coreutils",
        "findmnt": "util-linux",
        "lsblk": "util-linux",
        "numactl": "numactl",
        "python3": "python3",
        "jq": "jq",
    }
)

# How shells report a missing program on stderr:
#   dash:  "sh: 1: iperf3: not found"         bash: "bash: line 1: iperf3: command not found"
#   busybox: "sh: iperf3: not found"          zsh:  "zsh:1: command not found: iperf3"
#   coreutils timeout/env: "timeout: failed to run command 'iperf3': No such file or directory"
_NOT_FOUND = (
    re.compile(r"(?:^|: )(?P<tool>[^\s:'\"]+): (?:command )?not found\s*$", re.MULTILINE),
    re.compile(r"command not found: (?P<tool>[^\s:'\"]+)\s*$", re.MULTILINE),
    re.compile(r"failed to run command '(?P<tool>[^']+)': No such file or directory"),
)

# Words that may lead a command line without being the program that runs.
_LEADERS = frozenset(
    {"sudo", "env", "exec", "nice", "ionice", "stdbuf", "timeout", "numactl", "taskset"}
)


def package_for(tool: str) -> str | None:
    """The package that provides ``tool`` (a bare name or a path), or None when we do not know."""
    return PACKAGES.get(tool.rsplit("/", 1)[-1])


def _first_program(command: str) -> str | None:
    """The program a simple command line runs, skipping ``VAR=x`` and wrappers like ``sudo``."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    for word in words:
        if "=" in word.split("/", 1)[0] or word in _LEADERS or word.startswith("-"):
            continue
        return word
    return None


def missing_tool(exit_code: int, stderr: str, command: str) -> str | None:
    """Name the program that was not found, or None when the failure was something else.

    The shell's own message wins (it names the right program even in a pipeline);
    exit code 127 without a recognisable message falls back to the command's
    first program.
    """
    for pattern in _NOT_FOUND:
        matches = list(pattern.finditer(stderr))
        if matches:
            return matches[-1].group("tool")
    if exit_code == 127:
        return _first_program(command)
    return None
