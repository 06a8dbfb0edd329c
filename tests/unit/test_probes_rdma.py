"""RDMA pair probes against canned ibstat / perftest output (MockTransport): which port meets
which, how perftest is run (duration, NUMA binding, RoCE class), and what latency is judged on."""

from __future__ import annotations

import dataclasses
import re
import threading
from decimal import Decimal
from pathlib import Path

import pytest

from pytest_fabric.checks.builtin import load_profile
from pytest_fabric.config.inventory import Node
from pytest_fabric.judge.verdict import judge
from pytest_fabric.probes import rdma
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool
from pytest_fabric.transport.results import CommandResult

DATA = Path(__file__).resolve().parents[1] / "data" / "perftest"
BW = (DATA / "ib_write_bw-D5-report_gbits-8M-q4-hdr-constructed.txt").read_text()
LAT = (DATA / "ib_write_lat-n10000-hdr-constructed.txt").read_text()

PORT = """CA '{device}'
\tCA type: MT4123
\tNumber of ports: 1
\tFirmware version: 20.31.1014
\tHardware version: 0
\tNode GUID: 0x0c42a10300aaaa0{index}
\tSystem image GUID: 0x0c42a10300aaaa0{index}
\tPort 1:
\t\tState: {state}
\t\tPhysical state: {phys}
\t\tRate: 200
\t\tBase lid: 1{index}
\t\tLMC: 0
\t\tSM lid: 1
\t\tCapability mask: 0x2651e848
\t\tPort GUID: 0x0c42a10300aaaa0{index}
\t\tLink layer: InfiniBand
"""


def ibstat(*devices: str, down: tuple[str, ...] = ()) -> str:
    return "\n".join(
        PORT.format(
            device=d, index=i, state="Down" if d in down else "Active", phys="Polling" if d in down else "LinkUp"
        )
        for i, d in enumerate(devices)
    )


def bw_output(gbps: float) -> str:
    return BW.replace("196.21", f"{gbps:.2f}")


def lat_output(typical: float, p99: float | None) -> str:
    text = LAT.replace("1.58  ", f"{typical:.2f}  ", 1)
    if p99 is None:  # an older perftest: no percentile columns
        text = text.replace("   99% percentile[usec]   99.9% percentile[usec] ", "")
        text = re.sub(r"(0\.09)\s+1\.87\s+4\.11", r"\1", text)
        return text
    return text.replace("1.87", f"{p99:.2f}")


class SuccessiveRuns(MockTransport):
    """A node whose perftest clients print ``runs`` one after another (repeats that differ)."""

    def __init__(self, node: str, answers: dict[str, str | CannedCommand], runs: list[str]) -> None:
        super().__init__(node, answers)
        self.runs = list(runs)

    def _answer(self, command: str) -> CannedCommand:
        if self.runs and re.search(r"ib_write_\w+ .* 10\.0\.0\.\d$", command):
            self.calls.append(command)
            return CannedCommand(stdout=self.runs.pop(0))
        return super()._answer(command)


def node(
    name: str,
    address: str,
    ports: str,
    *,
    numa: str = "-1 numactl",
    clients: dict[str, str] | None = None,
    rdma_ports: tuple[str, ...] = (),
    runs: list[str] | None = None,
) -> NodeHandle:
    """A node whose ib_write_bw/lat client prints ``clients[device]`` (default: a healthy rail)."""
    answers: dict[str, str | CannedCommand] = {
        r"^ibstat$": ports,
        r"^ibv_devinfo$": CannedCommand(exit_code=1),
        r"^n=\$\(cat /sys/class/infiniband/": numa,
        r"^ss -Hltn": "LISTEN 0 128 0.0.0.0:18515 0.0.0.0:*\n",
    }
    for device, text in (clients or {}).items():
        answers[rf"ib_write_(bw|lat) -d {device} .* 10\.0\.0\.\d$"] = text
    answers[r"ib_write_bw .* 10\.0\.0\.\d$"] = bw_output(196.21)
    answers[r"ib_write_lat .* 10\.0\.0\.\d$"] = LAT
    answers[r"ib_write_(bw|lat) "] = ""  # the server
    transport = SuccessiveRuns(name, answers, runs or [])
    spec = Node(name=name, host=address, rdma_ports=rdma_ports)
    return NodeHandle(spec, ConnectionPool(lambda _: transport))


