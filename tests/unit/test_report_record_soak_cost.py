"""A soak re-reports every test each cycle: the record's rewrites must stay cheap when checks are replaced."""

from __future__ import annotations

import time
from pathlib import Path

from pytest_fabric.record.runinfo import RunInfo
from pytest_fabric.report.record_json import RecordWriter
from pytest_fabric.report.verify import verify_file


def test_a_second_cycle_of_2000_checks_replacing_the_first_stays_cheap(tmp_path: Path) -> None:
    info = RunInfo(cluster_name="c", inventory_path="inv.yaml", profile_name="p", profile_path="p.yaml",
                   profile_sha256="0" * 64, profile_extends=[], profile_description="",
                   nodes=[f"n{i}" for i in range(2000)], node_labels={}, overrides=[], pytest_fabric_version="0")
    check = {"layer": "inter_node", "check": "tcp_throughput", "outcome": "passed", "message": "x" * 400,
             "measured": {"value": 9.5, "unit": "Gb/s"}, "duration_s": 1.0}
    writer = RecordWriter(tmp_path / "rec.json", info, min_interval_s=3600)  # as the plugin's pace: few rewrites
    for i in range(2000):
        writer.add(f"t{i}", dict(check, nodeid=f"t{i}", subject=f"n{i}"))
    t0 = time.perf_counter()
    for i in range(2000):  # cycle 2: every test again, each replacing its record
        writer.add(f"t{i}", dict(check, nodeid=f"t{i}", subject=f"n{i}", outcome="failed"))
    replaced = time.perf_counter() - t0
    writer.write()
    assert verify_file(tmp_path / "rec.json")[0]
    # Rehashing every record on every replacement took ~2000 x 1 MB (seconds); once per rewrite it is ~ms.
    assert replaced < 1.0, f"{replaced:.2f} s to replace 2000 records"
