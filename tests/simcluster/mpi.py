"""Real MPI on the simulated nodes: Open MPI's mpirun and an all_reduce_perf that is an MPI program.

On top of the fabric stand-ins (tests/simcluster/hardware.py: their hardware model gives the
figures), for the block::

    with hardware_installed(cluster, {}), mpi_installed(cluster):
        ...  # srun --mpi=pmix ... all_reduce_perf, or mpirun inside a Slurm job
        runs(cluster)  # what each run's rank 0 saw: ranks, hosts, launcher

- ``all_reduce_perf`` is standins/nccl_mpi_standin.py (mpi4py): it joins the job srun or mpirun
  started, and prints nccl-tests' output for the ranks and hosts MPI really gave it;
- ``mpirun`` is Debian's Open MPI (4.1.4), in place of the fabric stand-in's simulated one, so a
  launch inside a Slurm job starts its daemons through the job's srun for real.

Needs ``apt-get install -y openmpi-bin libopenmpi-dev libpmix2 libpmix-dev python3-mpi4py`` (and
Slurm's mpi/pmix plugin, in Debian's slurm-wlm-basic-plugins).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from simcluster.cluster import SimCluster

__all__ = ["MPI_PACKAGES", "missing_mpi", "mpi_installed", "runs"]

MPI_PACKAGES = "openmpi-bin libopenmpi-dev libpmix2 libpmix-dev python3-mpi4py"
STANDIN = Path(__file__).parent / "standins" / "nccl_mpi_standin.py"
OPTION_TABLE = Path(__file__).resolve().parents[1] / "data" / "option-tables" / "nccl-tests-2.17.txt"
RUNS_FILE = "nccl-mpi-runs.jsonl"
NO_MPI_FILE = "nccl-tests-built-without-mpi"
REAL_MPIRUN = "/usr/bin/mpirun"
_TOOLS = ("all_reduce_perf", "mpirun")


def missing_mpi() -> list[str]:
    """Why real MPI cannot run on the nodes (empty when it can)."""
    reasons = []
    if shutil.which("mpirun", path="/usr/bin") is None:
        reasons.append("no Open MPI (/usr/bin/mpirun)")
    if subprocess.run(["/usr/bin/python3", "-c", "import mpi4py"], capture_output=True).returncode != 0:
        reasons.append("no mpi4py for /usr/bin/python3")
    if reasons:
        reasons.append(f"apt-get install -y {MPI_PACKAGES}")
    return reasons


@contextlib.contextmanager
def mpi_installed(cluster: SimCluster, *, built_with_mpi: bool = True) -> Iterator[SimCluster]:
    """The MPI all_reduce_perf and the real mpirun on every node for the block; the tools before it after.

    ``built_with_mpi=False``: all_reduce_perf as nccl-tests built without MPI=1, every process a
    one-rank run of its own whatever launched it.
    """
    saved: dict[Path, str | None] = {}
    try:
        for node in cluster.nodes:
            for name in _TOOLS:
                path = node.bindir / name
                saved[path] = path.read_text() if path.exists() else None
            (node.bindir / "nccl-tests-options.txt").write_text(OPTION_TABLE.read_text())
            (node.bindir / RUNS_FILE).unlink(missing_ok=True)
            no_mpi = node.bindir / NO_MPI_FILE
            no_mpi.unlink(missing_ok=True)
            if not built_with_mpi:
                no_mpi.touch()
            cluster.install_tool(node, "all_reduce_perf", STANDIN.read_text())
            cluster.install_tool(node, "mpirun", f'#!/bin/sh\nexec {REAL_MPIRUN} "$@"\n')
        yield cluster
    finally:
        for path, text in saved.items():
            node_name = next(n for n in cluster.nodes if path.parent == n.bindir)
            if text is None:
                cluster.remove_tool(node_name, path.name)
            else:
                cluster.install_tool(node_name, path.name, text)
        for node in cluster.nodes:
            (node.bindir / "nccl-tests-options.txt").unlink(missing_ok=True)
            (node.bindir / NO_MPI_FILE).unlink(missing_ok=True)


def runs(cluster: SimCluster) -> list[dict[str, Any]]:
    """What rank 0 of every run so far recorded (ranks, hosts, launcher, argv), from every node."""
    found: list[dict[str, Any]] = []
    for node in cluster.nodes:
        path = node.bindir / RUNS_FILE
        if path.exists():
            found += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return found
