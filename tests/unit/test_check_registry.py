"""The run's check registry: built-in and extension declarations alike, and the profile schema built from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric import Dimension, Op
from pytest_fabric.checks.base import NO_CHECKS, Check, CheckRegistry, PortBlock, RegistryError
from pytest_fabric.checks.builtin import builtin_registry, builtin_schema, load_profile
from pytest_fabric.checks.links import Mtu
from pytest_fabric.config.profile import (
    BUILTIN_SCHEMA,
    CheckSpec,
    profile_schema,
)
from pytest_fabric.config.units import QuantityField
from pytest_fabric.config.yamlsource import SourceError
from pytest_fabric.probes.preflight import required_tools
from pytest_fabric.run.plan import PlannedSubject, measurement_seconds, phase_of, plan_run


class LinkFlaps(CheckSpec):
    """An extension's settings model: a ceiling on a node's link flaps, and its own parameter."""

    BOUNDS = (("max", Op.MAX, Dimension.COUNT),)
    SCALAR_FIELD = "max"
    max: QuantityField | None = None
    window: QuantityField | None = None


FLAPS = Check("link_flaps", "inter_node", LinkFlaps, "node", "wave", tools=("ip",), typical_s=4.0, phase=40,
              ports=PortBlock(30000, 8))


def _registry(*extra: tuple[str, list[Check]]) -> CheckRegistry:  # type: ignore[type-arg]
    return CheckRegistry.assemble([("fabric", list(builtin_registry().declared())), *extra])


def test_the_builtins_assemble_to_the_builtin_schema() -> None:
    assert profile_schema(NO_CHECKS.settings_models()) is BUILTIN_SCHEMA  # no check: the typed sections alone
    registry = _registry()  # the families (checks/<family>.py): their keys added to those sections
    assert profile_schema(registry.settings_models()).known_fields(("storage",)) == \
        builtin_schema().known_fields(("storage",))
    assert "sequential_write" in builtin_schema().known_fields(("storage",))
    assert "sequential_write" not in BUILTIN_SCHEMA.known_fields(("storage",))


def test_an_extensions_declaration_reaches_keys_tools_plan_and_phase() -> None:
    registry = _registry(("flaps", [FLAPS]))
    assert registry.check_of("link_flaps") is FLAPS and registry.profile_key_of("link_flaps", "inter_node") == "link_flaps"
    assert required_tools(["inter_node.link_flaps"], "infiniband", (), registry) == {"ip": ["inter_node.link_flaps"]}
    assert required_tools(["inter_node.link_flaps"], "infiniband") == {}  # the built-ins alone know nothing of it
    assert measurement_seconds("link_flaps", LinkFlaps.model_validate({"max": 0}), checks=registry) == 4.0
    plan = plan_run([PlannedSubject("inter_node", "link_flaps", "wave")], {("inter_node", "link_flaps"): LinkFlaps.model_validate({"max": 0})},
                    fanout=8, checks=registry)
    (flaps,) = plan.checks
    assert (flaps.seconds, flaps.order, flaps.phase) == (4.0, 40, phase_of("inter_node", "link_flaps", "wave"))


def test_an_extensions_key_is_typed_by_its_model_and_extends_still_works(tmp_path: Path) -> None:
    schema = profile_schema(_registry(("flaps", [FLAPS])).settings_models())
    (tmp_path / "flaps.yaml").write_text("name: flaps\nextends: localhost\ninter_node:\n  link_flaps: {max: 0, window: 60 s}\n")
    profile = load_profile(str(tmp_path / "flaps.yaml"), ["inter_node.link_flaps=2"], schema)
    spec = profile.spec_of(FLAPS)
    assert isinstance(spec, LinkFlaps) and spec.max is not None and int(spec.max.value) == 2 and str(spec.window) == "60 s"
    assert profile.spec("inter_node", "mtu") is not None  # from localhost
    assert "inter_node.link_flaps" in profile.set_checks()
    (tmp_path / "bad.yaml").write_text("name: bad\ninter_node:\n  link_flaps: {max: 0, windw: 60 s}\n")
    with pytest.raises(SourceError, match=r"bad.yaml:3: inter_node.link_flaps.windw: unknown key \(did you mean 'window'\?\)"):
        load_profile(str(tmp_path / "bad.yaml"), [], schema)
    with pytest.raises(SourceError, match=r"flaps.yaml:4: inter_node.link_flaps: unknown key"):
        load_profile(str(tmp_path / "flaps.yaml"))  # without its plugin's schema


@pytest.mark.parametrize(("extra", "words"), [
    (Check("mtu", "inter_node", Mtu, "node", "wave"), "check mtu is declared twice: by plugin fabric and by plugin ext"),
    (Check("mtu_again", "inter_node", LinkFlaps, "node", "wave", key="mtu"),
     "inter_node.mtu is typed Mtu (plugin fabric) and LinkFlaps by check mtu_again (plugin ext)"),
    (Check("near_rdma", "inter_node", None, "node_pair", "round", ports=PortBlock(18600, 4)),
     "ports of near_rdma (PortBlock(base=18600, size=4), plugin ext) overlap those of rdma_bandwidth"),
    (Check("flaps", "fabric", LinkFlaps, "node", "wave"), "layer 'fabric' is not one of software, intra_node"),  # type: ignore[arg-type]
    (Check("Link-Flaps", "inter_node", LinkFlaps, "node", "wave"), "check name 'Link-Flaps'"),
    (Check("flaps", "inter_node", dict, "node", "wave"), "is not a pytest_fabric.config.profile.CheckSpec subclass"),  # type: ignore[type-var]
    ("link_flaps", "pytest_fabric_checks returned 'link_flaps'"),
])
def test_declarations_that_cannot_all_hold_are_refused_naming_the_plugins(extra: object, words: str) -> None:
    with pytest.raises(RegistryError) as refused:
        _registry(("ext", [extra]))  # type: ignore[list-item]
    assert words in str(refused.value)


def test_a_key_that_is_a_layer_setting_is_refused() -> None:
    with pytest.raises(ValueError, match=r"inter_node.pairs is already a profile key of type str"):
        profile_schema({"inter_node": {"pairs": LinkFlaps}})


def test_the_report_puts_an_extensions_check_in_the_phase_its_plan_gave_it() -> None:
    from pytest_fabric.report.summary import plan_vs_actual

    plan = {"phases": [{"phase": "inter-node pairs", "planned_s": 10.0, "checks": ["link_probe"]}], "outside_s": 1.0}
    timed = plan_vs_actual(plan, [{"layer": "inter_node", "check": "link_probe", "duration_s": 8.0}], took_s=10.0)
    assert timed is not None and timed["phases"][0]["took_s"] == 8.0


def test_what_the_hardware_is_stated_by_is_read_by_declaration_not_by_name() -> None:
    from pytest_fabric.config.profile import Count, Ports

    registry, profile = builtin_registry(), load_profile("hdr200")
    gpus, rails = registry.stating("gpus", Count), registry.stating("rails", Ports)
    assert gpus is not None and gpus.profile_key == "intra_node.gpu_count"
    assert rails is not None and rails.profile_key == "inter_node.ports"
    assert registry.statement(profile, "gpus", Count) is profile.spec("intra_node", "gpu_count") is not None
    assert registry.stating("rails", LinkFlaps) is None  # stated, but by another model than the one asked
    # a registry without the family that states a part has no word on it
    assert NO_CHECKS.statement(profile, "gpus", Count) is None
