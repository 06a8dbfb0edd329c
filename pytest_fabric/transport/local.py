"""Run commands on this machine, for inventory nodes that are ``localhost``.

Same contract and same errors as SSH: each command gets its own session and
process group (``start_new_session``), and a timeout kills the whole group,
TERM first and KILL after a grace period, just as timeout(1) does on an SSH node.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pytest_fabric.transport.base import CommandResult, CommandTimeout, TransportError
from pytest_fabric.transport.cmdlog import log_failed, log_ran, log_started, node_logger
from pytest_fabric.transport.outcome import judge
from pytest_fabric.transport.packages import missing_tool
from pytest_fabric.transport.pipes import PipeCapture
from pytest_fabric.transport.shellwrap import KILL_AFTER_S

__all__ = ["LocalBackgroundProcess", "LocalTransport"]

logger = logging.getLogger(__name__)

# Output still held open by a process that escaped the group is not waited for longer than this.
_DRAIN_S = 2.0


def _spawn(command: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["/bin/sh", "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, so a kill reaches its children
    )


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """TERM the process group, KILL it if the leader is still there after ``grace_s``."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait_s)
            # The leader is gone; KILL the rest of the group (children that ignored TERM).
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue
        return


class LocalTransport:
    """This machine as a node; see :class:`base.Transport` for the contract."""

    def __init__(self, node: str = "localhost") -> None:
        self.node = node
        self._log = node_logger(node)  # commands at DEBUG, for pytest's logging options (see .cmdlog)
        self._lock = threading.Lock()
        self._background: list[LocalBackgroundProcess] = []
        self._running: set[subprocess.Popen[bytes]] = set()

    def __repr__(self) -> str:
        return f"LocalTransport({self.node!r})"

    def interrupt(self) -> None:
        """Kill every foreground command still running (see base.Transport)."""
        with self._lock:
            running = list(self._running)
        for proc in running:
            _kill_group(proc, 0.5)

    def connect(self) -> None:
        """Nothing to open."""

    def run(self, command: str, *, timeout: float, check: bool = True) -> CommandResult:
        """Run ``command`` with ``/bin/sh -c``; see :meth:`base.Transport.run`."""
        started = time.monotonic()
        proc = _spawn(command)
        with self._lock:
            self._running.add(proc)
        capture = PipeCapture(proc)
        try:
            proc.wait(timeout)
            capture.join(None)
        except subprocess.TimeoutExpired:
            _kill_group(proc, KILL_AFTER_S)
            capture.join(_DRAIN_S)
            log_failed(self._log, command, f"killed at its timeout of {timeout:g} s", time.monotonic() - started)
            raise CommandTimeout(self.node, command, timeout, capture.stdout.text()) from None
        except BaseException:
            # KeyboardInterrupt while waiting: leave nothing running behind us.
            _kill_group(proc, 0.5)
            raise
        finally:
            with self._lock:
                self._running.discard(proc)
        result = CommandResult(
            self.node,
            command,
            proc.returncode,
            capture.stdout.text(),
            capture.stderr.text(),
            time.monotonic() - started,
        )
        log_ran(self._log, command, result.exit_code, result.duration_s, capture.stdout.total, capture.stderr.total)
        return judge(result, check=check)

    def put_file(self, local: Path, remote: str, *, mode: int = 0o600, timeout: float) -> None:
        """Copy ``local`` to ``remote`` on this machine and set its mode (see base.FileUpload)."""
        try:
            shutil.copyfile(local, remote)
            os.chmod(remote, mode)
        except OSError as exc:
            raise TransportError(self.node, f"copying {local} to {remote} failed: {exc.strerror or exc}",
                                 command=f"put {local} {remote}", fix=f"check that {local} can be read and "
                                 "the directory of the destination exists and can be written") from exc

    def start(self, command: str, *, timeout: float) -> LocalBackgroundProcess:
        """Start ``command`` in the background; it is killed after ``timeout`` at the latest."""
        started = time.monotonic()
        process = LocalBackgroundProcess(
            self.node, command, timeout_s=timeout, on_finish=self._forget
        )
        with self._lock:
            self._background.append(process)
        log_started(self._log, command, time.monotonic() - started)
        return process

    def _forget(self, process: LocalBackgroundProcess) -> None:
        with self._lock:
            if process in self._background:
                self._background.remove(process)

    def close(self) -> None:
        """Stop every background process started here.  Idempotent, never raises."""
        with self._lock:
            background, self._background = list(self._background), []
        for process in background:
            try:
                process.stop()
            except Exception:  # closing must go on
                logger.debug("stopping %s on %s failed", process.command, self.node, exc_info=True)


class LocalBackgroundProcess:
    """A command running in the background on this machine; see :class:`base.BackgroundProcess`."""

    def __init__(
        self,
        node: str,
        command: str,
        *,
        timeout_s: float,
        on_finish: Callable[[LocalBackgroundProcess], None] | None = None,
    ) -> None:
        self.node = node
        self.command = command
        self.timeout_s = timeout_s
        self._started = time.monotonic()
        self._on_finish = on_finish
        self._proc = _spawn(command)
        self._output: tuple[str, str] | None = None
        # The node-side deadline, as timeout(1) gives it on SSH nodes.  Made before the
        # reader starts: a command that exits at once makes the reader cancel it.
        self._timer = threading.Timer(timeout_s, _kill_group, args=(self._proc, KILL_AFTER_S))
        self._timer.daemon = True
        self._timer.start()
        self._reader = threading.Thread(
            target=self._read, name=f"pytest-fabric bg {node}", daemon=True
        )
        self._reader.start()

    @property
    def pid(self) -> int:
        """The process (and process group) id."""
        return self._proc.pid

    def _read(self) -> None:
        capture = PipeCapture(self._proc)
        capture.join(None)
        self._proc.wait()
        self._output = (capture.stdout.text(), capture.stderr.text())
        self._timer.cancel()
        if self._on_finish is not None:
            self._on_finish(self)

    def is_running(self) -> bool:
        """True until the process has exited."""
        return self._proc.poll() is None

    def _result(self) -> CommandResult:
        self._reader.join(_DRAIN_S)
        stdout, stderr = self._output or ("", "")
        returncode = self._proc.returncode if self._proc.returncode is not None else -1
        result = CommandResult(
            self.node,
            self.command,
            returncode,
            stdout,
            stderr,
            time.monotonic() - self._started,
        )
        if result.exit_code != 0 and missing_tool(result.exit_code, result.stderr, result.command):
            judge(result, check=True)
        return result

    def wait(self, timeout: float) -> CommandResult:
        """Wait for the process to end by itself; on timeout kill it and raise CommandTimeout."""
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            partial = self.stop()
            raise CommandTimeout(self.node, self.command, timeout, partial.stdout) from None
        return self._result()

    def stop(self, grace_s: float = KILL_AFTER_S) -> CommandResult:
        """TERM the process group, KILL it after ``grace_s``; return what it printed.  Idempotent."""
        self._timer.cancel()
        if self._proc.poll() is None:
            _kill_group(self._proc, grace_s)
        return self._result()
