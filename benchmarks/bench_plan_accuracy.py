"""How close the run's own plan comes to what the run then takes, overall and per phase, with and
without a previous run of the same inventory in pytest's cache.

    sudo python benchmarks/bench_plan_accuracy.py [--nodes 8] [--fanout 64]

A simulated cluster of N nodes (tests/simcluster: real sshd, iperf3 and fio in network
namespaces) runs a small profile twice: the MTU of every node, an all-pairs TCP sweep of 2 s a pair
(``pairs: all``: N-1 rounds of N/2 pairs) and a 16 MiB sequential write to each node's /tmp,
with the floors of the project's own simulated profile (tests/data/profiles/sim.yaml). The first
run's plan is estimated from the settings (an empty cache); the second's takes each check's time
from the first (report/check_times.py). The plan is the one the run prints and keeps in its JSON
record (``run.plan``: the estimate ``planned_s`` and the bound ``bound_s``); the actual is the
record's too: the session's wall time, and per phase the time its tests took. Printed for each run:
estimate / actual overall and per phase (the goal is within 25%, 0.80-1.25) and bound / actual
(at least 1). Needs root.
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
    """One run: its wall time as this process saw it, its record, and pytest's last line. pytest's
    cache is ``work/cache``: a second run in the same ``work`` plans from the first's times."""
    profile = work / "profile.yaml"
    profile.write_text(PROFILE)
    record = work / "record.json"
    record.unlink(missing_ok=True)
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
            "-o",
            f"cache_dir={work / 'cache'}",
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
    runs: list[tuple[str, float, dict[str, Any], str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with SimCluster(args.nodes, work / "sim", name="planbench") as cluster:
            inventory = cluster.write_inventory(work / "inventory.yaml")
            for label in ("no previous run (empty cache)", "the first run's times in the cache"):
                wall, record, last = run(work, inventory, args.fanout, args.timeout)
                runs.append((label, wall, record, last))
            if args.keep_record is not None:
                args.keep_record.write_text(json.dumps(runs[-1][2]))
    load_after = Path("/proc/loadavg").read_text().split()[0]
    # the plan assumes an idle controller unless it measured otherwise (its pace); the load stretches every phase
    print(
        f"{args.nodes} nodes, --fabric-fanout {args.fanout}; load average (1 min) before / after: "
        f"{load_before} / {load_after} on {os.cpu_count()} CPUs"
    )
    worst_all = 1.0
    for label, wall, record, last in runs:
        plan = record["run"].get("plan")
        if not plan:
            print("the record holds no plan (run.plan)", file=sys.stderr)
            return 1
        failing = sorted({c["check"] for c in record["checks"] if c.get("outcome") in ("failed", "error")})
        print(f"\n{label}: {last.strip('= ')}; pytest process {wall:.1f} s")
        if failing:
            print("not passing (they still took their time): " + ", ".join(failing))
        print(f"plan: {plan['summary']}")
        worst = 1.0
        for phase, planned, took in ratios(plan):
            ratio = planned / took if took else float("inf")
            if planned >= 2 and took >= 2:  # below two seconds a ratio is timestamp noise
                worst = max(worst, ratio, 1 / ratio)
            print(f"  {phase[:40]:40s} planned {planned:7.1f} s  took {took:7.1f} s  plan/actual {ratio:5.2f}")
        took_s = float(plan["took_s"] or 0.0)
        whole = float(plan["planned_s"]) / took_s if took_s else float("inf")
        bound = float(plan.get("bound_s") or plan["planned_s"])
        print(f"  estimate/actual {whole:.2f}, bound/actual {bound / took_s if took_s else float('inf'):.2f}; "
              f"worst row of 2 s or more: {worst:.2f} (goal: 1.25 or less)")
        print(f"  the pytest process, interpreter start and collection included: {wall:.1f} s, "
              f"estimate/actual {float(plan['planned_s']) / wall:.2f}")
        worst_all = max(worst_all, whole, 1 / whole if whole else float("inf"))
    print(f"\nwhole run, estimate/actual, worst of both runs (or its inverse): {worst_all:.2f} (goal: 1.25 or less)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
