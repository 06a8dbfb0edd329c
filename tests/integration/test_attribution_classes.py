"""Attribution classes on the simulated cluster: each fault lands in its class, nothing else is blamed.

Stand-in RDMA (tests/simcluster/hardware.py) injects a receive-only node fault, a
bad cable, a spine collision (two cross-leaf flows that share the spine inside
one round, each fine alone) and a transient pair fault gone on re-measure.  One
node per pair sends (the perftest client) and the other receives, so a
receive-only fault shows only in the rounds where that node receives.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from simcluster import NodeBreaker, SimCluster, missing_prerequisites
from simcluster.hardware import FakeHardware, default_ports, hardware_installed

from pytest_fabric.run.pairs import make_pairs

# One rail per node keeps a 16-node sweep (120 pairs) short on two cores; the
# collision needs flows that overlap, so those nodes run perftest for its real -D.
PROFILE = """\
name: sim-attribution
extends: base
inter_node:
  link_layer: infiniband
  ports: 1
  rdma_bandwidth: {min: 90% line, size: 8 MiB, qps: 1, repeat: 1, duration: 2 s}
"""
# The four-node cases have no collision (nothing needs two runs to overlap): perftest -D 1, the least
# it takes, paid in each of their sweeps' three rounds and in each retest sample
FOUR_PROFILE = PROFILE.replace("duration: 2 s", "duration: 1 s")
SELECT = "rdma_bandwidth or attribution"
RAN = ("passed", "failed", "error", "skipped", "waived")


def one_port(**kwargs: object) -> FakeHardware:
    return FakeHardware(ports=default_ports()[:1], **kwargs)  # type: ignore[arg-type]


# --fabric-no-witness (both runners): the port and interface counters read before and after every run
# (a round trip to each end per run: 120 sweep runs and the outlier's samples in the 16-node case)
# corroborate a figure, which no test here judges (tests/integration/test_corroboration_run.py does);
# the model reads the same figures
def run(work: Path, inventory: Path, *args: str, timeout: int = 900, text: str = PROFILE) -> tuple[dict, str]:
    profile = work / "profile.yaml"
    profile.write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile),
         "--conformance-json", "record.json", "-q", "-rfEs", "--fabric-no-witness", *args],
        cwd=work, capture_output=True, text=True, timeout=timeout,
    )
    return json.loads((work / "record.json").read_text()), result.stdout + result.stderr


def checks(record: dict, check: str) -> dict[str, dict]:
    """The checks of that name that ran (not those the record lists as deselected)."""
    return {c["subject"]: c for c in record["checks"] if c["check"] == check and c["outcome"] in RAN}


def outcomes(record: dict, check: str) -> dict[str, str]:
    return {s: c["outcome"] for s, c in checks(record, check).items()}


def collision(names: list[str], avoid: set[str]) -> tuple[dict[str, str], list[str]]:
    """Leaves for four nodes such that exactly one round runs two cross-leaf pairs at once.

    Returns node -> leaf and the two pair ids that collide on the spine in that round.
    """
    pairs = make_pairs(names, "all")
    round_of = {frozenset((p.a, p.b)): p.round for p in pairs}
    for number in sorted({p.round for p in pairs}):
        members = [p for p in pairs if p.round == number and not avoid & {p.a, p.b}]
        for i, first in enumerate(members):
            for second in members[i + 1:]:
                # leaf A: first.a, second.a; leaf B: first.b, second.b.  The other two
                # cross pairs must not meet in one round, or they would collide too.
                if round_of[frozenset((first.a, second.b))] != round_of[frozenset((second.a, first.b))]:
                    leaves = {first.a: "leafA", second.a: "leafA", first.b: "leafB", second.b: "leafB"}
                    return leaves, [first.id, second.id]
    raise AssertionError("no round with two disjoint pairs to collide")


@pytest.fixture
def four(simcluster: SimCluster, tmp_path: Path) -> tuple[SimCluster, Path]:
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=simcluster.nodes[:4])
    return simcluster, inventory


def test_an_unreachable_node_is_unreachable_not_a_node_fault(
    four: tuple[SimCluster, Path], break_node: NodeBreaker, tmp_path: Path
) -> None:
    cluster, inventory = four
    with hardware_installed(cluster, {n.name: one_port() for n in cluster.nodes}), break_node.stopped("node04"):
        record, output = run(tmp_path, inventory, "-k", SELECT, "-p", "no:cacheprovider", text=FOUR_PROFILE)
    verdicts = checks(record, "attribution")
    assert verdicts["node04"]["outcome"] == "error", output[-3000:]
    assert "unreachable" in verdicts["node04"]["message"] and "not a node fault" in verdicts["node04"]["message"]
    assert {verdicts[n]["outcome"] for n in ("node01", "node02", "node03")} == {"passed"}
    # node04's pairs errored on node04 (unreachable): counted for no one, and node04 is listed apart
    assert not record["run"]["send_back"] and list(record["run"]["not_measured"]) == ["node04"]
    assert checks(record, "fabric_attribution")["cluster"]["outcome"] == "passed"


def test_without_the_tools_nothing_is_a_node_fault(four: tuple[SimCluster, Path], tmp_path: Path) -> None:
    # No stand-ins installed: ibstat is missing everywhere, no pair is measured.
    _, inventory = four
    record, output = run(tmp_path, inventory, "-k", SELECT, "-p", "no:cacheprovider", text=FOUR_PROFILE)
    verdicts = checks(record, "attribution")
    assert set(outcomes(record, "attribution").values()) == {"error"}, output[-3000:]
    assert all("node fault" not in c["message"] for c in verdicts.values())
    assert "nothing to attribute" in verdicts["node01"]["message"]


def test_every_pair_short_is_one_fabric_wide_finding(four: tuple[SimCluster, Path], tmp_path: Path) -> None:
    cluster, inventory = four
    hardware = {n.name: one_port(rdma_bw_fraction=0.3) for n in cluster.nodes}  # ~60 Gb/s against 180
    with hardware_installed(cluster, hardware):
        record, output = run(tmp_path, inventory, "-k", SELECT, "-p", "no:cacheprovider", text=FOUR_PROFILE)
    assert set(outcomes(record, "attribution").values()) == {"passed"}, output[-3000:]
    fabric = checks(record, "fabric_attribution")["cluster"]
    assert fabric["outcome"] == "failed"
    assert "fabric-wide shortfall" in fabric["message"] and "the median of the 6 figures" in fabric["message"]
    assert not record["run"]["send_back"]


def test_a_selection_that_leaves_out_pairs_skips_peer_relative_checks(
    four: tuple[SimCluster, Path], tmp_path: Path
) -> None:
    cluster, inventory = four
    with hardware_installed(cluster, {n.name: one_port() for n in cluster.nodes}):
        record, output = run(tmp_path, inventory, "-k", "node03 and (rdma_bandwidth or attribution)",
                             "-p", "no:cacheprovider", text=FOUR_PROFILE)
    outlier = checks(record, "rdma_bandwidth_outlier")
    assert set(outlier) == {s for s in outlier if "node03" in s} and len(outlier) == 3, output[-3000:]
    assert {c["outcome"] for c in outlier.values()} == {"skipped"}
    message = next(iter(outlier.values()))["message"]
    assert "keeps 3 of them" in message and "does not measure the other 3 unasked" in message
    assert outcomes(record, "attribution") == {"node03": "skipped"}
    # only node03's three pairs were measured: the others' rdma_bandwidth never ran
    assert set(outcomes(record, "rdma_bandwidth")) == set(outlier)


def test_last_failed_re_measures_in_the_whole_round_as_the_first_run(
    simcluster: SimCluster, tmp_path: Path
) -> None:
    """A collision that fails inside its round must still fail under --lf, where its round would
    otherwise hold only the failing pairs still selected (here one: the other is deselected), and
    the message says it failed only under load."""
    nodes = simcluster.nodes[:6]
    names = [n.name for n in nodes]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes)
    leaves, collided = collision(names, set())
    hardware = {n: one_port() for n in names}
    for node, leaf in leaves.items():
        hardware[node] = one_port(leaf=leaf, perftest_real_time=True)
    with hardware_installed(simcluster, hardware, spine_gbps=250):
        first, output = run(tmp_path, inventory, "-k", "test_rdma_bandwidth and not outlier and not aggregate")
        assert {s for s, o in outcomes(first, "rdma_bandwidth").items() if o == "failed"} == set(collided), output[-3000:]
        kept, dropped = collided
        again, output = run(tmp_path, inventory, "--lf", "-k", "test_rdma_bandwidth and not outlier and not aggregate",
                            "--deselect", checks(first, "rdma_bandwidth")[dropped]["nodeid"])
    bandwidth = checks(again, "rdma_bandwidth")
    assert set(bandwidth) == {kept}, output[-3000:]
    for pair in (kept,):
        assert bandwidth[pair]["outcome"] == "failed"
        assert "--lf: measured inside its whole round (3 pairs at once, as in the first run)" in bandwidth[pair]["message"]
        assert "good alone: it fails under load" in bandwidth[pair]["message"]


# TCP over the simulated links (real iperf3): one process a pair, so a wrapped iperf3 sees each run.
# iperf3 -t 1: a slow link is shaped (150 Mbit/s against a 0.4 Gb/s floor, healthy pairs several
# Gb/s), so one second tells it; every second is paid in the sweep and in each retest sample of a
# series measured whole again (a 6-node series: 15 pairs x 3 samples a step)
TCP_PROFILE = """\
name: sim-retests
inter_node:
  pairs: all
  tcp_throughput: {min: 0.4 Gb/s, streams: 1, processes: 1, duration: 1 s}
  attribution: {retest: true}
