"""Per-command overhead of SSHTransport against OpenSSH with ControlMaster.

    python benchmarks/bench_transport.py [--commands 200] [--rounds 3]

Starts one simulated node (a network namespace with its own sshd and an empty
home) or, where namespaces are not available, its own sshd on 127.0.0.1, and
stops it by PID at the end.  Then it times
``run("true")`` through SSHTransport with TCP_NODELAY (as shipped) and without
it, and ``ssh -o ControlMaster=auto ... true`` through a warm master.  The three
are measured in interleaved rounds so a busy machine slows all of them alike;
the best round of each is reported, and the ratio is the figure that matters.
Needs root (the sshd logs in as the current user with a throwaway key).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(_ROOT / "tests"), str(_ROOT / "tests" / "integration")]

from loopback_sshd import LoopbackSshd, sshd_unavailable  # noqa: E402 - found through the path above
from simcluster import SimCluster, missing_prerequisites  # noqa: E402

from pytest_fabric.transport import SSHSettings, SSHTransport  # noqa: E402


def _client_cpu_s() -> float:
    """CPU time of this process plus its finished children (the ssh clients)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def per_command_ms(run_once: Callable[[], object], commands: int) -> tuple[float, float]:
    """Wall-clock and client-CPU milliseconds per command.

    Wall clock includes the node's side (sshd forks a session, the shell runs),
    which a busy machine inflates; client CPU is what the client itself costs.
    """
    started, cpu = time.perf_counter(), _client_cpu_s()
    for _ in range(commands):
        run_once()
    wall = (time.perf_counter() - started) * 1000 / commands
    return wall, (_client_cpu_s() - cpu) * 1000 / commands


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--commands", type=int, default=200, help="commands per measurement (default 200)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds; the best counts (default 3)"
    )
    args = parser.parse_args()
    why_not = sshd_unavailable()
    if why_not:
        print(f"skipped: {why_not}")
        return 0
    os.environ.pop("SSH_AUTH_SOCK", None)
    with tempfile.TemporaryDirectory(prefix="pf-bench-") as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        empty_config = work / "ssh_config"
        empty_config.write_text("")
        # Prefer a simulated node: its /root is empty.  Logging in to this machine's own root
        # makes bash source ~/.bashrc for every command (Debian's bash does so for ssh), which
        # here costs ~90 ms per command for both clients and drowns what is being measured.
        if not missing_prerequisites():
            cluster = stack.enter_context(SimCluster(1, work / "sim", name="bench"))
            node = cluster.nodes[0]
            host, port, user = node.address, 22, "root"
            client_key, known_hosts, where = cluster.client_key, cluster.known_hosts, "simulated node (empty home)"
        else:
            sshd = stack.enter_context(LoopbackSshd(work / "sshd"))
            known_hosts = work / "known_hosts"
            known_hosts.write_text(sshd.known_hosts_line())
            host, port, user, client_key = "127.0.0.1", sshd.port, sshd.user, sshd.client_key
            where = "loopback sshd (this machine's ~/.bashrc runs per command)"
        settings = SSHSettings(
            host=host,
            port=port,
            user=user,
            identity_file=client_key,
            known_hosts=known_hosts,
            ssh_config=empty_config,
        )
        fast = SSHTransport("bench", settings)
        slow = SSHTransport("bench-nagle", settings, _tcp_nodelay=False)
        control = work / "cm"
        ssh = [
            "ssh",
            "-F",
            str(empty_config),
            "-o",
            "BatchMode=yes",
            "-o",
            f"UserKnownHostsFile={known_hosts}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "ControlMaster=auto",
            "-o",
            f"ControlPath={control}",
            "-o",
            "ControlPersist=60",
            "-i",
            str(client_key),
            "-p",
            str(port),
            f"{user}@{host}",
        ]
        candidates: dict[str, Callable[[], object]] = {
            "pytest-fabric": lambda: fast.run("true", timeout=30),
            "pytest-fabric without TCP_NODELAY": lambda: slow.run("true", timeout=30),
            "OpenSSH ControlMaster": lambda: subprocess.run([*ssh, "true"], check=True),
        }
        try:
            for run_once in candidates.values():  # connect, start the master, warm up
                for _ in range(5):
                    run_once()
            best = {name: float("inf") for name in candidates}
            cpu = {name: float("inf") for name in candidates}
            for round_number in range(1, args.rounds + 1):
                for name, run_once in candidates.items():
                    ms, cpu_ms = per_command_ms(run_once, args.commands)
                    best[name], cpu[name] = min(best[name], ms), min(cpu[name], cpu_ms)
                    print(
                        f"round {round_number}: {name:36s} {ms:7.2f} ms/command "
                        f"(client CPU {cpu_ms:5.2f} ms)"
                    )
        finally:
            fast.close()
            slow.close()
            # Ask the master we started to exit (it has no PID of ours to kill).
            subprocess.run([*ssh[:-1], "-O", "exit", ssh[-1]], capture_output=True, check=False)
    ours, nagle, openssh = (
        best["pytest-fabric"],
        best["pytest-fabric without TCP_NODELAY"],
        best["OpenSSH ControlMaster"],
    )
    print(
        f"\n{args.commands} x run('true'), best of {args.rounds} interleaved rounds, {where}"
    )
    print(f"without TCP_NODELAY: {nagle:.1f} ms/command ({nagle / ours:.1f}x slower than with it)")
    print(
        f"client CPU per command: pytest-fabric {cpu['pytest-fabric']:.2f} ms, "
        f"OpenSSH ControlMaster {cpu['OpenSSH ControlMaster']:.2f} ms"
    )
    print(
        f"pytest-fabric {ours:.1f} ms/command, OpenSSH ControlMaster {openssh:.1f} ms/command: "
        f"ratio {ours / openssh:.2f} (goal <= 1.0)"
    )
    return 0 if ours <= openssh else 1


if __name__ == "__main__":
    sys.exit(main())
