"""A run takes the cluster (pytest_fabric/run/cluster_lock.py): a second run stops naming the first, a
stale lock is taken over and said; run through a real shell and flock(1) on this machine."""

from __future__ import annotations

import dataclasses
import subprocess
import time
from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.run import cluster_lock
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.cluster_lock import LockHolder, LockRefused, take_cluster
from pytest_fabric.transport.local import LocalTransport
from pytest_fabric.transport.pool import ConnectionPool


def _node(name: str = "localhost") -> NodeHandle:
    return NodeHandle(Node(name=name, host="localhost"), ConnectionPool(lambda n: LocalTransport(n)))


def _lockfile(base: Path) -> Path:
    import os

    return Path(f"{base}-{os.getuid()}") / "cluster.lock"


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_second_run_stops_at_once_naming_the_first_and_gets_it_once_released(tmp_path: Path) -> None:
    base = tmp_path / "lock"
    first = cluster_lock.this_run("first0000001")
    second = dataclasses.replace(first, run="second000002", pid=first.pid)
    node = _node()
    held = take_cluster([node], first, base=str(base))
    try:
        line = _lockfile(base).read_text().splitlines()[0]
        assert line.startswith(f"run=first0000001 controller={first.controller} pid={first.pid} ")
        assert " holder=" in line and " since=" in line
        began = time.monotonic()
        with pytest.raises(LockRefused) as refused:
            take_cluster([_node()], second, base=str(base))
        assert time.monotonic() - began < 10
        message = str(refused.value)
        assert f"localhost: held by run first0000001 (controller {first.controller}, pid {first.pid}, since " in message
        assert "--fabric-lock=wait" in message and "--fabric-lock=take" in message
    finally:
        held.release(lambda _: node)
    assert _lockfile(base).read_text() == ""  # given back: the next run finds no stale line
    again = take_cluster([_node()], second, base=str(base))
    try:
        assert again.notes() == []
        assert _lockfile(base).read_text().startswith("run=second000002 ")
    finally:
        again.release(lambda _: node)


def test_a_lock_whose_holder_is_gone_is_taken_over_and_said(tmp_path: Path) -> None:
    base = tmp_path / "lock"
    gone = LockHolder("gone00000001", "ctl-elsewhere", 4242, "", 1_700_000_000, holder=_dead_pid(), since=1_700_000_000)
    path = _lockfile(base)
    path.parent.mkdir(parents=True)
    path.write_text(gone.line() + f" holder={gone.holder} since={gone.since}\n")  # nobody holds the flock
    me = cluster_lock.this_run("mine00000001")
    node = _node()
    taken = take_cluster([node], me, base=str(base))
    try:
        (note,) = taken.notes()
        assert note.startswith("cluster lock: took over the stale lock of run gone00000001 (controller ctl-elsewhere, "
                               "pid 4242, since 2023-11-14 22:13:20 UTC) on localhost: its holder was gone")
    finally:
        taken.release(lambda _: node)


def test_a_lock_held_for_a_gone_controller_process_of_this_host_is_taken_over(tmp_path: Path) -> None:
    base = tmp_path / "lock"
    # a holder still running for a run whose controller (this host) was killed outright
    dead = dataclasses.replace(cluster_lock.this_run("dead00000001"), pid=_dead_pid())
    orphan = subprocess.Popen(["sh", "-c", cluster_lock.holder_command(dead, base=str(base))],
                              stdout=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not _lockfile(base).exists() or "dead00000001" not in _lockfile(base).read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        me = cluster_lock.this_run("mine00000002")
        node = _node()
        taken = take_cluster([node], me, base=str(base))
        try:
            (note,) = taken.notes()
            assert f"stale lock of run dead00000001 (controller {dead.controller}, pid {dead.pid}" in note
            assert f"its controller process {dead.pid} on {dead.controller} is gone; its holder was stopped" in note
            assert orphan.wait(timeout=10) != 0  # the orphaned holder was killed
        finally:
            taken.release(lambda _: node)
    finally:
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait()


def test_a_live_run_of_another_controller_is_not_taken_unless_asked(tmp_path: Path) -> None:
    base = tmp_path / "lock"
    other = LockHolder("other0000001", "ctl-elsewhere", 4242, "", int(time.time()))
    holder = subprocess.Popen(["sh", "-c", cluster_lock.holder_command(other, base=str(base))],
                              stdout=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not _lockfile(base).exists() or "other0000001" not in _lockfile(base).read_text():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        me = cluster_lock.this_run("mine00000003")
        with pytest.raises(LockRefused, match="held by run other0000001 \\(controller ctl-elsewhere, pid 4242"):
            take_cluster([_node()], me, base=str(base))
        assert holder.poll() is None
        node = _node()
        taken = take_cluster([node], me, base=str(base), mode="take")
        try:
            assert holder.wait(timeout=10) != 0
            assert _lockfile(base).read_text().startswith("run=mine00000003 ")
        finally:
            taken.release(lambda _: node)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_wait_mode_waits_until_the_first_run_gives_the_node_back(tmp_path: Path) -> None:
    base = tmp_path / "lock"
    first = cluster_lock.this_run("first0000009")
    node = _node()
    held = take_cluster([node], first, base=str(base))
    said: list[str] = []
    import threading

    releaser = threading.Timer(2.0, lambda: held.release(lambda _: node))
    releaser.start()
    try:
        second = dataclasses.replace(first, run="second000009")
        taken = take_cluster([_node()], second, base=str(base), mode="wait", retry_s=0.5, say=said.append)
        taken.release(lambda _: node)
    finally:
        releaser.join()
    assert said and "held by run first0000009" in said[0] and "waiting" in said[0]


def test_the_holder_and_its_output_are_read_as_written() -> None:
    out = cluster_lock.parse_holder("@@busy run=a1 controller=c pid=7 pidstart=9 started=5 holder=11 since=6\n")
    assert out.busy == LockHolder("a1", "c", 7, "9", 5, 11, 6) and not out.held
    out = cluster_lock.parse_holder("@@held\n@@stale run=b2 controller=d pid=8 pidstart= started=1\n")
    assert out.held and out.stale is not None and out.stale.run == "b2"
    assert cluster_lock.parse_holder("@@bad /tmp/x is not a directory of this user's own\n").bad.startswith("/tmp/x")
    assert LockHolder.parse("garbage") is None


def test_a_node_whose_lock_directory_is_not_the_users_own_is_measured_unlocked_and_said(tmp_path: Path) -> None:
    import os

    base = tmp_path / "lock"
    Path(f"{base}-{os.getuid()}").symlink_to(tmp_path)  # a link planted where the lock directory goes
    node = _node()
    taken = take_cluster([node], cluster_lock.this_run("mine00000005"), base=str(base))
    assert taken.locks == []
    (note,) = taken.notes()
    assert note.startswith("cluster lock: not taken on localhost (measured without it): ")
    assert "is not a directory of this user's own" in note
