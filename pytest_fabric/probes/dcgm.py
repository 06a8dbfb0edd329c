"""GPU health: ``dcgmi diag -r LEVEL`` on a node, each failed test named per GPU.

The probe reads the table, not ``-j``: DCGM 4.0-4.6's JSON writes a warning as ``Fail``
(``Diag::HelperJsonAddResult`` in NVIDIA/DCGM ``dcgmi/Diag.cpp``), so a node whose only
finding is, say, persistence mode off would fail; the table prints the test's own ``Warn``.

Level 1 runs the deployment checks (about a minute), 2 adds short PCIe, memory and stress
tests (a few minutes), 3 and 4 run long stress tests (tens of minutes, over an hour): the
timeouts follow. dcgmi exits non-zero when a test fails, so the table, not the exit status,
decides; no table at all is an error with dcgmi's own words (``Error: unable to establish a
connection to the specified host engine``: nv-hostengine is not running).
"""

from __future__ import annotations

import re

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers import dcgmi_diag
from pytest_fabric.parsers._nvidia_smi_gpu import GpuInfo
from pytest_fabric.parsers.base import ParseError, ToolReportedError
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.outcome import judge as judge_result
from pytest_fabric.transport.results import CommandResult

__all__ = ["TIMEOUT_S", "diagnose", "failures", "warnings", "with_memory_faults"]

TIMEOUT_S = {1: 300.0, 2: 1200.0, 3: 3600.0, 4: 3 * 3600.0}


def _about(test: dcgmi_diag.DcgmTest, gpu: int | None) -> str:
    """DCGM's words on ``gpu`` (its own messages, and those naming no GPU), in brackets."""
    own = [m for m in test.messages if gpu is not None and f": GPU{gpu}: " in m]
    shared = [m for m in test.messages if not re.search(r": GPU\d+: ", m)]
    words = own + shared if gpu is not None else test.messages
    return f" ({'; '.join(words)})" if words else ""


def failures(result: dcgmi_diag.DcgmDiagResult) -> list[str]:
    """One line per GPU and failed test: ``GPU3: PCIe (Warning: GPU 3 GPU to Host bandwidth too low. ...)``."""
    out = []
    for test in result.failed_tests:
        gpus = sorted(g for g, r in test.gpu_results.items() if r == "Fail")
        if gpus:
            out += [f"GPU{g}: {test.name}{_about(test, g)}" for g in gpus]
        else:
            out.append(f"{test.category} {test.name} failed (no GPU named){_about(test, None)}")
    return out


def warnings(result: dcgmi_diag.DcgmDiagResult) -> list[str]:
    """One line per GPU and warned test (a warning does not fail the node; it is shown)."""
    out = []
    for test in result.tests:
        gpus = sorted(g for g, r in test.gpu_results.items() if r == "Warn")
        if gpus:
            out += [f"GPU{g}: {test.name} warned{_about(test, g)}" for g in gpus]
        elif test.result == "Warn":
            out.append(f"{test.name} warned{_about(test, None)}")
    return out


def diagnose(node: NodeHandle, level: int) -> Measurement:
    """Run the diagnostic at ``level``; ``pass`` or ``fail`` with each failed test per GPU."""
    command = f"dcgmi diag -r {level}"
    result: CommandResult = node.run(command, timeout=TIMEOUT_S[level], check=False)
    if result.exit_code == 127:
        judge_result(result, check=True)  # raises ToolMissing, naming the package
    try:
        parsed = dcgmi_diag.parse_dcgmi_diag(result.stdout)
    except ToolReportedError as exc:
        raise MeasurementError(
            node.name,
            f"dcgmi reported: {exc}",
            command=command,
            fix="start the DCGM host engine (systemctl start nvidia-dcgm, or nv-hostengine)",
        ) from exc
    except ParseError as exc:
        tail = (result.stderr or result.stdout).strip()[-300:]
        raise MeasurementError(
            node.name,
            f"no diagnostic table (exit {result.exit_code}): {tail or exc}",
            command=command,
            fix="run the command by hand on the node",
        ) from exc
    failed = failures(parsed)
    if not parsed.complete and not failed:
        # A failure already read stands; a table cut short cannot pass the node.
        tail = (result.stderr or "").strip()[-300:]
        raise MeasurementError(
            node.name,
            f"the diagnostic table stops after {len(parsed.tests)} test(s), before its closing border "
            f"(exit {result.exit_code}){': ' + tail if tail else ''}",
            command=command,
            fix="run the command by hand on the node; dcgmi stopped before it finished",
        )
    versions = {"dcgm": parsed.dcgm_version} if parsed.dcgm_version else {}
    extra = {"tool_versions": versions, "dcgm": {t.name: t.result for t in parsed.tests}}
    if failed:
        return Measurement(
            value="fail", detail=f"{command}: " + "; ".join(failed), evidence=(result,), extra=extra
        )
    skipped = [t.name for t in parsed.tests if t.result == "Skip"]
    warned = warnings(parsed)
    detail = (
        f"{command}: {len(parsed.tests)} test(s) passed"
        + (f", skipped: {', '.join(skipped)}" if skipped else "")
        + (f"; warnings: {'; '.join(warned)}" if warned else "")
    )
    return Measurement(value="pass", detail=detail, evidence=(result,), extra=extra)


def with_memory_faults(
    measured: Measurement,
    gpus: tuple[GpuInfo, ...],
    command: str,
    evidence: tuple[CommandResult, ...],
) -> Measurement:
    """The diagnostic's measurement failed by name where nvidia-smi shows a GPU's memory unfit.

    An uncorrectable ECC error since the driver loaded, a row remap or page retirement
    waiting for a reset, or a failed remap (:attr:`GpuInfo.memory_faults`): DCGM's
    level-1 tests look at retirement and remap counters, not at volatile uncorrectable
    errors, and a node must not pass with any of these whatever the diagnostic said.
    """
    faults = [
        f"GPU{gpu.index} ({gpu.bus_id}): {'; '.join(gpu.memory_faults)}"
        for gpu in gpus
        if gpu.memory_faults
    ]
    if not faults:
        return measured
    extra = dict(measured.extra)
    extra["memory_faults"] = faults
    detail = f"{command}: {'; '.join(faults)}; {measured.detail}"
    return Measurement(
        value="fail", detail=detail, evidence=measured.evidence + evidence, extra=extra
    )
