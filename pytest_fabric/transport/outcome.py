"""Turn how a command ended into a result or the typed error (shared by every transport).

Keeping this in one place means an SSH node and a local node report a missing
tool, a failure and a timeout in exactly the same words.
"""

from __future__ import annotations

from pytest_fabric.transport.base import CommandFailed, CommandResult, ToolMissing
from pytest_fabric.transport.packages import missing_tool, package_for

__all__ = ["TIMEOUT_EXIT_CODES", "is_wrapper_timeout", "judge"]

# coreutils timeout(1) exits 124 when it had to send TERM.  When the command ignores
# TERM, timeout KILLs the whole group after the grace period, itself included: the
# shell then reports 137 (128+KILL), and sshd sends "exit-signal", which paramiko
# leaves as -1.
TIMEOUT_EXIT_CODES = frozenset({124, 137, -1})


def is_wrapper_timeout(exit_code: int, elapsed_s: float, timeout_s: float) -> bool:
    """Did timeout(1) end the command, rather than the command exiting 124/137 by itself?

    The exit code alone cannot tell (an OOM-killed process also ends with 137), so
    the command must also have run for about its full allowance.  Elapsed time is
    measured here and includes the round trip, so it is never shorter than on the node.
    """
    return exit_code in TIMEOUT_EXIT_CODES and elapsed_s >= timeout_s * 0.98


def judge(result: CommandResult, *, check: bool) -> CommandResult:
    """Return ``result``, or raise ToolMissing/CommandFailed for a non-zero exit under ``check``."""
    if not check or result.exit_code == 0:
        return result
    tool = missing_tool(result.exit_code, result.stderr, result.command)
    if tool is not None:
        raise ToolMissing(result.node, tool, command=result.command, package=package_for(tool))
    raise CommandFailed(result)
