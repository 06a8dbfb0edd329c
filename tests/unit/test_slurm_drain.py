"""Drain lines and the inventory's slurm: section."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.config.inventory import load_inventory
from pytest_fabric.config.yamlsource import SourceError
from pytest_fabric.slurm.drain import drain_lines


def _record(check: str, outcome: str, *nodes: str) -> dict[str, object]:
    return {"check": check, "outcome": outcome, "nodes": list(nodes)}


def test_nodes_failing_their_own_checks_are_drained_grouped_by_reason() -> None:
    records = [
        _record("gpu_count", "failed", "gpu03"),
        _record("gpu_count", "failed", "gpu04"),
        _record("port_rate", "failed", "gpu07"),
        _record("attribution", "failed", "gpu07"),
        _record("gpu_count", "passed", "gpu01"),
        _record("rdma_bandwidth", "failed", "gpu01", "gpu02"),  # a pair blames neither node
        _record("mtu", "error", "gpu05"),  # could not measure: not a failure
    ]
    lines = [str(line) for line in drain_lines(records, "hdr200")]
    assert lines == [
        'scontrol update nodename=gpu07 state=drain reason="pytest-fabric hdr200: failed attribution, port_rate"',
        'scontrol update nodename=gpu[03-04] state=drain reason="pytest-fabric hdr200: failed gpu_count"',
    ]


def test_a_long_reason_is_cut_and_says_how_many_more() -> None:
    records = [_record(f"check_number_{i:02d}", "failed", "n1") for i in range(20)]
    (line,) = drain_lines(records)
    assert len(line.reason) <= 120
    assert line.reason.endswith("more")
    assert line.argv[:4] == ["scontrol", "update", "nodename=n1", "state=drain"]


def test_nothing_failed_nothing_to_drain() -> None:
    assert drain_lines([_record("mtu", "passed", "n1")]) == []


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(text)
    return path


def test_a_slurm_section_with_a_nodeset_is_the_node_list(tmp_path: Path) -> None:
    inv = load_inventory(_write(tmp_path, 'slurm: {partition: gpu, account: proj42, nodes: "gpu[001-004]"}\n'))
    assert inv.node_names == ["gpu001", "gpu002", "gpu003", "gpu004"]
    assert {n.transport for n in inv.nodes} == {"slurm"}
    assert inv.slurm is not None and (inv.slurm.partition, inv.slurm.account, inv.slurm.job_id) == ("gpu", "proj42", None)


def test_listed_nodes_under_a_slurm_section_go_through_slurm(tmp_path: Path) -> None:
    inv = load_inventory(_write(tmp_path, "slurm: {partition: gpu}\nnodes:\n  - {name: 'gpu[1-2]', host: '10.0.0.[1-2]'}\n"))
    assert [(n.name, n.host, n.transport) for n in inv.nodes] == [("gpu1", "10.0.0.1", "slurm"), ("gpu2", "10.0.0.2", "slurm")]


def test_the_current_allocation_gives_job_and_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu[07-09]")
    inv = load_inventory(_write(tmp_path, "slurm: {allocation: current}\n"))
    assert inv.node_names == ["gpu07", "gpu08", "gpu09"]
    assert inv.slurm is not None and inv.slurm.job_id == "4242"


def test_the_current_allocation_outside_one_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SourceError, match=r"inventory.yaml:1: slurm.allocation: current: no Slurm allocation.*salloc"):
        load_inventory(_write(tmp_path, "slurm: {allocation: current}\n"))


def test_slurm_section_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r":1: slurm.partition"):
        load_inventory(_write(tmp_path, "slurm: {partition: 'gpu; rm -rf /', nodes: n1}\n"))
    with pytest.raises(SourceError, match=r"slurm.nodes"):
        load_inventory(_write(tmp_path, "slurm: {partition: gpu}\n"))


def test_nodes_connecting_at_once_share_one_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool makes transports in parallel: every node must get the same allocation (one salloc)."""
    import threading
    import time
    from types import SimpleNamespace

    from pytest_fabric.checks.builtin import builtin_registry, load_profile
    from pytest_fabric.run.state import STATE_KEY
    from pytest_fabric.slurm import allocation as slurm_session
    from pytest_fabric.transport import slurm

    made: list[object] = []
    real_init = slurm.SlurmAllocation.__init__

    def slow_init(self: slurm.SlurmAllocation, *args: object, **kwargs: object) -> None:
        time.sleep(0.05)  # widen the window in which a second thread could make its own
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]
        made.append(self)

    monkeypatch.setattr(slurm.SlurmAllocation, "__init__", slow_init)
    config = SimpleNamespace(stash=pytest.Stash(), add_cleanup=lambda f: None, getoption=lambda name, default=None: default)
    state = SimpleNamespace(inventory=SimpleNamespace(nodes=[], slurm=None), profile=load_profile("base"),
                            checks=builtin_registry())
    config.stash[STATE_KEY] = state  # type: ignore[assignment]
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(slurm_session.allocation_for(config))) for _ in range(8)]  # type: ignore[arg-type]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1
    assert all(a is made[0] for a in got)
