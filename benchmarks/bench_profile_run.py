"""A whole bundled-profile run on N stand-in nodes, short durations: wall time vs the ideal sum of its waves and rounds.

    sudo python benchmarks/bench_profile_run.py [--nodes 64] [--profile hdr200]

Every node of the simulated cluster gets the stand-in RDMA, GPU and software tools
(tests/simcluster); the bundled profile is extended with short durations (1 s
perftest and iperf3, 16 MiB fio) and floors a loaded 2-core machine meets, so that
no pair falls short and is re-measured. The run is measured twice:

- on 2 nodes, where every wave is one node's time and every round one pair alone;
- on N nodes, the run the figure is about.

The ideal of the N-node run is the sum, per check, of its 2-node batch time times the
number of its batches on N nodes (one per wave, one per round), plus what the N-node
run's cluster-wide checks (scaling_efficiency, attribution, ...) took, as they have no
smaller equivalent. Printed: the N-node run's time in tests (setup + call, from the
record) and its session wall time, over that ideal. Needs root (network namespaces).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # simcluster; pytest_fabric is the installed copy

from simcluster import FakeHardware, SimCluster, install_hardware, missing_prerequisites  # noqa: E402
from simcluster.gpu import install_gpus  # noqa: E402
from simcluster.stack import install_stack  # noqa: E402

from pytest_fabric.checks.builtin import load_profile  # noqa: E402
from pytest_fabric.run.pairs import make_pairs  # noqa: E402

SHORT = """name: short
extends: {profile}
inter_node:
  rdma_bandwidth: {{duration: 1 s, repeat: 1}}
  tcp_throughput: {{min: 10 Mb/s, streams: 1, processes: 1, duration: 1 s}}
  nccl_allreduce: {{min: 1 GB/s}}
  scaling_efficiency: {{min: 1%}}
storage:
  sequential_read: {{min: 1 MB/s, size: 16 MiB, jobs: 1, direct: false}}
  sequential_write: {{min: 1 MB/s, size: 16 MiB, jobs: 1, direct: false}}
  random_read_iops: {{min: 1, size: 16 MiB, runtime: 1 s, direct: false}}
  checkpoint_write: {{min: 1 MB/s, size: 16 MiB, jobs: 1}}
"""


def _run(work: Path, inventory: Path, profile: Path, tag: str, timeout_s: int) -> tuple[float, dict[str, Any], str]:
    record = work / f"{tag}.json"
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile),
         "--conformance-json", str(record), "-p", "no:cacheprovider", "-p", "no:randomly", "-q"],
        cwd=work, capture_output=True, text=True, timeout=timeout_s,
    )
    wall = time.monotonic() - started
    if not record.exists():
        raise SystemExit(f"{tag}: no record; pytest exited {result.returncode}:\n{result.stdout[-3000:]}"
                         f"{result.stderr[-2000:]}")
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return wall, json.loads(record.read_text()), (lines[-1] if lines else "")


def _cpu_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / 100, sum(fields) / 100


def _batches(record: dict[str, Any], round_of: dict[str, int]) -> tuple[dict[str, float], dict[str, set[object]],
                                                                      dict[str, str]]:
    """Per check: the time its tests took, its batches (rounds, or one wave), its subject kind."""
    seconds: dict[str, float] = defaultdict(float)
    batches: dict[str, set[object]] = defaultdict(set)
    kind: dict[str, str] = {}
    for check in record["checks"]:
        name = check["check"]
        seconds[name] += float(check.get("duration_s") or 0)
        nodes = check.get("nodes") or []
        if check.get("subject", "").startswith("(no "):
            continue
        if len(nodes) == 2:
            kind[name] = "pair"
            batches[name].add(round_of.get(check["subject"], check["subject"]))
        elif len(nodes) == 1:
            kind[name] = "wave"
            batches[name].add("wave")
        else:
            kind[name] = "cluster"
    return seconds, batches, kind


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--profile", default="hdr200")
    parser.add_argument("--timeout", type=int, default=3000, help="seconds for the N-node run")
    args = parser.parse_args()
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        profile = work / "short.yaml"
        profile.write_text(SHORT.format(profile=args.profile))
        strategy = load_profile(str(profile), []).document.inter_node.pairs
        with SimCluster(args.nodes, work / "sim", name="bench") as cluster:
            install_hardware(cluster, {n.name: FakeHardware() for n in cluster.nodes})
            for node in cluster.nodes:
                install_gpus(cluster, node)
                install_stack(cluster, node)
            print(f"{args.nodes} stand-in nodes up in {cluster.started_s:.1f} s")
            two = cluster.write_inventory(work / "two.yaml", nodes=cluster.nodes[:2])
            every = cluster.write_inventory(work / "every.yaml")
            wall2, record2, summary2 = _run(work, two, profile, "two", 1200)
            print(f"2 nodes: {wall2:.0f} s [{summary2.strip('= ')}]")
            busy0, total0 = _cpu_busy()
            wall, record, summary = _run(work, every, profile, "every", args.timeout)
            busy1, total1 = _cpu_busy()
            print(f"{args.nodes} nodes: {wall:.0f} s [{summary.strip('= ')}]")
    names = list(record["run"]["nodes"])
    round_of = {p.id: p.round for p in make_pairs(names, strategy)}
    seconds2, _, _ = _batches(record2, {})
    seconds, batches, kind = _batches(record, round_of)
    ideal = 0.0
    parts: dict[str, float] = defaultdict(float)
    for check, what in kind.items():
        if what == "cluster":
            part = seconds[check]  # no 2-node equivalent: as the N-node run took it
        else:
            part = seconds2.get(check, 0.0) * len(batches[check])
        parts[what] += part
        ideal += part
    failing: dict[str, int] = defaultdict(int)
    for check in record["checks"]:
        if check.get("outcome") in ("failed", "error"):
            failing[check["check"]] += 1
    if failing:  # stand-ins that differ from the profile: they still measure, so still take their time
        print("not passing: " + ", ".join(f"{c} ({n})" for c, n in sorted(failing.items())))
    in_tests = sum(seconds.values())
    measured: dict[str, float] = defaultdict(float)
    for check, what in kind.items():
        measured[what] += seconds[check]
    print(f"{args.nodes}-node run by kind: pair checks {measured['pair']:.0f} s, waves {measured['wave']:.0f} s, "
          f"cluster checks {measured['cluster']:.0f} s; the machine's CPUs were "
          f"{(busy1 - busy0) / max(total1 - total0, 1e-9):.0%} busy (the stand-ins run on its cores)")
    rounds = max((len(b) for c, b in batches.items() if kind.get(c) == "pair"), default=0)
    waves = sum(1 for c in kind if kind[c] == "wave")
    print(f"ideal: {ideal:.0f} s = {rounds} rounds' pair checks {parts['pair']:.0f} s + {waves} waves "
          f"{parts['wave']:.0f} s + cluster checks {parts['cluster']:.0f} s")
    print(f"{args.nodes}-node run: {in_tests:.0f} s in tests ({in_tests / ideal:.2f}x the ideal), "
          f"session wall {wall:.0f} s ({wall / ideal:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
