"""A soak drawn over time: each figure and each telemetry series as an inline SVG line chart.

Pure: the record's ``run.soak`` object in, HTML out (no pytest, no I/O), like :mod:`.heatmap`. A
chart per check (a line per subject) and per telemetry series (a line per node), the charts with
a fault first and, in each, the worst subject first in the legend and drawn last (on top), so a
drift or a flapping link is seen at a glance. The moment a fault began is a red dashed line
labelled with its cycle and time; a failed or unmeasured point is a red cross; the check's floor
(or ceiling) is a grey dashed line. No script, no fonts or images from the network: the page
stays one self-contained file, and every point has a ``<title>`` (the browser's tooltip).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Line", "Mark", "line_chart", "soak_section"]

WIDTH, HEIGHT = 640, 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 170, 26, 34
#: line colours, worst first: red-free (red marks faults), distinct in grey and for colour-blind readers
_COLOURS = ("#000000", "#0072b2", "#e69f00", "#009e73", "#56b4e9", "#cc79a7", "#f0e442", "#999999")
#: at most this many lines a chart; the rest are said in its caption (the worst are drawn)
MAX_LINES = 8


@dataclass
class Line:
    """One subject's series: (seconds into the soak, value or None, failed) points."""

    label: str
    points: list[tuple[float, float | None, bool]] = field(default_factory=list)
    fault: bool = False  # a fault names this subject: drawn first in the legend, thicker


@dataclass(frozen=True)
class Mark:
    """A moment on the time axis: when a fault began."""

    at: float
    label: str


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{sec:02d}s" if m else f"{sec}s")


def _number(v: float) -> str:
    return f"{v:.4g}"


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    return [lo + (hi - lo) * i / n for i in range(n + 1)]


