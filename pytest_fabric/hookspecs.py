"""pytest-fabric's own hooks, added to pytest's plugin manager with ``pytest_addhooks``.

An extension is an ordinary pytest plugin (a ``pytest11`` entry point or a
conftest.py) that implements any of these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_fabric.checks.base import Check
    from pytest_fabric.config.inventory import Node
    from pytest_fabric.run.pairs import Pair
    from pytest_fabric.transport.base import Transport

hookspec = pytest.hookspec


@hookspec
def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]] | None:
    """Return the checks this plugin adds: a :class:`~pytest_fabric.checks.base.Check` declaration each.

    Called once, at configure time, before the profile is loaded: each declaration's profile key
    (``layer.key``) becomes a key profiles may set, typed and validated by the declaration's settings
    model (a :class:`~pytest_fabric.config.profile.CheckSpec`); its test is ``test_<name>`` marked with its
    layer.  pytest-fabric's own check families (``pytest_fabric.checks.<family>``) return theirs from this
    hook.
    Two plugins declaring one name, one key with two models, or overlapping port blocks are a usage
    error naming both plugins.  Every implementation is called, in registration order.
    """


@hookspec(firstresult=True)
def pytest_fabric_make_transport(node: Node, config: pytest.Config) -> Transport | None:
    """Return the transport that reaches ``node``, or None to let another plugin decide.

    Stops at the first non-None result.  pytest-fabric's own implementation runs
    last (``trylast``) and returns ``LocalTransport`` for local nodes and
    ``SSHTransport`` for the rest, so a plugin can add e.g. a Slurm ``srun``
    transport for nodes carrying a label of its choosing.
    """


@hookspec(firstresult=True)
def pytest_fabric_pairs(
    nodes: list[str], strategy: str, labels: dict[str, dict[str, str]], config: pytest.Config
) -> list[Pair] | None:
    """Return the node pairs to measure (in rounds of disjoint pairs), or None for the default.

    Stops at the first non-None result.  Must return the same pairs in every
    process (pytest-xdist workers collect independently): no unseeded randomness.
    """


@hookspec
def pytest_fabric_suite_paths(config: pytest.Config) -> list[str] | None:
    """Return extra test paths to collect with the bundled conformance suite.

    Called when ``--cluster`` is given and no test paths are: the results of
    all implementations are collected along with the bundled suite.
    """


@hookspec
def pytest_fabric_check_recorded(record: dict[str, Any], config: pytest.Config) -> None:
    """Called on the controller once per finished check with its record dict (see ``record.CheckRecord``).

    A result sink (a database, a dashboard, a ticket system) implements this.
    Under pytest-xdist it runs in the controller process only.
    """
