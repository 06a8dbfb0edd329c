"""SSHTransport and ConnectionPool against a real OpenSSH server on 127.0.0.1.

The server is our own (tests/integration/loopback_sshd.py): own host key,
own authorized_keys, a free port, stopped by PID.  Remote processes are found by
a unique argument (``sleep 1000.<random>``) in /proc, which works because the
"node" is this machine.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_fabric.transport import (
    AuthenticationFailed,
    BackgroundProcess,
    CommandFailed,
    CommandTimeout,
    ConnectionPool,
    HostKeyMismatch,
    NodeUnreachable,
    SSHSettings,
    SSHTransport,
    ToolMissing,
    Transport,
    TransportError,
)
from pytest_fabric.transport.results import HostKeyLog
from pytest_fabric.transport.ssh import JumpHosts

try:  # tests/ is not a package: pytest puts this directory on sys.path
    from loopback_sshd import LoopbackSshd, free_port, make_key, sshd_unavailable
except ImportError:  # pragma: no cover - when tests/ is imported as a package
    from integration.loopback_sshd import (  # type: ignore[no-redef]
        LoopbackSshd,
        free_port,
        make_key,
        sshd_unavailable,
    )

pytestmark = pytest.mark.skipif(sshd_unavailable() is not None, reason=sshd_unavailable() or "")


# -- helpers -------------------------------------------------------------------------------


def marker() -> str:
    """A sleep duration nobody else uses, so /proc shows exactly our process."""
    return f"1000.{random.randrange(10**8):08d}"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"  # a zombie has died; only its parent has not reaped it yet


def pids_with(arg: str) -> list[int]:
    """PIDs of live processes with ``arg`` as a command-line argument."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if arg.encode() in args and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def eventually_there(*args: str, within: float = 5.0) -> bool:
    """True once a live process carries each of ``args`` (a started command takes a moment to exec)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(pids_with(arg) for arg in args):
            return True
        time.sleep(0.02)
    return False


def eventually_gone(pids: list[int], arg: str, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids) and not pids_with(arg):
            return True
        time.sleep(0.05)
    return False


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ssh-agent of the person running the tests must not decide who gets in."""
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackSshd]:
    server = LoopbackSshd(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def known_hosts(tmp_path: Path, sshd: LoopbackSshd) -> Path:
    path = tmp_path / "known_hosts"
    path.write_text(sshd.known_hosts_line())
    return path


@pytest.fixture
def ssh_config(tmp_path: Path) -> Path:
    """An empty ssh_config, so the tests do not read the machine's or the user's."""
    path = tmp_path / "ssh_config"
    path.write_text("")
    return path


@pytest.fixture
def settings(sshd: LoopbackSshd, known_hosts: Path, ssh_config: Path) -> Callable[..., SSHSettings]:
    def make(**overrides: Any) -> SSHSettings:
        values: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": sshd.port,
            "user": sshd.user,
            "identity_file": sshd.client_key,
            "known_hosts": known_hosts,
            "connect_timeout": 2.0,
            "ssh_config": ssh_config,
        }
        values.update(overrides)
        return SSHSettings(**values)

    return make


@pytest.fixture
def transport(settings: Callable[..., SSHSettings]) -> Iterator[SSHTransport]:
    t = SSHTransport("node1", settings())
    yield t
    t.close()


# -- running commands ---------------------------------------------------------------------


def test_run_returns_output_and_exit_code(transport: SSHTransport) -> None:
    result = transport.run("echo out; echo err >&2", timeout=10)
    assert (result.node, result.exit_code, result.stdout, result.stderr) == (
        "node1",
        0,
        "out\n",
        "err\n",
    )
    assert result.ok and result.command == "echo out; echo err >&2"


def test_the_connection_is_reused(transport: SSHTransport) -> None:
    first = transport.run("echo $SSH_CONNECTION", timeout=10).stdout
    assert all(transport.run("echo $SSH_CONNECTION", timeout=10).stdout == first for _ in range(3))


def test_quoting_survives_the_timeout_wrapper(transport: SSHTransport) -> None:
    command = """printf '%s|' "a b" 'it'"'"'s' '$HOME' "x\\"y" """
    assert transport.run(command, timeout=10).stdout == "a b|it's|$HOME|x\"y|"


def test_check_false_returns_a_failed_result(transport: SSHTransport) -> None:
    result = transport.run("echo partial; exit 3", timeout=10, check=False)
    assert (result.exit_code, result.stdout, result.ok) == (3, "partial\n", False)


