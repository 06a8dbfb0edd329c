"""Node x node (and GPU x GPU) heatmaps as inline SVG.  Pure: records in, an SVG string out.

No JavaScript and no fonts or images from the network: the SVG is plain
markup the HTML report embeds, so it reads the same offline, in a mail
attachment, or printed.  Every cell carries a ``<title>`` (the browser's
tooltip) with the pair, the value, the expectation and the outcome; a failing
cell is outlined in red and hatched so it stands out without colour vision.

Up to :data:`MAX_NODES` nodes are drawn one cell per pair.  Beyond that a cell
per pair is too small to read, so nodes are grouped by their ``leaf`` label
(or, without labels, in blocks of consecutive nodes): a cell is the median of
its pairs, failing when any of its pairs failed, and the worst cell is marked.
"""

from __future__ import annotations

import html
import math
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_fabric.report.summary import (
    format_expected,
    format_number,
    higher_is_better,
    numeric_value,
)

__all__ = ["MAX_NODES", "Cell", "Grid", "matrix_heatmaps", "pair_grid", "pair_heatmaps", "render_svg"]

MAX_NODES = 64

# A cell's outline by its class: white, red for a failing or unmeasured pair, black for the worst.
_CELL_STYLE = (".fabric-cell>rect{stroke:#fff;stroke-width:.5}"
               ".fabric-cell-failed>rect,.fabric-cell-error>rect{stroke:#e00000;stroke-width:2}"
               ".fabric-cell-worst>rect{stroke:#000;stroke-width:3}")

# viridis, sampled: perceptually even and readable in grey and by colour-blind readers.
_RAMP = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"]


@dataclass
class Cell:
    """One cell: a value (or None for an error), whether it failed, and its tooltip."""

    value: float | None
    failed: bool = False
    error: bool = False
    title: str = ""
    worst: bool = False  # marked: the worst cell of an aggregated map


