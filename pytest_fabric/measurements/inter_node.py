"""Inter-node measurements: what every pair check shares (TCP, RDMA, NCCL), and the profile's word on
the ports every family reads (link layer, ports, RoCE class, GPUs per node: through the run's registry).

Pair measurements are batched by round (:mod:`~pytest_fabric.run.waves`, the one front door
for waves and rounds): the first pair test of a round measures every selected pair of that
round at once, and the consistency, attribution and aggregate checks reuse those results
instead of measuring again. What is read once per run (a node's ports, a pair measured alone) is
kept in ``state.once``.  The node's own ports and links are checks/links.py's checks.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pytest

from pytest_fabric.checks import base as checks
from pytest_fabric.config.profile import CheckSpec, Count, Ports, Roce, Text
from pytest_fabric.config.units import Quantity, parse_quantity
from pytest_fabric.judge import consistency
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.judge.verdict import judge as judge_measurement
from pytest_fabric.probes import nccl, rdma, reachability
from pytest_fabric.run import retests
from pytest_fabric.run.batches import members_at_once
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.run.pairs import Pair
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.run.stopgate import RunStopped
from pytest_fabric.run.waves import (
    measure_batched,
    measure_subject,
    round_context,
    whole_round,
)
from pytest_fabric.transport.base import (
    AuthenticationFailed,
    CommandFailed,
    HostKeyMismatch,
    NodeUnreachable,
    TransportError,
)

S = TypeVar("S", bound=CheckSpec)


def state_of(request: pytest.FixtureRequest) -> FabricState:
    """The run's state, for a measurement fixture (a family's too)."""
    state = get_state(request.config)
    assert state is not None
    return state


_state = state_of


def link_layer_of(state: FabricState) -> str | None:
    """The profile's ``link_layer`` (None where it sets none)."""
    return _link_layer(state)


def expected_ports(state: FabricState) -> int | None:
    """The RDMA ports a node should have, as the profile's ``ports`` says."""
    return _expected_ports(state)


def port_names(state: FabricState) -> tuple[str, ...]:
    """The ports the profile names (``ports.names``)."""
    return _port_names(state)


def _link_layer(state: FabricState) -> str | None:
    spec = state.checks.statement(state.profile, "link_layer", Text)
    return spec.value if spec is not None else None


def _expected_ports(state: FabricState) -> int | None:
    spec = state.checks.statement(state.profile, "rails", Ports)
    return spec.stated if spec is not None else None


def _port_names(state: FabricState) -> tuple[str, ...]:
    """The ports the profile names (``ports.names``); a node's inventory ``rdma_ports`` come first."""
    spec = state.checks.statement(state.profile, "rails", Ports)
    return tuple(spec.names) if spec is not None else ()


def rdma_traffic(state: FabricState) -> tuple[str, ...]:
    """perftest options for the RoCE class the profile's ``roce`` check requires (none on InfiniBand)."""
    spec = state.checks.statement(state.profile, "roce", Roce)
    if spec is None or (_link_layer(state) or "").lower() == "infiniband":
        return ()
    return tuple(spec.perftest_args())


def nccl_launch(state: FabricState, nodes: list[NodeHandle]) -> nccl.Launch:
    """The HCAs and RoCE class NCCL must be told (see :class:`~pytest_fabric.probes.nccl.Launch`):
    the first node's inventory ``rdma_ports`` (rail i is the i-th listed on each node), else the
    profile's ``ports.names``; on RoCE the class and GID perftest is given too."""
    ports = next((n.spec.rdma_ports for n in nodes if n.spec.rdma_ports), ()) or _port_names(state)
    roce = state.checks.statement(state.profile, "roce", Roce)
    env = roce.nccl_env() if roce is not None and (_link_layer(state) or "").lower() != "infiniband" else ()
    return nccl.Launch(hcas=nccl.nccl_hcas(ports), nccl_env=env)


def gpus_per_node(state: FabricState) -> int:
    """The GPUs a node has, as the profile's ``gpu_count`` says (1 where it says none)."""
    spec = state.checks.statement(state.profile, "gpus", Count)
    return (spec.stated if spec is not None else None) or 1


