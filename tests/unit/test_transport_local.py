"""LocalTransport has the SSH transport's semantics; plus the pieces both share (packages, pool, wrappers)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_fabric.transport import (
    CommandFailed,
    CommandResult,
    CommandTimeout,
    ConnectionPool,
    LocalTransport,
    NodeUnreachable,
    ToolMissing,
    Transport,
    TransportError,
    package_for,
)
from pytest_fabric.transport.packages import missing_tool
from pytest_fabric.transport.shellwrap import in_background, seconds, split_pid, with_timeout


def marker() -> str:
    return f"1000.{random.randrange(10**8):08d}"


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def running(arg: str) -> bool:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if arg.encode() in (entry / "cmdline").read_bytes().split(b"\0") and _alive(
                    int(entry.name)
                ):
                    return True
            except OSError:
                continue
    return False


def eventually(predicate: object, within: float = 3.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def local() -> Iterator[LocalTransport]:
    t = LocalTransport("head")
    yield t
    t.close()


# -- LocalTransport ---------------------------------------------------------------------


def test_is_a_transport(local: LocalTransport) -> None:
    assert isinstance(local, Transport)


def test_run_returns_output_and_exit_code(local: LocalTransport) -> None:
    result = local.run("echo out; echo err >&2", timeout=10)
    assert (result.node, result.exit_code, result.stdout, result.stderr) == (
        "head",
        0,
        "out\n",
        "err\n",
    )


def test_check_false(local: LocalTransport) -> None:
    assert local.run("exit 3", timeout=10, check=False).exit_code == 3


def test_command_failed(local: LocalTransport) -> None:
    with pytest.raises(CommandFailed, match=r"(?s)exited with code 4.*disk on fire"):
        local.run("echo 'disk on fire' >&2; exit 4", timeout=10)


def test_tool_missing_names_the_package(local: LocalTransport) -> None:
    with pytest.raises(ToolMissing) as info:
        local.run("PATH=/nonexistent ibstat", timeout=10)
    assert info.value.tool == "ibstat" and "install infiniband-diags on head" in str(info.value)


def test_timeout_kills_the_process_group(local: LocalTransport) -> None:
    child, grandchild = marker(), marker()
    started = time.monotonic()
    with pytest.raises(CommandTimeout) as info:
        local.run(f"echo started; sleep {child} & sh -c 'sleep {grandchild}' & wait", timeout=0.5)
    assert time.monotonic() - started < 2.5
    assert info.value.partial_stdout == "started\n"
    assert eventually(lambda: not running(child) and not running(grandchild))


def test_timeout_kills_a_command_that_ignores_term(
    local: LocalTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pytest_fabric.transport.local.KILL_AFTER_S", 0.3)
    stubborn = marker()
    with pytest.raises(CommandTimeout):
        local.run(f"trap '' TERM; sleep {stubborn}", timeout=0.3)
    assert eventually(lambda: not running(stubborn))


def test_background_start_stop(local: LocalTransport) -> None:
    server = marker()
    process = local.start(f"echo ready; sleep {server}", timeout=60)
    assert eventually(lambda: running(server)) and process.is_running()
    result = process.stop()
    assert result.stdout == "ready\n" and result.exit_code == -15
    assert not process.is_running() and eventually(lambda: not running(server))


def test_background_wait(local: LocalTransport) -> None:
    assert local.start("echo done; exit 2", timeout=10).wait(5).exit_code == 2


def test_background_wait_timeout_kills_it(local: LocalTransport) -> None:
    server = marker()
    process = local.start(f"sleep {server}", timeout=60)
    with pytest.raises(CommandTimeout):
        process.wait(0.2)
    assert eventually(lambda: not running(server))


def test_background_is_killed_at_its_timeout(local: LocalTransport) -> None:
    server = marker()
    local.start(f"sleep {server}", timeout=0.3)
    assert eventually(lambda: running(server), 1) and eventually(lambda: not running(server))


def test_close_stops_background_processes(local: LocalTransport) -> None:
    a, b = marker(), marker()
    local.start(f"sleep {a}", timeout=60)
    local.start(f"sleep {b}", timeout=60)
    assert eventually(lambda: running(a) and running(b))
    local.close()
    local.close()
    assert eventually(lambda: not running(a) and not running(b))


# -- what both transports share ----------------------------------------------------------


@pytest.mark.parametrize(
    ("stderr", "command", "code", "tool"),
    [
        ("sh: 1: iperf3: not found\n", "iperf3 -c x", 127, "iperf3"),
        ("bash: line 1: ib_write_bw: command not found\n", "ib_write_bw", 127, "ib_write_bw"),
        ("zsh:1: command not found: fio\n", "fio x", 127, "fio"),
        (
            "timeout: failed to run command 'nvbandwidth': No such file or directory\n",
            "x",
            127,
            "nvbandwidth",
        ),
        (
            "",
            "sudo -n env FOO=1 /opt/nccl-tests/all_reduce_perf -b 8",
            127,
            "/opt/nccl-tests/all_reduce_perf",
        ),
        ("sh: 1: mpirun: not found\n", "cd /tmp && mpirun -np 2 x", 1, "mpirun"),
        ("error: file not found\n", "cat x", 1, None),
        ("", "false", 1, None),
    ],
)
def test_missing_tool(stderr: str, command: str, code: int, tool: str | None) -> None:
    assert missing_tool(code, stderr, command) == tool


def test_package_table() -> None:
    assert package_for("ib_write_lat") == package_for("ib_send_bw") == "perftest"
    assert package_for("/usr/sbin/perfquery") == "infiniband-diags"
    assert package_for("ibv_devinfo") == "ibverbs-utils" and package_for("rdma") == "iproute2"
    assert "NVIDIA driver" in (package_for("nvidia-smi") or "")
    assert "nccl-tests" in (package_for("all_reduce_perf") or "")
    assert package_for("dmesg") == "util-linux" and package_for("journalctl") == "systemd"  # the kernel-log checks
    assert package_for("no-such-tool") is None


def test_wrappers_quote_and_format() -> None:
    assert seconds(10) == "10" and seconds(0.25) == "0.25" and seconds(1e6) == "1000000"
    assert with_timeout("echo 'a b'", 3) == "timeout -k 5 3 sh -c 'echo '\"'\"'a b'\"'\"''"
    assert in_background("iperf3 -s", 30) == (
        "sh -c 'echo __pf_pid=$$; exec timeout -k 5 30 sh -c \"$1\"' _ 'iperf3 -s'"
    )
    assert split_pid("__pf_pid=42\nhello\n") == (42, "hello\n")
    assert split_pid("hello\n__pf_pid=42\n") == (None, "hello\n__pf_pid=42\n")


def test_error_again_keeps_type_and_says_first_failure() -> None:
    first = NodeUnreachable("gpu01", "cannot reach 10.0.0.1:22: connection refused", fix="check it")
    again = first.again()
    assert type(again) is NodeUnreachable and again is not first
    assert str(again).startswith("node gpu01: not retried in this run; first failure: cannot reach")
    assert again.again().detail == again.detail and again.fix == "check it"


# -- ConnectionPool with a fake transport ---------------------------------------------------


class FakeTransport:
    def __init__(self, node: str, delay: float, fail: bool) -> None:
        self.node, self._delay, self._fail = node, delay, fail
        self.closed = 0

    def connect(self) -> None:
        time.sleep(self._delay)
        if self._fail:
            raise NodeUnreachable(self.node, "cannot reach: connection refused")

    def run(self, command: str, *, timeout: float, check: bool = True) -> CommandResult:
        return CommandResult(self.node, command, 0, "", "")

    def start(self, command: str, *, timeout: float) -> object:  # pragma: no cover - unused
        raise NotImplementedError

    def close(self) -> None:
        self.closed += 1


def test_pool_parallel_once_per_run() -> None:
    made: list[FakeTransport] = []
    lock = threading.Lock()

    def factory(node: str) -> Transport:
        t = FakeTransport(node, delay=0.3, fail=node.startswith("bad"))
        with lock:
            made.append(t)
        return t  # type: ignore[return-value]

    nodes = [f"n{i}" for i in range(20)] + ["bad1", "bad2"]
    pool = ConnectionPool(factory)
    started = time.monotonic()
    errors = pool.connect_all(nodes + ["n0"])
    assert time.monotonic() - started < 1.5  # 22 x 0.3 s in parallel
    assert list(errors) == nodes
    assert [n for n, e in errors.items() if e is not None] == ["bad1", "bad2"]
    assert pool.get("n3") is pool.get("n3")
    with pytest.raises(NodeUnreachable, match="first failure: cannot reach"):
        pool.get("bad1")
    assert isinstance(pool.failure("bad2"), TransportError)
    assert len(made) == 22  # nobody made or tried twice
    pool.close_all()
    assert all(t.closed == 1 for t in made)


def test_local_transport_in_pool() -> None:
    with ConnectionPool(LocalTransport) as pool:
        assert pool.connect_all(["head"]) == {"head": None}
        assert pool.get("head").run("echo ok", timeout=5).stdout == "ok\n"
