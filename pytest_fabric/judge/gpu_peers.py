"""Pure: a node's GPUs judged each against a floor and against the node's other GPUs.

A GPU can pass a floor set for the model and still be the one slow card of its node (a
partly failed HBM stack, a tensor-core fault, a card held to a lower clock); a node's GPUs are
the same part, so each is compared with the median of the others as well.  Also: which
clock-event reasons seen under load fail a GPU.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["FAILING_REASONS", "REASON_WORDS", "GpuFigure", "PeerJudgement", "judge_figures", "judge_reasons"]

#: the reasons that fail a GPU under load by default: the board or the driver holding clocks down
#: for heat or power faults; a power cap (sw_power_cap) is what a full GEMM meets and is only reported
FAILING_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
#: how nvidia-smi -q names each reason ("Clocks Event Reasons"), for messages
REASON_WORDS = {
    "hw_slowdown": "HW Slowdown",
    "hw_thermal_slowdown": "HW Thermal Slowdown",
    "hw_power_brake_slowdown": "HW Power Brake Slowdown",
    "sw_thermal_slowdown": "SW Thermal Slowdown",
    "sw_power_cap": "SW Power Cap",
    "gpu_idle": "Idle",
    "applications_clocks_setting": "Applications Clocks Setting",
    "sync_boost": "Sync Boost",
    "display_clock_setting": "Display Clock Setting",
}


@dataclass(frozen=True)
class GpuFigure:
    """One GPU's figure: nvidia-smi index, bus id, value (None: not measured)."""

    index: int
    bus_id: str | None
    value: float | None

    @property
    def name(self) -> str:
        return f"GPU{self.index} ({self.bus_id})" if self.bus_id else f"GPU{self.index}"


@dataclass(frozen=True)
class PeerJudgement:
    """Which GPUs failed and why (one line each), and a line per GPU for the detail."""

    failures: tuple[str, ...]
    lines: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.failures


def judge_figures(
    figures: Iterable[GpuFigure], *, floor: float | None, max_below_peers: float, unit: str
) -> PeerJudgement:
    """Each GPU below ``floor``, or more than ``max_below_peers`` (a fraction) below the median of the
    node's other GPUs, fails, named by index and bus id; a GPU not measured fails as unmeasured."""
    gpus = sorted(figures, key=lambda g: g.index)
    failures: list[str] = []
    lines: list[str] = []
    for gpu in gpus:
        if gpu.value is None:
            failures.append(f"{gpu.name}: not measured")
            continue
        others = [g.value for g in gpus if g.index != gpu.index and g.value is not None]
        peers = statistics.median(others) if others else None
        share = gpu.value / peers if peers else None
        lines.append(f"{gpu.name} {gpu.value:.0f} {unit}" + (f" ({share:.0%} of its peers' median)" if share else ""))
        if floor is not None and gpu.value < floor:
            failures.append(f"{gpu.name}: {gpu.value:.0f} {unit}, below the floor of {floor:.0f} {unit}")
        if share is not None and share < 1 - max_below_peers:
            failures.append(
                f"{gpu.name}: {gpu.value:.0f} {unit}, {1 - share:.0%} below the median of the node's other GPUs "
                f"({peers:.0f} {unit}; at most {max_below_peers:.0%} allowed)"
            )
    return PeerJudgement(tuple(failures), tuple(lines))


def judge_reasons(
    reasons: Mapping[int, Counter[str]], bus_ids: Mapping[int, str], samples: int, *, failing: Iterable[str]
) -> PeerJudgement:
    """A GPU fails for each ``failing`` reason active in any sample under load; the others are reported."""
    fail = set(failing)
    failures: list[str] = []
    lines: list[str] = []
    for index in sorted(reasons):
        name = GpuFigure(index, bus_ids.get(index), None).name
        for reason, count in sorted(reasons[index].items()):
            seen = f"{REASON_WORDS.get(reason, reason)} in {count} of {samples} samples"
            if reason in fail:
                failures.append(f"{name}: {seen} under load")
            elif reason != "gpu_idle":
                lines.append(f"{name}: {seen} (reported)")
    return PeerJudgement(tuple(failures), tuple(lines))
