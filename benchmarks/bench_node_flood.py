"""A node whose tool floods: the controller's peak RSS and what the run writes, per size of the flood.

    sudo python benchmarks/bench_node_flood.py [--mb 0 50 500]

On a 2-node simulated cluster, node01's ``nvidia-smi`` becomes a stand-in that prints N MB of 'x'
on one line to stderr and exits 1 (the error quotes its "last output"); the gpu_count check of
node01 runs with --conformance-json, --junitxml and --html. Prints, per size, the pytest process's
peak RSS and the size of the record, the HTML page, the JUnit file and the terminal output, and
each as a ratio to the run without a flood (0 MB). Needs root (network namespaces) and sshd.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # simcluster; pytest_fabric is the installed copy

from simcluster import SimCluster, missing_prerequisites  # noqa: E402

PROFILE = ROOT / "tests" / "data" / "profiles" / "sim-gpu.yaml"
MEASURED = (
    "import resource, subprocess, sys\n"
    "with open(sys.argv[1], 'wb') as out:\n"
    "    subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
)
FILES = ("record.json", "report.html", "junit.xml", "terminal.txt")


def measure(cluster: SimCluster, work: Path, megabytes: int) -> dict[str, int]:
    """Peak RSS and output sizes (bytes) of one run with an N MB flood on node01."""
    node = cluster.nodes[0].name
    script = (f"head -c {megabytes * 1_000_000} /dev/zero | tr '\\0' x >&2\nexit 1\n" if megabytes
              else "echo no flood >&2\nexit 1\n")
    cluster.install_tool(node, "nvidia-smi", script)
    inventory = cluster.write_inventory(work / "inventory.yaml")
    try:
        done = subprocess.run(
            [sys.executable, "-c", MEASURED, str(work / "terminal.txt"), sys.executable, "-m", "pytest",
             "--cluster", str(inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA",
             "-k", f"gpu_count and {node}", "--conformance-json=record.json", "--junitxml=junit.xml",
             "--html=report.html", "--self-contained-html"],
            cwd=work, capture_output=True, text=True, check=True,
        )
    finally:
        cluster.remove_tool(node, "nvidia-smi")
    return {"peak RSS": int(done.stdout.split()[-1]), **{f: (work / f).stat().st_size for f in FILES}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, nargs="+", default=[0, 50, 500])
    args = parser.parse_args()
    missing = missing_prerequisites()
    if missing:
        print("cannot run: " + "; ".join(missing), file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp, SimCluster(2, Path(tmp) / "cluster", name="flood") as cluster:
        base: dict[str, int] | None = None
        for megabytes in args.mb:
            work = Path(tmp) / f"run{megabytes}"
            work.mkdir()
            sizes = measure(cluster, work, megabytes)
            base = base or sizes
            print(f"{megabytes:>5} MB flood: " + ", ".join(
                f"{k} {v / 1e6:.2f} MB ({v / max(base[k], 1):.2f}x)" for k, v in sizes.items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
