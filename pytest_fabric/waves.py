"""Per-node checks in waves: the first test of a check measures every selected subject at once.

A measurement fixture for one subject (a node, GPU, mount, RDMA port or egress target)
is decorated with :func:`wave`::

    @pytest.fixture
    @wave("node")
    def gpu_count(request, node, spec) -> Measurement: ...

When the first test of ``gpu_count`` sets up, the fixture body runs for every subject of
``gpu_count`` that is still selected (after ``-k``/``-m``/``--lf``), in parallel up to
``--fabric-fanout``, through :class:`~pytest_fabric.batches.BatchCache`, the same mechanism
that measures pair rounds. Every test still gets its own subject's measurement (or its
own error), so verdicts stay per subject. ``shares`` names what members must not use all
at once (a shared mount, the egress uplink).
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from .batches import Member, Share
from .state import CHECK_KEY, get_state
from .subjects import subject_nodes
from .verdict import Measurement

__all__ = ["wave"]

F = TypeVar("F", bound=Callable[..., Measurement])
ShareRule = Callable[[Any, Any], "Share | None"]  # (state, subject handle) -> what it shares


def wave(subject: str, *, shares: ShareRule | None = None) -> Callable[[F], F]:
    """Measure the decorated per-``subject`` fixture for all selected subjects at once."""

    def decorate(fixture: F) -> F:
        signature = inspect.signature(fixture)
        takes_request = "request" in signature.parameters
        if subject not in signature.parameters:
            raise TypeError(f"{fixture.__name__}: a wave over {subject!r} needs a {subject!r} parameter")
        params = list(signature.parameters.values())
        if not takes_request:
            params.insert(0, inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD))

        @functools.wraps(fixture)
        def measured(**kwargs: Any) -> Measurement:
            request: pytest.FixtureRequest = kwargs["request"] if takes_request else kwargs.pop("request")
            state = get_state(request.config)
            info = request.node.stash.get(CHECK_KEY, None)
            if state is None or info is None or state.cluster is None:
                return _measure(fixture, kwargs, subject, kwargs[subject])
            from .fixtures import handle_for  # fixtures imports this module's users

            cluster = state.cluster  # narrowed here, for the closure below
            check = fixture.__name__
            own_param = request.node.callspec.params[subject]
            selected = [p for kind, p in state.selected_subjects.get(check, []) if kind == subject]

            def member(param: Any) -> Member[Any]:
                handle = handle_for(cluster, subject, param)
                return Member(_id(subject, param), handle, shares(state, handle) if shares else None)

            mine = member(own_param)
            members = [member(p) for p in selected] or [mine]
            nodes_of = {id(m.subject): subject_nodes(subject, p) for m, p in zip(members, selected or [own_param])}
            nodes_of[id(mine.subject)] = subject_nodes(subject, own_param)
            # Nodes with one member each may share launches (one Slurm step for the wave's command).
            params = list(selected) if own_param in selected else [*selected, own_param]
            counts = Counter(n for p in params for n in subject_nodes(subject, p))

            with cluster.together(n for n, c in counts.items() if c == 1) as together:

                def measure_one(handle: Any) -> Measurement:
                    with together.member(nodes_of.get(id(handle), ())):
                        return _measure(fixture, kwargs, subject, handle)

                return state.batches.measure(check, "wave", mine, members, measure_one)

        measured.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        del measured.__wrapped__  # pytest reads the signature above, not the wrapped one's
        return measured  # type: ignore[return-value]

    return decorate


def _measure(fixture: Callable[..., Measurement], kwargs: dict[str, Any], subject: str, handle: Any) -> Measurement:
    """The fixture's measurement of ``handle``: of each part, one after the other, for a whole node's GPUs or ports."""
    from .fixtures import NodeParts

    if isinstance(handle, NodeParts):
        return Measurement.of_parts([(part_id, fixture(**{**kwargs, subject: part})) for part_id, part in handle.parts])
    return fixture(**{**kwargs, subject: handle})


def _id(subject: str, param: Any) -> str:
    from .subjects import subject_id

    return subject_id(subject, param)
