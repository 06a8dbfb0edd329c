"""512 cpu-free simulated nodes through the real command line: wall vs ideal, controller memory and CPU, errors, plan.

    sudo python benchmarks/bench_512.py [--nodes 512] [--fanout 512] [--duration 2] [--py-spy PATH]
    sudo python benchmarks/bench_512.py --collect-only [--nodes 512]

The cluster is SimCluster(cpu_free=True): iperf3 is a stand-in that sleeps for -t and reports the
node's link (tests/simcluster/standins/fabric_standin.py), so the run measures the controller, not
this machine's cores running hundreds of iperf3s. Stock sshd limits (MaxSessions 10,
MaxStartups 10:30:100). The profile is the issue's: mtu, a small sequential write, TCP random:4 of
D seconds. Printed:

- wall: the pytest session, start to exit;
- ideal: rounds x D (each TCP round of disjoint pairs takes D when its pairs run at once) plus
  waves x the one-node time of each per-node check (mtu, sequential_write), measured here on 1 node;
- the SSH commands the controller sent, by what they ask (counted in SSHTransport.run/start by a
  small plugin the benchmark loads, ``fabric_bench_commands``), and per TCP pair;
- wall / ideal (goal <= 1.25), the controller's peak RSS (VmHWM, as wait4's ru_maxrss; goal < 1.5 GB)
  and CPU seconds (user + system), errors (goal 0, each distinct message counted), and plan / wall
  (the plan pytest prints; goal within 25 %);
- machine: the CPU every core of this machine spent during the run (/proc/stat), the controller's
  share, and the floor it sets: 512 simulated nodes share this machine's cores, where a real
  cluster's nodes each have their own, so a run cannot take less than that CPU over the cores.

``--py-spy PATH`` samples the controller with py-spy (every thread) and writes its top functions
to PATH; ``--collect-only`` plans a 512-node ndr400-large run with a shared mount and an egress
target instead (no cluster needed) and prints the plan and its phases.
Needs root (network namespaces) and sshd; traffic stays inside the namespaces it creates.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # simcluster; pytest_fabric is the installed copy

from simcluster import SimCluster, missing_prerequisites  # noqa: E402

from pytest_fabric.checks.builtin import load_profile  # noqa: E402
from pytest_fabric.run.pairs import make_pairs  # noqa: E402

GOAL_WALL = 1.25
GOAL_RSS_GB = 1.5
GOAL_PLAN = 0.25

PROFILE = """name: bench512
inter_node:
  pairs: random:4
  mtu: {{min: 1500, source: "benchmark"}}
  tcp_throughput: {{min: 1 Gb/s, streams: 1, duration: {d} s, source: "benchmark"}}
storage:
  sequential_write: {{min: 1 MB/s, size: 4 MiB, direct: false, ioengine: psync, source: "benchmark"}}
"""
PER_NODE = ("mtu", "sequential_write")

# Loaded into the measured pytest (-p fabric_bench_commands): counts the commands the controller
# sends by what they ask, so the benchmark can say what a TCP pair costs in SSH commands.
COMMAND_COUNTER = """
import collections, json, os, threading
from pytest_fabric.transport.ssh.transport import SSHTransport

KINDS = (("interface", "ip -o addr show"), ("link rate", "/speed"), ("numa node", "numa_node"),
         ("ss poll", "ss -Hltn"), ("iperf3 server", "iperf3 -s"), ("iperf3 client", "iperf3 -c"),
         ("mtu link", "ip -o link show"), ("fio", "fio "), ("findmnt", "findmnt "), ("mktemp", "mktemp "),
         ("rm", "rm -rf "))
counts = collections.Counter()
lock = threading.Lock()


def _count(command):
    kind = next((k for k, needle in KINDS if needle in command), "other")
    with lock:
        counts[kind] += 1


def _wrap(method):
    def counted(self, command, **kw):
        _count(command)
        return method(self, command, **kw)
    return counted


