"""Jump hosts (ProxyJump) shared by every node behind them: one bastion connection, many tunnels.

OpenSSH with ControlMaster reaches a thousand nodes behind a bastion over one connection to
it; a connection per node instead means a burst of handshakes that the bastion's sshd refuses
past MaxStartups (10:30:100), and nodes called unreachable that are not. Each tunnel is a
``direct-tcpip`` channel, which sshd's MaxSessions does not count.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

__all__ = ["JumpHosts"]


class _Connection(Protocol):
    def close(self) -> None: ...


# The SSH transport, which uses this module: generic over it rather than importing it back.
T = TypeVar("T", bound=_Connection)


class JumpHosts(Generic[T]):
    """The run's connections to jump hosts, one per (hop, credentials); closed at the end of the run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hosts: dict[tuple[object, ...], T] = {}
        self._connecting: dict[tuple[object, ...], threading.Lock] = {}

    def get(self, key: tuple[object, ...], make: Callable[[], T]) -> T:
        """The shared transport for ``key``, made by ``make()`` the first time."""
        with self._lock:
            found = self._hosts.get(key)
            if found is not None:
                return found
            gate = self._connecting.setdefault(key, threading.Lock())
        with gate:  # one handshake per bastion, however many nodes ask at once
            with self._lock:
                found = self._hosts.get(key)
                if found is None:
                    found = self._hosts[key] = make()
            return found

    def close_all(self) -> None:
        """Close every jump host connection.  Never raises."""
        with self._lock:
            hosts, self._hosts = list(self._hosts.values()), {}
        for host in hosts:
            host.close()
