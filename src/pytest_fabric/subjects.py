"""Subjects: what one conformance test is about, named the same in test ids and reports.

A subject fixture's parameter is a node name (``node``), a :class:`~pytest_fabric.pairs.Pair`
(``node_pair``) or ``(node, what)`` (``mount``, ``egress_target``, ``gpu``, ``hca``).
Pure: used at collection by the fixtures (ids) and the plugin (records).
"""

from __future__ import annotations

from typing import Any

from .pairs import Pair
from .probes.egress import target_label

__all__ = ["SUBJECT_FIXTURES", "is_subject", "subject_id", "subject_nodes"]

#: subject fixtures, most specific first: a test asking for several is about the first
SUBJECT_FIXTURES = ("node_pair", "mount", "egress_target", "gpu", "hca", "node")


def is_subject(name: str, param: Any) -> bool:
    """Whether ``param`` is a real subject (not the placeholder of an empty parameter set)."""
    if name == "node_pair":
        return isinstance(param, Pair)
    if name == "node":
        return isinstance(param, str)
    return isinstance(param, tuple) and len(param) == 2


def subject_id(name: str, param: Any) -> str:
    """The subject as reports and test ids name it: ``gpu01``, ``gpu01<->gpu02``, ``gpu01:/scratch``,
    ``gpu01:mirror.example.com/100MB.bin`` (an egress target without its scheme)."""
    if name == "node_pair":
        return str(param.id)
    if name == "node":
        return str(param)
    node, what = param
    if name == "mount":
        return f"{node}:{what or 'tmp'}"
    if name == "gpu":
        return f"{node}:gpu{what}"
    if name == "hca":
        return f"{node}:{what}" if isinstance(what, str) else f"{node}:port{what}"
    return f"{node}:{target_label(what)}"


def subject_nodes(name: str, param: Any) -> tuple[str, ...]:
    """The nodes a subject involves."""
    if name == "node_pair":
        return (param.a, param.b)
    if name == "node":
        return (param,)
    return (param[0],)
