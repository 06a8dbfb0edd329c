"""Bad nodes back to the scheduler: the ``scontrol update ... state=drain`` lines for failed nodes.

A node is handed back when a check about that node alone failed (its GPUs, its mounts, its
ports, or the attribution check that blamed it after the pair rounds re-measured it alone).
A failed pair names two nodes and blames neither: attribution decides, and its per-node check
is what drains.  Nodes with the same failed checks share one line, their names folded as Slurm
writes nodesets.  The lines are printed after the fabric summary of a run with Slurm nodes (or
with ``--slurm-drain``); ``--slurm-drain`` also runs them.  Errors (a node that could not be
measured) are not failures and drain nothing.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_fabric.config.hostlist import fold
from pytest_fabric.report.collect import get_checks, is_controller
from pytest_fabric.run.state import get_state

__all__ = ["DrainLine", "drain_lines"]

# Slurm keeps a reason of any length, but sinfo -R shows about 20 characters by default: the
# checks come first and the list is cut, so the line stays one a person can read and paste.
_MAX_REASON = 120


@dataclass(frozen=True)
class DrainLine:
    """One scontrol command: these nodes, drained for this reason."""

    nodes: tuple[str, ...]
    reason: str

    @property
    def argv(self) -> list[str]:
        return ["scontrol", "update", f"nodename={fold(self.nodes)}", "state=drain", f"reason={self.reason}"]

    def __str__(self) -> str:
        return f'scontrol update nodename={fold(self.nodes)} state=drain reason="{self.reason}"'


def _reason(checks: Iterable[str], profile: str | None) -> str:
    names = sorted(set(checks))
    head = f"pytest-fabric{f' {profile}' if profile else ''}: failed "
    text = head + ", ".join(names)
    if len(text) > _MAX_REASON:
        kept: list[str] = []
        for name in names:
            if len(head + ", ".join([*kept, name])) + 12 > _MAX_REASON:
                break
            kept.append(name)
        text = head + ", ".join(kept) + f" and {len(names) - len(kept)} more"
    # What reaches scontrol's reason= (and the printed line's double quotes) stays plain.
    return "".join(c if c.isalnum() or c in " .,:_-+/()" else "_" for c in text)


def drain_lines(records: Iterable[Mapping[str, Any]], profile: str | None = None) -> list[DrainLine]:
    """The drain commands for the nodes that failed a check about them alone, grouped by reason."""
    failed: dict[str, set[str]] = {}
    for record in records:
        nodes = record.get("nodes") or []
        if record.get("outcome") == "failed" and len(nodes) == 1:
            failed.setdefault(str(nodes[0]), set()).add(str(record.get("check")))
    by_reason: dict[str, list[str]] = {}
    for node, checks in failed.items():
        by_reason.setdefault(_reason(checks, profile), []).append(node)
    return [DrainLine(tuple(nodes), reason) for reason, nodes in sorted(by_reason.items())]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("fabric").addoption(
        "--slurm-drain",
        dest="fabric_slurm_drain",
        action="store_true",
        default=False,
        help="drain the nodes that failed a check in Slurm (runs the scontrol update ... state=drain lines "
        "the summary prints; off by default)",
    )


@pytest.hookimpl(trylast=True)  # after the fabric summary it belongs to
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = get_state(config)
    if state is None or not is_controller(config):
        return
    run = bool(config.getoption("fabric_slurm_drain", False))
    if not run and not any(n.transport == "slurm" for n in state.inventory.nodes):
        return
    lines = drain_lines(get_checks(config), state.profile.name)
    tr = terminalreporter
    if not lines:
        if run:
            tr.write_line("slurm: no node failed a check of its own; nothing to drain")
        return
    tr.write_line("slurm: hand the failed nodes back to the scheduler:" if not run else "slurm: draining:")
    for line in lines:
        tr.write_line(f"  {line}", yellow=True)
        if not run:
            continue
        try:
            proc = subprocess.run(line.argv, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as exc:
            tr.write_line(f"    failed: {exc}", red=True)
            continue
        if proc.returncode == 0:
            tr.write_line(f"    drained {fold(line.nodes)}", green=True)
        else:
            why = (proc.stderr or proc.stdout).strip() or f"exit {proc.returncode}"
            tr.write_line(f"    failed ({shlex.join(line.argv[:3])}): {why}", red=True)
