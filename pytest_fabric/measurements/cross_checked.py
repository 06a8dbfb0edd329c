"""A pair check's measurement held against another check's figure of the same hardware (judge/cross_checks.py).

Wired into the fixtures of the checks whose declaration says another check's figure bounds theirs
(``Check.bounded_by``, a :class:`~pytest_fabric.judge.cross_checks.Bound`): which check, by which
relation (the sum of its rails between the same nodes, its rail between the same ports, its rail on
the port under the netdev) and with what tolerance. Only where the run has both figures: the
bounding check must be selected for the same pair; its round is then measured when first asked,
here or by its own test, whichever comes first (the suite may run the bounded check first), never
twice, and never inside another check's batch (these run after the caller's round is done). Each
cross-check that ran is listed in the measurement's ``extra.cross_checks`` and its detail; an
impossible figure fails the check as inconsistent on the node whose tool printed it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from pytest_fabric.checks.base import Check
from pytest_fabric.judge import cross_checks
from pytest_fabric.judge.cross_checks import Bound, CrossCheck
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers import rdma_link
from pytest_fabric.probes.base import parse_or_raise
from pytest_fabric.probes.netdev import data_interface
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.run.pairs import Pair
from pytest_fabric.run.state import FabricState
from pytest_fabric.run.waves import measure_batched

__all__ = ["bounded", "rails_of"]


#: how a check measures one pair (measurements/inter_node.py's ``measure_function``, passed in: it imports this module)
MeasureFunction = Callable[[FabricState, str], Callable[[NodePair], Measurement]]


def rails_of(state: FabricState, by: str, pair: NodePair, measure_function: MeasureFunction, *,
             whole: bool = False) -> dict[str, dict[str, Any]] | str:
    """Check ``by``'s rails of ``pair`` (``{"mlx5_0/1->mlx5_0/1": {"a": ..., "gbps": ...}}``), or why there are none.

    Measured now when the run selects ``by`` for this pair and its round was not measured yet.
    """
    if state.cluster is None or not _has_rails(state, by, pair):
        return f"{by} is not measured for {pair.id} in this run"
    scheduled = Pair(round=pair.round, slot=pair.slot, a=pair.a.name, b=pair.b.name)
    try:
        measured = measure_batched(state, by, "node_pair", scheduled, measure_function(state, by), whole=whole)
    except Exception as exc:  # its own test reports it; here it is only a figure that is not there
        return f"{by} of {pair.id} could not be measured ({str(exc).splitlines()[0][:200]})"
    rails = measured.extra.get("rails") or []
    found = {f"{r['a']}->{r['b']}": r for r in rails if isinstance(r, dict) and r.get("gbps") is not None}
    return found or f"{by} of {pair.id} measured no rail"


def _has_rails(state: FabricState, by: str, pair: NodePair) -> bool:
    """Whether the run measures check ``by`` for ``pair``: a cross-check with it runs only then."""
    selected = state.selected(by, "node_pair")
    return bool(selected) and pair.id in selected  # type: ignore[operator]


def bounded(state: FabricState, check: Check[Any], pair: NodePair, measured: Measurement,
            measure_function: MeasureFunction, *, whole: bool = False) -> Measurement:
    """``measured``, ``check``'s figure of ``pair``, held to the figure its declaration says bounds it
    (``Check.bounded_by``); unchanged where it declares none."""
    bound = check.bounded_by
    if bound is None:
        return measured
    hold = _RELATIONS[bound.relation]
    return hold(state, bound, pair, measured, measure_function, whole)


def _with(measured: Measurement, found: Sequence[CrossCheck]) -> Measurement:
    """``measured`` with the cross-checks in its extra and detail, failed by an inconsistent one."""
    failed = cross_checks.failure(found)
    missing = measured.missing
    if failed is not None:
        missing = f"{missing}; {failed}" if missing else failed
    detail = f"{measured.detail}; {cross_checks.summary(found)}" if measured.detail else cross_checks.summary(found)
    return dataclasses.replace(measured, detail=detail, missing=missing,
                               extra={**measured.extra, "cross_checks": [c.to_dict() for c in found]})


def _figure_gbps(measured: Measurement) -> float | None:
    try:
        return float(measured.value.to("Gb/s"))  # type: ignore[union-attr]
    except (AttributeError, ValueError):
        return None  # an absent figure (a failed run) is bounded by nothing


def _rails_sum(state: FabricState, bound: Bound, pair: NodePair, measured: Measurement,
               measure_function: MeasureFunction, whole: bool) -> Measurement:
    """The pair's bus bandwidth against the sum of the rails ``bound.by`` measured between the same nodes."""
    gbps = _figure_gbps(measured)
    if gbps is None or not _has_rails(state, bound.by, pair):
        return measured
    rails = rails_of(state, bound.by, pair, measure_function, whole=whole)
    if isinstance(rails, str):
        found = CrossCheck("nccl vs rails", pair.a.name, cross_checks.NOT_RUN, rails, gbps, None)
    else:
        found = cross_checks.nccl_against_rails(pair.a.name, gbps / 8, {k: float(r["gbps"]) for k, r in rails.items()},
                                                by=bound.by, tolerance=bound.tolerance, below=bound.below)
    return _with(measured, [found])


