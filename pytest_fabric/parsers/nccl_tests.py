"""nccl-tests (``all_reduce_perf``, ``all_gather_perf``, ``alltoall_perf``, ...): text -> :class:`NcclTestsResult`.

Reads every table layout nccl-tests has printed: the old one (``type redop`` or
``type`` only, ``error`` column), the newer one (``redop root``, ``#wrong``), rows
whose ``redop`` cell is blank (old ``alltoall_perf``), ``N/A`` in ``#wrong`` when
validation is off, and the 2.29-era column widths.  Multi-node runs carry launcher
noise (ssh ``Warning: Permanently added``, mpirun banners, ``NCCL INFO`` lines in
the middle of the table); a line is a data row only when it has the row's shape.
Output relayed by ``mpirun --tag-output`` (``[1,0]<stdout>:``) or ``srun -l``
(`` 0: ``) is read through its rank prefixes.

nccl-tests 2.17 and later open with ``# nccl-tests version 2.17.6 nccl-headers=22602
nccl-library=22602`` and ``# Collective test starting: all_reduce_perf``, may end a
row with a timestamp (``-Z``), and print ``# error: ...`` with NCCL's last error;
rccl-tests (ROCm) prints ``rccl-tests: Version develop:448c4c7`` or ``# rccl-tests
version ...``, ``RCCL version : 2.22.3-HEAD:7d8d67c`` and ``HIP version`` /
``ROCm version`` / ``Hostname`` / ``Librccl path`` lines.  Any other line that is
not a comment is skipped and listed in :attr:`NcclTestsResult.skipped` (a line that
starts like a row but is not one is how a changed layout shows), never a failure
of the whole file.

The two layouts' last column of each half means different things, and both are
kept under their own names: ``#wrong`` (newer) counts wrong elements, ``error``
(older) is the largest deviation from the expected result (``7e-07``), a
magnitude that rounding makes non-zero on a healthy run.  Whether either is too
much is what nccl-tests itself says in ``Out of bounds values : N OK|FAILED``.

Bandwidths are GB/s (10^9 bytes/s), as nccl-tests prints them.  Use
:func:`busbw_at` at the size the profile names, never the ``# Avg bus bandwidth``
line: that averages the whole size sweep, small sizes included, and says nothing
about what the fabric delivers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers._textscan import launcher_lines
from pytest_fabric.parsers.base import (
    ParseError,
    SkippedLines,
    ToolReportedError,
    UnrecognizedOutput,
    register,
)

__all__ = [
    "NcclRank",
    "NcclResult",
    "NcclRow",
    "NcclTestsResult",
    "busbw_at",
    "largest_size_row",
    "parse",
    "row_at",
]

TOOL = "nccl-tests"

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_WRONG = rf"(?:\d+|N/A|{_NUMBER})"
_TIMESTAMP = r"(?:\s+(?P<timestamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d))?"
# size count type [redop] [root]  then out-of-place and in-place (time algbw busbw wrong) each.
_ROW_RE = re.compile(
    r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?:\s+(?P<redop>[A-Za-z_][A-Za-z0-9_]*))?(?:\s+(?P<root>-?\d+))?"
    rf"\s+(?P<o_time>{_NUMBER})\s+(?P<o_algbw>{_NUMBER})\s+(?P<o_busbw>{_NUMBER})\s+(?P<o_wrong>{_WRONG})"
    rf"\s+(?P<i_time>{_NUMBER})\s+(?P<i_algbw>{_NUMBER})\s+(?P<i_busbw>{_NUMBER})\s+(?P<i_wrong>{_WRONG}){_TIMESTAMP}\s*$"
)
_PARAMS_RE = re.compile(
    r"^#\s*nThread\s+(?P<threads>\d+)\s+nGpus\s+(?P<gpus>\d+)\s+minBytes\s+(?P<min>\d+)\s+maxBytes\s+(?P<max>\d+)"
)
_RANK_RE = re.compile(
    r"^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*?)\s*$"
)
_VERSION_RE = re.compile(r"[NR]CCL version\s*:?\s*(?P<version>\d+\.\d+\.\d+\S*)")
# 2.17+: "# nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602"; rccl-tests prints
# "# rccl-tests version 2.17.9-<branch>:<sha> rccl-headers=... rccl-library=..." or, older,
# "rccl-tests: Version develop:448c4c7".
_TESTS_VERSION_RE = re.compile(
    r"^#?\s*(?P<suite>[nr]ccl-tests)(?: version |: Version )(?P<version>\S+)"
    r"(?:\s+[nr]ccl-headers=(?P<headers>\d+)\s+[nr]ccl-library=(?P<library>\d+))?"
)
_STARTING_RE = re.compile(r"^#\s*Collective test starting:\s*(?P<name>\S+)")
_LAST_ERROR_RE = re.compile(r"^#\s*error:\s*(?P<error>.+)$")
# rccl-tests' banner after the rank lines; read as known, not skipped.
_ROCM_BANNER_RE = re.compile(r"^(?:HIP version|ROCm version|Hostname|Librccl path)\s*:")
_ROW_START_RE = re.compile(r"^\s*\d+\s+\d+\s+[A-Za-z_]")
# The first versions printed these two trailer lines without the leading '#'.
_AVG_RE = re.compile(rf"^#?\s*Avg bus bandwidth\s*:\s*(?P<value>{_NUMBER})")
_OOB_RE = re.compile(r"^#?\s*Out of bounds values\s*:\s*(?P<count>\d+)\s*(?P<status>\w+)?")
_CONCLUDED_RE = re.compile(r"^#\s*Collective test concluded:\s*(?P<name>\S+)")
_FAILURE_RE = re.compile(
    r"(?:Test (?:NCCL|CUDA|HIP) failure|Test failure|NCCL failure|Test timeout)\b.*", re.IGNORECASE
)
_HEADER_RE = re.compile(r"^#\s*size\s+count\s+type\b")
_COUNT_CELL_RE = re.compile(r"\d+")


@dataclass(frozen=True)
class NcclRank:
    """One ``# Rank`` line: which GPU on which host plays that rank."""

    rank: int
    group: int | None
    pid: int
    host: str
    device: int
    bus_id: str
    name: str