def devices_used(handle: NodeHandle, *, server: bool) -> list[str]:
    """The devices perftest ran on, in device order (a pair's bandwidth rails start at once, in any order)."""
    commands = [p.command for p in handle.transport.started] if server else handle.transport.calls  # type: ignore[attr-defined]
    found = [m.group(1) for c in commands if (m := re.search(r"ib_write_\w+ -d (\S+)", c)) and (server or "10.0.0." in c)]
    return sorted(found)


FOUR = ("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3")


def test_a_down_port_fails_its_rail_by_name_and_the_others_pair_like_with_like() -> None:
    a = node("gpu01", "10.0.0.1", ibstat(*FOUR))
    b = node("gpu02", "10.0.0.2", ibstat(*FOUR, down=("mlx5_1",)))
    measured = rdma.pair_bandwidth(NodePair(a, b), rdma.RdmaSettings(repeat=1), link_layer="InfiniBand", expected=4)
    # rails pair by device name: mlx5_2 meets mlx5_2, never mlx5_3; mlx5_1 is not shifted onto another
    assert devices_used(a, server=False) == ["mlx5_0", "mlx5_2", "mlx5_3"]
    assert devices_used(b, server=True) == ["mlx5_0", "mlx5_2", "mlx5_3"]
    assert measured.missing is not None
    assert "rail mlx5_1/1: mlx5_1/1 on gpu02 is Down (Polling)" in measured.missing
    assert "mlx5_2/1 196.2 Gb/s" in measured.missing  # the rails that ran keep their numbers
    assert [r["a"] for r in measured.extra["rails"]] == ["mlx5_0/1", "mlx5_2/1", "mlx5_3/1"]
    assert not judge("gpu01<->gpu02", measured, load_profile("hdr200").expectations("inter_node", "rdma_bandwidth")[0]).passed


def test_rails_named_in_the_inventory_pair_by_their_place_in_the_list() -> None:
    # gpu02's HCAs enumerate differently (a storage HCA took mlx5_0): the inventory says which is which
    a = node("gpu01", "10.0.0.1", ibstat(*FOUR), rdma_ports=("mlx5_0/1", "mlx5_1/1"))
    b = node("gpu02", "10.0.0.2", ibstat("mlx5_0", "mlx5_1", "mlx5_2"), rdma_ports=("mlx5_1/1", "mlx5_2/1"))
    measured = rdma.pair_bandwidth(NodePair(a, b), rdma.RdmaSettings(repeat=1), link_layer="InfiniBand")
    assert measured.missing is None
    assert devices_used(a, server=False) == ["mlx5_0", "mlx5_1"]
    assert devices_used(b, server=True) == ["mlx5_1", "mlx5_2"]
    assert "mlx5_0/1->mlx5_1/1" in measured.detail


def test_a_port_only_one_side_has_is_another_fabric_until_the_common_ports_fall_short() -> None:
    storage = ibstat(*FOUR, "mlx5_4")
    a, b = node("gpu01", "10.0.0.1", storage), node("gpu02", "10.0.0.2", ibstat(*FOUR))
    measured = rdma.pair_bandwidth(NodePair(a, b), rdma.RdmaSettings(repeat=1), link_layer="InfiniBand", expected=4)
    assert measured.missing is None and devices_used(a, server=False) == list(FOUR)
    a, b = node("gpu01", "10.0.0.1", ibstat(*FOUR)), node("gpu02", "10.0.0.2", ibstat("mlx5_0", "mlx5_1", "mlx5_2"))
    measured = rdma.pair_bandwidth(NodePair(a, b), rdma.RdmaSettings(repeat=1), link_layer="InfiniBand", expected=4)
    assert measured.missing is not None and "rail mlx5_3/1: gpu02 has no port mlx5_3/1" in measured.missing