"""
TCP_SELECT = "test_tcp_throughput or attribution"


def run_tcp(work: Path, inventory: Path, *args: str) -> tuple[dict, str]:
    profile = work / "tcp.yaml"
    profile.write_text(TCP_PROFILE)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile),
         "--conformance-json", "record.json", "-q", "-rfEs", "-p", "no:cacheprovider", "--fabric-no-witness", "-k", TCP_SELECT,
         *args],
        cwd=work, capture_output=True, text=True, timeout=600,
    )
    return json.loads((work / "record.json").read_text()), result.stdout + result.stderr


def test_a_noisy_link_whose_repeats_straddle_the_floor_is_never_a_node_fault(
    simcluster: SimCluster, break_node: NodeBreaker, tmp_path: Path
) -> None:
    """Issue 19's hdr200 case on the simulated cluster: a link whose runs land on both sides of
    the floor is never a node's fault. The sweep's run of node01->node0X is slow (150 Mbit/s
    against a 400 Mbit/s floor); re-measured alone its three runs give 150, 1500 and 1500 Mbit/s.
    Judged against its peers (several Gb/s here) rather than the floor alone, every run of it may
    be short: a link fault or healthy is the model's call (judge/blame.py), never a node sent back."""
    nodes = simcluster.nodes[:4]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes)
    sender, receiver = next((p.a, p.b) for p in make_pairs([n.name for n in nodes], "all"))
    with break_node.noisy(sender, receiver, [150, 150, 1500, 1500]):
        record, output = run_tcp(tmp_path, inventory)
        runs = break_node.noisy_runs(sender)
    # the sweep's run and three retest samples a step, at most two steps (measurements/attribution.py's
    # RETEST_STEPS: a series of 8 nodes or fewer still in doubt after the first is measured whole again)
    assert runs in (4, 7), output[-3000:]
    pair = f"{sender}<->{receiver}"
    assert outcomes(record, "tcp_throughput")[pair] == "failed", output[-3000:]
    verdicts = checks(record, "attribution")
    for end in (sender, receiver):
        found = verdicts[end]["extra"]["attribution"]
        assert found["verdict"] not in ("node fault", "unstable"), verdicts[end]["message"]
        retests = [t for t in found["retests"] if t.startswith(f"{sender}->{receiver}")]
        assert len(retests) == (runs - 1) // 3, found["retests"]
        assert all("measured alone: " in r and r.count("Gb/s") == 3 for r in retests), retests
    assert not record["run"]["send_back"], output[-3000:]