SSHTransport.run = _wrap(SSHTransport.run)
SSHTransport.start = _wrap(SSHTransport.start)


def pytest_unconfigure(config):
    with open(os.environ["FABRIC_BENCH_COMMANDS"], "w") as out:
        json.dump(dict(counts), out)
"""
TCP_KINDS = ("interface", "link rate", "numa node", "ss poll", "iperf3 server", "iperf3 client")


def _pytest(
    work: Path, args: list[str], tag: str, timeout_s: int, py_spy: str | None = None
) -> tuple[float, float, float, str, dict[str, Any] | None]:
    """Run pytest; (wall s, peak RSS GB, CPU s, stdout, record). RSS and CPU are wait4's for pytest itself.

    The commands it sent, by kind, are in ``work/{tag}.commands.json``.
    """
    record = work / f"{tag}.json"
    out = work / f"{tag}.out"
    (work / "fabric_bench_commands.py").write_text(COMMAND_COUNTER)
    env = dict(os.environ, FABRIC_BENCH_COMMANDS=str(work / f"{tag}.commands.json"))
    # As users run it: pytest caches rewritten test modules as bytecode, which this variable (set on
    # some development machines) turns off, and every run would parse and rewrite them again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(work)) if p)
    argv = [
        sys.executable,
        "-m",
        "pytest",
        *args,
        "--conformance-json",
        str(record),
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-p",
        "fabric_bench_commands",
        "-q",
    ]
    started = time.monotonic()
    busy_before = _machine_busy_s()
    with out.open("w") as sink:
        proc = subprocess.Popen(argv, cwd=work, stdout=sink, stderr=subprocess.STDOUT, env=env)
        spy = None
        if py_spy:
            spy = subprocess.Popen(
                [
                    py_spy,
                    "record",
                    "--pid",
                    str(proc.pid),
                    "--format",
                    "raw",
                    "--rate",
                    "50",
                    "--output",
                    str(work / "spy.txt"),
                    "--nonblocking",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        deadline = started + timeout_s
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.send_signal(2)  # SIGINT: pytest unwinds and closes its connections
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.2)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if spy is not None:
            spy.wait(timeout=60)
    wall = time.monotonic() - started
    MACHINE_BUSY_S[tag] = _machine_busy_s() - busy_before
    text = out.read_text()
    loaded = json.loads(record.read_text()) if record.exists() else None
    return wall, usage.ru_maxrss / 1024 / 1024, usage.ru_utime + usage.ru_stime, text, loaded


#: CPU seconds the whole machine spent (every core, not idle) during each measured pytest, by tag
MACHINE_BUSY_S: dict[str, float] = {}


def _machine_busy_s() -> float:
    """CPU seconds this machine has spent busy since boot (/proc/stat: all but idle and iowait)."""
    with open("/proc/stat") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _check_seconds(record: dict[str, Any], name: str) -> float:
    return max(
        (float(c.get("duration_s") or 0) for c in record["checks"] if c["check"] == name),
        default=0.0,
    )


def _errors(record: dict[str, Any]) -> Counter[str]:
    found: Counter[str] = Counter()
    for check in record["checks"]:
        if check.get("outcome") == "error":
            message = str(check.get("message") or check.get("detail") or "")
            found[f"{check['check']}: " + re.sub(r"\d+(\.\d+)*", "N", message)[:160]] += 1
    return found


def _spy_top(path: Path, limit: int = 25) -> list[str]:
    """py-spy raw output (folded stacks) -> the functions most often on a stack's top, as shares."""
    self_time: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = [f for f in stack.split(";") if f.strip()]
        if not frames:
            continue
        self_time[frames[-1]] += int(count)
        total += int(count)
    return [f"{n / max(total, 1):6.1%}  {frame}" for frame, n in self_time.most_common(limit)]


