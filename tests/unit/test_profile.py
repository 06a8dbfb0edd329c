"""Profiles: bundled ones, inheritance, --expect overrides, and errors that name file, line and field."""

from __future__ import annotations

import textwrap
from decimal import Decimal
from pathlib import Path

import pytest
from unit.bundled_registry import bundled_schema

from pytest_fabric.checks.builtin import load_profile
from pytest_fabric.config.profile import LAYERS, Profile, bundled_profiles
from pytest_fabric.config.units import Dimension, Quantity, parse_quantity
from pytest_fabric.config.yamlsource import SourceError
from pytest_fabric.judge.verdict import Op

BUNDLED = ["base", "hdr200-8rail", "hdr200", "localhost", "ndr400-burn-in", "ndr400-large", "roce-small"]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _error(reference: str | Path, overrides: list[str] | None = None) -> str:
    with pytest.raises(SourceError) as excinfo:
        load_profile(str(reference), overrides)
    return str(excinfo.value)


def _only(profile: Profile, layer: str, check: str) -> Quantity:
    (expectation,) = profile.expectations(layer, check)
    assert isinstance(expectation.value, Quantity)
    return expectation.value


# --- bundled ------------------------------------------------------------------


def test_bundled_profiles_are_listed() -> None:
    assert list(bundled_profiles()) == BUNDLED


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_profile_loads(name: str) -> None:
    profile = load_profile(name, schema=bundled_schema())  # the check families' keys too (ndr400-burn-in)
    assert profile.name == name
    assert profile.path == bundled_profiles()[name]
    assert len(profile.sha256) == 64
    assert profile.set_checks()


@pytest.mark.parametrize("name", ["hdr200", "ndr400-large", "roce-small"])
def test_cluster_profiles_extend_base(name: str) -> None:
    profile = load_profile(name)
    assert profile.extends == ["base"]
    assert [p.name for p in profile.chain] == [f"{name}.yaml", "base.yaml"]
    # inherited from base
    assert profile.document.inter_node.port_state is not None
    counters = {e.key: e.value for e in profile.expectations("inter_node", "error_counters")}
    assert counters == {
        "inter_node.error_counters.max": parse_quantity(0),  # link downed, link error recovery, ...
        "inter_node.error_counters.symbol_errors_per_hour": parse_quantity(10),  # bit errors: by rate
        "inter_node.error_counters.receive_errors_per_hour": parse_quantity(10),
    }
    assert _only(profile, "inter_node", "outlier") == parse_quantity("7%")


def test_hdr200_values() -> None:
    profile = load_profile("hdr200")
    assert _only(profile, "inter_node", "rdma_bandwidth").is_line_share
    assert _only(profile, "inter_node", "rdma_bandwidth").value == Decimal("0.9")
    assert _only(profile, "inter_node", "port_rate").to("Gb/s") == 200
    assert _only(profile, "intra_node", "nvlink_bandwidth").to("GB/s") == 235
    assert _only(profile, "intra_node", "nccl_allreduce").to("GB/s") == 220
    assert _only(profile, "inter_node", "rdma_latency").to("us") == Decimal("2.5")
    (mtu,) = profile.expectations("inter_node", "mtu")
    assert mtu.op is Op.EQUAL and mtu.value == parse_quantity(4096)
    (rdma,) = profile.expectations("inter_node", "rdma_bandwidth")
    assert rdma.key == "inter_node.rdma_bandwidth.min" and rdma.op is Op.MIN and rdma.profile == "hdr200"
    assert rdma.params == {"size": parse_quantity("8 MiB"), "qps": 4, "repeat": 3, "duration": parse_quantity("5 s")}
    assert profile.document.inter_node.pairs == "all up to 32 nodes, then random:4"


def test_ndr400_pairs_random() -> None:
    assert load_profile("ndr400-large").document.inter_node.pairs == "all up to 32 nodes, then random:4"


SOURCED = [
    ("inter_node", "rdma_bandwidth"),
    ("inter_node", "rdma_latency"),
    ("inter_node", "tcp_throughput"),
    ("inter_node", "nccl_allreduce"),
    ("intra_node", "nccl_allreduce"),
    ("intra_node", "nvlink_bandwidth"),
    ("intra_node", "host_to_device_bandwidth"),
    ("intra_node", "device_to_host_bandwidth"),
    ("inter_node", "outlier"),
]


