"""What every way of reaching a node provides: run a command, start a server, close.

A transport knows nothing about the tools it runs.  It returns what the command
printed and how it exited, owns every timeout (enforced on the node too, so a
command that overruns is killed there), and turns the ways a command can fail
into the typed errors below.  Each error names the node and the command and
says what to do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from pytest_fabric.transport.outputcap import MESSAGE_CHARS, cap_text

# How a command ended is evidence, read by the verdicts and the reports without the transports:
# it lives in a leaf module and is re-exported here for the transports (and code that took it from here).
from pytest_fabric.transport.results import CommandResult

__all__ = [
    "CommandResult",
    "Transport",
    "BackgroundProcess",
    "FileUpload",
    "TransportError",
    "NodeUnreachable",
    "AuthenticationFailed",
    "SameMachine",
    "HostKeyMismatch",
    "ToolMissing",
    "CommandFailed",
    "CommandTimeout",
]


class TransportError(Exception):
    """Base of every error a transport raises: a check that meets one is an *error*, not a failure."""

    def __init__(self, node: str, message: str, *, command: str | None = None, fix: str | None = None) -> None:
        self.node = node
        self.command = command
        self.fix = fix
        # A message may quote node text (an output's tail, a parser's complaint): never unbounded.
        self.detail = cap_text(message, 2 * MESSAGE_CHARS)
        super().__init__(self._render())

    def again(self) -> TransportError:
        """A copy of this error for a later attempt that was not made (the node is tried once per run).

        Same type, so callers that catch ``NodeUnreachable`` still do; a fresh object,
        so re-raising it does not pile tracebacks onto the first one.
        """
        copy = type(self).__new__(type(self))
        copy.__dict__.update(self.__dict__)
        if not self.detail.startswith("not retried"):
            copy.detail = f"not retried in this run; first failure: {self.detail}"
        Exception.__init__(copy, copy._render())
        return copy

    def _render(self) -> str:
        parts = [f"node {self.node}: {self.detail}"]
        if self.command:
            parts.append(f"command: {self.command}")
        if self.fix:
            parts.append(f"fix: {self.fix}")
        return "\n".join(parts)


class NodeUnreachable(TransportError):
    """No SSH session could be set up: refused, timed out, no route, or no banner."""


class AuthenticationFailed(TransportError):
    """The node answered but would not let us in."""


class HostKeyMismatch(TransportError):
    """The node's host key is not the one known_hosts has (or is unknown under a strict policy)."""


class SameMachine(TransportError):
    """The node presented the host key another node of the inventory presented: one machine, two names."""


class ToolMissing(TransportError):
    """The command's program is not installed on the node."""

    def __init__(self, node: str, tool: str, *, command: str | None = None, package: str | None = None) -> None:
        self.tool = tool
        fix = f"install {package} on {node}" if package else f"install {tool} on {node} or put it on PATH"
        super().__init__(node, f"{tool}: command not found", command=command, fix=fix)


class CommandFailed(TransportError):
    """The command ran and exited non-zero."""

    def __init__(self, result: CommandResult, fix: str | None = None) -> None:
        self.result = result
        # The last 8 lines, cut to MESSAGE_CHARS: one line can be 500 MB.  Cut at newlines only:
        # splitlines() also breaks at a carriage return, and a node's "\rACCEPT: ..." became a line
        # that starts with a fake verdict wherever the message is printed.
        lines = (result.stderr or result.stdout)[-8 * MESSAGE_CHARS:].strip().split("\n")[-8:]
        tail = cap_text("\n".join(lines), MESSAGE_CHARS)
        message = f"exited with code {result.exit_code}"
        if tail:
            message += f"; last output:\n{tail}"
        super().__init__(result.node, message, command=result.command, fix=fix)


class CommandTimeout(TransportError):
    """The command did not finish in time and was killed on the node."""

    def __init__(self, node: str, command: str, timeout_s: float, partial_stdout: str = "") -> None:
        self.timeout_s = timeout_s
        self.partial_stdout = partial_stdout
        super().__init__(
            node,
            f"timed out after {timeout_s:g} s and was killed on the node",
            command=command,
            fix="check the node is not overloaded, or raise the check's duration/timeout in the profile",
        )


@runtime_checkable
class BackgroundProcess(Protocol):
    """A long-running command (a server) started on a node."""

    node: str
    command: str

    def stop(self) -> CommandResult:
        """Kill the process (and its children) on the node; return what it printed."""
        ...

    def wait(self, timeout: float) -> CommandResult:
        """Wait for the process to exit by itself; kill it on timeout and raise CommandTimeout."""
        ...

    def is_running(self) -> bool:
        ...


@runtime_checkable
class Transport(Protocol):
    """One node's way in.  Implementations: ``ssh.SSHTransport``, ``local.LocalTransport``."""

    node: str

    def run(self, command: str, *, timeout: float, check: bool = True) -> CommandResult:
        """Run ``command`` (a shell command line) and return how it ended.

        ``timeout`` is enforced on the node: the command's whole process group is
        killed there when it expires, then :class:`CommandTimeout` is raised.
        With ``check`` a non-zero exit raises :class:`CommandFailed` (or
        :class:`ToolMissing` when the shell reports 127 / ``command not found``).
        """
        ...

    def start(self, command: str, *, timeout: float) -> BackgroundProcess:
        """Start ``command`` in the background; it is killed on the node after ``timeout`` at the latest."""
        ...

    def connect(self) -> None:
        """Open the connection now (otherwise the first ``run`` does); raise the typed error on failure."""
        ...

    def close(self) -> None:
        """Stop every background process this transport started, then close the connection."""
        ...

    def interrupt(self) -> None:
        """Kill, on the node and at once, every command of this transport still running.

        Called when the run is interrupted (Ctrl-C): commands in other threads (a wave, a round)
        then end within seconds instead of at their own timeouts.  Never raises.
        """
        ...


@runtime_checkable
class FileUpload(Protocol):
    """A transport that can also copy a file to the node (SSH: SFTP; local: a copy). Apart from
    :class:`Transport` because not every way in has one (Slurm job steps do not)."""

    node: str

    def put_file(self, local: Path, remote: str, *, mode: int = 0o600, timeout: float) -> None:
        """Write the bytes of ``local`` to the path ``remote`` on the node, then set its ``mode``.

        ``remote`` is an absolute path whose directory exists; an existing file there is replaced.
        Raises :class:`TransportError` naming the node, both paths and the fix. Whether the node kept
        the bytes is the caller's to check on the node (a hash there): the node controls the file once
        written, and a size read back proves less than the hash a caller needs anyway.
        """
        ...
