"""Attribution for the whole run: every pair check's figures judged by one model, its retests run in rounds.

The model is :mod:`pytest_fabric.judge.blame` (pure); this module only feeds it and runs what it asks:

1. Every pair check the profile sets whose declaration feeds the model (``Check.blame``: how its
   measurement becomes figures, pair by pair or rail by rail or GPU by GPU, and whether attribution
   sweeps it unasked; a check that does not is read where its pair tests are in the run) gives its
   figures (:mod:`pytest_fabric.judge.blame_inputs`), every repeat and the floor kept. A pair that errored is a :class:`~pytest_fabric.judge.blame.Failure` charged to
   the node its error names (a peer that proved unreachable, the host a launch failed on:
   probes/reachability.py); a node that could not be reached is unmeasured, never judged.
2. :func:`~pytest_fabric.judge.blame.blame` judges them. What it cannot tell it asks to measure
   (``Blame.retests``); a link fault resting on the sweep alone is measured again too (a pair
   short in its round may be a one-off), for the checks whose family registered how one pair is
   measured (``inter_node.pair_check``). Those pairs are measured alone, in rounds of disjoint
   pairs (:func:`~pytest_fabric.measurements.inter_node.retest_alone`, the one retest mechanism
   the outlier checks and ``--lf`` use), and their figures join the sweep's: the same pair with
   more repeats. Then the same model judges everything again, at most :data:`RETEST_STEPS` times.
   The same figures always give the same verdict. Every repeat carries when it was measured
   (``Figure.rounds``): its sweep round, or its retest round's sample
   (:func:`~pytest_fabric.measurements.inter_node.alone_moment`), and its place in the
   measurement; the model reads a repeat low beside every pair measured with it as the machine's
   load, not the pair's. A retest round of one pair (a suspect with one of its helpers) has no pair
   beside it to read that by: it measures a *control pair* at the same moment, two healthy nodes in
   no retest (run/retests.py ``pick_controls``), whose figures join the model's like any retest's
   and show in the log as the control they are.
3. A link the sweep suggested that the pair alone cleared has its round run again, every pair of
   it at once (:func:`~pytest_fabric.measurements.inter_node.rerun_round`): short again is the
   fabric under load (pairs colliding on the spine), else a one-off counted for no one.
4. The ``attribution`` test of each node reads its class; ``fabric_attribution`` the fabric's
   findings, the links and what cannot be told, with the run that would tell.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_fabric.checks.attribution import ATTRIBUTION
from pytest_fabric.judge.blame import Blame, Failure, Figure, NodeBlame, Settings, blame
from pytest_fabric.judge.blame_inputs import BlameInput, figures_of, floors_of
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.measurements.inter_node import (
    RETEST_REPEATS,
    UNREACHABLE,
    ControlSample,
    all_pair_measurements,
    alone_moment,
    control_samples,
    has_pair_measure,
    measure_alone,
    rerun_round,
    retest_alone,
)
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import Cluster, NodeHandle
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.retests import control_pool
from pytest_fabric.run.state import CHECK_KEY, FabricState, get_state

__all__ = ["RETEST_STEPS", "RunBlame", "held_then_cleared", "run_blame"]

#: how often the model may ask for retests before its verdict stands (each step a set of rounds)
RETEST_STEPS = 2


@dataclass
class RunBlame:
    """The model's verdict on the run, and what was measured again for it (per node, for the messages)."""

    blame: Blame
    checks: tuple[str, ...]
    retests: dict[str, list[str]] = field(default_factory=dict)
    steps: int = 0
    #: pairs short in their round, as good as their peers alone, and short again in their round
    #: run again: the fabric under load (contention, routing, oversubscription), not a link
    under_load: list[str] = field(default_factory=list)
    #: pairs short in their round, good alone and in their round again: a one-off, counted for no one
    not_reproduced: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The findings that are no node's: links, the fabric, cannot tell, the unmeasured."""
        b = self.blame
        return {
            "verdict": "fails under load" if self.under_load and not b.fabric else fabric_verdict(b),
            "checks": list(self.checks),
            "send_back": list(b.send_back),
            "links": [{"series": lf.series, "nodes": list(lf.nodes), "message": lf.text} for lf in b.links],
            "fabric": list(b.fabric),
            "cannot_tell": [{"node": n.node, "message": n.message, "tell": n.tell}
                            for n in b.nodes.values() if n.kind == "cannot tell"],
            "unmeasured": [u.to_dict() for u in b.unmeasured],
            "under_load": list(self.under_load),
            "not_reproduced": list(self.not_reproduced),
            "retest_steps": self.steps,
        }