@pytest.mark.parametrize("name", ["hdr200", "ndr400-large"])
@pytest.mark.parametrize(("layer", "check"), SOURCED)
def test_figures_carry_their_source(name: str, layer: str, check: str) -> None:
    expectations = load_profile(name).expectations(layer, check)
    assert expectations, f"{name} sets no {layer}.{check}"
    for expectation in expectations:
        assert expectation.source, f"{name}: {layer}.{check} has no source"


def test_every_roce_figure_carries_its_source() -> None:
    profile = load_profile("roce-small")
    for check in ("rdma_bandwidth", "rdma_latency", "tcp_throughput", "mtu"):
        assert all(e.source for e in profile.expectations("inter_node", check)), check


def test_a_check_the_profile_leaves_out_has_no_expectations() -> None:
    profile = load_profile("localhost")
    assert profile.expectations("inter_node", "rdma_bandwidth") == []
    assert profile.spec("inter_node", "pairs") is None  # a setting, not a check
    assert profile.expectations("inter_node", "pairs") == []
    assert "inter_node.tcp_throughput" in profile.set_checks()
    assert all(check.split(".")[0] in LAYERS for check in profile.set_checks())


# --- extends --------------------------------------------------------------------


def test_extends_a_relative_path(tmp_path: Path) -> None:
    _write(
        tmp_path / "sub" / "parent.yaml",
        """
        name: parent
        inter_node:
          mtu: 4096
          rdma_latency: {max: 3 us, source: parent figure}
        """,
    )
    child = _write(
        tmp_path / "child.yaml",
        """
        name: child
        extends: sub/parent.yaml
        inter_node:
          mtu: 9000
        """,
    )
    profile = load_profile(str(child))
    assert profile.name == "child"
    assert profile.chain == [child.resolve(), (tmp_path / "sub" / "parent.yaml").resolve()]
    assert _only(profile, "inter_node", "mtu").value == 9000
    latency = profile.expectations("inter_node", "rdma_latency")[0]
    assert latency.value == parse_quantity("3 us") and latency.source == "parent figure"


def test_extends_a_bundled_profile_and_overrides_one_key(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "mine.yaml",
        """
        name: mine
        extends: hdr200
        inter_node:
          rdma_bandwidth: {min: 150 Gb/s}
        """,
    )
    profile = load_profile(str(path))
    assert profile.extends == ["hdr200", "base"]
    (rdma,) = profile.expectations("inter_node", "rdma_bandwidth")
    assert rdma.value == parse_quantity("150 Gb/s")
    assert rdma.params["qps"] == 4  # merged, not replaced
    assert _only(profile, "intra_node", "nvlink_bandwidth").to("GB/s") == 235


def test_extends_cycle(tmp_path: Path) -> None:
    _write(tmp_path / "a.yaml", "name: a\nextends: b.yaml\n")
    _write(tmp_path / "b.yaml", "name: b\nextends: a.yaml\n")
    message = _error(tmp_path / "a.yaml")
    assert "`extends` makes a cycle" in message
    assert "a.yaml -> " in message and "b.yaml -> " in message


