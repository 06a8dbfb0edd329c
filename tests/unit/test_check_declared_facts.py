"""What the generic modules know of a check comes from its declaration, not from its name: an
extension's check declares its ceiling (judge/ceilings.py), the inventory it needs
(judge/applicability.py) and, in its settings model, what it shares (run/sharing.py), and is held
to them as the built-in families are."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

import pytest

from pytest_fabric import Dimension, Op
from pytest_fabric.checks.base import BlameInput, Check, CheckRegistry
from pytest_fabric.checks.builtin import builtin_registry
from pytest_fabric.config.inventory import load_inventory
from pytest_fabric.config.profile import CheckSpec, Profile, load_profile, profile_schema
from pytest_fabric.config.units import QuantityField
from pytest_fabric.config.yamlsource import SourceError
from pytest_fabric.judge.applicability import unmeasurable
from pytest_fabric.run import sharing


class WideBandwidth(CheckSpec):
    """An extension's pair bandwidth floor, loading the mount it writes to."""

    BOUNDS = (("min", Op.MIN, Dimension.BANDWIDTH),)
    SHARES: ClassVar[Literal["mount", "server"] | None] = "mount"
    min: QuantityField | None = None


WIDE: Check[Any] = Check("wide_bandwidth", "storage", WideBandwidth, "mount", "wave", ceiling="port_line", needs=("mounts",))
#: an extension's pair check that feeds attribution (one figure a pair, Gb/s)
WIDE_PAIR: Check[Any] = Check("wide_pair", "inter_node", WideBandwidth, "node_pair", "round", blame=BlameInput("Gb/s"))


def _registry() -> CheckRegistry:
    return CheckRegistry.assemble([("fabric", list(builtin_registry().declared())), ("wide", [WIDE, WIDE_PAIR])])


def _profile(tmp_path: Path, text: str, registry: CheckRegistry) -> Profile:
    (tmp_path / "p.yaml").write_text("name: p\n" + text)
    return load_profile(str(tmp_path / "p.yaml"), [], profile_schema(registry.settings_models(), registry.ceilings(),
                                                                     registry.blame_inputs()))


def test_attribution_reads_a_check_that_declares_it_feeds_the_model_and_refuses_one_that_does_not(tmp_path: Path) -> None:
    registry = _registry()
    profile = _profile(tmp_path, "inter_node:\n  wide_pair: {min: 1 Gb/s}\n  attribution: {check: wide_pair}\n", registry)
    assert getattr(profile.spec("inter_node", "attribution"), "check", None) == "wide_pair"
    with pytest.raises(SourceError) as refused:
        _profile(tmp_path, "inter_node:\n  rdma_latency: {max: 5 us}\n  attribution: {check: rdma_latency}\n", registry)
    said = str(refused.value)
    assert f"{tmp_path / 'p.yaml'}:4: inter_node.attribution.check: 'rdma_latency'" in said
    assert "rdma_bandwidth, gpudirect_bandwidth, tcp_throughput, nccl_allreduce, wide_pair" in said


def test_a_declared_ceiling_holds_an_extensions_floor_at_load(tmp_path: Path) -> None:
    registry = _registry()
    assert registry.ceilings()[("storage", "wide_bandwidth")] == "port_line"
    with pytest.raises(SourceError, match=r"storage.wide_bandwidth.min: 400 Gb/s is more than this profile's hardware "
                                          r"carries: 200 Gb/s \(one port's line, inter_node.port_rate 200 Gb/s\)"):
        _profile(tmp_path, "inter_node: {port_rate: 200 Gb/s}\nstorage: {wide_bandwidth: {min: 400 Gb/s}}\n", registry)
    _profile(tmp_path, "inter_node: {port_rate: 200 Gb/s}\nstorage: {wide_bandwidth: {min: 150 Gb/s}}\n", registry)


def test_the_built_in_ceilings_are_the_families_declarations() -> None:
    ceilings = builtin_registry().ceilings()
    assert ceilings[("intra_node", "host_to_device_bandwidth")] == "gpu_pcie"
    assert ceilings[("intra_node", "nvlink_bandwidth")] == "nvlink"
    assert ceilings[("inter_node", "nccl_allreduce")] == "all_rails"
    assert ("intra_node", "nccl_allreduce") not in ceilings  # one node's NCCL is bounded by no port


