"""The simulated cluster behaves like separate machines: the ground the integration tests stand on.

Each test states one property the plugin's own tests rely on: real SSH with verified host keys,
per-node processes, /tmp and tools, a shaped link that measures as shaped, a frozen sshd that
accepts TCP but never speaks, and a teardown that leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml
from simcluster import NodeBreaker, SimCluster, SimClusterError, SimNode


def ssh(cluster: SimCluster, node: SimNode, command: str) -> subprocess.CompletedProcess[str]:
    """Run a command on the node with the real OpenSSH client (host key checked)."""
    return subprocess.run(cluster.ssh_argv(node, command), capture_output=True, text=True,
                          timeout=15)


def iperf3_gbps(cluster: SimCluster, server: SimNode, client: SimNode, *, reverse: bool) -> float:
    """Throughput client->server (server->client with reverse) of a 1 s iperf3 run, in Gb/s."""
    srv = cluster.popen(server, ["iperf3", "-s", "-1", "-B", server.address],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 5
        # Wait for the listener without connecting to it: -1 would count a probe as the test.
        while "5201" not in cluster.exec(server, ["ss", "-Hltn", "sport = :5201"]).stdout:
            assert time.monotonic() < deadline, "iperf3 server never listened"
            time.sleep(0.02)
        argv = ["iperf3", "-c", server.address, "-t", "1", "-J"] + (["-R"] if reverse else [])
        run = cluster.exec(client, argv, timeout=20)
        assert run.returncode == 0, run.stdout + run.stderr
        srv.wait(timeout=5)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    bits: float = json.loads(run.stdout)["end"]["sum_received"]["bits_per_second"]
    return bits / 1e9


def test_ssh_reaches_every_node_with_verified_host_keys(simcluster: SimCluster) -> None:
    procs = {n.name: subprocess.Popen(simcluster.ssh_argv(n, "hostname; echo $PATH; id -u"),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in simcluster.nodes}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=15)
        assert proc.returncode == 0, f"{name}: {err}"
        hostname, path, uid = out.split()
        assert (hostname, uid) == (name, "0")
        # Stand-ins must shadow real tools, so the node's bin dir has to come first.
        assert path.split(":")[0] == "/usr/local/bin"


def test_unknown_host_key_is_refused(simcluster: SimCluster, tmp_path: Path) -> None:
    # Proves StrictHostKeyChecking is doing the work in the test above, not being bypassed.
    node = simcluster.nodes[0]
    argv = simcluster.ssh_argv(node, "true")
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    argv[argv.index(f"UserKnownHostsFile={simcluster.known_hosts}")] = f"UserKnownHostsFile={empty}"
    run = subprocess.run(argv, capture_output=True, text=True, timeout=15)
    assert run.returncode == 255
    assert "Host key verification failed" in run.stderr


def test_nodes_have_separate_pid_namespaces(simcluster: SimCluster) -> None:
    node01, node02 = simcluster.nodes[0], simcluster.nodes[1]
    started = ssh(simcluster, node01, "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!")
    assert started.returncode == 0, started.stderr
    try:
        assert ssh(simcluster, node01, "pgrep -x sleep").returncode == 0
        assert ssh(simcluster, node02, "pgrep -x sleep").returncode == 1  # not visible
        ssh(simcluster, node02, "pkill -x sleep")
        assert ssh(simcluster, node01, "pgrep -x sleep").returncode == 0  # not killed either
        assert [cmd for _, cmd in simcluster.processes(node01)] == ["sleep 300"]
        assert simcluster.processes(node02) == []
    finally:
        for pid, _ in simcluster.processes(node01):
            os.kill(pid, 9)
    deadline = time.monotonic() + 5
    while simcluster.processes(node01):
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_nodes_have_separate_tmp(simcluster: SimCluster) -> None:
    marker = f"/tmp/simcluster-{uuid.uuid4().hex}"
    node01, node02 = simcluster.nodes[0], simcluster.nodes[1]
    assert ssh(simcluster, node01, f"touch {marker}").returncode == 0
    assert ssh(simcluster, node01, f"test -e {marker}").returncode == 0
    assert ssh(simcluster, node02, f"test -e {marker}").returncode == 1
    assert not Path(marker).exists()  # nor on the machine running pytest


def test_stand_in_tool_is_on_one_node_only(simcluster: SimCluster) -> None:
    node03, node04 = simcluster.nodes[2], simcluster.nodes[3]
    # A name no other test installs: the session cluster is shared with the plugin's tests.
    tool = f"standin-{uuid.uuid4().hex[:8]}"
    simcluster.install_tool(node03, tool, "echo stand-in on $(hostname)\n")
    try:
        run = ssh(simcluster, node03, f"command -v {tool}; {tool}")
        assert run.stdout.split("\n")[:2] == [f"/usr/local/bin/{tool}", "stand-in on node03"]
        assert ssh(simcluster, node04, f"command -v {tool}").returncode != 0
    finally:
        simcluster.remove_tool(node03, tool)
    assert ssh(simcluster, node03, f"command -v {tool}").returncode != 0


def test_shaped_link_measures_its_rate_both_ways(
    simcluster: SimCluster, break_node: NodeBreaker
) -> None:
    node01, node02, node03, node04 = simcluster.nodes[:4]
    unshaped = iperf3_gbps(simcluster, node04, node03, reverse=False)
    with break_node.shaped(node01, 1000):
        to_server = iperf3_gbps(simcluster, node02, node01, reverse=False)
        from_server = iperf3_gbps(simcluster, node02, node01, reverse=True)
    print(f"unshaped {unshaped:.2f} Gb/s; shaped 1000 Mbit/s: "
          f"out {to_server:.3f} Gb/s, in {from_server:.3f} Gb/s")
    assert 0.8 < to_server < 1.05
    assert 0.8 < from_server < 1.05
    # Idle, an unshaped veth pair does ~15 Gb/s; 1.5x leaves room for a loaded 2-core machine
    # (xdist workers and other sessions running iperf3 at the same time) while still proving
    # the limit comes from the shaping, not from the machine.
    assert unshaped > 1.5 * max(to_server, from_server)
    assert simcluster.processes(node01) == simcluster.processes(node02) == []  # iperf3 gone


def test_frozen_sshd_accepts_tcp_but_sends_no_banner(
    simcluster: SimCluster, break_node: NodeBreaker
) -> None:
    node = simcluster.nodes[4]
    with break_node.frozen(node):
        with socket.create_connection((node.address, 22), timeout=1) as sock:
            sock.settimeout(1)
            with pytest.raises(TimeoutError):
                sock.recv(64)
    assert ssh(simcluster, node, "true").returncode == 0


def test_stopped_sshd_refuses_and_comes_back(
    simcluster: SimCluster, break_node: NodeBreaker
) -> None:
    node = simcluster.nodes[5]
    with break_node.stopped(node):
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((node.address, 22), timeout=1)
        assert simcluster.processes(node) == []
    assert ssh(simcluster, node, "hostname").stdout.strip() == node.name


def test_mtu_changes_both_ends_and_is_restored(
    simcluster: SimCluster, break_node: NodeBreaker
) -> None:
    node = simcluster.nodes[6]
    with break_node.mtu(node, 9000):
        assert simcluster.exec(node, ["cat", "/sys/class/net/eth0/mtu"]).stdout.strip() == "9000"
        assert Path(f"/sys/class/net/{node.host_veth}/mtu").read_text().strip() == "9000"
    assert simcluster.get_mtu(node) == 1500


def test_inventory_matches_the_design_format(simcluster: SimCluster, sim_inventory: Path) -> None:
    doc = yaml.safe_load(sim_inventory.read_text())
    assert doc == {
        "name": "sim",
        "defaults": {"user": "root", "port": 22, "identity_file": str(simcluster.client_key),
                     "known_hosts": str(simcluster.known_hosts), "connect_timeout": 3},
        "nodes": [{"name": n.name, "host": n.address} for n in simcluster.nodes],
        # each node's own /tmp (a tmpfs): the storage checks a profile sets need a listed mount
        "storage": {"mounts": [{"path": "/tmp", "shared": False}]},
    }
    subset = simcluster.write_inventory(
        sim_inventory.with_name("two.yaml"), nodes=["node02", "node05"], name="pair",
        extra={"storage": {"mounts": ["/tmp"]}})
    doc = yaml.safe_load(subset.read_text())
    assert doc["name"] == "pair" and doc["storage"] == {"mounts": ["/tmp"]}
    assert [n["name"] for n in doc["nodes"]] == ["node02", "node05"]


def _leftovers(netns: list[str], links: list[str], pids: list[int]) -> list[str]:
    existing_ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found = [f"netns {ns}" for ns in netns if ns in existing_ns.split()]
    found += [f"link {ln}" for ln in links if Path(f"/sys/class/net/{ln}").exists()]
    found += [f"pid {pid}" for pid in pids if Path(f"/proc/{pid}").exists()]
    return found


def test_teardown_leaves_nothing(tmp_path: Path, simcluster: SimCluster) -> None:
    # `simcluster` only for the skip logic and to prove a second cluster can coexist with it.
    cluster = SimCluster(2, tmp_path / "own")
    cluster.start()
    try:
        assert cluster.subnet_octet != simcluster.subnet_octet
        node = cluster.nodes[0]
        assert ssh(cluster, node, "setsid sleep 300 </dev/null >/dev/null 2>&1 &").returncode == 0
        netns = [n.netns for n in cluster.nodes]
        links = [cluster.bridge] + [n.host_veth for n in cluster.nodes]
        pids = [n.sshd_pid for n in cluster.nodes if n.sshd_pid] + [
            n._launcher.pid for n in cluster.nodes if n._launcher]
        pids += [pid for pid, _ in cluster.processes(node)]
        assert len(pids) == 5
        assert _leftovers(netns, links, pids) == [f"netns {ns}" for ns in netns] + [
            f"link {ln}" for ln in links] + [f"pid {pid}" for pid in pids]
    finally:
        cluster.stop()
    assert _leftovers(netns, links, pids) == []
    assert not (tmp_path / "own").exists()
    cluster.stop()  # idempotent


def test_failed_start_tears_down_what_it_made(tmp_path: Path, simcluster: SimCluster,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = SimCluster(3, tmp_path / "broken")
    real_launch = cluster._launch_sshd
    launched: list[int] = []

    def launch_then_fail(node: SimNode) -> None:
        if node.name == "node03":
            raise SimClusterError("injected failure")
        real_launch(node)
        assert node._launcher is not None
        launched.append(node._launcher.pid)

    monkeypatch.setattr(cluster, "_launch_sshd", launch_then_fail)
    with pytest.raises(SimClusterError, match="injected"):
        cluster.start()
    names = [f"{cluster.prefix}-node0{i}" for i in (1, 2, 3)]
    links = [cluster.bridge] + [f"{cluster.prefix}h0{i}" for i in (1, 2, 3)]
    assert len(launched) == 2
    assert _leftovers(names, links, launched) == []
    assert cluster.nodes == [] and not (tmp_path / "broken").exists()
