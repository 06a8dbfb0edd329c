"""CheckRecord: the per-check dict the JSON record, JUnit and HTML report are built from."""

from __future__ import annotations

import hashlib
import json

from pytest_fabric.config.units import parse_quantity as q
from pytest_fabric.judge.verdict import Expectation, Measurement, Op, judge
from pytest_fabric.record.check_record import (
    INLINE_OUTPUT_LIMIT,
    CheckRecord,
    evidence_from_results,
    quantity_json,
)
from pytest_fabric.transport.results import CommandResult

NODEID = "conformance/inter_node/test_rdma.py::test_rdma_bandwidth[gpu01<->gpu02]"
DESIGN_FIELDS = {"nodeid", "layer", "check", "subject", "outcome", "measured", "expected", "message"}


def _rdma(min_: str = "90% line", **kwargs: object) -> Expectation:
    return Expectation(
        "inter_node", "rdma_bandwidth", Op.MIN, q(min_), "inter_node.rdma_bandwidth.min", profile="hdr200", **kwargs  # type: ignore[arg-type]
    )


def _record(measurement: Measurement, expectation: Expectation, subject: str = "gpu01<->gpu02") -> dict[str, object]:
    verdict = judge(subject, measurement, expectation)
    record = CheckRecord.from_verdict(nodeid=NODEID, subject=subject, nodes=["gpu01", "gpu02"], verdict=verdict)
    return record.to_dict()


def test_fields_of_a_failed_check() -> None:
    evidence = (CommandResult("gpu01", "ib_write_bw -d mlx5_0 gpu02", 0, "BW 170.00\n", "", 10.1234),)
    measurement = Measurement(q("170 Gb/s"), line_rate=q("200 Gb/s"), evidence=evidence, detail="median of 3")
    record = _record(measurement, _rdma(source="azurehpc conf"))
    assert DESIGN_FIELDS <= set(record)
    assert record["nodeid"] == NODEID
    assert (record["layer"], record["check"], record["subject"]) == ("inter_node", "rdma_bandwidth", "gpu01<->gpu02")
    assert record["outcome"] == "failed"
    assert record["measured"] == {"value": 170, "unit": "Gb/s"}
    assert record["expected"] == {
        "op": ">=",
        "value": 180,
        "unit": "Gb/s",
        "key": "inter_node.rdma_bandwidth.min",
        "source": "azurehpc conf",
        "as_written": "90% line",
    }
    assert record["margin"] is not None and round(record["margin"], 4) == -0.0556  # type: ignore[call-overload]
    assert "measured 170 Gb/s" in str(record["message"]) and "200 Gb/s" in str(record["message"])
    assert record["nodes"] == ["gpu01", "gpu02"]
    assert record["detail"] == "median of 3"
    json.dumps(record)  # plain JSON: pytest-xdist ships it between processes


def test_passed_check_in_the_unit_the_author_wrote() -> None:
    expectation = Expectation(
        "intra_node", "nvlink_bandwidth", Op.MIN, q("235 GB/s"), "intra_node.nvlink_bandwidth.min"
    )
    record = _record(Measurement(q("2208 Gb/s")), expectation, subject="gpu01:gpu0-gpu1")
    assert record["outcome"] == "passed"
    assert record["measured"] == {"value": 276, "unit": "GB/s"}
    assert record["expected"]["value"] == 235 and record["expected"]["unit"] == "GB/s"  # type: ignore[index]


def test_waiver_is_carried() -> None:
    record = _record(Measurement(q("150 Gb/s")), _rdma("180 Gb/s", waiver="TICKET-42"))
    assert record["waiver"] == "TICKET-42"


def test_absent_measurement() -> None:
    record = _record(Measurement.absent("mlx5_0 is not there"), _rdma("180 Gb/s"))
    assert record["outcome"] == "failed"
    assert record["measured"] == {"value": "absent", "unit": None}
    assert record["message"] == "gpu01<->gpu02: mlx5_0 is not there"


def test_count_and_text_values() -> None:
    mtu = Expectation("inter_node", "mtu", Op.EQUAL, q(4096), "inter_node.mtu.equal")
    record = _record(Measurement(q(4096)), mtu, subject="gpu01")
    assert record["measured"] == {"value": 4096, "unit": None}
    assert record["expected"]["op"] == "==" and record["expected"]["value"] == 4096  # type: ignore[index]
    link = Expectation("inter_node", "link_layer", Op.CONTAINS, "infiniband", "inter_node.link_layer.value")
    record = _record(Measurement("InfiniBand"), link, subject="gpu01")
    assert record["measured"] == {"value": "InfiniBand", "unit": None}
    assert record["expected"]["op"] == "contains"  # type: ignore[index]


def test_quantity_json() -> None:
    assert quantity_json(None, None) is None
    assert quantity_json(q("1.52 us"), "us") == {"value": 1.52, "unit": "us"}
    assert quantity_json(q("25 GB/s"), None) == {"value": 200, "unit": "Gb/s"}
    assert quantity_json(q("90% line"), None) == {"value": 90, "unit": "% line"}
    assert quantity_json(q("7%"), None) == {"value": 7, "unit": "%"}
    assert quantity_json(True, None) == {"value": True, "unit": None}
    assert quantity_json(3.5, None) == {"value": 3.5, "unit": None}


def test_evidence_hashes_cover_the_whole_output() -> None:
    long_out = "x" * (INLINE_OUTPUT_LIMIT + 100)
    (item,) = evidence_from_results([CommandResult("gpu01", "ibstat", 0, long_out, "warn", 0.123456)])
    assert item.node == "gpu01" and item.command == "ibstat" and item.exit_code == 0
    assert item.duration_s == 0.123
    assert item.stdout_sha256 == hashlib.sha256(long_out.encode()).hexdigest()
    assert item.stderr_sha256 == hashlib.sha256(b"warn").hexdigest()
    assert item.stdout.startswith("[... 100 characters cut ...]\n")
    assert item.stdout.endswith("x" * INLINE_OUTPUT_LIMIT)
    assert item.stderr == "warn"


def test_evidence_in_the_record() -> None:
    evidence = (CommandResult("gpu02", "ib_write_bw -d mlx5_0", 0, "server\n", "", 10.0),
                CommandResult("gpu01", "ib_write_bw -d mlx5_0 gpu02", 0, "BW 191.3\n", "", 10.0))
    record = _record(Measurement(q("191.3 Gb/s"), evidence=evidence), _rdma("180 Gb/s"))
    items = record["evidence"]
    assert isinstance(items, list) and [e["node"] for e in items] == ["gpu02", "gpu01"]
    assert items[1]["stdout_sha256"] == hashlib.sha256(b"BW 191.3\n").hexdigest()
