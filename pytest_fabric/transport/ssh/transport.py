"""Reach a node over SSH: one Fabric ``Connection`` per node, opened once, reused for every command.

Fabric resolves what the user's ssh_config says about the host (HostName,
User, Port, IdentityFile, ProxyJump); values the inventory gives explicitly win.
Two things we do ourselves on top of it:

- the TCP socket, opened here with TCP_NODELAY: paramiko sends a command as
  several small packets, and Nagle plus delayed ACKs then stall each command by
  ~40 ms (measured on loopback: 48 ms -> under 5 ms per command);
- host key checking against known_hosts (:mod:`.hostkeys`), because Fabric
  accepts any key.

Commands run on raw exec channels of that connection (:mod:`.channel`), each
wrapped in timeout(1) so the node kills what overruns (:mod:`pytest_fabric.transport.shellwrap`).

sshd allows ``MaxSessions`` (OpenSSH default 10) sessions per connection, and a
round of servers and clients can need more on one node: when every connection to a
node has that many sessions open, the next command opens another connection to the
same node, as pdsh would, instead of being refused.
"""

from __future__ import annotations

import ipaddress
import logging
import random
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import fabric
import paramiko

from pytest_fabric.transport.base import CommandResult, CommandTimeout, SameMachine, TransportError
from pytest_fabric.transport.cmdlog import (
    log_connected,
    log_failed,
    log_ran,
    log_started,
    node_logger,
)
from pytest_fabric.transport.outcome import is_wrapper_timeout, judge
from pytest_fabric.transport.outputcap import KEEP_BYTES, CappedBuffer
from pytest_fabric.transport.shellwrap import KILL_AFTER_S, in_background, kill_marked, with_timeout
from pytest_fabric.transport.ssh.background import SSHBackgroundProcess
from pytest_fabric.transport.ssh.channel import exit_code_of, pump
from pytest_fabric.transport.ssh.config import fabric_config
from pytest_fabric.transport.ssh.errors import (
    Endpoint,
    connect_error,
    dropped_before_banner,
    dropped_error,
    lost_error,
)
from pytest_fabric.transport.ssh.hostkeys import (
    GLOBAL_KNOWN_HOSTS,
    HostKeyLog,
    HostKeyPolicy,
    certificates_first,
    configure_client,
    note_connected,
    note_refused,
)
from pytest_fabric.transport.ssh.jumphosts import JumpHosts
from pytest_fabric.transport.ssh.pacing import PACER, raise_open_files_limit

__all__ = ["SSHSettings", "SSHTransport"]

logger = logging.getLogger(__name__)

# paramiko logs a frozen sshd's banner timeout as an ERROR with a traceback, which
# Python's last-resort handler prints to stderr even though we raise a clear typed
# error for it.  Its records go to this child logger instead: a NullHandler keeps them
# off a bare stderr; pytest's log capture and the user's logging still receive them.  The name is
# the package's (plugin.py quiets it by that name), not this module's.
_PARAMIKO_LOG = "pytest_fabric.transport.ssh.paramiko"
logging.getLogger(_PARAMIKO_LOG).addHandler(logging.NullHandler())

# How long past the node-side kill we wait before deciding the connection itself hangs.
_LOCAL_SLACK_S = 3.0

# sshd drops connections beyond MaxStartups (10:30:100 by default: 30 % of them once ten are in
# authentication) before its banner, which is what a 64-node fan-out through one bastion meets.
# Such a drop is retried after these pauses (each +-25 %) before the node is called unreachable.
_DROPPED_RETRY_S = (0.2, 0.4, 0.8, 1.6, 3.2)

# A session refused on a connection with a free slot by our count: sshd still holds one whose
# channel ended a moment ago (:meth:`SSHTransport._channel`). Asked again after these pauses before
# sshd's MaxSessions is called too low.
_REFUSED_PAUSES_S = (0.05, 0.2, 0.5, 1.0)


