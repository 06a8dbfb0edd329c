"""pytest's logging options show what the transport did on each node: ``--log-cli-level=DEBUG``.

One logger per node (``pytest_fabric.transport.node.<node>``) says the connection (address, user,
time) and each command (the command line we built, its exit code, its time and the bytes it
printed, never the node's text itself), at DEBUG, so a run stays quiet unless asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from simcluster import SimCluster


def _run(pytester: pytest.Pytester, inventory: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", "roce-small", "-p", "no:cacheprovider", "-k", "link_layer",
        *args, timeout=300,
    )


def test_log_cli_level_debug_shows_each_nodes_connection_and_commands(
    pytester: pytest.Pytester, simcluster: SimCluster, tmp_path: Path
) -> None:
    node01, node02 = simcluster.nodes[:2]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=[node01.name, node02.name])
    result = _run(pytester, inventory, "--log-cli-level=DEBUG")
    for node in (node01, node02):
        result.stdout.fnmatch_lines([
            f"DEBUG * pytest_fabric.transport.node.{node.name}:* connected to {node.address}:22 as root in * s",
        ])
        # ibstat is missing on the simulated nodes: the shell says so with exit 127 on stderr.
        result.stdout.fnmatch_lines([
            f"DEBUG * pytest_fabric.transport.node.{node.name}:* ran 'ibstat*': exit 127 in * s "
            "(stdout 0 bytes, stderr * bytes)",
        ])
    assert "command not found" not in "".join(
        line for line in result.outlines if "pytest_fabric.transport.node." in line
    )  # the numbers only, not the node's text

    quiet = _run(pytester, inventory, "--log-cli-level=INFO")
    assert not [line for line in quiet.outlines if "pytest_fabric.transport.node." in line]
