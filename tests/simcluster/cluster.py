"""A throw-away cluster of network namespaces, one real sshd per node.

Layout (all names carry a per-instance prefix such as ``fs3fa91c``, so two clusters on one machine
never touch each other's objects)::

    root namespace                      node namespaces
    fs3fa91cbr 10.X.0.1/16 ----+-- fs3fa91ch01 <-veth-> eth0 10.X.0.11   (netns fs3fa91c-node01)
                               +-- fs3fa91ch02 <-veth-> eth0 10.X.0.12   (netns fs3fa91c-node02)
                               +-- ...          node245 is 10.X.1.1, node512 10.X.2.14

One /16 per cluster (X chosen under a machine-wide lock, skipping /16s in use), so a cluster
holds up to MAX_NODES (a Linux bridge takes 1,024 ports).

The bridge address lets pytest, running in the root namespace, reach every node directly; nodes
have no default route, and nothing is NATed, so no packet can leave the machine.

Each node's sshd runs inside ``unshare --mount --pid --uts --fork --kill-child`` with its own /tmp
(tmpfs), /run (tmpfs), /root (the node's home dir) and /usr/local/bin (the node's bin dir, where
stand-in tools go). The sshd is PID 1 of its PID namespace, so killing it ends everything the node
runs, and a ``pkill`` on one node cannot reach another.

Every process and kernel object is recorded when created and torn down by that record (PID, exact
name), never by a name pattern.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MAX_NODES", "SimCluster", "SimClusterError", "SimNode", "missing_prerequisites", "node_address"]

SSHD = "/usr/sbin/sshd"
# Tools the cluster itself needs on the host; iperf3 and fio are what the nodes measure with.
REQUIRED_TOOLS = ("ip", "tc", "unshare", "nsenter", "ssh-keygen", "iperf3", "fio")
# PATH for commands run with exec(): the stand-in dir first, as over SSH.
NODE_PATH = "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
FIRST_HOST = 11  # node01 is 10.X.0.11, node02 .0.12, ...
# Second octets a cluster's 10.X.0.0/16 is chosen from (10.200-10.254: clear of the 10.0-10.199
# that container and VPN networks favour).
SECOND_OCTETS = range(200, 255)
# Host numbers per third octet: .1 to .254 (.0 and .255 are left alone, as on a /24).
HOSTS_PER_OCTET = 254
# A Linux bridge takes at most 1,024 ports (BR_MAX_PORTS); a few are left for other uses.
MAX_NODES = 1000
# The kernel's neighbour (ARP) table is one for all namespaces: every node's entries count against
# gc_thresh1/2/3 of the root namespace (128/512/1024 by default). Past gc_thresh3 a new neighbour
# is refused and connect() says "No route to host": 250 nodes of pairs were past it. Raised (never
# lowered) to this many entries per node, before the namespaces are made.
NEIGHBOURS_PER_NODE = (4, 16, 32)
GC_THRESH = "/proc/sys/net/ipv4/neigh/default/gc_thresh{}"
# Bring-up work per node (keys, addresses) runs in this many threads: 512 nodes in seconds.
BUILD_THREADS = 16
# Serializes subnet choice across processes; /run/lock is tmpfs, so it never outlives a boot.
LOCK_FILE = "/run/lock/pytest-fabric-simcluster.lock"

# Several clusters can live in one process (a session cluster plus a test's own); the counter keeps
# their subnet guesses apart, the probe of existing addresses keeps them apart from other processes.
_instances = 0


def node_address(second_octet: int, index: int) -> str:
    """The address of node ``index`` (0-based) on 10.<second_octet>.0.0/16.

    node01 is .0.11 as on the /24 it replaced; after .0.254 come .1.1 to .1.254, and so on.
    """
    if not 0 <= index < MAX_NODES:
        raise ValueError(f"node index must be 0..{MAX_NODES - 1}, got {index}")
    host = FIRST_HOST - 1 + index  # counted from .0.1
    return f"10.{second_octet}.{host // HOSTS_PER_OCTET}.{host % HOSTS_PER_OCTET + 1}"


class SimClusterError(RuntimeError):
    """A simulated-cluster operation failed; the message names the command and its stderr."""


def missing_prerequisites() -> list[str]:
    """Why this machine cannot run a simulated cluster (empty when it can).

    Used by fixtures to skip with a precise reason instead of failing halfway through bring-up.
    """
    reasons: list[str] = []
    if os.geteuid() != 0:
        reasons.append("not root (network namespaces and mounts need root)")
    if not os.access(SSHD, os.X_OK):
        reasons.append(f"{SSHD} missing (apt-get install openssh-server)")
    for tool in REQUIRED_TOOLS:
        if shutil.which(tool) is None:
            reasons.append(f"{tool} not on PATH")
    return reasons


@dataclass
class SimNode:
    """One simulated node: a network namespace, its veth, its sshd and its private dirs."""

    name: str
    address: str
    netns: str
    host_veth: str  # the bridge-side end, in the root namespace; the node side is eth0
    dir: Path  # per-node state: sshd_config, host key, log, home/, bin/
    home: Path  # bound over /root inside the node
    bindir: Path  # bound over /usr/local/bin inside the node
    host_key_pub: str = ""
    sshd_pid: int | None = None  # host-namespace PID of the sshd (PID 1 inside the node)
    rate_mbit: int | None = None  # current tbf shaping, None when unshaped
    # The cpu-free fio's modelled disk (SimCluster(cpu_free=True)): sequential MB/s, random-read IOPS
    disk_mbps: float | None = None
    disk_iops: float | None = None
    frozen: bool = False
    link_down: bool = False  # its veth taken down (set_link): a pulled cable
    _launcher: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def up(self) -> bool:
        """True while the node's sshd runs (it may still be frozen)."""
        return self.sshd_pid is not None