def run_cluster(args: argparse.Namespace) -> int:
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        profile = work / "bench512.yaml"
        profile.write_text(PROFILE.format(d=args.duration))
        strategy = load_profile(str(profile), []).document.inter_node.pairs
        started = time.monotonic()
        with SimCluster(args.nodes, work / "sim", name="bench", cpu_free=True) as cluster:
            print(f"{args.nodes} cpu-free simulated nodes up in {cluster.started_s:.1f} s")
            one = cluster.write_inventory(work / "one.yaml", nodes=cluster.nodes[:1])
            every = cluster.write_inventory(work / "every.yaml")
            _, _, _, out1, record1 = _pytest(
                work, ["--cluster", str(one), "--profile", str(profile)], "one", 600
            )
            if record1 is None:
                raise SystemExit(f"the 1-node run left no record:\n{out1[-3000:]}")
            per_node = {name: _check_seconds(record1, name) for name in PER_NODE}
            wall, rss_gb, cpu_s, out, record = _pytest(
                work,
                [
                    "--cluster",
                    str(every),
                    "--profile",
                    str(profile),
                    "--fabric-fanout",
                    str(args.fanout),
                    # the cpu-free iperf3 sleeps instead of sending: the interfaces' counters (rightly)
                    # do not back its figures, so the witness is off here (bench_corroboration.py costs it)
                    "--fabric-no-witness",
                ],
                "every",
                args.timeout,
                args.py_spy,
            )
            built_s = cluster.started_s or 0.0
            torn = time.monotonic()
        teardown_s = time.monotonic() - torn
        if record is None:
            raise SystemExit(f"the {args.nodes}-node run left no record:\n{out[-3000:]}")
        names = list(record["run"]["nodes"])
        rounds = max(p.round for p in make_pairs(names, strategy)) + 1
        waves = math.ceil(len(names) / args.fanout)
        ideal = rounds * args.duration + sum(waves * s for s in per_node.values())
        planned = float((record["run"].get("plan") or {}).get("planned_s") or 0)
        errors = _errors(record)
        outcomes = Counter(c.get("outcome") for c in record["checks"])
        summary = [line for line in out.splitlines() if line.strip()][-1:]
        print(
            f"{len(names)} nodes, --fabric-fanout {args.fanout}: {sum(outcomes.values())} tests "
            f"{dict(outcomes)} [{summary[0].strip('= ') if summary else ''}]"
        )
        print(
            f"wall {wall:.0f} s; ideal {ideal:.0f} s = {rounds} rounds x {args.duration} s + "
            + " + ".join(f"{waves} wave x {s:.1f} s ({n})" for n, s in per_node.items())
            + f"; wall/ideal {wall / ideal:.2f} (goal <= {GOAL_WALL})"
        )
        print(
            f"controller: peak RSS {rss_gb:.2f} GB (goal < {GOAL_RSS_GB}), CPU {cpu_s:.0f} s "
            f"({cpu_s / max(sum(outcomes.values()), 1) * 1000:.0f} ms a test)"
        )
        cores = os.cpu_count() or 1
        busy = MACHINE_BUSY_S.get("every", 0.0)
        floor = busy / cores
        print(
            f"machine: {cores} cores busy {busy / (wall * cores):.0%} of the wall, {busy:.0f} s of CPU "
            f"(the controller {cpu_s:.0f} s, the nodes' sshd, shells and stand-ins and the rest "
            f"{busy - cpu_s:.0f} s); bound by this machine's CPU the run takes at least {floor:.0f} s: "
            f"wall/floor {wall / max(floor, 1e-9):.2f}, ideal/floor {ideal / max(floor, 1e-9):.2f}"
        )
        commands_file = work / "every.commands.json"
        if commands_file.exists():
            commands: dict[str, int] = json.loads(commands_file.read_text())
            pairs = sum(1 for c in record["checks"] if c["check"] == "tcp_throughput")
            tcp = {k: commands.get(k, 0) for k in TCP_KINDS}
            print(
                f"SSH commands: {sum(commands.values())} in all ("
                + ", ".join(f"{k} {n}" for k, n in sorted(commands.items(), key=lambda kv: -kv[1]))
                + f"); TCP ones per pair over {pairs} pairs: {sum(tcp.values()) / max(pairs, 1):.2f} ("
                + ", ".join(f"{k} {n / max(pairs, 1):.2f}" for k, n in tcp.items())
                + ")"
            )
        for line in out.splitlines():  # each wave's and round's own time, as pytest printed them
            if line.startswith("fabric:") and (
                " pairs in " in line or any(f" {name} wave: " in line for name in PER_NODE)
            ):
                print("  " + line.strip())
        print(f"errors: {sum(errors.values())} (goal 0)")
        for message, count in errors.most_common(8):
            print(f"  {count:4d} x {message}")
        if planned:
            print(
                f"plan {planned:.0f} s / wall {wall:.0f} s = {planned / wall:.2f} (goal within {GOAL_PLAN:.0%})"
            )
        print(
            f"bring-up {built_s:.0f} s, teardown {teardown_s:.0f} s (of {time.monotonic() - started:.0f} s in all)"
        )
        if args.py_spy and (work / "spy.txt").exists():
            top = _spy_top(work / "spy.txt")
            Path(args.py_spy_out).write_text("\n".join(top) + "\n")
            print(
                f"py-spy: top functions by samples on top of a stack, every thread -> {args.py_spy_out}"
            )
            for line in top[:12]:
                print("  " + line)
    return 0


