"""What the run trusted: the host-key policy and each node's key decision, in the terminal summary,
the HTML report and the JUnit XML.

The connections log every decision (:class:`~pytest_fabric.transport.results.HostKeyLog`):
verified against known_hosts, accepted new and appended (``accept-new``), accepted although it
differs from the file or is unknown to it (``ignore``), or refused.  Without these lines a run
under ``--host-key-policy ignore`` against a changed key would end in ACCEPT and leave no trace.
The record holds the same as ``run.host_key_policy`` and ``run.host_keys``.

    host keys (accept-new): accepted new, appended to /root/.ssh/known_hosts: nu[1-6]
    host keys (ignore): ACCEPTED CHANGED: nu2: [10.0.0.2]:22 presents ssh-ed25519 SHA256:..., /root/.ssh/known_hosts has SHA256:...

The reports a party signs off from say it too: the HTML summary has a Host keys table (the
policy, then each decision with its nodes, and every key not verified against known_hosts with
its fingerprint; a changed key with the one on file), and JUnit has testsuite properties
``fabric_host_key_policy``, ``fabric_host_keys_<decision>`` (a nodeset) and one
``fabric_host_key`` per key not verified (``nu2: accepted new: [10.0.0.2]:22 ssh-ed25519 SHA256:...``).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from pytest_fabric.config.hostlist import fold
from pytest_fabric.record.runinfo import get_run_info
from pytest_fabric.run.state import get_state
from pytest_fabric.transport.results import DECISIONS

__all__ = ["HOST_KEYS_KEY", "host_key_decisions", "host_key_lines", "host_keys_html", "junit_properties"]

#: the decisions (as the record holds them) where no FabricState keeps the log: a stand-in for the core
#: (report/testing.py) puts them here
HOST_KEYS_KEY = pytest.StashKey[list[dict[str, Any]]]()

POLICY_MEANING = {
    "strict": "a node's key must be in known_hosts",
    "accept-new": "unknown keys are added to known_hosts, changed ones refused",
    "ignore": "ANY key is accepted and nothing is saved: the nodes are not authenticated",
}

_SHOWN = {
    "verified": "verified against",
    "verified by CA": "certificate verified by a @cert-authority key in",
    "accepted new": "accepted new, appended to",
    "accepted changed": "ACCEPTED CHANGED (differs from",
    "accepted unknown": "accepted unknown, not saved (not in",
    "refused changed": "refused, changed (differs from",
    "refused unknown": "refused, unknown (not in",
    "refused revoked": "refused, marked @revoked (in",
    "refused certificate": "refused, certificate not vouched for (by",
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


def host_key_decisions(config: pytest.Config) -> list[dict[str, Any]]:
    """What the run's connections did with each node's host key so far, as the record holds them (``run.host_keys``)."""
    state = get_state(config)
    if state is not None:
        return state.host_keys.to_json()
    given: list[dict[str, Any]] = config.stash.get(HOST_KEYS_KEY, [])
    return list(given)


def _groups(decisions: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, list[Mapping[str, Any]]]]:
    """``(decision, known_hosts, decisions)`` in the order of DECISIONS, then of the files."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for d in decisions:
        groups.setdefault((str(d["decision"]), str(d["known_hosts"])), []).append(d)
    return [(what, path, items) for decision in DECISIONS for (what, path), items in groups.items() if what == decision]


def _where(decision: str, path: str) -> str:
    shown = _SHOWN[decision]
    return f"{shown} {path})" if "(" in shown else f"{shown} {path}"


_LISTED_OPEN = 10  # more keys than this in one group: listed under a <details> that opens on a click


def host_keys_html(policy: str, decisions: Iterable[Mapping[str, Any]]) -> str:
    """The HTML summary's Host keys table: the policy, each decision with its nodes and every key not verified."""
    e = html.escape
    rows = [f"<tr><th>Host-key policy</th><td><b>{e(policy)}</b>: {e(POLICY_MEANING.get(policy, 'unknown policy'))}</td></tr>"]
    groups = _groups(decisions)
    if not groups:
        rows.append("<tr><th>Keys</th><td>no connection to a node checked a host key</td></tr>")
    for decision, path, items in groups:
        nodes = f"<code>{e(fold(str(d['node']) for d in items))}</code> ({len(items)} node{'s' if len(items) != 1 else ''})"
        keys = ""
        if decision != "verified":  # a key known_hosts already had vouches for itself; the others are listed
            lines = [
                f"<code>{e(str(d['node']))}</code> {e(str(d['name']))} {e(str(d['key_type']))} <code>{e(str(d['fingerprint']))}</code>"
                + (f", the file has <code>{e(str(d['expected']))}</code>" if d.get("expected") else "")
                for d in items
            ]
            keys = "<br>".join(lines)
            if len(lines) > _LISTED_OPEN:
                keys = f'<details class="fabric-all"><summary>each of the {len(lines)} keys</summary>{keys}</details>'
            else:
                keys = "<br>" + keys
        marked = ' class="fabric-o-failed"' if "changed" in decision or decision.startswith("refused") else ""
        rows.append(f"<tr{marked}><th>{e(_where(decision, path))}</th><td>{nodes}{keys}</td></tr>")
    return f'<table class="fabric-table" id="fabric-host-keys">{"".join(rows)}</table>'


_JUNIT_WHERE = {
    "accepted new": "appended to {path}",
    "accepted changed": "differs from {path}",
    "accepted unknown": "not saved, not in {path}",
    "refused changed": "differs from {path}",
    "refused unknown": "not in {path}",
    "verified by CA": "host certificate signed by a @cert-authority key in {path}",
    "refused revoked": "@revoked in {path}",
    "refused certificate": "certificate not vouched for by {path}",
}


def junit_properties(policy: str, decisions: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``fabric_host_key_policy``, a nodeset per decision, and one ``fabric_host_key`` per key not verified."""
    props = [("fabric_host_key_policy", policy)]
    groups = _groups(decisions)
    per_decision: dict[str, list[str]] = {}
    for decision, _path, items in groups:
        per_decision.setdefault(decision, []).extend(str(d["node"]) for d in items)
    props += [(f"fabric_host_keys_{decision.replace(' ', '_')}", fold(nodes)) for decision, nodes in per_decision.items()]
    for decision, path, items in groups:
        if decision == "verified":
            continue
        said = "ACCEPTED CHANGED" if decision == "accepted changed" else decision
        for d in items:
            where = _JUNIT_WHERE[decision].format(path=path)
            if d.get("expected"):
                where += f": the file has {d['expected']}"
            props.append(("fabric_host_key", f"{d['node']}: {said}: {d['name']} {d['key_type']} {d['fingerprint']} ({where})"))
    return props


@pytest.hookimpl(tryfirst=True)  # before the conformance summary, whose verdict line ends the run
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    info = get_run_info(config)
    if info is None:
        return
    lines = host_key_lines(info.host_key_policy, host_key_decisions(config))
    for line in lines:
        markup = {"red": True} if "CHANGED" in line or "refused" in line else {}
        terminalreporter.write_line(line, **markup)