def test_command_failed_names_code_command_and_output(transport: SSHTransport) -> None:
    with pytest.raises(CommandFailed) as info:
        transport.run("echo first >&2; echo 'disk on fire' >&2; exit 4", timeout=10)
    message = str(info.value)
    assert "node node1: exited with code 4" in message and "disk on fire" in message
    assert "command: echo first" in message
    assert info.value.result.exit_code == 4


def test_missing_tool_names_the_package(transport: SSHTransport) -> None:
    with pytest.raises(ToolMissing) as info:
        transport.run("PATH=/nonexistent ib_write_bw -d mlx5_0", timeout=10)
    assert info.value.tool == "ib_write_bw"
    assert "install perftest on node1" in str(info.value)


def test_exit_124_from_the_command_itself_is_not_a_timeout(transport: SSHTransport) -> None:
    with pytest.raises(CommandFailed) as info:
        transport.run("exit 124", timeout=30)
    assert info.value.result.exit_code == 124


def test_timeout_kills_the_command_and_its_children_on_the_node(transport: SSHTransport) -> None:
    child, grandchild = marker(), marker()
    command = f"sleep {child} & echo pid=$!; sh -c 'sleep {grandchild}' & echo pid=$!; wait"
    started = time.monotonic()
    with pytest.raises(CommandTimeout) as info:
        transport.run(command, timeout=1)
    assert time.monotonic() - started < 3
    assert "timed out after 1 s and was killed on the node" in str(info.value)
    pids = [int(line[4:]) for line in info.value.partial_stdout.split() if line.startswith("pid=")]
    assert len(pids) == 2
    assert eventually_gone(pids, child) and eventually_gone([], grandchild)


def test_timeout_kills_a_command_that_ignores_term(transport: SSHTransport) -> None:
    stubborn = marker()
    with pytest.raises(CommandTimeout):
        transport.run(f"trap '' TERM; sleep {stubborn}", timeout=0.5)
    assert eventually_gone([], stubborn)


def test_commands_run_concurrently_on_one_connection(transport: SSHTransport) -> None:
    results: dict[int, str] = {}

    def work(i: int) -> None:
        results[i] = transport.run(f"sleep 1; echo {i}", timeout=20).stdout

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: f"{i}\n" for i in range(8)}
    assert time.monotonic() - started < 5.0  # not 8 x 1 s one after another


def test_more_commands_than_max_sessions_all_run(transport: SSHTransport) -> None:
    """sshd allows 10 sessions per connection (MaxSessions): 12 servers and 25 commands at once still run."""
    servers = [transport.start(f"sleep {marker()}", timeout=60) for _ in range(12)]
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = transport.run(f"sleep 0.5; echo {i}", timeout=20).stdout
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(25)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors[0]
        assert results == {i: f"{i}\n" for i in range(25)}
        assert all(s.is_running() for s in servers)
    finally:
        for server in servers:
            server.stop()
    assert not any(s.is_running() for s in servers)


def test_a_session_freed_just_now_is_not_refused_as_too_many(transport: SSHTransport) -> None:
    """A server's slot is free once its channel ends, but sshd lets the session go a moment later: a
    session opened in that moment was refused ("open failed"), and close() could not stop the next
    server (1 of 12 ran on in a full run). Every connection full, then each server stopped and another
    started at once, many times over: none is refused."""
    servers = [transport.start(f"sleep {marker()}", timeout=60) for _ in range(10)]
    refused: list[BaseException] = []
    try:
        for _ in range(40):
            servers.pop(0).stop()
            try:
                servers.append(transport.start(f"sleep {marker()}", timeout=60))
            except TransportError as exc:
                refused.append(exc)
        assert not refused, f"{len(refused)} of 40 refused: {refused[0]}"
    finally:
        for server in servers:
            server.stop()


def test_an_sshd_allowing_fewer_sessions_than_assumed_is_named_after_its_refusals(
    settings: Callable[..., SSHSettings],
) -> None:
    """Refused on every ask (sshd's MaxSessions 10, the inventory's max_sessions 12): not a moment's
    lag but the setting, which the error names with the fix."""
    t = SSHTransport("node1", settings(max_sessions=12))
    markers = [marker() for _ in range(11)]
    started: list[BackgroundProcess] = []
    try:
        with pytest.raises(TransportError) as info:
            for m in markers:
                started.append(t.start(f"sleep {m}", timeout=60))
        assert len(started) == 10
        assert "sshd refused a new session" in str(info.value)
        assert "set max_sessions in the inventory to its MaxSessions" in str(info.value)
    finally:
        # ended from another connection: this one's every stop would wait out the refusals too
        cleanup = SSHTransport("cleanup", settings())
        cleanup.run("; ".join(f"pkill -xf 'sleep {m}'" for m in markers) + "; true", timeout=10, check=False)
        assert all(eventually_gone([], m) for m in markers)
        cleanup.close()
        t.close()


