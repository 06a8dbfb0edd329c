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

The files are read by :mod:`.knownhosts`, not by paramiko (whose reader raises on a marker line):
as in OpenSSH, a key on a ``@revoked`` line is refused under every policy (also ``ignore``: the
file says outright not to trust it), and a host that a ``@cert-authority`` line covers, and whose
plain key is not listed, is asked for its host certificate first, which :mod:`.hostcert` checks
(signed by that CA, for this host name, valid now).  A certificate that fails those checks is
refused under ``strict`` and ``accept-new`` with the reason.

What was trusted is kept in a :class:`~pytest_fabric.transport.results.HostKeyLog` (one per run): each node's key
as verified against the file, accepted new (and appended), accepted although it
differs from the file or is unknown to it (``ignore``), or refused.  Under
``ignore`` the file is still read, only to say which keys did not match it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import paramiko
from paramiko.hostkeys import HostKeys

from pytest_fabric.transport.base import HostKeyMismatch

# The decisions are plain data the report reads: they are defined there, with the other evidence.
from pytest_fabric.transport.results import DECISIONS, HostKeyDecision, HostKeyLog
from pytest_fabric.transport.ssh.hostcert import CERT_SUFFIX, certificate_problem, parse_certificate
from pytest_fabric.transport.ssh.knownhosts import CA_MARKER, KnownHosts, parse_known_hosts

