"""The tenant's pinned tools (inventory ``tools:``) for the run: routed, uploaded on first use, removed at the end.

At session start the run's :class:`~pytest_fabric.run.tenant_tools.TenantTools` is made from the
inventory's pins, with ``probes/tool_upload.py`` doing the work on a node; every ``NodeHandle.tool``
then routes through it (``run/open_cluster.py`` hands it to the cluster). At the session's end,
before the connections close, each node's files are checked once more and its directory removed;
the terminal summary says what was verified and anything that changed.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_fabric.config.hostlist import fold
from pytest_fabric.probes import tool_upload
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.run.tenant_tools import TenantTools

_NOTES = pytest.StashKey[list[str]]()


def _cluster_node(state: FabricState, name: str) -> Any:
    if state.cluster is None:  # NodeHandle.tool asks through the cluster: it is open by then
        raise RuntimeError("the tenant's tools are installed through the run's cluster, which is not open")
    return state.cluster.node(name)


def pytest_sessionstart(session: pytest.Session) -> None:
    state = get_state(session.config)
    if state is None or not state.inventory.tools or state.tenant_tools is not None:
        return
    pins = state.inventory.tools
    state.tenant_tools = TenantTools(
        pins,
        once=lambda: state.once,
        install=lambda node: tool_upload.install(_cluster_node(state, node), pins),
        remove=lambda made: tool_upload.remove(_cluster_node(state, made.node), made),
    )


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = get_state(config)
    if state is None or not state.inventory.tools:
        return None
    named = ", ".join(f"{pin.name} (sha256 {pin.sha256[:16]}...)" for pin in state.inventory.tools)
    return [f"fabric: the tenant's tools: {named}, uploaded to each node, verified there and run by absolute "
            "path in a clean environment"]


@pytest.hookimpl(tryfirst=True)  # before the plugin's own sessionfinish closes the connections
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = get_state(session.config)
    if state is None or state.tenant_tools is None or state.cluster is None:
        return
    removed, changed = state.tenant_tools.remove_all(lambda made, remove: state.batches.fan_out(made, remove))
    notes = [f"the tenant's tools: checked again and removed on {fold(removed)}"] if removed else []
    session.config.stash[_NOTES] = notes + changed


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    for line in config.stash.get(_NOTES, []):
        terminalreporter.write_line(f"fabric: {line}", yellow=not line.startswith("the tenant's tools: checked"))
