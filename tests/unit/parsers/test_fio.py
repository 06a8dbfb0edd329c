"""fio parser (JSON 2.x/3.x and text) on every recorded fio output and real 3.33 captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.fio import parse, parse_json, parse_text

DATA = Path(__file__).resolve().parents[2] / "data" / "fio"
EXPECTED_FILES = {
    "json-fio-2.2.10-2jobs-old-usec-format.json",
    "randrw-4k-nvme-json-fio-3.16.json",
    "text-randread-8k-psync-100threads-fio-3.7.txt",
    "text-seqwrite-1M-libaio-8jobs-fio-3.7.txt",
}


def _read(folder: Path, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


def test_every_fio_corpus_file_has_expectations(corpus: Path) -> None:
    assert {p.name for p in (corpus / "fio").iterdir()} == EXPECTED_FILES


def test_fio_2_old_usec_and_kib(corpus: Path) -> None:
    result = parse(_read(corpus / "fio", "json-fio-2.2.10-2jobs-old-usec-format.json"))
    assert (result.format, result.version, [j.name for j in result.jobs]) == ("json", "2.2.10", ["job-sdb", "job-sdc"])
    sdb = result.job("job-sdb")
    assert sdb.read.iops == 14081.59
    assert sdb.read.bw_bytes_per_s == 56330 * 1024  # fio 2 has only "bw", in KiB/s
    assert sdb.read.io_bytes == 563360 * 1024  # fio 2's "io_bytes" is KiB
    assert sdb.read.lat_mean_ns == pytest.approx(775010.0)  # 775.01 usec
    assert sdb.read.clat_mean_ns == pytest.approx(766990.0)
    assert sdb.read.percentiles_ns[99.0] == 1688000.0
    assert 0.0 not in sdb.read.percentiles_ns  # fio 2's "0.00": 0 filler entry
    assert sdb.write.iops == 32837.82
    assert result.read.iops == pytest.approx(14081.59 + 14171.28)
    assert result.read.bw_bytes_per_s == (56330 + 56691) * 1024
    assert result.read.total_ios == 140830 + 141727


def test_fio_316_bw_bytes_ns_and_options(corpus: Path) -> None:
    result = parse_json(_read(corpus / "fio", "randrw-4k-nvme-json-fio-3.16.json"))
    job = result.job("rand_read_write")
    assert (job.read.bw_bytes_per_s, job.read.iops, job.read.io_bytes) == (348743777, 85138.890741, 10463010816)
    assert job.write.bw_bytes_per_s == 348450387
    assert job.read.lat_mean_ns == 1446562.147113 and job.read.clat_mean_ns == 1444476.063469
    assert job.read.percentiles_ns[99.9] == 3620864  # under lat_ns here (lat_percentiles=1)
    assert job.options["rw"] == "randrw" and job.options["bs"] == "4096"
    assert job.options["ioengine"] == "libaio"  # from the global options
    assert result.read.iops == job.read.iops


def test_fio_37_text_randread(corpus: Path) -> None:
    result = parse_text(_read(corpus / "fio", "text-randread-8k-psync-100threads-fio-3.7.txt"))
    job = result.job("mytest")
    assert (result.format, result.version, job.jobs, job.error) == ("text", "3.7", 100, 0)
    assert job.read.iops == 10100.0  # "IOPS=10.1k"
    assert job.read.bw_bytes_per_s == pytest.approx(79.2 * 2**20)
    assert job.read.lat_mean_ns == pytest.approx(9849.70e3)
    assert job.read.percentiles_ns[99.0] == 15664e3
    assert job.read.total_ios == 608471 and job.read.runtime_ms == 60010
    assert job.options["rw"] == "randread" and job.options["iodepth"] == "8"
    assert result.read.io_bytes == 4754 * 2**20
    assert not result.write.active


def test_fio_37_text_seqwrite_msec_units(corpus: Path) -> None:
    result = parse(_read(corpus / "fio", "text-seqwrite-1M-libaio-8jobs-fio-3.7.txt"))
    assert result.version is None  # this capture starts at a progress line, after the version
    assert result.write.iops == 404
    assert result.write.bw_bytes_per_s == 405 * 2**20
    assert result.write.lat_mean_ns == pytest.approx(1207.35e6)  # msec
    assert result.write.percentiles_ns[50.0] == 1234e6
    assert result.write.total_ios == 25905


def test_captured_333_seqread() -> None:
    result = parse(_read(DATA, "json-seqread-1M-8M-fio-3.33.json"))
    job = result.job("t")
    assert (result.version, job.read.io_bytes, job.read.bw_bytes_per_s) == ("3.33", 8388608, 1198372571)
    assert job.read.iops == 1142.857143 and job.read.total_ios == 8
    assert job.options == {"name": "t", "directory": "/tmp/fiox", "size": "8M", "rw": "read", "bs": "1M"}
    assert not job.write.active


def test_captured_job_error() -> None:
    text = _read(DATA, "json-error-21-eisdir-fio-3.33.json")
    with pytest.raises(ToolReportedError, match="fio: job 'bad' error=21$"):
        parse(text)
    stderr = "fio: pid=0, err=21/file:filesetup.c:150, func=unlink, error=Is a directory\n"
    with pytest.raises(ToolReportedError, match="error=21 .*Is a directory"):
        parse(stderr + text)  # stdout and stderr captured together


def test_unknown_job_and_garbage(corpus: Path) -> None:
    result = parse(_read(corpus / "fio", "randrw-4k-nvme-json-fio-3.16.json"))
    with pytest.raises(ParseError, match="fio: no job 'x'; jobs present: rand_read_write"):
        result.job("x")
    with pytest.raises(UnrecognizedOutput, match="fio: JSON has no 'jobs'"):
        parse('{"a": 1}')
    with pytest.raises(UnrecognizedOutput, match="fio: invalid JSON"):
        parse('{\n "jobs": [')
    with pytest.raises(UnrecognizedOutput, match="fio: no fio job block"):
        parse("Jobs: 1 (f=1): [R(1)][10.0%][eta 00m:09s]\n")
    with pytest.raises(ParseError, match="fio: jobs\\[0\\].read.iops: expected a number"):
        parse('{"jobs": [{"jobname": "j", "read": {"iops": "many"}}]}')


def _gtod() -> str:
    return (DATA / "json-randread-4k-gtod_reduce-fio-3.33.json").read_text()


def test_gtod_reduce_latencies_are_not_measured() -> None:
    # gtod_reduce=1 turns latency sampling off: fio writes 0 ns with sample count N = 0.
    result = parse(_gtod())
    job = result.job("gtod").read
    assert job.iops > 19000 and job.total_ios == 1024
    for io in (job, result.read):
        assert (io.lat_mean_ns, io.lat_min_ns, io.lat_max_ns, io.lat_stddev_ns, io.clat_mean_ns) == (None,) * 5
        assert io.percentiles_ns == {}


def test_fio2_zero_latency_objects_without_sample_count_are_not_measured() -> None:
    # fio 2.x wrote no N; a latency whose min, max and mean are all 0 was never sampled.
    import json

    document = json.loads(_gtod())
    read = document["jobs"][0]["read"]
    for name in ("slat", "clat", "lat"):
        values = read.pop(f"{name}_ns")
        values.pop("N")
        read[name] = values
    read.pop("bw_bytes")
    result = parse_json(json.dumps(document))
    assert (result.read.lat_max_ns, result.read.lat_mean_ns, result.read.clat_mean_ns) == (None, None, None)


def test_aggregate_latency_bounds_need_every_job_measured() -> None:
    # One job with latencies and one without: the max over the measured one alone is not the group's max.
    import json

    measured = json.loads((DATA / "json-seqread-1M-8M-fio-3.33.json").read_text())
    unmeasured = json.loads(_gtod())
    measured["jobs"].append(unmeasured["jobs"][0])
    result = parse_json(json.dumps(measured))
    assert result.jobs[0].read.lat_max_ns is not None
    assert (result.read.lat_min_ns, result.read.lat_max_ns, result.read.lat_mean_ns) == (None, None, None)