def line_chart(title: str, lines: Sequence[Line], *, unit: str = "", marks: Sequence[Mark] = (),
               limit: float | None = None, duration: float | None = None, id_prefix: str = "soak",
               note: str = "") -> str:
    """One chart: ``lines`` over time (the first is the worst: drawn on top, first in the legend).

    ``limit``: the check's floor or ceiling (a grey dashed line); ``duration``: the time axis's
    end (default: the last point); ``marks``: fault onsets; ``id_prefix`` keeps ids apart on a page.
    """
    cid = re.sub(r"[^A-Za-z0-9_-]", "_", id_prefix)
    values = [v for line in lines for _, v, _ in line.points if v is not None]
    if limit is not None:
        values.append(limit)
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if lo == hi:
        lo, hi = lo - (abs(lo) * 0.05 or 1.0), hi + (abs(hi) * 0.05 or 1.0)
    pad = (hi - lo) * 0.08
    lo, hi = (lo - pad if lo - pad > 0 or lo < 0 else 0.0), hi + pad
    times = [t for line in lines for t, _, _ in line.points] + [m.at for m in marks]
    t_end = max([duration or 0.0, *times, 1.0])
    plot_w, plot_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM

    def x(t: float) -> float:
        return _LEFT + plot_w * t / t_end

    def y(v: float) -> float:
        return _TOP + plot_h * (1 - (v - lo) / (hi - lo))

    out = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" class="fabric-soak-chart" id="{cid}" width="{WIDTH}" '
         f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{_e(title)}" '
         'font-family="Helvetica, Arial, sans-serif" font-size="11">'),
        f"<title>{_e(title)}</title>",
        f'<text x="4" y="15" font-size="13" font-weight="bold">{_e(title)}</text>',
        f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_w}" height="{plot_h}" fill="#fafafa" stroke="#ccc"/>',
    ]
    for v in _ticks(lo, hi):
        out.append(f'<line x1="{_LEFT - 3}" x2="{_LEFT + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>'
                   f'<text x="{_LEFT - 5}" y="{y(v) + 4:.1f}" text-anchor="end">{_e(_number(v))}</text>')
    for t in _ticks(0.0, t_end):
        out.append(f'<text x="{x(t):.1f}" y="{_TOP + plot_h + 14}" text-anchor="middle">{_e(_clock(t))}</text>')
    out.append(f'<text x="{_LEFT + plot_w / 2:.0f}" y="{HEIGHT - 4}" text-anchor="middle" fill="#555">time into '
               f'the soak</text><text x="4" y="{_TOP + 4}" fill="#555">{_e(unit)}</text>')
    if limit is not None:
        out.append(f'<line class="fabric-soak-limit" x1="{_LEFT}" x2="{_LEFT + plot_w}" y1="{y(limit):.1f}" '
                   f'y2="{y(limit):.1f}" stroke="#888" stroke-dasharray="6 3"><title>limit {_e(_number(limit))} '
                   f'{_e(unit)}</title></line>')
    at_once: dict[float, list[Mark]] = {}
    for mark in marks:  # faults that began at one moment (a failure and a drift) share one line
        at_once.setdefault(round(mark.at, 1), []).append(mark)
    for group in at_once.values():
        mx = x(group[0].at)
        tips = "\n".join(m.label for m in group)
        # right of the line, or left of it in the plot's right half (the legend is beyond the plot)
        side = f'x="{mx + 3:.1f}"' if mx < _LEFT + plot_w / 2 else f'x="{mx - 3:.1f}" text-anchor="end"'
        labels = "".join(f'<text {side} y="{_TOP + 11 + 12 * i}" fill="#d00000">{_e(m.label.split(":")[0])}'
                         "</text>" for i, m in enumerate(group))
        out.append(f'<g class="fabric-soak-fault"><title>{_e(tips)}</title><line x1="{mx:.1f}" x2="{mx:.1f}" '
                   f'y1="{_TOP}" y2="{_TOP + plot_h}" stroke="#d00000" stroke-width="2" stroke-dasharray="4 2"/>'
                   f"{labels}</g>")
    shown = list(lines[:MAX_LINES])
    for i in reversed(range(len(shown))):  # the worst last: on top
        line, colour = shown[i], _COLOURS[i % len(_COLOURS)]
        pts = [(t, v) for t, v, _ in line.points if v is not None]  # a gap (no value) is a cross, not a line
        width = 2.5 if i == 0 or line.fault else 1.5
        if len(pts) > 1:
            path = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{width}"/>')
        for t, val, failed in line.points:
            tip = f"{line.label} at {_clock(t)}: " + (f"{_number(val)} {unit}".strip() if val is not None else "no value")
            if failed or val is None:
                vy = y(val) if val is not None else _TOP + plot_h - 4
                out.append(f'<g class="fabric-soak-bad"><title>{_e(tip)} (failed)</title>'
                           f'<path d="M{x(t) - 4:.1f},{vy - 4:.1f}l8,8m0,-8l-8,8" stroke="#d00000" '
                           'stroke-width="2.5"/></g>')
            else:
                out.append(f'<circle cx="{x(t):.1f}" cy="{y(val):.1f}" r="2.5" fill="{colour}"><title>{_e(tip)}'
                           '</title></circle>')
    lx = _LEFT + plot_w + 10
    for i, line in enumerate(shown):
        ly = _TOP + 8 + i * 16
        weight = ' font-weight="bold"' if line.fault else ""
        label = line.label if len(line.label) <= 24 else line.label[:23] + "…"
        out.append(f'<line x1="{lx}" x2="{lx + 16}" y1="{ly - 4}" y2="{ly - 4}" stroke="{_COLOURS[i % len(_COLOURS)]}" '
                   f'stroke-width="2.5"/><text x="{lx + 20}" y="{ly}"{weight}>{_e(label)}<title>{_e(line.label)}'
                   '</title></text>')
    if len(lines) > len(shown) or note:
        more = f"{len(lines) - len(shown)} more not drawn (the best)" if len(lines) > len(shown) else ""
        out.append(f'<text x="{lx}" y="{_TOP + 8 + len(shown) * 16}" fill="#555">{_e(more or note)}</text>')
    out.append("</svg>")
    return "".join(out)


def _fault_marks(faults: Sequence[Mapping[str, Any]], what: str, subjects: set[str]) -> tuple[list[Mark], set[str]]:
    marks, faulty = [], set()
    for f in faults:
        if f.get("what") == what and str(f.get("subject")) in subjects:
            faulty.add(str(f.get("subject")))
            cycle = f"cycle {f['cycle']}, " if f.get("cycle") is not None else ""
            marks.append(Mark(float(f.get("at_s") or 0.0), f"{f.get('kind')} {cycle}{_clock(float(f.get('at_s') or 0))}: "
                                                            f"{f.get('message', '')}"))
    return marks, faulty


def _worst_first(lines: list[Line], higher_is_better: bool) -> list[Line]:
    """Faulty subjects first, then by their worst value (the lowest of a floor, the highest of a ceiling)."""
    def key(line: Line) -> tuple[int, float]:
        vals = [v for _, v, _ in line.points if v is not None]
        bad = sum(1 for _, v, failed in line.points if failed or v is None)
        worst = (min(vals) if higher_is_better else -max(vals)) if vals else float("-inf")
        return (0 if line.fault or bad else 1, worst)

    return sorted(lines, key=key)