def test_tcp_nodelay_is_set(settings: Callable[..., SSHSettings]) -> None:
    on, off = SSHTransport("on", settings()), SSHTransport("off", settings(), _tcp_nodelay=False)
    try:
        assert on.connection.transport.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        assert off.connection.transport.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0
    finally:
        on.close()
        off.close()


# -- background processes ------------------------------------------------------------------


def test_background_stop_ends_the_process_group(transport: SSHTransport) -> None:
    server, child = marker(), marker()
    process = transport.start(f"echo ready; sleep {child} & sleep {server}", timeout=60)
    assert process.is_running() and process.pgid
    assert eventually_there(server, child)
    result = process.stop()
    assert result.stdout == "ready\n"  # the PID line is ours, not the command's
    assert result.exit_code == -15  # ended by our TERM
    assert not process.is_running()
    assert eventually_gone([], server) and eventually_gone([], child)
    assert process.stop() == result  # stopping twice is harmless


def test_background_wait_returns_when_it_ends(transport: SSHTransport) -> None:
    process = transport.start("sleep 0.2; echo done; exit 2", timeout=10)
    assert isinstance(process, BackgroundProcess) and isinstance(transport, Transport)
    result = process.wait(5)
    assert (result.exit_code, result.stdout) == (2, "done\n")


def test_background_wait_timeout_kills_it(transport: SSHTransport) -> None:
    server = marker()
    process = transport.start(f"sleep {server}", timeout=60)
    with pytest.raises(CommandTimeout):
        process.wait(0.3)
    assert eventually_gone([], server)


def test_background_is_killed_on_the_node_at_its_timeout(transport: SSHTransport) -> None:
    server = marker()
    process = transport.start(f"sleep {server}", timeout=0.5)
    assert eventually_gone([], server, within=3)
    assert process.wait(3).exit_code == 124


def test_background_missing_server_is_a_tool_error(transport: SSHTransport) -> None:
    process = transport.start("PATH=/nonexistent iperf3 -s -1", timeout=10)
    with pytest.raises(ToolMissing, match="install iperf3"):
        process.wait(5)


def test_background_iperf3_server_serves_a_client(transport: SSHTransport) -> None:
    if not any(Path(p, "iperf3").exists() for p in os.environ.get("PATH", "").split(os.pathsep)):
        pytest.skip("iperf3 is not installed")
    port = free_port()
    server = transport.start(f"iperf3 -s -1 -p {port}", timeout=30)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # wait until it listens (port in hex in /proc/net/tcp)
        if transport.run(f"grep -qi ':{port:04X} ' /proc/net/tcp", timeout=5, check=False).ok:
            break
        time.sleep(0.05)
    client = transport.run(f"iperf3 -c 127.0.0.1 -p {port} -n 1M", timeout=20)
    assert "receiver" in client.stdout
    result = server.wait(10)  # -1: the server exits after one client
    assert result.exit_code == 0 and "Server listening" in result.stdout


def test_close_stops_background_processes_and_is_idempotent(
    settings: Callable[..., SSHSettings],
) -> None:
    t = SSHTransport("node1", settings())
    first, second = marker(), marker()
    processes = [t.start(f"sleep {first}", timeout=60), t.start(f"sleep {second}", timeout=60)]
    assert eventually_there(first, second)
    t.close()
    t.close()
    assert eventually_gone([], first) and eventually_gone([], second)
    assert not any(p.is_running() for p in processes)
    assert t.run("echo again", timeout=10).stdout == "again\n"  # a closed transport reopens
    t.close()


def test_close_stops_servers_whose_start_is_in_flight(settings: Callable[..., SSHSettings]) -> None:
    """A run stopped while its fan-out starts servers (Ctrl-C) leaves none of them running.

    Each start is in flight (its channel opening, its PID not yet back) when close() runs: close()
    refuses a start that arrives while it runs, waits for those under way, and a start that
    registers after close() took its list stops its own process.
    """
    t = SSHTransport("node1", settings())
    t.run("true", timeout=10)  # connected: close() has a live connection to stop things through
    markers = [marker() for _ in range(12)]
    entered = threading.Barrier(len(markers) + 1)
    started: list[BackgroundProcess] = []
    refused: list[Exception] = []

    def start(m: str) -> None:
        entered.wait()
        try:
            started.append(t.start(f"sleep {m}", timeout=60))
        except Exception as exc:  # noqa: BLE001 - refused or stopped: what the test counts
            refused.append(exc)

    threads = [threading.Thread(target=start, args=(m,)) for m in markers]
    for thread in threads:
        thread.start()
    entered.wait()
    time.sleep(0.02)  # the starts are opening their channels now
    t.close()
    for thread in threads:
        thread.join(30)
    try:
        left = [m for m in markers if not eventually_gone([], m)]
        assert not left, f"{len(left)} of {len(markers)} servers still run after close(); refused: {refused}"
    finally:
        for process in started:
            process.stop()
        t.close()


