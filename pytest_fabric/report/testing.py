"""A stand-in for the plugin core, for testing and demonstrating the reports without a cluster.

Like httpx's ``MockTransport`` beside its real transports: :func:`write_fake_project`
writes a directory holding a ``conftest.py`` that does what the core does for
the report modules -- put a :class:`~pytest_fabric.record.runinfo.RunInfo` in
``config.stash``, a :class:`~pytest_fabric.record.check_record.PlannedCheck` on each item at
collection, the host-key decisions the connections made (when given), and attach a record to
each test report -- and one test per
record that ends the way the record says (failed, skipped, error in setup,
waived as xfail), as the core ends it: a failure or an error reads as its
message, not as a traceback.  :func:`sample_cluster` makes a realistic set of records:
a node with a slow link, a node that is down, NVLink matrices, a waiver.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_fabric.checks.builtin import builtin_registry
from pytest_fabric.checks.tcp import TCP_THROUGHPUT
from pytest_fabric.record.check_record import CheckRecord, evidence_from_results
from pytest_fabric.record.runinfo import RunInfo
from pytest_fabric.transport.results import CommandResult

__all__ = ["make_check", "sample_cluster", "sample_run_info", "write_fake_project"]

def _layer_of(check: str) -> str:
    declared = builtin_registry().check_of(check)  # the check families' too (storage, gpu, ...)
    return declared.layer if declared is not None else "inter_node"


def make_check(
    check: str,
    subject: str,
    outcome: str,
    *,
    value: Any = None,
    unit: str | None = None,
    expected: Any = None,
    op: str = ">=",
    nodes: list[str] | None = None,
    message: str = "",
    waiver: str | None = None,
    layer: str | None = None,
    evidence: list[tuple[str, str, int, str]] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A record dict as the core makes it (``CheckRecord.to_dict()``); margin from value and expected."""
    margin = None
    if isinstance(value, (int, float)) and isinstance(expected, (int, float)) and expected:
        margin = round((value - expected) / expected if op == ">=" else (expected - value) / expected, 6)
    if nodes is None:
        nodes = subject.split(":")[0].split("<->")
    # Through the core's own function, so outputs are cut to their tail exactly as in a real run.
    items = evidence_from_results([CommandResult(node, cmd, rc, out, "", 1.25) for node, cmd, rc, out in evidence or []])
    name = check + "[" + subject + "]"
    layer = layer or _layer_of(check)
    return CheckRecord(
        nodeid=f"conformance/{layer}/test_{check}.py::test_{name}",
        layer=layer,
        check=check,
        subject=subject,
        outcome=outcome,
        message=message or f"{check} {subject}: {outcome}",
        measured={"value": value, "unit": unit} if value is not None else None,
        expected={"op": op, "value": expected, "unit": unit, "key": f"{layer}.{builtin_registry().profile_key_of(check, layer)}.min",
                  "source": "vendor datasheet", "as_written": f"{expected} {unit or ''}".strip()}
        if expected is not None else None,
        margin=margin,
        nodes=nodes,
        waiver=waiver,
        evidence=items,
        started="2025-01-01T00:00:00+00:00",
        finished="2025-01-01T00:00:02+00:00",
        duration_s=2.0,
        extra=extra or {},
    ).to_dict()


