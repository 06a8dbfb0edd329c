"""Benchmark: the job steps a run makes through Slurm, one agent step per node against one step per command.

    python3 -m simcluster.bench_slurm_steps [--nodes 8]

Runs issue 22's run (tests/data/profiles/sim-slurm-steps.yaml: mtu, an all-pairs TCP sweep, a
sequential write) over N simulated nodes through a real Slurm twice, with ``slurm: {steps:
agent}`` (the default) and ``{steps: per-command}`` (every command its own step, as before
the agent), and prints the steps slurmctld was asked to create in each (sdiag's
REQUEST_JOB_STEP_CREATE), per node and per pair, each run's wall time, and the ratios.  Needs
root and the Slurm packages.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from .cluster import SimCluster
from .sdiag import STEPS_CHECKS, step_creations
from .slurm import SlurmSim

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-slurm-steps.yaml"


def _run(slurm: SlurmSim, work: Path, steps: str) -> tuple[int, float]:
    """(steps created, wall seconds) of one run with ``slurm: {steps: STEPS}``."""
    inventory = slurm.write_inventory(work / f"{steps}.yaml", wait_s=60)
    data = yaml.safe_load(inventory.read_text())
    data["slurm"]["steps"] = steps
    inventory.write_text(yaml.safe_dump(data, sort_keys=False))
    before = step_creations(slurm)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(PROFILE), "-k", STEPS_CHECKS,
         "-p", "no:cacheprovider", "-q"],
        cwd=work, capture_output=True, text=True, env=slurm.env, timeout=1800,
    )
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"steps: {steps}: run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return step_creations(slurm) - before, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=8)
    args = parser.parse_args()
    pairs = args.nodes * (args.nodes - 1) // 2
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        work = Path(tmp)
        cluster = SimCluster(args.nodes, work / "sim", name="bench")
        with cluster, SlurmSim(cluster) as slurm:
            results = {steps: _run(slurm, work, steps) for steps in ("agent", "per-command")}
    for steps, (created, wall) in results.items():
        print(f"steps: {steps:11s}: {created:5d} steps created ({created / args.nodes:6.1f} a node, "
              f"{created / pairs:5.1f} a pair of {pairs}), wall {wall:6.1f} s")
    (agent, agent_wall), (each, each_wall) = results["agent"], results["per-command"]
    print(f"per-command/agent: steps x{each / max(agent, 1):.1f}, wall x{each_wall / agent_wall:.2f}")


if __name__ == "__main__":
    main()
