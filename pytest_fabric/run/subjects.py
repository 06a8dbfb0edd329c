"""Subjects: what one conformance test is about, named the same in test ids and reports.

A subject fixture's parameter is a node name (``node``), a :class:`~pytest_fabric.run.pairs.Pair`
(``node_pair``) or ``(node, what)`` (``mount``, ``egress_target``, ``gpu``, ``hca``).
Pure: used at collection by the fixtures (ids) and the plugin (records).

Above :data:`DEVICE_TESTS_UP_TO` nodes (``--fabric-device-tests-up-to``) a ``gpu`` or ``hca`` parameter is a whole node's
``(node, (what, what, ...))``: one test per node and check judges each of its GPUs (ports)
and names every one that fails. 4,096 nodes of 8 GPUs and 8 ports are 163,840 tests of five
checks otherwise, most of a collection's time, and a node is what is sent back.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from pytest_fabric.config.profile import LAYERS
from pytest_fabric.run.pairs import Pair

__all__ = [
    "DEVICE_TESTS_UP_TO",
    "SUBJECT_FIXTURES",
    "is_subject",
    "layer_and_check",
    "subject_id",
    "subject_nodes",
    "subject_parts",
    "target_label",
]

#: subject fixtures, most specific first: a test asking for several is about the first
SUBJECT_FIXTURES = ("node_pair", "mount", "egress_target", "gpu", "hca", "node")

#: up to this many nodes each GPU and RDMA port is a test of its own; above, each node's are one
DEVICE_TESTS_UP_TO = 256


def layer_and_check(node: pytest.Item, function_name: str) -> tuple[str, str] | None:
    """A conformance test's layer (its marker) and check (``test_mtu``: ``mtu``); None for other tests."""
    layers = [m.name for m in node.iter_markers() if m.name in LAYERS]
    return (layers[0], function_name.removeprefix("test_")) if layers else None


def target_label(target: str) -> str:
    """The target as a subject names it: ``mirror.example.com/100MB.bin``, ``10.0.0.1:8080/put``, ``host:443``.

    The whole target but its scheme, so three URLs on one host are three names, not one host.
    """
    if "://" not in target:
        return target
    parts = urlsplit(target)
    return f"{parts.netloc}{parts.path}" + (f"?{parts.query}" if parts.query else "")


def is_subject(name: str, param: Any) -> bool:
    """Whether ``param`` is a real subject (not the placeholder of an empty parameter set)."""
    if name == "node_pair":
        return isinstance(param, Pair)
    if name == "node":
        return isinstance(param, str)
    return isinstance(param, tuple) and len(param) == 2


def subject_id(name: str, param: Any) -> str:
    """The subject as reports and test ids name it: ``gpu01``, ``gpu01<->gpu02``, ``gpu01:/scratch``,
    ``gpu01:mirror.example.com/100MB.bin`` (an egress target without its scheme), ``gpu01:gpu3``,
    ``gpu01:port0``, ``gpu01:mlx5_0/1``; a whole node's GPUs or ports ``gpu01:gpus``, ``gpu01:ports``."""
    if name == "node_pair":
        return str(param.id)
    if name == "node":
        return str(param)
    node, what = param
    if name == "mount":
        return f"{node}:{what or 'tmp'}"
    if name in ("gpu", "hca") and isinstance(what, tuple):
        return f"{node}:{'gpus' if name == 'gpu' else 'ports'}"  # each part is named in the verdicts
    if name in ("gpu", "hca"):
        return f"{node}:{_part_name(name, what)}"
    return f"{node}:{target_label(what)}"


def _part_name(name: str, what: int | str) -> str:
    if name == "gpu":
        return f"gpu{what}"
    return what if isinstance(what, str) else f"port{what}"


def subject_parts(name: str, param: Any) -> list[Any]:
    """The single subjects a test judges: ``param`` itself, or each GPU (port) of a whole node's."""
    if name in ("gpu", "hca") and isinstance(param[1], tuple):
        return [(param[0], what) for what in param[1]]
    return [param]


def subject_nodes(name: str, param: Any) -> tuple[str, ...]:
    """The nodes a subject involves."""
    if name == "node_pair":
        return (param.a, param.b)
    if name == "node":
        return (param,)
    return (param[0],)
