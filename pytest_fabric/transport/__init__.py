"""Ways of reaching a node: SSH, this machine, and the pool that holds one per node.

SSH is the :mod:`.ssh` package.  Slurm's transport (:mod:`.slurm`) is not imported here: import
``pytest_fabric.transport.slurm``.
"""

from __future__ import annotations

from .base import (
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
from .local import LocalBackgroundProcess, LocalTransport
from .mock import CannedCommand, MockTransport
from .packages import PACKAGES, package_for
from .pool import ConnectionPool
from .ssh import HOST_KEY_POLICIES, HostKeyPolicy, SSHBackgroundProcess, SSHSettings, SSHTransport

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
