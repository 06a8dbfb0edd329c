"""Each probe that puts a value on a command line, run for real on this machine with a hostile value.

The value kinds of issue 27: a host, a URL, a mount path, a work directory (a node's own output),
an interface, an RDMA device and netdev, node names, NCCL environment and HCA lists, a Slurm job
id. Each probe runs its real command through the local transport in an empty directory: a value
read as code would create a file there. The probes may fail or error (the tools or the names do
not exist here); what matters is that nothing ran.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_fabric.config.inventory import Mount, Node
from pytest_fabric.probes import counters, egress, nccl, netdev, rdma, storage
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.local import LocalTransport
from pytest_fabric.transport.pool import ConnectionPool
from pytest_fabric.transport.scheduler import SchedulerJob

#: creates A, B and C in the working directory if any part of it is read as shell code, bare or
#: inside double quotes (no quote of its own: an unbalanced one would be a syntax error, running nothing)
PAYLOAD = "x$(touch A)`touch B`;touch C"


def _local(address: str = "127.0.0.1") -> NodeHandle:
    node = Node(name="localhost", host="localhost", data_address=address)
    return NodeHandle(node, ConnectionPool(lambda _name: LocalTransport("localhost")))


PROBES: dict[str, Callable[[], Any]] = {
    "dns host": lambda: egress.dns_resolve(_local(), f"http://h{PAYLOAD}/x"),
    "connect host": lambda: egress.connect_latency(_local(), f"http://h{PAYLOAD}/x"),
    "download url": lambda: egress.download(_local(), f"http://127.0.0.1:1/{PAYLOAD}"),
    "upload url": lambda: egress.upload(_local(), f"http://127.0.0.1:1/{PAYLOAD}", size_bytes=16),
    "mount path": lambda: storage.check_mount(_local(), Mount(f"/{PAYLOAD}")),
    "work directory": lambda: storage.workdir_for(_local(), f"/nonexistent/{PAYLOAD}"),
    "directory removed": lambda: storage._remove(_local(), f"/nonexistent/{PAYLOAD}"),
    "interface": lambda: netdev.link_rate(_local(), PAYLOAD),
    "rdma device (numa)": lambda: rdma.numa_prefix(_local(), PAYLOAD),
    "rdma device (counters)": lambda: counters.read_port(_local(), PAYLOAD, 1, infiniband=True, both_ends=False),
    "netdev (counters)": lambda: counters.read_port(_local(), PAYLOAD, 1, infiniband=False),
}


@pytest.mark.parametrize("kind", list(PROBES))
def test_a_hostile_value_runs_nothing(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        PROBES[kind]()
    except Exception:  # noqa: BLE001 - the probe may fail or error here; only what ran matters
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _sh(command: str, cwd: Path) -> None:
    # PATH holds touch only: a payload read as code would run, while fio, mpirun and srun are
    # "not found" (a real mpirun would start ssh to the hosts of the command line)
    bin_dir = cwd.parent / f"{cwd.name}-bin"
    bin_dir.mkdir()
    (bin_dir / "touch").symlink_to(shutil.which("touch") or "/usr/bin/touch")
    subprocess.run(["/bin/sh", "-c", command], cwd=cwd, capture_output=True, timeout=60,
                   env={"PATH": str(bin_dir), "HOME": str(cwd)})


def test_fio_command_with_a_hostile_directory_runs_nothing(tmp_path: Path) -> None:
    settings = storage.FioSettings(rw="read", size_bytes=4096, block_size_bytes=4096)
    _sh(storage._fio_command(f"/nonexistent/{PAYLOAD}", settings), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("how", ["mpirun", "srun", "mpirun-slurm"])
def test_nccl_launch_with_hostile_names_env_and_job_runs_nothing(tmp_path: Path, how: str) -> None:
    nodes = [_local(f"10.0.0.{i}") for i in (1, 2)]
    launch = nccl.Launch(hcas=(f"mlx5_0{PAYLOAD}:1",), nccl_env=(f"NCCL_IB_TC={PAYLOAD}",))
    job = SchedulerJob("slurm", f"42{PAYLOAD}") if how != "mpirun" else None
    launcher = nccl.Launcher(how=how, job=job, mpi=None)  # type: ignore[arg-type]
    _sh(nccl._command(nodes, 1024, 1, "Ring", launch, launcher), tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
