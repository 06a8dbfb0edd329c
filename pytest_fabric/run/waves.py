"""The one way to schedule a check: the first test of a batch measures every selected subject of it at once.

A measurement fixture for one subject is decorated with :func:`wave`::

    @pytest.fixture
    @wave("node")
    def gpu_count(request, node, spec) -> Measurement: ...

A node, GPU, mount, RDMA port or egress target is batched by wave: when the first test of
``gpu_count`` sets up, the fixture body runs for every subject of ``gpu_count`` that is still
selected (after ``-k``/``-m``/``--lf``). A node pair is batched by round, as a node is by wave:
``@wave("node_pair")`` measures the selected pairs of the test's round (batch ``("round", n)``)
at once; pairs of a round share no node, so each link is loaded once. Under ``--lf`` a pair is
measured inside its whole round again, as in the first run: in a smaller round a failure that
came from contention would "fix" itself. A pair measured in less than its full round says so.

Both run in parallel up to ``--fabric-fanout``, through :class:`~pytest_fabric.run.batches.BatchCache`.
Every test still gets its own subject's measurement (or its own error), so verdicts stay per
subject. ``shares`` names what members must not use all at once (a shared mount, the egress
uplink). A measurement that is no fixture of its own (a pair check that another check's
measurement needs, attribution's re-run of a round) calls :func:`measure_batched` or
:func:`measure_subject`, the same path. What is selected comes from one registry,
``state.selected_subjects`` (:meth:`~pytest_fabric.run.state.FabricState.selected`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.batches import Member, Share
from pytest_fabric.run.pairs import Pair
from pytest_fabric.run.state import CHECK_KEY, FabricState, get_state
from pytest_fabric.run.subjects import subject_id, subject_nodes

__all__ = ["RoundContext", "batch_of", "measure_batched", "measure_subject", "round_context", "wave", "whole_round"]

F = TypeVar("F", bound=Callable[..., Measurement])
ShareRule = Callable[[Any, Any], "Share | None"]  # (state, subject handle) -> what it shares


def wave(subject: str, *, shares: ShareRule | None = None) -> Callable[[F], F]:
    """Measure the decorated per-``subject`` fixture for all selected subjects of its batch at once.

    The batch of a ``node_pair`` is the test's round; of any other subject, the check's wave.
    """

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
            own_param = request.node.callspec.params[subject]
            return measure_subject(request, fixture.__name__, subject, own_param,
                                   lambda handle: _measure(fixture, kwargs, subject, handle), shares=shares)

        measured.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        del measured.__wrapped__  # pytest reads the signature above, not the wrapped one's
        return measured  # type: ignore[return-value]

    return decorate


def whole_round(config: pytest.Config) -> bool:
    """Whether a pair is measured inside its whole round whatever the selection keeps: under ``--lf``."""
    return bool(config.getoption("lf", False))


def batch_of(state: FabricState, check: str, subject: str, param: Any, *, whole: bool = False) -> tuple[object, list[Any]]:
    """The batch ``param`` is measured in for ``check``: its key, and the subjects' parameters measured together.

    A node pair's batch is its round, ``("round", n)``: the pairs of that round the selection
    keeps for ``check``; all of them with ``whole``, or when no selected pair test uses
    ``check`` (it is measured for another check's sake, as a full run measures it). Any other
    subject's batch is the check's ``"wave"``: every subject the selection keeps for it.
    ``param`` itself may be missing from the list (a selection left it out): it is measured with them.
    Worked out once per batch.
    """
    if subject == "node_pair":
        number = param.round
        return ("round", number), state.once.get("round members", (check, number, whole),
                                                 lambda: _round_members(state, check, number, whole))
    return "wave", state.once.get("wave members", (check, subject),
                                  lambda: list((state.selected(check, subject) or {}).values()))


def _round_members(state: FabricState, check: str, number: int, whole: bool) -> list[Pair]:
    selected = None if whole else state.selected(check, "node_pair")
    return [p for p in state.rounds_index().get(number, []) if not selected or p.id in selected]


def measure_batched(
    state: FabricState,
    check: str,
    subject: str,
    param: Any,
    measure: Callable[[Any], Measurement],
    *,
    shares: ShareRule | None = None,
    whole: bool = False,
    cache_as: str | None = None,
) -> Measurement:
    """``param``'s measurement for ``check``, measuring its whole batch (:func:`batch_of`) at once the first time.

    ``measure`` takes a subject's handle (what the subject fixture gives a test). ``cache_as``:
    the name the batch is kept under, when it is not ``check`` (a round measured again keeps the
    first results as they were).
    """
    # Here, not at the top: an extension imports this module for @wave before pytest registers
    # run/fixtures.py (a plugin), which imported then would escape assertion rewriting.
    from pytest_fabric.run.fixtures import handle_for

    assert state.cluster is not None
    cluster = state.cluster  # narrowed here, for the closures below
    name = cache_as or check
    batch, selected = batch_of(state, check, subject, param, whole=whole)
    own = subject_id(subject, param)
    done = state.batches.lookup(name, batch, own)
    if done is not None:  # the batch was measured: no need to list its members again
        if isinstance(done, BaseException):
            raise done
        return done
    params = selected if any(subject_id(subject, p) == own for p in selected) else [*selected, param]

    def member(p: Any) -> Member[Any]:
        handle = handle_for(cluster, subject, p)
        return Member(subject_id(subject, p), handle, shares(state, handle) if shares else None,
                      nodes=len(subject_nodes(subject, p)) or 1)

    members = [member(p) for p in params]
    mine = next(m for m in members if m.id == own)
    if subject == "node_pair":
        # The two ends of a pair run different commands (a server, a client), and so do the
        # pairs of a round (their own ports): nothing a wave's nodes could share a launch for.
        return state.batches.measure(name, batch, mine, members, measure)
    nodes_of = {id(m.subject): subject_nodes(subject, p) for m, p in zip(members, params)}
    # Nodes with one member each may share launches (one Slurm step for the wave's command).
    counts = Counter(n for p in params for n in subject_nodes(subject, p))
    with cluster.together(n for n, c in counts.items() if c == 1) as together:

        def measure_one(handle: Any) -> Measurement:
            with together.member(nodes_of.get(id(handle), ())):
                return measure(handle)

        return state.batches.measure(name, batch, mine, members, measure_one)


@dataclasses.dataclass(frozen=True)
class RoundContext:
    """How a pair's round was measured, against the full round a full run measures."""

    note: str  # for the pair's result; empty when its round was the full one, as selected
    widened: bool  # --lf measured it inside its whole round, pairs the selection left out included


def round_context(state: FabricState, check: str, pair: Pair, *, whole: bool) -> RoundContext:
    """What ``pair``'s result says about its round (see :func:`measure_subject`); worked out once per round."""

    def work_out() -> RoundContext:
        _, members = batch_of(state, check, "node_pair", pair, whole=whole)
        full = len(state.rounds_index().get(pair.round, []))
        if len(members) < full:
            return RoundContext(
                f"measured in a round of {len(members)} pair(s) at once where the full sweep runs {full} "
                "(the selection left the others out): a failure that shows only under load may not show here",
                False,
            )
        selected = state.selected(check, "node_pair")
        if whole and selected and any(p.id not in selected for p in members):
            return RoundContext(
                f"--lf: measured inside its whole round ({full} pairs at once, as in the first run), "
                "not in a smaller one where a failure under load would vanish",
                True,
            )
        return RoundContext("", False)

    return state.once.get("round context", (check, pair.round, whole), work_out)


def measure_subject(
    request: pytest.FixtureRequest,
    check: str,
    subject: str,
    param: Any,
    measure: Callable[[Any], Measurement],
    *,
    shares: ShareRule | None = None,
) -> Measurement:
    """A test's measurement of ``param`` in its batch (what :func:`wave` does for a fixture).

    A node pair is measured in its round, the whole round under ``--lf``, and its result says
    so when that round was not the full one.
    """
    state = get_state(request.config)
    assert state is not None
    if subject != "node_pair":
        return measure_batched(state, check, subject, param, measure, shares=shares)
    whole = whole_round(request.config)
    measured = measure_batched(state, check, subject, param, measure, shares=shares, whole=whole)
    note = round_context(state, check, param, whole=whole).note
    if note:
        measured = dataclasses.replace(measured, detail=f"{measured.detail}; {note}" if measured.detail else note)
    return measured


def _measure(fixture: Callable[..., Measurement], kwargs: dict[str, Any], subject: str, handle: Any) -> Measurement:
    """The fixture's measurement of ``handle``: of each part, one after the other, for a whole node's GPUs or ports."""
    from pytest_fabric.run.fixtures import NodeParts  # here, not at the top: as in measure_batched

    if isinstance(handle, NodeParts):
        return Measurement.of_parts([(part_id, fixture(**{**kwargs, subject: part})) for part_id, part in handle.parts])
    return fixture(**{**kwargs, subject: handle})

