"""``dcgmi diag -r 1|2|3`` (and ``-j``): the DCGM diagnostic table or its JSON.

The table has a ``Metadata`` section (DCGM version, driver, device ids) and one
section per category (``Deployment``, ``Integration``, ``Hardware``, ``Stress``)
whose rows are tests with a result: ``Pass``/``Fail``/``Skip``/``Warn``, written
``Pass - All`` or ``Fail - GPU: 0, 1`` by DCGM 2-3, or ``Pass`` followed by
``GPU0: Pass`` rows by DCGM 4.  ``Warning``/``Info`` rows (``Warning: GPU0`` in DCGM
4) carry messages that DCGM cuts every 45 characters onto rows with an empty left
cell (``Diag::DisplayVerboseInfo`` in NVIDIA/DCGM ``dcgmi/Diag.cpp``).

DCGM 4 prints a GPU's warning as ``GPU0: Fail`` under a test whose own row says
``Warn`` (``HelperDisplayDiagResult`` shows ``Warn`` only for the test row), so a
``Fail`` under a ``Warn`` test is read as the warning it is.  The JSON (``-j``) of
DCGM 4.0-4.6 writes every warning as ``Fail``, test summary included, so it cannot
tell a warning from a failure: the text is the one to judge by; the JSON is read for
the recorded corpus and for tools that keep it.

Lines the parser does not know (a pod banner, a new row) are skipped and listed in
:attr:`DcgmDiagResult.skipped`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers._textscan import json_document
from pytest_fabric.parsers.base import SkippedLines, ToolReportedError, UnrecognizedOutput, register

__all__ = ["DcgmTest", "DcgmDiagResult", "parse_dcgmi_diag"]

TOOL = "dcgmi-diag"

_SECTION = re.compile(r"^[|+]-+\s+(.+?)\s+-+\+")
# DCGM 4's entity rows: ``GPU0: Pass``, ``CPU1: Skip`` (DcgmFieldsGetEntityGroupString + id).
_ENTITY_RESULT = re.compile(
    r"^(?P<group>[A-Za-z_]+?)\s*(?P<id>\d+)\s*:\s*(?P<result>Pass|Fail|Warn|Skip|Not Run)$",
    re.IGNORECASE,
)
_GPU_LIST = re.compile(r"GPU(?:s)?\s*:?\s*([\d,\s]+)", re.IGNORECASE)
_MESSAGE = re.compile(r"^(Warning|Info|Error|Notice)\b", re.IGNORECASE)
_RESULTS = {
    "pass": "Pass",
    "fail": "Fail",
    "skip": "Skip",
    "warn": "Warn",
    "warning": "Warn",
    "not run": "Not Run",
}
_CHUNK = 45
"""DCGM cuts a message every 45 characters (``DATA_INFO_TAG_LEN``); DCGM 3 tables show 46."""
_KNOWN_PROSE = ("Successfully ran diagnostic for group.",)


@dataclass(frozen=True)
class DcgmTest:
    """One test row: its category (section), name, overall result, per-GPU results and messages.

    ``result`` is ``Pass``, ``Fail``, ``Skip``, ``Warn``, ``Not Run`` (or the text as
    printed when DCGM invents a new word).  ``gpu_results`` maps GPU index to its
    result where DCGM names GPUs (``GPU0: Pass``, ``Fail - GPU: 0, 1``, JSON
    ``entity_id``/``gpu_id``); other entities (``CPU0``) are in ``entity_results``.
    ``messages`` are DCGM's words: ``Warning: GPU0: ...`` for one GPU, ``Warning: ...``
    for the test.
    """

    category: str
    name: str
    result: str
    gpu_results: dict[int, str] = field(default_factory=dict)
    messages: tuple[str, ...] = ()
    entity_results: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        """True when the test or any GPU in it failed."""
        return self.result == "Fail" or "Fail" in self.gpu_results.values()


@dataclass(frozen=True)
class DcgmDiagResult:
    """The metadata rows (as printed), the versions, every test in order, and the lines skipped."""

    metadata: dict[str, str]
    dcgm_version: str | None
    driver_version: str | None
    gpu_device_ids: tuple[str, ...]
    tests: tuple[DcgmTest, ...]
    skipped: tuple[str, ...] = ()
    """Lines read past without being understood, each once (the first 100)."""
    skipped_count: int = 0
    """How many lines were skipped in all."""
    complete: bool = True
    """False when the table stops before its closing border (dcgmi killed, output cut)."""

    @property
    def passed(self) -> bool:
        """True when no test failed (skips and warnings do not fail the diagnostic)."""
        return not self.failed_tests

    @property
    def failed_tests(self) -> tuple[DcgmTest, ...]:
        """The tests that failed, on any GPU."""
        return tuple(test for test in self.tests if test.failed)


def _result_word(text: str) -> str | None:
    lowered = text.strip().lower()
    if lowered.startswith("not run"):
        return "Not Run"
    word = lowered.split()[0] if lowered.split() else ""
    return _RESULTS.get(word)


def _result(text: str) -> tuple[str, dict[int, str]] | None:
    result = _result_word(text)
    if result is None:
        return None
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
    entity_results: dict[str, str] = field(default_factory=dict)
    chunk: str | None = None
    """The last piece of the message being read, while a continuation row may follow."""

    def entity(self, group: str, index: int, result: str) -> None:
        # DCGM 4 prints a warned GPU as 'Fail' under a test whose own row says 'Warn'.
        if result == "Fail" and self.result == "Warn":
            result = "Warn"
        if group.upper() == "GPU":
            self.gpu_results[index] = result
        else:
            self.entity_results[f"{group}{index}"] = result

    def close(self) -> DcgmTest:
        return DcgmTest(
            self.category,
            self.name,
            self.result,
            dict(self.gpu_results),
            tuple(self.messages),
            dict(self.entity_results),
        )


def _right_cell(raw: str) -> str:
    """The right cell as DCGM filled it: the one space of padding removed, trailing padding cut."""
    inner = raw.strip()
    cell = inner[1:-1] if inner.endswith("|") else inner[1:]
    cell = cell.split("|", 1)[1] if "|" in cell else ""
    return (cell[1:] if cell.startswith(" ") else cell).rstrip()


@register(
    TOOL,
    "dcgmi diag -r 1/2/3 [-j]: DCGM diagnostic metadata and per-test, per-GPU Pass/Fail/Skip/Warn",
    corpus=("dcgmi-diag",),
)
def parse_dcgmi_diag(text: str) -> DcgmDiagResult:
    """Parse the ``dcgmi diag`` table, or its ``-j`` JSON, into a :class:`DcgmDiagResult`."""
    if text.lstrip().startswith("{") or (
        "{" in text and "|" not in text and '"test_categories"' in text
    ):
        return _parse_json(text)
    return _parse_table(text)


def _parse_table(text: str) -> DcgmDiagResult:
    metadata: dict[str, str] = {}
    tests: list[_Open] = []
    section: str | None = None
    table_seen = False
    skipped = SkippedLines()
    orphaned = False  # after a test row not understood: its rows belong to no test read
    closed = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if match := _SECTION.match(line):
            section = match.group(1).strip()
            table_seen = True
            orphaned = closed = False
            if tests:
                tests[-1].chunk = None
            continue
        if line.startswith("+"):
            closed = section is not None and line.startswith("+-")
            continue
        if not line.startswith("|"):
            if not table_seen and line.lower().startswith("error"):
                raise ToolReportedError(TOOL, line, line=number)
            if line not in _KNOWN_PROSE:
                skipped.add(line)
            continue
        closed = False
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) < 2:
            skipped.add(line)
            continue
        left, right = cells[0], " ".join(cells[1:]).strip()
        if left == "Diagnostic" and right == "Result":
            table_seen = True
            continue
        if section is None:
            skipped.add(line)
            continue
        if section.lower() == "metadata":
            if left:
                metadata[left] = right
            elif right and metadata:
                last = next(reversed(metadata))
                metadata[last] = f"{metadata[last]} {right}"
            continue
        current = tests[-1] if tests and not orphaned else None
        if left and _MESSAGE.match(left):
            if current is None:
                skipped.add(line)
                continue
            chunk = _right_cell(raw)
            current.messages.append(f"{left}: {chunk}" if chunk else left)
            current.chunk = chunk
            continue
        if left:
            parsed = _result(right)
            orphaned = parsed is None
            if parsed is None:
                skipped.add(line)
                continue
            tests.append(_Open(section, left, parsed[0], parsed[1]))
            continue
        if current is None:
            if right:
                skipped.add(line)
            continue
        if not right:
            continue
        entity = _ENTITY_RESULT.match(right)
        if entity:
            word = _result_word(entity.group("result")) or entity.group("result")
            current.entity(entity.group("group"), int(entity.group("id")), word)
            current.chunk = None
        elif current.chunk is not None and current.messages:
            chunk = _right_cell(raw)
            # A full piece was cut mid-word; a shorter one lost its trailing space to the padding.
            joiner = "" if len(current.chunk) >= _CHUNK else " "
            current.messages[-1] += joiner + chunk
            current.chunk = chunk
        else:
            skipped.add(line)
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
        tests=tuple(t.close() for t in tests),
        skipped=skipped.lines,
        skipped_count=skipped.count,
        complete=closed,
    )


def _text(value: object) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _warnings(entry: dict[str, object], who: str) -> list[str]:
    """``warnings`` as DCGM writes it: objects with ``warning`` (3.x-4.x), or bare strings."""
    found = entry.get("warnings")
    items = found if isinstance(found, list) else [found] if found else []
    out = []
    for item in items:
        message = (
            _text(item.get("warning") or item.get("warnings"))
            if isinstance(item, dict)
            else _text(item)
        )
        if message:
            out.append(f"Warning: {who}{message}")
    info = entry.get("info")
    for item in info if isinstance(info, list) else [info] if info else []:
        if message := _text(item):
            out.append(f"Info: {who}{message}")
    return out


def _parse_json(text: str) -> DcgmDiagResult:
    document = json_document(TOOL, text)
    if not isinstance(document, dict):
        raise UnrecognizedOutput(TOOL, "the JSON is not an object")
    # DCGM 4 names its section 'DCGM Diagnostic'; DCGM 1-3 'DCGM GPU Diagnostic'.
    body = document.get("DCGM Diagnostic", document.get("DCGM GPU Diagnostic"))
    if not isinstance(body, dict):
        raise UnrecognizedOutput(
            TOOL, "no 'DCGM Diagnostic' (4.x) or 'DCGM GPU Diagnostic' (3.x) object"
        )
    if error := _text(body.get("runtime_error")):
        raise ToolReportedError(TOOL, error)
    skipped = SkippedLines()
    metadata: dict[str, str] = {}
    meta = document.get("metadata")
    for source in (meta if isinstance(meta, dict) else {}, body):
        for key, value in source.items():
            if key != "test_categories" and (shown := _text(value)) is not None:
                metadata[key] = shown
    device_ids: list[str] = []
    groups = document.get("entity_groups")
    for group in groups if isinstance(groups, list) else []:
        if isinstance(group, dict) and group.get("entity_group") == "GPU":
            entities = group.get("entities")
            for entity in entities if isinstance(entities, list) else []:
                if isinstance(entity, dict) and (device := _text(entity.get("device_id"))):
                    device_ids.append(device)
    if not device_ids and isinstance(body.get("GPU Device IDs"), list):
        device_ids = [d for d in (_text(v) for v in body["GPU Device IDs"]) if d]
    categories = body.get("test_categories")
    if not isinstance(categories, list):
        raise UnrecognizedOutput(TOOL, "the JSON has no 'test_categories' list")
    tests: list[DcgmTest] = []
    for category in categories:
        if not isinstance(category, dict) or not isinstance(category.get("tests"), list):
            skipped.add(str(category)[:200])
            continue
        name_of_category = _text(category.get("category")) or "?"
        for test in category["tests"]:
            if not isinstance(test, dict) or not _text(test.get("name")):
                skipped.add(str(test)[:200])
                continue
            tests.append(_json_test(name_of_category, test, skipped))
    version = metadata.get("version")
    return DcgmDiagResult(
        metadata=metadata,
        dcgm_version=version,
        driver_version=metadata.get("Driver Version Detected"),
        gpu_device_ids=tuple(device_ids),
        tests=tuple(tests),
        skipped=skipped.lines,
        skipped_count=skipped.count,
    )


def _json_test(category: str, test: dict[str, object], skipped: SkippedLines) -> DcgmTest:
    gpus: dict[int, str] = {}
    others: dict[str, str] = {}
    messages: list[str] = []
    statuses: list[str] = []
    results = test.get("results")
    for entry in results if isinstance(results, list) else []:
        if not isinstance(entry, dict):
            skipped.add(str(entry)[:200])
            continue
        status = _result_word(_text(entry.get("status")) or "") or _text(entry.get("status"))
        if status is None:
            skipped.add(str(entry)[:200])
            continue
        statuses.append(status)
        group = _text(entry.get("entity_group")) or "GPU"
        ids = _text(entry.get("entity_id", entry.get("gpu_id", entry.get("gpu_ids"))))
        indices = [int(i) for i in (ids or "").replace(",", " ").split() if i.isdigit()]
        who = f"{group}{indices[0]}: " if len(indices) == 1 else ""
        for index in indices:
            if group.upper() == "GPU":
                gpus[index] = status
            else:
                others[f"{group}{index}"] = status
        messages += _warnings(entry, who)
    summary = test.get("test_summary")
    result = None
    if isinstance(summary, dict):
        result = _result_word(_text(summary.get("status")) or "") or _text(summary.get("status"))
        for message in _warnings(summary, ""):
            # The summary repeats every GPU's warnings without naming the GPU.
            bare = message.split(": ", 1)[1]
            if not any(m.endswith(bare) for m in messages):
                messages.append(message)
    if result is None:
        # DCGM 3 has no summary: the test's result is its worst GPU's.
        order = ("Fail", "Warn", "Pass", "Skip", "Not Run")
        result = next(
            (word for word in order if word in statuses), statuses[0] if statuses else "Not Run"
        )
    return DcgmTest(category, str(test["name"]).strip(), result, gpus, tuple(messages), others)
