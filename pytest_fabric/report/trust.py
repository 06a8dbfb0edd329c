"""What the run trusted: the host-key policy and each node's key decision, in the terminal summary.

The connections log every decision (:class:`~pytest_fabric.evidence.HostKeyLog`):
verified against known_hosts, accepted new and appended (``accept-new``), accepted although it
differs from the file or is unknown to it (``ignore``), or refused.  Without these lines a run
under ``--host-key-policy ignore`` against a changed key would end in ACCEPT and leave no trace.
The record holds the same as ``run.host_key_policy`` and ``run.host_keys``.

    host keys (accept-new): accepted new, appended to /root/.ssh/known_hosts: nu[1-6]
    host keys (ignore): ACCEPTED CHANGED: nu2: [10.0.0.2]:22 presents ssh-ed25519 SHA256:..., /root/.ssh/known_hosts has SHA256:...
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from ..evidence import DECISIONS
from ..hostlist import fold
from ..state import get_state

__all__ = ["host_key_lines"]

_SHOWN = {
    "verified": "verified against",
    "accepted new": "accepted new, appended to",
    "accepted changed": "ACCEPTED CHANGED (differs from",
    "accepted unknown": "accepted unknown, not saved (not in",
    "refused changed": "refused, changed (differs from",
    "refused unknown": "refused, unknown (not in",
}


def host_key_lines(policy: str, decisions: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per decision (nodes folded, per known_hosts file); a changed key also names both fingerprints."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for d in decisions:
        groups.setdefault((str(d["decision"]), str(d["known_hosts"])), []).append(d)
    lines = []
    for decision in DECISIONS:
        for (what, path), items in groups.items():
            if what != decision:
                continue
            shown = _SHOWN[decision]
            where = f"{shown} {path})" if "(" in shown else f"{shown} {path}"
            lines.append(f"host keys ({policy}): {where}: {fold(str(d['node']) for d in items)}")
            if decision.endswith("changed"):
                lines += [
                    f"    {d['node']}: {d['name']} presents {d['key_type']} {d['fingerprint']}, the file has {d['expected']}"
                    for d in items
                ]
    return lines


@pytest.hookimpl(tryfirst=True)  # before the conformance summary, whose verdict line ends the run
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = get_state(config)
    if state is None:
        return
    lines = host_key_lines(state.host_key_policy, state.host_keys.to_json())
    for line in lines:
        markup = {"red": True} if "CHANGED" in line or "refused" in line else {}
        terminalreporter.write_line(line, **markup)