@dataclass
class Grid:
    """A labelled square (or rectangular) matrix of cells, ready to draw."""

    rows: list[str]
    cols: list[str]
    cells: dict[tuple[int, int], Cell] = field(default_factory=dict)
    unit: str = ""
    higher_is_better: bool = True
    note: str = ""  # e.g. how nodes were aggregated
    threshold: float | None = None  # the expectation, in ``unit``: drawn on the legend, kept inside the colour range


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _natural_key(s: str) -> list[Any]:
    # node2 before node10, as people number racks.
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _pair_records(checks: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    """Pair checks grouped by check name: two nodes and a measured number, or an error."""
    out: dict[str, list[Mapping[str, Any]]] = {}
    for c in checks:
        nodes = c.get("nodes") or []
        if len(nodes) != 2 or nodes[0] == nodes[1]:
            continue
        if numeric_value(c.get("measured")) is None and c.get("outcome") != "error":
            continue
        out.setdefault(str(c.get("check")), []).append(c)
    return out


def _pair_title(c: Mapping[str, Any]) -> str:
    a, b = c["nodes"]
    outcome = str(c.get("outcome"))
    if outcome == "error":
        return f"{a} <-> {b}: ERROR: {c.get('message', '')}"[:400]
    m = c.get("measured") or {}
    text = f"{a} <-> {b}: {format_number(m['value'])} {m.get('unit') or ''}".rstrip()
    expected = format_expected(c.get("expected"))
    if expected:
        text += f" (expected {expected})"
    return f"{text} {outcome.upper()}"


def pair_grid(
    checks: Sequence[Mapping[str, Any]],
    nodes: Sequence[str] = (),
    labels: Mapping[str, Mapping[str, str]] | None = None,
    max_nodes: int = MAX_NODES,
) -> Grid:
    """The node x node grid of one pair check; aggregated by leaf when there are more than ``max_nodes``."""
    labels = labels or {}
    involved = {n for c in checks for n in c["nodes"]}
    order = [n for n in nodes if n in involved] + sorted(involved - set(nodes), key=_natural_key)
    unit = next((str((c.get("measured") or {}).get("unit") or "") for c in checks if c.get("measured")), "")
    better_high = higher_is_better(checks[0]) if checks else True
    threshold = _threshold(checks, unit)
    if len(order) <= max_nodes:
        index = {n: i for i, n in enumerate(order)}
        grid = Grid(order, order, unit=unit, higher_is_better=better_high, threshold=threshold)
        for c in checks:
            a, b = c["nodes"]
            cell = Cell(
                numeric_value(c.get("measured")),
                failed=c.get("outcome") == "failed",
                error=c.get("outcome") == "error",
                title=_pair_title(c),
            )
            # A pair is measured once; draw it on both sides so a node's row reads complete.
            grid.cells[(index[a], index[b])] = cell
            grid.cells[(index[b], index[a])] = cell
        return grid
    grid = _aggregate(checks, order, labels, max_nodes, unit, better_high)
    grid.threshold = threshold
    return grid


def _threshold(checks: Sequence[Mapping[str, Any]], unit: str) -> float | None:
    for c in checks:
        e = c.get("expected") or {}
        if numeric_value(e) is not None and (e.get("unit") or "") == unit:
            return numeric_value(e)
    return None


def _groups(order: Sequence[str], labels: Mapping[str, Mapping[str, str]], max_nodes: int) -> tuple[dict[str, str], str]:
    leaves = {n: labels.get(n, {}).get("leaf") for n in order}
    distinct = {v for v in leaves.values() if v}
    if distinct and len(distinct) + 1 <= max_nodes:
        return ({n: (leaf or "(no leaf)") for n, leaf in leaves.items()}, "leaf")
    # Without leaf labels, consecutive blocks keep neighbours (usually rack-mates) together.
    size = math.ceil(len(order) / max_nodes)
    group = {}
    for i, n in enumerate(order):
        start = (i // size) * size
        group[n] = f"{order[start]}..{order[min(start + size, len(order)) - 1]}"
    return group, f"block of {size} consecutive nodes"


def _aggregate(
    checks: Sequence[Mapping[str, Any]],
    order: Sequence[str],
    labels: Mapping[str, Mapping[str, str]],
    max_nodes: int,
    unit: str,
    better_high: bool,
) -> Grid:
    group, how = _groups(order, labels, max_nodes)
    names: list[str] = []
    for n in order:
        if group[n] not in names:
            names.append(group[n])
    if how == "leaf":
        names.sort(key=_natural_key)
    index = {g: i for i, g in enumerate(names)}
    buckets: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    for c in checks:
        i, j = sorted((index[group[c["nodes"][0]]], index[group[c["nodes"][1]]]))
        buckets.setdefault((i, j), []).append(c)
    grid = Grid(names, names, unit=unit, higher_is_better=better_high)
    grid.note = (
        f"{len(order)} nodes, more than {max_nodes}: one cell per {how} pair, showing the median of "
        "its node pairs; hatched cells hold at least one failing pair; the worst cell is marked with a thick border."
    )
    worst_key: tuple[int, int] | None = None
    worst_value: float | None = None
    for (i, j), cs in buckets.items():
        values = [v for v in (numeric_value(c.get("measured")) for c in cs) if v is not None]
        failed = [c for c in cs if c.get("outcome") == "failed"]
        errors = [c for c in cs if c.get("outcome") == "error"]
        median = statistics.median(values) if values else None
        worst_pair = None
        if values:
            pick = min if better_high else max
            worst_pair = pick((c for c in cs if numeric_value(c.get("measured")) is not None),
                              key=lambda c: numeric_value(c.get("measured")) or 0.0)
        title = f"{names[i]} x {names[j]}: {len(cs)} pairs"
        if median is not None:
            title += f", median {format_number(median)} {unit}"
        if worst_pair is not None:
            title += f"; worst {_pair_title(worst_pair)}"
        if failed:
            title += f"; {len(failed)} failed"
        if errors:
            title += f"; {len(errors)} errored"
        cell = Cell(median, failed=bool(failed), error=median is None, title=title)
        grid.cells[(i, j)] = cell
        grid.cells[(j, i)] = cell
        if median is not None and (
            worst_value is None or (median < worst_value if better_high else median > worst_value)
        ):
            worst_key, worst_value = (i, j), median
    if worst_key is not None:
        grid.cells[worst_key].worst = True
    return grid


def _colour(t: float) -> str:
    t = min(1.0, max(0.0, t))
    pos = t * (len(_RAMP) - 1)
    i = min(int(pos), len(_RAMP) - 2)
    f = pos - i
    a, b = _RAMP[i], _RAMP[i + 1]
    rgb = [round(int(a[k:k + 2], 16) * (1 - f) + int(b[k:k + 2], 16) * f) for k in (1, 3, 5)]
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def render_svg(grid: Grid, *, title: str, id_prefix: str) -> str:
    """Draw a grid as a standalone ``<svg>``: labels, cells with tooltips, failing cells hatched, a legend.

    ``id_prefix`` keeps the hatch pattern's id unique when many SVGs share one page.
    """
    pid = re.sub(r"[^A-Za-z0-9_-]", "_", id_prefix)
    n_rows, n_cols = len(grid.rows), len(grid.cols)
    longest = max(n_rows, n_cols, 1)
    cs = max(10, min(36, 720 // longest))  # 64 nodes -> 11 px cells, 4 nodes -> 36 px
    font = max(8, min(12, cs - 2))
    label_w = int(max((len(s) for s in grid.rows + grid.cols), default=4) * font * 0.62) + 8
    top = label_w + 24  # column labels are written upwards
    left = label_w
    width = left + n_cols * cs + 230
    height = max(top + n_rows * cs + 16, top + 150)
    values = [c.value for c in grid.cells.values() if c.value is not None]
    if grid.threshold is not None:
        # With the expectation inside the range, colour says how close to it a pair is, not
        # merely how it ranks: 1.9 us and 2.4 us against a 2.5 us ceiling are both fine.
        values.append(grid.threshold)
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    span = (hi - lo) or 1.0

    out = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" class="fabric-heatmap" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}" font-family="Helvetica, Arial, sans-serif">'),
        f"<title>{_e(title)}</title>",
        (f'<defs><pattern id="{pid}-hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
         'patternTransform="rotate(45)"><rect width="6" height="6" fill="none"/>'
         '<line x1="0" y1="0" x2="0" y2="6" stroke="#ffffff" stroke-width="2.5" stroke-opacity="0.9"/></pattern>'
         # Empty cells are one background of this tile, not a rect each: with random pairing most
         # of a 64-node grid is empty, and 4,000 rects per map were most of the page's weight.
         f'<pattern id="{pid}-empty" x="{left}" y="{top}" width="{cs}" height="{cs}" patternUnits="userSpaceOnUse">'
         f'<rect width="{cs}" height="{cs}" fill="#e8e8e8" stroke="#fff" stroke-width="0.5"/></pattern>'
         # One hatched tile every failing cell reuses, and the cells' outlines by class: written once a
         # map rather than on each of 500 cells (the map stays self-contained, its style inside it).
         f'<rect id="{pid}-h" width="{cs}" height="{cs}" fill="url(#{pid}-hatch)" pointer-events="none"/></defs>'
         f"<style>{_CELL_STYLE}</style>"),
        f'<text x="4" y="14" font-size="13" font-weight="bold" fill="#000">{_e(title)}</text>',
    ]
    for i, name in enumerate(grid.rows):
        y = top + i * cs + cs / 2 + font / 3
        out.append(f'<text x="{left - 4}" y="{y:.1f}" font-size="{font}" text-anchor="end" fill="#000">{_e(name)}</text>')
    for j, name in enumerate(grid.cols):
        x = left + j * cs + cs / 2 + font / 3
        out.append(
            f'<text x="{x:.1f}" y="{top - 4}" font-size="{font}" fill="#000" '
            f'transform="rotate(-90 {x:.1f} {top - 4})">{_e(name)}</text>'
        )
    out.append(f'<rect x="{left}" y="{top}" width="{n_cols * cs}" height="{n_rows * cs}" fill="url(#{pid}-empty)"/>')
    for i in range(n_rows):
        for j in range(n_cols):
            x, y = left + j * cs, top + i * cs
            cell = grid.cells.get((i, j))
            if cell is None:
                if grid.rows[i] == grid.cols[j]:
                    out.append(f'<rect x="{x}" y="{y}" width="{cs}" height="{cs}" fill="#cccccc" stroke="#fff" '
                               'stroke-width="0.5"/>')
                continue
            if cell.value is None:
                fill = "#555555"
            else:
                t = (cell.value - lo) / span
                fill = _colour(t if grid.higher_is_better else 1 - t)
            cls = "fabric-cell" + (" fabric-cell-failed" if cell.failed else "") + (
                " fabric-cell-error" if cell.error else "") + (" fabric-cell-worst" if cell.worst else "")
            out.append(
                f'<g class="{cls}"><title>{_e(cell.title)}</title>'
                f'<rect x="{x}" y="{y}" width="{cs}" height="{cs}" fill="{fill}"/>'
            )
            if cell.failed or cell.error:
                out.append(f'<use href="#{pid}-h" x="{x}" y="{y}"/>')
            out.append("</g>")
    out.append(_legend(left + n_cols * cs + 16, top, lo, hi, grid, pid))
    out.append("</svg>")
    return "".join(out)


def _legend(x: int, y: int, lo: float, hi: float, grid: Grid, pid: str) -> str:
    h = 100
    parts = ['<g class="fabric-legend" font-size="11" fill="#000">']
    steps = 20
    for k in range(steps):
        t = 1 - k / (steps - 1)  # top of the bar is the best value
        parts.append(f'<rect x="{x}" y="{y + k * h / steps:.1f}" width="14" height="{h / steps + 0.5:.1f}" '
                     f'fill="{_colour(t)}"/>')
    best, worst = (hi, lo) if grid.higher_is_better else (lo, hi)
    parts.append(f'<text x="{x + 18}" y="{y + 9}">{_e(format_number(best))} {_e(grid.unit)} (best)</text>')
    parts.append(f'<text x="{x + 18}" y="{y + h}">{_e(format_number(worst))} {_e(grid.unit)}</text>')
    if grid.threshold is not None and hi > lo:
        t = (grid.threshold - lo) / (hi - lo)
        ty = y + (1 - (t if grid.higher_is_better else 1 - t)) * h
        op = ">=" if grid.higher_is_better else "<="
        parts.append(f'<line x1="{x - 4}" y1="{ty:.1f}" x2="{x + 18}" y2="{ty:.1f}" stroke="#e00000" stroke-width="2"/>'
                     f'<text x="{x + 22}" y="{min(max(ty + 4, y + 24), y + h - 14):.1f}" fill="#e00000">expected {op} '
                     f'{_e(format_number(grid.threshold))} {_e(grid.unit)}</text>')
    parts.append(f'<rect x="{x}" y="{y + h + 12}" width="14" height="14" fill="#888" stroke="#e00000" stroke-width="2"/>'
                 f'<rect x="{x}" y="{y + h + 12}" width="14" height="14" fill="url(#{pid}-hatch)"/>'
                 f'<text x="{x + 18}" y="{y + h + 23}">failed</text>')
    parts.append(f'<rect x="{x}" y="{y + h + 32}" width="14" height="14" fill="#555555" stroke="#e00000" stroke-width="2"/>'
                 f'<text x="{x + 18}" y="{y + h + 43}">error (not measured)</text>')
    parts.append("</g>")
    return "".join(parts)


def pair_heatmaps(
    checks: Iterable[Mapping[str, Any]],
    nodes: Sequence[str] = (),
    labels: Mapping[str, Mapping[str, str]] | None = None,
    max_nodes: int = MAX_NODES,
) -> list[tuple[str, Grid, str]]:
    """One ``(check, grid, svg)`` per pair check (bandwidth, latency, ...) with at least one measured pair.

    A check no pair of which was measured gets no map: every cell would be the same grey, and the
    errors' causes are in the tables above.
    """
    out = []
    for check, records in sorted(_pair_records(checks).items()):
        grid = pair_grid(records, nodes, labels, max_nodes)
        if all(cell.value is None for cell in grid.cells.values()):
            continue
        unit = f" ({grid.unit})" if grid.unit else ""
        svg = render_svg(grid, title=f"{check}{unit}: node x node", id_prefix=f"fabric-{check}")
        out.append((check, grid, svg))
    return out


def matrix_heatmaps(checks: Iterable[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], Grid, str]]:
    """One per check carrying ``extra["matrix"]`` (per-GPU-pair NVLink bandwidth): GPU x GPU with failing cells."""
    out = []
    for n, c in enumerate(checks):
        matrix = (c.get("extra") or {}).get("matrix")
        if not isinstance(matrix, dict) or not matrix.get("values"):
            continue
        gpus = [str(g) for g in matrix.get("gpus") or range(len(matrix["values"]))]
        expected = c.get("expected") or {}
        floor = numeric_value(expected)
        op = expected.get("op")
        unit = str(matrix.get("unit") or (c.get("measured") or {}).get("unit") or expected.get("unit") or "")
        grid = Grid(gpus, gpus, unit=unit, higher_is_better=op != "<=", threshold=floor)
        for i, row in enumerate(matrix["values"]):
            for j, v in enumerate(row or []):
                if i == j or not isinstance(v, (int, float)) or isinstance(v, bool):
                    continue
                failed = floor is not None and ((v < floor) if op == ">=" else (v > floor) if op == "<=" else False)
                title = f"{c.get('subject')}: GPU {gpus[i]} -> GPU {gpus[j]}: {format_number(v)} {unit}"
                if expected:
                    title += f" (expected {format_expected(expected)})"
                grid.cells[(i, j)] = Cell(float(v), failed=failed, title=title + (" FAILED" if failed else ""))
        svg = render_svg(grid, title=f"{c.get('subject')}: {c.get('check')} ({unit}), GPU x GPU",
                         id_prefix=f"fabric-m{n}")
        out.append((c, grid, svg))
    return out
