"""A server started over SSH (``iperf3 -s``, ``ib_write_bw``): its output, its lifetime, its end.

The command runs under :func:`~pytest_fabric.transport.shellwrap.in_background`, which prints the PID of
timeout(1); that PID is also the id of the process group holding the command
and all its children, so stopping it is one ``kill -- -PGID`` on the node.
A reader thread keeps draining the channel so a chatty server never blocks on a
full SSH window.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace

import paramiko

from pytest_fabric.transport.base import CommandResult, CommandTimeout
from pytest_fabric.transport.outcome import judge
from pytest_fabric.transport.outputcap import KEEP_BYTES, CappedBuffer
from pytest_fabric.transport.packages import missing_tool
from pytest_fabric.transport.shellwrap import KILL_AFTER_S, split_pid
from pytest_fabric.transport.ssh.channel import exit_code_of, pump

__all__ = ["SSHBackgroundProcess"]

logger = logging.getLogger(__name__)

# How long after its timeout we stop reading a background channel if the node stays silent.
_READ_SLACK_S = 5.0
# The PID line comes first: this much of stdout's start is enough to find it.
_PID_HEAD = 256


class SSHBackgroundProcess:
    """A command running in the background on one node; see :class:`base.BackgroundProcess`."""

    def __init__(
        self,
        node: str,
        command: str,
        chan: paramiko.Channel,
        *,
        timeout_s: float,
        signal_group: Callable[[int, str], None],
        on_finish: Callable[[SSHBackgroundProcess], None],
    ) -> None:
        self.node = node
        self.command = command
        self.timeout_s = timeout_s
        self._chan = chan
        self._signal_group = signal_group
        self._on_finish = on_finish
        self._started = time.monotonic()
        # Kept up to KEEP_BYTES a stream, head and tail beyond: a node can print without end.
        self._stdout = CappedBuffer(KEEP_BYTES)
        self._stderr = CappedBuffer(KEEP_BYTES)
        self._lock = threading.Lock()
        self._got_output = threading.Condition(self._lock)
        self._result: CommandResult | None = None
        self._reader = threading.Thread(
            target=self._read, name=f"pytest-fabric bg {node}", daemon=True
        )
        self._reader.start()

    # -- reading ---------------------------------------------------------------
    def _append(self, buffer: CappedBuffer, data: bytes) -> None:
        with self._got_output:
            buffer.write(data)
            self._got_output.notify_all()

    def _read(self) -> None:
        deadline = self._started + self.timeout_s + KILL_AFTER_S + _READ_SLACK_S
        try:
            pump(
                self._chan,
                deadline,
                lambda data: self._append(self._stdout, data),
                lambda data: self._append(self._stderr, data),
            )
        except Exception:  # a dead transport ends the reading; the result says so
            logger.debug("reading %s on %s ended", self.command, self.node, exc_info=True)
        code = exit_code_of(self._chan) if self._chan.exit_status_ready() else None
        self._chan.close()
        with self._got_output:
            _, stdout = split_pid(self._stdout.text())
            self._result = CommandResult(
                node=self.node,
                command=self.command,
                exit_code=-1 if code is None else code,
                stdout=stdout,
                stderr=self._stderr.text(),
                duration_s=time.monotonic() - self._started,
            )
            self._got_output.notify_all()
        self._on_finish(self)

    @property
    def channel_transport(self) -> paramiko.Transport | None:
        """The SSH connection this process's session belongs to."""
        return self._chan.get_transport()

    # -- the PID ---------------------------------------------------------------
    def wait_for_pid(self, timeout_s: float) -> int | None:
        """Block until the node has reported the process group id (None if the channel ended first)."""
        deadline = time.monotonic() + timeout_s
        with self._got_output:
            while True:
                pid, _ = split_pid(self._stdout.head(_PID_HEAD).decode(errors="replace"))
                if pid is not None or self._result is not None:
                    return pid
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._got_output.wait(remaining)

    @property
    def pgid(self) -> int | None:
        """The process group id on the node, once known."""
        with self._lock:
            return split_pid(self._stdout.head(_PID_HEAD).decode(errors="replace"))[0]

    # -- BackgroundProcess -----------------------------------------------------
    def is_running(self) -> bool:
        """True until the process has exited (or its connection is gone)."""
        return self._reader.is_alive()

    def _finished(self, timeout_s: float) -> CommandResult | None:
        self._reader.join(timeout_s)
        return self._result

    def _checked(self, result: CommandResult) -> CommandResult:
        # A server that was never there is an error, not an output: the client's
        # "connection refused" would otherwise hide the real cause.
        if result.exit_code != 0 and missing_tool(result.exit_code, result.stderr, result.command):
            judge(result, check=True)
        return result

    def wait(self, timeout: float) -> CommandResult:
        """Wait for the process to end by itself; on timeout kill it and raise CommandTimeout."""
        result = self._finished(timeout)
        if result is None:
            partial = self.stop()
            raise CommandTimeout(self.node, self.command, timeout, partial.stdout)
        return self._checked(result)

    def stop(self, grace_s: float = KILL_AFTER_S) -> CommandResult:
        """TERM the process group on the node, KILL it after ``grace_s``; return what it printed.

        Safe to call more than once and after the process has ended.
        """
        sent = 0
        if self._result is None:
            pgid = self.wait_for_pid(grace_s)
            if pgid is not None:
                for signal_name, signum, wait_s in (("TERM", 15, grace_s), ("KILL", 9, grace_s)):
                    try:
                        self._signal_group(pgid, signal_name)
                    except Exception:  # noqa: BLE001 - best effort; timeout(1) on the node is the backstop
                        break
                    sent = signum
                    if self._finished(wait_s) is not None:
                        break
            if self._finished(0.0) is None:
                # The node does not answer: stop listening; timeout(1) still ends it there.
                self._chan.close()
                self._finished(grace_s)
        result = self._result
        if result is None:  # pragma: no cover - the reader always ends once the channel is closed
            result = CommandResult(
                self.node, self.command, -1, self._stdout.text(), ""
            )
        if result.exit_code == -1 and sent:
            # sshd reports death by signal as "exit-signal", which paramiko drops (-1);
            # we know which signal we sent, so say it the way subprocess does: -N.
            result = replace(result, exit_code=-sent)
            with self._lock:
                self._result = result
        return self._checked(result)
