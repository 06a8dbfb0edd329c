"""Reach nodes over SSH: one Fabric connection per node, opened once and reused.

- :mod:`.transport`: :class:`SSHTransport` and its :class:`SSHSettings`;
- :mod:`.channel`: one exec channel read to the end under a deadline;
- :mod:`.background`: a server started over SSH (:class:`SSHBackgroundProcess`);
- :mod:`.errors`: paramiko's and the socket layer's failures as the transport's typed errors;
- :mod:`.hostkeys`: host keys checked against known_hosts, as OpenSSH's StrictHostKeyChecking;
- :mod:`.knownhosts`: known_hosts read as OpenSSH reads it (markers, hashed names, patterns);
- :mod:`.hostcert`: a host certificate checked against the ``@cert-authority`` keys;
- :mod:`.jumphosts`: one connection per bastion, shared by every node behind it;
- :mod:`.pacing`: how many handshakes run at once, per sshd (MaxStartups) and in all;
- :mod:`.config`: the ssh_config's HostName of a host, for the traffic between nodes.

paramiko's records go to the ``pytest_fabric.transport.ssh.paramiko`` logger.
"""

from __future__ import annotations

from pytest_fabric.transport.ssh.background import SSHBackgroundProcess
from pytest_fabric.transport.ssh.config import hostname_lookup
from pytest_fabric.transport.ssh.hostkeys import HOST_KEY_POLICIES, HostKeyPolicy
from pytest_fabric.transport.ssh.jumphosts import JumpHosts
from pytest_fabric.transport.ssh.transport import SSHSettings, SSHTransport

__all__ = [
    "HOST_KEY_POLICIES",
    "HostKeyPolicy",
    "JumpHosts",
    "SSHBackgroundProcess",
    "SSHSettings",
    "SSHTransport",
    "hostname_lookup",
]
