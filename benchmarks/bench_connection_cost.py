"""What one open SSH connection costs the controller: memory, file descriptors, threads.

    python benchmarks/bench_connection_cost.py [--connections 128] [--step 32] [--busy-s 2]

``--fabric-fanout`` caps how many nodes one controller drives at once, and every node of a run
holds one connection for the whole run (transport/pool.py), so the question for a default that
lets 512 nodes run at once is what 512 open connections, and 512 commands in flight on them, cost
this process. Starts one simulated node (a namespace with its own sshd and an empty home;
tests/simcluster) or, where namespaces are not available, a private sshd on 127.0.0.1
(tests/integration/loopback_sshd.py), stopped by its PID; then opens connections through SSHTransport in steps of ``--step`` up to
``--connections``, one ``run("true")`` on each (so each holds what a node of a run holds: an
authenticated connection and paramiko's reader thread), and reads this process's VmRSS, open file
descriptors (/proc/self/fd) and threads (/proc/self/status) after each step. Then it runs
``sleep --busy-s`` on every connection at once through batches.fan_out (a wave at a fan-out as
wide as the connections) and reads the peak while they run. The per-connection figures are the
least-squares slopes over the steps; 512 is extrapolated from them (or measured, with
``--connections 512``). Needs root (the sshd logs in as the current user with a throwaway key).

What it does not count: the sshd side (each connection is a process on the node, not here), and
the controller's CPU per handshake (benchmarks/bench_512.py measures that). All connections go to
one sshd, which costs the controller what as many nodes would (one socket, one paramiko transport
and its thread each); the figures are this process's own, so a loaded machine slows the run but
does not change them.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(_ROOT / "tests"), str(_ROOT / "tests" / "integration")]

from loopback_sshd import LoopbackSshd, sshd_unavailable  # noqa: E402 - found through the path above
from simcluster import SimCluster, missing_prerequisites  # noqa: E402

from pytest_fabric.run.batches import fan_out  # noqa: E402
from pytest_fabric.transport import SSHSettings, SSHTransport  # noqa: E402
from pytest_fabric.transport.ssh.pacing import raise_open_files_limit  # noqa: E402

TARGET = 512


@dataclass(frozen=True)
class Reading:
    """This process at one moment."""

    connections: int
    rss_kib: int
    fds: int
    threads: int


def read_self(connections: int) -> Reading:
    """VmRSS, open descriptors and threads of this process now."""
    status = Path("/proc/self/status").read_text().splitlines()
    fields = {
        line.split(":", 1)[0]: line.split(":", 1)[1].split() for line in status if ":" in line
    }
    return Reading(
        connections,
        int(fields["VmRSS"][0]),
        len(os.listdir("/proc/self/fd")),
        int(fields["Threads"][0]),
    )


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def peak_while(fn: object, connections: int, interval_s: float = 0.05) -> tuple[Reading, float]:
    """Run ``fn()`` and sample this process meanwhile; the peak reading and how long it took."""
    assert callable(fn)
    peak = read_self(connections)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            now = read_self(connections)
            peak = Reading(
                connections,
                max(peak.rss_kib, now.rss_kib),
                max(peak.fds, now.fds),
                max(peak.threads, now.threads),
            )
            done.wait(interval_s)

    sampler = threading.Thread(target=sample, name="bench-sampler", daemon=True)
    started = time.perf_counter()
    sampler.start()
    try:
        fn()
    finally:
        done.set()
        sampler.join()
    return peak, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--connections", type=int, default=128, help="connections to open in all (default 128)"
    )
    parser.add_argument(
        "--step", type=int, default=32, help="read the process every this many (default 32)"
    )
    parser.add_argument(
        "--busy-s",
        type=float,
        default=2.0,
        help="seconds each command runs in the wave (default 2)",
    )
    args = parser.parse_args()
    why_not = sshd_unavailable()
    if why_not:
        print(f"skipped: {why_not}")
        return 0
    os.environ.pop("SSH_AUTH_SOCK", None)
    raise_open_files_limit()
    transports: list[SSHTransport] = []
    with (
        tempfile.TemporaryDirectory(prefix="pf-bench-conn-") as tmp,
        contextlib.ExitStack() as stack,
    ):
        work = Path(tmp)
        empty_config = work / "ssh_config"
        empty_config.write_text("")
        # A simulated node's home is empty; this machine's root runs ~/.bashrc for every command,
        # which with 128 commands at once is what the machine would measure instead.
        if not missing_prerequisites():
            cluster = stack.enter_context(SimCluster(1, work / "sim", name="bench"))
            node = cluster.nodes[0]
            host, port, user, key, known_hosts = (
                node.address,
                22,
                "root",
                cluster.client_key,
                cluster.known_hosts,
            )
            where = "one simulated node (empty home)"
        else:
            sshd = stack.enter_context(LoopbackSshd(work / "sshd"))
            known_hosts = work / "known_hosts"
            known_hosts.write_text(sshd.known_hosts_line())
            host, port, user, key = "127.0.0.1", sshd.port, sshd.user, sshd.client_key
            where = "loopback sshd"
        print(f"sshd: {where}")
        settings = SSHSettings(
            host=host,
            port=port,
            user=user,
            identity_file=key,
            known_hosts=known_hosts,
            ssh_config=empty_config,
            connect_timeout=30,
        )
        gc.collect()
        readings = [read_self(0)]
        try:
            while len(transports) < args.connections:
                batch = min(args.step, args.connections - len(transports))
                for _ in range(batch):
                    transport = SSHTransport(f"bench{len(transports):04d}", settings)
                    transports.append(transport)
                    transport.run("true", timeout=60)
                gc.collect()
                readings.append(read_self(len(transports)))
                r = readings[-1]
                print(
                    f"{r.connections:4d} open: VmRSS {r.rss_kib / 1024:7.1f} MiB, {r.fds:5d} fds, {r.threads:4d} threads",
                    flush=True,
                )
            idle = readings[-1]
            command = f"sleep {args.busy_s:g}"
            busy, took = peak_while(
                lambda: fan_out(transports, lambda t: t.run(command, timeout=60), "all at once"),
                len(transports),
            )
        finally:
            fan_out(transports, lambda t: t.close(), 32)
    xs = [float(r.connections) for r in readings]
    per_kib = slope(xs, [float(r.rss_kib) for r in readings])
    per_fd = slope(xs, [float(r.fds) for r in readings])
    per_thread = slope(xs, [float(r.threads) for r in readings])
    base = readings[0]
    n = idle.connections
    busy_extra_kib = (busy.rss_kib - idle.rss_kib) / n
    busy_extra_threads = (busy.threads - idle.threads) / n
    busy_extra_fds = (busy.fds - idle.fds) / n
    print(
        f"\nbefore any connection: VmRSS {base.rss_kib / 1024:.1f} MiB, {base.fds} fds, {base.threads} threads"
    )
    print(
        f"per open connection (slope over {len(readings)} readings, 0..{n}): {per_kib:.0f} KiB, "
        f"{per_fd:.2f} fds, {per_thread:.2f} threads"
    )
    print(
        f"{n} commands in flight at once ({command}, {took:.1f} s): peak VmRSS {busy.rss_kib / 1024:.1f} MiB "
        f"(+{busy_extra_kib:.0f} KiB a command over idle), {busy.fds} fds (+{busy_extra_fds:.2f} a command: its "
        f"channel's pipe and its epoll selector), {busy.threads} threads (+{busy_extra_threads:.2f} a command: the "
        "fan-out's worker)"
    )
    at_target_mib = (base.rss_kib + TARGET * (per_kib + busy_extra_kib)) / 1024
    at_target_fds = base.fds + TARGET * (per_fd + busy_extra_fds)
    at_target_threads = base.threads + TARGET * (per_thread + busy_extra_threads)
    measured = "measured" if n >= TARGET else f"extrapolated from {n}"
    print(
        f"{TARGET} connections with a command in flight on each ({measured}): ~{at_target_mib:.0f} MiB VmRSS, "
        f"~{at_target_fds:.0f} fds, ~{at_target_threads:.0f} threads"
    )
    print(
        f"VmRSS over a 1.5 GB controller budget: {at_target_mib * 2**20 / 1.5e9:.2f}; "
        f"fds past select()'s 1,024: {'yes' if at_target_fds > 1024 else 'no'} (the transport waits with epoll)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