def fabric_verdict(b: Blame) -> str:
    """The whole fabric's class: ``fabric`` (a shortfall with no node pattern), ``cannot tell``, else ``ok``."""
    if b.fabric:
        return "fabric"
    if any(n.kind == "cannot tell" for n in b.nodes.values()):
        return "cannot tell"
    return "ok"


def _state(request: pytest.FixtureRequest) -> FabricState:
    state = get_state(request.config)
    assert state is not None
    return state


def _needs_every_node(request: pytest.FixtureRequest, state: FabricState) -> None:
    """Skip per-node attribution when the selection keeps only some nodes: a node is judged against
    a baseline of every pair it is not in, and pytest-fabric does not measure the cluster unasked."""
    selected = {
        info.nodes[0]
        for item in request.session.items
        if (info := item.stash.get(CHECK_KEY, None)) is not None and info.check == ATTRIBUTION.name and info.nodes
    }
    names = set(state.inventory.node_names)
    if selected and selected & names != names:
        pytest.skip(
            f"attribution judges each node against every pair of the cluster; the selection keeps it for "
            f"{len(selected & names)} of {len(names)} nodes and pytest-fabric does not measure the whole cluster "
            "unasked. Select attribution for every node (-k attribution) or none"
        )


def _fed(state: FabricState) -> dict[str, BlameInput]:
    """The run's pair checks that declare they feed the model, and how (``Check.blame``)."""
    return state.checks.blame_inputs()


def _checks(state: FabricState) -> list[str]:
    """The pair checks attribution reads: the one the profile names, else every pair check it sets
    (those its declaration does not sweep unasked where their pair tests are in the run)."""
    spec: Any = state.profile.spec_of(ATTRIBUTION)
    if spec is not None and spec.check:
        return [str(spec.check)]
    return [c for c, how in _fed(state).items() if _spec_of(state, c) is not None
            and (how.swept_unasked or state.selected(c, "node_pair"))]


def _spec_of(state: FabricState, check: str) -> Any:
    declared = state.checks.check_of(check)
    return state.profile.spec(declared.layer, declared.setting) if declared is not None else None


def _sweep(state: FabricState, check: str) -> dict[str, Measurement | BaseException]:
    """Every scheduled pair's result for ``check``: measured now where it can be, else what its rounds measured."""
    if has_pair_measure(check):
        return all_pair_measurements(state, check)
    out: dict[str, Measurement | BaseException] = {}
    for number in state.rounds_index():
        for key, outcome in state.batches.results(check, ("round", number)).items():
            if isinstance(outcome, (Measurement, BaseException)):
                out[key] = outcome
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