@dataclass(frozen=True)
class NcclRow:
    """One message size: out-of-place and in-place time (us), algbw and busbw (GB/s), and the check.

    The check is ``wrong`` (a count of wrong elements, newer layout) or ``error``
    (the largest deviation from the expected values, older layout); the other is
    ``None``, and both are ``None`` when validation was off (``N/A``).
    """

    size_bytes: int
    count: int
    type: str
    redop: str | None
    root: int | None
    time_us: float
    algbw_gbytes_per_s: float
    busbw_gbytes_per_s: float
    wrong: int | None
    """``#wrong``: elements that differed from the expected result; ``None`` in the old layout or with ``N/A``."""
    in_place_time_us: float
    in_place_algbw_gbytes_per_s: float
    in_place_busbw_gbytes_per_s: float
    in_place_wrong: int | None
    error: float | None = None
    """Old layout's ``error``: the largest deviation from the expected values (``7e-07``), not a count."""
    in_place_error: float | None = None
    timestamp: str | None = None
    """``-Z`` (2.17+): the row's wall-clock time, ``YYYY-MM-DD HH:MM:SS`` as printed."""


@dataclass(frozen=True)
class NcclTestsResult:
    """A parsed nccl-tests run.

    ``avg_busbw_gbytes_per_s`` is the tool's ``# Avg bus bandwidth``: the mean over
    every size of the sweep, so it must not be judged against a fabric's bandwidth;
    use :func:`busbw_at` or :func:`largest_size_row`.
    """

    collective: str | None
    """``all_reduce_perf`` etc., from the ``# Collective test concluded`` trailer or (2.17+) the
    ``# Collective test starting`` line (newer versions only)."""
    nccl_version: str | None
    threads: int | None
    gpus_per_thread: int | None
    min_bytes: int | None
    max_bytes: int | None
    ranks: tuple[NcclRank, ...]
    num_ranks: int
    """Highest rank number + 1 (an excerpt may list only the last ``# Rank`` line)."""
    hosts: tuple[str, ...]
    rows: tuple[NcclRow, ...]
    avg_busbw_gbytes_per_s: float | None
    out_of_bounds: int | None
    out_of_bounds_ok: bool | None
    concluded: bool
    """``# Collective test concluded`` was printed (newer versions print it when the run completes)."""
    failures: tuple[str, ...] = ()
    """nccl-tests' own failure lines (``host: Test NCCL failure common.cu:N '...'``, `` .. host pid N: Test
    failure common.cu:N``) printed beside the table, each once: the lines skipped to read it.  A failed run still prints what
    it measured (ranks that fail after wrong results, a rank 0 that prints the trailer), so the table
    is returned with them; whether the run can be trusted is the caller's to judge."""
    tests_version: str | None = None
    """``2.17.6`` from ``# nccl-tests version`` (2.17+), or rccl-tests' ``develop:448c4c7``."""
    library_version_code: int | None = None
    """``nccl-library=22602`` (``rccl-library=``): the NCCL the binary ran with, as NCCL_VERSION_CODE."""
    last_error: str | None = None
    """``# error: ...`` (2.17+): NCCL's last error string, printed after the table."""
    skipped: tuple[str, ...] = ()
    """Lines that are neither comments nor anything this parser reads (launcher and NCCL_DEBUG noise,
    and rows of a layout it does not know), each once, the first 100 of them."""
    skipped_count: int = 0
    """How many lines were skipped in all (repeats and those beyond the first 100 included)."""

    @property
    def library_version(self) -> str | None:
        """``nccl-library=22602`` as ``2.26.2`` (codes of NCCL 2.9 and later: major*10000+minor*100+patch)."""
        code = self.library_version_code
        if code is None:
            return None
        if code >= 20900:
            return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
        return f"{code // 1000}.{code // 100 % 10}.{code % 100}"

    @property
    def unknown_rows(self) -> tuple[str, ...]:
        """Skipped lines that start like a result row (size, count, type): a layout this parser does not read."""
        return tuple(line for line in self.skipped if _ROW_START_RE.match(line))

    @property
    def sizes(self) -> tuple[int, ...]:
        """Every size in the table, in order (size-0 rows may repeat)."""
        return tuple(row.size_bytes for row in self.rows)

    @property
    def wrong_total(self) -> int | None:
        """Sum of the ``#wrong`` cells; ``None`` when validation was off or the table has the old ``error`` column."""
        counts = [c for row in self.rows for c in (row.wrong, row.in_place_wrong) if c is not None]
        return sum(counts) if counts else None

    @property
    def max_error(self) -> float | None:
        """The largest old-layout ``error`` cell (a deviation, not a count); ``None`` in the newer layout."""
        errors = [e for row in self.rows for e in (row.error, row.in_place_error) if e is not None]
        return max(errors) if errors else None


