"""What each pair check hands the blame model: its measurements as :class:`~pytest_fabric.judge.blame.Figure` values.

Pure: a measurement, the profile's floors and how the check declares its figures
(:class:`BlameInput`, its declaration's ``Check.blame``) in, figures out. Every pair check feeds
:func:`~pytest_fabric.judge.blame.blame` through here, in the unit it declares: one figure per pair
(TCP, multi-node NCCL, whose pair has no direction), or one per part of the pair named in the
measurement's ``extra`` (RDMA's ``rails``, each rail a series of its own, every run of ib_write_bw
kept as a repeat, the floor resolved against that rail's line rate; GPUDirect's ``gpus``, a series
per GPU name: GPU0 of every node is measured over the same kind of path).

A measurement that is not a number (a missing port, wrong results) gives no figure: its own test
fails it, and the nodes it names are judged on their other figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_fabric.config.units import Quantity, QuantityError, bandwidth
from pytest_fabric.judge.blame import Figure
from pytest_fabric.judge.verdict import Expectation, Measurement, Op

__all__ = ["BlameInput", "figures_of", "floors_of"]


@dataclass(frozen=True)
class BlameInput:
    """How a pair check feeds the blame model, as its declaration says (``Check.blame``).

    ``unit``: the unit its figures are compared in; ``directed``: its pair has a sender and a receiver
    (an NCCL ring has neither); ``parts``: the list in the measurement's ``extra`` holding one figure
    per part of the pair (``"rails"``, ``"gpus"``), each a series of its own (empty: one figure per
    pair); ``part_name``: the key naming a part's series (``"gpu"``; empty: the rail's two ends);
    ``swept_unasked``: attribution measures the check's sweep itself when its own tests are not
    selected (a sweep that needs more than the pair, a node's GPUs or topology, is only read).
    """

    unit: str
    directed: bool = True
    parts: str = ""
    part_name: str = ""
    swept_unasked: bool = False


def floors_of(expectations: Sequence[Expectation]) -> list[Quantity]:
    """The floors (``min``) among a check's expectations; a floor may be a share of line rate."""
    return [e.value for e in expectations if e.op is Op.MIN and isinstance(e.value, Quantity)]


def _floor(floors: Sequence[Quantity], unit: str, line: Quantity | None) -> float | None:
    """The highest floor in ``unit``; a ``90% line`` floor against ``line`` (None without one)."""
    out: list[float] = []
    for floor in floors:
        try:
            if floor.is_line_share:
                if line is not None:
                    out.append(float(floor.of(line).to(unit)))
            else:
                out.append(float(floor.to(unit)))
        except QuantityError:
            continue  # a floor of another dimension is no floor of this figure
    return max(out) if out else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def figures_of(check: str, nodes: Sequence[str], measured: Measurement, floors: Sequence[Quantity],
               how: BlameInput, at: str = "") -> list[Figure]:
    """``measured`` (``nodes`` measured together, sender first) as the model's figures, as ``check``
    declares them (``how``). ``at``: the moment it was measured, beside every other pair measured
    then (a sweep round, a retest round's sample; empty: not known): each repeat is labelled with it
    and its place (:func:`_rounds`)."""
    unit = how.unit
    directed = how.directed
    group = tuple(nodes)
    parts: list[Mapping[str, Any]] = []
    if how.parts:
        parts = [r for r in measured.extra.get(how.parts) or [] if isinstance(r, Mapping)]
    if parts:
        out = []
        for part in parts:
            figure = _number(part.get("gbps"))
            if figure is None:
                continue
            repeats = tuple(v for r in part.get("repeats") or [] if (v := _number(r)) is not None) or (figure,)
            line = _number(part.get("line_gbps"))
            rail = str(part.get(how.part_name)) if how.part_name else _rail(part)
            out.append(Figure(check, group, repeats, _floor(floors, unit, bandwidth(line, "Gb/s") if line else measured.line_rate),
                              rail, directed, _rounds(at, len(repeats))))
        return out
    if not isinstance(measured.value, Quantity) or measured.missing is not None:
        return []
    try:
        samples = [float(s.to(unit)) for s in measured.samples] or [float(measured.value.to(unit))]
    except QuantityError:
        return []
    repeats = tuple(v for v in samples if v > 0)
    if not repeats:
        return []
    return [Figure(check, group, repeats, _floor(floors, unit, measured.line_rate), "", directed, _rounds(at, len(repeats)))]


def _rounds(at: str, count: int) -> tuple[str, ...]:
    """The round labels of a measurement's ``count`` repeats: the pairs of a round start together and
    repeat one after another (ib_write_bw run after run), so repeat j of every pair of the round runs
    at once: the moment and j. Empty where the moment is not known."""
    return tuple(f"{at} repeat {j}" for j in range(count)) if at else ()


def _rail(part: Mapping[str, Any]) -> str:
    """A rail's name in every pair: the port's, when both ends name it alike (mlx5_0 to mlx5_0)."""
    a, b = str(part.get("a")), str(part.get("b"))
    return a if a == b else f"{a}/{b}"