class _Inputs:
    """The figures, failures and unreachable nodes gathered so far, and how often each pair was retested."""

    def __init__(self, state: FabricState, reads: Sequence[str]) -> None:
        self.state = state
        self.how = {c: how for c, how in _fed(state).items() if c in reads}
        self.floors = {c: floors_of(state.profile.expectations("inter_node", c)) for c in reads}
        self.figures: list[Figure] = []
        self.failures: list[Failure] = []
        self.unreachable: dict[str, str] = {}
        self.taken: Counter[tuple[str, str, str]] = Counter()
        self.log: dict[str, list[str]] = {}
        #: (series, sender, receiver) -> every repeat measured alone
        self.alone: dict[tuple[str, str, str], list[float]] = {}
        #: the pairs the sweep measured short (:func:`short_pairs`), set once the sweep is read
        self.short: set[frozenset[str]] = set()

    def add(self, check: str, nodes: tuple[str, str], measured: Measurement | BaseException, at: str = "") -> list[Figure]:
        """``measured``'s figures (or its failure) kept; ``at``: the moment it was measured (its round's
        label, :func:`~pytest_fabric.judge.blame_inputs.figures_of`)."""
        if isinstance(measured, BaseException):
            if isinstance(measured, pytest.skip.Exception):
                return []  # a pair its check skipped measured nothing, and failed nothing
            named = getattr(measured, "node", None)
            charged = named if named in nodes else None
            if isinstance(measured, UNREACHABLE) and charged is not None:
                self.unreachable[charged] = getattr(measured, "detail", "") or _first_line(measured)
            self.failures.append(Failure(check, nodes, _first_line(measured), charged))
            return []
        found = figures_of(check, nodes, measured, self.floors[check], self.how[check], at)
        self.figures += found
        return found

    def judge(self) -> Blame:
        return blame(self.state.inventory.node_names, self.figures, failures=self.failures, unreachable=self.unreachable)


def _asks(verdict: Blame, taken: Mapping[tuple[str, str, str], int], step: int) -> dict[str, list[tuple[str, str]]]:
    """Per check, the (sender, receiver) pairs to measure alone in this step: what the model asks,
    and each link fault's own pair the first time (a link must not rest on one figure of the sweep)."""
    # the model's asks again in a later step (more repeats where it is still unsure); a link once
    wanted = {(series, a, b, step * RETEST_REPEATS) for series, a, b in verdict.retests}
    wanted |= {(lf.series, lf.nodes[0], lf.nodes[1], 0) for lf in verdict.links if len(lf.nodes) == 2}
    out: dict[str, list[tuple[str, str]]] = {}
    for series, a, b, most in sorted(wanted):
        check = series.split(" ", 1)[0]
        if not has_pair_measure(check) or taken.get((check, a, b), 0) > most:
            continue
        pairs = out.setdefault(check, [])
        if (a, b) not in pairs:
            pairs.append((a, b))
    return out


def _retest(state: FabricState, inputs: _Inputs, asks: Mapping[str, list[tuple[str, str]]], verdict: Blame) -> None:
    """Every asked pair measured alone ``RETEST_REPEATS`` more times, in rounds; their figures added,
    and those of the control pairs measured beside a round that had no contemporary for its pair."""
    pool = control_pool(state.inventory.node_names, {n: b.kind for n, b in verdict.nodes.items()}, verdict.suspects,
                        [p for pairs in asks.values() for p in pairs])
    for check, pairs in asks.items():
        by_count: dict[int, list[tuple[str, str]]] = {}
        for pair in pairs:
            by_count.setdefault(inputs.taken[(check, pair[0], pair[1])] + RETEST_REPEATS, []).append(pair)
        for count, group in sorted(by_count.items()):
            before = len(control_samples(state, check))
            retest_alone(state, check, group, count, short={frozenset(p) for p in group} & inputs.short,
                         control_pool=pool)
            _add_controls(inputs, check, control_samples(state, check)[before:])
            for a, b in group:
                start = inputs.taken[(check, a, b)]
                shown = []
                for n, sample in enumerate(measure_alone(state, check, a, b, count)[start:count], start):
                    figures = inputs.add(check, (a, b), sample, alone_moment(state, check, a, b, n))
                    for f in figures:
                        inputs.alone.setdefault((f.series, a, b), []).extend(f.repeats)
                    shown += [_show(f, inputs.how[check].unit) for f in figures] if figures else [f"no figure ({_first_line(sample)})"
                                                                           if isinstance(sample, BaseException) else "no figure"]
                inputs.taken[(check, a, b)] = count
                text = f"{a}->{b} {check} measured alone: {', '.join(shown)}"
                for end in (a, b):
                    inputs.log.setdefault(end, []).append(text)