def test_extends_itself(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.yaml", "name: s\nextends: s.yaml\n")
    assert "`extends` makes a cycle" in _error(path)


def test_extends_an_unknown_profile(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.yaml", "name: p\nextends: hdr2000\n")
    message = _error(path)
    assert message.startswith(f"{path}:2: extends: no profile named 'hdr2000' (did you mean 'hdr200'?)")


def test_extends_a_missing_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.yaml", "name: p\nextends: other/missing.yaml\n")
    message = _error(path)
    assert message.startswith(f"{path}:2: extends: ") and "missing.yaml: no such file" in message


def test_extends_not_a_string(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.yaml", "name: p\nextends: [a, b]\n")
    assert _error(path).startswith(f"{path}:2: extends: write the name or path of one profile")


# --- unknown names and files -------------------------------------------------------


def test_unknown_profile_name_lists_the_bundled_ones() -> None:
    message = _error("hdr2000")
    assert "no profile named 'hdr2000' (did you mean 'hdr200'?)" in message
    for name in BUNDLED:
        assert name in message


def test_missing_profile_file(tmp_path: Path) -> None:
    assert _error(tmp_path / "nope.yaml") == f"{tmp_path / 'nope.yaml'}: no such file"


# --- --expect -----------------------------------------------------------------------


def test_expect_overrides_a_bound() -> None:
    profile = load_profile("hdr200", ["inter_node.rdma_bandwidth.min=150Gb/s"])
    (rdma,) = profile.expectations("inter_node", "rdma_bandwidth")
    assert rdma.value == parse_quantity("150 Gb/s") and str(rdma.value) == "150Gb/s"
    assert rdma.params["qps"] == 4 and rdma.source  # the rest of the check is kept
    assert profile.overrides == ["inter_node.rdma_bandwidth.min=150Gb/s"]


def test_expect_overrides_a_scalar_shorthand() -> None:
    profile = load_profile("hdr200", ["inter_node.mtu=9000"])
    assert _only(profile, "inter_node", "mtu").value == 9000


def test_expect_on_a_check_sets_its_bound_and_keeps_the_rest() -> None:
    profile = load_profile("hdr200", ["inter_node.rdma_bandwidth=150 Gb/s"])
    (rdma,) = profile.expectations("inter_node", "rdma_bandwidth")
    assert rdma.value == parse_quantity("150 Gb/s")
    assert rdma.params == {"size": parse_quantity("8 MiB"), "qps": 4, "repeat": 3, "duration": parse_quantity("5 s")}
    assert rdma.source


def test_expect_adds_a_check_the_profile_left_out() -> None:
    profile = load_profile("localhost", ["inter_node.rdma_latency.max=5 us", "egress.download=100 Mb/s"])
    assert _only(profile, "inter_node", "rdma_latency") == parse_quantity("5 us")
    assert _only(profile, "egress", "download") == parse_quantity("100 Mb/s")


def test_expect_changes_a_parameter_and_the_pairing() -> None:
    profile = load_profile("hdr200", ["inter_node.tcp_throughput.streams=16", "inter_node.pairs=ring"])
    (tcp,) = profile.expectations("inter_node", "tcp_throughput")
    assert tcp.params["streams"] == 16
    assert profile.document.inter_node.pairs == "ring"


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("mtu", "--expect 'mtu': write KEY=VALUE"),
        ("=5", "--expect '=5': write KEY=VALUE"),
        ("inter_nod.mtu=9000", "--expect 'inter_nod.mtu=9000': the key starts with a layer"),
        ("inter_node=9000", "the key starts with a layer"),
        ("inter_node.mtuu=9000", "inter_node has no check 'mtuu' (did you mean 'mtu'?)"),
        ("inter_node.tcp_throughput.min=[1", "--expect 'inter_node.tcp_throughput.min=[1': '[1' is not a value"),
    ],
)
def test_expect_bad_key(override: str, expected: str) -> None:
    assert expected in _error("hdr200", [override])


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("inter_node.rdma_bandwidth.min=150Gb", "--expect: inter_node.rdma_bandwidth.min: '150Gb': unknown unit 'Gb'"),
        ("inter_node.rdma_bandwidth=150 furlongs", "--expect: inter_node.rdma_bandwidth.min: '150 furlongs': unknown unit"),
        ("inter_node.rdma_latency.max=5 Gb/s", "--expect: inter_node.rdma_latency.max: '5 Gb/s' is a bandwidth"),
        ("inter_node.tcp_throughput.duration=10 GB", "--expect: inter_node.tcp_throughput.duration: '10 GB' is a size"),
        ("inter_node.rdma_bandwidth.mn=1 Gb/s", "--expect: inter_node.rdma_bandwidth.mn: unknown key (did you mean 'min'?)"),
        ("inter_node.pairs=bogus", "--expect: inter_node.pairs: pairs: 'bogus' is not a strategy"),
    ],
)
def test_expect_bad_value(override: str, expected: str) -> None:
    message = _error("hdr200", [override])
    assert expected in message
    assert "hdr200.yaml" not in message  # the error is on the command line, not in the file


# --- errors in the file -----------------------------------------------------------------


def _file_error(tmp_path: Path, text: str) -> str:
    path = _write(tmp_path / "p.yaml", text)
    message = _error(path)
    assert message.startswith(str(path)), message
    return message.removeprefix(str(path))