def test_a_declared_need_is_said_at_load_with_the_key_to_add(tmp_path: Path) -> None:
    registry = _registry()
    (tmp_path / "inv.yaml").write_text("nodes: [{name: 'n[1-2]', host: '10.0.0.[1-2]'}]\n")
    inventory = load_inventory(tmp_path / "inv.yaml")
    profile = _profile(tmp_path, "storage: {wide_bandwidth: {min: 1 Gb/s}}\n", registry)
    found = dict(unmeasurable(profile, inventory, [], registry))
    assert "storage.wide_bandwidth" in found
    assert "lists no storage.mounts: add the mounts to measure" in found["storage.wide_bandwidth"]
    assert not unmeasurable(profile, inventory, [])  # the table alone: not its check


def test_what_a_measurement_shares_is_its_settings_models(tmp_path: Path) -> None:
    registry = _registry()
    (tmp_path / "inv.yaml").write_text("nodes: [{name: 'n[1-2]', host: '10.0.0.[1-2]'}]\n"
                                       "storage: {mounts: [{path: /lustre, fstype: lustre}]}\n")
    inventory = load_inventory(tmp_path / "inv.yaml")
    profile = _profile(tmp_path, "storage: {wide_bandwidth: {min: 1 Gb/s}, sequential_write: {min: 1 GB/s}}\n", registry)
    assert sharing.loads_mount(profile, "wide_bandwidth")
    assert sharing.share_for(inventory, profile, "wide_bandwidth", "mount", ("n1", "/lustre")) is not None
    assert not sharing.loads_mount(profile, "mount")  # findmnt loads nothing


def test_the_reports_stand_in_records_place_a_familys_check_in_its_layer() -> None:
    from pytest_fabric.report.testing import make_check

    record = make_check("sequential_write", "node01:/scratch", "passed", value=2.0, unit="GB/s", expected=1.0)
    assert record["layer"] == "storage" and record["expected"]["key"] == "storage.sequential_write.min"
    assert make_check("gpu_health", "node01", "passed")["layer"] == "intra_node"


def test_what_an_ethernet_or_small_cluster_cannot_have_is_each_checks_declaration(tmp_path: Path) -> None:
    from pytest_fabric.judge.applicability import cannot_exist
    from pytest_fabric.run.pairs import make_pairs

    registry = builtin_registry()
    (tmp_path / "inv.yaml").write_text("nodes: [{name: 'n[1-2]', host: '10.0.0.[1-2]'}]\n")
    inventory = load_inventory(tmp_path / "inv.yaml")
    profile = _profile(tmp_path, "inter_node:\n  link_layer: ethernet\n  switch_links: {}\n"
                                 "  scaling_efficiency: {min: 80%}\n  rdma_bandwidth: {min: 100 Gb/s}\n"
                                 "  outlier: {max_below_median: 10%}\n", registry)
    pairs = make_pairs(["n1", "n2"], "all")
    assert "reads an InfiniBand subnet" in dict(unmeasurable(profile, inventory, pairs, registry))["inter_node.switch_links"]
    gone = dict(cannot_exist(profile, inventory, pairs, registry))
    assert gone == {"inter_node.scaling_efficiency": "scaling_efficiency needs at least 3 nodes; the inventory has 2",
                    "inter_node.outlier": "a median needs at least 3 pairs; 2 node(s) give 1"}


def test_a_check_judging_the_pair_checks_needs_one_set_and_says_which(tmp_path: Path) -> None:
    registry = _registry()
    (tmp_path / "inv.yaml").write_text("nodes: [{name: 'n[1-3]', host: '10.0.0.[1-3]'}]\n")
    inventory = load_inventory(tmp_path / "inv.yaml")
    profile = _profile(tmp_path, "inter_node:\n  attribution: {}\n", registry)
    found = dict(unmeasurable(profile, inventory, [], registry))
    fed = ", ".join(registry.blame_inputs())
    assert "wide_pair" in fed  # an extension's pair check feeding attribution is among those named
    assert found["inter_node.attribution"] == (
        f"inter_node.attribution: attribution judges what the pair checks ({fed}) measured; profile "
        f"{profile.name} sets none (set one, or mark the check `optional: true` in the profile)")
    fed_one = _profile(tmp_path, "inter_node:\n  attribution: {}\n  wide_pair: {min: 1 Gb/s}\n", registry)
    assert "inter_node.attribution" not in dict(unmeasurable(fed_one, inventory, [], registry))
