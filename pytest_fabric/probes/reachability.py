"""Whose failure it is when one node's command fails towards others: charged to the node the evidence
points at.

A client that times out towards a peer, or an mpirun that cannot start its daemon on a host, fails
on the node that ran it; the node at fault is often the other one (its link went down, its sshd
died). Before such an error is recorded, the other nodes are asked directly, over their own
connections: one that proves unreachable is charged with the failure (the error names it, so the
record's ``error_node`` and the nodes to send back do), and the node that only waited on it is not.
A peer that answers leaves the error where it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_fabric.parsers import mpirun_launch
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.stopgate import RunStopped
from pytest_fabric.transport.base import TransportError

__all__ = ["PROBE_TIMEOUT_S", "charge_launch", "charge_peer", "unreachable"]

#: how long a node has to run ``true`` before it counts as unreachable (a loaded node answers within a
#: second or two; a link that is down holds the command until this passes)
PROBE_TIMEOUT_S = 10.0


def unreachable(node: NodeHandle, timeout_s: float = PROBE_TIMEOUT_S) -> TransportError | None:
    """The error that running ``true`` on ``node`` meets (None: it answers). A stopped run is raised."""
    try:
        node.run("true", timeout=timeout_s)
    except RunStopped:
        raise
    except TransportError as exc:
        return exc
    return None


def _charged(peer: NodeHandle, cause: TransportError, what: str, failed: TransportError) -> MeasurementError:
    charged = MeasurementError(
        peer.name,
        f"unreachable ({cause.detail}) when {what}; {failed.node}'s own error was: {failed.detail}",
        command=failed.command,
        fix=cause.fix or f"check that {peer.name} is up and its network link and sshd answer",
    )
    charged.__cause__ = failed
    return charged


def charge_peer(failed: TransportError, peers: Sequence[NodeHandle], what: str) -> TransportError:
    """The error to raise for ``failed`` (a command of one node towards ``peers``): charged to the first
    peer that proves unreachable, else ``failed`` itself. ``what`` says what the failed command did
    (``node02's iperf3 client to it timed out``)."""
    for peer in peers:
        if peer.name == failed.node:
            continue
        cause = unreachable(peer)
        if cause is not None:
            return _charged(peer, cause, what, failed)
    return failed


def _named(host: str, nodes: Sequence[NodeHandle]) -> NodeHandle | None:
    """The node mpirun (or ssh) meant by ``host``: its address, name, SSH host, or short host name."""
    short = host.split(".")[0]
    for node in nodes:
        if host in (node.address, node.name, node.spec.host) or short == node.name:
            return node
    return None


def charge_launch(failed: TransportError, output: str, launcher: NodeHandle,
                  nodes: Sequence[NodeHandle]) -> TransportError:
    """The error to raise for a multi-node launch by ``launcher`` that failed with ``output``: the
    host mpirun names as not reached, once it proves unreachable, else any of ``nodes`` that does;
    else ``failed``, its message naming the hosts mpirun could not reach (they answer here, so the
    way from the launcher to them is what failed)."""
    launch = mpirun_launch.parse(output)
    named = [(n, f.why) for f in launch.failures if (n := _named(f.host, nodes)) is not None and n is not launcher]
    for node, why in named:
        cause = unreachable(node)
        if cause is not None:
            return _charged(node, cause, f"{launcher.name}'s mpirun could not start its daemon there ({why})", failed)
    if launch.daemons_failed or not named:
        others = [n for n in nodes if n is not launcher and all(n is not m for m, _ in named)]
        charged = charge_peer(failed, others, f"{launcher.name}'s mpirun could not launch across the nodes")
        if charged is not failed:
            return charged
    if named:
        hosts = ", ".join(f"{n.name} ({why})" for n, why in named)
        return MeasurementError(
            failed.node, f"{failed.detail}; mpirun could not reach {hosts}, which answer the controller",
            command=failed.command,
            fix=f"check that {launcher.name} reaches them over ssh without a password (ssh {named[0][0].address} "
                f"true, run on {launcher.name}), and the data network between them",
        )
    return failed
