"""Controller memory with every simulated node connected: peak RSS of the pytest process.

    sudo python benchmarks/bench_controller_memory.py [--nodes 512]

Runs the mtu check (a wave over every node: one SSH connection per node, a command on
each) and prints the pytest process's peak resident memory, in all and per node, against
the same run on one node (the simulated cluster builds up to 1,000 nodes on its /16). Needs
root (network namespaces) and sshd; the namespaces are torn down at the end.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # simcluster; pytest_fabric is the installed copy

from simcluster import SimCluster, missing_prerequisites  # noqa: E402

# ring: few pair items, so the figure is the connections and not collection
PROFILE = "name: bench\ninter_node:\n  pairs: ring\n  mtu: {min: 1500}\n"


def _peak_rss_of_run(work: Path, inventory: Path, profile: Path) -> tuple[int, float, str]:
    """Peak RSS (bytes) of one pytest run in a child that reports its own maximum."""
    probe = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(r.stdout)\n"
        "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "pytest", "--cluster", str(inventory),
         "--profile", str(profile), "-k", "mtu", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=work, capture_output=True, text=True,
    )
    elapsed = time.monotonic() - started
    lines = result.stdout.strip().splitlines()
    peak = int(lines[-1].split()[1]) * 1024 if lines and lines[-1].startswith("PEAK") else 0
    summary = lines[-2] if len(lines) >= 2 else result.stderr[-2000:]
    return peak, elapsed, summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=512)
    args = parser.parse_args()
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        profile = work / "mtu.yaml"
        profile.write_text(PROFILE)
        with SimCluster(args.nodes, work / "sim", name="bench") as cluster:
            print(f"{args.nodes} simulated nodes up in {cluster.started_s:.1f} s")
            one = cluster.write_inventory(work / "one.yaml", nodes=cluster.nodes[:1])
            every = cluster.write_inventory(work / "every.yaml")
            base, base_s, _ = _peak_rss_of_run(work, one, profile)
            peak, wall, summary = _peak_rss_of_run(work, every, profile)
    host = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"controller, 1 node connected: peak {base / 1e6:.0f} MB ({base_s:.1f} s)")
    print(f"controller, {args.nodes} nodes connected: peak {peak / 1e6:.0f} MB ({wall:.1f} s) [{summary.strip('= ')}]")
    if peak and base:
        print(f"  {(peak - base) / max(args.nodes - 1, 1) / 1e6:.2f} MB per further node; "
              f"{peak / base:.2f}x the one-node run (this script itself: {host / 1e6:.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