def test_typo_suggests_the_key(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\ninter_node:\n  tcp_througput: {min: 10 Gb/s}\n")
    assert message == ":3: inter_node.tcp_througput: unknown key (did you mean 'tcp_throughput'?)"


def test_typo_in_a_section_name(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\ninter_nod:\n  mtu: 4096\n")
    assert message == ":2: inter_nod: unknown key (did you mean 'inter_node'?)"


def test_typo_inside_a_check(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\ninter_node:\n  rdma_bandwidth:\n    min: 1 Gb/s\n    sise: 8 MiB\n")
    assert message == ":5: inter_node.rdma_bandwidth.sise: unknown key (did you mean 'size'?)"


def test_typo_in_a_file_that_extends(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\nextends: hdr200\ninter_node:\n  rdma_bandwith: {min: 1 Gb/s}\n")
    assert message == ":4: inter_node.rdma_bandwith: unknown key (did you mean 'rdma_bandwidth'?)"


def test_bad_unit(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\ninter_node:\n  tcp_throughput:\n    min: 200 Gb\n")
    assert message.startswith(":4: inter_node.tcp_throughput.min: '200 Gb': unknown unit 'Gb'")
    assert "write 'Gb/s'" in message


def test_wrong_dimension(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\ninter_node:\n  rdma_latency: {max: 5 Gb/s}\n")
    assert message == (
        ":3: inter_node.rdma_latency.max: '5 Gb/s' is a bandwidth; expected a time such as '2 us', '100 ms' or '10 s'"
    )


def test_wrong_dimension_of_a_parameter(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\ninter_node:\n  rdma_bandwidth:\n    min: 90% line\n    size: 8 Gb/s\n")
    assert message.startswith(":5: inter_node.rdma_bandwidth.size: '8 Gb/s' is a bandwidth; expected a size")


def test_check_without_its_bound(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\ninter_node:\n  rdma_bandwidth: {size: 8 MiB}\n")
    assert message == ":3: inter_node.rdma_bandwidth: give min"


@pytest.mark.parametrize(("value", "shown"), [("true", "True"), ("[1, 2]", "[1, 2]")])
def test_check_that_is_not_a_mapping(tmp_path: Path, value: str, shown: str) -> None:
    message = _file_error(tmp_path, f"name: t\ninter_node:\n  mtu: {value}\n")
    assert message == f":3: inter_node.mtu: write a mapping (key: value), not {shown}"


def test_structured_check_written_as_a_scalar(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\nintra_node:\n  gpu_pcie: 4\n")
    assert message == ":3: intra_node.gpu_pcie: write a mapping (key: value), not 4"


def test_bad_pairs(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\ninter_node:\n  pairs: random:0\n")
    assert message == ":3: inter_node.pairs: pairs: random:K needs K >= 1"


def test_missing_name(tmp_path: Path) -> None:
    assert _file_error(tmp_path, "inter_node:\n  mtu: 4096\n") == ":1: name: required but missing"


def test_not_a_mapping(tmp_path: Path) -> None:
    assert "a profile is a mapping" in _file_error(tmp_path, "- a\n")


def test_invalid_yaml(tmp_path: Path) -> None:
    assert _file_error(tmp_path, "name: t\ninter_node: {mtu: [\n").startswith(":3: not valid YAML")


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    message = _file_error(tmp_path, "name: t\ninter_node:\n  mtu: 4096\n  mtu: 9000\n")
    assert message == ":4: not valid YAML: duplicate key 'mtu'"


# --- waiver and source --------------------------------------------------------------


def test_waiver_and_source_reach_the_expectation(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "p.yaml",
        """
        name: w
        inter_node:
          rdma_latency:
            max: 2 us
            p99: 4 us
            source: ClusterKit docs
            waiver: "switch firmware upgrade scheduled (TICKET-42)"
        """,
    )
    expectations = load_profile(str(path)).expectations("inter_node", "rdma_latency")
    assert [(e.key, e.op) for e in expectations] == [
        ("inter_node.rdma_latency.max", Op.MAX),
        ("inter_node.rdma_latency.p99", Op.MAX),
    ]
    for expectation in expectations:
        assert expectation.source == "ClusterKit docs"
        assert expectation.waiver == "switch firmware upgrade scheduled (TICKET-42)"
        assert isinstance(expectation.value, Quantity) and expectation.value.dimension is Dimension.TIME


def test_storage_measured_alone_or_together_and_a_bad_value_names_file_line_and_field(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.yaml", """
        name: shares
        storage:
          sequential_write: {min: 1 GB/s}
          sequential_read: {min: 200 MB/s, measured: together}
        """)
    storage = load_profile(str(good)).document.storage
    assert storage.sequential_write is not None and storage.sequential_write.measured == "alone"  # the default
    assert storage.sequential_read is not None and storage.sequential_read.measured == "together"
    bad = _write(tmp_path / "bad.yaml", """
        name: shares
        storage:
          sequential_write:
            min: 1 GB/s
            measured: sometimes
        """)
    assert f"{bad}:5: storage.sequential_write.measured: 'sometimes' is not how a figure is measured: write alone" in _error(bad)


def test_concurrency_is_for_measured_alone_and_aggregate_write_is_always_together(tmp_path: Path) -> None:
    path = _write(tmp_path / "p.yaml", """
        name: shares
        storage:
          random_read_iops: {min: 1000, measured: together, concurrency: 4}
          aggregate_write: {min: 1 GB/s, measured: alone}
        """)
    message = _error(path)
    assert f"{path}:3: storage.random_read_iops: concurrency: 4 is how many nodes take turns measuring alone" in message
    assert f"{path}:4: storage.aggregate_write.measured: measured: alone: aggregate_write is every node" in message


def test_together_storage_checks_run_time_based_for_a_runtime_and_alone_ones_do_not(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.yaml", """
        name: windows
        storage:
          sequential_read: {min: 1 GB/s, measured: together}
          sequential_write: {min: 1 GB/s, measured: together, runtime: 30 s}
          checkpoint_write: {min: 1 GB/s, measured: together}
          random_read_iops: {min: 1000, measured: together, runtime: 15 s}
        """)
    storage = load_profile(str(good)).document.storage
    assert storage.sequential_read is not None and storage.sequential_read.runtime == parse_quantity("20 s")  # the default
    assert storage.sequential_write is not None and storage.sequential_write.runtime == parse_quantity("30 s")
    assert storage.checkpoint_write is not None and storage.checkpoint_write.runtime == parse_quantity("20 s")
    assert storage.random_read_iops is not None and storage.random_read_iops.runtime == parse_quantity("15 s")
    alone = _write(tmp_path / "alone.yaml", """
        name: windows
        storage:
          sequential_write: {min: 1 GB/s}
        """)
    plain = load_profile(str(alone)).document.storage.sequential_write
    assert plain is not None and plain.runtime is None  # size-based, as it always was
    bad = _write(tmp_path / "bad.yaml", """
        name: windows
        storage:
          sequential_write: {min: 1 GB/s, runtime: 30 s}
          sequential_read: {min: 1 GB/s, measured: together, runtime: 2.5 s}
          random_read_iops: {min: 1000, runtime: 0.5 s}
        """)
    message = _error(bad)
    assert f"{bad}:3: storage.sequential_write: runtime: 30 s is how long each node runs when every node measures at once" in message
    assert f"{bad}:4: storage.sequential_read.runtime: 2.5 s: fio's --runtime is given here in whole seconds" in message
    assert f"{bad}:5: storage.random_read_iops.runtime: 0.5 s: fio's --runtime is given here in whole seconds" in message


@pytest.mark.parametrize("value", ["0 B", "0", "1 s"])
def test_a_transfer_that_moves_nothing_is_refused_naming_file_line_and_field(tmp_path: Path, value: str) -> None:
    path = _write(tmp_path / "p.yaml", f"""
        name: bounded
        egress:
          download:
            min: 1 Gb/s
            bytes: {value}
        """)
    message = _error(path)
    assert message.startswith(f"{path}:5: egress.download.bytes: "), message
    good = _write(tmp_path / "good.yaml", "name: bounded\negress:\n  upload: {min: 1 Gb/s, bytes: 256 MiB}\n")
    upload = load_profile(str(good)).document.egress.upload
    assert upload is not None and upload.bytes is not None and int(upload.bytes.to("B")) == 256 * 2**20
