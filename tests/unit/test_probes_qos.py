"""RoCE QoS per netdev (probes/qos.py) against recorded mlnx_qos output: no port hides another."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.checks.builtin import load_profile
from pytest_fabric.config.inventory import Node
from pytest_fabric.judge.verdict import judge
from pytest_fabric.probes import qos
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"
IBDEV2NETDEV = (
    "mlx5_0 port 1 ==> ib0 (Up)\nmlx5_1 port 1 ==> ens1f0 (Up)\nmlx5_2 port 1 ==> ens2f0 (Up)\n"
)


def corpus(relative: str) -> str:
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"shared corpus file {relative} not present")
    return path.read_text()


def ecn(netdev: str, value: str) -> str:
    return "".join(
        f"/sys/class/net/{netdev}/ecn/{role}/enable/3:{value}\n" for role in ("roce_np", "roce_rp")
    )


def node(answers: dict[str, str | CannedCommand]) -> tuple[NodeHandle, MockTransport]:
    transport = MockTransport("gpu01", answers)
    return NodeHandle(
        Node(name="gpu01", host="10.0.0.1"), ConnectionPool(lambda _: transport)
    ), transport


def test_a_port_with_pfc_and_ecn_off_fails_the_node_by_name_beside_a_good_one() -> None:
    good = corpus("mlnx_qos/trust-dscp-pfc-prio3-connectx.txt")
    # The same NIC before PFC was set: trust dscp, PFC off on every priority.
    no_pfc = good.replace(
        "enabled     0   0   0   1   0   0   0   0", "enabled     0   0   0   0   0   0   0   0"
    )
    assert no_pfc != good
    handle, transport = node(
        {
            r"^ibdev2netdev$": IBDEV2NETDEV,
            r"^mlnx_qos -i ens1f0$": good,
            r"^mlnx_qos -i ens2f0$": no_pfc,
            r"^grep -H \. /sys/class/net/ens1f0/": ecn("ens1f0", "1"),
            r"^grep -H \. /sys/class/net/ens2f0/": ecn("ens2f0", "0"),
        }
    )
    measured = qos.roce_settings(
        handle, ecn_priorities=[3], roce_ports=[("mlx5_1", 1), ("mlx5_2", 1)]
    )
    profile = load_profile("roce-small")
    verdicts = {
        e.key.rsplit(".", 1)[-1]: judge("gpu01", measured, e)
        for e in profile.expectations("inter_node", "roce")
    }
    assert verdicts["trust"].passed
    assert (
        not verdicts["pfc_priorities"].passed
        and "ens2f0: none" in verdicts["pfc_priorities"].message
    )
    assert not verdicts["ecn"].passed and "ens2f0: off" in verdicts["ecn"].message
    assert "ens1f0: 3" in verdicts["pfc_priorities"].message
    # ib0 is the IPoIB netdev of an InfiniBand port: not a RoCE port, never read
    assert not any("ib0" in call for call in transport.calls)


def test_agreeing_ports_report_their_shared_settings() -> None:
    good = corpus("mlnx_qos/trust-dscp-pfc-prio3-connectx.txt")
    handle, _ = node(
        {
            r"^ibdev2netdev$": IBDEV2NETDEV,
            r"^mlnx_qos -i ": good,
            r"^grep -H \. /sys/class/net/ens1f0/": ecn("ens1f0", "1"),
            r"^grep -H \. /sys/class/net/ens2f0/": ecn("ens2f0", "1"),
        }
    )
    measured = qos.roce_settings(
        handle, ecn_priorities=[3], roce_ports=[("mlx5_1", 1), ("mlx5_2", 1)]
    )
    assert measured.bounds == {"trust": "dscp", "pfc_priorities": "3", "ecn": "on"}
    assert all(
        judge("gpu01", measured, e).passed
        for e in load_profile("roce-small").expectations("inter_node", "roce")
    )


def test_ecn_that_cannot_be_read_is_an_error_not_off() -> None:
    handle, _ = node(
        {
            r"^ibdev2netdev$": IBDEV2NETDEV,
            r"^mlnx_qos -i ": corpus("mlnx_qos/trust-dscp-pfc-prio3-connectx.txt"),
            r"^grep -H \.": CannedCommand(
                exit_code=2,
                stderr="grep: /sys/class/net/ens1f0/ecn/roce_np/enable/3: No such file or directory",
            ),
        }
    )
    with pytest.raises(MeasurementError, match="cannot read ECN of ens1f0.*No such file"):
        qos.roce_settings(handle, ecn_priorities=[3], roce_ports=[("mlx5_1", 1)])


def test_only_the_np_switch_on_is_not_ecn_on() -> None:
    handle, _ = node(
        {
            r"^ibdev2netdev$": IBDEV2NETDEV,
            r"^mlnx_qos -i ": corpus("mlnx_qos/trust-dscp-pfc-prio3-connectx.txt"),
            r"^grep -H \.": "/sys/class/net/ens1f0/ecn/roce_np/enable/3:1\n/sys/class/net/ens1f0/ecn/roce_rp/enable/3:0\n",
        }
    )
    measured = qos.roce_settings(handle, ecn_priorities=[3], roce_ports=[("mlx5_1", 1)])
    assert measured.bounds["ecn"] == "off (roce_rp/enable/3 not 1)"


def test_doca_ofed_output_with_max_buffer_size_is_read_and_the_lldpad_warning_shown() -> None:
    # Before, 'max_buffer_size=' in the receive buffer line made the whole port unreadable.
    data = Path(__file__).resolve().parents[1] / "data" / "mlnx_qos"
    text = (
        data / "doca-ofed-fw-dcbx-dscp-wrapped-ets-ratelimit-lldpad-constructed.txt"
    ).read_text()
    handle, _ = node({r"^ibdev2netdev$": IBDEV2NETDEV, r"^mlnx_qos -i ": text})
    measured = qos.roce_settings(
        handle, ecn_priorities=[], roce_ports=[("mlx5_1", 1), ("mlx5_2", 1)]
    )
    assert measured.bounds == {"trust": "dscp", "pfc_priorities": "3"}
    assert measured.detail.endswith(
        "; mlnx_qos on ens1f0 warned: lldpad service is running and may overwrite your settings"
        "; mlnx_qos on ens2f0 warned: lldpad service is running and may overwrite your settings"
    )
