"""Ways of reaching a node: SSH, this machine, and the pool that holds one per node.

SSH is the :mod:`.ssh` package.  Slurm's transport (:mod:`.slurm`) is not imported here: import
``pytest_fabric.transport.slurm``.
"""

from __future__ import annotations

from pytest_fabric.transport.base import (
    AuthenticationFailed,
    BackgroundProcess,
    CommandFailed,
    CommandResult,
    CommandTimeout,
    HostKeyMismatch,
    NodeUnreachable,
    ToolMissing,
    Transport,
    TransportError,
)
from pytest_fabric.transport.local import LocalBackgroundProcess, LocalTransport
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.packages import PACKAGES, package_for
from pytest_fabric.transport.pool import ConnectionPool
from pytest_fabric.transport.ssh import (
    HOST_KEY_POLICIES,
    HostKeyPolicy,
    SSHBackgroundProcess,
    SSHSettings,
    SSHTransport,
)

__all__ = [
    "HOST_KEY_POLICIES",
    "PACKAGES",
    "AuthenticationFailed",
    "BackgroundProcess",
    "CannedCommand",
    "CommandFailed",
    "CommandResult",
    "CommandTimeout",
    "ConnectionPool",
    "HostKeyMismatch",
    "HostKeyPolicy",
    "LocalBackgroundProcess",
    "LocalTransport",
    "MockTransport",
    "NodeUnreachable",
    "SSHBackgroundProcess",
    "SSHSettings",
    "SSHTransport",
    "ToolMissing",
    "Transport",
    "TransportError",
    "package_for",
]