def _set(spec: S | None, check: checks.Check[S]) -> S:
    """A pair check's settings: its measurement fixture runs only when the profile sets it."""
    if spec is None:
        raise LookupError(f"{check.profile_key} is not set: nothing should measure it")
    return spec


def settings_of(state: FabricState, check: checks.Check[S]) -> S:
    """The profile's settings of pair check ``check``, which a measurement of it needs set."""
    return _set(state.profile.spec_of(check), check)


# --------------------------------------------------------------------------- pair measurement


def charging(measure: Callable[[NodePair], Measurement], what: str) -> Callable[[NodePair], Measurement]:
    """``measure``, its client's failure charged to the server when the server proves unreachable
    (its link went down, its sshd died): the client only waited on it (probes/reachability.py)."""
    def charged(pair: NodePair) -> Measurement:
        try:
            return measure(pair)
        except RunStopped:
            raise
        except TransportError as exc:
            if exc.node != pair.a.name:
                raise
            raise reachability.charge_peer(exc, [pair.b], f"{pair.a.name}'s {what} to it failed") from exc
    return charged


def charging_launch(measure: Callable[[NodePair], Measurement]) -> Callable[[NodePair], Measurement]:
    """``measure`` (a launch from ``pair.a`` across both nodes), a failed launch charged to the host
    mpirun could not reach once that host proves unreachable (probes/reachability.py)."""
    def charged(pair: NodePair) -> Measurement:
        try:
            return measure(pair)
        except RunStopped:
            raise
        except TransportError as exc:
            if exc.node != pair.a.name:
                raise
            result = exc.result if isinstance(exc, CommandFailed) else None
            output = f"{result.stdout}\n{result.stderr}" if result is not None else ""
            raise reachability.charge_launch(exc, output, pair.a, [pair.a, pair.b]) from exc
    return charged


#: how one pair of a check is measured with the profile's settings, by check: a check family's own
#: (registered with :func:`pair_check`), given the run's state and the port offset (retests' and
#: oversubscription's slots, apart from the sweep's)
PairMeasure = Callable[[FabricState, int], Callable[[NodePair], Measurement]]
_PAIR_MEASURES: dict[str, PairMeasure] = {}


def pair_check(name: str) -> Callable[[PairMeasure], PairMeasure]:
    """Register how one pair of check ``name`` is measured (its family's module, at import): the rounds,
    retests, outlier tests and attribution here measure its pairs through it."""
    def register(measure: PairMeasure) -> PairMeasure:
        if _PAIR_MEASURES.get(name, measure) is not measure:
            raise ValueError(f"pair check {name}: two functions measure its pairs")
        _PAIR_MEASURES[name] = measure
        return measure
    return register


def has_pair_measure(check: str) -> bool:
    """Whether a family registered how one pair of ``check`` is measured (:func:`pair_check`): such a
    pair can be measured alone, its round again, its sweep without its tests."""
    return check in _PAIR_MEASURES


def measure_function(state: FabricState, check: str, *, port_offset: int = 0) -> Callable[[NodePair], Measurement]:
    """How to measure one pair for ``check`` with the profile's settings."""
    if check in _PAIR_MEASURES:
        return _PAIR_MEASURES[check](state, port_offset)
    raise KeyError(f"{check}: no pair measurement registered (inter_node.pair_check)")


def _scheduled(pair: NodePair) -> Pair:
    """The scheduled pair (the ``node_pair`` parameter) a pair handle stands for."""
    return Pair(round=pair.round, slot=pair.slot, a=pair.a.name, b=pair.b.name)


def pair_measurement(request: pytest.FixtureRequest, check: str, pair: NodePair) -> Measurement:
    """``pair``'s measurement, its round measured at once; the detail says when that round was not the full one.

    The round is batched as every pair check's (:func:`~pytest_fabric.run.waves.measure_subject`):
    under ``--lf`` the failing pairs run inside their whole round again, as in the first run.
    A pair that fails there is also re-measured alone, as attribution's retest does, and the
    message says which it is.
    """
    state = _state(request)
    scheduled = _scheduled(pair)
    measured = measure_subject(request, check, "node_pair", scheduled, measure_function(state, check))
    if not round_context(state, check, scheduled, whole=whole_round(request.config)).widened:
        return measured
    if _is_bad(state, check, pair.id, measured, {}):
        _retest_round_failures(state, check, pair.round)
        good, figure = _good_alone(state, check, pair.a.name, pair.b.name, {})
        note = (
            f"re-measured alone as attribution's retest does: {figure}, "
            + {
                True: "good alone: it fails under load (contention, routing or oversubscription), not a cable",
                False: "bad alone too",
                None: "alone its repeats fall on both sides of the floor: cannot tell, not a cable",
            }[good]
        )
        measured = dataclasses.replace(measured, detail=f"{measured.detail}; {note}" if measured.detail else note)
    return measured


