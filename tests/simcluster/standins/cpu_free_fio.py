"""fio on a cpu-free simulated cluster (SimCluster(cpu_free=True)).

Installed as the nodes' fio, it takes a job's time asleep instead of moving bytes, and reports what
the node's modelled disk gives: ``disk_mbps`` (MB/s, all of the run's jobs together) for sequential
I/O, ``disk_iops`` (capped by ``disk_mbps`` at the block size) for random reads, both from the node's
link file (hardware.py ``link_document``). A job takes size x numjobs over that rate, or --runtime
when --time_based. Files are where fio puts them (``DIRECTORY/NAME.JOB.0``) at the job's size, made
with ftruncate: sparse, so no CPU and no memory even on the nodes' tmpfs, and ``stat``, reads of laid
out files and ``rm -rf`` see them as fio's.

Strict as fio is: options are read from fio 3.33's getopt_long table (tests/data/option-tables/
fio-3.33.txt), an option fio does not have is refused in fio's words (exit 1), one fio has but the
stand-in does not model is said to be so (exit 2), and a read of files that are not there with
allow_file_create=0 fails as fio does. Its own lean module, like cpu_free_iperf3 (see there why).
Not modelled: jobs of concurrent fio processes on one node sharing its disk; a shared mount.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from standin_base import GetoptError, die, getopt_long, load_link, parse_table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Model = dict[str, Any]

__all__ = ["disk_figures", "main", "parse_size"]


FIO_VERSION = "fio-3.33"
DEFAULT_DISK_MBPS = 2000.0
DEFAULT_DISK_IOPS = 200000.0
# Options the stand-in models; every other option of fio's table is refused as not modelled (exit 2)
# rather than silently ignored, so a probe that starts to rely on one is noticed.
_CMDLINE_MODELLED = {"output-format", "version"}
_JOB_MODELLED = {"name", "directory", "rw", "bs", "size", "numjobs", "iodepth", "ioengine", "direct",
                 "group_reporting", "create_only", "create_fsync", "invalidate", "allow_file_create",
                 "runtime", "time_based", "end_fsync"}
_RW_MODELLED = {"read", "write", "randread"}
_ENGINES_MODELLED = {"psync", "sync", "libaio", "io_uring", "posixaio"}
# fio's no-argument job options (FIO_OPT_STR_SET): set, they are not listed in "job options"
_FLAGS = {"group_reporting", "time_based"}


def parse_size(text: str) -> int:
    """fio's size value: an integer with an optional k/m/g/t/p suffix (kb_base 1024, as fio's default)."""
    value = text.strip().lower()
    for suffix in ("ib", "b"):
        if value.endswith(suffix) and value[:-len(suffix)][-1:] in "kmgtp" and len(value) > len(suffix):
            value = value[:-len(suffix)]
            break
    scale = 1
    if value[-1:] in ("k", "m", "g", "t", "p"):
        scale = 1024 ** ("kmgtp".index(value[-1]) + 1)
        value = value[:-1]
    if not value.isdigit():
        raise ValueError(text)
    return int(value) * scale


def disk_figures(link: Model, rw: str, block_size: int) -> tuple[float, float]:
    """(bytes/s, IOPS) the node's modelled disk gives all of a run's jobs together for ``rw``."""
    rate = float(link.get("disk_mbps") or DEFAULT_DISK_MBPS) * 1e6
    if rw == "randread":
        iops = min(float(link.get("disk_iops") or DEFAULT_DISK_IOPS), rate / block_size)
        return iops * block_size, iops
    return rate, rate / block_size


def _levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _refuse_unknown(exc: GetoptError, word: str, names: list[str]) -> None:
    """fio 3.33 on getopt's '?': glibc's line, fio's own, and its closest option within half the length."""
    sys.stderr.write(exc.message)
    if word.startswith("--"):
        sys.stderr.write(f"fio: unrecognized option '{word}'\n")
        name = word.lstrip("-")
        best = min(names, key=lambda n: _levenshtein(name, n))
        if _levenshtein(name, best) <= (len(name) + 1) // 2:
            sys.stderr.write(f"Did you mean {best}?\n")
    sys.exit(1)