@dataclass(frozen=True)
class SSHSettings:
    """How to reach one node.  ``None`` means: what ssh_config says, else OpenSSH's default.

    ``known_hosts`` None means ``~/.ssh/known_hosts`` (plus ``/etc/ssh/ssh_known_hosts``);
    ``ssh_config`` None means ``~/.ssh/config`` and ``/etc/ssh/ssh_config``, a path means
    that file only.  ``jump`` is a ProxyJump spec: ``[user@]host[:port][,next...]``.
    """

    host: str
    port: int | None = None
    user: str | None = None
    identity_file: Path | str | None = None
    known_hosts: Path | str | None = None
    connect_timeout: float = 10.0
    jump: str | None = None
    host_key_policy: HostKeyPolicy = "strict"
    ssh_config: Path | str | None = None
    #: sessions one connection may hold at once: sshd's MaxSessions (OpenSSH's default is 10)
    max_sessions: int = 10
    #: where host key decisions go (verified, accepted new, mismatched), shared by the run
    host_key_log: HostKeyLog | None = field(default=None, compare=False)


def _split_hop(spec: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` -> (user, host, port)."""
    user, _, hostport = spec.rpartition("@")
    host, colon, port = hostport.rpartition(":")
    if not colon or not port.isdigit() or (host.count(":") and not host.endswith("]")):
        host, port = hostport, ""
    return user or None, host.strip("[]"), int(port) if port else None


def _known_hosts_files(settings: SSHSettings, conn: fabric.Connection) -> tuple[Path | None, list[Path]]:
    """The file new keys go to and the others that count: the inventory's, else ssh_config's UserKnownHostsFile.

    As OpenSSH reads them: every file listed counts, new keys go to the first, and the
    GlobalKnownHostsFile (``/etc/ssh/ssh_known_hosts``) still counts beside them.
    """
    if settings.known_hosts:
        return Path(settings.known_hosts), []
    configured = str(conn.ssh_config.get("userknownhostsfile") or "").split()
    if not configured:
        return None, []
    tokens = {"%h": conn.host, "%p": str(conn.port), "%r": str(conn.user), "%d": str(Path.home()),
              "%u": Path.home().name, "%%": "%"}
    files = []
    for name in configured:
        for token, value in tokens.items():
            name = name.replace(token, value)
        files.append(Path(name).expanduser())
    also = files[1:] + ([GLOBAL_KNOWN_HOSTS] if GLOBAL_KNOWN_HOSTS.is_file() else [])
    return files[0], also


def _tcp_socket(host: str, port: int, timeout: float, nodelay: bool) -> socket.socket:
    """Connect to ``host:port`` (each resolved address in turn) and set the options SSH wants."""
    last: OSError | None = None
    for family, kind, proto, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        sock = socket.socket(family, kind, proto)
        sock.settimeout(timeout)
        try:
            sock.connect(address)
        except OSError as exc:
            sock.close()
            last = exc
            continue
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1 if nodelay else 0)
        # A node that vanishes without a FIN (power loss) is noticed by the kernel too.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        return sock
    raise last or OSError(f"no address for {host}")


def _hop_key(hop: SSHSettings) -> tuple[object, ...]:
    """Nodes share a jump host connection when they would open the same one."""
    return (hop.host, hop.port, hop.user, str(hop.identity_file), str(hop.known_hosts), hop.jump,
            hop.host_key_policy, str(hop.ssh_config), hop.connect_timeout)


class _QuietTransport(paramiko.Transport):
    """paramiko's Transport, its reader thread woken once a second instead of ten times.

    Each connection's reader waits on its socket with this timeout only to look whether it should
    stop; close() does not wait for it (it marks the packetizer closed), and data wakes it at once.
    At 0.1 s, 128 idle connections cost the controller 42 ms of CPU a second (512: a sixth of a
    core, for nothing); at 1 s, 16 ms.
    """

    _active_check_timeout = 1.0


class _DroppedEarly(Exception):
    """sshd closed the connection before its banner: worth another try."""

    def __init__(self, error: TransportError) -> None:
        super().__init__(str(error))
        self.error = error


def _session_open_timed_out(exc: BaseException) -> bool:
    """paramiko's open_session gave up waiting for sshd's answer (the connection itself is alive)."""
    return "Timeout opening channel" in str(exc)


class SSHTransport:
    """One node reached over SSH; see :class:`base.Transport` for the contract.

    Thread-safe: several threads may run commands on one node at once (each gets
    its own channel on the shared connection).
    """

    def __init__(
        self, node: str, settings: SSHSettings, *, jump_hosts: JumpHosts[SSHTransport] | None = None, _tcp_nodelay: bool = True
    ) -> None:
        self.node = node
        self.settings = settings
        #: where jump host connections are shared with other nodes (None: this node's own)
        self.jump_hosts = jump_hosts
        #: on every foreground command line of this transport, so interrupt() can find them on the node
        self._marker = f"pf-run-{uuid.uuid4().hex[:12]}"
        #: connections and commands, at DEBUG, for pytest's logging options (see ..cmdlog)
        self._log = node_logger(node)
        self._tcp_nodelay = (
            _tcp_nodelay  # private switch, for the benchmark's with/without comparison
        )
        self._lock = threading.RLock()
        self._conn: fabric.Connection | None = None
        self._jump: SSHTransport | None = None
        self._endpoint: Endpoint | None = None
        self._failure: TransportError | None = None
        self._background: list[SSHBackgroundProcess] = []
        #: a close() is under way: a start() arriving now is refused (see close)
        self._closing = False
        #: how many close() calls have begun: a start() that sees it change stops its own process
        self._closes = 0
        #: start() calls between entry and registering their process; close() waits for them
        self._starting = 0
        self._started = threading.Condition(self._lock)
        #: connections opened because the first one had max_sessions sessions open
        self._overflow: list[fabric.Connection] = []
        #: open sessions per connection (its paramiko Transport)
        self._sessions: dict[paramiko.Transport, int] = {}

    def __repr__(self) -> str:
        return f"SSHTransport({self.node!r}, host={self.settings.host!r})"

    # -- connecting ------------------------------------------------------------
    @property
    def connection(self) -> fabric.Connection:
        """The open Fabric connection (opened now if need be), e.g. for ``put``/``get`` via SFTP."""
        return self._open()

    def connect(self) -> None:
        """Open the connection now; raise the typed error if the node cannot be reached.

        A failed attempt is remembered: later calls raise it again at once
        instead of waiting out another connect timeout (a node is tried once per run).
        """
        self._open()

    def _open(self) -> fabric.Connection:
        with self._lock:
            conn = self._conn
            if conn is not None and conn.transport is not None and conn.transport.is_active():
                return conn
            if self._failure is not None:
                raise self._failure.again()
            self._drop()
            try:
                self._conn = self._new_connection()
            except TransportError as exc:
                self._failure = exc
                raise
            return self._conn

    def _new_connection(self) -> fabric.Connection:
        """Connect, retrying a connection sshd dropped before its banner (MaxStartups) with backoff."""
        pauses = list(_DROPPED_RETRY_S)
        tries = 0
        while True:
            tries += 1
            try:
                return self._connect_once()
            except _DroppedEarly as dropped:
                if not pauses:
                    error = dropped.error
                    error.detail += f" (tried {tries} times over about {sum(_DROPPED_RETRY_S):.0f} s)"
                    Exception.__init__(error, error._render())
                    raise error from None
                time.sleep(pauses.pop(0) * random.uniform(0.75, 1.25))

    def _connect_once(self) -> fabric.Connection:
        s = self.settings
        config = fabric_config(s.ssh_config)  # not ~/.fabric.yaml: see .config
        # gateway=False: we open the path to the node ourselves (see _socket), reading
        # ProxyJump/ProxyCommand from the same ssh_config lookup.
        conn = fabric.Connection(
            s.host, user=s.user, port=s.port, config=config, gateway=False, forward_agent=False
        )
        identity = [str(Path(s.identity_file).expanduser())] if s.identity_file else []
        keys = identity or [str(k) for k in conn.ssh_config.get("identityfile", [])]
        kwargs: dict[str, Any] = {
            "key_filename": keys,
            # An explicit key is the key (like IdentitiesOnly); without one, try ~/.ssh/id_* too.
            "look_for_keys": not identity,
            "allow_agent": True,
            # paramiko's handshake wait: when it runs out it gives up silently and the
            # next step fails with "No existing session", so it must outlast the banner wait.
            "timeout": 2 * s.connect_timeout,
            # A frozen sshd accepts TCP but never sends its banner: give up as promptly.
            "banner_timeout": s.connect_timeout,
            "auth_timeout": s.connect_timeout,
            "transport_factory": _QuietTransport,
        }
        conn.connect_timeout = None  # ours is in kwargs, as a float (Fabric would truncate to int)
        conn.client.set_log_channel(_PARAMIKO_LOG)
        known_file, also = _known_hosts_files(s, conn)
        known_hosts = configure_client(
            conn.client,
            node=self.node,
            policy=s.host_key_policy,
            known_hosts=known_file,
            host=conn.host,
            port=conn.port,
            also=also,
            log=s.host_key_log,
        )
        kwargs["transport_factory"] = certificates_first(
            _QuietTransport, known_hosts=known_file, host=conn.host, port=conn.port, also=also
        )
        jump = s.jump or conn.ssh_config.get("proxyjump")
        jump = None if jump is None or jump.lower() == "none" else jump
        self._endpoint = Endpoint(
            self.node,
            conn.host,
            conn.port,
            conn.user,
            identity_files=keys,
            known_hosts=known_hosts,
            connect_timeout=s.connect_timeout,
            via=jump.split(",")[-1] if jump else None,
        )
        raise_open_files_limit()
        endpoint = (str(conn.host), int(conn.port))
        # Paced (see .pacing): the slot is taken before the TCP connect, as sshd counts a startup
        # from its accept, and released once authenticated or failed.
        with PACER.slot(endpoint, count_in_all=not jump):
            started = time.monotonic()
            try:
                kwargs["sock"] = self._socket(conn, jump)
                conn.connect_kwargs = kwargs
                conn.open()
            except Exception as exc:
                if isinstance(exc, paramiko.BadHostKeyException):
                    note_refused(s.host_key_log, self.node, exc, s.host_key_policy, known_hosts, conn.host, conn.port)
                conn.close()
                if dropped_before_banner(exc, time.monotonic() - started, s.connect_timeout):
                    PACER.dropped(endpoint)
                    raise _DroppedEarly(dropped_error(self._endpoint)) from exc
                raise connect_error(self._endpoint, exc) from exc
            PACER.succeeded(endpoint)
            log_connected(self._log, f"{conn.host}:{conn.port}", str(conn.user), time.monotonic() - started,
                          via=jump.split(",")[-1] if jump else None)
        note_connected(s.host_key_log, self.node, conn.client, s.host_key_policy, known_hosts, conn.host, conn.port, also)
        self._refuse_same_machine(conn)
        return conn

    def _refuse_same_machine(self, conn: fabric.Connection) -> None:
        """Refuse a node whose host key another node presented: an ssh_config alias and an address (or two
        DNS names) the inventory could not tell apart are one machine, and its pairs loop back."""
        log, transport = self.settings.host_key_log, conn.client.get_transport()
        if log is None or transport is None or _is_loopback(str(conn.host)):
            return  # as at load: localhost nodes are this machine on purpose (one sshd, several names)
        key = transport.get_remote_server_key()
        other = log.claim(self.node, key.fingerprint)
        if other is None:
            return
        conn.close()
        raise SameMachine(
            self.node,
            f"presented the host key {key.fingerprint} ({key.get_name()}) that node {other} presented: one machine "
            f"listed twice under two names ({conn.host}:{conn.port}), whose pairs would be measured against itself",
            fix="list each machine once in the inventory (an ssh_config alias and the address it names are one machine)",
        )

    def _socket(self, conn: fabric.Connection, jump: str | None) -> Any:
        """The byte stream to the node's sshd: a TCP socket, a jump host channel, or a ProxyCommand."""
        if jump and self._jump is not None and self._conn is not None:
            # Another connection to the node (sessions overflow): through the same jump host.
            return self._jump.connection.transport.open_channel(
                "direct-tcpip",
                (conn.host, conn.port),
                ("127.0.0.1", 0),
                timeout=self.settings.connect_timeout,
            )
        if jump:
            *earlier, last = jump.split(",")
            user, host, port = _split_hop(last)
            hop = replace(self.settings, host=host, port=port, user=user, jump=",".join(earlier) or None)

            def make() -> SSHTransport:
                return SSHTransport(
                    f"jump host {last}", hop, jump_hosts=self.jump_hosts, _tcp_nodelay=self._tcp_nodelay
                )

            self._jump = self.jump_hosts.get(_hop_key(hop), make) if self.jump_hosts else make()
            transport = self._jump.connection.transport
            return transport.open_channel(
                "direct-tcpip",
                (conn.host, conn.port),
                ("127.0.0.1", 0),
                timeout=self.settings.connect_timeout,
            )
        proxy_command = conn.ssh_config.get("proxycommand")
        if proxy_command and proxy_command.lower() != "none":
            return paramiko.ProxyCommand(proxy_command)
        return _tcp_socket(conn.host, conn.port, self.settings.connect_timeout, self._tcp_nodelay)

    def _drop(self) -> None:
        """Forget a connection that is dead or being closed (the next command reconnects)."""
        conn, self._conn = self._conn, None
        jump, self._jump = self._jump, None
        overflow, self._overflow = self._overflow, []
        self._sessions.clear()
        for extra in overflow:
            extra.close()
        if conn is not None:
            conn.close()
        if jump is not None and self.jump_hosts is None:  # a shared one is closed with the run
            jump.close()

    def _lost(self, command: str, exc: BaseException | None = None) -> TransportError:
        with self._lock:
            self._drop()
        ep = self._endpoint
        host, port = (ep.host, ep.port) if ep else (self.settings.host, self.settings.port or 22)
        return lost_error(self.node, host, port, command, exc)

    def _transport_with_room(self) -> paramiko.Transport:
        """A connection to the node with a free session (opening another one if all are full)."""
        with self._lock:
            primary = self._open()
            for conn in [primary, *self._overflow]:
                transport: paramiko.Transport | None = conn.transport
                if transport is None or not transport.is_active():
                    continue
                if self._sessions.get(transport, 0) < self.settings.max_sessions:
                    self._sessions[transport] = self._sessions.get(transport, 0) + 1
                    return transport
            self._overflow = [c for c in self._overflow if c.transport is not None and c.transport.is_active()]
            extra = self._new_connection()
            self._overflow.append(extra)
            self._sessions[extra.transport] = 1
            return extra.transport  # type: ignore[no-any-return]

    def _release(self, transport: paramiko.Transport | None) -> None:
        """A session of ``transport`` has closed: its slot is free again."""
        if transport is None:
            return
        with self._lock:
            if self._sessions.get(transport, 0) > 0:
                self._sessions[transport] -= 1

    def _channel(self, command: str, remote_command: str) -> paramiko.Channel:
        # A live connection whose sshd is slow to open a session (the node's CPUs all busy) is
        # waited for once more, three times as long, before the command fails; it is not "lost",
        # and dropping it would end every other command running on it.
        waits = (self.settings.connect_timeout, 3 * self.settings.connect_timeout)
        attempt = refused = 0
        while True:
            wait = waits[attempt]
            transport = self._transport_with_room()
            try:
                chan: paramiko.Channel = transport.open_session(timeout=wait)
                chan.exec_command(remote_command)
                return chan
            except paramiko.ChannelException as exc:
                self._release(transport)
                # A slot is free here once a session's channel has ended, but sshd lets the session go
                # a moment later: an open in that moment is refused though nothing is wrong (a server
                # stopped and another started at once; close() stopping servers one after another
                # could not stop the next, which ran on). Asked again after a pause, it opens.
                if refused < len(_REFUSED_PAUSES_S):
                    time.sleep(_REFUSED_PAUSES_S[refused])
                    refused += 1
                    continue
                # Refused every time: sshd's MaxSessions is below the max_sessions we assumed.
                raise TransportError(
                    self.node,
                    f"sshd refused a new session: {exc}",
                    command=command,
                    fix=f"this node's sshd allows fewer than {self.settings.max_sessions} sessions per "
                    "connection: set max_sessions in the inventory to its MaxSessions",
                ) from exc
            except paramiko.SSHException as exc:
                if not (transport.is_active() and _session_open_timed_out(exc)):
                    self._release(transport)
                    raise self._lost(command, exc) from exc
                # The request stays open on the node and may still open a session there: its
                # slot stays counted, so this connection is not asked for more than sshd allows.
                if attempt + 1 < len(waits):
                    attempt += 1
                    continue
                raise TransportError(
                    self.node,
                    f"sshd accepted the connection but opened no session within {waits[0]:g} s, nor "
                    f"within {waits[1]:g} s more",
                    command=command,
                    fix=f"the node may be overloaded: check its load (uptime) and sshd; connect_timeout "
                    f"({waits[0]:g} s) in the inventory sets how long to wait",
                ) from exc
            except (EOFError, OSError) as exc:
                self._release(transport)
                raise self._lost(command, exc) from exc

    # -- running -----------------------------------------------------------------
    def run(self, command: str, *, timeout: float, check: bool = True) -> CommandResult:
        """Run ``command`` on the node; see :meth:`base.Transport.run`."""
        began = time.monotonic()  # for the log: the session's opening counts too
        chan = self._channel(command, with_timeout(command, timeout, self._marker))
        # Each stream kept up to KEEP_BYTES, head and tail beyond: a node can print without end.
        stdout = CappedBuffer(KEEP_BYTES)
        stderr = CappedBuffer(KEEP_BYTES)
        started = time.monotonic()
        try:
            finished = pump(
                chan,
                started + timeout + KILL_AFTER_S + _LOCAL_SLACK_S,
                stdout.write,
                stderr.write,
            )
            elapsed = time.monotonic() - started
            code = exit_code_of(chan) if finished else None
        finally:
            chan.close()
            self._release(chan.get_transport())
        out = stdout.text()
        if not finished:
            # timeout(1) should have ended it long ago: the connection hangs.  Start afresh next time.
            with self._lock:
                self._drop()
            log_failed(self._log, command, "no end, the connection hangs", time.monotonic() - began)
            raise CommandTimeout(self.node, command, timeout, out)
        if code is None:
            log_failed(self._log, command, "connection lost", time.monotonic() - began)
            raise self._lost(command)
        if is_wrapper_timeout(code, elapsed, timeout):
            log_failed(self._log, command, f"killed at its timeout of {timeout:g} s", time.monotonic() - began)
            raise CommandTimeout(self.node, command, timeout, out)
        log_ran(self._log, command, code, time.monotonic() - began, stdout.total, stderr.total)
        result = CommandResult(
            self.node, command, code, out, stderr.text(), elapsed
        )
        return judge(result, check=check)

    def put_file(self, local: Path, remote: str, *, mode: int = 0o600, timeout: float) -> None:
        """Copy ``local`` to ``remote`` on the node over SFTP, on a session of the node's connection
        (counted against max_sessions as a command is), then set its mode (see base.FileUpload)."""
        began = time.monotonic()
        command = f"sftp put {local} {remote}"
        transport = self._transport_with_room()
        try:
            chan = transport.open_session(timeout=self.settings.connect_timeout)
            chan.settimeout(timeout)  # each read and write of the transfer; the node cannot stall it for ever
            chan.invoke_subsystem("sftp")
            with paramiko.SFTPClient(chan) as sftp:
                # No read-back of the size: a node that changes the file after the write would fail
                # here as "an SFTP problem"; the caller hashes the file on the node and names the change.
                sftp.put(str(local), remote, confirm=False)
                sftp.chmod(remote, mode)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            log_failed(self._log, command, f"upload failed: {exc}", time.monotonic() - began)
            raise TransportError(
                self.node, f"uploading {local} to {remote} failed: {exc or type(exc).__name__}", command=command,
                fix="check that the node's sshd offers SFTP (Subsystem sftp in sshd_config) and that the "
                "directory exists and is writable by the SSH user",
            ) from exc
        finally:
            self._release(transport)
        log_ran(self._log, command, 0, time.monotonic() - began, 0, 0)

    def start(self, command: str, *, timeout: float) -> SSHBackgroundProcess:
        """Start ``command`` in the background; it is killed on the node after ``timeout`` at the latest.

        Refused while :meth:`close` runs; a start under way when close() begins is waited for, and one
        that registers after close() took its list stops its own process: either way nothing started
        around a close (a run stopped while its fan-out starts servers) is left running on the node.
        """
        began = time.monotonic()
        with self._lock:
            if self._closing:
                raise TransportError(self.node, "not started: the connection is being closed", command=command,
                                     fix="nothing to do: the run is stopping")
            closes = self._closes
            self._starting += 1
        try:
            chan = self._channel(command, in_background(command, timeout))
            process = SSHBackgroundProcess(
                self.node,
                command,
                chan,
                timeout_s=timeout,
                signal_group=self._signal_group,
                on_finish=self._forget,
            )
            with self._lock:
                closed_meanwhile = self._closes != closes
                if not closed_meanwhile:
                    self._background.append(process)
        finally:
            with self._lock:
                self._starting -= 1
                self._started.notify_all()
        if closed_meanwhile:
            process.stop()
            raise TransportError(self.node, "stopped as it started: the connection was closed meanwhile",
                                 command=command, fix="nothing to do: the run is stopping")
        # stop() needs the process group id; waiting for it here also means the
        # command has really been launched when start() returns.
        process.wait_for_pid(self.settings.connect_timeout)
        log_started(self._log, command, time.monotonic() - began)
        return process

    def _signal_group(self, pgid: int, signal_name: str) -> None:
        """Send ``signal_name`` to process group ``pgid`` on the node (to the PID if no group yet)."""
        # Just after start, timeout(1) may not have made its group yet: then the PID alone.
        self.run(
            f"kill -{signal_name} -- -{pgid} 2>/dev/null || kill -{signal_name} {pgid} 2>/dev/null; true",
            timeout=KILL_AFTER_S,
            check=False,
        )

    def _forget(self, process: SSHBackgroundProcess) -> None:
        with self._lock:
            if process in self._background:
                self._background.remove(process)
        self._release(process.channel_transport)

    def interrupt(self) -> None:
        """Kill this transport's foreground commands still running on the node (see base.Transport)."""
        with self._lock:
            alive = self._conn is not None and self._conn.transport is not None and self._conn.transport.is_active()
        if not alive:
            return  # never connected, or gone: timeout(1) on the node ends what is left
        try:
            chan = self._channel("(interrupt)", kill_marked(self._marker))
            try:
                pump(chan, time.monotonic() + self.settings.connect_timeout + 2, lambda _: None, lambda _: None)
            finally:
                chan.close()
                self._release(chan.get_transport())
        except Exception:  # noqa: BLE001 - best effort while a run unwinds
            logger.debug("interrupting commands on %s failed", self.node, exc_info=True)

    # -- closing -------------------------------------------------------------------
    def close(self) -> None:
        """Stop every background process this transport started, then close the connection.

        Idempotent and never raises, so it is safe from atexit handlers and while a
        KeyboardInterrupt unwinds.  Processes on a node we can no longer reach are
        ended there by their own timeout(1).
        """
        with self._lock:
            self._closing = True
            # A start() opening its channel now registers its process in a moment: wait for it (its
            # channel open is bounded by the connect timeout), so the list below holds it. Only
            # taking the list counts as a close for start(): one that registers while close() waits
            # is in the list and stopped below over the live connection (counted before the wait,
            # such a start stopped its own process while close() dropped the connection under it,
            # and 1 in 12 ran on)
            self._started.wait_for(lambda: self._starting == 0, timeout=self.settings.connect_timeout + KILL_AFTER_S)
            self._closes += 1
            background, self._background = list(self._background), []
            alive = (
                self._conn is not None
                and self._conn.transport is not None
                and self._conn.transport.is_active()
            )
        try:
            for process in background:
                if not alive:
                    break
                try:
                    # a start close() waited for may not have its PID back yet: as long as start()
                    # would wait for it (stop() alone waits KILL_AFTER_S, and under load the PID
                    # came later: that process ran on, 1 of 12 in a full run at load ~5)
                    process.wait_for_pid(self.settings.connect_timeout)
                    process.stop()
                except Exception:  # closing must go on
                    logger.debug("stopping %s on %s failed", process.command, self.node, exc_info=True)
        finally:
            with self._lock:
                self._drop()
                self._failure = None
                self._closing = False


def _is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address: this machine, which an inventory may list more than once."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