def _add_controls(inputs: _Inputs, check: str, samples: Sequence[ControlSample]) -> None:
    """The control pairs' samples (:func:`~pytest_fabric.measurements.inter_node.retest_alone`) fed to the
    model like any retest's figure, at their round's moment: the model's figures of a healthy pair, which
    read that moment's load for the round's pair. Kept out of ``taken`` and ``alone`` (not the pair
    measured alone: a retest asked of it later measures its own samples). A control that produced no
    figure reads nothing and is charged to no one: it was not asked."""
    for sample in samples:
        a, b = sample.sender, sample.receiver
        if isinstance(sample.measured, BaseException):
            shown = [f"no figure ({_first_line(sample.measured)})"]
        else:
            figures = inputs.add(check, (a, b), sample.measured, sample.moment)
            shown = [_show(f, inputs.how[check].unit) for f in figures] or ["no figure"]
        text = (f"{a}->{b} {check}: control pair measured beside the retest round to read the machine's load "
                f"({sample.moment}): {', '.join(shown)}")
        for end in (a, b):
            inputs.log.setdefault(end, []).append(text)


def _middle(values: Sequence[float]) -> float:
    """The upper middle of ``values`` (a figure's, as the round judged it: no mean of two)."""
    return sorted(values)[len(values) // 2]


def short_pairs(figures: Sequence[Figure], min_drop: float) -> set[frozenset[str]]:
    """The pairs of ``figures`` (the sweep's) that fell short: a figure under its floor, or ``min_drop``
    under its series' median figure. Pure.

    Only these may have collided in their round, so only these are kept apart when measured again
    (:func:`~pytest_fabric.measurements.inter_node.retest_alone`'s ``short``). Every pair a step asks
    for was passed as short before: in a small series measured whole again, every two pairs of a
    sweep round were kept apart, and the four-node series' 72 retest samples ran one at a time.
    """
    by_series: dict[str, list[tuple[frozenset[str], float, float | None]]] = {}
    for f in figures:
        by_series.setdefault(f.series, []).append((frozenset(f.nodes), _middle(f.repeats), f.floor))
    out: set[frozenset[str]] = set()
    for series in by_series.values():
        middle = _middle([v for _, v, _ in series])
        out |= {pair for pair, v, floor in series if (floor is not None and v < floor) or v < (1 - min_drop) * middle}
    return out


def short_again(again: Sequence[Figure], alone: Mapping[str, Sequence[float]], min_drop: float) -> bool:
    """Is a pair, measured in its round again, short again: under its floor, or ``min_drop`` below
    its own figure alone (series -> its repeats alone)? Pure: the pair against itself, no model."""
    for f in again:
        figure = _middle(f.repeats)
        own = alone.get(f.series) or ()
        if f.floor is not None and figure < f.floor:
            return True
        if own and figure < (1 - min_drop) * _middle(own):
            return True
    return False


def steady(alone: Mapping[str, Sequence[float]], min_drop: float) -> bool:
    """Were a pair's repeats alone on one level (each series' lowest within ``min_drop`` of its
    highest)? Repeats on two levels are no evidence that the pair is good alone."""
    return bool(alone) and all(v and min(v) >= (1 - min_drop) * max(v) for v in alone.values())


def held_then_cleared(first: Blame, final: Blame) -> list[tuple[str, tuple[str, ...]]]:
    """(series, nodes) of what the sweep alone held against a pair, a link or a figure its fabric finding
    counted (``Blame.fabric_pairs``), that the verdict after the retests clears: the pair no longer held,
    both its ends healthy or the fabric's. Each has its round run again. Pure."""
    kept = {(lf.series, lf.nodes) for lf in final.links} | {(s, (a, b)) for s, a, b in final.fabric_pairs}
    held = [(lf.series, lf.nodes) for lf in first.links] + [(s, (a, b)) for s, a, b in first.fabric_pairs]
    return [(series, nodes) for series, nodes in held if (series, nodes) not in kept and all(
        final.nodes.get(n) is not None and final.nodes[n].kind in ("healthy", "fabric") for n in nodes)]


def _rounds_again(state: FabricState, inputs: _Inputs, first: Blame, result: RunBlame) -> None:
    """The links, and the figures a fabric finding counted, that the sweep alone suggested and the pairs
    alone cleared: each one's round run again (every pair of it at once, as in the sweep): short again
    is the fabric under load, else a one-off."""
    final = result.blame
    min_drop = Settings().min_drop
    scheduled = {frozenset((p.a, p.b)): p.id for p in state.pairs}
    for held, nodes in held_then_cleared(first, final):
        a, b = nodes[0], nodes[-1]
        check = held.split(" ", 1)[0]
        key = frozenset((a, b))
        if key not in scheduled or not has_pair_measure(check):
            continue
        pair_id = scheduled[key]
        alone = {series: v for (series, x, y), v in inputs.alone.items() if (x, y) == (a, b)}
        if pair_id in result.under_load or pair_id in result.not_reproduced or not steady(alone, min_drop):
            continue  # another rail of the same pair; or alone it was not steadily good either
        again = rerun_round(state, check, pair_id)
        figures = [] if isinstance(again, BaseException) else figures_of(check, (a, b), again, inputs.floors[check],
                                                                         inputs.how[check])
        if isinstance(again, BaseException) or short_again(figures, alone, min_drop):
            result.under_load.append(pair_id)
        else:
            result.not_reproduced.append(pair_id)
    result.under_load.sort()
    result.not_reproduced.sort()


def _show(f: Figure, unit: str) -> str:
    rail = f"{f.rail} " if f.rail else ""
    return f"{rail}{', '.join(f'{v:.3g}' for v in f.repeats)} {unit}"


def run_blame(state: FabricState) -> RunBlame:
    """The model's verdict on every pair check of the run, retests included: computed once per run."""

    def judge() -> RunBlame:
        reads = _checks(state)
        if not reads:  # a skip: not kept, each test skips for itself
            pytest.skip(f"attribution reads the pair checks ({', '.join(_fed(state))}); profile {state.profile.name} "
                        "sets none")
        inputs = _Inputs(state, reads)
        names = {p.id: (p.a, p.b) for p in state.pairs}
        rounds = {p.id: p.round for p in state.pairs}
        for check in reads:
            for key, measured in sorted(_sweep(state, check).items()):
                if key in names:
                    # every pair of a sweep round is measured at once (run/waves.py): one moment
                    inputs.add(check, names[key], measured, f"{check} sweep round {rounds[key]}")
        inputs.short = short_pairs(inputs.figures, Settings().min_drop)
        verdict = inputs.judge()
        first = verdict
        spec: Any = state.profile.spec_of(ATTRIBUTION)
        steps = 0
        if spec is None or spec.retest:
            for step in range(RETEST_STEPS):
                asks = _asks(verdict, inputs.taken, step)
                if not asks:
                    break
                _retest(state, inputs, asks, verdict)
                steps += 1
                verdict = inputs.judge()
        result = RunBlame(verdict, tuple(reads), inputs.log, steps)
        _rounds_again(state, inputs, first, result)
        return result

    return state.once.get(ATTRIBUTION.name, None, judge)


_ADVICE = {
    "node fault": "Send {n} to the provider (check its HCA ports, cables to the leaf, PCIe link, GPUs and firmware)",
    "unstable": ("Send {n} to the provider: a rail or link of it retrains (check its cable and transceiver, and the "
                 "port's LinkDowned and LinkErrorRecovery counters)"),
}


def node_message(nb: NodeBlame, retests: Sequence[str]) -> str:
    """One node's class in words, with the model's reasons, what was measured again and what to do."""
    n = nb.node
    again = f"; re-measured alone: {'; '.join(retests)}" if retests else ""
    if nb.kind in _ADVICE:
        how = {"send": " when it sends", "receive": " when it receives", "both": " in both directions"}.get(nb.direction or "", "")
        head = f"{n}: a node fault{how}" if nb.kind == "node fault" else f"{n} is unstable"
        return f"{head}. {_ADVICE[nb.kind].format(n=n)}. {nb.message}{again}"
    if nb.kind == "link fault":
        peers = sorted({p for f in nb.findings if f.kind == "link fault" for p in f.peers})
        paths = " and ".join(f"{n} and {p}" for p in peers)
        return (f"{n}: a link fault, not the node: send the cable/switch path between {paths} to the provider. "
                f"{nb.message}{again}")
    if nb.kind == "cannot tell":
        return f"{n}: cannot tell node from link. {nb.message}; {nb.tell}{again}"
    if nb.kind == "fabric":
        return f"not attributed to {n}: a shortfall of the fabric (see fabric_attribution). {nb.message}{again}"
    return f"{nb.message}{again}"


@pytest.fixture
def attribution(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """The node's class: ok, node fault, unstable, link fault or cannot tell (an error when not measured)."""
    spec(ATTRIBUTION)
    state = _state(request)
    _needs_every_node(request, state)
    result = run_blame(state)
    missing = {u.node: u for u in result.blame.unmeasured}
    if node.name in missing:
        # Nothing measured for this node: that is an error, never a verdict on it.
        u = missing[node.name]
        unreachable = u.reason.startswith("could not be reached")
        text = (f"{node.name} is unreachable ({u.reason}): not a node fault, and not held against its peers" if unreachable
                else f"{node.name}: {u.reason}, so there is nothing to attribute (held against neither it nor its peers)")
        raise MeasurementError(node.name, text, fix=u.fix)
    nb = result.blame.nodes.get(node.name)
    if nb is None:
        raise MeasurementError(node.name, f"no pair check measured {node.name} (it has no pair in the schedule)",
                               fix=f"schedule pairs with {node.name} (inventory pairs) and run again")
    value = "ok" if nb.kind in ("healthy", "fabric") else nb.kind
    record = {**nb.to_dict(), "retests": list(result.retests.get(node.name, []))}
    return Measurement(value=value, detail=node_message(nb, result.retests.get(node.name, [])),
                       extra={"attribution": record})


@pytest.fixture
def fabric_attribution(request: pytest.FixtureRequest, cluster: Cluster, spec: SpecLookup) -> Measurement:
    """What no node is blamed for, stated once: the fabric's shortfalls, the link faults, what cannot be told."""
    spec(ATTRIBUTION)
    result = run_blame(_state(request))
    found = result.to_dict()
    parts = []
    if found["fabric"]:
        parts.append("fabric-wide shortfall (the fabric or the profile's floor, not the nodes): " + "; ".join(found["fabric"]))
    if found["links"]:
        parts.append("link faults: " + "; ".join(lf["message"] for lf in found["links"]))
    if found["cannot_tell"]:
        parts.append("cannot tell: " + "; ".join(f"{c['node']}: {c['tell']}" for c in found["cannot_tell"]))
    if found["under_load"]:
        parts.append(f"fails under load: {', '.join(found['under_load'])} fell short inside their round, were as good "
                     "as their peers alone, and fell short in their round again: contention, routing or "
                     "oversubscription of the fabric (static routes collide on spine links), not a node or a cable; "
                     "check the fabric's routing and its oversubscription (see the oversubscription check)")
    if found["not_reproduced"]:
        parts.append(f"not reproduced (a one-off, not counted): {', '.join(found['not_reproduced'])}")
    detail = " | ".join(parts) or (f"no fabric-wide finding ({', '.join(result.checks)}; nodes to send back: "
                                   f"{', '.join(found['send_back']) or 'none'})")
    return Measurement(value=found["verdict"], detail=detail, extra={"fabric_attribution": found})