def collect_only(args: argparse.Namespace) -> int:
    """Plan a 512-node ndr400-large run with a shared mount and an egress target (nothing measured)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        per_leaf = 32
        nodes = [
            {
                "name": f"gpu{i + 1:03d}",
                "host": f"10.{200 + i // 65000}.{i // 250}.{i % 250 + 2}",
                "labels": {"leaf": f"leaf{i // per_leaf + 1}"},
            }
            for i in range(args.nodes)
        ]
        inventory = {
            "name": "plan512",
            "defaults": {"user": "root"},
            "nodes": nodes,
            "storage": {"mounts": [{"path": "/mnt/lustre", "fstype": "lustre", "shared": True}]},
            "egress": {"targets": ["https://mirror.example.com/1GB.bin"]},
        }
        path = work / "plan512.yaml"
        path.write_text(yaml.safe_dump(inventory, sort_keys=False))
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "--cluster",
            str(path),
            "--profile",
            "ndr400-large",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--fabric-fanout",
            str(args.fanout),
        ]
        started = time.monotonic()
        done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=1800)
        took = time.monotonic() - started
    lines = (done.stdout + done.stderr).splitlines()
    plan = [line for line in lines if "plan" in line.lower()]
    print(
        f"--collect-only, {args.nodes} nodes, ndr400-large, a shared lustre mount, one egress target, "
        f"--fabric-fanout {args.fanout}: exit {done.returncode} in {took:.0f} s"
    )
    for line in plan[:40] or lines[-30:]:
        print("  " + line)
    found = re.search(r"~ ([\d.]+) (s|min|h)\b[^~]*$", " ".join(plan))
    if found:
        minutes = float(found.group(1)) * {"s": 1 / 60, "min": 1, "h": 60}[found.group(2)]
        print(f"plan: {minutes:.1f} min (goal < 30 min)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--fanout", type=int, default=512, help="--fabric-fanout of the run")
    parser.add_argument("--duration", type=int, default=2, help="seconds of each TCP test (D)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds for the N-node run")
    parser.add_argument(
        "--py-spy", metavar="PY_SPY", help="path of a py-spy binary: sample the controller"
    )
    parser.add_argument("--py-spy-out", default="bench_512-py-spy.txt")
    parser.add_argument(
        "--collect-only", action="store_true", help="plan ndr400-large on N nodes instead"
    )
    args = parser.parse_args()
    return collect_only(args) if args.collect_only else run_cluster(args)


if __name__ == "__main__":
    raise SystemExit(main())
