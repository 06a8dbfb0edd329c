"""fio results, JSON (``--output-format=json``) or the human text format: text -> :class:`FioResult`.

JSON differs between fio generations, and we normalize both:

- fio 3.x: ``bw_bytes`` (bytes/s), ``io_bytes`` (bytes), latencies in ``slat_ns``/``clat_ns``/``lat_ns``;
- fio 2.x: no ``bw_bytes``; ``bw`` is KiB/s (it is in 3.x too), ``io_bytes`` is KiB despite
  its name (fio 2 shifted it right by 10; 3.x renamed that ``io_kbytes``), and latencies
  are ``slat``/``clat``/``lat`` in microseconds.

Bandwidth is bytes/s, latency nanoseconds, everywhere in the result.  A job whose
``error`` is not 0 makes the whole result a :class:`ToolReportedError`.

A latency fio did not sample is ``None``, never 0: with ``gtod_reduce=1`` (or
``disable_lat``) fio writes ``0`` for min, max and mean with a sample count ``N``
of 0 (fio 2.x wrote no ``N``, just the zeros), and a 0 would pass any ``max:`` bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pytest_fabric.parsers._textscan import json_document
from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput, register

__all__ = ["FioIo", "FioJob", "FioResult", "parse", "parse_json", "parse_text"]

TOOL = "fio"
_DIRECTIONS = ("read", "write", "trim")


@dataclass(frozen=True)
class FioIo:
    """One direction (read, write or trim) of a job, or of all jobs together."""

    io_bytes: int
    bw_bytes_per_s: float
    iops: float
    runtime_ms: float | None
    total_ios: int | None
    lat_mean_ns: float | None
    """Total latency (submission + completion), mean."""
    lat_min_ns: float | None
    lat_max_ns: float | None
    lat_stddev_ns: float | None
    clat_mean_ns: float | None
    percentiles_ns: dict[float, float] = field(default_factory=dict)
    """Latency percentiles (``99.0 -> ns``), of completion latency unless fio reported total latency."""

    @property
    def active(self) -> bool:
        """The job did I/O in this direction."""
        return self.io_bytes > 0 or self.iops > 0


_EMPTY_IO = FioIo(0, 0.0, 0.0, None, None, None, None, None, None, None)


@dataclass(frozen=True)
class FioJob:
    """One fio job (with ``group_reporting``, one per group)."""

    name: str
    groupid: int | None
    error: int
    read: FioIo
    write: FioIo
    trim: FioIo
    options: dict[str, str]
    """Job options as given (global options merged under the job's own)."""
    jobs: int | None
    """Threads/processes this entry stands for (text output with ``group_reporting``)."""


@dataclass(frozen=True)
class FioResult:
    """A parsed fio run: per-job figures and the aggregate over all jobs (bytes/s, IOPS, ns)."""

    format: str
    """``json`` or ``text``."""
    version: str | None
    jobs: tuple[FioJob, ...]
    read: FioIo
    write: FioIo
    trim: FioIo

    def job(self, name: str) -> FioJob:
        """The first job called ``name``; :class:`ParseError` lists the names present otherwise."""
        for job in self.jobs:
            if job.name == name:
                return job
        raise ParseError(TOOL, f"no job {name!r}; jobs present: {', '.join(j.name for j in self.jobs) or 'none'}")


def _aggregate(jobs: list[FioJob], direction: str) -> FioIo:
    parts: list[FioIo] = [getattr(job, direction) for job in jobs]
    active = [p for p in parts if p.active]
    if not active:
        return _EMPTY_IO
    total_ios = sum(p.total_ios or 0 for p in active)

    def weighted(name: str) -> float | None:
        values: list[tuple[float | None, int]] = [(getattr(p, name), p.total_ios or 0) for p in active]
        known = [(v, w) for v, w in values if v is not None]
        if len(known) != len(values) or total_ios == 0:
            return None
        return float(sum(v * w for v, w in known)) / total_ios

    runtimes = [p.runtime_ms for p in active if p.runtime_ms is not None]
    # A bound over some jobs is not the group's bound: a job fio did not sample could hold the max.
    mins = [p.lat_min_ns for p in active]
    maxes = [p.lat_max_ns for p in active]
    return FioIo(
        io_bytes=sum(p.io_bytes for p in active),
        bw_bytes_per_s=sum(p.bw_bytes_per_s for p in active),
        iops=sum(p.iops for p in active),
        runtime_ms=max(runtimes) if runtimes else None,
        total_ios=total_ios if any(p.total_ios is not None for p in active) else None,
        lat_mean_ns=weighted("lat_mean_ns"),
        lat_min_ns=min(v for v in mins if v is not None) if None not in mins else None,
        lat_max_ns=max(v for v in maxes if v is not None) if None not in maxes else None,
        lat_stddev_ns=active[0].lat_stddev_ns if len(active) == 1 else None,
        clat_mean_ns=weighted("clat_mean_ns"),
        percentiles_ns=dict(active[0].percentiles_ns) if len(active) == 1 else {},
    )


# --- JSON ---------------------------------------------------------------------------------------


def _num(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(TOOL, f"{what}: expected a number, got {value!r}")
    return float(value)


def _opt(value: Any, what: str) -> float | None:
    return None if value is None else _num(value, what)


def _obj(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParseError(TOOL, f"{what}: expected an object, got {type(value).__name__}")
    return value


def _latency(io: dict[str, Any], name: str, where: str) -> tuple[dict[str, Any], float]:
    """The latency object ``name`` (``lat``, ``clat``) and the factor that makes it ns.

    Empty when fio took no samples (``N`` is 0, or fio 2.x's all-zero object), so
    every figure read from it is ``None``.
    """
    if f"{name}_ns" in io:
        found, factor = _obj(io[f"{name}_ns"], f"{where}.{name}_ns"), 1.0
    elif name in io:
        found, factor = _obj(io[name], f"{where}.{name}"), 1000.0  # fio 2.x: microseconds
    else:
        return {}, 1.0
    samples = found.get("N")
    if samples is not None:
        return (found, factor) if _num(samples, f"{where}.{name} N") > 0 else ({}, factor)
    if all(found.get(key) in (0, 0.0) for key in ("min", "max", "mean")):
        return {}, factor
    return found, factor


def _json_io(io: dict[str, Any], where: str) -> FioIo:
    if not io:
        return _EMPTY_IO
    if "bw_bytes" in io:
        bw = _num(io["bw_bytes"], f"{where}.bw_bytes")
    else:
        bw = _num(io.get("bw", 0), f"{where}.bw") * 1024  # KiB/s in every fio version
    if "io_kbytes" in io or "bw_bytes" in io:
        io_bytes = _num(io.get("io_bytes", 0), f"{where}.io_bytes")
    else:
        io_bytes = _num(io.get("io_bytes", 0), f"{where}.io_bytes") * 1024  # fio 2.x: KiB
    lat, lat_factor = _latency(io, "lat", where)
    clat, clat_factor = _latency(io, "clat", where)
    percentiles: dict[float, float] = {}
    # fio puts percentiles under clat, or under lat when lat_percentiles=1 (and some 3.x builds).
    for source, factor in ((clat, clat_factor), (lat, lat_factor)):
        table = _obj(source.get("percentile"), f"{where} percentile")
        for key, value in table.items():
            try:
                point = float(key)
            except ValueError:
                continue
            if point > 0:
                percentiles[point] = _num(value, f"{where} percentile {key}") * factor
        if percentiles:
            break

    def scaled(source: dict[str, Any], key: str, factor: float) -> float | None:
        value = _opt(source.get(key), f"{where} latency {key}")
        return None if value is None else value * factor

    total_ios = io.get("total_ios")
    return FioIo(
        io_bytes=int(io_bytes),
        bw_bytes_per_s=bw,
        iops=_num(io.get("iops", 0), f"{where}.iops"),
        runtime_ms=_opt(io.get("runtime"), f"{where}.runtime"),
        total_ios=None if total_ios is None else int(_num(total_ios, f"{where}.total_ios")),
        lat_mean_ns=scaled(lat, "mean", lat_factor),
        lat_min_ns=scaled(lat, "min", lat_factor),
        lat_max_ns=scaled(lat, "max", lat_factor),
        lat_stddev_ns=scaled(lat, "stddev", lat_factor),
        clat_mean_ns=scaled(clat, "mean", clat_factor),
        percentiles_ns=percentiles,
    )


def parse_json(text: str) -> FioResult:
    """Parse ``fio --output-format=json`` output (fio 2.x and 3.x).

    Text fio printed before the document (warnings, ``fio: ...`` errors) is skipped
    but quoted if a job reports an error, which raises :class:`ToolReportedError`.
    """
    document = json_document(TOOL, text)
    if not isinstance(document, dict) or "jobs" not in document:
        raise UnrecognizedOutput(TOOL, "JSON has no 'jobs' list: not fio output")
    raw_jobs = document["jobs"]
    if not isinstance(raw_jobs, list) or not raw_jobs:
        raise UnrecognizedOutput(TOOL, "'jobs' is empty: fio ran no job")
    global_options = {str(k): str(v) for k, v in _obj(document.get("global options"), "global options").items()}
    jobs: list[FioJob] = []
    failed: list[str] = []
    for index, raw in enumerate(raw_jobs):
        where = f"jobs[{index}]"
        job = _obj(raw, where)
        name = str(job.get("jobname", f"job{index}"))
        error = int(_num(job.get("error", 0), f"{where}.error"))
        if error:
            failed.append(f"job {name!r} error={error}")
        options = dict(global_options)
        options.update({str(k): str(v) for k, v in _obj(job.get("job options"), f"{where}.job options").items()})
        groupid = job.get("groupid")
        jobs.append(
            FioJob(
                name=name,
                groupid=None if groupid is None else int(_num(groupid, f"{where}.groupid")),
                error=error,
                read=_json_io(_obj(job.get("read"), f"{where}.read"), f"{where}.read"),
                write=_json_io(_obj(job.get("write"), f"{where}.write"), f"{where}.write"),
                trim=_json_io(_obj(job.get("trim"), f"{where}.trim"), f"{where}.trim"),
                options=options,
                jobs=None,
            )
        )
    if failed:
        # fio prints its own complaints before the JSON document
        preamble = [line.strip() for line in text[: text.find("{")].splitlines() if line.strip()]
        detail = f" ({'; '.join(preamble)})" if preamble else ""
        raise ToolReportedError(TOOL, f"{', '.join(failed)}{detail}")
    version = document.get("fio version")
    return FioResult(
        format="json",
        version=None if version is None else str(version).removeprefix("fio-"),
        jobs=tuple(jobs),
        read=_aggregate(jobs, "read"),
        write=_aggregate(jobs, "write"),
        trim=_aggregate(jobs, "trim"),
    )


# --- text ---------------------------------------------------------------------------------------

_JOB_RE = re.compile(r"^(?P<name>\S.*?): \(groupid=(?P<group>\d+), jobs=(?P<jobs>\d+)\): err=\s*(?P<err>\d+)")
_OPTIONS_RE = re.compile(r"^(?P<name>\S.*?): \(g=\d+\): (?P<options>.*)$")
_IO_RE = re.compile(
    r"^(?P<dir>read|write|trim)\s*: IOPS=(?P<iops>\d+(?:\.\d+)?)(?P<iops_k>[kKMG]?), BW=(?P<bw>\d+(?:\.\d+)?)(?P<bw_unit>[KMGT]i?B)/s"
    r"(?:\s*\([^)]*\))?(?:\s*\((?P<io>\d+(?:\.\d+)?)(?P<io_unit>[KMGT]i?B)/(?P<run>\d+)msec\))?"
)
_LAT_RE = re.compile(
    r"^(?P<kind>clat|lat|slat)\s+\((?P<unit>nsec|usec|msec)\):\s+min=\s*(?P<min>\d+(?:\.\d+)?[kKM]?),\s*max=\s*(?P<max>\d+(?:\.\d+)?[kKM]?),"
    r"\s*avg=\s*(?P<avg>\d+(?:\.\d+)?),\s*stdev=\s*(?P<stdev>\d+(?:\.\d+)?)"
)
_PCT_HEADER_RE = re.compile(r"^(?P<kind>clat|lat) percentiles \((?P<unit>nsec|usec|msec)\):")
_PCT_RE = re.compile(r"(?P<point>\d+\.\d+)th=\[\s*(?P<value>\d+)\]")
_ISSUED_RE = re.compile(r"^issued rwts?: total=(?P<r>\d+),(?P<w>\d+)(?:,(?P<t>\d+))?")
_GROUP_RE = re.compile(
    r"^(?P<dir>READ|WRITE|TRIM): bw=(?P<bw>\d+(?:\.\d+)?)(?P<bw_unit>[KMGT]i?B)/s.*?io=(?P<io>\d+(?:\.\d+)?)(?P<io_unit>[KMGT]i?B)"
    r".*?run=(?P<run_min>\d+)-(?P<run_max>\d+)msec"
)
_VERSION_RE = re.compile(r"^fio-(?P<version>\d+\.\d+\S*)$")
_TEXT_ERROR_RE = re.compile(r"^fio: (?!this platform).*(?:error|failed|no such|cannot|unable).*$", re.IGNORECASE)
_SIZE = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_COUNT = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9}
_NS = {"nsec": 1.0, "usec": 1e3, "msec": 1e6}


def _count(text: str) -> float:
    suffix = text[-1] if text and text[-1] in "kKMG" else ""
    return float(text[: len(text) - len(suffix)]) * _COUNT[suffix]


@dataclass
class _TextIo:
    iops: float = 0.0
    bw: float = 0.0
    io_bytes: int = 0
    runtime_ms: float | None = None
    total_ios: int | None = None
    lat: dict[str, float] = field(default_factory=dict)
    clat_mean: float | None = None
    percentiles: dict[float, float] = field(default_factory=dict)

    def freeze(self) -> FioIo:
        return FioIo(
            io_bytes=self.io_bytes,
            bw_bytes_per_s=self.bw,
            iops=self.iops,
            runtime_ms=self.runtime_ms,
            total_ios=self.total_ios,
            lat_mean_ns=self.lat.get("avg"),
            lat_min_ns=self.lat.get("min"),
            lat_max_ns=self.lat.get("max"),
            lat_stddev_ns=self.lat.get("stdev"),
            clat_mean_ns=self.clat_mean,
            percentiles_ns=dict(self.percentiles),
        )


@dataclass
class _TextJob:
    name: str
    groupid: int
    jobs: int
    error: int
    options: dict[str, str]
    io: dict[str, _TextIo] = field(default_factory=dict)


def parse_text(text: str) -> FioResult:
    """Parse fio's human-readable output (fio 3.x: ``read: IOPS=..., BW=...`` lines).

    Per-job figures come from each job block; the aggregate bandwidth from the
    ``Run status group`` lines (``READ: bw=...``) where present.  Progress lines
    (``Jobs: ...``) are ignored.
    """
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    jobs: list[_TextJob] = []
    options: dict[str, dict[str, str]] = {}
    groups: dict[str, FioIo] = {}
    version: str | None = None
    errors: list[str] = []
    current: _TextIo | None = None
    percentile_unit: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("Jobs:"):
            continue
        try:
            if found := _VERSION_RE.match(line):
                version = found.group("version")
            elif found := _OPTIONS_RE.match(line):
                pairs = re.findall(r"(\w+)=((?:\([RWT]\) )?[^,]+)", found.group("options"))
                options.setdefault(found.group("name"), {k: v.strip() for k, v in pairs})
            elif found := _JOB_RE.match(line):
                name = found.group("name")
                jobs.append(
                    _TextJob(
                        name,
                        int(found.group("group")),
                        int(found.group("jobs")),
                        int(found.group("err")),
                        dict(options.get(name, {})),
                    )
                )
                current = None
            elif (found := _IO_RE.match(line)) and jobs:
                current = _TextIo(
                    iops=float(found.group("iops")) * _COUNT[found.group("iops_k")],
                    bw=float(found.group("bw")) * _SIZE[found.group("bw_unit")],
                )
                if found.group("io"):
                    current.io_bytes = round(float(found.group("io")) * _SIZE[found.group("io_unit")])
                    current.runtime_ms = float(found.group("run"))
                jobs[-1].io[found.group("dir")] = current
                percentile_unit = None
            elif (found := _LAT_RE.match(line)) and current is not None:
                factor = _NS[found.group("unit")]
                values = {k: _count(found.group(k)) * factor for k in ("min", "max", "avg", "stdev")}
                if found.group("kind") == "lat":
                    current.lat = values
                elif found.group("kind") == "clat":
                    current.clat_mean = values["avg"]
            elif (found := _PCT_HEADER_RE.match(line)) and current is not None:
                percentile_unit = found.group("unit")
                current.percentiles = {}
            elif line.startswith("|") and current is not None and percentile_unit is not None:
                for point in _PCT_RE.finditer(line):
                    current.percentiles[float(point.group("point"))] = float(point.group("value")) * _NS[percentile_unit]
            elif (found := _ISSUED_RE.match(line)) and jobs:
                counts = {"read": found.group("r"), "write": found.group("w"), "trim": found.group("t")}
                for direction, io in jobs[-1].io.items():
                    if counts.get(direction) is not None:
                        io.total_ios = int(counts[direction] or 0)
            elif found := _GROUP_RE.match(line):
                run_max = float(found.group("run_max"))
                groups[found.group("dir").lower()] = FioIo(
                    io_bytes=round(float(found.group("io")) * _SIZE[found.group("io_unit")]),
                    bw_bytes_per_s=float(found.group("bw")) * _SIZE[found.group("bw_unit")],
                    iops=0.0,
                    runtime_ms=run_max,
                    total_ios=None,
                    lat_mean_ns=None,
                    lat_min_ns=None,
                    lat_max_ns=None,
                    lat_stddev_ns=None,
                    clat_mean_ns=None,
                )
            elif _TEXT_ERROR_RE.match(line):
                errors.append(line)
        except (ValueError, KeyError) as exc:
            raise ParseError(TOOL, f"cannot read {line!r}: {exc}", line=number) from None
    failed = [f"job {job.name!r} err={job.error}" for job in jobs if job.error]
    if failed or (errors and not jobs):
        raise ToolReportedError(TOOL, "; ".join(failed + errors))
    if not jobs:
        raise UnrecognizedOutput(TOOL, "no fio job block ('NAME: (groupid=N, jobs=N): err= 0: ...') found")
    frozen = [
        FioJob(
            name=job.name,
            groupid=job.groupid,
            error=job.error,
            read=(job.io.get("read") or _TextIo()).freeze(),
            write=(job.io.get("write") or _TextIo()).freeze(),
            trim=(job.io.get("trim") or _TextIo()).freeze(),
            options=job.options,
            jobs=job.jobs,
        )
        for job in jobs
    ]
    aggregates: dict[str, FioIo] = {}
    for direction in _DIRECTIONS:
        summed = _aggregate(frozen, direction)
        group = groups.get(direction)
        if group is not None and summed.active:
            # The Run status line has the group's bandwidth and I/O; IOPS and latency only the job lines have.
            summed = FioIo(
                io_bytes=group.io_bytes,
                bw_bytes_per_s=group.bw_bytes_per_s,
                iops=summed.iops,
                runtime_ms=group.runtime_ms,
                total_ios=summed.total_ios,
                lat_mean_ns=summed.lat_mean_ns,
                lat_min_ns=summed.lat_min_ns,
                lat_max_ns=summed.lat_max_ns,
                lat_stddev_ns=summed.lat_stddev_ns,
                clat_mean_ns=summed.clat_mean_ns,
                percentiles_ns=summed.percentiles_ns,
            )
        aggregates[direction] = summed
    return FioResult(
        format="text",
        version=version,
        jobs=tuple(frozen),
        read=aggregates["read"],
        write=aggregates["write"],
        trim=aggregates["trim"],
    )


@register(TOOL, "fio JSON (2.x and 3.x) or text output: per-job and aggregate bytes/s, IOPS, latency ns", corpus=("fio",))
def parse(text: str) -> FioResult:
    """Parse fio output, JSON or text, whichever it is (JSON when a line starts with ``{``)."""
    if not isinstance(text, str):
        raise UnrecognizedOutput(TOOL, f"expected text, got {type(text).__name__}")
    if any(line.startswith("{") for line in text.splitlines()):
        return parse_json(text)
    return parse_text(text)