def all_pair_measurements(state: FabricState, check: str) -> dict[str, Measurement | BaseException]:
    """Every scheduled pair's measurement for ``check``, measuring the rounds not measured yet (each whole).

    Computed once per check: every outlier test and attribution reads the same results.
    """

    def measure_all() -> dict[str, Measurement | BaseException]:
        measure = measure_function(state, check)
        out: dict[str, Measurement | BaseException] = {}
        for scheduled in state.rounds_index().values():
            for pair in scheduled:
                try:
                    out[pair.id] = measure_batched(state, check, "node_pair", pair, measure, whole=True)
                except Exception as exc:  # reported by that pair's own test
                    out[pair.id] = exc
        return out

    return state.once.get("all pair measurements", check, measure_all)


def pair_population(state: FabricState, check: str) -> consistency.Population | None:
    """The check's figures over every measured pair, with median and MAD and each pair's ends (each end
    is judged against the pairs it is not in): computed once, after its rounds."""

    def population() -> consistency.Population | None:
        values = _values(all_pair_measurements(state, check))
        return consistency.Population.of(values, {p.id: p.nodes for p in state.pairs}) if values else None

    return state.once.get("pair population", check, population)


def _values(measurements: dict[str, Measurement | BaseException]) -> dict[str, float]:
    """Each pair's figure for peer comparison (base units), from the pairs that were measured."""
    out = {}
    for key, m in measurements.items():
        if isinstance(m, Measurement) and isinstance(m.value, Quantity):
            out[key] = float(m.extra.get("consistency_value", m.value.value))
    return out


# --------------------------------------------------------------------------- per-node and per-port


def node_ports(request: pytest.FixtureRequest, node: NodeHandle) -> tuple[list[rdma.RdmaPort], list[Any]]:
    """The node's RDMA ports of the profile's link layer (listed once per run)."""
    state = _state(request)
    return state.once.get("rdma ports", node.name, lambda: rdma.list_ports(node, _link_layer(state)))


# --------------------------------------------------------------------------- pair checks


# --------------------------------------------------------------------------- re-measuring before judging

#: how often a pair that looks like an outlier is re-measured alone; it is judged on their median
OUTLIER_REPEATS = 3
#: re-measurements run in rounds of their own, after the sweep's: one port range after the rounds' own
RETEST_PORT_OFFSET = 100
UNREACHABLE = (NodeUnreachable, AuthenticationFailed, HostKeyMismatch)


def _figure(measured: Measurement) -> float | None:
    """The pair's figure for peer comparison, in base units (bit/s, seconds)."""
    if not isinstance(measured.value, Quantity):
        return None
    return float(measured.extra.get("consistency_value", measured.value.value))


def measure_alone(state: FabricState, check: str, sender: str, receiver: str, count: int = 1) -> list[Measurement | BaseException]:
    """``sender`` -> ``receiver`` measured with nothing else running, at least ``count`` times.

    Cached for the run: the outlier check, attribution and ``--lf`` re-measure the
    same pairs, and a pair is not measured alone more often than the most any asks.
    """
    # one sample at a time, each kept: the n-th sample is measured once, whoever asks first
    # (retest_alone has usually measured them already, in rounds)
    return [_alone_sample(state, check, sender, receiver, n) for n in range(count)]


def alone_moment(state: FabricState, check: str, sender: str, receiver: str, n: int) -> str:
    """When the ``n``-th sample of ``sender`` -> ``receiver`` alone was measured, as a label the blame
    model reads (``Figure.rounds``): its retest round's sample, which every pair of that round measured
    at once (:func:`retest_alone`); a sample measured on its own has a moment of its own."""
    kept = state.once.peek("measured alone at", (check, sender, receiver, n))
    return kept if isinstance(kept, str) else _own_moment(check, sender, receiver, n)