def soak_section(soak: Mapping[str, Any]) -> str:
    """The report's "Over time" section from the record's ``run.soak``: the faults, then the charts."""
    judgement = soak.get("judgement") or {}
    faults: list[Mapping[str, Any]] = list(judgement.get("faults") or [])
    duration = float(soak.get("elapsed_s") or 0.0) or None
    charts: list[tuple[int, str]] = []  # (0: has a fault, 1: not), svg
    # Figures: one chart per check, a line per subject.
    by_check: dict[str, list[Mapping[str, Any]]] = {}
    for series in soak.get("figures") or []:
        by_check.setdefault(str(series.get("key")), []).append(series)
    n = 0
    for what, group in by_check.items():
        higher = bool(group[0].get("higher_is_better", True))
        lines = [Line(str(s.get("subject")), [(float(p[1]), p[2], p[3] != "passed" and p[3] != "waived")
                                             for p in s.get("points") or []]) for s in group]
        marks, faulty = _fault_marks(faults, what, {ln.label for ln in lines})
        for line in lines:
            line.fault = line.label in faulty
        lines = _worst_first(lines, higher)
        limit = group[0].get("limit")
        n += 1
        svg = line_chart(f"{what}: {'higher' if higher else 'lower'} is better", lines,
                         unit=str(group[0].get("unit") or ""), marks=marks,
                         limit=float(limit) if isinstance(limit, (int, float)) else None,
                         duration=duration, id_prefix=f"soak-fig-{n}")
        charts.append((0 if faulty or any(ln.fault for ln in lines) else 1, svg))
    # Telemetry: one chart per series name, a line per node.
    telemetry = soak.get("telemetry") or {}
    by_series: dict[str, list[Mapping[str, Any]]] = {}
    for series in telemetry.get("series") or []:
        by_series.setdefault(str(series.get("series")), []).append(series)
    steady: dict[str, set[str]] = {}  # series -> nodes on which it never changed (and no fault)
    for name, group in by_series.items():
        kind = str(group[0].get("kind") or "level")
        lines = [Line(str(s.get("node")), [(float(p[0]), p[1], False) for p in s.get("points") or []]) for s in group]
        marks, faulty = _fault_marks(faults, name, {ln.label for ln in lines})
        if not faulty and all(len({p[1] for p in ln.points}) <= 1 for ln in lines):
            # a flat line per node says nothing a sentence cannot: said once below the charts
            steady.setdefault(f"{name} ({kind})", set()).update(ln.label for ln in lines)
            continue
        for line in lines:
            line.fault = line.label in faulty
        # a counter or flag is worse higher; a level (temperature, power) too: the hottest first
        lines = _worst_first(lines, higher_is_better=False)
        n += 1
        svg = line_chart(f"{name} ({kind})", lines, unit=str(group[0].get("unit") or ""), marks=marks,
                         duration=duration, id_prefix=f"soak-tel-{n}")
        charts.append((0 if faulty else 1, svg))
    charts.sort(key=lambda c: c[0])  # stable: a fault's charts first, otherwise in record order
    cycles = soak.get("cycles", 0)
    head = [f'<h2 id="fabric-soak">Over time: {_e(cycles)} cycles in {_e(_clock(duration or 0))}</h2>']
    verdict = judgement.get("verdict")
    if verdict:
        head.append(f'<p class="fabric-soak-verdict">soak: <b>{_e(str(verdict).upper())}</b>'
                    + (f", drift judged against soak.max_drift {float(judgement['max_drift']) * 100:g}%"
                       if judgement.get("max_drift") is not None else ", drift not judged (the profile sets no "
                                                                       "soak.max_drift)") + "</p>")
    if faults:
        head.append("<ul class='fabric-soak-faults'>" + "".join(
            f"<li style='color:#b00000'>{_e(f.get('message'))}</li>" for f in faults) + "</ul>")
    for node, why in sorted((telemetry.get("not_sampled") or {}).items()):
        head.append(f"<p class='fabric-soak-unsampled'>telemetry not sampled on {_e(node)}: {_e(why)}</p>")
    body = "".join(f'<div class="fabric-soak-chart-box">{svg}</div>' for _, svg in charts)
    if steady:
        body += ("<p class='fabric-soak-steady'>steady throughout (the same reading in every sample): "
                 + "; ".join(f"{_e(name)} on {_e(', '.join(sorted(nodes)))}" for name, nodes in steady.items()) + "</p>")
    return f'<div class="fabric-soak">{"".join(head)}{body}</div>'