def test_bandwidth_runs_for_a_duration_with_a_timeout_to_match() -> None:
    a, b = node("gpu01", "10.0.0.1", ibstat("mlx5_0")), node("gpu02", "10.0.0.2", ibstat("mlx5_0"))
    measured = rdma.pair_bandwidth(NodePair(a, b), rdma.RdmaSettings(repeat=1, duration_s=7), link_layer="InfiniBand")
    client = next(c for c in a.transport.calls if c.startswith("ib_write_bw"))  # type: ignore[attr-defined]
    assert " -D 7 " in f"{client} " and " -n " not in client
    assert "for 7 s" in measured.detail
    assert rdma.RdmaSettings(duration_s=7).timeout_s < 120  # a slow rail ends with its number, well inside
    assert rdma.RdmaSettings(duration_s=300).timeout_s > 300  # a long run is never cut short


def test_each_side_runs_bound_to_its_hca_numa_node() -> None:
    a = node("gpu01", "10.0.0.1", ibstat("mlx5_0"), numa="1 numactl")
    b = node("gpu02", "10.0.0.2", ibstat("mlx5_0"), numa="0 numactl")
    measured = rdma.pair_bandwidth(NodePair(a, b), rdma.RdmaSettings(repeat=1), link_layer="InfiniBand")
    client = next(c for c in a.transport.calls if "ib_write_bw" in c)  # type: ignore[attr-defined]
    server = b.transport.started[0].command  # type: ignore[attr-defined]
    assert client.startswith("numactl --cpunodebind=1 --membind=1 ib_write_bw -d mlx5_0 ")
    assert server.startswith("numactl --cpunodebind=0 --membind=0 ib_write_bw -d mlx5_0 ")
    assert "NUMA: gpu01 mlx5_0 on node 1; gpu02 mlx5_0 on node 0" in measured.detail


@pytest.mark.parametrize(
    ("numa", "note"),
    [("-1 numactl", "gpu01 unbound: sysfs gives no NUMA node"), ("1 ", "gpu01 unbound: NUMA node 1, but numactl is missing")],
)
def test_no_numa_node_or_no_numactl_runs_unbound_and_says_so(numa: str, note: str) -> None:
    a = node("gpu01", "10.0.0.1", ibstat("mlx5_0"), numa=numa)
    b = node("gpu02", "10.0.0.2", ibstat("mlx5_0"), numa=numa)
    measured = rdma.pair_bandwidth(NodePair(a, b), rdma.RdmaSettings(repeat=1), link_layer="InfiniBand")
    assert all("numactl" not in c for c in a.transport.calls if "ib_write_bw" in c)  # type: ignore[attr-defined]
    assert note in measured.detail


def test_roce_tests_run_in_the_lossless_class_the_profile_requires(tmp_path: Path) -> None:
    roce = load_profile("roce-small").document.inter_node.roce
    assert roce is not None and roce.perftest_args() == ("--tclass=106",)  # DSCP 26 + ECT -> priority 3
    profile = tmp_path / "pcp.yaml"
    profile.write_text("name: pcp\ninter_node:\n  roce: {pfc_priorities: [4], trust: pcp}\n")
    pcp = load_profile(str(profile)).document.inter_node.roce
    assert pcp is not None and pcp.perftest_args() == ("--sl=4",)
    a, b = node("gpu01", "10.0.0.1", ibstat("mlx5_0")), node("gpu02", "10.0.0.2", ibstat("mlx5_0"))
    rdma.pair_bandwidth(NodePair(a, b), rdma.RdmaSettings(repeat=1, traffic=roce.perftest_args()), link_layer=None)
    client = next(c for c in a.transport.calls if "ib_write_bw" in c)  # type: ignore[attr-defined]
    assert "--tclass=106" in client and "--tclass=106" in b.transport.started[0].command  # type: ignore[attr-defined]


