"""GPU health: ``dcgmi diag -r LEVEL`` on a node, each failed test named per GPU.

Level 1 runs the deployment checks (about a minute), 2 adds short PCIe, memory and stress
tests (a few minutes), 3 and 4 run long stress tests (tens of minutes, over an hour): the
timeouts follow. dcgmi exits non-zero when a test fails, so the table, not the exit status,
decides; no table at all is an error with dcgmi's own words (``Error: unable to establish a
connection to the specified host engine``: nv-hostengine is not running).
"""

from __future__ import annotations

from ..cluster import NodeHandle
from ..evidence import CommandResult
from ..parsers import dcgmi_diag
from ..parsers.base import ParseError, ToolReportedError
from ..transport.outcome import judge as judge_result
from ..verdict import Measurement
from .base import MeasurementError

__all__ = ["TIMEOUT_S", "failures", "gpu_health"]

TIMEOUT_S = {1: 300.0, 2: 1200.0, 3: 3600.0, 4: 3 * 3600.0}


def failures(result: dcgmi_diag.DcgmDiagResult) -> list[str]:
    """One line per GPU and failed test: ``GPU3: PCIe (Warning: GPU 3 GPU to Host bandwidth too low. ...)``."""
    out = []
    for test in result.failed_tests:
        why = f" ({'; '.join(test.messages)})" if test.messages else ""
        gpus = sorted(g for g, r in test.gpu_results.items() if r == "Fail")
        if gpus:
            out += [f"GPU{g}: {test.name}{why}" for g in gpus]
        else:
            out.append(f"{test.category} {test.name} failed (no GPU named){why}")
    return out


def gpu_health(node: NodeHandle, level: int) -> Measurement:
    """Run the diagnostic at ``level``; ``pass`` or ``fail`` with each failed test per GPU."""
    command = f"dcgmi diag -r {level}"
    result: CommandResult = node.run(command, timeout=TIMEOUT_S[level], check=False)
    if result.exit_code == 127:
        judge_result(result, check=True)  # raises ToolMissing, naming the package
    try:
        parsed = dcgmi_diag.parse_dcgmi_diag(result.stdout)
    except ToolReportedError as exc:
        raise MeasurementError(node.name, f"dcgmi reported: {exc}", command=command,
                               fix="start the DCGM host engine (systemctl start nvidia-dcgm, or nv-hostengine)") from exc
    except ParseError as exc:
        tail = (result.stderr or result.stdout).strip()[-300:]
        raise MeasurementError(node.name, f"no diagnostic table (exit {result.exit_code}): {tail or exc}",
                               command=command, fix="run the command by hand on the node") from exc
    failed = failures(parsed)
    versions = {"dcgm": parsed.dcgm_version} if parsed.dcgm_version else {}
    extra = {"tool_versions": versions, "dcgm": {t.name: t.result for t in parsed.tests}}
    if failed:
        return Measurement(value="fail", detail=f"{command}: " + "; ".join(failed), evidence=(result,), extra=extra)
    skipped = [t.name for t in parsed.tests if t.result == "Skip"]
    detail = f"{command}: {len(parsed.tests)} test(s) passed" + (f", skipped: {', '.join(skipped)}" if skipped else "")
    return Measurement(value="pass", detail=detail, evidence=(result,), extra=extra)
