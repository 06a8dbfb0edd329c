"""The Slurm node agent and its controller side, run here as a local process (no Slurm needed).

:class:`AgentStep` starts whatever argv it is given; on a node that is ``srun ... python3 -u -c
SOURCE``, here it is this Python with the same source, so the protocol, the timeouts, the process
groups and the end of the agent are tested for real.  tests/integration/test_slurm.py runs it
under a real srun.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from pytest_fabric.transport.base import (
    BackgroundProcess,
    CommandFailed,
    CommandResult,
    CommandTimeout,
    NodeUnreachable,
    ToolMissing,
    TransportError,
)
from pytest_fabric.transport.slurm.agent_step import AGENT_SOURCE, AgentStep, Request
from pytest_fabric.transport.slurm.transport import AgentProcess, _agent_outcome

GRACE_S = 0.5


class Deaths:
    """What the controller was told when the agent ended: srun's messages and exit code."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], int | None]] = []

    def __call__(self, messages: Sequence[str], code: int | None) -> TransportError:
        self.calls.append((list(messages), code))
        return NodeUnreachable("node01", f"agent gone (exit {code})", fix="look at the node")


@pytest.fixture
def deaths() -> Deaths:
    return Deaths()


@pytest.fixture
def agent(deaths: Deaths) -> Iterator[AgentStep]:
    step = AgentStep("node01", "pf-test-agent-node01", [sys.executable, "-u", "-c", AGENT_SOURCE], None, deaths,
                     grace_s=GRACE_S)
    step.open(30)
    try:
        yield step
    finally:
        step.ask_to_close()
        if not step.wait_closed(10):
            proc = step.process
            assert proc is not None
            proc.kill()
            proc.wait()


def token() -> str:
    """A sleep argument no other process has, to find a command's processes by."""
    return f"600.{uuid.uuid4().int % 10**6:06d}"