def test_a_traffic_class_outside_the_pfc_priorities_is_a_profile_error(tmp_path: Path) -> None:
    from pytest_fabric.config.yamlsource import SourceError

    profile = tmp_path / "bad.yaml"
    profile.write_text("name: bad\ninter_node:\n  roce: {pfc_priorities: [3], trust: dscp, traffic_class: 0}\n")
    with pytest.raises(SourceError, match="traffic_class: 0 is DSCP 0, priority 0"):
        load_profile(str(profile))


class MeetingClients(MockTransport):
    """A node whose ib_write_bw clients each end only once ``count`` of them run at the same time.

    Rails measured one after another never meet: the first client's wait runs out, and it fails.
    """

    def __init__(self, node: str, answers: dict[str, str | CannedCommand], count: int) -> None:
        super().__init__(node, answers)
        self.meeting = threading.Barrier(count, timeout=5)
        self.ports: list[str] = []

    def _answer(self, command: str) -> CannedCommand:
        if re.search(r"ib_write_bw .* 10\.0\.0\.\d$", command):
            self.calls.append(command)
            self.ports.append(re.search(r" -p (\d+) ", command).group(1))  # type: ignore[union-attr]
            try:
                self.meeting.wait()
            except threading.BrokenBarrierError:
                return CannedCommand(exit_code=1, stderr="the other rails never ran at the same time")
            return CannedCommand(stdout=bw_output(196.21))
        return super()._answer(command)


def meeting_node(name: str, address: str, ports: str, count: int) -> NodeHandle:
    answers: dict[str, str | CannedCommand] = {
        r"^ibstat$": ports,
        r"^ibv_devinfo$": CannedCommand(exit_code=1),
        r"^n=\$\(cat /sys/class/infiniband/": "-1 numactl",
        r"^ss -Hltn": "LISTEN 0 128 0.0.0.0:18515 0.0.0.0:*\n",
        r"ib_write_(bw|lat) ": "",  # the server
    }
    transport = MeetingClients(name, answers, count)
    return NodeHandle(Node(name=name, host=address), ConnectionPool(lambda _: transport))


def test_a_pairs_bandwidth_rails_run_at_once_each_on_its_own_port_and_judged_on_its_own() -> None:
    a = meeting_node("gpu01", "10.0.0.1", ibstat(*FOUR), count=4)
    b = node("gpu02", "10.0.0.2", ibstat(*FOUR))
    settings = rdma.RdmaSettings(repeat=2, port=18515, ports=(18515, 18516, 18517, 18518))
    measured = rdma.pair_bandwidth(NodePair(a, b), settings, link_layer="InfiniBand", expected=4)
    assert measured.missing is None, measured.missing
    # both repeats of all four rails met: eight clients, two per port, every rail on a port of its own
    assert sorted(a.transport.ports) == ["18515", "18515", "18516", "18516", "18517", "18517", "18518", "18518"]  # type: ignore[attr-defined]
    assert [r["a"] for r in measured.extra["rails"]] == [f"{d}/1" for d in FOUR]
    assert measured.extra["rails_at_once"] == 4 and "4 rails at once, median of 2" in measured.detail
    assert "worst rail" in measured.detail and "rails: mlx5_0/1 196.2 Gb/s" in measured.detail


def test_rails_beyond_the_ports_there_are_run_in_groups() -> None:
    a = meeting_node("gpu01", "10.0.0.1", ibstat(*FOUR), count=2)
    b = node("gpu02", "10.0.0.2", ibstat(*FOUR))
    settings = rdma.RdmaSettings(repeat=1, ports=(18515, 18516))
    measured = rdma.pair_bandwidth(NodePair(a, b), settings, link_layer="InfiniBand", expected=4)
    assert measured.missing is None and len(measured.extra["rails"]) == 4  # type: ignore[arg-type]
    assert sorted(a.transport.ports) == ["18515", "18515", "18516", "18516"]  # type: ignore[attr-defined]