def _same_ports(state: FabricState, bound: Bound, pair: NodePair, measured: Measurement,
                measure_function: MeasureFunction, whole: bool) -> Measurement:
    """Each GPU's figure (``extra["gpus"]``) against ``bound.by``'s rail between the same two ports."""
    gpus = [g for g in measured.extra.get("gpus") or [] if isinstance(g, dict) and g.get("gbps") is not None]
    if not gpus or not _has_rails(state, bound.by, pair):
        return measured
    rails = rails_of(state, bound.by, pair, measure_function, whole=whole)
    if isinstance(rails, str):
        found = [CrossCheck("gpudirect vs host rdma", pair.a.name, cross_checks.NOT_RUN, rails)]
        return _with(measured, found)
    by_devices = {(r["a"].split("/")[0], r["b"].split("/")[0]): float(r["gbps"]) for r in rails.values()}
    found = [cross_checks.gpudirect_against_host(pair.a.name, f"{g['gpu']} via {g['a']}->{g['b']}", float(g["gbps"]),
                                                 by_devices.get((g["a"], g["b"])), by=bound.by,
                                                 tolerance=bound.tolerance)
             for g in gpus]
    return _with(measured, found)


def _port_under(state: FabricState, node: NodeHandle, interface: str) -> str | None:
    """The RDMA port (``mlx5_0/1``) whose netdev is ``interface`` on ``node``, from ``rdma link``; None if none is."""

    def read() -> dict[str, str]:
        try:
            result = node.run("rdma link show", timeout=15, check=False)
            links = parse_or_raise(rdma_link.parse_rdma_link, result) if result.exit_code == 0 else []
        except Exception:  # unreachable (the TCP check says so), no rdma tool, or nothing it knows: no port
            return {}
        return {link.netdev: f"{link.device}/{link.port}" for link in links if link.netdev}

    return state.once.get("rdma ports by netdev", node.name, read).get(interface)


def _port_under_netdev(state: FabricState, bound: Bound, pair: NodePair, measured: Measurement,
                       measure_function: MeasureFunction, whole: bool) -> Measurement:
    """The pair's TCP figure against ``bound.by``'s figure of the port under the client's data interface."""
    gbps = _figure_gbps(measured)
    if gbps is None or not _has_rails(state, bound.by, pair):
        return measured  # no RDMA figure of this pair in the run: not even its ports are asked
    try:
        interface, _ = data_interface(pair.a, state.once)
    except Exception:  # the TCP check itself reports an interface it cannot find
        return measured
    port = _port_under(state, pair.a, interface)
    if port is None:
        found = cross_checks.tcp_against_rdma(pair.a.name, interface, None, gbps, None, by=bound.by,
                                              tolerance=bound.tolerance)
        return _with(measured, [found])
    rails = rails_of(state, bound.by, pair, measure_function, whole=whole)
    if isinstance(rails, str):
        found = CrossCheck("tcp vs rdma", pair.a.name, cross_checks.NOT_RUN,
                           f"TCP ran over {interface} ({port}); {rails}",
                           gbps, None)
        return _with(measured, [found])
    on_port = [float(r["gbps"]) for r in rails.values() if r["a"] == port]
    return _with(measured, [cross_checks.tcp_against_rdma(pair.a.name, interface, port, gbps,
                                                          on_port[0] if on_port else None, by=bound.by,
                                                          tolerance=bound.tolerance)])


_Hold = Callable[[FabricState, Bound, NodePair, Measurement, MeasureFunction, bool], Measurement]
#: each relation a declaration may name (judge/cross_checks.py ``Relation``), and how it is held
_RELATIONS: dict[str, _Hold] = {"rails_sum": _rails_sum, "same_ports": _same_ports, "port_under": _port_under_netdev}
