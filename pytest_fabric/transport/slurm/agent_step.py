"""A node's agent (:mod:`.agent`) seen from the controller: one srun step, requests in, answers out.

:class:`AgentStep` starts ``srun ... python3 -u -c SOURCE`` on one node and keeps it for the
run.  Each command is a :class:`Request` written on srun's stdin; a reader thread reads the
answers from srun's stdout and hands each to the request with its id, so any number of threads
wait on one node at once (a server, its client, a wave).  When the step ends without being
asked to (the node went down, slurmd died, the step was cancelled), every request still waiting,
and every later one, gets the error ``on_death`` makes from what srun printed: an error of that
node, naming the step.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_fabric.transport.base import TransportError
from pytest_fabric.transport.outputcap import KEEP_BYTES
from pytest_fabric.transport.shellwrap import KILL_AFTER_S

__all__ = ["AGENT_SOURCE", "AgentStep", "Request", "restated"]

logger = logging.getLogger(__name__)

#: the agent's program, sent in srun's argv: the node needs python3, not pytest-fabric
AGENT_SOURCE = (Path(__file__).with_name("agent.py")).read_text(encoding="utf-8")

#: (srun's messages, srun's exit code or None) -> the node's error
OnDeath = Callable[[Sequence[str], "int | None"], TransportError]


def restated(error: TransportError, *, node: str | None = None, command: str | None = None) -> TransportError:
    """A copy of ``error`` about another node or command (one error, several requests that met it)."""
    copy = type(error).__new__(type(error))
    copy.__dict__.update(error.__dict__)
    if node is not None:
        copy.node = node
    if command is not None:
        copy.command = command
    Exception.__init__(copy, copy._render())
    return copy


class Request:
    """One command sent to an agent; ``done`` once it answered, or once the agent is gone."""

    def __init__(self, ident: int, command: str, timeout: float) -> None:
        self.ident = ident
        self.command = command
        self.timeout = timeout
        self.sent_s = time.monotonic()
        self.finished_s: float | None = None
        self.pid: int | None = None
        self.answer: dict[str, Any] | None = None
        self.error: TransportError | None = None
        self.done = threading.Event()

    def _finish(self, answer: dict[str, Any] | None, error: TransportError | None) -> None:
        if self.done.is_set():
            return
        self.answer, self.error = answer, error
        self.finished_s = time.monotonic()
        self.done.set()

    @property
    def elapsed_s(self) -> float:
        return (self.finished_s or time.monotonic()) - self.sent_s


def end_srun(proc: subprocess.Popen[bytes]) -> None:
    """End an srun we started in its own session: TERM to its process group, KILL if it lingers.

    srun forwards the first TERM to its step's tasks, so the step ends as a cancelled one
    rather than an orphaned one; never raises.
    """
    if proc.poll() is not None:
        return
    for sig, wait_s in ((signal.SIGTERM, KILL_AFTER_S), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(wait_s)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


class AgentStep:
    """The step that hosts ``node``'s agent; start it with :meth:`open`."""

    def __init__(self, node: str, name: str, argv: Sequence[str], env: Mapping[str, str] | None,
                 on_death: OnDeath, *, grace_s: float = KILL_AFTER_S) -> None:
        self.node = node
        self.name = name  # the step's --job-name
        self.argv = list(argv)
        self.grace_s = grace_s
        self._env = dict(env) if env is not None else None
        self._on_death = on_death
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._pending: dict[int, Request] = {}
        self._next = 0
        self._hello = threading.Event()
        self._closing = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._messages: list[str] = []  # srun's stderr, and anything on stdout that is not an answer
        self.error: TransportError | None = None  # set once the step is gone
        self._gone = threading.Event()

    def __repr__(self) -> str:
        return f"AgentStep({self.node!r}, {self.name!r})"

    # ----------------------------------------------------------------- the step

    def open(self, timeout_s: float) -> None:
        """Start the step and wait for the agent's hello; raise the node's error if it never comes."""
        try:
            self._proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self._env,
                start_new_session=True,  # a Ctrl-C in the terminal is the run's to handle, not srun's
            )
        except OSError as exc:  # no srun on this host
            self.error = self._on_death([f"could not start {self.argv[0]}: {exc}"], None)
            self._gone.set()
            raise self.error from None
        errors = threading.Thread(target=self._read_stderr, name=f"pf-agent-err {self.node}", daemon=True)
        errors.start()
        reader = threading.Thread(target=self._read, args=(errors,), name=f"pf-agent {self.node}", daemon=True)
        reader.start()
        deadline = time.monotonic() + timeout_s
        while not self._hello.wait(0.05):
            if self._gone.is_set():
                break
            if time.monotonic() > deadline:
                self._messages.append(f"the agent did not answer within {timeout_s:g} s of srun starting")
                self._end_srun()
                break
        if not self._hello.is_set():
            self._gone.wait(KILL_AFTER_S + 5)
            if self.error is None:
                self.error = self._on_death(list(self._messages), self._proc.poll())
            raise self.error

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The srun that hosts the agent (None before :meth:`open`)."""
        return self._proc

    @property
    def alive(self) -> bool:
        return self._hello.is_set() and not self._gone.is_set()

    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for raw in iter(self._proc.stderr.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            if line.strip():
                with self._lock:
                    self._messages.append(line)

    def _read(self, errors: threading.Thread) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for raw in iter(self._proc.stdout.readline, b""):
            try:
                answer = json.loads(raw)
                event = answer["event"]
            except (ValueError, KeyError, TypeError):
                with self._lock:
                    self._messages.append(raw.decode(errors="replace").rstrip("\n"))
                continue
            if event == "hello":
                self._hello.set()
                continue
            with self._lock:
                request = self._pending.get(answer.get("id", -1))
                if request is not None and event == "done":
                    del self._pending[request.ident]
            if request is None:
                continue
            if event == "started":
                request.pid = answer.get("pid")
            elif event == "done":
                request._finish(answer, None)
        self._died(errors)

    def _died(self, errors: threading.Thread) -> None:
        """The agent's output ended: say why to every request still waiting, and to every later one."""
        assert self._proc is not None
        try:
            code: int | None = self._proc.wait(KILL_AFTER_S + 5)
        except subprocess.TimeoutExpired:
            code = None
        errors.join(2)
        with self._lock:
            messages = list(self._messages)
        if self._closing:
            error: TransportError = TransportError(self.node, f"this node's agent (step {self.name}) was closed",
                                                   fix="nothing: the run is ending")
        else:
            error = self._on_death(messages, code)
            logger.info("agent step %s on %s ended: %s", self.name, self.node, error)
        with self._lock:  # with the error set under the lock, no request is added to those told below
            self.error = error
            pending, self._pending = list(self._pending.values()), {}
        self._gone.set()
        for request in pending:
            request._finish(None, restated(error, command=request.command))

    def _end_srun(self) -> None:
        if self._proc is not None:
            end_srun(self._proc)

    # ----------------------------------------------------------------- requests

    def _send(self, message: dict[str, Any]) -> bool:
        proc = self._proc
        if proc is None or proc.stdin is None:
            return False
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        with self._write_lock:
            try:
                proc.stdin.write(data)
                proc.stdin.flush()
                return True
            except (OSError, ValueError):  # the step is gone; the reader says why
                return False

    def submit(self, command: str, timeout: float) -> Request:
        """Send ``command``; the agent kills its process group at ``timeout``."""
        with self._lock:
            self._next += 1
            request = Request(self._next, command, timeout)
            if self.error is None:
                self._pending[request.ident] = request
        if self.error is not None:
            request._finish(None, restated(self.error, command=command))
            return request
        self._send({"op": "exec", "id": request.ident, "command": command, "timeout": timeout,
                    "grace": self.grace_s, "keep": KEEP_BYTES})
        return request

    def kill(self, request: Request) -> None:
        """TERM the request's process group on the node, KILL it after the grace."""
        if not request.done.is_set():
            self._send({"op": "kill", "id": request.ident})

    def kill_all(self) -> None:
        """Kill every command of this agent still running (Ctrl-C), without waiting.  Never raises."""
        with self._lock:
            pending = list(self._pending.values())
        for request in pending:
            self.kill(request)

    def finish(self, request: Request, wait_s: float) -> bool:
        """Wait for ``request`` up to ``wait_s``; kill it on the node when the wait is interrupted."""
        try:
            return request.done.wait(wait_s)
        except BaseException:  # Ctrl-C while waiting: the command must not go on running on the node
            self.kill(request)
            raise

    # ----------------------------------------------------------------- the end

    def ask_to_close(self) -> None:
        """Tell the agent to end its commands and exit; the step then ends by itself."""
        self._closing = True
        self._send({"op": "exit"})
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with self._write_lock:
                try:
                    proc.stdin.close()
                except OSError:
                    pass

    def wait_closed(self, wait_s: float) -> bool:
        """Wait for the step to end after :meth:`ask_to_close`.  False: it did not (cancel it)."""
        proc = self._proc
        if proc is None:
            return True
        try:
            proc.wait(max(wait_s, 0.01))
            return True
        except subprocess.TimeoutExpired:
            return False
