"""probes/witness.py: counters a tool does not keep, read as data; one that cannot be read did not witness."""

from __future__ import annotations

from pytest_fabric.config.inventory import Node
from pytest_fabric.judge import corroboration
from pytest_fabric.probes import witness
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

PERFQUERY_X = """# Port extended counters: Lid 12 port 1 (CapMask: 0x5A00 CapMask2: 0x0000000)
PortSelect:......................1
CounterSelect:...................0x0000
PortXmitData:....................250000000
PortRcvData:.....................1000
PortXmitPkts:....................61036
PortRcvPkts:.....................4
"""


def _node(answers: dict[str, str | CannedCommand]) -> NodeHandle:
    transport = MockTransport("gpu01", answers)
    return NodeHandle(Node(name="gpu01", host="10.0.0.1"), ConnectionPool(lambda _: transport))


def test_interface_counters_are_read_from_sysfs() -> None:
    node = _node({r"^cd /sys/class/net/eth0/statistics && ": "tx_bytes 123456\nrx_bytes 789\n"})
    found = witness.interface_bytes(node, "eth0")
    assert (found.where, found.sent, found.received, found.problem) == ("gpu01 eth0", 123456, 789, None)
    assert found.evidence is not None and found.evidence.command.startswith("cd /sys/class/net/eth0/")


def test_an_interface_name_is_one_quoted_word() -> None:
    node = _node({r"^cd /sys/class/net/'eth0;reboot'/statistics": CannedCommand(exit_code=1, stderr="no such dir")})
    found = witness.interface_bytes(node, "eth0;reboot")
    assert found.sent is None and "no such dir" in (found.problem or "")


def test_hca_port_bytes_are_four_octets_a_count() -> None:
    node = _node({r"^perfquery -x -C mlx5_0 -P 1$": PERFQUERY_X})
    found = witness.hca_port_bytes(node, "mlx5_0", 1)
    assert (found.sent, found.received) == (1_000_000_000, 4000)


def test_without_perfquery_the_port_counters_come_from_sysfs() -> None:
    node = _node({
        r"^perfquery ": CannedCommand(exit_code=127, stderr="perfquery: command not found"),
        r"^cd /sys/class/infiniband/mlx5_2/ports/1/counters && ": "port_xmit_data 10\nport_rcv_data 20\n",
    })
    found = witness.hca_port_bytes(node, "mlx5_2", 1)
    assert (found.sent, found.received, found.problem) == (40, 80, None)


def test_a_port_no_counter_reads_is_a_witness_that_did_not_run() -> None:
    node = _node({
        r"^perfquery ": CannedCommand(exit_code=255, stderr="perfquery: iberror: failed: Failed to open 'mlx5_0'"),
        r"^cd /sys/class/infiniband/": CannedCommand(exit_code=1, stderr="cd: can't cd to /sys/class/infiniband/x"),
    })
    found = witness.hca_port_bytes(node, "mlx5_0", 1)
    assert found.sent is None and "Failed to open" in (found.problem or "") and "can't cd" in (found.problem or "")
    said = corroboration.counter_witness("HCA port counters", "gpu01", found.where, 1e9, found.sent, None)
    assert said.status == corroboration.NOT_RUN
