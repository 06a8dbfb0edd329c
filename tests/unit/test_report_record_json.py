"""The JSON record: shape (schema), seal (sha256), verification, evidence files, cost of rewriting."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from pytest_fabric.report.collect import json_safe
from pytest_fabric.report.evidence import slim_evidence
from pytest_fabric.report.record_json import RecordWriter
from pytest_fabric.report.run_verdict import judge_run
from pytest_fabric.report.testing import make_check, sample_cluster
from pytest_fabric.report.verify import (
    canonical_json,
    check_file,
    main,
    record_sha256,
    verify_file,
    verify_record,
)

jsonschema = pytest.importorskip("jsonschema")


def _schema() -> dict[str, Any]:
    # Read as package data, the way an installed pytest-fabric ships it.
    return json.loads(resources.files("pytest_fabric.report").joinpath("record.schema.json").read_text())


def _slim(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json_safe(dict(c, evidence=slim_evidence(c["evidence"]))) for c in checks]


def _write(tmp_path: Path, status: str = "complete") -> Path:
    info, checks = sample_cluster(4)
    writer = RecordWriter(tmp_path / "rec.json", info)
    slim = _slim(checks)
    for c in slim:
        writer.add(c["nodeid"], c)
    writer.write(judge_run(slim, status=status), finished="2025-01-01T00:10:00+00:00", checks=slim)
    return tmp_path / "rec.json"


def test_record_matches_schema_and_design(tmp_path: Path) -> None:
    record = json.loads(_write(tmp_path).read_text())
    jsonschema.validate(record, _schema())
    assert set(record) == {"run", "checks", "sha256"}
    run = record["run"]
    assert run["verdict"] == "reject" and run["status"] == "complete" and run["node_count"] == 4
    assert run["counts"] == {"passed": 7, "failed": 2, "error": 4, "waived": 1, "skipped": 1}
    # What did not run and why; the nodes to send back as a nodeset (node03 slow, node04 down).
    assert run["not_run"] == {"errored": {"inter_node.tcp_throughput": 3, "intra_node.nvlink_bandwidth": 1}}
    assert run["send_back"] == "node03"
    assert list(run["not_measured"]) == ["node04"]  # down: listed apart with why, never sent back
    assert run["profile"] == "hdr200" and run["profile_extends"] == ["base"] and len(run["profile_sha256"]) == 64
    failed = next(c for c in record["checks"] if c["outcome"] == "failed")
    assert failed["measured"] == {"value": 120.5, "unit": "Gb/s"}
    assert failed["expected"]["op"] == ">=" and failed["expected"]["value"] == 180
    # Evidence keeps commands, exit codes and hashes, never the outputs.
    ev = failed["evidence"][0]
    assert ev["command"].startswith("iperf3 -c") and ev["exit_code"] == 0 and "stdout" not in ev


@pytest.mark.parametrize("status", ["complete", "interrupted"])
def test_schema_takes_every_verdict(tmp_path: Path, status: str) -> None:
    record = json.loads(_write(tmp_path, status).read_text())
    jsonschema.validate(record, _schema())
    assert record["run"]["verdict"] == {"complete": "reject", "interrupted": "interrupted"}[status]
    for verdict in ("accept", "incomplete", None):
        jsonschema.validate(dict(record, run=dict(record["run"], verdict=verdict)), _schema())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(dict(record, run=dict(record["run"], verdict="ok")), _schema())


def test_schema_rejects_a_record_with_outputs_inline(tmp_path: Path) -> None:
    record = json.loads(_write(tmp_path).read_text())
    check = next(c for c in record["checks"] if c["evidence"])
    check["evidence"] = [dict(check["evidence"][0], stdout="raw")]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, _schema())


def test_file_hash_equals_canonical_hash(tmp_path: Path) -> None:
    record = json.loads(_write(tmp_path).read_text())
    assert record["sha256"] == record_sha256(record)
    body = canonical_json({"checks": record["checks"], "run": record["run"]})
    assert record["sha256"] == hashlib.sha256(body.encode()).hexdigest()


def test_verify_detects_an_edited_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path)
    record = json.loads(path.read_text())
    assert verify_record(record) and verify_file(path) == (True, [])
    edited = copy.deepcopy(record)
    next(c for c in edited["checks"] if c["outcome"] == "failed")["measured"]["value"] = 190.5
    assert not verify_record(edited)
    # Reformatting is not editing.
    (tmp_path / "pretty.json").write_text(json.dumps(record, indent=2))
    (tmp_path / "edited.json").write_text(json.dumps(edited, indent=2))
    assert main([str(tmp_path / "pretty.json")]) == 0
    assert main([str(tmp_path / "edited.json")]) == 1
    out = capsys.readouterr().out
    assert "pretty.json: OK" in out and "edited.json: EDITED" in out


def test_verify_command_line(tmp_path: Path) -> None:
    path = _write(tmp_path)
    run = subprocess.run([sys.executable, "-m", "pytest_fabric.report.verify", str(path)], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0 and run.stdout.strip().endswith("OK") and not run.stderr


def test_evidence_files_named_by_hash_and_checked(tmp_path: Path) -> None:
    evdir = tmp_path / "evidence"
    evdir.mkdir()
    long_output = "x" * 20_000
    check = make_check("tcp_throughput", "a<->b", "passed",
                       evidence=[("a", "iperf3 -c b", 0, "hello\n"), ("b", "cat big", 0, long_output)])
    slim = slim_evidence(check["evidence"], evdir, tmp_path)
    assert slim[0]["stdout_file"] == f"evidence/{slim[0]['stdout_sha256']}.txt"
    assert (tmp_path / slim[0]["stdout_file"]).read_text() == "hello\n"
    assert slim[0]["stdout_file_truncated"] is False
    assert slim[1]["stdout_file_truncated"] is True  # the plugin kept only a 16 KiB tail
    info, _ = sample_cluster(2)
    writer = RecordWriter(tmp_path / "rec.json", info)
    writer.add(check["nodeid"], json_safe(dict(check, evidence=slim)))
    writer.write(judge_run([check]), checks=[check])
    assert verify_file(tmp_path / "rec.json") == (True, [])
    (tmp_path / slim[0]["stdout_file"]).write_text("goodbye\n")
    ok, problems = verify_file(tmp_path / "rec.json")
    assert not ok and "EDITED" in problems[0]


def test_every_rewrite_leaves_a_valid_sealed_record(tmp_path: Path) -> None:
    info, checks = sample_cluster(4)
    writer = RecordWriter(tmp_path / "rec.json", info, min_interval_s=0)
    for n, c in enumerate(_slim(checks), 1):
        writer.add(c["nodeid"], c)
        record = json.loads((tmp_path / "rec.json").read_text())  # as an interrupted run would leave it
        assert len(record["checks"]) == n and record["run"]["status"] == "running" and verify_record(record)
        # No verdict while running: a killed job's record must not read as a judgement.
        assert record["run"]["verdict"] is None and record["run"]["send_back"] is None
    assert not list(tmp_path.glob(".*tmp"))


def test_rewrites_stay_cheap(tmp_path: Path) -> None:
    """2,000 checks, the file rewritten after every one (no throttling): total and per-rewrite cost."""
    info, checks = sample_cluster(4)
    template = next(c for c in _slim(checks) if c["outcome"] == "failed")
    writer = RecordWriter(tmp_path / "rec.json", info, min_interval_s=0)
    t0 = time.perf_counter()
    for i in range(2000):
        writer.add(f"t{i}", dict(template, nodeid=f"t{i}", subject=f"n{i}<->n{i + 1}"))
    total = time.perf_counter() - t0
    size = (tmp_path / "rec.json").stat().st_size
    print(f"\n2000 checks, 2000 rewrites: {total:.2f} s total, {total / 2:.2f} ms per rewrite, final file {size >> 10} KiB")
    assert writer.writes == 2000 and verify_file(tmp_path / "rec.json")[0]
    # Generous bound for slow CI; measured ~3 s here. Real checks take seconds each, and the plugin
    # also throttles rewrites to one per 0.2 s.
    assert total < 30


def test_verify_a_file_that_cannot_be_read_is_not_called_edited(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "plain.json").write_text('{"run": {}, "checks": []}')
    assert main([str(tmp_path / "missing.json")]) == 2
    assert main([str(tmp_path / "broken.json")]) == 2
    assert main([str(tmp_path / "plain.json")]) == 2
    out = capsys.readouterr().out
    assert "EDITED" not in out
    assert f"{tmp_path / 'missing.json'}: CANNOT READ" in out and "no such file" in out
    assert f"{tmp_path / 'broken.json'}: CANNOT READ" in out and "not JSON" in out
    assert f"{tmp_path / 'plain.json'}: NOT SEALED" in out
    assert check_file(tmp_path / "missing.json").status == "cannot read"


def test_verify_missing_evidence_cannot_be_read_edited_evidence_is_edited(tmp_path: Path) -> None:
    evdir = tmp_path / "evidence"
    evdir.mkdir()
    check = make_check("tcp_throughput", "a<->b", "passed", evidence=[("a", "iperf3 -c b", 0, "hello\n")])
    slim = slim_evidence(check["evidence"], evdir, tmp_path)
    info, _ = sample_cluster(2)
    writer = RecordWriter(tmp_path / "rec.json", info)
    writer.add(check["nodeid"], json_safe(dict(check, evidence=slim)))
    writer.write(judge_run([check]), checks=[check])
    evidence = tmp_path / slim[0]["stdout_file"]
    evidence.write_text("bye\n")
    assert check_file(tmp_path / "rec.json").status == "edited"
    evidence.unlink()
    result = check_file(tmp_path / "rec.json")
    assert result.status == "cannot read" and "is missing" in result.problems[0]


def test_schema_holds_corroborations_and_tool_identity(tmp_path: Path) -> None:
    record = json.loads(_write(tmp_path).read_text())
    check = record["checks"][0]
    check["extra"] = {
        "corroborations": [{"witness": "interface counters", "node": "node01", "status": "uncorroborated",
                            "detail": "x", "claimed": 4e9, "witnessed": 1e9, "unit": "B", "tolerance": 0.02}],
        "tool_identity": {"node01": {"iperf3": {"path": "/usr/bin/iperf3", "resolved": "/usr/bin/iperf3",
                                                "sha256": "e8" * 32, "elf": True, "script": None, "build_id": "48",
                                                "package_manager": "dpkg", "package": "iperf3", "verify": [],
                                                "verify_rc": 0}}},
        "tool_flags": {"node01": []},
    }
    jsonschema.validate(record, _schema())
    check["extra"]["corroborations"][0]["status"] = "probably fine"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, _schema())
    check["extra"]["corroborations"][0]["status"] = "agrees"
    check["extra"]["tool_identity"]["node01"]["iperf3"]["sha256"] = "not a digest"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, _schema())


def test_schema_holds_the_storage_witness_and_cross_checks(tmp_path: Path) -> None:
    from pytest_fabric.judge import corroboration, cross_checks

    record = json.loads(_write(tmp_path).read_text())
    check = record["checks"][0]
    check["extra"] = {
        "corroborations": [
            corroboration.Corroboration("block device counters", "node01", "uncorroborated", "x", 6.7e7, 1.6e7,
                                        "B", 0.02).to_dict(),
            corroboration.Corroboration("storage counters", "node01", "not run", "no witness on this filesystem").to_dict(),
            corroboration.Corroboration("NFS client counters", "node01", "agrees", "x", 1.0, 2.0, "B", 0.02).to_dict(),
        ],
        "cross_checks": [cross_checks.nccl_against_rails("node01", 196.0, {"mlx5_0/1": 196.0}, by="rdma_bandwidth", tolerance=0.1).to_dict(),
                         cross_checks.tcp_against_rdma("node01", "eth0", None, 9.0, None, by="rdma_bandwidth", tolerance=0.1).to_dict()],
    }
    jsonschema.validate(record, _schema())
    check["extra"]["cross_checks"][0]["status"] = "roughly"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, _schema())
