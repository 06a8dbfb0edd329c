"""The OpenSSH client config as the SSH transport reads it (through Fabric), for what else needs it.

A node written by its ssh_config alias (``host: nu2`` with ``Host nu2 / HostName 10.0.0.2``) is
reached at its HostName; traffic between nodes (iperf3, perftest, the MTU check's interface) must
go there too, since the alias means nothing on the nodes themselves.

Fabric's own config files (``/etc/fabric.yaml``, ``~/.fabric.yaml``) are not read: left there for
some other tool, their ``user:``, ``port:`` or ``load_ssh_configs: false`` silently changed how every
node was reached.  Only the inventory and the ssh_config decide (:func:`fabric_config`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import fabric

__all__ = ["fabric_config", "hostname_lookup"]


def fabric_config(ssh_config: str | Path | None) -> fabric.Config:
    """Fabric's Config for a connection: its defaults and the ssh_config, none of Fabric's own files.

    ``ssh_config`` None reads ``~/.ssh/config`` and ``/etc/ssh/ssh_config`` (as ssh(1) does), a path
    that file only.  ``lazy`` keeps Fabric from loading its system and user files (and nothing here
    loads its project, runtime or ``FABRIC_*`` environment levels either).
    """
    path = str(Path(ssh_config).expanduser()) if ssh_config else None
    config = fabric.Config(lazy=True, runtime_ssh_path=path)
    config.load_ssh_config()
    return config


def hostname_lookup(ssh_config: str | Path | None) -> Callable[[str], str]:
    """``host -> HostName`` as ssh_config gives it (the host itself when it says nothing).

    ``ssh_config`` None reads ``~/.ssh/config`` and ``/etc/ssh/ssh_config``, a path that file
    only: the same files the SSH transport connects with.
    """
    parsed = fabric_config(ssh_config).base_ssh_config

    def lookup(host: str) -> str:
        return str(parsed.lookup(host).get("hostname") or host)

    return lookup