def _parse(argv: list[str], link: Model) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """(command-line options, job options in order given) as fio reads them, or exit as fio does."""
    table = parse_table(link["option_tables"]["fio"])
    longopts = {row[0]: (row[1], None if row[2] == "-" else row[2]) for row in table.get("long", [])}
    job_names = {row[0] for row in table.get("long", []) if row[3] == "job"}
    aliases = {row[0]: row[1] for row in table.get("alias", [])}
    optstring = table["optstring"][0][0]
    cmdline: dict[str, str] = {}
    job: list[tuple[str, str]] = []
    for word in argv:
        if word.startswith("-") and not word.startswith("--") and word not in ("-v", "-h", "-"):
            die(f"fabric stand-in: fio's single-dash option {word!r} is valid to getopt_long_only but not "
                "modelled by the cpu-free stand-in", 2)
        if word == "--":
            break
    try:
        for key, value in getopt_long("fio", argv, optstring, longopts):
            if key is None:
                die(f"fabric stand-in: fio job file {value!r} is valid but not modelled by the cpu-free stand-in", 2)
            name = aliases.get(key) or {"v": "version", "h": "help"}.get(key, key)
            if name in job_names:
                if name not in _JOB_MODELLED:
                    die(f"fabric stand-in: fio option '--{name}' is valid but not modelled by the cpu-free stand-in", 2)
                job.append((name, "" if value is None else value))
            elif name in _CMDLINE_MODELLED:
                cmdline[name] = "" if value is None else value
            else:
                die(f"fabric stand-in: fio option '--{name}' is valid but not modelled by the cpu-free stand-in", 2)
    except GetoptError as exc:
        _refuse_unknown(exc, _offending(argv, exc), sorted(longopts))
    return cmdline, job


def _offending(argv: list[str], exc: GetoptError) -> str:
    """The word getopt refused (fio names argv[optind - 1])."""
    for word in argv:
        if word.startswith("--") and f"'{word}'" in exc.message:
            return word
        if word.startswith("--") and f"'--{word[2:].partition('=')[0]}'" in exc.message:
            return word
    return ""


class _Job:
    """One fio job section as given on the command line (numjobs clones of it)."""

    def __init__(self, options: list[tuple[str, str]]) -> None:
        self.options = options
        given = dict(options)
        self.name = given.get("name", "")
        self.directory = given.get("directory", ".")
        self.rw = given.get("rw", "read")
        self.bs = parse_size(given.get("bs", "4096"))
        self.size = parse_size(given["size"]) if "size" in given else 0
        self.numjobs = int(given.get("numjobs", "1"))
        self.iodepth = int(given.get("iodepth", "1"))
        self.engine = given.get("ioengine", "psync")
        self.direct = given.get("direct", "0") == "1"
        self.create_only = given.get("create_only", "0") == "1"
        self.allow_create = given.get("allow_file_create", "1") != "0"
        self.runtime = float(parse_size(given["runtime"])) if "runtime" in given else 0.0
        self.time_based = "time_based" in given
        self.group_reporting = "group_reporting" in given

    def files(self) -> list[str]:
        return [os.path.join(self.directory, f"{self.name}.{i}.0") for i in range(self.numjobs)]


def _check(job: _Job) -> None:
    """What fio refuses before any I/O, in its words; what the stand-in does not model, exit 2."""
    if job.rw not in _RW_MODELLED:
        die(f"fabric stand-in: fio rw={job.rw} is valid but not modelled by the cpu-free stand-in", 2)
    if job.engine not in _ENGINES_MODELLED:
        die(f"fabric stand-in: fio ioengine={job.engine} is valid but not modelled by the cpu-free stand-in", 2)
    if not os.path.isdir(job.directory):
        die(f"fio: {job.directory} is not a directory\nfio: failed parsing directory={job.directory}", 1)
    if not job.size:
        die(f"{job.name}: you need to specify size=", 1)