# Short alias: probes say ``nccl_tests.NcclResult``.
NcclResult = NcclTestsResult


def row_at(result: NcclTestsResult, size_bytes: int) -> NcclRow:
    """The row at exactly ``size_bytes``; :class:`ParseError` lists the sizes present otherwise."""
    for row in result.rows:
        if row.size_bytes == size_bytes:
            return row
    sizes = ", ".join(str(s) for s in dict.fromkeys(result.sizes)) or "none"
    raise ParseError(TOOL, f"no row for {size_bytes} bytes; sizes present: {sizes}")


def busbw_at(result: NcclTestsResult, size_bytes: int, in_place: bool = False) -> float:
    """Bus bandwidth in GB/s at exactly ``size_bytes`` (out-of-place unless ``in_place``).

    This, not the ``# Avg bus bandwidth`` line, is the figure to judge: the average
    covers the whole sweep.  Raises :class:`ParseError` listing the sizes present
    when the run has no row at that size.
    """
    row = row_at(result, size_bytes)
    return row.in_place_busbw_gbytes_per_s if in_place else row.busbw_gbytes_per_s


def largest_size_row(result: NcclTestsResult) -> NcclRow:
    """The row with the largest message size (the last one when a size repeats)."""
    if not result.rows:  # pragma: no cover - parse() never returns an empty table
        raise ParseError(TOOL, "the run has no rows")
    largest = max(row.size_bytes for row in result.rows)
    return [row for row in result.rows if row.size_bytes == largest][-1]


def _check_cells(cell: str, layout: str | None) -> tuple[int | None, float | None]:
    """(wrong count, error magnitude) of one check cell, read as the header names it.

    Without a header (an excerpt), a bare integer is a ``#wrong`` count and
    anything else (``7e-07``, ``0.0``) an ``error`` magnitude.
    """
    if cell == "N/A":
        return None, None
    if layout == "error" or (layout is None and not _COUNT_CELL_RE.fullmatch(cell)):
        return None, float(cell)
    return int(float(cell)), None


def _row(match: re.Match[str], layout: str | None) -> NcclRow:
    # Every group is digits by the regex, so the conversions cannot fail.
    redop = match.group("redop")
    root = match.group("root")
    wrong, error = _check_cells(match.group("o_wrong"), layout)
    in_place_wrong, in_place_error = _check_cells(match.group("i_wrong"), layout)
    return NcclRow(
        size_bytes=int(match.group("size")),
        count=int(match.group("count")),
        type=match.group("type"),
        redop=redop,
        root=None if root is None else int(root),
        time_us=float(match.group("o_time")),
        algbw_gbytes_per_s=float(match.group("o_algbw")),
        busbw_gbytes_per_s=float(match.group("o_busbw")),
        wrong=wrong,
        in_place_time_us=float(match.group("i_time")),
        in_place_algbw_gbytes_per_s=float(match.group("i_algbw")),
        in_place_busbw_gbytes_per_s=float(match.group("i_busbw")),
        in_place_wrong=in_place_wrong,
        error=error,
        in_place_error=in_place_error,
        timestamp=match.group("timestamp"),
    )


