"""A node's kernel log, read whichever way the node allows, with the node's clock beside it.

``journalctl -k`` first (the journal keeps the whole boot; the kernel's ring buffer that ``dmesg``
reads is a few MiB and drops the oldest lines of a long, noisy boot), then ``dmesg``. Each is read
with full times (``-o short-iso``, ``--time-format iso``) so a ``window:`` can be applied. What was
read, and why the other was not, is said with the result (:attr:`KernelLogReading.source`).

A node whose log neither tool can read is a :class:`MeasurementError` naming both refusals and
the fix: ``sysctl kernel.dmesg_restrict=0`` (or connect as root) for dmesg, the
``systemd-journal`` (or ``adm``) group for the journal. Nothing here passes on "no lines read".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_fabric.parsers import kernel_log
from pytest_fabric.parsers.base import ParseError
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import ToolMissing
from pytest_fabric.transport.results import CommandResult

__all__ = ["JOURNAL", "DMESG", "CLOCK", "KernelLogReading", "read_kernel_log"]

JOURNAL = "journalctl -k -o short-iso --no-pager"
DMESG = "dmesg --time-format iso"
#: the node's clock and uptime, to place a window and seconds-since-boot lines
CLOCK = "date +%s; cat /proc/uptime"

Source = Literal["auto", "journal", "dmesg"]

FIX = ("let the connecting user read the kernel log: connect as root, or `sysctl kernel.dmesg_restrict=0` "
       "for dmesg, or add the user to the systemd-journal group for journalctl -k")


@dataclass(frozen=True)
class KernelLogReading:
    """The node's kernel log, the tool it came from, the node's clock then, and the commands run."""

    node: str
    log: kernel_log.KernelLog
    source: str  # "journalctl -k" or "dmesg", and why the other was not used
    now_epoch: float
    uptime_s: float
    evidence: tuple[CommandResult, ...]

    @property
    def boot_epoch(self) -> float:
        return self.now_epoch - self.uptime_s


def _clock(node: NodeHandle) -> tuple[float, float, CommandResult]:
    result = node.run(CLOCK, timeout=15)
    words = result.stdout.split()
    try:
        return float(words[0]), float(words[1]), result
    except (IndexError, ValueError):
        raise MeasurementError(node.name, f"expected the epoch and /proc/uptime, got {result.stdout.strip()[:80]!r}",
                               command=result.command) from None


def _attempt(node: NodeHandle, command: str) -> tuple[kernel_log.KernelLog | None, str, CommandResult | None]:
    """The log a command printed, or None and why not in the tool's words."""
    try:
        result = node.run(command, timeout=120, check=False)
    except ToolMissing as exc:
        return None, f"{exc.tool} is not installed", None
    refused = kernel_log.unreadable(result.stdout + "\n" + result.stderr)
    if result.exit_code != 0 or refused:
        why = refused or (result.stderr.strip().splitlines() or [f"exit code {result.exit_code}"])[-1]
        return None, why, result
    try:
        parsed = kernel_log.parse_kernel_log(result.stdout)
    except ParseError as exc:
        return None, str(exc), result
    if not parsed.lines:
        return None, "it printed no kernel line (-- No entries --)", result
    return parsed, "", result


def read_kernel_log(node: NodeHandle, prefer: Source = "auto") -> KernelLogReading:
    """The node's kernel log (see the module docstring); ``prefer`` names one tool to use alone."""
    order = {"auto": (JOURNAL, DMESG), "journal": (JOURNAL,), "dmesg": (DMESG,)}[prefer]
    now, uptime, clock = _clock(node)
    evidence: list[CommandResult] = [clock]
    refusals: list[str] = []
    for command in order:
        log, why, result = _attempt(node, command)
        if result is not None:
            evidence.append(result)
        name = "journalctl -k" if command == JOURNAL else "dmesg"
        if log is not None:
            source = name + (f" ({'; '.join(refusals)})" if refusals else "")
            return KernelLogReading(node.name, log, source, now, uptime, tuple(evidence))
        refusals.append(f"{name}: {why}")
    raise MeasurementError(node.name, "the kernel log could not be read: " + "; ".join(refusals),
                           command=" || ".join(order), fix=FIX)