def _lay_out(path: str, size: int, direct: bool) -> None:
    """The file at its size without writing a byte (sparse); O_DIRECT where the run asks for it, so a
    filesystem that refuses it fails here as fio does at open."""
    flags = os.O_RDWR | os.O_CREAT | (getattr(os, "O_DIRECT", 0) if direct else 0)
    fd = os.open(path, flags, 0o644)
    try:
        if os.fstat(fd).st_size < size:
            os.ftruncate(fd, size)
    finally:
        os.close(fd)


def _latency(mean_ns: float, n: int, percentiles: bool) -> Model:
    block: Model = {"min": int(mean_ns) if n else 0, "max": int(mean_ns) if n else 0,
                    "mean": mean_ns if n else 0.0, "stddev": 0.0, "N": n}
    if percentiles and n:
        block["percentile"] = {f"{p:.6f}": int(mean_ns) for p in
                               (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)}
    return block


def _io(io_bytes: int, runtime_ms: int, rate: float, iops: float, bs: int, iodepth: int) -> Model:
    ios = io_bytes // bs if bs else 0
    clat = 1e9 / iops * iodepth if ios and iops else 0.0
    kib = rate / 1024 if ios else 0
    return {"io_bytes": io_bytes, "io_kbytes": io_bytes // 1024, "bw_bytes": int(rate) if ios else 0,
            "bw": int(kib), "iops": iops if ios else 0.0, "runtime": runtime_ms if ios else 0, "total_ios": ios,
            "short_ios": 0, "drop_ios": 0, "slat_ns": _latency(0, 0, False), "clat_ns": _latency(clat, ios, True),
            "lat_ns": _latency(clat, ios, False), "bw_min": int(kib), "bw_max": int(kib),
            "bw_agg": 100.0 if ios else 0.0, "bw_mean": float(kib), "bw_dev": 0.0, "bw_samples": 0,
            "iops_min": int(iops) if ios else 0, "iops_max": int(iops) if ios else 0,
            "iops_mean": iops if ios else 0.0, "iops_stddev": 0.0, "iops_samples": 0}


def _buckets(keys: tuple[str, ...], full: str | None) -> Model:
    return {k: (100.0 if k == full else 0.0) for k in keys}


def _job_entry(job: _Job, jobname_runs: int, direction: str | None, io_bytes: int, seconds: float,
               rate: float, iops: float, elapsed: int) -> Model:
    runtime_ms = max(1, round(seconds * 1000)) if io_bytes else 0
    idle = _io(0, 0, 0, 0, job.bs, job.iodepth)
    sections = {d: (_io(io_bytes, runtime_ms, rate, iops, job.bs, job.iodepth) if d == direction else idle)
                for d in ("read", "write", "trim")}
    depth = next((k for k in ("1", "2", "4", "8", "16", "32") if job.iodepth <= int(k)), ">=64")
    return {"jobname": job.name, "groupid": 0, "error": 0, "eta": 2147483647, "elapsed": elapsed,
            "job options": {k: v for k, v in job.options if k not in _FLAGS},
            **sections, "sync": {"total_ios": 0, "lat_ns": _latency(0, 0, False)},
            "job_runtime": runtime_ms * jobname_runs, "usr_cpu": 0.0, "sys_cpu": 0.0, "ctx": 0, "majf": 0,
            "minf": 0, "iodepth_level": _buckets(("1", "2", "4", "8", "16", "32", ">=64"), depth),
            "iodepth_submit": _buckets(("0", "4", "8", "16", "32", "64", ">=64"), "4" if io_bytes else None),
            "iodepth_complete": _buckets(("0", "4", "8", "16", "32", "64", ">=64"), "4" if io_bytes else None),
            "latency_ns": _buckets(("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"), None),
            "latency_us": _buckets(("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"), None),
            "latency_ms": _buckets(("2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000",
                                    ">=2000"), None),
            "latency_depth": job.iodepth, "latency_target": 0, "latency_percentile": 100.0, "latency_window": 0}


