"""A failure is charged to the node the evidence points at (pytest_fabric/probes/reachability.py):
the peer whose sshd is gone (a real SSH connection refused on loopback), not the node that waited."""

from __future__ import annotations

from pathlib import Path

from pytest_fabric.config.inventory import Node
from pytest_fabric.probes import reachability
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import CommandTimeout, TransportError
from pytest_fabric.transport.local import LocalTransport
from pytest_fabric.transport.pool import ConnectionPool
from pytest_fabric.transport.ssh.transport import SSHSettings, SSHTransport

DATA = Path(__file__).resolve().parents[1] / "data" / "mpirun-launch"


def _local(name: str, address: str = "127.0.0.1") -> NodeHandle:
    return NodeHandle(Node(name=name, host="localhost", data_address=address), ConnectionPool(lambda n: LocalTransport(n)))


def _gone(name: str, address: str) -> NodeHandle:
    """A node whose sshd does not answer: nothing listens on port 1 of loopback."""
    settings = SSHSettings(host="127.0.0.1", port=1, connect_timeout=3.0)
    return NodeHandle(Node(name=name, host="127.0.0.1", data_address=address),
                      ConnectionPool(lambda n: SSHTransport(n, settings)))


def _client_timeout() -> TransportError:
    return CommandTimeout("node02", "iperf3 -c 10.200.0.13 -p 5201 -t 10 -P 4 -J", 40.0)


def test_a_client_timing_out_towards_a_peer_that_proves_unreachable_is_charged_to_the_peer() -> None:
    client, peer = _local("node02"), _gone("node03", "10.200.0.13")
    charged = reachability.charge_peer(_client_timeout(), [client, peer], "node02's iperf3 client to it timed out")
    assert charged.node == "node03"
    assert str(charged).startswith("node node03: unreachable (")
    assert "when node02's iperf3 client to it timed out; node02's own error was: timed out after 40 s" in str(charged)


def test_a_peer_that_answers_leaves_the_error_on_the_client() -> None:
    failed = _client_timeout()
    assert reachability.charge_peer(failed, [_local("node02"), _local("node03")], "it timed out") is failed


def test_an_mpirun_launch_that_fails_on_an_unreachable_host_is_charged_to_that_host() -> None:
    output = (DATA / "openmpi-4.1.4-ssh-refused.txt").read_text()
    launcher, lost, healthy = _local("node02"), _gone("node03", "127.0.0.2"), _local("node04", "127.0.0.4")
    failed = TransportError("node02", "exit code 255", command="mpirun --allow-run-as-root -H ... all_reduce_perf")
    charged = reachability.charge_launch(failed, output, launcher, [launcher, lost, healthy])
    assert charged.node == "node03"
    assert "when node02's mpirun could not start its daemon there (ssh: Connection refused)" in str(charged)


def test_a_host_mpirun_could_not_reach_that_answers_the_controller_is_named_but_not_charged() -> None:
    output = (DATA / "openmpi-4.1.4-ssh-refused.txt").read_text()
    launcher, other = _local("node02"), _local("node03", "127.0.0.2")
    failed = TransportError("node02", "exit code 255", command="mpirun ...")
    charged = reachability.charge_launch(failed, output, launcher, [launcher, other])
    assert charged.node == "node02"
    assert "mpirun could not reach node03 (ssh: Connection refused), which answer the controller" in str(charged)