def _own_moment(check: str, sender: str, receiver: str, n: int) -> str:
    return f"{check} {sender}->{receiver} alone, sample {n}"


def _alone_sample(state: FabricState, check: str, sender: str, receiver: str, n: int,
                  moment: str = "") -> Measurement | BaseException:
    """The ``n``-th sample of ``sender`` -> ``receiver`` with none of the sweep running, measured once per run;
    ``moment``: the retest round's sample it is measured in (:func:`alone_moment`)."""

    def sample() -> Measurement | BaseException:
        # kept as it is measured: a sample already measured keeps the moment it was measured at
        state.once.get("measured alone at", (check, sender, receiver, n),
                       lambda: moment or _own_moment(check, sender, receiver, n))
        return _retest_sample(state, check, (sender, receiver))

    return state.once.get("measured alone", (check, sender, receiver, n), sample)


def _retest_apart(state: FabricState, pairs: list[tuple[str, str]], short: set[frozenset[str]]) -> dict[tuple[str, str], list[str]]:
    """Retests that must not share a round (:func:`~pytest_fabric.run.retests.schedule`'s ``apart``).

    Where the inventory gives both ends' leaves, at most one retest a round crosses between the
    same two leaves (retests must not load an oversubscribed spine for each other, and two pairs
    that collided on it in the sweep must not collide again: a collision re-measured is not
    "alone"); a pair inside one leaf crosses no spine. Where it does not, pairs that fell short
    (``short``) in the same sweep round are kept apart: they may have collided there.
    """
    tags = _apart_tags(state, short)
    return {pair: found for pair in pairs if (found := tags(pair))}


def _apart_tags(state: FabricState, short: set[frozenset[str]]) -> Callable[[tuple[str, str]], list[str]]:
    """One pair's tags of :func:`_retest_apart` (the inventory read once: a control is picked among many pairs)."""
    assert state.cluster is not None
    round_of = {frozenset((p.a, p.b)): p.round for p in state.pairs}
    leaf = {n.name: n.labels.get("leaf") for n in state.cluster.nodes}

    def tags(pair: tuple[str, str]) -> list[str]:
        a, b = pair
        key = frozenset(pair)
        if leaf.get(a) and leaf.get(b):
            return ["spine " + "<->".join(sorted((str(leaf[a]), str(leaf[b]))))] if leaf[a] != leaf[b] else []
        if key in short and key in round_of:
            return [f"short in round {round_of[key]}"]
        return []

    return tags


@dataclasses.dataclass(frozen=True)
class ControlSample:
    """A control pair's sample, measured beside a retest round that had no contemporary for its pair
    (:func:`~pytest_fabric.run.retests.pick_controls`): at ``moment``, the round's sample's label."""

    sender: str
    receiver: str
    moment: str
    measured: Measurement | BaseException


def control_samples(state: FabricState, check: str) -> list[ControlSample]:
    """Every control sample :func:`retest_alone` measured for ``check`` so far, in the order measured."""
    found: list[ControlSample] = state.once.get("retest controls", check, list)
    return found