class SimCluster:
    """N nodes in network namespaces on one bridge, each with a real sshd on port 22.

    Use as a context manager, or call start() and stop(). stop() is idempotent and also registered
    with atexit, so an interrupted test session does not leave namespaces behind.
    """

    def __init__(self, n_nodes: int, workdir: Path, *, name: str = "sim", cpu_free: bool = False,
                 disk_mbps: float | None = None, disk_iops: float | None = None) -> None:
        global _instances
        if not 1 <= n_nodes <= MAX_NODES:
            raise ValueError(f"n_nodes must be 1..{MAX_NODES} (one bridge per cluster), got {n_nodes}")
        self.n_nodes = n_nodes
        #: iperf3 is a stand-in that sleeps for -t and prints figures derived from the node's link
        #: (tests/simcluster/standins/cpu_free_iperf3.py), so a run of hundreds of nodes measures
        #: the controller, not this machine's CPUs running hundreds of real iperf3s
        self.cpu_free = cpu_free
        #: and fio one that sleeps for what its job takes on a modelled node disk of disk_mbps MB/s
        #: sequential and disk_iops random-read IOPS (None: hardware.py's defaults); set_disk changes one
        self.disk_mbps = disk_mbps
        self.disk_iops = disk_iops
        self.workdir = Path(workdir).absolute()
        self.name = name
        self.prefix = "fs" + uuid.uuid4().hex[:6]  # 8 chars: leaves room for 'h123' in 15
        self.bridge = f"{self.prefix}br"
        self._instance = _instances
        _instances += 1
        self.subnet_octet: int | None = None
        self.nodes: list[SimNode] = []
        self.client_key = self.workdir / "id_ed25519"
        self.known_hosts = self.workdir / "known_hosts"
        self.started_s: float | None = None  # bring-up time of the last start(), for reports
        # What we created, so teardown removes exactly that and nothing else.
        self._netns: list[str] = []
        self._links: list[str] = []
        self._paths: list[Path] = []
        self._created_workdir = False
        self._atexit_registered = False

    # ----------------------------------------------------------------- lifecycle

    def __enter__(self) -> SimCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bridge_address(self) -> str:
        """The root namespace's address on the cluster bridge (where pytest talks from)."""
        return f"10.{self._octet()}.0.1"

    def start(self) -> None:
        """Create keys, bridge, namespaces and sshds; return once every sshd sends its banner.

        On any failure everything created so far is torn down before the error propagates.
        """
        if self.nodes:
            raise SimClusterError(f"cluster {self.prefix} already started")
        missing = missing_prerequisites()
        if missing:
            raise SimClusterError("cannot start a simulated cluster: " + "; ".join(missing))
        t0 = time.monotonic()
        atexit.register(self.stop)
        self._atexit_registered = True
        try:
            # Held from choosing the /16 until the bridge has its address, so two clusters
            # starting at once (xdist workers, other sessions) cannot pick the same subnet.
            with _subnet_lock():
                self.subnet_octet = self._pick_subnet()
                self._make_files()
                _raise_neighbour_limits(self.n_nodes)
                self._make_network()
            if self.cpu_free:
                self._install_cpu_free_tools()
            for node in self.nodes:
                self._launch_sshd(node)
            _each(self._await_sshd, self.nodes)  # waits on 512 sshds at once, not one after another
        except BaseException:
            self.stop()
            raise
        self.started_s = time.monotonic() - t0

    def stop(self) -> None:
        """Tear down everything this instance created, by PID and exact name. Idempotent."""
        _each(self._kill_node_processes, self.nodes)
        # Host veth ends first: deleting one deletes its peer at once, whereas netns deletion
        # frees the namespace's devices asynchronously. One `ip -force -batch` for all (it goes
        # on past a line that fails: a link already gone), not a process per object.
        commands = [f"link del {link}" for link in reversed(self._links)]
        commands += [f"netns del {ns}" for ns in self._netns]
        if commands:
            _run(["ip", "-force", "-batch", "-"], check=False, input="\n".join(commands) + "\n",
                 timeout=60 + len(commands) // 10)
        self._links.clear()
        self._netns.clear()
        for path in reversed(self._paths):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        self._paths.clear()
        if self._created_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self._created_workdir = False
        self.nodes = []
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False

    # ----------------------------------------------------------------- lookup

    def node(self, name: str) -> SimNode:
        """The node called `name` (node01, ...)."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node {name!r} in cluster {self.prefix}; have {self._names()}")

    def _names(self) -> list[str]:
        return [n.name for n in self.nodes]

    def _resolve(self, node: SimNode | str) -> SimNode:
        return self.node(node) if isinstance(node, str) else node

    # ----------------------------------------------------------------- running things in a node

    def exec(
        self,
        node: SimNode | str,
        argv: Sequence[str],
        *,
        net_only: bool = False,
        timeout: float = 60,
        check: bool = False,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run argv inside the node without SSH.

        By default it joins the node's network, mount, PID and UTS namespaces (so it sees the
        node's /tmp, stand-ins and processes). With net_only=True it joins only the network
        namespace, which works while the node's sshd is stopped.
        """
        node = self._resolve(node)
        if net_only:
            cmd = ["ip", "netns", "exec", node.netns, *argv]
        else:
            if node.sshd_pid is None:
                raise SimClusterError(
                    f"{node.name}: sshd is stopped, so its namespaces are gone; call "
                    "start_sshd() first or use exec(..., net_only=True)"
                )
            cmd = ["nsenter", "-t", str(node.sshd_pid), "--net", "--mount", "--pid", "--uts",
                   "--wd=/root", "--", *argv]
        env = {"PATH": NODE_PATH, "HOME": "/root", "LANG": "C.UTF-8"}
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check,
                              input=input, env=env)

    def popen(self, node: SimNode | str, argv: Sequence[str], **kwargs: Any
              ) -> subprocess.Popen[str]:
        """Start argv inside the node (all its namespaces) without waiting, e.g. a server.

        The caller owns the returned process; everything it leaves inside the node also ends
        when the node's sshd is stopped or the cluster torn down.
        """
        node = self._resolve(node)
        if node.sshd_pid is None:
            raise SimClusterError(f"{node.name}: sshd is stopped; call start_sshd() first")
        kwargs.setdefault("env", {"PATH": NODE_PATH, "HOME": "/root", "LANG": "C.UTF-8"})
        kwargs.setdefault("text", True)
        return subprocess.Popen(
            ["nsenter", "-t", str(node.sshd_pid), "--net", "--mount", "--pid", "--uts",
             "--wd=/root", "--", *argv], **kwargs)

    def processes(self, node: SimNode | str) -> list[tuple[int, str]]:
        """Processes in the node's PID namespace except its sshd, sshd session processes and slurmd.

        Returns (host PID, command line) pairs. Idle SSH sessions (a transport keeping its
        connection open) show up only as sshd processes, so they are not reported; whatever such
        a session started (iperf3, fio, a stand-in) is.
        """
        node = self._resolve(node)
        if node.sshd_pid is None:
            return []
        try:
            ns = os.readlink(f"/proc/{node.sshd_pid}/ns/pid")
        except FileNotFoundError:
            return []
        found: list[tuple[int, str]] = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            pid = int(entry)
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") != ns:
                    continue
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
                raw = Path(f"/proc/{pid}/cmdline").read_bytes()
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue  # exited while we looked
            if comm in ("sshd", "slurmd"):  # the node's daemons (slurmd: tests/simcluster/slurm.py)
                continue
            cmdline = raw.replace(b"\0", b" ").decode(errors="replace").strip() or f"[{comm}]"
            found.append((pid, cmdline))
        return found

    def install_tool(self, node: SimNode | str, name: str, script: str) -> Path:
        """Put an executable stand-in called `name` on the node's PATH (/usr/local/bin).

        A script without a shebang gets ``#!/bin/sh``. Written to a temp file and renamed, so a
        command running concurrently never sees half a script.
        """
        node = self._resolve(node)
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"tool name must be a plain file name, got {name!r}")
        if not script.startswith("#!"):
            script = "#!/bin/sh\n" + script
        target = node.bindir / name
        tmp = node.bindir / f".{name}.tmp"
        tmp.write_text(script)
        tmp.chmod(0o755)
        tmp.replace(target)
        return target

    def remove_tool(self, node: SimNode | str, name: str) -> None:
        """Remove a stand-in installed with install_tool (no error if it is not there)."""
        (self._resolve(node).bindir / name).unlink(missing_ok=True)

    # ----------------------------------------------------------------- breaking a node

    def shape(self, node: SimNode | str, rate_mbit: int) -> None:
        """Limit the node's link to rate_mbit in both directions (tbf on both veth ends).

        tbf shapes only egress, so the bridge-side end limits traffic to the node and the node's
        eth0 limits traffic from it.
        """
        node = self._resolve(node)
        if rate_mbit <= 0:
            raise ValueError(f"rate_mbit must be positive, got {rate_mbit}")
        # Burst of ~4 ms at the rate (tbf needs at least rate/HZ to reach the rate), never below
        # a few jumbo frames; 20 ms of queue keeps TCP from seeing the limit as loss only.
        burst = max(rate_mbit * 1_000_000 // 8 // 250, 64 * 1024)
        qdisc = ["root", "tbf", "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", "20ms"]
        _run(["tc", "qdisc", "replace", "dev", node.host_veth, *qdisc])
        _run(["tc", "-n", node.netns, "qdisc", "replace", "dev", "eth0", *qdisc])
        node.rate_mbit = rate_mbit
        self._write_link(node)

    def set_disk(self, node: SimNode | str, mbps: float | None = None, iops: float | None = None) -> None:
        """The cpu-free fio's model of the node's disk: sequential MB/s and random-read IOPS (None: the cluster's)."""
        node = self._resolve(node)
        node.disk_mbps, node.disk_iops = mbps, iops
        self._write_link(node)

    def unshape(self, node: SimNode | str) -> None:
        """Remove shaping from both ends of the node's link (no error if it was not shaped)."""
        node = self._resolve(node)
        _run(["tc", "qdisc", "del", "dev", node.host_veth, "root"], check=False)
        _run(["tc", "-n", node.netns, "qdisc", "del", "dev", "eth0", "root"], check=False)
        node.rate_mbit = None
        self._write_link(node)

    @contextlib.contextmanager
    def shaped(self, node: SimNode | str, rate_mbit: int) -> Iterator[SimNode]:
        """Shape the node for the duration of the block, then restore its previous rate."""
        node = self._resolve(node)
        before = node.rate_mbit
        self.shape(node, rate_mbit)
        try:
            yield node
        finally:
            if before is None:
                self.unshape(node)
            else:
                self.shape(node, before)

    def get_mtu(self, node: SimNode | str) -> int:
        """The MTU of the node's eth0."""
        node = self._resolve(node)
        out = _run(["ip", "-n", node.netns, "-o", "link", "show", "dev", "eth0"]).stdout
        return int(out.split(" mtu ", 1)[1].split()[0])

    def set_mtu(self, node: SimNode | str, mtu: int) -> None:
        """Set the MTU of both ends of the node's veth.

        The bridge is left alone: it forwards between ports without looking at its own MTU, and
        each bridge port drops frames larger than its MTU, which is how a real switch port with
        a smaller MTU behaves (a mismatch blackholes large frames).
        """
        node = self._resolve(node)
        if not 68 <= mtu <= 65535:
            raise ValueError(f"MTU must be 68..65535, got {mtu}")
        _run(["ip", "link", "set", "dev", node.host_veth, "mtu", str(mtu)])
        _run(["ip", "-n", node.netns, "link", "set", "dev", "eth0", "mtu", str(mtu)])

    @contextlib.contextmanager
    def mtu(self, node: SimNode | str, mtu: int) -> Iterator[SimNode]:
        """Set the node's MTU for the duration of the block, then restore the previous one."""
        node = self._resolve(node)
        before = self.get_mtu(node)
        self.set_mtu(node, mtu)
        try:
            yield node
        finally:
            self.set_mtu(node, before)

    def stop_sshd(self, node: SimNode | str) -> None:
        """Kill the node's sshd by PID: the node is down (connection refused on port 22).

        The sshd is PID 1 of the node's PID namespace, so everything running there ends too, and
        its /tmp (a tmpfs of that mount namespace) is gone, as after a reboot.
        """
        node = self._resolve(node)
        self._kill_node_processes(node)

    def start_sshd(self, node: SimNode | str) -> None:
        """Bring a stopped node's sshd back and wait for its banner."""
        node = self._resolve(node)
        if node.sshd_pid is not None:
            raise SimClusterError(f"{node.name}: sshd already running (pid {node.sshd_pid})")
        self._launch_sshd(node)
        self._await_sshd(node)

    @contextlib.contextmanager
    def stopped(self, node: SimNode | str) -> Iterator[SimNode]:
        """The node is down for the duration of the block, then its sshd is started again."""
        node = self._resolve(node)
        self.stop_sshd(node)
        try:
            yield node
        finally:
            if node.sshd_pid is None:
                self.start_sshd(node)

    def freeze_sshd(self, node: SimNode | str) -> None:
        """SIGSTOP the node's listening sshd: TCP connects (kernel backlog), no banner comes.

        Sessions already open keep working: they are separate processes. This models a node
        that hangs for new logins, the case connect timeouts must catch.
        """
        node = self._resolve(node)
        if node.sshd_pid is None:
            raise SimClusterError(f"{node.name}: sshd is stopped; nothing to freeze")
        os.kill(node.sshd_pid, signal.SIGSTOP)
        node.frozen = True

    def thaw_sshd(self, node: SimNode | str) -> None:
        """SIGCONT the node's sshd after freeze_sshd."""
        node = self._resolve(node)
        if node.sshd_pid is not None:
            os.kill(node.sshd_pid, signal.SIGCONT)
        node.frozen = False

    @contextlib.contextmanager
    def frozen(self, node: SimNode | str) -> Iterator[SimNode]:
        """The node's sshd is frozen for the duration of the block, then thawed."""
        node = self._resolve(node)
        self.freeze_sshd(node)
        try:
            yield node
        finally:
            self.thaw_sshd(node)

    def set_link(self, node: SimNode | str, up: bool) -> None:
        """Take the node's link down (the bridge side of its veth: its eth0 loses carrier, as with a
        pulled cable; its sshd runs on, unreachable) or bring it back up."""
        node = self._resolve(node)
        _run(["ip", "link", "set", node.host_veth, "up" if up else "down"])
        node.link_down = not up

    def restore(self, node: SimNode | str) -> None:
        """Undo every break on the node: link up, thaw, start sshd, unshape, MTU 1500."""
        node = self._resolve(node)
        if node.link_down:
            self.set_link(node, True)
        if node.frozen:
            self.thaw_sshd(node)
        if node.sshd_pid is None:
            self.start_sshd(node)
        if node.rate_mbit is not None:
            self.unshape(node)
        if self.get_mtu(node) != 1500:
            self.set_mtu(node, 1500)

    # ----------------------------------------------------------------- inventory and SSH

    def write_inventory(
        self,
        path: Path,
        *,
        nodes: Iterable[SimNode | str] | None = None,
        name: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Path:
        """Write an inventory YAML in the format of docs/inventory.md for (a subset of) the nodes.

        `name` defaults to the cluster's name; `extra` is merged at top level (storage, egress).
        """
        chosen = self.nodes if nodes is None else [self._resolve(n) for n in nodes]
        doc: dict[str, Any] = {
            "name": self.name if name is None else name,
            "defaults": {
                "user": "root",
                "port": 22,
                "identity_file": str(self.client_key),
                "known_hosts": str(self.known_hosts),
                # Short: every host is local, and frozen-node tests wait for this timeout.
                "connect_timeout": 3,
            },
            "nodes": [{"name": n.name, "host": n.address} for n in chosen],
            # Each node's /tmp is a tmpfs of its own (see _start_node): a node-local mount to measure,
            # as an inventory must list one for the storage checks a profile sets.
            "storage": {"mounts": [{"path": "/tmp", "shared": False}]},
        }
        if extra:
            doc.update(extra)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        if self.workdir in path.absolute().parents and not self._created_workdir:
            self._paths.append(path)
        return path

    def ssh_argv(self, node: SimNode | str, command: str, *, connect_timeout: int = 3) -> list[str]:
        """An OpenSSH client command line that runs `command` on the node, verifying its host key."""
        node = self._resolve(node)
        return [
            "ssh", "-F", "none", "-i", str(self.client_key),
            "-o", f"UserKnownHostsFile={self.known_hosts}",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={connect_timeout}", "-o", "LogLevel=ERROR",
            f"root@{node.address}", command,
        ]

    # ----------------------------------------------------------------- bring-up internals

    def _octet(self) -> int:
        if self.subnet_octet is None:
            raise SimClusterError("cluster not started")
        return self.subnet_octet

    def _pick_subnet(self) -> int:
        """Second octet of 10.X.0.0/16: hashed from PID and instance, skipping ones in use."""
        used = _run(["ip", "-4", "-o", "addr", "show"]).stdout
        used += _run(["ip", "-4", "route", "show", "table", "all"]).stdout
        octet = free_second_octet(used, zlib.crc32(f"{os.getpid()}:{self._instance}".encode()))
        if octet is None:
            raise SimClusterError(
                f"every 10.X.0.0/16 for X in {SECOND_OCTETS.start}..{SECOND_OCTETS.stop - 1} is in use on "
                "this machine (other simulated clusters, or networks of the host): stop some first")
        return octet

    def _track(self, path: Path) -> Path:
        if not self._created_workdir and not path.exists():
            self._paths.append(path)
        return path

    def _make_files(self) -> None:
        if not self.workdir.exists():
            self.workdir.mkdir(parents=True)
            self._created_workdir = True
        for path in (self.client_key, self.client_key.with_suffix(".pub"), self.known_hosts):
            self._track(path)
            path.unlink(missing_ok=True)  # ssh-keygen will not overwrite without asking
        _keygen(self.client_key, f"pytest-fabric {self.prefix} client")
        client_pub = self.client_key.with_suffix(".pub").read_text()
        octet = self._octet()
        for i in range(self.n_nodes):
            name = f"node{i + 1:02d}"
            ndir = self._track(self.workdir / name)
            if ndir.exists():
                shutil.rmtree(ndir)  # leftovers of an earlier run with the same workdir
            home, bindir = ndir / "home", ndir / "bin"
            (home / ".ssh").mkdir(parents=True, mode=0o700)
            bindir.mkdir()
            (home / ".ssh" / "authorized_keys").write_text(client_pub)
            self.nodes.append(SimNode(name=name, address=node_address(octet, i),
                                      netns=f"{self.prefix}-{name}", host_veth=f"{self.prefix}h{i + 1:02d}",
                                      dir=ndir, home=home, bindir=bindir))

        def host_key(node: SimNode) -> None:
            _keygen(node.dir / "ssh_host_ed25519_key", f"{node.name} host key")
            node.host_key_pub = (node.dir / "ssh_host_ed25519_key.pub").read_text().strip()
            (node.dir / "sshd_config").write_text(_sshd_config(node.address))

        _each(host_key, self.nodes)
        known = [f"{n.address} {' '.join(n.host_key_pub.split()[:2])}" for n in self.nodes]
        self.known_hosts.write_text("\n".join(known) + "\n")

    def _make_network(self) -> None:
        self._octet()  # started: the subnet is chosen
        # Recorded before the commands run, so a failure halfway still deletes what was made.
        self._links.append(self.bridge)
        root_cmds = [
            f"link add {self.bridge} type bridge",
            f"addr add {self.bridge_address}/16 dev {self.bridge}",
            f"link set {self.bridge} up",
        ]
        for node in self.nodes:
            self._netns.append(node.netns)
            self._links.append(node.host_veth)
            root_cmds += [
                f"netns add {node.netns}",
                f"link add {node.host_veth} type veth peer name eth0 netns {node.netns}",
                f"link set {node.host_veth} master {self.bridge} up",
            ]
        _run(["ip", "-batch", "-"], input="\n".join(root_cmds) + "\n", timeout=60 + len(root_cmds) // 10)

        def configure(node: SimNode) -> None:
            ns_cmds = [
                "link set lo up",
                f"addr add {node.address}/16 dev eth0",
                "link set eth0 up",
            ]
            _run(["ip", "-n", node.netns, "-batch", "-"], input="\n".join(ns_cmds) + "\n")

        _each(configure, self.nodes)

    def _install_cpu_free_tools(self) -> None:
        """iperf3 and fio on every node's PATH are the stand-ins (see ``cpu_free``), with the node's link."""
        from simcluster.hardware import (  # hardware imports this module
            cpu_free_standin_script,
            install_standin_modules,
        )

        scripts = {tool: cpu_free_standin_script(tool) for tool in ("iperf3", "fio")}
        for node in self.nodes:
            install_standin_modules(node)
            self._write_link(node)
            for tool, script in scripts.items():
                self.install_tool(node, tool, script)

    def _write_link(self, node: SimNode) -> None:
        """What the cpu-free stand-ins read of the node: its tbf rate (None: unshaped), its disk."""
        if not self.cpu_free:
            return
        from simcluster.hardware import LINK_FILE, link_document

        tmp = node.bindir / f".{LINK_FILE}.tmp"
        disk = {key: value for key, value in (("disk_mbps", node.disk_mbps or self.disk_mbps),
                                              ("disk_iops", node.disk_iops or self.disk_iops)) if value}
        tmp.write_text(json.dumps(link_document(node.name, node.rate_mbit, **disk)))
        tmp.replace(node.bindir / LINK_FILE)

    def _launch_sshd(self, node: SimNode) -> None:
        # Order matters: bind the node's dirs and copy sshd's files before /tmp is covered by a
        # tmpfs, because the workdir itself may live under /tmp. A private /run keeps one node's
        # sshd pid file and privsep dir apart from the others'.
        script = " && ".join([
            "set -e",
            f"hostname {node.name}",
            "mount -t tmpfs -o mode=0755,size=16m simrun /run",
            "mkdir -p /run/sshd /run/simnode",
            f"cp {node.dir}/sshd_config {node.dir}/ssh_host_ed25519_key /run/simnode/",
            "chmod 600 /run/simnode/ssh_host_ed25519_key",
            f"mount --bind {node.home} /root",
            f"mount --bind {node.bindir} /usr/local/bin",
            "mount -t tmpfs -o mode=1777,size=512m simtmp /tmp",
            f"exec {SSHD} -D -e -f /run/simnode/sshd_config -h /run/simnode/ssh_host_ed25519_key",
        ])
        log = open(node.dir / "sshd.log", "ab")  # noqa: SIM115 - handed to the child
        try:
            node._launcher = subprocess.Popen(
                ["ip", "netns", "exec", node.netns, "unshare", "--mount", "--pid", "--uts",
                 "--fork", "--kill-child", "--mount-proc", "--propagation", "private",
                 "sh", "-c", script],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                # Own session: a Ctrl-C in the terminal must not kill the nodes before
                # teardown, which would leave teardown unable to tell what it stopped.
                start_new_session=True,
            )
        finally:
            log.close()

    def _await_sshd(self, node: SimNode, timeout: float = 10.0) -> None:
        """Find the sshd's PID (unshare's only child) and wait until it sends its banner."""
        launcher = node._launcher
        assert launcher is not None
        deadline = time.monotonic() + timeout
        while node.sshd_pid is None:
            if launcher.poll() is not None:
                raise SimClusterError(self._launch_failure(node, "exited"))
            node.sshd_pid = _first_child(launcher.pid)
            if node.sshd_pid is not None:
                break
            if time.monotonic() > deadline:
                raise SimClusterError(self._launch_failure(node, "never forked"))
            time.sleep(0.01)
        while True:
            if launcher.poll() is not None:
                node.sshd_pid = None
                raise SimClusterError(self._launch_failure(node, "exited"))
            with contextlib.suppress(OSError):
                with socket.create_connection((node.address, 22), timeout=1) as sock:
                    sock.settimeout(1)
                    if sock.recv(4).startswith(b"SSH-"):
                        return
            if time.monotonic() > deadline:
                raise SimClusterError(self._launch_failure(node, "sent no banner"))
            time.sleep(0.02)

    def _launch_failure(self, node: SimNode, what: str) -> str:
        log = (node.dir / "sshd.log").read_text(errors="replace")[-2000:]
        return f"{node.name}: sshd {what} (netns {node.netns}); log {node.dir}/sshd.log:\n{log}"

    def _kill_node_processes(self, node: SimNode) -> None:
        """End the node's PID namespace via its recorded PIDs and reap the launcher."""
        launcher, pid = node._launcher, node.sshd_pid
        if pid is None and launcher is not None and launcher.poll() is None:
            pid = _first_child(launcher.pid)  # start() failed before it looked
        if pid is not None:
            # Killing PID 1 of the namespace kills every process in it. The PID cannot have been
            # reused: it is unshare's child and unshare (our child, not yet reaped) has not
            # waited for it. SIGKILL also ends a frozen sshd.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if launcher is not None:
            if pid is None:
                launcher.kill()  # not forked yet, or its child is gone: nothing else to end
            try:
                launcher.wait(timeout=5)
            except subprocess.TimeoutExpired:
                launcher.kill()  # --kill-child: the namespace's init gets SIGKILL too
                launcher.wait(timeout=5)
        node.sshd_pid = None
        node._launcher = None
        node.frozen = False


def _sshd_config(address: str) -> str:
    """sshd_config for one node: key-only root login on its own address, stock session limits."""
    return "\n".join([
        f"ListenAddress {address}",
        "Port 22",
        "PidFile none",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        # The home dir lives in a workdir owned by whoever ran the tests; skip the owner checks.
        "StrictModes no",
        "AuthorizedKeysFile .ssh/authorized_keys",
        # OpenSSH's own limits (MaxSessions 10, MaxStartups 10:30:100), written out so nobody raises
        # them for convenience: a real cluster's sshd has them, and the plugin must work within them.
        "MaxStartups 10:30:100",
        "MaxSessions 10",
        "LogLevel ERROR",
        "UseDNS no",
        "PrintMotd no",
        "PrintLastLog no",
        "X11Forwarding no",
        # Stand-ins must win over real tools; do not depend on sshd's compiled-in default PATH.
        f"SetEnv PATH={NODE_PATH}",
        "Subsystem sftp /usr/lib/openssh/sftp-server",
        "",
    ])


@contextlib.contextmanager
def _subnet_lock() -> Iterator[None]:
    """An exclusive lock shared by every SimCluster on this machine."""
    os.makedirs(os.path.dirname(LOCK_FILE), exist_ok=True)
    with open(LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def free_second_octet(used: str, seed: int) -> int | None:
    """A second octet X of SECOND_OCTETS with no 10.X.* in ``used`` (ip addr/route output), tried
    from ``seed`` on, so clusters of different processes start from different guesses."""
    for i in range(len(SECOND_OCTETS)):
        octet = SECOND_OCTETS[(seed + i) % len(SECOND_OCTETS)]
        if f"10.{octet}." not in used:
            return octet
    return None


def neighbour_limits(n_nodes: int, current: Sequence[int]) -> list[int]:
    """gc_thresh1/2/3 for a cluster of ``n_nodes``: what NEIGHBOURS_PER_NODE asks, never below ``current``."""
    return [max(now, n_nodes * each) for now, each in zip(current, NEIGHBOURS_PER_NODE, strict=True)]


def _raise_neighbour_limits(n_nodes: int) -> None:
    """Raise the root namespace's neighbour-table limits for the cluster (see NEIGHBOURS_PER_NODE).

    Only ever raised, and left raised: another cluster may be using them. Where /proc/sys is
    read-only (a container), a large cluster may see "No route to host"; that is said in the error.
    """
    paths = [Path(GC_THRESH.format(i)) for i in (1, 2, 3)]
    try:
        current = [int(p.read_text()) for p in paths]
    except OSError:
        return
    # gc_thresh3 first: the kernel wants 1 <= 2 <= 3 only loosely, but raising from the top keeps it so.
    for path, now, wanted in reversed(list(zip(paths, current, neighbour_limits(n_nodes, current), strict=True))):
        if wanted > now:
            with contextlib.suppress(OSError):
                path.write_text(str(wanted))


def _each(work: Callable[[SimNode], None], nodes: Sequence[SimNode]) -> None:
    """Run ``work`` on every node, BUILD_THREADS at a time (the work is mostly waiting on processes)."""
    if len(nodes) <= 4:
        for node in nodes:
            work(node)
        return
    with ThreadPoolExecutor(max_workers=BUILD_THREADS) as pool:
        for _ in pool.map(work, nodes):
            pass  # re-raises the first failure


def _first_child(pid: int) -> int | None:
    """The first child of a process of ours (unshare has exactly one: the node's init)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        return None
    return int(children[0]) if children else None


def _keygen(path: Path, comment: str) -> None:
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])


def _run(argv: list[str], *, check: bool = True, input: str | None = None, timeout: float = 30
         ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(argv, capture_output=True, text=True, input=input, timeout=timeout)
    if check and proc.returncode != 0:
        raise SimClusterError(
            f"command failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr.strip()}"
        )
    return proc
