"""``dcgmproftester<CUDA major> --no-dcgm-validation -t 1004 -d SECONDS``: tensor-core GEMM load and its rate.

Field 1004 (``DCGM_FI_PROF_PIPE_TENSOR_ACTIVE``) makes each GPU's worker run half-precision
matrix multiply-accumulates on the tensor cores; once a second or so the worker prints what it
achieved (NVIDIA's DCGM user guide, "CUDA Test Generator (dcgmproftester)")::

    Worker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0.000 (250362.2 gflops)      # DCGM 3.x
    Worker 0:0 [1004]: TensorEngineActive: generated ???, dcgm 0 (1.89e+05 gflops).        # DCGM 3.3+
    TensorEngineActive: generated ???, dcgm 0.000 (27605.2 gflops)                          # DCGM 2.x, one GPU

``Worker G:S`` is DCGM's GPU id and the worker's slice (``S`` > 0 only for MIG instances); each
worker also says which GPU it drove (``Worker 0:0[1004]: Message: Bus ID 00000000:0A:00.0 mapped
to cuda device ID 0``).  With validation off, ``dcgm`` is 0 (DCGM's own reading is not taken); the
figure in brackets is the worker's own count of floating-point operations per second.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from pytest_fabric.parsers.base import SkippedLines, ToolReportedError, UnrecognizedOutput, register

__all__ = ["DcgmProfTesterResult", "WorkerRate", "parse_dcgmproftester"]

TOOL = "dcgmproftester"

_NUMBER = r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?"
_SAMPLE = re.compile(
    r"^(?:Worker\s+(?P<gpu>\d+):(?P<slice>\d+)\s*\[(?P<field>\d+)\]:\s*)?"
    r"(?P<metric>\w+): generated .*?\((?P<gflops>" + _NUMBER + r") gflops\)\.?\s*$"
)
_BUS = re.compile(
    r"^Worker\s+(?P<gpu>\d+):(?P<slice>\d+)\s*\[\d+\]:\s*Message: Bus ID (?P<bus>[0-9A-Fa-f:.]+) mapped to cuda device ID (?P<cuda>\d+)"
)
_ERROR = re.compile(r"(^|\s)(Error|ERROR|error:|Failed|FAILED|failed to|unable to|Unable to)\b")
_BENIGN = re.compile(r"^Skipping \w+\(\) since DCGM validation is disabled|completed successfully")


@dataclass(frozen=True)
class WorkerRate:
    """One worker's readings: DCGM GPU id, slice, the metric it loaded, every reported rate (GFLOP/s)."""

    gpu: int
    slice: int
    metric: str
    gflops: tuple[float, ...]
    bus_id: str | None = None

    @property
    def median_tflops(self) -> float:
        """The median of the worker's readings, in TFLOP/s: the sustained rate, past the first ramp-up reading."""
        return statistics.median(self.gflops) / 1000.0


@dataclass(frozen=True)
class DcgmProfTesterResult:
    """Every worker's readings, in the order the workers first reported; ``skipped``: lines not read."""

    workers: tuple[WorkerRate, ...]
    skipped: tuple[str, ...] = ()
    skipped_count: int = 0

    def by_gpu(self) -> dict[int, WorkerRate]:
        """Whole-GPU workers (slice 0) by DCGM GPU id."""
        return {w.gpu: w for w in self.workers if w.slice == 0}


@register(TOOL, "dcgmproftester -t 1004: per-GPU tensor-core GEMM rate (gflops readings, bus ids)")
def parse_dcgmproftester(text: str) -> DcgmProfTesterResult:
    """Read every worker's rate readings and bus id; a run with no reading at all is an error."""
    samples: dict[tuple[int, int], tuple[str, list[float]]] = {}
    buses: dict[tuple[int, int], str] = {}
    errors: list[str] = []
    skipped = SkippedLines()
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if match := _SAMPLE.match(line):
            key = (int(match.group("gpu") or 0), int(match.group("slice") or 0))
            metric, values = samples.setdefault(key, (match.group("metric"), []))
            values.append(float(match.group("gflops")))
        elif match := _BUS.match(line):
            buses[(int(match.group("gpu")), int(match.group("slice")))] = match.group("bus")
        elif _ERROR.search(line) and not _BENIGN.search(line):
            errors.append(line)
        else:
            skipped.add(line)
    if not samples:
        if errors:
            raise ToolReportedError(TOOL, errors[0])
        raise UnrecognizedOutput(TOOL, "no '<metric>: generated ..., dcgm ... (N gflops)' reading (did the load start?)")
    workers = tuple(
        WorkerRate(gpu, sl, metric, tuple(values), buses.get((gpu, sl)))
        for (gpu, sl), (metric, values) in samples.items()
    )
    return DcgmProfTesterResult(workers, skipped.lines, skipped.count)
