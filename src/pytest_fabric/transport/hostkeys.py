"""Host key checking the way OpenSSH's StrictHostKeyChecking does it.

Fabric on its own sets paramiko's AutoAddPolicy: any key is accepted, so a
man-in-the-middle (or a reinstalled node answering at the old address) would go
unnoticed and its numbers would end up in an SLA report.  Here the node's key
is checked against a known_hosts file:

- ``strict``: an unknown host is refused (like ``StrictHostKeyChecking yes``);
- ``accept-new``: an unknown host's key is appended to the file, a changed key
  is still refused (like ``StrictHostKeyChecking accept-new``);
- ``ignore``: any key is accepted and nothing is saved (like ``no`` plus
  ``UserKnownHostsFile /dev/null``), for throwaway test clusters.

We append single lines ourselves instead of calling paramiko's
``save_host_keys``, which rewrites the whole file and drops comments,
``@cert-authority`` lines and key types it does not know.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Literal

import paramiko
from paramiko.hostkeys import HostKeys

from .base import HostKeyMismatch

__all__ = [
    "DEFAULT_KNOWN_HOSTS",
    "GLOBAL_KNOWN_HOSTS",
    "HOST_KEY_POLICIES",
    "HostKeyPolicy",
    "changed_key_error",
    "configure_client",
    "entry_lines",
    "known_hosts_name",
]

HostKeyPolicy = Literal["strict", "accept-new", "ignore"]
HOST_KEY_POLICIES: tuple[HostKeyPolicy, ...] = ("strict", "accept-new", "ignore")

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
GLOBAL_KNOWN_HOSTS = Path("/etc/ssh/ssh_known_hosts")

# Nodes are connected in parallel; appends to one file must not interleave.
_APPEND_LOCK = threading.Lock()


def known_hosts_name(host: str, port: int) -> str:
    """The name a host's key is filed under: ``host`` on port 22, ``[host]:port`` otherwise."""
    return host if port == 22 else f"[{host}]:{port}"


def _name_matches(pattern: str, name: str) -> bool:
    if pattern.startswith("|1|"):
        return HostKeys.hash_host(name, pattern) == pattern
    return pattern == name


def entry_lines(path: Path, name: str) -> list[int]:
    """1-based numbers of the lines in ``path`` that hold a key for ``name``."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    found = []
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields or fields[0].startswith(("#", "@")):
            continue
        if any(_name_matches(pattern, name) for pattern in fields[0].split(",")):
            found.append(number)
    return found


def _append(path: Path, name: str, key: paramiko.PKey) -> None:
    """Append one hashed entry (as ``HashKnownHosts yes`` would) to ``path``."""
    line = f"{HostKeys.hash_host(name)} {key.get_name()} {key.get_base64()}\n"
    with _APPEND_LOCK:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as handle:
            if handle.tell() > 0 and not path.read_bytes().endswith(b"\n"):
                line = "\n" + line
            handle.write(line)


class _RejectUnknown(paramiko.MissingHostKeyPolicy):
    """``strict``: an unknown host is an error that says how to make it known."""

    def __init__(self, node: str, path: Path, host: str, port: int) -> None:
        self._node, self._path, self._host, self._port = node, path, host, port

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        port_flag = f"-p {self._port} " if self._port != 22 else ""
        raise HostKeyMismatch(
            self._node,
            f"host key of {hostname} is not in {self._path} (unknown host; "
            f"{key.get_name()} key fingerprint {key.fingerprint})",
            fix=(
                f"verify the fingerprint, then run: ssh-keyscan -H {port_flag}{self._host} >> {self._path} "
                "(or run with --host-key-policy accept-new to trust new hosts on first use)"
            ),
        )


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """``accept-new``: trust on first use and remember the key in the file."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        _append(self._path, hostname, key)


class _AcceptAny(paramiko.MissingHostKeyPolicy):
    """``ignore``: accept whatever the node presents, remember nothing."""

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        return None


def configure_client(
    client: paramiko.SSHClient,
    *,
    node: str,
    policy: HostKeyPolicy,
    known_hosts: Path | None,
    host: str,
    port: int,
) -> Path:
    """Replace Fabric's AutoAddPolicy on ``client`` by ``policy``; return the known_hosts file used."""
    path = (known_hosts or DEFAULT_KNOWN_HOSTS).expanduser()
    if policy not in HOST_KEY_POLICIES:
        raise ValueError(
            f"host_key_policy must be one of {', '.join(HOST_KEY_POLICIES)}, got {policy!r}"
        )
    if policy == "ignore":
        client.set_missing_host_key_policy(_AcceptAny())
        return path
    # Like OpenSSH, the system-wide file counts too unless the user named a file.
    if known_hosts is None and GLOBAL_KNOWN_HOSTS.is_file():
        client.get_host_keys().load(str(GLOBAL_KNOWN_HOSTS))
    if path.is_file():
        client.get_host_keys().load(str(path))
    if policy == "strict":
        client.set_missing_host_key_policy(_RejectUnknown(node, path, host, port))
    else:
        client.set_missing_host_key_policy(_AcceptNew(path))
    return path


def changed_key_error(
    node: str, exc: paramiko.BadHostKeyException, path: Path, host: str, port: int
) -> HostKeyMismatch:
    """The error for a node whose key differs from the one on file: which file, which line, what to run."""
    name = known_hosts_name(host, port)
    lines = entry_lines(path, name)
    where = f"{path} line {', '.join(map(str, lines))}" if lines else str(path)
    return HostKeyMismatch(
        node,
        f"HOST KEY CHANGED for {name}: it presents a {exc.key.get_name()} key "
        f"{exc.key.fingerprint}, {where} expects {exc.expected_key.fingerprint}; "
        "this is a reinstalled node or someone in the middle",
        fix=(
            f"if the node was reinstalled, remove the old key with: ssh-keygen -R '{name}' -f {path} "
            f"(or delete {where}), then connect again"
        ),
    )
