"""A run takes the cluster (pytest_fabric/run/cluster_lock.py) on the simulated cluster: a second run
against the same nodes stops at once naming the first and sends no node back; a run killed outright
leaves a lock the next run takes over and says so."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from simcluster import SimCluster

LOCK = "/tmp/pytest-fabric-0/cluster.lock"  # the nodes' sshd runs as root


def _profile(where: Path, seconds: int) -> Path:
    profile = where / "lock.yaml"
    profile.write_text(f"name: lock\ninter_node:\n  tcp_throughput: {{min: 0.5 Gb/s, streams: 1, duration: {seconds} s}}\n"
                       "  pairs: all\n")
    return profile


def _lock_line(cluster: SimCluster, node: str) -> str:
    return cluster.exec(node, ["sh", "-c", f"head -n 1 {LOCK} 2>/dev/null"]).stdout.strip()


def _start(inventory: Path, profile: Path, where: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile), "-p", "no:cacheprovider",
         f"--conformance-json={where / 'record.json'}"],
        cwd=where, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def _await_lock(cluster: SimCluster, nodes: list[str], run: subprocess.Popen[str]) -> dict[str, str]:
    deadline = time.monotonic() + 90
    while True:
        lines = {n: _lock_line(cluster, n) for n in nodes}
        if all(line.startswith("run=") for line in lines.values()):
            return lines
        assert run.poll() is None, run.communicate()[0]
        assert time.monotonic() < deadline, lines
        time.sleep(0.2)


def test_a_second_run_on_the_same_nodes_stops_at_once_naming_the_first_and_sends_no_node_back(
    pytester: pytest.Pytester, simcluster: SimCluster, tmp_path: Path
) -> None:
    names = [n.name for n in simcluster.nodes]
    first_dir = tmp_path / "first"
    first_dir.mkdir()
    first_inventory = simcluster.write_inventory(first_dir / "inventory.yaml", nodes=names[:4])
    first = _start(first_inventory, _profile(first_dir, 10), first_dir)
    try:
        lines = _await_lock(simcluster, names[:4], first)
        run_id = lines[names[2]].split()[0].removeprefix("run=")
        pid = int(lines[names[2]].split(" pid=")[1].split()[0])
        assert pid == first.pid
        second_inventory = simcluster.write_inventory(pytester.path / "inventory.yaml", nodes=names[2:6])
        second = pytester.runpytest_subprocess(
            "--cluster", str(second_inventory), "--profile", str(_profile(pytester.path, 3)), "-p", "no:cacheprovider",
            f"--conformance-json={pytester.path / 'record.json'}", timeout=120)
        assert first.poll() is None  # the first was still measuring all along
        terminal = second.stdout.str()
        assert second.ret == 75, terminal
        held = f"{names[2]}, {names[3]}: held by run {run_id} (controller "
        assert held in terminal and f", pid {first.pid}, since " in terminal
        assert "--fabric-lock=wait" in terminal
        assert "nodes to send back: node" not in terminal  # nothing measured, nobody blamed
        record = pytester.path / "record.json"
        if record.exists():
            assert json.loads(record.read_text())["run"].get("send_back") in (None, "")
        # the nodes only the second named were locked and given back
        assert not _lock_line(simcluster, names[5]).startswith("run=")
        first.send_signal(signal.SIGINT)  # its lock is given back however it ends
        first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert all(_lock_line(simcluster, n) == "" for n in names[:4])


def test_a_run_killed_outright_leaves_a_lock_the_next_run_takes_over_and_says_so(
    pytester: pytest.Pytester, simcluster: SimCluster, tmp_path: Path
) -> None:
    names = [n.name for n in simcluster.nodes][:3]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=names)
    killed = _start(inventory, _profile(tmp_path, 5), tmp_path)
    try:
        lines = _await_lock(simcluster, names, killed)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.communicate(timeout=30)
    run_id = lines[names[0]].split()[0].removeprefix("run=")
    # the next run measures each node's MTU (one command a node), not pairs: what it proves is the
    # lock it takes over and gives back, and a run that ends well
    mtu_profile = pytester.path / "mtu.yaml"
    mtu_profile.write_text("name: lock\ninter_node:\n  mtu: 1500\n")
    result = pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", str(mtu_profile), "-p", "no:cacheprovider",
        timeout=180)
    terminal = result.stdout.str()
    assert result.ret == 0, terminal
    assert f"cluster lock: took over the stale lock of run {run_id} (controller " in terminal
    assert all(_lock_line(simcluster, n) == "" for n in names)