# -- host keys -------------------------------------------------------------------------------


def test_strict_refuses_an_unknown_host(
    settings: Callable[..., SSHSettings], tmp_path: Path, sshd: LoopbackSshd
) -> None:
    empty = tmp_path / "empty_known_hosts"
    t = SSHTransport("node1", settings(known_hosts=empty))
    with pytest.raises(HostKeyMismatch) as info:
        t.connect()
    message = str(info.value)
    assert f"is not in {empty}" in message
    assert f"ssh-keyscan -H -p {sshd.port} 127.0.0.1 >> {empty}" in message
    assert "--host-key-policy accept-new" in message
    assert not empty.exists()


def test_strict_refuses_a_changed_key_and_names_the_line(
    settings: Callable[..., SSHSettings], tmp_path: Path, sshd: LoopbackSshd
) -> None:
    other = make_key(tmp_path / "other_host_key")
    kind, blob = Path(f"{other}.pub").read_text().split()[:2]
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(f"# cluster nodes\n[127.0.0.1]:{sshd.port} {kind} {blob}\n")
    with pytest.raises(HostKeyMismatch) as info:
        SSHTransport("node1", settings(known_hosts=wrong)).connect()
    message = str(info.value)
    assert "HOST KEY CHANGED" in message and f"{wrong} line 2" in message
    assert f"ssh-keygen -R '[127.0.0.1]:{sshd.port}' -f {wrong}" in message


def test_accept_new_remembers_the_key_then_refuses_a_changed_one(
    tmp_path: Path, ssh_config: Path
) -> None:
    path = tmp_path / "ssh" / "known_hosts"  # not there yet, nor its directory
    with LoopbackSshd(tmp_path / "first") as first:
        accept = SSHSettings(
            host="127.0.0.1",
            port=first.port,
            identity_file=first.client_key,
            known_hosts=path,
            connect_timeout=2.0,
            host_key_policy="accept-new",
            ssh_config=ssh_config,
        )
        t = SSHTransport("node1", accept)
        assert t.run("echo in", timeout=10).stdout == "in\n"
        t.close()
        saved = path.read_text()
        assert (
            saved.startswith("|1|") and first.host_public_key in saved
        )  # hashed, like HashKnownHosts
        t = SSHTransport("node1", accept)  # known now: connects, adds nothing
        t.connect()
        t.close()
        assert path.read_text() == saved
        port, client_key = first.port, first.client_key
    # The node is "reinstalled": same address, new host key.
    with LoopbackSshd(tmp_path / "second", port=port) as second:
        second.authorized_keys.write_text(Path(f"{client_key}.pub").read_text())
        with pytest.raises(HostKeyMismatch, match="HOST KEY CHANGED"):
            SSHTransport("node1", accept).connect()
    assert path.read_text() == saved


def test_ignore_accepts_any_key_and_saves_nothing(
    settings: Callable[..., SSHSettings], tmp_path: Path
) -> None:
    path = tmp_path / "never_written"
    t = SSHTransport("node1", settings(known_hosts=path, host_key_policy="ignore"))
    assert t.run("echo in", timeout=10).stdout == "in\n"
    t.close()
    assert not path.exists()


def _decisions(log: HostKeyLog) -> list[tuple[str, str, str]]:
    return [(d.node, d.decision, d.policy) for d in log.decisions]