def running(word: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if word in cmdline and "pgrep" not in cmdline:
                pids.append(int(entry.name))
    return pids


def gone(word: str, within_s: float = 5) -> bool:
    deadline = time.monotonic() + within_s
    while running(word) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(word)


def answered(agent: AgentStep, request: Request, within_s: float = 10) -> dict[str, object]:
    assert agent.finish(request, within_s), f"no answer to {request.command!r} within {within_s} s"
    assert request.error is None, request.error
    assert request.answer is not None
    return request.answer


def test_a_command_gives_its_exit_code_and_both_streams(agent: AgentStep) -> None:
    answer = answered(agent, agent.submit("echo out; echo err >&2; exit 3", 10))
    assert (answer["rc"], answer["stdout"], answer["stderr"], answer["timed_out"]) == (3, "out\n", "err\n", False)


def test_a_command_reads_nothing_of_the_protocol(agent: AgentStep) -> None:
    # stdin is /dev/null: a command that reads it ends at once, and the requests after it still arrive.
    assert answered(agent, agent.submit("cat; echo read-$?", 10))["stdout"] == "read-0\n"
    assert answered(agent, agent.submit("echo next", 10))["stdout"] == "next\n"


def test_a_timeout_kills_the_whole_process_group(agent: AgentStep) -> None:
    word = token()
    started = time.monotonic()
    answer = answered(agent, agent.submit(f"sleep {word} & sleep {word}; echo never", 1))
    assert answer["timed_out"] is True and answer["stdout"] == ""
    assert time.monotonic() - started < 1 + GRACE_S + 2
    assert gone(word)  # the child in the background died with the command


def test_a_command_that_ignores_term_is_killed_after_the_grace(agent: AgentStep) -> None:
    word = token()
    started = time.monotonic()
    answer = answered(agent, agent.submit(f"trap '' TERM; sleep {word}", 0.5))
    assert answer["timed_out"] is True and answer["rc"] == -signal.SIGKILL
    assert 0.5 + GRACE_S * 0.9 <= time.monotonic() - started < 0.5 + GRACE_S + 3
    assert gone(word)


def test_kill_stops_a_server_and_keeps_what_it_printed(agent: AgentStep) -> None:
    word = token()
    server = agent.submit(f"echo listening; sleep {word}", 60)
    deadline = time.monotonic() + 5
    while not running(word) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.pid is not None and not server.done.is_set()
    agent.kill(server)
    answer = answered(agent, server, 5)
    assert (answer["stdout"], answer["rc"], answer["timed_out"]) == ("listening\n", -signal.SIGTERM, False)
    assert gone(word)


def test_commands_of_one_node_run_at_once(agent: AgentStep) -> None:
    started = time.monotonic()
    requests = [agent.submit(f"sleep 1; echo {i}", 10) for i in range(12)]
    assert [answered(agent, r)["stdout"] for r in requests] == [f"{i}\n" for i in range(12)]
    assert time.monotonic() - started < 6  # one after another: 12 s


def _sleeping(agent: AgentStep) -> tuple[str, Request, subprocess.Popen[bytes]]:
    """A long command running under the agent: its marker word, its request, the agent's process."""
    word = token()
    waiting = agent.submit(f"sleep {word}", 60)
    deadline = time.monotonic() + 5
    while not running(word) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc = agent.process
    assert proc is not None
    return word, waiting, proc


def test_an_agent_that_dies_fails_its_requests_with_the_nodes_error(agent: AgentStep, deaths: Deaths) -> None:
    word, waiting, proc = _sleeping(agent)
    os.kill(proc.pid, signal.SIGTERM)  # as slurmstepd does when the step is cancelled
    assert agent.finish(waiting, 10)
    assert isinstance(waiting.error, NodeUnreachable) and waiting.error.command == f"sleep {word}"
    assert "agent gone (exit 143)" in str(waiting.error)
    assert len(deaths.calls) == 1 and deaths.calls[0][1] == 128 + signal.SIGTERM
    assert gone(word)  # the agent ended its command before it went
    later = agent.submit("echo too late", 10)
    assert later.done.is_set() and isinstance(later.error, NodeUnreachable) and later.error.command == "echo too late"
    assert not agent.alive


def test_a_term_that_lands_on_one_of_the_agents_threads_still_ends_it(agent: AgentStep, deaths: Deaths) -> None:
    # The kernel hands a process-directed signal to any thread that does not block it; Python runs the
    # handler only in the main thread, which the agent had blocked reading its stdin: a TERM that
    # landed on a command's thread waited there until the controller next wrote (one full run in
    # the suite missed its 10 s). tgkill aims the TERM at a command's thread on purpose.
    tgkill = getattr(ctypes.CDLL(None, use_errno=True), "tgkill", None)
    if tgkill is None:
        pytest.skip("this C library has no tgkill()")
    word, waiting, proc = _sleeping(agent)
    threads = sorted(int(t.name) for t in Path(f"/proc/{proc.pid}/task").iterdir() if int(t.name) != proc.pid)
    assert threads, "the agent runs each command in a thread of its own"
    assert tgkill(proc.pid, threads[-1], signal.SIGTERM) == 0, os.strerror(ctypes.get_errno())
    assert agent.finish(waiting, 10), "the agent did not end within 10 s of a TERM"
    assert isinstance(waiting.error, NodeUnreachable) and deaths.calls[0][1] == 128 + signal.SIGTERM
    assert gone(word)


def test_closing_the_agent_ends_its_commands(agent: AgentStep, deaths: Deaths) -> None:
    word = token()
    waiting = agent.submit(f"sleep {word}", 60)
    deadline = time.monotonic() + 5
    while not running(word) and time.monotonic() < deadline:
        time.sleep(0.05)
    agent.ask_to_close()
    assert agent.wait_closed(GRACE_S + 8)
    assert gone(word)
    assert agent.finish(waiting, 5) and waiting.error is not None and "was closed" in str(waiting.error)
    assert deaths.calls == []  # asked to end: not a death of the node


def test_a_close_that_comes_while_a_command_starts_still_ends_it(deaths: Deaths) -> None:
    # The close arrives while the command's thread is forking it: a full CI run left a command's
    # process running after the agent ended, started between the agent's last look at its
    # commands and its exit.  Asked at once, the close lands in that window most times.
    for _ in range(8):
        step = AgentStep("node01", "pf-test-agent-node01", [sys.executable, "-u", "-c", AGENT_SOURCE], None,
                         deaths, grace_s=GRACE_S)
        step.open(30)
        word = token()
        step.submit(f"sleep {word}", 60)
        step.ask_to_close()
        closed = step.wait_closed(GRACE_S + 8)
        left = running(word)
        for pid in left:  # not to leave it behind when the assertion fails
            os.kill(pid, signal.SIGKILL)
        assert closed and not left, f"the command started as the agent closed outlived it: {left}"


def test_an_agent_that_never_starts_raises_the_nodes_error(deaths: Deaths) -> None:
    step = AgentStep("node01", "pf-test-agent-node01",
                     [sys.executable, "-c", "import sys; sys.stderr.write('srun: error: no python\\n'); sys.exit(2)"],
                     None, deaths)
    with pytest.raises(NodeUnreachable, match="agent gone"):
        step.open(10)
    assert deaths.calls == [(["srun: error: no python"], 2)]


# ----------------------------------------------------------------- what the transport makes of the answers


def test_answers_become_the_results_and_errors_every_transport_gives(agent: AgentStep) -> None:
    def outcome(command: str, timeout: float = 10, check: bool = True) -> object:
        return _agent_outcome(agent, agent.submit(command, timeout), time.monotonic() + timeout + 5, check)

    ok = outcome("echo fine")
    assert isinstance(ok, CommandResult) and (ok.node, ok.exit_code, ok.stdout) == ("node01", 0, "fine\n")
    assert isinstance(outcome("exit 4"), CommandFailed)
    unchecked = outcome("exit 4", check=False)
    assert isinstance(unchecked, CommandResult) and unchecked.exit_code == 4
    missing = outcome("no-such-tool-pf --version")
    assert isinstance(missing, ToolMissing) and missing.tool == "no-such-tool-pf"
    late = outcome("echo partial; sleep 30", timeout=0.5)
    assert isinstance(late, CommandTimeout) and late.partial_stdout == "partial\n"


def test_a_background_command_stops_waits_and_says_a_missing_server(agent: AgentStep) -> None:
    server = AgentProcess(agent, agent.submit("echo listening; sleep 60", 120))
    assert isinstance(server, BackgroundProcess) and server.is_running()
    time.sleep(0.3)
    stopped = server.stop()
    assert (stopped.exit_code, stopped.stdout) == (-signal.SIGTERM, "listening\n") and not server.is_running()
    assert server.stop().exit_code == -signal.SIGTERM  # idempotent
    with pytest.raises(CommandTimeout):
        AgentProcess(agent, agent.submit("sleep 60", 120)).wait(0.3)
    with pytest.raises(ToolMissing):
        AgentProcess(agent, agent.submit("no-such-server-pf -s", 120)).wait(10)
    assert AgentProcess(agent, agent.submit("echo done", 120)).wait(10).stdout == "done\n"


def test_no_srun_on_this_host_is_the_nodes_error(deaths: Deaths) -> None:
    step = AgentStep("node01", "pf-test-agent-node01", ["/nonexistent/srun", "python3"], None, deaths)
    with pytest.raises(NodeUnreachable, match="agent gone"):
        step.open(10)
    assert deaths.calls[0][0][0].startswith("could not start /nonexistent/srun:")
    assert step.submit("echo hi", 5).error is not None


def test_a_command_that_floods_is_answered_with_its_head_and_tail(
    agent: AgentStep, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The agent keeps what the controller asks for ("keep"), so neither the node, the step's pipe
    # nor the controller holds a command's every byte.
    monkeypatch.setattr("pytest_fabric.transport.slurm.agent_step.KEEP_BYTES", 1000)
    answer = answered(agent, agent.submit("head -c 3000000 /dev/zero | tr '\\0' x; echo tail-end", 30), 30)
    out = str(answer["stdout"])
    assert len(out) < 1200 and out.startswith("x" * 500) and out.endswith("x" * 491 + "tail-end\n")
    assert "[... 2,999,009 bytes dropped by pytest-fabric: the output was 3,000,009 bytes ...]" in out
