"""``intra_node.pcie_errors``: PCIe replays and AER error counts of each node's GPUs and NICs.

Two sources, each read before any traffic of the run and again at its end (phase 99, with the
port error counters), so both what a device had when the run began and what it added during
the run are judged:

- the GPUs' PCIe replay counters, from ``nvidia-smi -q -x`` (``Replays Since Reset``): a replay
  is a TLP the link had to send again; a few are normal, a stream of them is a marginal link.
  ``replays_per_minute`` (default 8) is DCGM's limit, "8 replays per minute is the maximum
  recommended by RM" (DCGM ``dcgm_gpu_hardware_limits.h`` ``DCGM_LIMIT_MAX_PCIREPLAY_RATE``,
  which its PCIe diagnostic and health watches fail above). It is judged on the rate during the
  run (the lower 95% confidence limit of the Poisson rate, as the port counters are: a short run
  says little) and on the rate since boot (the count since the driver loaded over the node's
  uptime), whichever is higher;
- PCIe Advanced Error Reporting, from sysfs (``aer_dev_correctable``, ``aer_dev_fatal``,
  ``aer_dev_nonfatal``, Linux 4.19 and later) of every NVIDIA GPU and Mellanox/NVIDIA NIC
  function: ``aer_uncorrectable_max`` (default 0) bounds fatal and non-fatal errors since boot,
  which the PCIe specification defines as errors that lose a transaction or the link (a healthy
  device has none); correctable ones are reported, and bounded per minute of the run when the
  profile sets ``aer_correctable_per_minute``. A NIC has no replay counter of its own; its
  ``replays_per_minute`` is its AER replay events (``Timeout``, the Replay Timer Timeout, and
  ``Rollover``, REPLAY_NUM Rollover).

A device without the AER files (no AER capability, a kernel without CONFIG_PCIEAER, ``pci=noaer``,
most virtual machines) is an error with the fix; ``aer: false`` judges the replay counters alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import Field

from pytest_fabric.checks.base import Check
from pytest_fabric.config.profile import CheckSpec
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge.verdict import Measurement, Op
from pytest_fabric.parsers.aer_sysfs import AerDevice, parse_aer_sysfs
from pytest_fabric.probes import gpu
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.probes.counters import poisson_lower_limit
from pytest_fabric.run.cluster import Cluster, NodeHandle
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.state import CHECK_KEY, get_state
from pytest_fabric.run.waves import wave
from pytest_fabric.transport.results import CommandResult

__all__ = ["AER_COMMAND", "PCIE_ERRORS", "PcieErrors", "PcieReading", "pcie_errors", "pcie_measurement",
           "pytest_fabric_checks", "read_pcie"]

#: every NVIDIA display/3D function (class 0x03) and Mellanox/NVIDIA network or InfiniBand function
#: (class 0x02) in sysfs, framed per device and file for parsers/aer_sysfs.py; SR-IOV virtual functions
#: (a ``physfn`` link) are left out: AER is their physical function's, they have no files of their own
AER_COMMAND = (
    'cd /sys/bus/pci/devices && for d in *; do [ -e "$d/physfn" ] && continue; '
    'read -r v < "$d/vendor" && read -r c < "$d/class" || continue; '
    'case "$v:$c" in 0x10de:0x03*|0x15b3:0x02*) echo "==> $d $v $c <=="; '
    'for f in aer_dev_correctable aer_dev_fatal aer_dev_nonfatal; do '
    '[ -r "$d/$f" ] && { echo "--- $f"; cat "$d/$f"; }; done;; esac; done; true'
)
UPTIME = "cat /proc/uptime"
#: the AER correctable errors of the replay mechanism: Replay Timer Timeout, REPLAY_NUM Rollover
REPLAY_EVENTS = ("Timeout", "Rollover")
NO_AER_FIX = ("boot with AER (a kernel built with CONFIG_PCIEAER, no pci=noaer; a VM rarely passes it "
              "through), or set intra_node.pcie_errors.aer: false to judge the GPUs' replay counters alone")


class PcieErrors(CheckSpec):
    """``replays_per_minute``: PCIe replays a GPU may have per minute, during the run and since boot
    (DCGM's 8). ``aer_uncorrectable_max``: fatal and non-fatal AER errors a GPU or NIC may have
    counted since boot (0). ``aer_correctable_per_minute``: correctable AER errors per minute of
    the run (unset: reported only). ``aer``: read the AER files (a device without them is an error)."""

    BOUNDS = (
        ("replays_per_minute", Op.MAX, Dimension.COUNT),
        ("aer_uncorrectable_max", Op.MAX, Dimension.COUNT),
        ("aer_correctable_per_minute", Op.MAX, Dimension.COUNT),
    )
    SCALAR_FIELD = "replays_per_minute"
    replays_per_minute: QuantityField | None = Field(default_factory=lambda: parse_quantity(8))
    aer_uncorrectable_max: QuantityField | None = Field(default_factory=lambda: parse_quantity(0))
    aer_correctable_per_minute: QuantityField | None = None
    aer: bool = True

    def bounds(self) -> list[tuple[str, Op, Quantity | str | int | bool]]:
        """With ``aer: false`` nothing reads the AER files, so their bounds judge nothing."""
        return [b for b in super().bounds() if self.aer or not b[0].startswith("aer_")]


#: test_pcie_errors in the intra_node layer, one test per node (each GPU and NIC judged on its own);
#: read before any traffic and again last of all (phase 99), so growth covers the whole run
PCIE_ERRORS: Check[PcieErrors] = Check("pcie_errors", "intra_node", PcieErrors, "node", "wave", phase=99,
                                       tools=("nvidia-smi",), typical_s=2.0)


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [PCIE_ERRORS]


def _bdf(bus_id: str) -> str:
    """nvidia-smi's ``00000000:18:00.0`` as sysfs names it, ``0000:18:00.0``."""
    domain, rest = bus_id.strip().lower().split(":", 1)
    return f"{int(domain, 16):04x}:{rest}"


@dataclass(frozen=True)
class PcieReading:
    """One node's replay counters (GPU bdf -> replays since reset) and AER devices, read once."""

    node: str
    replays: dict[str, int]
    aer: dict[str, AerDevice]
    uptime_s: float
    evidence: tuple[CommandResult, ...]
    read_at: float = field(default_factory=time.time)


def read_pcie(node: NodeHandle, *, aer: bool = True) -> PcieReading:
    """The node's GPUs' replay counters (nvidia-smi) and, with ``aer``, its GPUs' and NICs' AER files."""
    read_at = time.time()
    inv = gpu.inventory(node)
    replays: dict[str, int] = {}
    for info in inv.gpus:
        if info.bus_id is None or info.pcie_replays_since_reset is None:
            raise MeasurementError(node.name, f"nvidia-smi shows no PCIe replay counter for GPU {info.bus_id}",
                                   command=inv.command, fix=gpu.NVSMI_FIX)
        replays[_bdf(info.bus_id)] = info.pcie_replays_since_reset
    uptime = node.run(UPTIME, timeout=15)
    try:
        uptime_s = float(uptime.stdout.split()[0])
    except (IndexError, ValueError):
        raise MeasurementError(node.name, f"/proc/uptime reads {uptime.stdout.strip()[:60]!r}",
                               command=uptime.command) from None
    evidence = [*inv.evidence, uptime]
    devices: dict[str, AerDevice] = {}
    if aer:
        result = node.run(AER_COMMAND, timeout=30)
        evidence.append(result)
        devices = {d.bdf: d for d in parse_or_raise(parse_aer_sysfs, result)}
        lacking = sorted(bdf for bdf, d in devices.items() if not d.has_aer)
        lacking += sorted(bdf for bdf in replays if bdf not in devices)
        if lacking:
            raise MeasurementError(node.name, f"no AER counters for {', '.join(lacking)} (no aer_dev_* files in "
                                   "/sys/bus/pci/devices)", command=result.command, fix=NO_AER_FIX)
    return PcieReading(node.name, replays, devices, uptime_s, tuple(evidence), read_at)


def _per_minute(count: int, seconds: float) -> float:
    return float(f"{count / max(seconds, 1.0) * 60:.3g}")


def _at_least_per_minute(count: int, seconds: float) -> float:
    """The lower 95% confidence limit of the per-minute rate (probes/counters.py: a short run says little)."""
    return float(f"{poisson_lower_limit(count) / max(seconds, 1.0) * 60:.3g}")


def _replay_events(device: AerDevice | None) -> int | None:
    counts = None if device is None else device.files.get("aer_dev_correctable")
    return None if counts is None else sum(counts.get(name, 0) for name in REPLAY_EVENTS)


def _grew(node: str, what: str, before: int, after: int) -> int:
    if after < before:
        raise MeasurementError(node, f"{what} went from {before} to {after} during the run: the GPU or its driver "
                               "was reset, so the growth cannot be told", fix="find what reset it (the kernel log) and re-run")
    return after - before


def pcie_measurement(before: PcieReading | BaseException | None, after: PcieReading, settings: PcieErrors) -> Measurement:
    """Pure: each GPU and NIC of ``after`` judged on its own (one part each), growth against ``before``."""
    if before is None or isinstance(before, BaseException):
        why = f": {before}" if isinstance(before, BaseException) else ""
        raise MeasurementError(after.node, f"no PCIe reading from before the run{why}; growth during the run cannot be told",
                               fix="fix what stopped the first reading and re-run")
    elapsed = max(after.read_at - before.read_at, 0.0)
    run = f"{elapsed:.0f} s of the run"
    parts: list[tuple[str, Measurement]] = []
    for bdf, replays in sorted(after.replays.items()):
        if bdf not in before.replays:
            raise MeasurementError(after.node, f"GPU {bdf} was not there before the run", fix="re-run")
        grown = _grew(after.node, f"GPU {bdf}'s replay counter", before.replays[bdf], replays)
        during, since_boot = _at_least_per_minute(grown, elapsed), _per_minute(replays, after.uptime_s)
        detail = [f"replays: {replays} since reset ({since_boot}/min over {after.uptime_s / 3600:.1f} h up), "
                  f"+{grown} in {run} (at least {during}/min)"]
        bounds: dict[str, Any] = {"replays_per_minute": parse_quantity(max(during, since_boot))}
        extra: dict[str, Any] = {"replays": replays, "replays_grown": grown}
        parts.append((f"{after.node} GPU {bdf}", _with_aer(before, after, bdf, elapsed, bounds, detail, extra)))
    for bdf, device in sorted(after.aer.items()):
        if bdf in after.replays or (device.vendor or "").lower() != "0x15b3":
            continue
        events, old = _replay_events(device), _replay_events(before.aer.get(bdf))
        if events is None or old is None:
            raise MeasurementError(after.node, f"NIC {bdf}: no aer_dev_correctable before and after the run",
                                   fix=NO_AER_FIX)
        grown = _grew(after.node, f"NIC {bdf}'s AER replay events", old, events)
        during, since_boot = _at_least_per_minute(grown, elapsed), _per_minute(events, after.uptime_s)
        detail = [f"AER replay events (Timeout, Rollover): {events} since boot, +{grown} in {run}"]
        bounds = {"replays_per_minute": parse_quantity(max(during, since_boot))}
        parts.append((f"{after.node} NIC {bdf}", _with_aer(before, after, bdf, elapsed, bounds, detail,
                                                             {"replay_events": events})))
    if not parts:
        raise MeasurementError(after.node, "no GPU or NIC to judge: nvidia-smi listed no GPU", fix=gpu.NVSMI_FIX)
    return Measurement.of_parts(parts)


def _with_aer(before: PcieReading, after: PcieReading, bdf: str, elapsed: float, bounds: dict[str, Any],
              detail: list[str], extra: dict[str, Any]) -> Measurement:
    device = after.aer.get(bdf)
    evidence = before.evidence + after.evidence
    if device is None:  # aer: false
        return Measurement(value=bounds["replays_per_minute"], detail="; ".join(detail), evidence=evidence,
                           bounds=bounds, extra=extra)
    old = before.aer.get(bdf)
    uncorrectable, correctable = device.uncorrectable or 0, device.correctable or 0
    grown = _grew(after.node, f"{bdf}'s correctable AER count", (old.correctable or 0) if old else 0, correctable)
    bounds["aer_uncorrectable_max"] = parse_quantity(uncorrectable)
    bounds["aer_correctable_per_minute"] = parse_quantity(_at_least_per_minute(grown, elapsed))
    named = {name: count for file in ("aer_dev_fatal", "aer_dev_nonfatal")
             for name, count in device.files.get(file, {}).items() if count and not name.startswith("TOTAL_")}
    detail.append(f"AER since boot: {uncorrectable} uncorrectable"
                  + (f" ({', '.join(f'{k} {v}' for k, v in named.items())})" if named else "")
                  + f", {correctable} correctable (+{grown} during the run)")
    extra.update({"aer_uncorrectable": uncorrectable, "aer_correctable": correctable, "aer_correctable_grown": grown})
    return Measurement(value=bounds["replays_per_minute"], detail="; ".join(detail), evidence=evidence,
                       bounds=bounds, extra=extra)


_BASELINE = "PCIe replays and AER before any traffic"


@pytest.fixture(scope="session", autouse=True)
def _pcie_baseline(request: pytest.FixtureRequest) -> None:
    """Read every node's replay counters and AER files before any traffic, so growth is this run's."""
    state = get_state(request.config)
    settings = None if state is None else state.profile.spec("intra_node", "pcie_errors")
    if state is None or settings is None:
        return
    if not any((info := item.stash.get(CHECK_KEY, None)) is not None and info.check == "pcie_errors"
               for item in request.session.items):
        return
    cluster: Cluster = request.getfixturevalue("cluster")
    aer = bool(getattr(settings, "aer", True))

    def snapshot(node: NodeHandle) -> None:
        try:
            state.once.get(_BASELINE, node.name, lambda: read_pcie(node, aer=aer))
        except Exception:  # kept: the node's test reports it
            pass

    state.batches.fan_out(cluster.nodes, snapshot)


@pytest.fixture
@wave("node")
def pcie_errors(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """The node's replay counters and AER files now, judged with their reading from before any traffic."""
    settings = spec(PCIE_ERRORS)
    state = get_state(request.config)
    before: PcieReading | BaseException | None = None
    try:  # read before any traffic, never now (peek computes nothing)
        before = None if state is None else state.once.peek(_BASELINE, node.name)
    except Exception as exc:
        before = exc
    if isinstance(before, BaseException):
        raise before  # what stopped the reading before the run: its node, command and fix
    if before is None:
        return pcie_measurement(before, PcieReading(node.name, {}, {}, 0.0, ()), settings)
    return pcie_measurement(before, read_pcie(node, aer=settings.aer), settings)
