"""Collection of a large inventory: time and memory against the goals (10 s, 2 GB at 4,096 nodes),
and the run's plan against the 30-minute goal (issue 21: 512 nodes, ndr400-large, a shared mount
and an egress target).

    python benchmarks/bench_collection.py [--nodes 4096] [--profile ndr400-large] [--breakdown]
                                          [--cprofile out.prof] [--fanout N] [--leaves N]
                                          [--shared-mount PATH] [--egress URL] [--egress-concurrency N]
    python benchmarks/bench_collection.py --acceptance-512     # the issue's case, at fanout 64 and 512

Only collects (``--collect-only -qq``: no node is contacted, no item list printed), in a
fresh interpreter, as a run pays it before its first measurement. Prints the items, the
wall time and the peak memory of that process as ratios of the goals; ``--breakdown``
also lists the items per test function (where the items come from), ``--cprofile``
writes a profile of the collection (read it with ``python -m pstats``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

GOAL_S = 10.0
GOAL_BYTES = 2 * 1024**3
#: the issue's goal for a 512-node acceptance: the whole run in 30 minutes
PLAN_GOAL_S = 30 * 60.0

# A plugin the collection loads (-p): it writes the plan the run would print, per phase and per
# check, so the figures here are the plugin's own (report/progress.py plan_items), not a copy.
_PLAN_PLUGIN = """
import json, os
from pytest_fabric.report.progress import PLAN_KEY

def pytest_sessionfinish(session):
    plan = session.config.stash.get(PLAN_KEY, None)
    if plan is None:
        return
    out = plan.to_json()
    out["total_s"] = plan.total_s
    out["checks"] = [{"check": f"{c.layer}.{c.check}", "s": c.total_s, "one_s": c.seconds, "slots": c.slots,
                      "rounds": c.rounds} for c in plan.dominant(8)]
    with open(os.environ["BENCH_PLAN_OUT"], "w") as f:
        json.dump(out, f)
"""


def _inventory(nodes: int, leaves: int = 0, mount: str | None = None, egress: str | None = None,
               egress_concurrency: int | None = None) -> str:
    width = len(str(nodes))
    lines = ["name: big", "nodes:"]
    if leaves > 1:  # nodes labelled by the leaf they hang off, in equal blocks (oversubscription needs them)
        per = -(-nodes // leaves)
        for leaf, first in enumerate(range(1, nodes + 1, per), start=1):
            last = min(nodes, first + per - 1)
            lines += [f"  - name: gpu[{str(first).zfill(width)}-{str(last).zfill(width)}]",
                      f"    labels: {{leaf: leaf{leaf}}}"]
    else:
        lines.append(f"  - name: gpu[{'1'.zfill(width)}-{nodes}]")
    if mount:
        lines += ["storage:", "  mounts:", f"    - {{path: {mount}, fstype: lustre}}"]
    if egress:
        lines += ["egress:", f"  targets: [{egress}]"]
        if egress_concurrency:
            lines.append(f"  concurrency: {egress_concurrency}")
    return "\n".join(lines) + "\n"


def _collect(work: Path, profile: str, quiet: str, prefix: list[str],
             extra: Sequence[str] = ()) -> tuple[subprocess.CompletedProcess[str], float]:
    command = [*prefix, "-m", "pytest", "--cluster", "inv.yaml", "--profile", profile, "--collect-only", quiet,
               "-p", "no:cacheprovider", "-p", "bench_plan_plugin", *extra]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(work), os.environ.get("PYTHONPATH")])),
           "BENCH_PLAN_OUT": str(work / "plan.json")}
    started = time.monotonic()
    result = subprocess.run(command, cwd=work, capture_output=True, text=True, env=env)
    return result, time.monotonic() - started


def _written_plan(work: Path) -> dict[str, Any] | None:
    """The plan the last collection in ``work`` wrote (and remove it, so the next writes its own)."""
    found = work / "plan.json"
    if not found.exists():
        return None
    plan: dict[str, Any] = json.loads(found.read_text())
    found.unlink()
    return plan


def _print_plan(plan: dict[str, Any] | None, label: str) -> None:
    """The plan's total against the 30-minute goal, its phases and the checks that dominate it."""
    if plan is None:
        print(f"  plan {label}: none written")
        return
    total = plan["total_s"]
    print(f"  plan {label}: {total / 60:.1f} min = {total / PLAN_GOAL_S:.2f}x of the {PLAN_GOAL_S / 60:.0f}-minute goal"
          f" (connections {plan['connect_s'] / 60:.1f} min, every test's bookkeeping and connections "
          f"{plan['outside_s'] / 60:.1f} min)")
    for phase in sorted(plan["phases"], key=lambda p: -p["planned_s"]):
        if phase["planned_s"] >= 1:
            print(f"    {phase['planned_s'] / 60:7.1f} min  {phase['phase']}")
    for check in plan["checks"]:
        print(f"    {check['s'] / 60:7.1f} min  {check['check']}: {check['slots']} measurement(s) one after the other"
              f" x {check['one_s']:.1f} s")


