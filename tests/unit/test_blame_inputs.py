"""What each pair check hands the blame model (judge/blame_inputs.py), and what the run measures again for it."""

from __future__ import annotations

from pytest_fabric.checks.builtin import builtin_registry
from pytest_fabric.config.units import Quantity, parse_quantity
from pytest_fabric.judge.blame import Blame, Figure, LinkFault, blame
from pytest_fabric.judge.blame_inputs import figures_of, floors_of
from pytest_fabric.judge.verdict import Expectation, Measurement, Op
from pytest_fabric.measurements.attribution import _asks, short_pairs

#: how each built-in pair check declares its figures (Check.blame; importing the families registers
#: how one pair of each is measured, which _asks reads)
HOW = builtin_registry().blame_inputs()


def figures_by(check: str, nodes: tuple[str, str], measured: Measurement, floors: list[Quantity]) -> list[Figure]:
    return figures_of(check, nodes, measured, floors, HOW[check])


def test_the_pair_checks_declare_their_unit_direction_and_parts() -> None:
    assert list(HOW) == ["rdma_bandwidth", "gpudirect_bandwidth", "tcp_throughput", "nccl_allreduce"]
    assert [(h.unit, h.directed, h.parts, h.swept_unasked) for h in HOW.values()] == [
        ("Gb/s", True, "rails", True), ("Gb/s", True, "gpus", False), ("Gb/s", True, "", True), ("GB/s", False, "", False)]


def test_a_tcp_pair_is_one_directed_figure_in_gbps_with_its_floor() -> None:
    floors = floors_of([Expectation("inter_node", "tcp_throughput", Op.MIN, parse_quantity("0.5 Gb/s"), "k")])
    measured = Measurement(value=parse_quantity("6.2 Gb/s"))
    (figure,) = figures_by("tcp_throughput", ("n1", "n2"), measured, floors)
    assert figure == Figure("tcp_throughput", ("n1", "n2"), (6.2,), 0.5, "", True)


def test_rdma_is_a_figure_per_rail_every_run_kept_the_floor_of_each_rails_line() -> None:
    rails = [{"a": "mlx5_0", "b": "mlx5_0", "gbps": 196.0, "line_gbps": 200.0, "repeats": [196.0, 98.0, 196.0]},
             {"a": "mlx5_1", "b": "mlx5_1", "gbps": 90.0, "line_gbps": 100.0, "repeats": [90.0]}]
    measured = Measurement(value=parse_quantity("90 Gb/s"), extra={"rails": rails})
    figures = figures_by("rdma_bandwidth", ("n1", "n2"), measured, [parse_quantity("90% line")])
    assert [(f.series, f.repeats, f.floor) for f in figures] == [
        ("rdma_bandwidth mlx5_0", (196.0, 98.0, 196.0), 180.0), ("rdma_bandwidth mlx5_1", (90.0,), 90.0)]


def test_a_measurement_at_a_known_moment_labels_each_repeat_with_it_and_its_place() -> None:
    # the pairs of a round start together and repeat one after another: repeat j of each runs at once
    rails = [{"a": "mlx5_0", "b": "mlx5_0", "gbps": 196.0, "line_gbps": 200.0, "repeats": [196.0, 98.0, 196.0]}]
    measured = Measurement(value=parse_quantity("196 Gb/s"), extra={"rails": rails})
    (figure,) = figures_of("rdma_bandwidth", ("n1", "n2"), measured, [], HOW["rdma_bandwidth"], "rdma sweep round 3")
    assert figure.rounds == ("rdma sweep round 3 repeat 0", "rdma sweep round 3 repeat 1", "rdma sweep round 3 repeat 2")
    (tcp,) = figures_of("tcp_throughput", ("n1", "n2"), Measurement(value=parse_quantity("6.2 Gb/s")), [],
                        HOW["tcp_throughput"], "tcp retest round 7, sample 2")
    assert tcp.rounds == ("tcp retest round 7, sample 2 repeat 0",)
    # no moment given: not known, and the model reads every repeat as before
    assert figures_by("tcp_throughput", ("n1", "n2"), Measurement(value=parse_quantity("6.2 Gb/s")), [])[0].rounds == ()


