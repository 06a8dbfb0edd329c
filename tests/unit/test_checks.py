"""Every check is declared once, and every declaration agrees with its test and its profile model."""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest
from unit.bundled_registry import bundled_registry, bundled_schema

from pytest_fabric import plugin
from pytest_fabric.checks import base as checks
from pytest_fabric.checks.builtin import FAMILIES
from pytest_fabric.config.bundled import conformance_dir
from pytest_fabric.config.profile import LAYERS, CheckSpec
from pytest_fabric.run.subjects import SUBJECT_FIXTURES


def _conformance_tests() -> list[tuple[str, str, str, Path]]:
    """(layer marker, check, subject fixture or "cluster", file) of every test in the bundled suite."""
    found = []
    for path in sorted(conformance_dir().rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        layer = next(
            node.value.attr for node in tree.body
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
            and isinstance(node.value, ast.Attribute)
        )
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                args = [a.arg for a in node.args.args]
                subject = next((a for a in args if a in SUBJECT_FIXTURES), "cluster")
                found.append((layer, node.name.removeprefix("test_"), subject, path))
    return found


def test_every_conformance_test_is_a_declared_check_with_its_layer_and_subject() -> None:
    tests = _conformance_tests()
    assert len(tests) >= 40
    registry = bundled_registry()
    for layer, name, subject, path in tests:
        declared = registry.check_of(name)
        assert declared is not None, (f"{path.name}::test_{name} has no declaration in pytest_fabric/checks/base.py "
                                      "or a check family's module")
        assert (declared.layer, declared.subject) == (layer, subject), f"test_{name} in {path}"
    assert {name for _, name, _, _ in tests} == set(registry.checks), "a declaration without its test"


def _section_fields(layer: str) -> dict[str, type[CheckSpec]]:
    section = bundled_schema().sections[layer]  # the built-in table's keys and every family's
    out = {}
    for name, info in section.model_fields.items():
        for arg in typing.get_args(info.annotation) or (info.annotation,):
            if isinstance(arg, type) and issubclass(arg, CheckSpec):
                out[name] = arg
    return out


def test_every_declaration_names_a_profile_key_of_its_model() -> None:
    for check in bundled_registry().declared():
        if check.model is None:
            continue  # judged by what the inventory states (storage.mount)
        fields = _section_fields(check.layer)
        assert check.setting in fields, f"{check.name}: profiles have no {check.profile_key}"
        assert issubclass(fields[check.setting], check.model), (check.name, fields[check.setting], check.model)


def test_every_profile_key_is_judged_by_a_declared_check() -> None:
    for layer in LAYERS:
        for key in _section_fields(layer):
            assert bundled_registry().checks_judged_by(f"{layer}.{key}"), f"{layer}.{key} is judged by no check"


def test_the_families_a_run_registers_are_the_builtin_ones() -> None:
    """plugin.py registers each family module as a plugin; checks/builtin.py assembles the same ones
    for what reads profiles without a run (a family left out of either would read differently)."""
    registered = [m for m in plugin.pytest_plugins if m.startswith("pytest_fabric.checks.")]
    assert registered == [family.__name__ for family in FAMILIES]


def test_port_blocks_do_not_overlap_and_stay_below_the_ephemeral_range() -> None:
    blocks = [(c.name, c.ports) for c in bundled_registry().declared() if c.ports is not None]
    assert len(blocks) >= 6
    for i, (name, block) in enumerate(blocks):
        assert 1024 <= block.base and block.end <= 32768, name  # Linux hands out 32768+ to clients
        for other, theirs in blocks[i + 1:]:
            assert not block.overlaps(theirs), (name, other)


def test_a_declaration_whose_ports_overlap_another_is_refused() -> None:
    clash = checks.Check("clash", "inter_node", None, "node_pair", "round", ports=checks.PortBlock(22200, 10))
    # the run's registry refuses an extension's block that overlaps a family's (oversubscription's)
    with pytest.raises(checks.RegistryError, match="overlap those of oversubscription"):
        checks.CheckRegistry.assemble([("fabric", list(bundled_registry().declared())), ("ext", [clash])])


def test_a_port_outside_its_block_is_an_error_not_another_checks_port() -> None:
    from pytest_fabric.checks.rdma import RDMA_BANDWIDTH_PORTS as block
    assert block.port(0) == 18515
    with pytest.raises(ValueError, match="too small"):
        block.port(block.size)


def test_tools_follow_the_declarations_and_the_link_layer() -> None:
    keys = ["inter_node.rdma_bandwidth", "inter_node.error_counters", "intra_node.nccl_allreduce"]
    registry = bundled_registry()
    assert registry.tools_for(keys, "infiniband") == {
        "ibstat": ["inter_node.rdma_bandwidth"], "ib_write_bw": ["inter_node.rdma_bandwidth"],
        "perfquery": ["inter_node.error_counters"],
        "nvidia-smi": ["intra_node.nccl_allreduce"], "all_reduce_perf": ["intra_node.nccl_allreduce"],
    }
    assert "ethtool" in registry.tools_for(keys, "ethernet")


def test_a_key_two_checks_share_is_one_profile_key() -> None:
    assert [c.name for c in bundled_registry().checks_judged_by("inter_node.outlier")] == [
        "rdma_bandwidth_outlier", "tcp_throughput_outlier"]
    assert bundled_registry().profile_key_of("node_nccl_allreduce", "intra_node") == "nccl_allreduce"
    assert bundled_registry().profile_key_of("my_own_check", "inter_node") == "my_own_check"
