"""The OpenSSH client config as the SSH transport reads it (through Fabric), for what else needs it.

A node written by its ssh_config alias (``host: nu2`` with ``Host nu2 / HostName 10.0.0.2``) is
reached at its HostName; traffic between nodes (iperf3, perftest, the MTU check's interface) must
go there too, since the alias means nothing on the nodes themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import fabric

__all__ = ["hostname_lookup"]


def hostname_lookup(ssh_config: str | Path | None) -> Callable[[str], str]:
    """``host -> HostName`` as ssh_config gives it (the host itself when it says nothing).

    ``ssh_config`` None reads ``~/.ssh/config`` and ``/etc/ssh/ssh_config``, a path that file
    only: the same files the SSH transport connects with.
    """
    config = fabric.Config(runtime_ssh_path=str(Path(ssh_config).expanduser())) if ssh_config else fabric.Config()
    parsed = config.base_ssh_config

    def lookup(host: str) -> str:
        return str(parsed.lookup(host).get("hostname") or host)

    return lookup