def test_gpus_behind_one_nic_take_turns_and_the_others_run_at_once() -> None:
    from pytest_fabric.probes.affinity import GpuRail
    from pytest_fabric.probes.gpudirect import pair_gpudirect

    def port(node_name: str, device: str) -> rdma.RdmaPort:
        return rdma.RdmaPort(node_name, device, 1, "Active", "LinkUp", Decimal(200), "InfiniBand")

    # GPU0 and GPU1 share mlx5_0; GPU2 has mlx5_1: two at once (GPU0 with GPU2), then GPU1
    rails = [GpuRail("GPU0", ("mlx5_0",), "PIX"), GpuRail("GPU1", ("mlx5_0",), "PIX"), GpuRail("GPU2", ("mlx5_1",), "PIX")]
    lanes = [rdma.Lane(r.gpu, port("n1", r.nics[0]), port("n2", r.nics[0])) for r in rails]
    assert rdma.lane_groups(lanes, 8) == [[0, 2], [1]]
    a = meeting_node("gpu01", "10.0.0.1", ibstat("mlx5_0", "mlx5_1"), count=2)
    b = node("gpu02", "10.0.0.2", ibstat("mlx5_0", "mlx5_1"))
    settings = rdma.RdmaSettings(repeat=1, ports=(19315, 19316))
    two = [r for r in rails if r.gpu != "GPU1"]  # the two that run at once must meet
    measured = pair_gpudirect(NodePair(a, b), settings, rails_a=two, rails_b=two,
                              ports_a=[port("gpu01", "mlx5_0"), port("gpu01", "mlx5_1")],
                              ports_b=[port("gpu02", "mlx5_0"), port("gpu02", "mlx5_1")])
    assert measured.missing is None and measured.extra["gpus_at_once"] == 2
    assert "2 GPUs at once" in measured.detail
    assert sorted(c.split("--use_cuda=")[1].split()[0] for c in a.transport.calls if "--use_cuda" in c) == ["0", "2"]  # type: ignore[attr-defined]


LAT_SETTINGS = rdma.RdmaSettings(tool="ib_write_lat", size_bytes=2, repeat=1, iterations=10_000)


def test_latency_runs_every_rail_and_judges_p99_on_the_p99_column() -> None:
    # typical latency is fine on every rail; mlx5_2's tail is not
    a = node("gpu01", "10.0.0.1", ibstat(*FOUR), clients={"mlx5_2": lat_output(1.60, 9.40)})
    b = node("gpu02", "10.0.0.2", ibstat(*FOUR))
    measured = rdma.pair_latency(NodePair(a, b), LAT_SETTINGS, link_layer="InfiniBand", need_p99=True)
    assert devices_used(a, server=False) == list(FOUR)
    assert all(" -n 10000" in c for c in a.transport.calls if "ib_write_lat" in c)  # type: ignore[attr-defined]
    assert str(measured.bounds["p99"]) == "9.4 us" and "on mlx5_2/1" in measured.detail
    profile = load_profile("ndr400-large")
    verdicts = {e.key: judge("gpu01<->gpu02", measured, e) for e in profile.expectations("inter_node", "rdma_latency")}
    assert not verdicts["inter_node.rdma_latency.p99"].passed
    assert "p99 measured 9.4 us" in verdicts["inter_node.rdma_latency.p99"].message


def test_ndr400_large_bounds_p99_with_enough_samples_for_one() -> None:
    spec = load_profile("ndr400-large").document.inter_node.rdma_latency
    assert spec is not None and spec.p99 is not None and str(spec.p99) == "4.2 us"
    assert spec.iterations >= 10_000


def test_latency_repeats_take_the_median_per_rail() -> None:
    runs = [lat_output(1.5, 1.9), lat_output(4.0, 5.0), lat_output(1.6, 2.0)]
    a = node("gpu01", "10.0.0.1", ibstat("mlx5_0"), runs=runs)
    b = node("gpu02", "10.0.0.2", ibstat("mlx5_0"))
    settings = rdma.RdmaSettings(tool="ib_write_lat", size_bytes=2, repeat=3, iterations=10_000)
    measured = rdma.pair_latency(NodePair(a, b), settings, link_layer="InfiniBand")
    assert sum("ib_write_lat" in c for c in a.transport.calls) == 3  # type: ignore[attr-defined]
    assert float(measured.value.to("us")) == 1.6 and float(measured.bounds["p99"].to("us")) == 2.0  # type: ignore[union-attr]
    assert "median of 3" in measured.detail


