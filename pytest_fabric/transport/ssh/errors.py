"""Name what went wrong while setting up an SSH session, in words an operator can act on.

paramiko and the socket layer raise a dozen exception types whose messages
("[Errno 111]", "Error reading SSH protocol banner") mean nothing to someone
checking a cluster.  Each becomes one of the transport's typed errors, naming
the node, the address, the cause and the fix.
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import paramiko

from pytest_fabric.transport.base import AuthenticationFailed, NodeUnreachable, TransportError
from pytest_fabric.transport.ssh.hostkeys import changed_key_error

__all__ = ["Endpoint", "connect_error", "dropped_before_banner", "dropped_error", "lost_error"]

_NO_ROUTE = {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN, errno.ENETDOWN}


class Endpoint:
    """Where a node's sshd is, and what we offered it, for error messages."""

    def __init__(
        self,
        node: str,
        host: str,
        port: int,
        user: str,
        *,
        identity_files: list[str],
        known_hosts: Path,
        connect_timeout: float,
        via: str | None = None,
    ) -> None:
        self.node = node
        self.host = host
        self.port = port
        self.user = user
        self.identity_files = identity_files
        self.known_hosts = known_hosts
        self.connect_timeout = connect_timeout
        self.via = via

    @property
    def address(self) -> str:
        where = f"{self.host}:{self.port}"
        return f"{where} (via {self.via})" if self.via else where

    def check_up(self) -> str:
        return f"check the node is up and sshd listens on {self.host}:{self.port}" + (
            f" and is reachable from {self.via}" if self.via else ""
        )


def _unreachable(ep: Endpoint, cause: str, fix: str | None = None) -> NodeUnreachable:
    return NodeUnreachable(ep.node, f"cannot reach {ep.address}: {cause}", fix=fix or ep.check_up())


def connect_error(ep: Endpoint, exc: BaseException) -> TransportError:
    """The typed error for an exception raised while connecting to ``ep``."""
    if isinstance(exc, TransportError):
        return exc
    if isinstance(exc, paramiko.BadHostKeyException):
        return changed_key_error(ep.node, exc, ep.known_hosts, ep.host, ep.port)
    if isinstance(exc, paramiko.AuthenticationException) or (
        isinstance(exc, paramiko.SSHException) and "No authentication methods" in str(exc)
    ):
        keys = ", ".join(ep.identity_files) or "the default keys and the ssh-agent"
        key = ep.identity_files[0] if ep.identity_files else "~/.ssh/id_ed25519"
        port = f"-p {ep.port} " if ep.port != 22 else ""
        return AuthenticationFailed(
            ep.node,
            f"{ep.address} refused user {ep.user!r} with {keys} ({exc})",
            fix=f"authorise the key on the node: ssh-copy-id -i {key}.pub {port}{ep.user}@{ep.host}, "
            "or set user/identity_file in the inventory",
        )
    if isinstance(exc, socket.gaierror):
        return _unreachable(
            ep,
            f"cannot resolve host name {ep.host!r} ({exc.strerror})",
            fix=f"check the host name of {ep.node} in the inventory or ~/.ssh/config, and DNS/hosts on this machine",
        )
    if isinstance(exc, ConnectionRefusedError):
        return _unreachable(ep, "connection refused (nothing listens on that port)")
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return _unreachable(
            ep, f"TCP connect timed out after {ep.connect_timeout:g} s (host down or filtered)"
        )
    if isinstance(exc, OSError) and exc.errno in _NO_ROUTE:
        return _unreachable(ep, f"no route to host ({exc.strerror})")
    if isinstance(exc, paramiko.SSHException) and "banner" in str(exc).lower():
        return _unreachable(
            ep,
            f"TCP connected but no SSH banner within {ep.connect_timeout:g} s "
            "(sshd hung, overloaded or stopped, or the port is not SSH)",
        )
    if isinstance(exc, paramiko.SSHException) and "No existing session" in str(exc):
        return _unreachable(
            ep,
            f"SSH handshake did not complete within {2 * ep.connect_timeout:g} s (sshd hung or overloaded)",
        )
    if isinstance(exc, EOFError) or (isinstance(exc, OSError) and exc.errno == errno.ECONNRESET):
        return dropped_error(ep)
    if isinstance(exc, (paramiko.SSHException, OSError)):
        return _unreachable(ep, f"SSH handshake failed: {str(exc) or type(exc).__name__}")
    raise exc


def dropped_error(ep: Endpoint) -> NodeUnreachable:
    """sshd accepted the TCP connection and closed it before the SSH handshake."""
    return _unreachable(
        ep,
        "the node closed the connection during the SSH handshake "
        "(sshd at MaxStartups, or a firewall/tcp_wrappers rule)",
    )


def dropped_before_banner(exc: BaseException, elapsed_s: float, connect_timeout: float) -> bool:
    """Whether sshd closed the connection at once, before its banner (MaxStartups, a busy sshd).

    A banner that never came (a hung sshd) takes the whole connect timeout; a drop is quick,
    and paramiko reports both as "Error reading SSH protocol banner", so the time tells them apart.
    """
    if elapsed_s >= connect_timeout / 2:
        return False
    if isinstance(exc, EOFError) or (isinstance(exc, OSError) and exc.errno == errno.ECONNRESET):
        return True
    return isinstance(exc, paramiko.SSHException) and "banner" in str(exc).lower()


def lost_error(
    node: str, host: str, port: int, command: str, exc: BaseException | None = None
) -> NodeUnreachable:
    """The error for a connection that dropped while a command was running or starting."""
    cause = f" ({exc})" if exc else ""
    return NodeUnreachable(
        node,
        f"connection to {host}:{port} was lost{cause}; the command's outcome is unknown",
        command=command,
        fix=f"check the node is up and sshd listens on {host}:{port} (a reboot, an OOM kill of sshd, or a network drop)",
    )