def _run(job: _Job, link: Model) -> int:
    _check(job)
    rate, iops = disk_figures(link, job.rw, job.bs)
    files = job.files()
    missing = [path for path in files if not os.path.exists(path) or os.path.getsize(path) < job.size]
    reads = job.rw in ("read", "randread")
    code = 0
    laid_bytes = 0
    if reads and missing and not job.allow_create:
        sys.stderr.write("fio: file creation disallowed by allow_file_create=0\n" * len(missing))
        code = 2
    try:
        for path in (files if not reads else missing if job.allow_create else []):
            _lay_out(path, job.size, job.direct and not reads)
    except OSError as exc:
        die(f"fio: pid={os.getpid()}, err={exc.errno}/file:filesetup.c:805, func=open(\"{exc.filename}\"), "
            f"error={exc.strerror}", 1)
    if reads:
        laid_bytes = job.size * len(missing) if job.allow_create else 0
        for path in files:
            if os.path.exists(path) and job.direct:
                try:
                    os.close(os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0)))
                except OSError as exc:
                    die(f"fio: pid={os.getpid()}, err={exc.errno}/file:filesetup.c:805, func=open(\"{path}\"), "
                        f"error={exc.strerror}", 1)
    total = job.size * job.numjobs
    seq_rate = disk_figures(link, "write", job.bs)[0]
    layout_s = (total if job.create_only else laid_bytes) / seq_rate
    if job.create_only or code:
        io_bytes, io_s = 0, 0.0
    elif job.time_based and job.runtime:
        io_s = job.runtime
        io_bytes = int(rate * io_s) // job.bs * job.bs
    else:
        io_s = total / rate
        if job.runtime:
            io_s = min(io_s, job.runtime)
        io_bytes = min(total, int(rate * io_s) // job.bs * job.bs)
    began = time.time()
    time.sleep(layout_s + io_s)  # the job's time, asleep: the point of the stand-in
    elapsed = max(1, round(time.time() - began)) if io_s or layout_s else 0
    direction = None if not io_bytes else ("read" if reads else "write")
    if job.group_reporting:
        entries = [_job_entry(job, job.numjobs, direction, io_bytes, io_s, rate, iops, elapsed)]
    else:
        each = io_bytes // job.numjobs // job.bs * job.bs
        entries = [_job_entry(job, 1, direction, each, io_s, rate / job.numjobs, iops / job.numjobs, elapsed)
                   for _ in range(job.numjobs)]
    now = time.time()
    document = {"fio version": FIO_VERSION, "timestamp": int(now), "timestamp_ms": int(now * 1000),
                "time": time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(now)), "jobs": entries}
    print(json.dumps(document, indent=2))
    return code


def main() -> int:
    """fio, as started (argv[0] is the installed tool)."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # die quietly on a closed pipe, as C tools do
    link = load_link()
    cmdline, options = _parse(sys.argv[1:], link)
    if "version" in cmdline:
        print(FIO_VERSION)
        return 0
    if cmdline.get("output-format") != "json":
        die("fabric stand-in: fio without --output-format=json is valid but not modelled by the cpu-free stand-in", 2)
    if not options:
        die("No job(s) defined\n\nfio-3.33\nfio [options] [job options] <job file(s)>", 1)
    if [k for k, _ in options].count("name") > 1 or (options and options[0][0] != "name"):
        die("fabric stand-in: fio global options or several jobs are valid but not modelled by the cpu-free "
            "stand-in", 2)
    try:
        job = _Job(options)
    except ValueError as exc:
        die(f"fabric stand-in: fio value {exc} is not one the cpu-free stand-in reads", 2)
    return _run(job, link)


if __name__ == "__main__":
    sys.exit(main())