def test_a_p99_bound_on_a_run_without_percentiles_is_an_error_not_the_typical_figure() -> None:
    a = node("gpu01", "10.0.0.1", ibstat("mlx5_0"), clients={"mlx5_0": lat_output(1.6, None)})
    b = node("gpu02", "10.0.0.2", ibstat("mlx5_0"))
    with pytest.raises(MeasurementError, match="no '99% percentile' column"):
        rdma.pair_latency(NodePair(a, b), LAT_SETTINGS, link_layer="InfiniBand", need_p99=True)
    measured = rdma.pair_latency(NodePair(a, b), LAT_SETTINGS, link_layer="InfiniBand", need_p99=False)
    assert "p99" not in measured.bounds


def test_a_p99_needs_at_least_ten_thousand_iterations(tmp_path: Path) -> None:
    from pytest_fabric.config.yamlsource import SourceError

    profile = tmp_path / "few.yaml"
    profile.write_text("name: few\ninter_node:\n  rdma_latency: {p99: 4 us, iterations: 1000}\n")
    with pytest.raises(SourceError, match="too few for a p99"):
        load_profile(str(profile))


class TakesSeconds(SuccessiveRuns):
    """A node whose ib_write_bw client returns after ``seconds``, as its transport timed it."""

    def __init__(self, node: str, answers: dict[str, str | CannedCommand], seconds: float) -> None:
        super().__init__(node, answers, [])
        self.seconds = seconds

    def run(self, command: str, *, timeout: float, check: bool = True) -> CommandResult:
        result = super().run(command, timeout=timeout, check=check)
        return dataclasses.replace(result, duration_s=self.seconds) if command.startswith("ib_write_bw") else result


def test_a_d_run_that_returned_before_its_d_is_uncorroborated_on_the_client() -> None:
    # Asked for -D 5, the client came back after 1.2 s: whatever its table says is not over 5 s.
    def timed(name: str, address: str, seconds: float) -> NodeHandle:
        answers: dict[str, str | CannedCommand] = {
            r"^ibstat$": ibstat("mlx5_0"), r"^ibv_devinfo$": CannedCommand(exit_code=1),
            r"^n=\$\(cat /sys/class/infiniband/": "-1 numactl", r"^ss -Hltn": "LISTEN 0 128 0.0.0.0:18515 0.0.0.0:*\n",
            r"ib_write_bw .* 10\.0\.0\.\d$": bw_output(196.21), r"ib_write_(bw|lat) ": "",
        }
        transport = TakesSeconds(name, answers, seconds)
        return NodeHandle(Node(name=name, host=address), ConnectionPool(lambda _: transport))

    settings = rdma.RdmaSettings(repeat=1, duration_s=5, corroborate=True)
    measured = rdma.pair_bandwidth(NodePair(timed("gpu01", "10.0.0.1", 1.2), timed("gpu02", "10.0.0.2", 9.0)),
                                   settings, link_layer="InfiniBand")
    (took,) = [c for c in measured.extra["corroborations"] if c["witness"] == "duration"]
    assert took["status"] == "uncorroborated" and took["node"] == "gpu01", took
    assert (took["claimed"], took["witnessed"]) == (5, 1.2)
    assert measured.missing is not None and measured.missing.startswith("uncorroborated on gpu01: ")
    assert "ib_write_bw was asked to run 5 s; its command took 1.20 s" in measured.missing
    honest = rdma.pair_bandwidth(NodePair(timed("gpu01", "10.0.0.1", 5.4), timed("gpu02", "10.0.0.2", 5.4)),
                                 settings, link_layer="InfiniBand")
    assert [c["status"] for c in honest.extra["corroborations"] if c["witness"] == "duration"] == ["agrees"]