def test_host_key_log_says_what_each_policy_trusted(
    settings: Callable[..., SSHSettings], tmp_path: Path, sshd: LoopbackSshd, known_hosts: Path
) -> None:
    log = HostKeyLog()
    SSHTransport("good", settings(host_key_log=log)).connect()
    new_file = tmp_path / "new_known_hosts"
    t = SSHTransport("fresh", settings(known_hosts=new_file, host_key_policy="accept-new", host_key_log=log))
    t.connect()
    t.close()
    SSHTransport("fresh", settings(known_hosts=new_file, host_key_policy="accept-new", host_key_log=log)).connect()
    SSHTransport("anon", settings(known_hosts=tmp_path / "none", host_key_policy="ignore", host_key_log=log)).connect()
    with pytest.raises(HostKeyMismatch):
        SSHTransport("stranger", settings(known_hosts=tmp_path / "none", host_key_log=log)).connect()
    assert _decisions(log) == [
        ("good", "verified", "strict"),
        ("fresh", "accepted new", "accept-new"),  # the reconnect verified it: still 'accepted new'
        ("anon", "accepted unknown", "ignore"),
        ("stranger", "refused unknown", "strict"),
    ]
    good = log.decisions[0]
    assert good.name == f"[127.0.0.1]:{sshd.port}" and good.known_hosts == str(known_hosts)
    assert good.fingerprint.startswith("SHA256:") and good.key_type == "ssh-ed25519"
    assert log.decisions[1].known_hosts == str(new_file)


def test_ignore_with_a_changed_key_connects_and_says_so(
    settings: Callable[..., SSHSettings], tmp_path: Path, sshd: LoopbackSshd
) -> None:
    other = make_key(tmp_path / "other_host_key")
    kind, blob = Path(f"{other}.pub").read_text().split()[:2]
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {kind} {blob}\n")
    log = HostKeyLog()
    t = SSHTransport("node1", settings(known_hosts=wrong, host_key_policy="ignore", host_key_log=log))
    assert t.run("echo in", timeout=10).stdout == "in\n"
    t.close()
    [decision] = log.decisions
    assert (decision.decision, decision.policy) == ("accepted changed", "ignore")
    assert decision.expected is not None and decision.expected != decision.fingerprint
    assert wrong.read_text() == f"[127.0.0.1]:{sshd.port} {kind} {blob}\n"  # nothing saved
    with pytest.raises(HostKeyMismatch):
        SSHTransport("node1", settings(known_hosts=wrong, host_key_policy="accept-new", host_key_log=log)).connect()
    assert [d.decision for d in log.decisions] == ["accepted changed", "refused changed"]


# -- connect failures --------------------------------------------------------------------------


def test_wrong_key_is_an_authentication_error(
    settings: Callable[..., SSHSettings], tmp_path: Path, sshd: LoopbackSshd
) -> None:
    stranger = make_key(tmp_path / "id_stranger")
    with pytest.raises(AuthenticationFailed) as info:
        SSHTransport("node1", settings(identity_file=stranger)).connect()
    message = str(info.value)
    assert f"refused user {sshd.user!r} with {stranger}" in message
    assert f"ssh-copy-id -i {stranger}.pub -p {sshd.port} {sshd.user}@127.0.0.1" in message


def test_closed_port_is_refused_quickly(settings: Callable[..., SSHSettings]) -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(NodeUnreachable) as info:
        SSHTransport("node1", settings(port=port)).connect()
    assert time.monotonic() - started < 1.0
    assert f"cannot reach 127.0.0.1:{port}: connection refused" in str(info.value)
    assert f"check the node is up and sshd listens on 127.0.0.1:{port}" in str(info.value)


class DroppingSshd:
    """A TCP front for the loopback sshd that closes its first ``drops`` connections at once.

    That is what sshd itself does to connections beyond MaxStartups (10:30:100 by default) while
    others are in authentication, as during a fan-out to many nodes through one bastion.
    """

    def __init__(self, target_port: int, drops: int) -> None:
        self.target_port = target_port
        self.drops = drops
        self.accepted = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self._stop:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            if self.accepted <= self.drops:
                client.close()
                continue
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop = True
        self.listener.close()


def _via(front: DroppingSshd, sshd: LoopbackSshd, tmp_path: Path, ssh_config: Path) -> SSHTransport:
    known = tmp_path / "known_hosts_front"
    known.write_text(f"[127.0.0.1]:{front.port} {sshd.host_public_key}\n")
    return SSHTransport("node1", SSHSettings(
        host="127.0.0.1", port=front.port, user=sshd.user, identity_file=sshd.client_key,
        known_hosts=known, connect_timeout=3.0, ssh_config=ssh_config,
    ))


def test_connect_dropped_at_max_startups_is_retried(sshd: LoopbackSshd, tmp_path: Path, ssh_config: Path) -> None:
    front = DroppingSshd(sshd.port, drops=2)
    t = _via(front, sshd, tmp_path, ssh_config)
    try:
        assert t.run("echo in", timeout=10).stdout == "in\n"
        assert front.accepted == 3
    finally:
        t.close()
        front.close()