def retest_alone(
    state: FabricState, check: str, pairs: list[tuple[str, str]], samples: int, *, short: set[frozenset[str]] | None = None,
    control_pool: Sequence[str] = (),
) -> int:
    """The first ``samples`` samples of every pair measured alone, in rounds of disjoint pairs.

    A round holds at most ``--fabric-fanout // 2`` pairs (the cap counts nodes) and no node twice;
    sample k of every pair of a round runs together (:func:`~pytest_fabric.run.retests.run_rounds`).
    The samples are kept where :func:`measure_alone` reads them. ``short``: the pairs that fell
    short in the sweep (kept apart by round, :func:`_retest_apart`). Returns the rounds it made.

    ``control_pool``: nodes (best first, no suspect among them) that a round with no contemporary
    for its pair (one pair: a suspect and a helper) borrows two of, a control pair measured at
    the same moment (:func:`~pytest_fabric.run.retests.pick_controls`; kept in
    :func:`control_samples`): the blame model reads the machine's load at that moment from it.
    Empty (the outlier checks, ``--lf``: they read no moments): no control. A control runs inside
    its round, in no round of its own: the retests take no longer.
    """
    if not pairs:
        return 0
    per_round = members_at_once(state.batches.fanout, 2)
    apart = _retest_apart(state, pairs, short or set())
    moments = state.once.get("retest moments", None, itertools.count)
    controls: dict[tuple[tuple[str, str], ...], tuple[str, str]] = {}
    if control_pool:
        plan = retests.schedule(pairs, per_round, apart)
        picked = retests.pick_controls(plan, control_pool, per_round, _apart_tags(state, short or set()))
        controls = {tuple(r): c for r, c in zip(plan, picked) if c is not None}
    kept = control_samples(state, check)

    def measure_round(round_pairs: list[tuple[str, str]], k: int) -> list[Measurement | BaseException]:
        # sample k of every pair of the round at once: one moment of the run, for the blame model's
        # figures (load that moves in time slows every pair measured then)
        moment = f"{check} retest round {next(moments)}, sample {k}"
        control = controls.get(tuple(round_pairs))
        # a sample measured before (a later step asks a pair's first samples again) is not measured now:
        # a control beside it would read a moment no retest was measured at
        if control is not None and all(state.once.peek("measured alone", (check, a, b, k)) is not None
                                       for a, b in round_pairs):
            control = None
        if control is None:
            return state.batches.fan_out(round_pairs, lambda pair: _alone_sample(state, check, pair[0], pair[1], k, moment))
        # the control beside the round's pair, the same moment: not a sample of it alone (those are cached per
        # pair and sample; a control measures at every moment it is asked for)
        last = len(round_pairs)
        measured = state.batches.fan_out(list(enumerate([*round_pairs, control])), lambda item: (
            _retest_sample(state, check, item[1]) if item[0] == last
            else _alone_sample(state, check, item[1][0], item[1][1], k, moment)))
        kept.append(ControlSample(control[0], control[1], moment, measured[-1]))
        return measured[:-1]

    retests.run_rounds(pairs, samples, per_round, measure_round, apart=apart)
    return retests.rounds_needed(pairs, per_round, apart)


def _retest_sample(state: FabricState, check: str, pair: tuple[str, str]) -> Measurement | BaseException:
    """One sample of ``pair`` on the retests' ports, not cached: a retest's (kept by :func:`_alone_sample`)
    or a control pair's beside a retest round. An error is returned: a retest's counts as not good, a
    control's reads nothing and is charged to no one; either message says why."""
    assert state.cluster is not None
    try:
        return measure_function(state, check, port_offset=RETEST_PORT_OFFSET)(state.cluster.pair(*pair))
    except Exception as exc:
        return exc


def _retest_round_failures(state: FabricState, check: str, number: int) -> None:
    """Under ``--lf``: every failing pair of a widened round re-measured alone at once (one retest
    round: the pairs of a round share no node), before any of their tests reads its own."""

    def retest() -> int:
        measured = state.batches.results(check, ("round", number))
        failing = [
            (p.a, p.b) for p in state.rounds_index().get(number, [])
            if (m := measured.get(p.id)) is not None and _is_bad(state, check, p.id, m, {})
        ]
        return retest_alone(state, check, failing, RETEST_REPEATS, short={frozenset(p) for p in failing})

    state.once.get("round failures retested", (check, number), retest)


#: a pair re-measured alone is measured this often and judged on its median, like the round
RETEST_REPEATS = 3