def test_an_nccl_pair_has_no_direction_and_an_absent_measurement_no_figure() -> None:
    (figure,) = figures_by("nccl_allreduce", ("n2", "n1"), Measurement(value=parse_quantity("36 GB/s")), [])
    assert figure.repeats == (36.0,) and not figure.directed and figure.floor is None
    assert figures_by("tcp_throughput", ("n1", "n2"), Measurement.absent("no route"), []) == []


def test_a_node_only_nccl_finds_slow_is_a_node_fault_with_healthy_rails() -> None:
    nodes = ["n1", "n2", "n3", "n4"]
    pairs = [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:]]
    rail = [{"a": "mlx5_0", "b": "mlx5_0", "gbps": 196.0, "line_gbps": 200.0, "repeats": [196.0]}]
    figures = [f for a, b in pairs for f in figures_by("rdma_bandwidth", (a, b), Measurement(
        value=parse_quantity("196 Gb/s"), extra={"rails": rail}), [parse_quantity("90% line")])]
    figures += [f for a, b in pairs for f in figures_by("nccl_allreduce", (a, b), Measurement(
        value=parse_quantity(f"{36 if 'n2' in (a, b) else 85} GB/s")), [parse_quantity("60 GB/s")])]
    assert blame(nodes, figures).send_back == ("n2",)


def test_the_run_measures_what_the_model_asks_and_each_link_once() -> None:
    verdict = Blame({}, links=(LinkFault("tcp_throughput", ("a", "b"), "a link fault"),),
                    retests=(("rdma_bandwidth mlx5_0", "c", "d"), ("gpudirect_bandwidth GPU0", "e", "f")))
    # GPUDirect needs each node's topology: read where its rounds ran, never measured again here
    assert _asks(verdict, {}, 0) == {"rdma_bandwidth": [("c", "d")], "tcp_throughput": [("a", "b")]}
    taken = {("tcp_throughput", "a", "b"): 3, ("rdma_bandwidth", "c", "d"): 3}
    assert _asks(verdict, taken, 1) == {"rdma_bandwidth": [("c", "d")]}  # more repeats where still unsure
    assert _asks(verdict, {**taken, ("rdma_bandwidth", "c", "d"): 6}, 1) == {}


def test_only_the_pairs_the_sweep_measured_short_are_kept_apart_when_measured_again() -> None:
    # A four-node TCP sweep: node01->node04 under its floor, node02->node03 10% under the median
    # (it may have collided with it in their round), the rest on one level. Every pair the model
    # asks for was passed as short before, so no two pairs of a sweep round could be retested at once.
    healthy = {("node01", "node02"): 11.8, ("node03", "node04"): 11.6, ("node01", "node03"): 12.0,
               ("node02", "node04"): 11.9, ("node02", "node01"): 11.7}
    figures = [Figure("tcp_throughput", pair, (v,), 0.4) for pair, v in healthy.items()]
    figures += [Figure("tcp_throughput", ("node01", "node04"), (0.15,), 0.4),
                Figure("tcp_throughput", ("node02", "node03"), (9.9,), 0.4)]
    assert short_pairs(figures, 0.10) == {frozenset(("node01", "node04")), frozenset(("node02", "node03"))}
    # each series on its own: a rail's figures are not judged against another rail's
    rails = [Figure("rdma_bandwidth", ("node01", "node02"), (98.0, 97.0), None, "mlx5_0"),
             Figure("rdma_bandwidth", ("node03", "node04"), (97.5,), None, "mlx5_0"),
             Figure("rdma_bandwidth", ("node01", "node02"), (180.0,), None, "mlx5_1"),
             Figure("rdma_bandwidth", ("node03", "node04"), (181.0,), None, "mlx5_1")]
    assert short_pairs(rails, 0.10) == set()
