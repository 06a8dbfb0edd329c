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

What was trusted is kept in a :class:`~pytest_fabric.evidence.HostKeyLog` (one per run): each node's key
as verified against the file, accepted new (and appended), accepted although it
differs from the file or is unknown to it (``ignore``), or refused.  Under
``ignore`` the file is still read, only to say which keys did not match it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import paramiko
from paramiko.hostkeys import HostKeys

# The decisions are plain data the report reads: they are defined there, with the other evidence.
from ...evidence import DECISIONS, HostKeyDecision, HostKeyLog
from ..base import HostKeyMismatch

__all__ = [
    "DECISIONS",
    "DEFAULT_KNOWN_HOSTS",
    "HostKeyDecision",
    "HostKeyLog",
    "GLOBAL_KNOWN_HOSTS",
    "HOST_KEY_POLICIES",
    "HostKeyPolicy",
    "changed_key_error",
    "configure_client",
    "entry_lines",
    "known_hosts_name",
    "note_connected",
    "note_refused",
]

HostKeyPolicy = Literal["strict", "accept-new", "ignore"]
HOST_KEY_POLICIES: tuple[HostKeyPolicy, ...] = ("strict", "accept-new", "ignore")

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
GLOBAL_KNOWN_HOSTS = Path("/etc/ssh/ssh_known_hosts")

# Nodes are connected in parallel; appends to one file must not interleave.
_APPEND_LOCK = threading.Lock()

def _decision(
    node: str, name: str, decision: str, policy: str, key: paramiko.PKey, path: Path, expected: paramiko.PKey | None = None
) -> HostKeyDecision:
    return HostKeyDecision(node, name, decision, policy, key.get_name(), key.fingerprint, str(path),
                           expected.fingerprint if expected is not None else None)


# Parsed known_hosts files by path, as of their (mtime, size): a controller of 512 nodes read its
# 512-line file once per connection, 262,144 entries parsed under logging's lock (paramiko gets a
# logger per line), which held 480 connection threads at once for minutes.
_PARSED: dict[Path, tuple[tuple[int, int], HostKeys]] = {}
_PARSED_LOCK = threading.Lock()


def _parsed(path: Path) -> HostKeys | None:
    """The keys of ``path`` (parsed once per change of the file), None when it cannot be read."""
    try:
        stat = path.stat()
    except OSError:
        return None
    version = (stat.st_mtime_ns, stat.st_size)
    with _PARSED_LOCK:
        cached = _PARSED.get(path)
        if cached is not None and cached[0] == version:
            return cached[1]
        keys = HostKeys()
        try:
            keys.load(str(path))
        except OSError:
            return None
        _PARSED[path] = (version, keys)
        return keys


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

    def __init__(self, node: str, path: Path, host: str, port: int, log: HostKeyLog | None = None) -> None:
        self._node, self._path, self._host, self._port, self._log = node, path, host, port, log

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        if self._log is not None:
            self._log.add(_decision(self._node, hostname, "refused unknown", "strict", key, self._path))
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

    def __init__(self, path: Path, node: str = "", log: HostKeyLog | None = None) -> None:
        self._path, self._node, self._log = path, node, log

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        _append(self._path, hostname, key)
        if self._log is not None:
            self._log.add(_decision(self._node, hostname, "accepted new", "accept-new", key, self._path))


class _AcceptAny(paramiko.MissingHostKeyPolicy):
    """``ignore``: accept whatever the node presents, remember nothing, but say how it compares with the file."""

    def __init__(self, node: str = "", path: Path = DEFAULT_KNOWN_HOSTS, known: HostKeys | None = None,
                 log: HostKeyLog | None = None) -> None:
        self._node, self._path, self._known, self._log = node, path, known, log

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        if self._log is None:
            return None
        on_file = self._known.lookup(hostname) if self._known is not None else None
        expected = None
        if not on_file:
            decision = "accepted unknown"
        elif on_file.get(key.get_name()) == key:
            decision = "verified"
        else:
            decision = "accepted changed"
            expected = on_file.get(key.get_name()) or next(iter(on_file.values()))
        self._log.add(_decision(self._node, hostname, decision, "ignore", key, self._path, expected))
        return None


def configure_client(
    client: paramiko.SSHClient,
    *,
    node: str,
    policy: HostKeyPolicy,
    known_hosts: Path | None,
    host: str,
    port: int,
    also: Sequence[Path] = (),
    log: HostKeyLog | None = None,
) -> Path:
    """Replace Fabric's AutoAddPolicy on ``client`` by ``policy``; return the known_hosts file used.

    ``also``: more files whose keys count (read only), as OpenSSH reads every ``UserKnownHostsFile``
    and the ``GlobalKnownHostsFile``; new keys go to ``known_hosts``.  Decisions go to ``log``.
    """
    path = (known_hosts or DEFAULT_KNOWN_HOSTS).expanduser()
    if policy not in HOST_KEY_POLICIES:
        raise ValueError(
            f"host_key_policy must be one of {', '.join(HOST_KEY_POLICIES)}, got {policy!r}"
        )
    files = [p.expanduser() for p in also]
    # Like OpenSSH, the system-wide file counts too unless the user named a file.
    if known_hosts is None and GLOBAL_KNOWN_HOSTS.is_file():
        files.append(GLOBAL_KNOWN_HOSTS)
    files.append(path)
    # Under ignore the keys are read apart from the client's, which would refuse a changed one.
    keys = HostKeys() if policy == "ignore" else client.get_host_keys()
    name = known_hosts_name(host, port)
    for file in files:
        # Only this host's entries: paramiko looks the server up under this name, and nothing else.
        parsed = _parsed(file)
        found = parsed.lookup(name) if parsed is not None else None
        for key_type, key in (found or {}).items():
            keys.add(name, key_type, key)
    if policy == "ignore":
        client.set_missing_host_key_policy(_AcceptAny(node, path, keys, log))
    elif policy == "strict":
        client.set_missing_host_key_policy(_RejectUnknown(node, path, host, port, log))
    else:
        client.set_missing_host_key_policy(_AcceptNew(path, node, log))
    return path


def note_connected(
    log: HostKeyLog | None, node: str, client: paramiko.SSHClient, policy: HostKeyPolicy, path: Path, host: str, port: int,
    also: Sequence[Path] = (),
) -> None:
    """After a connect: a key no policy was asked about was found in known_hosts (verified).

    The decision names the file that holds the key: ``path``, or one of ``also`` (as passed to
    :func:`configure_client`) or the global file.
    """
    transport = client.get_transport()
    if log is None or transport is None or policy == "ignore":
        return  # under ignore the policy is asked about every key and has logged it
    key = transport.get_remote_server_key()
    name = known_hosts_name(host, port)
    holder = next((f for f in [path, *also, GLOBAL_KNOWN_HOSTS] if entry_lines(f.expanduser(), name)), path)
    log.add(_decision(node, name, "verified", policy, key, holder.expanduser()))


def note_refused(
    log: HostKeyLog | None, node: str, exc: paramiko.BadHostKeyException, policy: HostKeyPolicy, path: Path,
    host: str, port: int,
) -> None:
    """A key that differs from the one on file was refused (strict, accept-new)."""
    if log is not None:
        log.add(_decision(node, known_hosts_name(host, port), "refused changed", policy, exc.key, path, exc.expected_key))


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