def test_connect_dropped_every_time_says_so(sshd: LoopbackSshd, tmp_path: Path, ssh_config: Path) -> None:
    front = DroppingSshd(sshd.port, drops=100)
    t = _via(front, sshd, tmp_path, ssh_config)
    try:
        with pytest.raises(NodeUnreachable, match=r"(?s)closed the connection during the SSH handshake.*MaxStartups.*tried 6 times"):
            t.connect()
        assert front.accepted == 6
    finally:
        t.close()
        front.close()


def test_failed_connect_is_not_retried(settings: Callable[..., SSHSettings]) -> None:
    t = SSHTransport("node1", settings(port=free_port()))
    with pytest.raises(NodeUnreachable):
        t.connect()
    with pytest.raises(
        NodeUnreachable, match="not retried in this run; first failure: cannot reach"
    ):
        t.run("true", timeout=5)


def test_frozen_sshd_gives_up_after_connect_timeout(
    settings: Callable[..., SSHSettings], sshd: LoopbackSshd
) -> None:
    sshd.pause()
    try:
        started = time.monotonic()
        with pytest.raises(NodeUnreachable, match="no SSH banner within 1 s"):
            SSHTransport("node1", settings(connect_timeout=1.0)).connect()
        assert time.monotonic() - started < 2.5
    finally:
        sshd.resume()


def test_connection_lost_mid_command(tmp_path: Path, ssh_config: Path) -> None:
    with LoopbackSshd(tmp_path / "doomed") as doomed:
        known = tmp_path / "known_hosts"
        known.write_text(doomed.known_hosts_line())
        t = SSHTransport(
            "node1",
            SSHSettings(
                host="127.0.0.1",
                port=doomed.port,
                identity_file=doomed.client_key,
                known_hosts=known,
                connect_timeout=2.0,
                ssh_config=ssh_config,
            ),
        )
        t.connect()
        errors: list[BaseException] = []
        runner = threading.Thread(target=lambda: _capture(errors, t.run, "sleep 3", timeout=10))
        runner.start()
        time.sleep(0.5)
        assert doomed.process is not None
        # The per-connection sshd processes are children of the listener we started.
        for pid in _children(doomed.process.pid):
            os.kill(pid, 9)
        runner.join(5)
        t.close()
    assert len(errors) == 1 and isinstance(errors[0], NodeUnreachable)
    assert "was lost" in str(errors[0])


def _capture(
    errors: list[BaseException], fn: Callable[..., object], *args: Any, **kwargs: Any
) -> None:
    try:
        fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the test inspects it
        errors.append(exc)