@register(
    TOOL,
    "nccl-tests *_perf tables (old and new layouts, multi-node noise): per-size busbw in GB/s",
    corpus=("nccl-tests",),
)
def parse(text: str) -> NcclTestsResult:
    """Parse the stdout of an nccl-tests binary (``all_reduce_perf -b 8 -e 8G -f 2 -g 8``, under mpirun or not).

    Raises :class:`ToolReportedError` on ``Test NCCL failure`` / ``Test CUDA failure`` when the run
    printed no result rows; with rows, the failure lines are skipped and kept in
    :attr:`NcclTestsResult.failures`, and the table, ``#wrong`` and trailer are returned.
    The ``# Avg bus bandwidth`` line is kept as ``avg_busbw_gbytes_per_s`` for the
    record only; it averages the whole sweep and is not a verdict value.
    """
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    ranks: list[NcclRank] = []
    rows: list[NcclRow] = []
    failures: list[str] = []
    version = collective = starting = tests_version = last_error = None
    library_code: int | None = None
    skipped = SkippedLines()
    params: re.Match[str] | None = None
    avg: float | None = None
    oob: int | None = None
    oob_ok: bool | None = None
    header_seen = False
    layout: str | None = None
    row_tasks: set[int] = set()
    for task, raw in launcher_lines(text):
        line = raw.strip()
        if not line:
            continue
        if _FAILURE_RE.search(line):
            failures.append(line)  # whole, so the host and pid say which rank failed
            continue
        if found := _OOB_RE.match(line):
            oob = int(found.group("count"))
            oob_ok = (
                None if found.group("status") is None else found.group("status").upper() == "OK"
            )
            continue
        if found := _AVG_RE.match(line):
            avg = float(found.group("value"))
            continue
        if found := _TESTS_VERSION_RE.match(line):
            tests_version = tests_version or found.group("version")
            if found.group("library") is not None and library_code is None:
                library_code = int(found.group("library"))
            continue
        if line.startswith("#"):
            if _HEADER_RE.match(line):
                header_seen = True
                columns = line.split()
                layout = (
                    "wrong" if "#wrong" in columns else "error" if "error" in columns else layout
                )
            elif rank := _RANK_RE.match(line):
                ranks.append(
                    NcclRank(
                        rank=int(rank.group("rank")),
                        group=None if rank.group("group") is None else int(rank.group("group")),
                        pid=int(rank.group("pid")),
                        host=rank.group("host"),
                        device=int(rank.group("device")),
                        bus_id=rank.group("bus"),
                        name=rank.group("name"),
                    )
                )
            elif found := _PARAMS_RE.match(line):
                params = params or found
            elif found := _CONCLUDED_RE.match(line):
                collective = found.group("name")
            elif found := _STARTING_RE.match(line):
                starting = starting or found.group("name")
            elif found := _LAST_ERROR_RE.match(line):
                last_error = found.group("error").strip()
            continue
        if found := _VERSION_RE.search(line):
            version = version or found.group("version")
            continue
        if row := _ROW_RE.match(line):
            rows.append(_row(row, layout))
            if task is not None:
                row_tasks.add(task)
            continue
        if _ROCM_BANNER_RE.match(line):
            continue
        skipped.add(line)
    if failures and not rows:
        raise ToolReportedError(TOOL, "; ".join(dict.fromkeys(failures)))
    if not rows:
        if header_seen or params:
            raise UnrecognizedOutput(
                TOOL, "nccl-tests header found but no result rows (run cut short?)"
            )
        raise UnrecognizedOutput(
            TOOL, "no nccl-tests result table ('# size count type ...' and rows) found"
        )
    if len(row_tasks) > 1:
        # Only rank 0 of one job prints the table; rows from several tasks are several jobs.
        tasks = ", ".join(str(t) for t in sorted(row_tasks))
        raise UnrecognizedOutput(
            TOOL,
            f"result rows from tasks {tasks}: each task ran its own test instead of one job across them "
            "(nccl-tests built without MPI=1, or srun without --mpi=pmix)",
        )
    return NcclTestsResult(
        collective=collective or starting,
        nccl_version=version,
        threads=None if params is None else int(params.group("threads")),
        gpus_per_thread=None if params is None else int(params.group("gpus")),
        min_bytes=None if params is None else int(params.group("min")),
        max_bytes=None if params is None else int(params.group("max")),
        ranks=tuple(ranks),
        num_ranks=max((r.rank for r in ranks), default=-1) + 1,
        hosts=tuple(dict.fromkeys(r.host for r in ranks)),
        rows=tuple(rows),
        avg_busbw_gbytes_per_s=avg,
        out_of_bounds=oob,
        out_of_bounds_ok=oob_ok,
        concluded=collective is not None,
        failures=tuple(dict.fromkeys(failures)),
        tests_version=tests_version,
        library_version_code=library_code,
        last_error=last_error,
        skipped=skipped.lines,
        skipped_count=skipped.count,
    )