def test_retests_of_disjoint_pairs_run_together_and_no_node_is_in_two_at_once(
    simcluster: SimCluster, break_node: NodeBreaker, tmp_path: Path
) -> None:
    """Two slow cables of six nodes, in different sweep rounds: each link is re-measured alone before
    it is reported, and the two retests, sharing no node, run together (one at a time before issue 21)."""
    from simcluster.breaker import read_iperf3_runs

    from pytest_fabric.checks import tcp as declared

    nodes = simcluster.nodes[:6]
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes)
    by_address = {n.address: n.name for n in nodes}
    pairs = make_pairs([n.name for n in nodes], "all")
    first = pairs[0]
    second = next(p for p in pairs if p.round != first.round and not {p.a, p.b} & {first.a, first.b})
    slow = [(first.a, first.b, 150), (second.a, second.b, 150)]
    with break_node.iperf3_runs(nodes, slow_links=slow):
        record, output = run_tcp(tmp_path, inventory)
        runs = [r for n in nodes for r in read_iperf3_runs(n)]
    verdicts = {n: c["extra"]["attribution"]["verdict"] for n, c in checks(record, "attribution").items()}
    ends = {first.a, first.b, second.a, second.b}
    assert {n for n, v in verdicts.items() if v == "link fault"} == ends, output[-3000:]
    assert not record["run"]["send_back"]
    assert sorted(tuple(lf["nodes"]) for lf in record["run"]["blame"]["links"]) == sorted(
        [(first.a, first.b), (second.a, second.b)])
    retest_port = declared.TCP_THROUGHPUT_PORTS.port(100)
    retests = [r for r in runs if r.port == retest_port]
    assert len(retests) >= 2 * 3, (len(retests), output[-2000:])  # two links, three samples each
    overlapping = [(x, y) for i, x in enumerate(retests) for y in retests[i + 1:] if x.start < y.end and y.start < x.end]
    assert overlapping, "every retest ran alone, one after another"
    for x, y in overlapping:
        assert not {x.node, by_address[x.target or ""]} & {y.node, by_address[y.target or ""]}, (x, y)


