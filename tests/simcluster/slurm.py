"""A real Slurm cluster on the simulated nodes: one munged, one slurmctld, one slurmd per node.

Built on a running :class:`~simcluster.cluster.SimCluster` (see docs/simulated-cluster.md for
what it took on this machine)::

    root namespace                                 node namespaces (net, mount, pid, uts)
    munged    socket STATE/munge/munge.socket      slurmd -N node01   (sees the node's /tmp,
    slurmctld under `unshare --uts` (simctl),      slurmd -N node02    /usr/local/bin stand-ins
              on the bridge address, a free port   ...                 and processes)
    srun/salloc/scontrol with SLURM_CONF=STATE/slurm.conf

Each slurmd joins all of its node's namespaces (as the node's sshd runs there), so a step sees
what an SSH session sees: the same stand-ins, the same /tmp, the same process table; killing the
node's sshd (``SimCluster.stop_sshd``) ends its slurmd too, as a reboot would.

Everything lives in a state directory of its own under /var/lib (not /tmp: every simulated node has
its own /tmp), and every process is torn down by the PID recorded when it was started.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from .cluster import SimCluster, SimClusterError, _first_child

__all__ = ["SLURM_BINARIES", "SlurmSim", "missing_slurm"]

SLURM_BINARIES = ("munged", "mungekey", "slurmctld", "slurmd", "srun", "salloc", "scontrol", "squeue", "sinfo", "scancel")
STATE_ROOT = Path("/var/lib/pytest-fabric-slurm")
CONTROLLER_NAME = "simctl"
PARTITION = "sim"


def missing_slurm() -> list[str]:
    """Why a simulated Slurm cannot run here (empty when it can): the binaries and the munge user."""
    reasons = [f"{tool} not on PATH" for tool in SLURM_BINARIES if shutil.which(tool) is None]
    try:
        pwd.getpwnam("munge")
    except KeyError:
        reasons.append("no munge user")
    if reasons:
        reasons.append("apt-get install -y slurmd slurmctld slurm-client munge")
    return reasons


def _free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


class SlurmSim:
    """Slurm over every node of ``cluster``; a context manager, like the SimCluster itself."""

    def __init__(self, cluster: SimCluster, *, gpus_per_node: int = 8) -> None:
        self.cluster = cluster
        # Every node's GPUs as Slurm knows them (Gres=gpu:N, one device file each in gres.conf):
        # the default FakeHardware's eight, so an allocation can ask for what a profile expects.
        self.gpus_per_node = gpus_per_node
        self.name = "pf" + uuid.uuid4().hex[:6]
        self.state = STATE_ROOT / self.name
        self.conf = self.state / "slurm.conf"
        self.munge_socket = self.state / "munge-socket" / "munge.socket"
        self.port = 0
        self._munged: subprocess.Popen[bytes] | None = None
        self._ctld: subprocess.Popen[bytes] | None = None
        # node name -> (nsenter launcher, slurmd's host PID)
        self._slurmd: dict[str, tuple[subprocess.Popen[str], int | None]] = {}

    # ----------------------------------------------------------------- lifecycle

    def __enter__(self) -> SlurmSim:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def env(self) -> dict[str, str]:
        """Environment for Slurm client commands (srun, salloc, ...) talking to this cluster."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        return env

    @property
    def nodes(self) -> list[str]:
        return [n.name for n in self.cluster.nodes]

    def start(self, timeout: float = 30.0) -> None:
        """Write the configuration, start munged, slurmctld and every slurmd; wait until all are idle."""
        missing = missing_slurm()
        if missing:
            raise SimClusterError("cannot start a simulated Slurm: " + "; ".join(missing))
        atexit.register(self.stop)
        try:
            self._write_files()
            self._start_munged()
            self._start_slurmctld()
            for node in self.cluster.nodes:
                self.start_slurmd(node.name)
            self.wait_idle(self.nodes, timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Cancel every job, then end every daemon by its PID and remove the state dir. Idempotent."""
        if self._ctld is not None and self._ctld.poll() is None:
            self.run(["scancel", "--full", "--partition", PARTITION], check=False, timeout=10)
        for name in list(self._slurmd):
            self.stop_slurmd(name)
        for proc in (self._ctld, self._munged):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
        self._ctld = self._munged = None
        shutil.rmtree(self.state, ignore_errors=True)
        atexit.unregister(self.stop)

    # ----------------------------------------------------------------- daemons

    def _write_files(self) -> None:
        STATE_ROOT.mkdir(mode=0o755, exist_ok=True)
        os.chmod(STATE_ROOT, 0o755)  # munged refuses a socket under a directory others may write
        self.state.mkdir(mode=0o755)
        for sub in ("ctld", "spool", "log", "dev"):
            (self.state / sub).mkdir()
        munge = self.state / "munge"
        munge.mkdir(mode=0o700)
        # Its own directory: munged wants the socket's directory searchable by everyone, the key's not.
        self.munge_socket.parent.mkdir(mode=0o755)
        user = pwd.getpwnam("munge")
        subprocess.run(["mungekey", "--create", "--keyfile", str(munge / "munge.key")], check=True,
                       capture_output=True)
        for path in (munge, munge / "munge.key", self.munge_socket.parent):
            os.chown(path, user.pw_uid, user.pw_gid)
        address = self.cluster.bridge_address
        self.port = _free_port(address)
        first, last = self.cluster.nodes[0].address, self.cluster.nodes[-1].address
        prefix, lo = first.rsplit(".", 1)
        hi = last.rsplit(".", 1)[1]
        names = f"node[01-{len(self.cluster.nodes):02d}]"
        self.conf.write_text("\n".join([
            f"ClusterName={self.name}",
            f"SlurmctldHost={CONTROLLER_NAME}({address})",
            f"SlurmctldPort={self.port}",
            "SlurmdPort=6818",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={self.state}/ctld",
            f"SlurmdSpoolDir={self.state}/spool/%n",
            f"SlurmctldPidFile={self.state}/slurmctld.pid",
            f"SlurmdPidFile={self.state}/spool/%n.pid",
            f"SlurmctldLogFile={self.state}/log/slurmctld.log",
            f"SlurmdLogFile={self.state}/log/%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            # No cgroup v2 here (cgroup v1 controllers under a tmpfs): track by /proc, no task plugin.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            # cons_tres, as GPU clusters run: under select/linear every step of a job that holds gres
            # is refused ("Invalid generic resource (gres) specification"), seen with 22.05.8.
            "SelectType=select/cons_tres",
            "ReturnToService=2",
            # Short, so a killed slurmd shows as DOWN and cancelled steps end within seconds.
            "SlurmdTimeout=10",
            "MessageTimeout=5",
            "KillWait=2",
            "MinJobAge=2",
            "InactiveLimit=0",
            "GresTypes=gpu",
            # Sixteen CPUs as the configuration says, not the machine's two (config_overrides): a step
            # of one MPI rank per GPU needs a CPU per rank, as on a real GPU node.
            "SlurmdParameters=config_overrides",
            f"NodeName={names} NodeAddr={prefix}.[{lo}-{hi}] CPUs=16 RealMemory=1000 "
            + (f"Gres=gpu:{self.gpus_per_node} " if self.gpus_per_node else "") + "State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={names} Default=YES MaxTime=INFINITE State=UP",
            # docs/slurm.md's commands say -p gpu: the same nodes under that name, so they run as written
            f"PartitionName=gpu Nodes={names} MaxTime=INFINITE State=UP",
            "",
        ]))
        (self.state / "gres.conf").write_text(self._gres_conf(names))
        (self.state / "cgroup.conf").write_text(
            "CgroupPlugin=cgroup/v1\nCgroupAutomount=no\nConstrainCores=no\nConstrainRAMSpace=no\n"
        )

    def _gres_conf(self, names: str) -> str:
        """gres.conf: each node's GPUs as device files, character devices with /dev/null's numbers.

        slurmd 22.05 refuses a File= that is not a character or block device ("fix your gres.conf")
        and sets CUDA_VISIBLE_DEVICES in a step from the files it was given; no NVML here, so no
        autodetection.
        """
        devices = self.state / "dev"
        for index in range(self.gpus_per_node):
            os.mknod(devices / f"nvidia{index}", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        if not self.gpus_per_node:
            return "AutoDetect=off\n"
        files = f"{devices}/nvidia[0-{self.gpus_per_node - 1}]" if self.gpus_per_node > 1 else f"{devices}/nvidia0"
        return f"AutoDetect=off\nNodeName={names} Name=gpu File={files}\n"

    def _start_munged(self) -> None:
        munge = self.state / "munge"
        user = pwd.getpwnam("munge")
        log = open(self.state / "log" / "munged.out", "ab")  # noqa: SIM115 - handed to the child
        try:
            self._munged = subprocess.Popen(
                ["munged", "--foreground", f"--socket={self.munge_socket}", f"--key-file={munge}/munge.key",
                 f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log",
                 f"--seed-file={munge}/munged.seed"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, user=user.pw_uid, group=user.pw_gid,
                start_new_session=True,
            )
        finally:
            log.close()
        self._await(lambda: self.munge_socket.exists(), "munged", self._munged, "munged.out")

    def _start_slurmctld(self) -> None:
        log = open(self.state / "log" / "slurmctld.out", "ab")  # noqa: SIM115 - handed to the child
        try:
            # slurmctld runs only where the host name is SlurmctldHost's.
            self._ctld = subprocess.Popen(
                ["unshare", "--uts", "sh", "-c", f"hostname {CONTROLLER_NAME} && exec slurmctld -D -f {self.conf}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env, start_new_session=True,
            )
        finally:
            log.close()
        self._await(lambda: self.run(["scontrol", "ping"], check=False, timeout=5).returncode == 0,
                    "slurmctld", self._ctld, "slurmctld.out")

    def start_slurmd(self, node: str) -> None:
        """Start ``node``'s slurmd inside all of the node's namespaces."""
        if node in self._slurmd:
            raise SimClusterError(f"{node}: slurmd already running")
        log = open(self.state / "log" / f"{node}.out", "ab")  # noqa: SIM115 - handed to the child
        try:
            launcher = self.cluster.popen(
                node, ["slurmd", "-D", "-f", str(self.conf), "-N", node],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            )
        finally:
            log.close()
        pid: int | None = None
        deadline = time.monotonic() + 10
        while pid is None and launcher.poll() is None and time.monotonic() < deadline:
            pid = _first_child(launcher.pid)  # nsenter forks into the node's PID namespace
            time.sleep(0.01)
        self._slurmd[node] = (launcher, pid)
        if pid is None:
            raise SimClusterError(f"{node}: slurmd did not start; see {self.state}/log/{node}.out")

    def ensure_slurmds(self, timeout: float = 30) -> None:
        """Start again the slurmd of every node whose namespaces were restarted (a test stopped its sshd)."""
        restarted = []
        for node in self.nodes:
            _, pid = self._slurmd.get(node, (None, None))
            if pid is None or not Path(f"/proc/{pid}").exists():
                self.stop_slurmd(node)
                self.start_slurmd(node)
                restarted.append(node)
        if restarted:
            self.wait_idle(self.nodes, timeout)

    def stop_slurmd(self, node: str) -> None:
        """End ``node``'s slurmd and any step daemons it left, by PID (Slurm will call the node DOWN)."""
        launcher, pid = self._slurmd.pop(node, (None, None))
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(SimClusterError, KeyError):
            for step_pid, cmdline in self.cluster.processes(node):
                if cmdline.startswith("slurmstepd"):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(step_pid, signal.SIGKILL)
        if launcher is not None:
            try:
                launcher.wait(5)
            except subprocess.TimeoutExpired:
                launcher.kill()
                launcher.wait(5)

    def _await(self, ready: object, what: str, proc: subprocess.Popen[bytes], log: str, timeout: float = 15) -> None:
        assert callable(ready)
        deadline = time.monotonic() + timeout
        while not ready():
            if proc.poll() is not None or time.monotonic() > deadline:
                text = (self.state / "log" / log).read_text(errors="replace")[-2000:]
                raise SimClusterError(f"{what} did not come up; {self.state}/log/{log}:\n{text}")
            time.sleep(0.05)

    # ----------------------------------------------------------------- using it

    def run(self, argv: Sequence[str], *, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Run a Slurm client command against this cluster."""
        proc = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=timeout)
        if check and proc.returncode != 0:
            raise SimClusterError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
        return proc

    def node_states(self) -> dict[str, str]:
        """Each node's state as sinfo prints it (idle, alloc, drain, down*, ...)."""
        out = self.run(["sinfo", "-h", "-N", "-o", "%N %t"]).stdout
        return dict(line.split() for line in out.splitlines() if line.strip())

    def wait_idle(self, nodes: Sequence[str], timeout: float = 30) -> None:
        """Wait until every node of ``nodes`` is idle (registered and free)."""
        deadline = time.monotonic() + timeout
        while True:
            states = self.node_states()
            if all(states.get(n) == "idle" for n in nodes):
                return
            if time.monotonic() > deadline:
                raise SimClusterError(f"nodes not idle after {timeout:g} s: {states}; logs in {self.state}/log")
            time.sleep(0.2)

    def drain(self, node: str, reason: str = "pytest-fabric test") -> None:
        self.run(["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}"])

    def resume(self, node: str) -> None:
        """Bring a drained or down node back (ReturnToService=2 may have done it already for a down one)."""
        proc = self.run(["scontrol", "update", f"nodename={node}", "state=resume"], check=False)
        if proc.returncode != 0 and self.node_states().get(node, "").rstrip("*") not in ("idle", "alloc", "mix"):
            raise SimClusterError(f"scontrol update nodename={node} state=resume: {proc.stderr.strip()}")

    @contextlib.contextmanager
    def drained(self, node: str, reason: str = "pytest-fabric test") -> Iterator[None]:
        """``node`` is drained for the block, then resumed (and idle again)."""
        self.drain(node, reason)
        try:
            yield
        finally:
            self.resume(node)
            self.wait_idle([node])

    def jobs(self) -> list[str]:
        """Every job and step squeue lists, one line each (empty: nothing of any run is left)."""
        jobs = self.run(["squeue", "-h", "-o", "%i %j %T"]).stdout.splitlines()
        steps = self.run(["squeue", "-h", "-s", "-o", "%i %j"]).stdout.splitlines()
        return [line for line in jobs + steps if line.strip()]

    def launched_steps(self) -> dict[str, set[str]]:
        """Every step the slurmds have launched so far (``12.3``), with the nodes it ran on, from their logs."""
        steps: dict[str, set[str]] = {}
        for log in (self.state / "log").glob("node*.log"):
            for line in log.read_text(errors="replace").splitlines():
                if "launch task StepId=" in line:
                    steps.setdefault(line.split("StepId=", 1)[1].split()[0], set()).add(log.stem)
        return steps

    def write_inventory(self, path: Path, *, nodes: Sequence[str] | None = None,
                        extra: dict[str, Any] | None = None, wait_s: int = 10) -> Path:
        """The session cluster's inventory with every node reached through Slurm (partition sim)."""
        doc: dict[str, Any] = {"slurm": {"partition": PARTITION, "wait": wait_s, "time": 10}, **(extra or {})}
        written = self.cluster.write_inventory(path, nodes=nodes, extra=doc)
        data = yaml.safe_load(written.read_text())
        data["defaults"]["transport"] = "slurm"
        written.write_text(yaml.safe_dump(data, sort_keys=False))
        return written