def _good_alone(
    state: FabricState, check: str, sender: str, receiver: str, values: dict[str, float] | consistency.Population
) -> tuple[bool | None, str]:
    """Is the pair good alone, judged like the round: ``RETEST_REPEATS`` samples and their median.

    None when the samples fall on both sides of the floor (or of the outlier limit): the
    measurement's own spread near the floor cannot tell a bad cable from a good one.  The text
    lists every figure (``24.1 Gb/s, 24.8 Gb/s, 25.3 Gb/s, median 24.8 Gb/s``).
    """
    samples = measure_alone(state, check, sender, receiver, RETEST_REPEATS)[:RETEST_REPEATS]
    errors = [s for s in samples if isinstance(s, BaseException)]
    if errors:
        return False, f"could not be measured alone ({str(errors[0]).splitlines()[0]})"
    measured = [s for s in samples if isinstance(s, Measurement)]
    measured.sort(key=lambda m: _figure(m) or 0.0)
    middle = measured[len(measured) // 2]
    pair_id = f"{sender}<->{receiver}"
    bad = [_is_bad(state, check, pair_id, m, values, alone=True) for m in measured]
    declared = state.checks.check_of(check)
    unit = declared.shown_in if declared is not None else None
    figures = ", ".join(_display(unit, m) for m in measured)
    text = f"{figures}, median {_display(unit, middle)}" if len(measured) > 1 else _display(unit, middle)
    if all(bad):
        return False, text
    if not any(bad):
        return True, text
    return None, text


def _display(unit: str | None, measured: Measurement) -> str:
    """The figure in ``unit``, its check's declared ``shown_in`` (None: as measured)."""
    value = measured.value
    if isinstance(value, Quantity):
        return value.display(unit) if unit else value.display()
    return str(value)


def rerun_round(state: FabricState, check: str, pair_id: str) -> Measurement | BaseException:
    """``pair_id`` measured again inside its round, all of that round's pairs at once (one re-run per round)."""
    original = next(p for p in state.pairs if p.id == pair_id)
    try:
        # its own cache key: the round's first results stay as measured
        return measure_batched(state, check, "node_pair", original,
                               measure_function(state, check, port_offset=RETEST_PORT_OFFSET),
                               cache_as=f"{check} (round again)")
    except Exception as exc:  # counted as not good
        return exc


def _needs_every_pair(request: pytest.FixtureRequest, state: FabricState, test_check: str) -> None:
    """Skip a peer-relative check when the selection keeps only some of its pairs.

    The median needs every pair; measuring the ones the selection left out
    would measure the whole cluster unasked (``-k node03`` would take longer
    than the full run), and a median over node03's pairs alone hides node03.
    """
    scheduled = {p.id for p in state.pairs}
    selected = set(state.selected(test_check, "node_pair") or ()) & scheduled
    if selected and selected != scheduled:
        pytest.skip(
            f"{test_check} compares each pair with the median of all {len(scheduled)} scheduled pairs; the selection "
            f"(-k/-m/--lf/--deselect) keeps {len(selected)} of them and pytest-fabric does not measure the other "
            f"{len(scheduled) - len(selected)} unasked. Select every pair of it (-k {test_check}) or none"
        )


def _outlier_limit(state: FabricState, lower_is_better: bool) -> float | None:
    spec: Any = state.profile.spec("inter_node", "latency_outlier" if lower_is_better else "outlier")
    bound = None if spec is None else (spec.max_above_median if lower_is_better else spec.max_below_median)
    return float(bound.value) if bound is not None else None


def _retest_outliers(
    state: FabricState, check: str, values: consistency.Population, limit: float, lower_is_better: bool
) -> None:
    """Every pair of ``check`` that stands out in the sweep, re-measured alone at once, in rounds
    (:func:`retest_alone`), the first time any outlier test needs its own: not one pair after another."""

    def retest() -> int:
        standing_out = [
            (p.a, p.b) for p in state.pairs
            if p.id in values.values
            and consistency.outlier(values, p.id, lower_is_better=lower_is_better).beyond_spread > limit
        ]
        return retest_alone(state, check, standing_out, OUTLIER_REPEATS, short={frozenset(p) for p in standing_out})

    state.once.get("outliers retested", check, retest)


def outlier_measurement(request: pytest.FixtureRequest, check: str, pair: NodePair, *, lower_is_better: bool) -> Measurement:
    """How far the pair sits from the median of all pairs beyond the measurement's own spread.

    A pair that stands out in the sweep is re-measured alone ``OUTLIER_REPEATS``
    times and judged on their median: one unlucky sample does not send a cable back.
    """
    state = _state(request)
    _needs_every_pair(request, state, f"{check}_outlier")
    measurements = all_pair_measurements(state, check)
    own = measurements.get(pair.id)
    if isinstance(own, BaseException):
        raise own
    values = pair_population(state, check)
    if values is None or len(values.values) < 3:
        count = 0 if values is None else len(values.values)
        pytest.skip(f"{check}: {count} pair(s) measured; a median needs at least 3")
    limit = _outlier_limit(state, lower_is_better)
    finding = consistency.outlier(values, pair.id, lower_is_better=lower_is_better)
    if limit is not None and finding.beyond_spread > limit:
        _retest_outliers(state, check, values, limit, lower_is_better)
        samples = measure_alone(state, check, pair.a.name, pair.b.name, OUTLIER_REPEATS)[:OUTLIER_REPEATS]
        errors = [s for s in samples if isinstance(s, BaseException)]
        if errors:
            raise errors[0]
        figures = [f for s in samples if isinstance(s, Measurement) and (f := _figure(s)) is not None]
        finding = consistency.outlier(values, pair.id, figures, lower_is_better=lower_is_better)
    # base units are seconds (latency) and bit/s (bandwidth); show us and Gb/s
    unit, scale = ("us", 1e6) if lower_is_better else ("Gb/s", 1e-9)

    def show(number: float) -> str:
        return f"{number * scale:.3f}".rstrip("0").rstrip(".")

    direction = "above" if lower_is_better else "below"
    if finding.remeasured:
        basis = (
            f"rests on {finding.samples} samples: {show(finding.round_value)} {unit} in its round, then the median of "
            f"{len(finding.remeasured)} re-measured alone ({', '.join(show(v) for v in finding.remeasured)} {unit})"
        )
    else:
        basis = "rests on 1 sample, in its round (it did not stand out, so it was not re-measured)"
    return Measurement(
        value=parse_quantity(f"{finding.beyond_spread * 100:.4f}%"),
        detail=(
            f"{consistency.describe(finding, limit, lower_is_better=lower_is_better)}: "
            f"{check} {show(finding.value)} {unit} vs median {show(finding.median)} {unit} of "
            f"{consistency.peers_text(finding)}: "
            f"{finding.fraction * 100:.1f}% {direction} the median, of which {min(finding.spread, finding.fraction) * 100:.1f}% "
            f"is within the measurement's own spread ({_spread_basis(finding)}, or the range of the re-measurements); "
            f"{basis}"
        ),
        extra={
            "outlier": {
                "text": consistency.describe(finding, limit, lower_is_better=lower_is_better),
                "median": finding.median,
                "peers": finding.peers,
                "without": list(finding.without),
                "fraction": finding.fraction,
                "spread": finding.spread,
                "samples": finding.samples,
                "remeasured": list(finding.remeasured),
            }
        },
    )


def _spread_basis(finding: consistency.OutlierFinding) -> str:
    """Where the spread a finding allows comes from, in words."""
    if finding.without:
        node = finding.without[0]
        return (f"3 spreads (1.4826 x MAD of the figures' logarithms) of the {finding.peers} pairs {node} is not in, "
                f"the baseline the blame model judges {node} against: {node}'s own pairs never widen it")
    if finding.leave_out:
        return f"3 spreads (1.4826 x MAD of the figures' logarithms) of the {finding.peers} other pairs"
    return "3 x 1.4826 x MAD of the pairs"


# --------------------------------------------------------------------------- whole-fabric checks


def _is_bad(
    state: FabricState,
    check: str,
    pair_id: str,
    measured: Measurement | BaseException,
    values: dict[str, float] | consistency.Population,
    *,
    alone: bool = False,
) -> bool:
    """Does the pair fail ``check``'s floor, or stand out below its peers beyond the spread?"""
    if isinstance(measured, BaseException):
        return True
    for expectation in state.profile.expectations("inter_node", check):
        try:
            if not judge_measurement(pair_id, measured, expectation).passed:
                return True
        except (ValueError, TypeError):
            return True
    limit = _outlier_limit(state, lower_is_better=False)
    if limit is not None and (figure := _figure(measured)) is not None:
        population = values if isinstance(values, consistency.Population) else None
        if not isinstance(values, consistency.Population) and len(values) >= 3:
            population = consistency.Population.of(values)
        if population is None or len(population.values) < 3:
            return False
        if population.values.get(pair_id) != figure and (pair_id in population.values or alone):
            population = population.with_value(pair_id, figure)  # a re-measurement, judged against the sweep
        if pair_id in population.values and consistency.outlier(population, pair_id).beyond_spread > limit:
            return True
    return False
