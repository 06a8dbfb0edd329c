"""What a run leaves under a storage path is marked, and a later run removes only what a dead run left
(pytest_fabric/probes/leftovers.py), run through a real shell on this machine."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

from pytest_fabric.config.inventory import Node
from pytest_fabric.probes import leftovers
from pytest_fabric.probes.storage import workdir_for
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.local import LocalTransport
from pytest_fabric.transport.pool import ConnectionPool


def _node() -> NodeHandle:
    return NodeHandle(Node(name="localhost", host="localhost"), ConnectionPool(lambda name: LocalTransport(name)))


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid  # reaped: no process has it now (the kernel does not hand it out again at once)


def _plant(parent: Path, owner: leftovers.Owner, until: int, size: int = 3 * 2**20) -> Path:
    """A directory as a run marked as ``owner`` would have left it, with ``size`` bytes of fio's files."""
    directory = parent / f"{leftovers.PREFIX}{owner.run}.abc123"
    directory.mkdir()
    (directory / ".owner").write_text(f"{owner.line()} until={until}\n")
    (directory / "pytest-fabric-write.0.0").write_bytes(b"x" * size)
    return directory


def test_a_run_marks_its_directory_and_removes_what_a_dead_run_of_this_host_left(tmp_path: Path) -> None:
    me = leftovers.this_run()
    dead = dataclasses.replace(me, run="deadbeef0001", pid=_dead_pid(), started=1_700_000_000)
    left = _plant(tmp_path, dead, until=int(time.time()) + 3600)  # lease still running: the PID says it is over
    directory, evidence, removed = workdir_for(_node(), str(tmp_path))
    made = Path(directory)
    assert made.parent == tmp_path and made.name.startswith(f"{leftovers.PREFIX}{me.run}.")
    owner = leftovers.Owner.parse((made / ".owner").read_text())
    assert owner is not None and (owner.run, owner.pid, owner.controller) == (me.run, os.getpid(), me.controller)
    assert owner.until >= int(time.time()) + leftovers.LEASE_S - 60
    assert not left.exists() and not list(tmp_path.glob("*.removing-*"))
    (said,) = removed
    assert said.startswith(f"removed 3.0 MiB left by run deadbeef0001 (controller {me.controller}, pid {dead.pid}, made ")
    assert f"in {left} on localhost: its controller process {dead.pid} on {me.controller} is gone" in said
    assert len(evidence) == 2


def test_a_live_run_or_one_of_another_controller_within_its_lease_is_left_alone(tmp_path: Path) -> None:
    me = leftovers.this_run()
    now = int(time.time())
    live_here = _plant(tmp_path, dataclasses.replace(me, run="live00000001"), until=now + 3600)  # this process: alive
    elsewhere = _plant(tmp_path, dataclasses.replace(me, run="other0000001", controller="other-host", pid=_dead_pid()),
                       until=now + 3600)
    (tmp_path / f"{leftovers.PREFIX}making.x").mkdir()  # no .owner yet: another run is making it
    directory, evidence, removed = workdir_for(_node(), str(tmp_path))
    assert removed == [] and len(evidence) == 1
    assert live_here.exists() and elsewhere.exists() and (tmp_path / f"{leftovers.PREFIX}making.x").exists()


def test_another_controllers_directory_is_removed_once_its_lease_has_ended(tmp_path: Path) -> None:
    me = leftovers.this_run()
    gone = _plant(tmp_path, dataclasses.replace(me, run="expired00001", controller="other-host", pid=4242),
                  until=int(time.time()) - 120, size=5000)
    _, _, removed = workdir_for(_node(), str(tmp_path))
    (said,) = removed
    assert not gone.exists()
    assert "removed " in said and "left by run expired00001 (controller other-host, pid 4242" in said
    assert said.endswith("its lease ended 120 s ago") or "its lease ended 12" in said


def test_a_fio_of_the_dead_runs_directory_still_running_on_the_node_is_ended(tmp_path: Path) -> None:
    me = leftovers.this_run()
    dead = dataclasses.replace(me, run="orphan000001", pid=_dead_pid())
    left = _plant(tmp_path, dead, until=int(time.time()) + 3600, size=10)
    # What an orphaned fio's command line holds: its directory (a sleeping Python stands in for the writer)
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", f"--directory={left}"])
    try:
        time.sleep(0.3)
        assert orphan.poll() is None
        _, _, removed = workdir_for(_node(), str(tmp_path))
        assert len(removed) == 1 and not left.exists()
        assert orphan.wait(timeout=5) == -9  # SIGKILL
    finally:
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait()


def test_a_link_named_as_a_runs_directory_is_never_followed_nor_removed(tmp_path: Path) -> None:
    """A link planted under the path (to a directory that must stay) is no run's directory."""
    me = leftovers.this_run()
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / ".owner").write_text(f"{dataclasses.replace(me, run='link00000001', pid=_dead_pid()).line()} until=1\n")
    (keep / "data").write_text("precious")
    parent = tmp_path / "mount"
    parent.mkdir()
    link = parent / f"{leftovers.PREFIX}link00000001.abc"
    link.symlink_to(keep)  # its .owner says expired: as a directory it would be removed
    _, _, removed = workdir_for(_node(), str(parent))
    assert removed == [] and link.is_symlink() and (keep / "data").read_text() == "precious"