def sample_run_info(nodes: list[str], *, leaves: int = 1, name: str = "demo-pod") -> RunInfo:
    """Run info for ``nodes``, spread over ``leaves`` leaf switches."""
    per = max(1, -(-len(nodes) // leaves))
    return RunInfo(
        cluster_name=name, inventory_path="inv.yaml", profile_name="hdr200", profile_path="profiles/hdr200.yaml",
        profile_sha256="ab" * 32, profile_extends=["base"], profile_description="8x A100, 4x HDR200",
        nodes=list(nodes), node_labels={n: {"leaf": f"leaf{i // per + 1}"} for i, n in enumerate(nodes)},
        overrides=[], pytest_fabric_version="0.1.0", started="2025-01-01T00:00:00+00:00",
    )


def sample_cluster(n: int = 4, *, slow: str | None = "node03", down: str | None = "node04",
                   pairs: bool = True) -> tuple[RunInfo, list[dict[str, Any]]]:
    """A cluster of ``n`` nodes: every pair's TCP throughput and RDMA latency, per-node NVLink matrices.

    ``slow`` gets 120 Gb/s on its pairs (the floor is 180), ``down`` errors on everything.
    """
    nodes = [f"node{i + 1:02d}" for i in range(n)]
    info = sample_run_info(nodes, leaves=max(1, n // 16))
    checks = []
    versions = {"iperf3": "3.12", "nvidia-smi": "550.54.15", "ib_write_lat": "6.10"}
    for node in nodes:
        if node == down:
            checks.append(make_check("nvlink_bandwidth", node, "error", nodes=[node],
                                     message=f"{node} unreachable: ssh {node} true: connection refused; "
                                             "check sshd on the node"))
            continue
        gpus = [f"GPU{g}" for g in range(8)]
        values = [[None if i == j else 232.0 + (i + j) % 3 for j in range(8)] for i in range(8)]
        checks.append(make_check("nvlink_bandwidth", node, "passed", value=232.0, unit="GB/s", expected=230,
                                 nodes=[node], extra={"matrix": {"gpus": gpus, "values": values},
                                                      "tool_versions": {"nvbandwidth": "0.5"}}))
    for i, a in enumerate(nodes if pairs else []):
        for b in nodes[i + 1:]:
            subject = f"{a}<->{b}"
            if down in (a, b):
                checks.append(make_check(TCP_THROUGHPUT.name, subject, "error", nodes=[a, b],
                                         message=f"{down} unreachable: ssh {down} iperf3 -s: connection refused"))
                continue
            bad = slow in (a, b)
            v = 120.5 if bad else 191.2
            checks.append(make_check(
                TCP_THROUGHPUT.name, subject, "failed" if bad else "passed", value=v, unit="Gb/s", expected=180,
                nodes=[a, b], message=f"{subject}: {v} Gb/s, expected >= 180 Gb/s",
                evidence=[(a, f"iperf3 -c {b} -P 8 -t 10 -J", 0, '{"end": {"sum_received": {"bits_per_second": 1}}}'),
                          (b, "iperf3 -s -1 -J", 0, "<server output & stuff>")],
                extra={"tool_versions": versions}))
            lat = 1.9 if not bad else 2.4
            checks.append(make_check("rdma_latency", subject, "passed", value=lat, unit="us", expected=2.5, op="<=",
                                     nodes=[a, b]))
    if slow and slow in nodes:
        checks.append(make_check("port_rate", f"{slow}:mlx5_0/1", "waived", value=100, unit="Gb/s", expected=200,
                                 nodes=[slow], waiver="cable swap scheduled, ticket OPS-1234",
                                 extra={"attribution": [{"node": slow, "verdict": "node fault",
                                                         "bad_peers": [n for n in nodes if n not in (slow, down)],
                                                         "message": f"every pair with {slow} is slow"}]}))
    checks.append(make_check("download", f"{nodes[0]}:mirror", "skipped", nodes=[nodes[0]],
                             message="profile has no egress.download"))
    return info, checks


_CONFTEST = '''
import json, pathlib
import pytest
from pytest_fabric.record.check_record import PLANNED_KEY, PlannedCheck
from pytest_fabric.report.trust import HOST_KEYS_KEY
from pytest_fabric.record.runinfo import RUN_INFO_KEY, RunInfo
from pytest_fabric.transport.base import TransportError

_HERE = pathlib.Path(__file__).parent
RECORDS = json.loads((_HERE / "fake_records.json").read_text())
RUN = json.loads((_HERE / "fake_run.json").read_text())
HOST_KEYS = json.loads((_HERE / "fake_host_keys.json").read_text())


def pytest_configure(config):
    config.stash[RUN_INFO_KEY] = RunInfo(**RUN)
    config.stash[HOST_KEYS_KEY] = HOST_KEYS  # as the connections log them (FabricState.host_keys)


@pytest.hookimpl(tryfirst=True)  # as the core: before -k and --deselect remove items
def pytest_collection_modifyitems(items):
    for item in items:
        i = getattr(item, "callspec", None) and item.callspec.params.get("i")
        if i is not None:
            r = RECORDS[i]
            item.stash[PLANNED_KEY] = PlannedCheck(item.nodeid, r["layer"], r["check"], r["subject"],
                                                   f"{r['layer']}.{r['check']}", bool(r.get("expected")))


class StandInError(TransportError):
    """An error as the transport raises one: what it says is the record's message."""

    def __init__(self, message):
        Exception.__init__(self, message)
        self.node, self.command, self.fix, self.detail = "", None, None, message


@pytest.fixture
def rec(request):
    r = RECORDS[request.node.callspec.params["i"]]
    if r["outcome"] == "error":
        raise StandInError(r["message"])
    if r["outcome"] == "skipped":
        pytest.skip(r["message"])
    return r


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    i = getattr(item, "callspec", None) and item.callspec.params.get("i")
    if i is None:
        return
    r = dict(RECORDS[i], nodeid=item.nodeid)
    if call.when == "call" or (call.when == "setup" and r["outcome"] in ("error", "skipped")):
        report.fabric_check = r
'''

_TESTS = '''
import json, pathlib
import pytest

N = len(json.loads((pathlib.Path(__file__).parent / "fake_records.json").read_text()))


@pytest.mark.parametrize("i", range(N))
def test_check(rec, i):
    if rec["outcome"] == "failed":
        pytest.fail(rec["message"], pytrace=False)
    if rec["outcome"] == "waived":
        pytest.xfail(rec["waiver"])
'''


def write_fake_project(directory: Path, info: RunInfo, checks: list[dict[str, Any]], *,
                       host_keys: list[dict[str, Any]] | None = None) -> None:
    """Write ``conftest.py``, ``test_fake_checks.py`` and their data into ``directory``.

    ``host_keys``: what the run's connections did with each node's host key, as the record's
    ``run.host_keys`` holds them (policy: ``info.host_key_policy``).
    """
    directory = Path(directory)
    (directory / "fake_records.json").write_text(json.dumps(checks))
    (directory / "fake_host_keys.json").write_text(json.dumps(host_keys or []))
    (directory / "fake_run.json").write_text(json.dumps(info.to_dict()))
    (directory / "conftest.py").write_text(_CONFTEST)
    (directory / "test_fake_checks.py").write_text(_TESTS)
