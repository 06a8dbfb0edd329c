"""Bundled InfiniBand profiles give TCP an absolute floor: a share of an IPoIB interface's IB rate is no TCP figure."""

from __future__ import annotations

from importlib import resources

from unit.bundled_registry import bundled_schema

from pytest_fabric.checks.builtin import load_profile


def test_infiniband_profiles_set_an_absolute_cited_tcp_floor() -> None:
    names = sorted(p.name.removesuffix(".yaml") for p in resources.files("pytest_fabric.profiles").iterdir()
                   if p.name.endswith(".yaml"))
    judged = []
    for name in names:
        profile = load_profile(name, [], bundled_schema())  # the check families' keys too (ndr400-burn-in)
        tcp = profile.spec("inter_node", "tcp_throughput")
        link_layer = profile.spec("inter_node", "link_layer")
        if tcp is None or "infiniband" not in str(getattr(link_layer, "equal", link_layer)).lower():
            continue
        judged.append(name)
        assert tcp.min is not None and not tcp.min.is_line_share, f"{name}: tcp_throughput.min is {tcp.min}"
        assert tcp.source, f"{name}: the TCP floor names no source"
    assert judged == ["hdr200", "hdr200-8rail", "ndr400-burn-in", "ndr400-large"], judged
