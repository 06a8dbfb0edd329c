"""How close the run's own plan comes to what the run then takes, overall and per phase.

    sudo python benchmarks/bench_plan_accuracy.py [--nodes 8] [--fanout 64]

A simulated cluster of N nodes (tests/simcluster: real sshd, iperf3 and fio in network
namespaces) runs a small profile: the MTU of every node, an all-pairs TCP sweep of 2 s a pair
(``pairs: all``: N-1 rounds of N/2 pairs) and a 16 MiB sequential write to each node's /tmp,
with the floors of the project's own simulated profile (tests/data/profiles/sim.yaml). The
plan is the one the run prints and keeps in its JSON record (``run.plan``); the actual is
the record's too: the session's wall time, and per phase the time its tests took. Printed:
plan / actual overall and per phase (the goal is within 25%, 0.80-1.25). Needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # simcluster; pytest_fabric is the installed copy

from simcluster import SimCluster, missing_prerequisites  # noqa: E402

PROFILE = """name: plan-accuracy
description: mtu, an all-pairs TCP sweep and a sequential write, with tests/data/profiles/sim.yaml's floors
inter_node:
  mtu: 1500
  tcp_throughput: {min: 1.5 Gb/s, streams: 1, duration: 2 s}
  pairs: all
storage:
  sequential_write: {min: 20 MB/s, size: 16 MiB, direct: false}
"""


def run(
    work: Path, inventory: Path, fanout: int, timeout_s: int
) -> tuple[float, dict[str, Any], str]:
    """One run: its wall time as this process saw it, its record, and pytest's last line."""
    profile = work / "profile.yaml"
    profile.write_text(PROFILE)
    record = work / "record.json"
    started = time.monotonic()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--cluster",
            str(inventory),
            "--profile",
            str(profile),
            "--conformance-json",
            str(record),
            "--fabric-fanout",
            str(fanout),
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-q",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    wall = time.monotonic() - started
    if not record.exists():
        raise SystemExit(
            f"no record; pytest exited {result.returncode}:\n{result.stdout[-3000:]}{result.stderr[-2000:]}"
        )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return wall, json.loads(record.read_text()), (lines[-1] if lines else "")


def ratios(plan: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(phase, planned s, actual s) for the run and each phase of the record's ``run.plan``."""
    rows = [("whole run", float(plan["planned_s"]), float(plan["took_s"] or 0.0))]
    rows += [(p["phase"], float(p["planned_s"]), float(p["took_s"] or 0.0)) for p in plan["phases"]]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--fanout", type=int, default=64)
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument(
        "--keep-record", type=Path, default=None, help="copy the run's JSON record here"
    )
    args = parser.parse_args()
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    load_before = Path("/proc/loadavg").read_text().split()[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with SimCluster(args.nodes, work / "sim", name="planbench") as cluster:
            inventory = cluster.write_inventory(work / "inventory.yaml")
            wall, record, last = run(work, inventory, args.fanout, args.timeout)
            if args.keep_record is not None:
                args.keep_record.write_text(json.dumps(record))
    plan = record["run"].get("plan")
    if not plan:
        print("the record holds no plan (run.plan)", file=sys.stderr)
        return 1
    failing = sorted(
        {c["check"] for c in record["checks"] if c.get("outcome") in ("failed", "error")}
    )
    print(
        f"{args.nodes} nodes, --fabric-fanout {args.fanout}: {last.strip('= ')}; pytest process {wall:.1f} s"
    )
    # the plan assumes an idle controller; on a shared machine the load stretches every phase
    load_after = Path("/proc/loadavg").read_text().split()[0]
    print(
        f"load average (1 min) before / after: {load_before} / {load_after} on {os.cpu_count()} CPUs"
    )
    if failing:
        print("not passing (they still took their time): " + ", ".join(failing))
    print(f"plan: {plan['summary']}")
    worst = 1.0
    for phase, planned, took in ratios(plan):
        ratio = planned / took if took else float("inf")
        if planned >= 2 and took >= 2:  # below two seconds a ratio is timestamp noise
            worst = max(worst, ratio, 1 / ratio)
        print(
            f"  {phase[:40]:40s} planned {planned:7.1f} s  took {took:7.1f} s  plan/actual {ratio:5.2f}"
        )
    print(
        f"worst plan/actual (or its inverse) of the rows of 2 s or more: {worst:.2f} (goal: 1.25 or less)"
    )
    print(
        f"the pytest process, interpreter start and collection included: {wall:.1f} s, "
        f"plan/actual {float(plan['planned_s']) / wall:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