# The 16-node tests come last: their run (_sixteen_started) goes on beside the tests above.
def _sixteen_run(work: Path) -> dict:
    """16 nodes of their own: node01 receives at half rate, the node05-node06 cable is slow,
    two pairs collide on the spine in one round, and one pair is slow on its first run only."""
    with SimCluster(16, work / "cluster", name="sim16") as cluster:
        names = [n.name for n in cluster.nodes]
        pairs = make_pairs(names, "all")
        faulty = {"node01", "node05", "node06"}
        leaves, collided = collision(names, faulty)
        transient = next(p for p in pairs if not (faulty | set(leaves)) & {p.a, p.b})
        hardware = {n: one_port() for n in names}
        hardware["node01"] = one_port(rx_fraction=0.5)
        hardware["node05"] = one_port(slow_peers={"node06": 0.5})
        hardware[transient.a] = one_port(transient_slow_peers={transient.b: 0.5})
        for node, leaf in leaves.items():
            hardware[node] = one_port(leaf=leaf, perftest_real_time=True)
        inventory = cluster.write_inventory(work / "inventory.yaml")
        with hardware_installed(cluster, hardware, spine_gbps=250):
            record, output = run(work, inventory, "-k", SELECT, "-p", "no:cacheprovider")
    record["_output"] = output
    record["_collided"] = collided
    record["_transient"] = transient.id
    record["_receivers"] = [p.id for p in pairs if p.b == "node01"]
    return record