def _children(ppid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == ppid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


# -- ssh_config and jump hosts ---------------------------------------------------------------------


def test_ssh_config_alias_is_honoured(
    tmp_path: Path, sshd: LoopbackSshd, known_hosts: Path
) -> None:
    config = tmp_path / "config"
    config.write_text(
        f"Host gpu-alias\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key}\n"
    )
    t = SSHTransport(
        "gpu01", SSHSettings(host="gpu-alias", known_hosts=known_hosts, ssh_config=config)
    )
    assert t.run("echo via alias", timeout=10).stdout == "via alias\n"
    t.close()


def test_ssh_config_user_known_hosts_file_is_honoured(tmp_path: Path, sshd: LoopbackSshd) -> None:
    first, second = tmp_path / "kh_first", tmp_path / "kh_second"
    second.write_text(sshd.known_hosts_line())  # the key is in the second file listed
    config = tmp_path / "config"
    config.write_text(
        f"Host gpu-alias\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key}\n  UserKnownHostsFile {first} {second}\n"
    )
    log = HostKeyLog()
    t = SSHTransport("gpu01", SSHSettings(host="gpu-alias", ssh_config=config, host_key_log=log))
    assert t.run("echo known", timeout=10).stdout == "known\n"
    t.close()
    assert [(d.decision, d.known_hosts) for d in log.decisions] == [("verified", str(second))]  # the file holding it
    # accept-new writes to the first file listed, as OpenSSH does.
    second.write_text("")
    SSHTransport("gpu01", SSHSettings(host="gpu-alias", ssh_config=config, host_key_policy="accept-new")).connect()
    assert sshd.host_public_key in first.read_text()


def test_inventory_values_win_over_ssh_config(
    tmp_path: Path, sshd: LoopbackSshd, known_hosts: Path
) -> None:
    config = tmp_path / "config"
    stranger = make_key(tmp_path / "id_stranger")
    config.write_text(
        f"Host 127.0.0.1\n  Port {free_port()}\n  User nobody-here\n  IdentityFile {stranger}\n  ConnectTimeout 30\n"
    )
    t = SSHTransport(
        "gpu01",
        SSHSettings(
            host="127.0.0.1",
            port=sshd.port,
            user=sshd.user,
            identity_file=sshd.client_key,
            known_hosts=known_hosts,
            ssh_config=config,
        ),
    )
    assert t.run("id -un", timeout=10).stdout.strip() == sshd.user
    t.close()


def test_jump_host(settings: Callable[..., SSHSettings], sshd: LoopbackSshd) -> None:
    # The loopback sshd is its own bastion: client -> 127.0.0.1 -> direct-tcpip -> 127.0.0.1.
    t = SSHTransport("node1", settings(jump=f"{sshd.user}@127.0.0.1:{sshd.port}"))
    assert t.run("echo through the jump host", timeout=10).stdout == "through the jump host\n"
    t.close()


def test_nodes_behind_one_jump_host_share_one_connection_to_it(
    settings: Callable[..., SSHSettings], sshd: LoopbackSshd
) -> None:
    bastion = DroppingSshd(sshd.port, drops=0)  # counts the connections the bastion accepts
    known = Path(str(settings().known_hosts))
    known.write_text(known.read_text() + f"[127.0.0.1]:{bastion.port} {sshd.host_public_key}\n")
    jumps = JumpHosts()
    nodes = [
        SSHTransport(f"node{i}", settings(jump=f"{sshd.user}@127.0.0.1:{bastion.port}"), jump_hosts=jumps)
        for i in range(5)
    ]
    try:
        threads = [threading.Thread(target=n.run, args=("true",), kwargs={"timeout": 10}) for n in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert [n.run("echo ok", timeout=10).stdout for n in nodes] == ["ok\n"] * 5
        assert bastion.accepted == 1
        nodes[0].close()  # one node done: the others' tunnels stay up
        assert nodes[1].run("echo still", timeout=10).stdout == "still\n"
    finally:
        for n in nodes:
            n.close()
        jumps.close_all()
        bastion.close()


# -- the pool ----------------------------------------------------------------------------------------


def test_pool_connects_in_parallel_and_tries_a_failed_node_once(
    settings: Callable[..., SSHSettings], tmp_path: Path, ssh_config: Path
) -> None:
    frozen = LoopbackSshd(tmp_path / "frozen").start()
    frozen.pause()
    calls: dict[str, int] = {}

    def factory(node: str) -> Transport:
        calls[node] = calls.get(node, 0) + 1
        if node.startswith("frozen"):
            # Every frozen node costs a full connect timeout: one after another would take 4 s.
            return SSHTransport(node, settings(port=frozen.port, connect_timeout=1.0))
        return SSHTransport(node, settings())

    nodes = [f"good{i}" for i in range(6)] + [f"frozen{i}" for i in range(4)]
    pool = ConnectionPool(factory)
    try:
        started = time.monotonic()
        errors = pool.connect_all(nodes)
        assert time.monotonic() - started < 2.5
        assert [n for n, e in errors.items() if e is None] == nodes[:6]
        assert all(isinstance(errors[n], NodeUnreachable) for n in nodes[6:])
        assert pool.get("good3").run("echo 3", timeout=10).stdout == "3\n"
        started = time.monotonic()
        with pytest.raises(NodeUnreachable, match="first failure: cannot reach .* no SSH banner"):
            pool.get("frozen2")
        assert time.monotonic() - started < 0.1
        assert calls == {n: 1 for n in nodes}
    finally:
        pool.close_all()
        frozen.stop()


# -- what a run trusted, through the plugin ----------------------------------------------------------


def test_run_under_ignore_records_a_changed_key(
    pytester: pytest.Pytester, sshd: LoopbackSshd, tmp_path: Path, ssh_config: Path
) -> None:
    other = make_key(tmp_path / "other_host_key")
    kind, blob = Path(f"{other}.pub").read_text().split()[:2]
    wrong = tmp_path / "wrong_known_hosts"
    wrong.write_text(f"[127.0.0.1]:{sshd.port} {kind} {blob}\n")
    inventory = pytester.path / "inv.yaml"
    inventory.write_text(
        "name: loop\n"
        f"defaults: {{user: {sshd.user}, port: {sshd.port}, identity_file: {sshd.client_key}, known_hosts: {wrong},"
        " transport: ssh}\n"
        "nodes: [{name: n1, host: 127.0.0.1}]\n"
    )
    result = pytester.runpytest(
        "--cluster", str(inventory), "--profile", "localhost", "--host-key-policy", "ignore",
        "--ssh-config", str(ssh_config), "-k", "mtu", "--conformance-json", "rec.json", "-p", "no:cacheprovider",
    )
    result.stdout.fnmatch_lines([
        "fabric: host keys: ignore (ANY key is accepted and nothing is saved: the nodes are not authenticated)",
    ])
    result.stdout.fnmatch_lines([
        f"host keys (ignore): ACCEPTED CHANGED (differs from {wrong}): n1",
        f"    n1: [[]127.0.0.1]:{sshd.port} presents ssh-ed25519 SHA256:*, the file has SHA256:*",
    ])
    run = json.loads((pytester.path / "rec.json").read_text())["run"]
    assert run["host_key_policy"] == "ignore"
    [decision] = run["host_keys"]
    assert (decision["node"], decision["decision"], decision["known_hosts"]) == ("n1", "accepted changed", str(wrong))
    assert decision["expected"].startswith("SHA256:") and decision["expected"] != decision["fingerprint"]


def test_data_traffic_goes_where_ssh_connects_for_an_alias(
    pytester: pytest.Pytester, sshd: LoopbackSshd, known_hosts: Path, tmp_path: Path
) -> None:
    config = tmp_path / "ssh_config_aliases"
    config.write_text(
        f"Host nu*\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n  IdentityFile {sshd.client_key}\n"
        f"  UserKnownHostsFile {known_hosts}\n"
    )
    inventory = pytester.path / "inv.yaml"
    inventory.write_text("name: aliases\ndefaults: {transport: ssh}\nnodes: [{name: nu1}]\n")
    result = pytester.runpytest(
        "--cluster", str(inventory), "--profile", "localhost", "--ssh-config", str(config),
        "-k", "mtu", "--conformance-json", "rec.json", "-p", "no:cacheprovider",
    )
    record = json.loads((pytester.path / "rec.json").read_text())
    [mtu] = [c for c in record["checks"] if c["check"] == "mtu"]
    # The MTU check finds the interface holding the data address: 127.0.0.1 (lo), not 'nu1'.
    assert mtu["outcome"] == "passed", result.stdout.str()
    assert record["run"]["host_keys"][0]["decision"] == "verified"


def test_data_address_in_the_inventory_wins_over_ssh_config(tmp_path: Path) -> None:
    from pytest_fabric.config.inventory import load_inventory, with_data_addresses
    from pytest_fabric.transport.ssh import hostname_lookup

    config = tmp_path / "ssh_config"
    config.write_text("Host nu*\n  HostName 10.0.0.%h\nHost head\n  HostName head.example.com\n")
    inventory = tmp_path / "inv.yaml"
    inventory.write_text(
        "nodes:\n  - {name: 'nu[1-2]'}\n  - {name: nu3, data_address: 192.168.0.3}\n  - {name: other}\n"
        "  - {name: here, host: localhost}\n"
    )
    resolved = with_data_addresses(load_inventory(inventory), hostname_lookup(config))
    assert [n.address for n in resolved.nodes] == ["10.0.0.nu1", "10.0.0.nu2", "192.168.0.3", "other", "localhost"]
    assert [n.host for n in resolved.nodes] == ["nu1", "nu2", "nu3", "other", "localhost"]


# -- a node whose sshd is slow ------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (its per-connection sshd processes), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def test_a_session_sshd_is_slow_to_open_is_waited_for_and_the_connection_kept(
    settings: Callable[..., SSHSettings], sshd: LoopbackSshd
) -> None:
    """Fails on treating a slow session open as a lost connection: on 64 simulated nodes sharing two
    busy cores, sshd took longer than connect_timeout to open a session, the node was called lost
    and its connection dropped with every command on it.  Here the node's sshd is stopped for 1.6 s."""
    transport = SSHTransport("node1", settings(connect_timeout=1.0))
    stalled: list[int] = []
    try:
        assert transport.run("true", timeout=10).exit_code == 0  # connected, sessions open fine
        assert sshd.process is not None
        stalled = _descendants(sshd.process.pid)  # this connection's sshd, not the listener
        assert stalled
        _signal_all(stalled, signal.SIGSTOP)
        threading.Timer(1.6, _signal_all, (stalled, signal.SIGCONT)).start()
        started = time.monotonic()
        result = transport.run("echo still-here", timeout=10)
        assert result.stdout.strip() == "still-here"
        assert 1.5 < time.monotonic() - started < 4.5
        assert transport.run("true", timeout=10).exit_code == 0  # the same connection goes on
    finally:
        _signal_all(stalled, signal.SIGCONT)
        transport.close()