__all__ = [
    "DECISIONS",
    "DEFAULT_KNOWN_HOSTS",
    "HostKeyDecision",
    "HostKeyLog",
    "GLOBAL_KNOWN_HOSTS",
    "HOST_KEY_POLICIES",
    "HostKeyPolicy",
    "certificates_first",
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


logger = logging.getLogger(__name__)

# Parsed known_hosts files by path, as of their (mtime, size): a controller of 512 nodes read its
# 512-line file once per connection, 262,144 entries parsed under logging's lock (paramiko gets a
# logger per line), which held 480 connection threads at once for minutes.
_PARSED: dict[Path, tuple[tuple[int, int], KnownHosts]] = {}
_PARSED_LOCK = threading.Lock()


def _parsed(path: Path) -> KnownHosts | None:
    """The key lines of ``path`` (parsed once per change of the file), None when it cannot be read."""
    try:
        stat = path.stat()
    except OSError:
        return None
    version = (stat.st_mtime_ns, stat.st_size)
    with _PARSED_LOCK:
        cached = _PARSED.get(path)
        if cached is not None and cached[0] == version:
            return cached[1]
        try:
            text = path.read_text(errors="replace")
        except OSError:
            return None
        lines, skipped = parse_known_hosts(text)
        for bad in skipped:
            logger.warning("%s line %d skipped: %s", path, bad.number, bad.reason)
        known = KnownHosts(lines)
        _PARSED[path] = (version, known)
        return known


@dataclass
class _OnFile:
    """What the known_hosts files say about one host name."""

    #: plain keys (revoked ones left out): (key type, key)
    keys: list[tuple[str, paramiko.PKey]] = field(default_factory=list)
    #: CA key blob -> where its @cert-authority line is
    authorities: dict[bytes, str] = field(default_factory=dict)
    #: key blob -> where its @revoked line is (revoked lines count whatever host they name)
    revoked: dict[bytes, str] = field(default_factory=dict)


def _on_file(files: Sequence[Path], name: str) -> _OnFile:
    found = _OnFile()
    plain: list[tuple[str, bytes, str]] = []
    for file in files:
        known = _parsed(file)
        if known is None:
            continue
        for line in known.revoked:
            # OpenSSH refuses a revoked key for any host, whatever names the line lists.
            found.revoked.setdefault(line.blob, f"{file} line {line.number}")
        for line in known.about(name):
            where = f"{file} line {line.number}"
            if line.marker == CA_MARKER:
                found.authorities.setdefault(line.blob, where)
            else:
                plain.append((line.key_type, line.blob, where))
    for key_type, blob, where in plain:
        if blob in found.revoked:
            continue
        try:
            key = paramiko.PKey.from_type_string(key_type, blob)
        except Exception as exc:  # noqa: BLE001 - a key type paramiko does not know: OpenSSH's own may
            logger.debug("%s: key for %s not usable here: %s", where, name, exc)
            continue
        found.keys.append((key_type, key))
    return found


def _certificate_of(key: paramiko.PKey) -> bytes | None:
    """The host certificate ``key`` came in, None for a plain key."""
    blob = getattr(key, "public_blob", None)
    if blob is not None and str(blob.key_type).endswith(CERT_SUFFIX):
        return bytes(blob.key_blob)
    return None


class _Screen:
    """What every policy checks first: a @revoked key is refused, a host certificate checked against its CA."""

    def __init__(self, node: str, name: str, host: str, path: Path, on_file: _OnFile, log: HostKeyLog | None) -> None:
        self.node, self.name, self.host, self.path, self.on_file, self.log = node, name, host, path, on_file, log

    def vouched(self, key: paramiko.PKey, policy: str) -> bool:
        """True when a CA vouches for ``key``; raise when it is revoked or its certificate fails."""
        revoked_at = self.on_file.revoked.get(key.asbytes())
        if revoked_at is not None:
            if self.log is not None:
                self.log.add(_decision(self.node, self.name, "refused revoked", policy, key, self.path))
            raise HostKeyMismatch(
                self.node,
                f"host key of {self.name} ({key.get_name()} {key.fingerprint}) is marked @revoked in {revoked_at}",
                fix="the node must get a new host key; if the key is trusted again, delete that line",
            )
        blob = _certificate_of(key)
        if blob is None:
            return False
        try:
            problem = certificate_problem(
                parse_certificate(blob), host=self.host, now=time.time(),
                authorities=self.on_file.authorities, revoked=self.on_file.revoked,
            )
        except ValueError as exc:
            problem = str(exc)
        if problem is None:
            if self.log is not None:
                self.log.add(_decision(self.node, self.name, "verified by CA", policy, key, self.path))
            return True
        if policy == "ignore":
            return False  # accepted below like any key, and logged as unknown or changed
        if self.log is not None:
            self.log.add(_decision(self.node, self.name, "refused certificate", policy, key, self.path))
        cas = "; @cert-authority lines for it: " + ", ".join(self.on_file.authorities.values()) if self.on_file.authorities else ""
        raise HostKeyMismatch(
            self.node,
            f"{self.name} presents a host certificate ({key.get_name()} {key.fingerprint}) that is not trusted: "
            f"{problem}{cas}",
            fix="re-sign the node's host key with the site CA for this host name (ssh-keygen -s CA_KEY -h -n "
            f"{self.host} ...), or add the CA's public key as '@cert-authority {self.host} KEY' to {self.path}",
        )

    def ca_hint(self) -> str:
        """For an unknown plain key of a host a CA line covers: why no certificate helped."""
        if not self.on_file.authorities:
            return ""
        return (f"; {', '.join(self.on_file.authorities.values())} trusts a CA for this host, but the node "
                "presented a plain key, no certificate (HostCertificate in its sshd_config)")


def known_hosts_name(host: str, port: int) -> str:
    """The name a host's key is filed under: ``host`` on port 22, ``[host]:port`` otherwise."""
    return host if port == 22 else f"[{host}]:{port}"


def entry_lines(path: Path, name: str) -> list[int]:
    """1-based numbers of the lines in ``path`` that hold a key for ``name``."""
    known = _parsed(path)
    return [line.number for line in known.about(name) if not line.marker] if known is not None else []


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

    def __init__(self, node: str, path: Path, host: str, port: int, log: HostKeyLog | None = None,
                 screen: _Screen | None = None) -> None:
        self._node, self._path, self._host, self._port, self._log = node, path, host, port, log
        self._screen = screen

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        if self._screen is not None and self._screen.vouched(key, "strict"):
            return None
        if self._log is not None:
            self._log.add(_decision(self._node, hostname, "refused unknown", "strict", key, self._path))
        port_flag = f"-p {self._port} " if self._port != 22 else ""
        raise HostKeyMismatch(
            self._node,
            f"host key of {hostname} is not in {self._path} (unknown host; "
            f"{key.get_name()} key fingerprint {key.fingerprint}"
            f"{self._screen.ca_hint() if self._screen is not None else ''})",
            fix=(
                f"verify the fingerprint, then run: ssh-keyscan -H {port_flag}{self._host} >> {self._path} "
                "(or run with --host-key-policy accept-new to trust new hosts on first use)"
            ),
        )


class _AcceptNew(paramiko.MissingHostKeyPolicy):
    """``accept-new``: trust on first use and remember the key in the file."""

    def __init__(self, path: Path, node: str = "", log: HostKeyLog | None = None, screen: _Screen | None = None) -> None:
        self._path, self._node, self._log, self._screen = path, node, log, screen

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        if self._screen is not None and self._screen.vouched(key, "accept-new"):
            return None  # vouched for by the CA: nothing to remember, as OpenSSH does
        client.get_host_keys().add(hostname, key.get_name(), key)
        _append(self._path, hostname, key)
        if self._log is not None:
            self._log.add(_decision(self._node, hostname, "accepted new", "accept-new", key, self._path))


class _AcceptAny(paramiko.MissingHostKeyPolicy):
    """``ignore``: accept whatever the node presents, remember nothing, but say how it compares with the file."""

    def __init__(self, node: str = "", path: Path = DEFAULT_KNOWN_HOSTS, known: HostKeys | None = None,
                 log: HostKeyLog | None = None, screen: _Screen | None = None) -> None:
        self._node, self._path, self._known, self._log, self._screen = node, path, known, log, screen

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        if self._screen is not None and self._screen.vouched(key, "ignore"):
            return None
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
    # Under ignore the keys are read apart from the client's, which would refuse a changed one.
    keys = HostKeys() if policy == "ignore" else client.get_host_keys()
    name = known_hosts_name(host, port)
    # Only this host's entries: paramiko looks the server up under this name, and nothing else.
    on_file = _on_file(_files(known_hosts, also), name)
    for key_type, key in on_file.keys:
        keys.add(name, key_type, key)
    screen = _Screen(node, name, host, path, on_file, log)
    if policy == "ignore":
        client.set_missing_host_key_policy(_AcceptAny(node, path, keys, log, screen))
    elif policy == "strict":
        client.set_missing_host_key_policy(_RejectUnknown(node, path, host, port, log, screen))
    else:
        client.set_missing_host_key_policy(_AcceptNew(path, node, log, screen))
    return path


def _files(known_hosts: Path | None, also: Sequence[Path]) -> list[Path]:
    """Every file whose keys count, the one new keys go to last."""
    files = [p.expanduser() for p in also]
    # Like OpenSSH, the system-wide file counts too unless the user named a file.
    if known_hosts is None and GLOBAL_KNOWN_HOSTS.is_file():
        files.append(GLOBAL_KNOWN_HOSTS)
    files.append((known_hosts or DEFAULT_KNOWN_HOSTS).expanduser())
    return files


def certificates_first(
    transport_class: type[paramiko.Transport], *, known_hosts: Path | None, host: str, port: int, also: Sequence[Path] = ()
) -> type[paramiko.Transport]:
    """``transport_class``, asking for host certificates first when a CA line covers the host and no plain key is listed.

    paramiko offers the certificate algorithms after the plain ones, so an sshd that has both
    would always answer with its plain key, which known_hosts does not list; OpenSSH likewise
    asks for certificates first when a ``@cert-authority`` line matches.
    """
    on_file = _on_file(_files(known_hosts, also), known_hosts_name(host, port))
    if not on_file.authorities or on_file.keys:
        return transport_class

    class _CertificatesFirst(transport_class):  # type: ignore[valid-type,misc]
        @property
        def preferred_keys(self) -> tuple[str, ...]:
            offered = tuple(super().preferred_keys)
            return tuple(k for k in offered if k.endswith(CERT_SUFFIX)) + tuple(
                k for k in offered if not k.endswith(CERT_SUFFIX)
            )

    return _CertificatesFirst


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
        decision = "refused revoked" if _revoked_line(path, exc.key) else "refused changed"
        log.add(_decision(node, known_hosts_name(host, port), decision, policy, exc.key, path, exc.expected_key))


def _revoked_line(path: Path, key: paramiko.PKey) -> int | None:
    """The line of ``path`` that marks ``key`` @revoked, if one does."""
    known = _parsed(path)
    blob = key.asbytes()
    return next((line.number for line in known.revoked if line.blob == blob), None) if known is not None else None


def changed_key_error(
    node: str, exc: paramiko.BadHostKeyException, path: Path, host: str, port: int
) -> HostKeyMismatch:
    """The error for a node whose key differs from the one on file: which file, which line, what to run."""
    name = known_hosts_name(host, port)
    revoked = _revoked_line(path, exc.key)
    if revoked is not None:
        # paramiko compared it with the key listed for the host first; that it is revoked says more.
        return HostKeyMismatch(
            node,
            f"host key of {name} ({exc.key.get_name()} {exc.key.fingerprint}) is marked @revoked in {path} "
            f"line {revoked}",
            fix="the node must get a new host key; if the key is trusted again, delete that line",
        )
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
