"""``nvbandwidth``: copy bandwidth between host and GPUs and between GPUs.

Each testcase starts ``Running <name>.`` and prints one matrix (v0.2-v0.7), or for
bidirectional SM testcases in v0.7 three (``Read1``, ``Read2``, ``Total``), each
followed by a ``SUM <name>[_suffix] <value>`` line.  Rows and columns are device
indexes; for host testcases the single row ``0`` is the CPU.  ``N/A`` marks a pair
that was not measured (self-copy, or no peer access on PCIe/partial NVLink meshes).
Output relayed by ``mpirun --tag-output`` or ``srun -l`` (multi-node runs) is read
through its rank prefixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers._textscan import launcher_lines
from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput, register

__all__ = [
    "NvbandwidthMatrix",
    "NvbandwidthTestcase",
    "NvbandwidthResult",
    "parse_nvbandwidth",
    "pair_bandwidths_gbytes_per_s",
    "min_pair_bandwidth",
    "device_local_bandwidths",
]

TOOL = "nvbandwidth"

_VERSION = re.compile(r"^nvbandwidth Version:\s*(\S+)")
_RUNTIME = re.compile(r"^CUDA Runtime Version:\s*(\d+)")
_CUDA_DRIVER = re.compile(r"^CUDA Driver Version:\s*(\d+)")
_DRIVER = re.compile(r"^Driver Version:\s*(\S+)")
_DEVICE = re.compile(r"^Device\s+(\d+):\s*(.*?)\s*$")
_RUNNING = re.compile(r"^Running\s+(\w+)\.?\s*$")
_TITLE = re.compile(r"\((GB/s|ns|us)\)\s*$")
_LABEL = re.compile(r"\b(Read1|Read2|Write1|Write2|Total)\b")
_SUM = re.compile(r"^SUM\s+(\w+)\s+([0-9.]+)\s*$")
_INT_ROW = re.compile(r"^\s*\d+(\s+\d+)*\s*$")


@dataclass(frozen=True)
class NvbandwidthMatrix:
    """One printed matrix.  ``cells[(row, column)]`` is the value in ``unit`` (``GB/s`` for
    bandwidth testcases, ``ns`` for latency ones), ``None`` for ``N/A``.  ``label`` is
    ``Read1``/``Read2``/``Total`` for v0.7 bidirectional matrices, else ``None``."""

    title: str
    unit: str
    label: str | None
    rows: tuple[int, ...]
    columns: tuple[int, ...]
    cells: dict[tuple[int, int], float | None]
    sum: float | None = None


@dataclass(frozen=True)
class NvbandwidthTestcase:
    """A testcase: its matrices and the ``SUM`` printed for it (GB/s for bandwidth testcases).

    ``waived`` is set when nvbandwidth skipped it (e.g. too few GPUs); ``error`` holds an
    ``ERROR:`` line it printed.
    """

    name: str
    matrices: tuple[NvbandwidthMatrix, ...]
    sum_gbytes_per_s: float | None
    waived: bool = False
    error: str | None = None

    def matrix(self, label: str | None = None) -> NvbandwidthMatrix:
        """The matrix with ``label``; with no label the unlabelled one, else ``Total``."""
        if label is None:
            for candidate in self.matrices:
                if candidate.label is None:
                    return candidate
            label = "Total"
        for candidate in self.matrices:
            if candidate.label == label:
                return candidate
        raise KeyError(f"testcase {self.name} has no {label or 'unlabelled'} matrix (it has {[m.label for m in self.matrices]})")


@dataclass(frozen=True)
class NvbandwidthResult:
    """The whole run: versions, devices (index -> name as printed) and testcases in order."""

    version: str | None
    cuda_runtime_version: int | None
    cuda_driver_version: int | None
    driver_version: str | None
    devices: dict[int, str]
    testcases: tuple[NvbandwidthTestcase, ...]

    def testcase(self, name: str) -> NvbandwidthTestcase:
        """The testcase called ``name`` (``device_to_device_memcpy_read_ce``)."""
        for testcase in self.testcases:
            if testcase.name == name:
                return testcase
        raise KeyError(f"testcase {name!r} not in the output; ran: {', '.join(t.name for t in self.testcases)}")


@dataclass
class _Open:
    name: str
    matrices: list[NvbandwidthMatrix] = field(default_factory=list)
    sum: float | None = None
    waived: bool = False
    error: str | None = None


def _number(cell: str, line: int) -> float | None:
    if cell.upper() == "N/A":
        return None
    try:
        return float(cell)
    except ValueError:
        raise UnrecognizedOutput(TOOL, f"matrix cell {cell!r} is not a number or N/A", line=line) from None


@register(TOOL, "nvbandwidth: per-testcase GPU/host copy bandwidth matrices (v0.2-v0.7) with SUM lines", corpus=("nvbandwidth",))
def parse_nvbandwidth(text: str) -> NvbandwidthResult:
    """Parse nvbandwidth text output (one or many testcases) into an :class:`NvbandwidthResult`."""
    # Multi-node nvbandwidth runs under mpirun (or srun): read through rank prefixes.
    lines = [line.rstrip("\r") for _, line in launcher_lines(text)]
    version = driver = None
    runtime = cuda_driver = None
    devices: dict[int, str] = {}
    testcases: list[_Open] = []
    errors: list[str] = []
    index = 0
    while index < len(lines):
        number = index + 1
        line = lines[index].strip()
        index += 1
        if not line:
            continue
        if match := _VERSION.match(line):
            version = match.group(1)
        elif match := _RUNTIME.match(line):
            runtime = int(match.group(1))
        elif match := _CUDA_DRIVER.match(line):
            cuda_driver = int(match.group(1))
        elif match := _DRIVER.match(line):
            driver = match.group(1)
        elif (match := _DEVICE.match(line)) and not testcases:
            devices[int(match.group(1))] = match.group(2)
        elif match := _RUNNING.match(line):
            testcases.append(_Open(match.group(1)))
        elif match := _SUM.match(line):
            if not testcases:
                raise UnrecognizedOutput(TOOL, "SUM line before any 'Running <testcase>.'", line=number)
            current = testcases[-1]
            value = float(match.group(2))
            name = match.group(1)
            # v0.7 bidirectional testcases sum each matrix separately; the
            # testcase's own figure is the ``_total`` one.
            if name in (current.name, f"{current.name}_total"):
                current.sum = value
            if current.matrices and current.matrices[-1].sum is None:
                last = current.matrices[-1]
                current.matrices[-1] = NvbandwidthMatrix(last.title, last.unit, last.label, last.rows, last.columns, last.cells, value)
        elif line.upper().startswith("ERROR"):
            errors.append(line)
            if testcases:
                testcases[-1].error = line
        elif line.lower().startswith("waived"):
            if testcases:
                testcases[-1].waived = True
        elif (title := _TITLE.search(line)) and testcases:
            matrix, index = _read_matrix(lines, index, line, title.group(1))
            testcases[-1].matrices.append(matrix)
    if not testcases:
        if errors:
            raise ToolReportedError(TOOL, errors[0])
        if version is None:
            raise UnrecognizedOutput(TOOL, "no 'nvbandwidth Version' line and no 'Running <testcase>.' line")
        raise UnrecognizedOutput(TOOL, "no testcase ran ('Running <testcase>.' missing)")
    for testcase in testcases:
        if not testcase.matrices and not testcase.waived and testcase.error is None:
            raise UnrecognizedOutput(TOOL, f"testcase {testcase.name} printed no matrix (truncated output?)")
    return NvbandwidthResult(
        version=version,
        cuda_runtime_version=runtime,
        cuda_driver_version=cuda_driver,
        driver_version=driver,
        devices=devices,
        testcases=tuple(
            NvbandwidthTestcase(t.name, tuple(t.matrices), t.sum, waived=t.waived, error=t.error) for t in testcases
        ),
    )


def _read_matrix(lines: list[str], index: int, title: str, unit: str) -> tuple[NvbandwidthMatrix, int]:
    """Read the column header and the rows after a matrix title; return it and the next line index."""
    while index < len(lines) and not lines[index].strip():
        index += 1
    if index >= len(lines) or not _INT_ROW.match(lines[index]):
        raise UnrecognizedOutput(TOOL, f"matrix {title!r} has no column header", line=index + 1)
    columns = tuple(int(token) for token in lines[index].split())
    index += 1
    rows: list[int] = []
    cells: dict[tuple[int, int], float | None] = {}
    while index < len(lines):
        tokens = lines[index].split()
        if not tokens or not tokens[0].isdigit():
            break
        if len(tokens) != len(columns) + 1:
            raise UnrecognizedOutput(
                TOOL, f"matrix row {tokens[0]} has {len(tokens) - 1} cells for {len(columns)} columns", line=index + 1
            )
        row = int(tokens[0])
        rows.append(row)
        for column, cell in zip(columns, tokens[1:]):
            cells[(row, column)] = _number(cell, index + 1)
        index += 1
    if not rows:
        raise UnrecognizedOutput(TOOL, f"matrix {title!r} has no rows", line=index + 1)
    label = _LABEL.search(title)
    return NvbandwidthMatrix(title, unit, label.group(1) if label else None, tuple(rows), columns, cells), index


def pair_bandwidths_gbytes_per_s(
    result: NvbandwidthResult, testcase: str, label: str | None = None
) -> dict[tuple[int, int], float | None]:
    """Per (row, column) GPU pair, the bandwidth of ``testcase`` in GB/s, self-pairs left out.

    For ``device_to_device_memcpy_read_ce`` that is the unidirectional copy bandwidth
    of each ordered pair.  ``None`` means nvbandwidth printed ``N/A`` (no peer access).
    """
    matrix = result.testcase(testcase).matrix(label)
    if matrix.unit != "GB/s":
        raise ValueError(f"testcase {testcase} reports {matrix.unit}, not a bandwidth")
    return {pair: value for pair, value in matrix.cells.items() if pair[0] != pair[1]}


def min_pair_bandwidth(
    result: NvbandwidthResult, testcase: str, label: str | None = None
) -> tuple[tuple[int, int], float] | None:
    """The slowest measured pair of ``testcase`` and its GB/s; ``N/A`` pairs are skipped.

    ``None`` when no pair was measured.  Pairs that are ``N/A`` are a topology fact
    (see :func:`pair_bandwidths_gbytes_per_s`), not a slow link.
    """
    measured = [(value, pair) for pair, value in pair_bandwidths_gbytes_per_s(result, testcase, label).items() if value is not None]
    if not measured:
        return None
    value, pair = min(measured)
    return pair, value


def device_local_bandwidths(result: NvbandwidthResult) -> dict[int, float | None]:
    """Per GPU, ``device_local_copy``'s GB/s: a copy between two buffers in the GPU's own memory.

    Each byte is read and written once in HBM, and nvbandwidth counts it once: the memory moves
    twice the figure (8x H100 SXM print ~1519 GB/s each, of HBM3's 3.35 TB/s).
    """
    matrix = result.testcase("device_local_copy").matrix()
    return {column: value for (_row, column), value in sorted(matrix.cells.items())}
