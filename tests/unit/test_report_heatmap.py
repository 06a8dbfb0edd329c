"""Node x node heatmaps: one cell per pair up to 64 nodes, leaf x leaf beyond; failing cells marked."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET

import pytest

from pytest_fabric.report.heatmap import matrix_heatmaps, pair_grid, pair_heatmaps, render_svg
from pytest_fabric.report.testing import make_check, sample_cluster, sample_run_info

SVG = "{http://www.w3.org/2000/svg}"


def _cells(svg: str) -> list[ET.Element]:
    root = ET.fromstring(svg)  # well-formed XML, so browsers and XML tools both read it
    return [g for g in root.iter(f"{SVG}g") if "fabric-cell" in g.get("class", "").split()]


def test_four_nodes_one_cell_per_pair_both_sides() -> None:
    info, checks = sample_cluster(4)
    maps = {check: (grid, svg) for check, grid, svg in pair_heatmaps(checks, info.nodes, info.node_labels)}
    grid, svg = maps["tcp_throughput"]
    assert grid.rows == ["node01", "node02", "node03", "node04"] and not grid.note
    cells = _cells(svg)
    assert len(cells) == 12  # 6 pairs, drawn on both sides of the diagonal
    failed = [c for c in cells if "fabric-cell-failed" in c.get("class", "")]
    errors = [c for c in cells if "fabric-cell-error" in c.get("class", "")]
    assert len(failed) == 4 and len(errors) == 6
    titles = [c.find(f"{SVG}title").text for c in failed]
    assert "node01 <-> node03: 120.5 Gb/s (expected >= 180 Gb/s) FAILED" in titles
    assert 'fill="url(#fabric-tcp_throughput-hatch)"' in svg  # failing cells hatched, not only coloured


def test_latency_map_knows_lower_is_better() -> None:
    info, checks = sample_cluster(3, down=None)
    grid = next(g for check, g, _ in pair_heatmaps(checks, info.nodes) if check == "rdma_latency")
    assert not grid.higher_is_better and grid.unit == "us"


def test_sixty_four_nodes_stay_per_node_and_legible() -> None:
    info, checks = sample_cluster(64, slow="node10", down="node64")
    _, grid, svg = next(m for m in pair_heatmaps(checks, info.nodes, info.node_labels) if m[0] == "tcp_throughput")
    assert len(grid.rows) == 64 and not grid.note
    assert len(_cells(svg)) == 64 * 63
    root = ET.fromstring(svg)
    assert int(root.get("width")) < 1200  # fits a laptop screen without zooming out
    sizes = {float(t.get("font-size")) for t in root.iter(f"{SVG}text") if t.text in info.nodes}
    assert min(sizes) >= 8


def test_five_hundred_twelve_nodes_aggregate_by_leaf() -> None:
    nodes = [f"n{i:03d}" for i in range(512)]
    info = sample_run_info(nodes, leaves=16)
    checks = [
        make_check("tcp_throughput", f"{a}<->{b}", "failed" if "n100" in (a, b) else "passed",
                   value=50.0 if "n100" in (a, b) else 190.0 + (i % 7), unit="Gb/s", expected=180, nodes=[a, b])
        for i, (a, b) in enumerate((nodes[i], nodes[(i + k) % 512]) for i in range(512) for k in (1, 33, 97))
    ]
    _, grid, svg = pair_heatmaps(checks, info.nodes, info.node_labels)[0]
    assert grid.rows == [f"leaf{i}" for i in range(1, 17)]
    assert "512 nodes" in grid.note and "leaf" in grid.note and "median" in grid.note
    cells = _cells(svg)
    failed = {c.find(f"{SVG}title").text for c in cells if "fabric-cell-failed" in c.get("class", "")}
    assert failed and all("failed" in t for t in failed)
    assert any("n100" in t for t in failed)  # the tooltip names the worst pair
    worst = {c.find(f"{SVG}title").text for c in cells if "fabric-cell-worst" in c.get("class", "")}
    assert len(worst) == 1  # one leaf pair (drawn on both sides of the diagonal)


def test_many_nodes_without_leaf_labels_aggregate_in_blocks() -> None:
    nodes = [f"n{i:03d}" for i in range(130)]
    checks = [make_check("tcp_throughput", f"{a}<->{b}", "passed", value=190.0, unit="Gb/s", expected=180, nodes=[a, b])
              for a, b in itertools.pairwise(nodes)]
    grid = pair_grid(checks, nodes, {})
    assert len(grid.rows) <= 64 and "block of 3 consecutive nodes" in grid.note


def test_hostnames_and_values_are_escaped() -> None:
    evil = '<script>alert("x")</script>'
    checks = [make_check("tcp_throughput", f"{evil}<->b&c", "failed", value=1.0, unit="<b>", expected=2.0,
                         nodes=[evil, "b&c"])]
    _, _, svg = pair_heatmaps(checks)[0]
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "b&amp;c" in svg
    ET.fromstring(svg)


def test_nvlink_matrix_marks_pairs_below_the_floor() -> None:
    values = [[None, 240.0, 100.0], [240.0, None, 240.0], [100.0, 240.0, None]]
    check = make_check("nvlink_bandwidth", "node01", "failed", value=100.0, unit="GB/s", expected=230,
                       nodes=["node01"], extra={"matrix": {"gpus": ["0", "1", "2"], "values": values}})
    [(_, _, svg)] = matrix_heatmaps([check])
    failed = [c for c in _cells(svg) if "fabric-cell-failed" in c.get("class", "")]
    assert len(failed) == 2
    assert "GPU 0 -> GPU 2: 100 GB/s" in failed[0].find(f"{SVG}title").text


@pytest.mark.parametrize("prefix", ["a b", "x/y:z"])
def test_pattern_ids_are_valid(prefix: str) -> None:
    info, checks = sample_cluster(3, down=None)
    grid = pair_grid([c for c in checks if c["check"] == "tcp_throughput"], info.nodes)
    svg = render_svg(grid, title="t", id_prefix=prefix)
    assert re.search(r'id="[A-Za-z0-9_-]+-hatch"', svg)


def test_sparse_64_node_maps_stay_small_and_unmeasured_checks_get_none() -> None:
    from pytest_fabric.report.heatmap import pair_heatmaps
    from pytest_fabric.report.testing import make_check

    nodes = [f"n{i:02d}" for i in range(1, 65)]
    ring = [(nodes[i], nodes[(i + 1) % 64]) for i in range(64)]  # 64 of 2,016 pairs, as random pairing leaves it
    measured = [make_check("tcp_throughput", f"{a}<->{b}", "passed", value=190.0, unit="Gb/s", expected=180, nodes=[a, b])
                for a, b in ring]
    unmeasured = [make_check("rdma_bandwidth", f"{a}<->{b}", "error", nodes=[a, b], message="ibstat: command not found")
                  for a, b in ring]
    maps = pair_heatmaps(measured + unmeasured, nodes)
    assert [check for check, _, _ in maps] == ["tcp_throughput"]
    assert len(maps[0][2]) < 100_000  # a rect per empty cell made it ~330 KB