@pytest.fixture(scope="module", autouse=True)
def _sixteen_started(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[dict] | None]:
    """The 16-node run, started when this file's first test starts and run beside the others: it
    builds a cluster of its own (node names aside, it shares nothing with the session's 8 nodes,
    its spine folder included) and mostly waits on its stand-ins' -D seconds and its nodes' answers.
    Its tests come last in this file, so the 4- and 6-node runs on the session cluster overlap it
    (one after the other before). None where no selected test reads it, or where it cannot run."""
    here = request.node.path
    if missing_prerequisites() or not any(
        item.path == here and "sixteen" in getattr(item, "fixturenames", ()) for item in request.session.items
    ):
        yield None
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(_sixteen_run, tmp_path_factory.mktemp("attribution16"))


@pytest.fixture(scope="module")
def sixteen(_sixteen_started: Future[dict] | None) -> dict:
    missing = missing_prerequisites()
    if missing:
        pytest.skip("simulated cluster unavailable: " + "; ".join(missing))
    assert _sixteen_started is not None
    return _sixteen_started.result()


def test_sixteen_nodes_each_fault_lands_in_its_class(sixteen: dict) -> None:
    verdicts = checks(sixteen, "attribution")
    assert len(verdicts) == 16, sixteen["_output"][-3000:]
    blamed = {s: c["outcome"] for s, c in verdicts.items() if c["outcome"] != "passed"}
    assert blamed == {"node01": "failed", "node05": "failed", "node06": "failed"}, sixteen["_output"][-3000:]
    node01 = verdicts["node01"]["message"]
    assert "node fault when it receives" in node01 and "Send node01 to the provider" in node01
    assert "link fault" in verdicts["node05"]["message"] and "node05 and node06" in verdicts["node05"]["message"]


def test_the_receive_only_fault_shows_only_where_node01_receives(sixteen: dict) -> None:
    # node01 is the circle method's fixed node: it receives in alternate rounds.
    bandwidth = outcomes(sixteen, "rdma_bandwidth")
    failed_with_node01 = {s for s, o in bandwidth.items() if o == "failed" and "node01" in s}
    assert sixteen["_receivers"] and failed_with_node01 == set(sixteen["_receivers"])


def test_the_spine_collision_fails_under_load_and_blames_no_node(sixteen: dict) -> None:
    fabric = checks(sixteen, "fabric_attribution")["cluster"]
    assert fabric["outcome"] == "failed"
    assert "fails under load" in fabric["message"]
    assert sorted(fabric["extra"]["fabric_attribution"]["under_load"]) == sorted(sixteen["_collided"])
    bandwidth = outcomes(sixteen, "rdma_bandwidth")
    assert {bandwidth[p] for p in sixteen["_collided"]} == {"failed"}  # in their round they did fall short
    outlier = checks(sixteen, "rdma_bandwidth_outlier")
    for pair in sixteen["_collided"]:  # alone they are as fast as their peers
        assert outlier[pair]["outcome"] == "passed" and "rests on 4 samples" in outlier[pair]["message"]


def test_the_transient_fault_is_not_reproduced_and_counts_for_no_one(sixteen: dict) -> None:
    pair = sixteen["_transient"]
    assert outcomes(sixteen, "rdma_bandwidth")[pair] == "failed"
    assert outcomes(sixteen, "rdma_bandwidth_outlier")[pair] == "passed"
    fabric = checks(sixteen, "fabric_attribution")["cluster"]
    assert fabric["extra"]["fabric_attribution"]["not_reproduced"] == [pair]
    a, b = pair.split("<->")
    assert outcomes(sixteen, "attribution")[a] == outcomes(sixteen, "attribution")[b] == "passed"