def _acceptance_512(profile: str) -> int:
    """The issue's case: 512 nodes in 16 leaves, ndr400-large, a shared Lustre mount, one egress target."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bench_plan_plugin.py").write_text(_PLAN_PLUGIN)
        (work / "inv.yaml").write_text(_inventory(512, 16, "/lustre", "https://mirror.example.com/file.bin"))
        for fanout in (64, 512):
            result, _ = _collect(work, profile, "-qq", [sys.executable], ["--fabric-fanout", str(fanout)])
            if result.returncode != 0:
                print(result.stdout[-3000:] + result.stderr[-3000:], file=sys.stderr)
                return 1
            for line in result.stdout.splitlines():
                if line.startswith("fabric: plan"):
                    print(line)
            _print_plan(_written_plan(work), f"512 nodes, {profile}, /lustre shared, 1 egress target, --fabric-fanout {fanout}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=4096)
    parser.add_argument("--profile", default="ndr400-large", help="bundled name or path (default ndr400-large)")
    parser.add_argument("--breakdown", action="store_true", help="also count the items per test function")
    parser.add_argument("--cprofile", metavar="PATH", help="write a cProfile of the collection there")
    parser.add_argument("--fanout", type=int, help="--fabric-fanout of the run planned (default: the plugin's)")
    # the bundled profiles set storage, egress and oversubscription checks: an inventory without a
    # mount, a target or leaves is refused at collection (the checks would have nothing to measure)
    parser.add_argument("--leaves", type=int, default=16, help="label the nodes by leaf, in this many equal blocks")
    parser.add_argument("--shared-mount", metavar="PATH", default="/lustre",
                        help="a shared (lustre) mount the storage checks test (default /lustre)")
    parser.add_argument("--egress", metavar="URL", default="https://mirror.example.com/file.bin", help="an egress target")
    parser.add_argument("--egress-concurrency", type=int, help="the inventory's egress.concurrency")
    parser.add_argument("--acceptance-512", action="store_true",
                        help="the issue-21 case: 512 nodes, 16 leaves, a shared mount, an egress target, "
                             "planned at --fabric-fanout 64 and 512")
    args = parser.parse_args()
    profile = str(Path(args.profile).resolve()) if Path(args.profile).exists() else args.profile
    if args.acceptance_512:
        return _acceptance_512(profile)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bench_plan_plugin.py").write_text(_PLAN_PLUGIN)
        (work / "inv.yaml").write_text(_inventory(args.nodes, args.leaves, args.shared_mount, args.egress,
                                                  args.egress_concurrency))
        prefix = [sys.executable]
        if args.cprofile:
            prefix += ["-m", "cProfile", "-o", str(Path(args.cprofile).resolve())]
        extra = ["--fabric-fanout", str(args.fanout)] if args.fanout else []
        result, elapsed = _collect(work, profile, "-qq", prefix, extra)
        plan = _written_plan(work)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak = usage.ru_maxrss * 1024  # Linux: KiB
        cpu = usage.ru_utime + usage.ru_stime
        breakdown: Counter[str] = Counter()
        if args.breakdown:
            listed, _ = _collect(work, profile, "-q", [sys.executable])
            breakdown.update(line.split("[", 1)[0] for line in listed.stdout.splitlines() if "::" in line)
    if result.returncode != 0:
        print(result.stdout[-3000:] + result.stderr[-3000:], file=sys.stderr)
        return 1
    # -qq prints "path: count" per test file
    items = sum(int(m.group(1)) for m in re.finditer(r"^\S+\.py: (\d+)$", result.stdout, re.MULTILINE))
    for name, count in breakdown.most_common():
        print(f"{count:9,d}  {name}")
    header = [line for line in result.stdout.splitlines() if line.startswith("fabric: plan")]
    for line in header:
        print(line)
    print(f"collection of {args.nodes:,} nodes, profile {args.profile}: {items:,} items "
          f"({items / max(args.nodes, 1):.0f} per node)")
    # CPU time is the figure to compare on a shared machine: wall time also counts waiting for a core
    print(f"  CPU {cpu:.1f} s ({cpu / GOAL_S:.2f}x of the {GOAL_S:.0f} s goal), wall {elapsed:.1f} s "
          f"({elapsed / GOAL_S:.2f}x), peak memory {peak / 1e9:.2f} GB ({peak / GOAL_BYTES:.2f}x of the 2 GB goal)")
    if items:
        print(f"  {cpu / items * 1e6:.0f} us of CPU and {peak / items / 1024:.1f} KiB per item")
        _print_plan(plan, f"{args.nodes:,} nodes" + (f", --fabric-fanout {args.fanout}" if args.fanout else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
