"""A transport test double: canned answers to commands, no node needed.

Like httpx's ``MockTransport``: an extension's probe, or a new check, can be
unit-tested against recorded tool output without SSH or a cluster::

    transport = MockTransport("gpu01", {
        r"^ibstat$": Path("ibstat.txt").read_text(),
        r"^nvidia-smi topo -m$": CannedCommand(stdout=topo_text),
        r"^iperf3 -c": CannedCommand(exit_code=127, stderr="iperf3: command not found"),
    })

Each command is matched against the patterns in order (``re.search``); the
first match answers.  An unmatched command is an error that lists what was
asked, so a test never passes on a command nobody expected.  ``calls`` keeps
every command run, in order, for assertions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_fabric.transport.base import CommandResult, CommandTimeout
from pytest_fabric.transport.outcome import judge

__all__ = ["CannedCommand", "MockTransport", "MockBackgroundProcess", "UnexpectedCommand"]


@dataclass(frozen=True)
class CannedCommand:
    """How a command ends: exit code and output; ``timeout`` makes it time out instead."""

    stdout: str = ""
    stderr: str = ""
    exit_code: int = 0
    timeout: bool = False


Answer = str | CannedCommand


class UnexpectedCommand(AssertionError):
    """A command no canned answer matches."""


class MockBackgroundProcess:
    """A server started on a MockTransport: running until stopped, then its canned output."""

    def __init__(self, node: str, command: str, answer: CannedCommand) -> None:
        self.node = node
        self.command = command
        self._answer = answer
        self._running = True

    def _result(self) -> CommandResult:
        return CommandResult(self.node, self.command, self._answer.exit_code, self._answer.stdout, self._answer.stderr)

    def stop(self) -> CommandResult:
        self._running = False
        return self._result()

    def wait(self, timeout: float) -> CommandResult:
        self._running = False
        return self._result()

    def is_running(self) -> bool:
        return self._running


class MockTransport:
    """A node that answers commands from a table of patterns."""

    def __init__(self, node: str, answers: Mapping[str, Answer]) -> None:
        self.node = node
        self._answers = [(re.compile(pattern), _canned(answer)) for pattern, answer in answers.items()]
        self.calls: list[str] = []
        self.started: list[MockBackgroundProcess] = []
        self.closed = False

    def _answer(self, command: str) -> CannedCommand:
        self.calls.append(command)
        for pattern, answer in self._answers:
            if pattern.search(command):
                return answer
        raise UnexpectedCommand(f"{self.node}: no canned answer for {command!r}; patterns: {[p.pattern for p, _ in self._answers]}")

    def run(self, command: str, *, timeout: float, check: bool = True) -> CommandResult:
        answer = self._answer(command)
        if answer.timeout:
            raise CommandTimeout(self.node, command, timeout, answer.stdout)
        result = CommandResult(self.node, command, answer.exit_code, answer.stdout, answer.stderr)
        return judge(result, check=check)

    def start(self, command: str, *, timeout: float) -> MockBackgroundProcess:
        process = MockBackgroundProcess(self.node, command, self._answer(command))
        self.started.append(process)
        return process

    def connect(self) -> None:
        pass

    def close(self) -> None:
        for process in self.started:
            process.stop()
        self.closed = True


def _canned(answer: Answer) -> CannedCommand:
    return CannedCommand(stdout=answer) if isinstance(answer, str) else answer
