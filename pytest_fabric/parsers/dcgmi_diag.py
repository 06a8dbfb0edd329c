"""``dcgmi diag -r 1|2|3``: the DCGM diagnostic table.

The table has a ``Metadata`` section (DCGM version, driver, device ids) and one
section per category (``Deployment``, ``Integration``, ``Hardware``, ``Stress``)
whose rows are tests with a result: ``Pass``/``Fail``/``Skip``/``Warn``, written
``Pass - All`` or ``Fail - GPU: 0, 1`` by DCGM 2-3, or ``Pass`` followed by
``GPU0: Pass`` rows by DCGM 4.  ``Warning``/``Info``/``Error`` rows carry messages
that may wrap onto rows with an empty left cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .base import ToolReportedError, UnrecognizedOutput, register

__all__ = ["DcgmTest", "DcgmDiagResult", "parse_dcgmi_diag"]

TOOL = "dcgmi-diag"

_SECTION = re.compile(r"^[|+]-+\s+(.+?)\s+-+\+")
_GPU_RESULT = re.compile(r"^GPU\s*(\d+)\s*:\s*(\w+)", re.IGNORECASE)
_GPU_LIST = re.compile(r"GPU(?:s)?\s*:?\s*([\d,\s]+)", re.IGNORECASE)
_MESSAGE = re.compile(r"^(Warning|Info|Error|Notice)\b", re.IGNORECASE)
_RESULTS = {"pass": "Pass", "fail": "Fail", "skip": "Skip", "warn": "Warn", "warning": "Warn"}


@dataclass(frozen=True)
class DcgmTest:
    """One test row: its category (section), name, overall result, per-GPU results and messages.

    ``result`` is ``Pass``, ``Fail``, ``Skip``, ``Warn`` (or the text as printed when
    DCGM invents a new word).  ``gpu_results`` maps GPU index to its result where DCGM
    names GPUs (``GPU0: Pass``, ``Fail - GPU: 0, 1``).
    """

    category: str
    name: str
    result: str
    gpu_results: dict[int, str] = field(default_factory=dict)
    messages: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """True when the test or any GPU in it failed."""
        return self.result == "Fail" or "Fail" in self.gpu_results.values()


@dataclass(frozen=True)
class DcgmDiagResult:
    """The metadata rows (as printed), the versions, and every test in order."""

    metadata: dict[str, str]
    dcgm_version: str | None
    driver_version: str | None
    gpu_device_ids: tuple[str, ...]
    tests: tuple[DcgmTest, ...]

    @property
    def passed(self) -> bool:
        """True when no test failed (skips and warnings do not fail the diagnostic)."""
        return not self.failed_tests

    @property
    def failed_tests(self) -> tuple[DcgmTest, ...]:
        """The tests that failed, on any GPU."""
        return tuple(test for test in self.tests if test.failed)


def _result(text: str) -> tuple[str, dict[int, str]] | None:
    word = text.split()[0].lower() if text.split() else ""
    if word not in _RESULTS:
        return None
    result = _RESULTS[word]
    gpus: dict[int, str] = {}
    if " - " in text:
        detail = text.split(" - ", 1)[1]
        match = _GPU_LIST.search(detail)
        if match:
            for token in match.group(1).replace(",", " ").split():
                if token.isdigit():
                    gpus[int(token)] = result
    return result, gpus


@dataclass
class _Open:
    category: str
    name: str
    result: str
    gpu_results: dict[int, str]
    messages: list[str] = field(default_factory=list)


@register(TOOL, "dcgmi diag -r 1/2/3: DCGM diagnostic metadata and per-test Pass/Fail/Skip/Warn", corpus=("dcgmi-diag",))
def parse_dcgmi_diag(text: str) -> DcgmDiagResult:
    """Parse the ``dcgmi diag`` table into a :class:`DcgmDiagResult`."""
    metadata: dict[str, str] = {}
    tests: list[_Open] = []
    section: str | None = None
    table_seen = False
    continuing_message = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if match := _SECTION.match(line):
            section = match.group(1).strip()
            table_seen = True
            continuing_message = False
            continue
        if line.startswith("+"):
            continue
        if not line.startswith("|"):
            if not table_seen and line.lower().startswith("error"):
                raise ToolReportedError(TOOL, line, line=number)
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) < 2:
            continue
        left, right = cells[0], " ".join(cells[1:]).strip()
        if left == "Diagnostic" and right == "Result":
            table_seen = True
            continue
        if section is None:
            continue
        if section.lower() == "metadata":
            if left:
                metadata[left] = right
            continue
        if left and _MESSAGE.match(left):
            if tests:
                tests[-1].messages.append(f"{left}: {right}" if right else left)
                continuing_message = True
            continue
        if left:
            parsed = _result(right)
            if parsed is None:
                raise UnrecognizedOutput(TOOL, f"test {left!r}: unknown result {right!r}", line=number)
            tests.append(_Open(section, left, parsed[0], parsed[1]))
            continuing_message = False
            continue
        if not tests or not right:
            continue
        gpu = _GPU_RESULT.match(right)
        if gpu and not continuing_message:
            word = gpu.group(2).lower()
            tests[-1].gpu_results[int(gpu.group(1))] = _RESULTS.get(word, gpu.group(2))
        elif tests[-1].messages:
            tests[-1].messages[-1] += " " + right
    if not table_seen:
        raise UnrecognizedOutput(TOOL, "no dcgmi diag result table found")
    if not tests and not metadata:
        raise UnrecognizedOutput(TOOL, "the diagnostic table has no metadata and no test rows")
    device_ids = metadata.get("GPU Device IDs Detected", "")
    return DcgmDiagResult(
        metadata=metadata,
        dcgm_version=metadata.get("DCGM Version"),
        driver_version=metadata.get("Driver Version Detected"),
        gpu_device_ids=tuple(d.strip() for d in device_ids.split(",") if d.strip()),
        tests=tuple(DcgmTest(t.category, t.name, t.result, dict(t.gpu_results), tuple(t.messages)) for t in tests),
    )
