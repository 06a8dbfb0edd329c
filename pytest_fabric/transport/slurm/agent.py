"""The program each Slurm node runs for the whole run: one job step per node, not one per command.

The controller starts it once per node (``srun ... python3 -u -c SOURCE``, so the node needs
nothing installed beyond Debian's python3) and sends it requests on the step's stdin, one JSON
object a line; the agent answers on stdout the same way.  Only the standard library, and Python
3.7's, because this is the node's python3, not the controller's.

Requests (controller to agent)::

    {"op": "exec", "id": 7, "command": "iperf3 -s", "timeout": 60.0, "grace": 5.0, "keep": 33554432}
    {"op": "kill", "id": 7}          # TERM the command's process group, KILL it after its grace
    {"op": "exit"}                   # kill everything left and end (end of stdin does the same)

Answers (agent to controller)::

    {"event": "hello", "node": "node01", "pid": 4711, "python": "3.11.2"}
    {"event": "started", "id": 7, "pid": 4712}
    {"event": "done", "id": 7, "rc": 0, "stdout": "...", "stderr": "...", "timed_out": false}

Every command runs as ``/bin/sh -c COMMAND`` in a session (so a process group) of its own with
stdin from /dev/null, each in a thread, so a node runs a server and its client's commands at
once.  At its timeout, on ``kill`` and when the agent ends, the whole group gets TERM, then KILL
after ``grace`` seconds: the same contract timeout(1) gives the other transports.  The agent ends
its commands when its stdin closes (srun went away), on SIGTERM/SIGHUP (scancel of the step or
the job) and when its parent (slurmstepd) is gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any

# What the controller uses when a request names none (and what the agent uses at its own end).
DEFAULT_GRACE_S = 5.0
# A command whose group is dead but whose pipes an escaped process still holds: give up after this.
_PIPE_WAIT_S = 5.0
# Bytes of each stream sent back when the request names none (pytest_fabric.transport.outputcap.KEEP_BYTES).
DEFAULT_KEEP = 32 * 1024 * 1024


class _Kept:
    """One output stream read as it comes: whole up to ``keep`` bytes, then its head and tail.

    A command that prints without end must not fill the node's memory, the answer line or the
    controller (the controller caps again, this keeps the step's pipe small).
    """

    def __init__(self, pipe: IO[bytes], keep: int) -> None:
        self._half = max(keep // 2, 1)
        self._head = bytearray()
        self._tail = bytearray()
        self._total = 0
        self.reader = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.reader.start()

    def _read(self, pipe: IO[bytes]) -> None:
        with pipe:
            while True:
                data = pipe.read1(65536)  # type: ignore[attr-defined]
                if not data:
                    return
                self._total += len(data)
                room = self._half - len(self._head)
                if room > 0:
                    self._head += data[:room]
                    data = data[room:]
                self._tail += data
                if len(self._tail) > 2 * self._half:
                    del self._tail[: len(self._tail) - self._half]

    def text(self) -> str:
        tail = self._tail if self._total <= 2 * self._half else self._tail[-self._half:]
        dropped = self._total - len(self._head) - len(tail)
        cut = (f"\n[... {dropped:,} bytes dropped by pytest-fabric: the output was {self._total:,} bytes ...]\n"
               .encode() if dropped > 0 else b"")
        return (bytes(self._head) + cut + bytes(tail)).decode("utf-8", "replace")


class _Command:
    def __init__(self, proc: subprocess.Popen[bytes], grace_s: float) -> None:
        self.proc = proc
        self.grace_s = grace_s
        self.killing = False


class Agent:
    """Runs the requests read from ``requests`` and writes the answers to ``answers``."""

    def __init__(self, answers: IO[bytes]) -> None:
        self._answers = answers
        # Re-entrant: the signal handler ends the commands in the main thread, which may hold it.
        self._lock = threading.RLock()
        self._commands: dict[int, _Command] = {}
        self._ending = False

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        with self._lock:
            try:
                self._answers.write(data)
                self._answers.flush()
            except (OSError, ValueError):  # the controller is gone: nothing to tell
                pass

    def serve(self, requests: IO[bytes]) -> None:
        """Answer requests until ``exit`` or the end of ``requests``; then end every command."""
        self.send({"event": "hello", "node": os.environ.get("SLURMD_NODENAME", ""), "pid": os.getpid(),
                   "python": ".".join(map(str, sys.version_info[:3]))})
        for raw in iter(requests.readline, b""):
            try:
                request = json.loads(raw.decode("utf-8", "replace"))
                op = request["op"]
            except (ValueError, KeyError, TypeError):
                self.send({"event": "unreadable", "line": raw.decode("utf-8", "replace")[:200]})
                continue
            if op == "exec":
                thread = threading.Thread(target=self._exec, args=(request,), daemon=True)
                thread.start()
            elif op == "kill":
                self.kill(int(request["id"]))
            elif op == "exit":
                break
        self.end()

    def _exec(self, request: dict[str, Any]) -> None:
        ident = int(request["id"])
        timeout = float(request["timeout"])
        grace = float(request.get("grace", DEFAULT_GRACE_S))
        # Started and listed under one hold of the lock: end() looks at the list under it, so a
        # command is either listed before end() looks or never started. Listed after the fork,
        # a close that came in between found no command, the agent exited and the command lived on.
        proc: subprocess.Popen[bytes] | None = None
        failure = ""
        with self._lock:
            if self._ending:  # the controller hears of the close from the step's end
                return
            try:
                proc = subprocess.Popen(["/bin/sh", "-c", request["command"]], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            except OSError as exc:
                failure = f"{exc}\n"
            else:
                command = _Command(proc, grace)
                self._commands[ident] = command
        if proc is None:
            self.send({"event": "done", "id": ident, "rc": 127, "stdout": "", "stderr": failure,
                       "timed_out": False})
            return
        keep = int(request.get("keep", DEFAULT_KEEP))
        out, err = _Kept(proc.stdout, keep), _Kept(proc.stderr, keep)  # type: ignore[arg-type]
        self.send({"event": "started", "id": ident, "pid": proc.pid})
        timed_out = False
        try:
            proc.wait(timeout=timeout)
            stdout, stderr = self._collect(command, out, err, None)
        except subprocess.TimeoutExpired:
            timed_out = True
            self.kill(ident)
            stdout, stderr = self._collect(command, out, err, command.grace_s + _PIPE_WAIT_S)
        with self._lock:
            self._commands.pop(ident, None)
            if self._ending and not timed_out:
                # Killed because the agent ends: the controller hears that from the step's end
                # (a node error, or the close it asked for), not as an exit code of the command.
                return
        self.send({"event": "done", "id": ident, "rc": proc.returncode, "timed_out": timed_out,
                   "stdout": stdout, "stderr": stderr})

    def _collect(self, command: _Command, out: _Kept, err: _Kept, wait_s: float | None) -> tuple[str, str]:
        """What a command printed, once its pipes close (or, after ``wait_s``, it is clear they will not)."""
        deadline = None if wait_s is None else time.monotonic() + wait_s
        for kept in (out, err):
            kept.reader.join(None if deadline is None else max(deadline - time.monotonic(), 0))
        if out.reader.is_alive() or err.reader.is_alive():
            # Its group is dead (KILL came at the grace), but a process that left the group holds
            # the pipes: stop waiting for them.
            command.proc.kill()
            command.proc.wait()
            return "", "(pytest-fabric agent: output lost, a process outside the command's group kept it open)\n"
        command.proc.wait()
        return out.text(), err.text()

    def kill(self, ident: int) -> None:
        """TERM the command's process group now, KILL it after its grace."""
        with self._lock:
            command = self._commands.get(ident)
            if command is None or command.killing:
                return
            command.killing = True
        self._signal(command)

    def _signal(self, command: _Command) -> None:
        _killpg(command.proc.pid, signal.SIGTERM)
        timer = threading.Timer(command.grace_s, _killpg, (command.proc.pid, signal.SIGKILL))
        timer.daemon = True
        timer.start()

    def end(self) -> None:
        """Kill every command still running (TERM, then KILL after the grace) and wait for them."""
        with self._lock:
            self._ending = True
            idents = list(self._commands)
        for ident in idents:
            self.kill(ident)
        deadline = time.monotonic() + DEFAULT_GRACE_S + 1
        while time.monotonic() < deadline:
            with self._lock:
                left = [c.proc for c in self._commands.values()]
            if not left:
                return
            time.sleep(0.05)
        for proc in left:
            _killpg(proc.pid, signal.SIGKILL)


#: at most this long between a signal and its handler (see main)
_HANDLER_LATENCY_S = 0.2


def _killpg(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _watch_parent(agent: Agent, parent: int) -> None:
    # slurmstepd killed outright (SIGKILL, a node that lost its slurmd) sends no TERM: the agent's
    # parent changes, and the commands must not live on unsupervised.
    while os.getppid() == parent:
        time.sleep(1.0)
    agent.end()
    os._exit(1)


def main() -> None:
    answers = sys.stdout.buffer
    # Commands write to their own pipes; nothing else may write to the protocol stream.
    sys.stdout = sys.stderr
    agent = Agent(answers)

    def stop(signum: int, frame: object) -> None:
        agent.end()
        os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, stop)
    watcher = threading.Thread(target=_watch_parent, args=(agent, os.getppid()), daemon=True)
    watcher.start()
    # The kernel gives a signal to whichever thread does not block it, Python runs its handler in
    # the main thread only: a main thread blocked reading stdin would not run it until the next
    # request came. It waits here instead, waking often enough to run a handler promptly.
    server = threading.Thread(target=agent.serve, args=(sys.stdin.buffer,), daemon=True)
    server.start()
    while server.is_alive():
        server.join(_HANDLER_LATENCY_S)


if __name__ == "__main__":
    main()
