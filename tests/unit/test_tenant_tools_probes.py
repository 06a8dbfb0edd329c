"""Every probe that runs a pinnable tool runs it through NodeHandle.tool: the tenant's copy, never PATH's.

The nodes are MockTransports that answer only commands naming the pinned copy's path (a command
that runs ``iperf3``, ``fio`` or ``ib_write_bw`` by name meets no canned answer and fails the test).
"""

from __future__ import annotations

import hashlib
from decimal import Decimal
from pathlib import Path

from pytest_fabric.config.inventory import Node
from pytest_fabric.config.tool_pins import PinnedTool
from pytest_fabric.parsers.tool_identity import ToolIdentity
from pytest_fabric.probes import rdma, storage
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.run.once import Once
from pytest_fabric.run.tenant_tools import InstalledTool, NodeTools, TenantTools
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool
from pytest_fabric.transport.results import CommandResult

DIRECTORY = "/tmp/.pytest-fabric-0123456789ab.AbCdEf"


def _tools(names: tuple[str, ...]) -> TenantTools:
    pins = tuple(PinnedTool(n, Path(f"/local/{n}"), hashlib.sha256(n.encode()).hexdigest(), 1) for n in names)

    def install(node: str) -> NodeTools:
        listing = CommandResult(node, "listing", 0, "", "")
        tools = {}
        for pin in pins:
            path = f"{DIRECTORY}/{pin.name}"
            identity = ToolIdentity(pin.name, path, path, pin.sha256, "7f454c46", None, None, None, None,
                                    supplied_by="tenant", pinned_sha256=pin.sha256)
            tools[pin.name] = InstalledTool(pin, path, identity, listing)
        return NodeTools(node, DIRECTORY, tools)

    return TenantTools(pins, once=lambda: once, install=install, remove=lambda made: [])


once = Once()


def _node(name: str, answers: dict[str, str | CannedCommand], tools: TenantTools) -> NodeHandle:
    transport = MockTransport(name, answers)
    return NodeHandle(Node(name=name, host=f"{name}.example"), ConnectionPool(lambda _: transport), None, tools)


def test_fio_runs_the_pinned_copy() -> None:
    tools = _tools(("fio",))
    fio_json = '{"fio version": "fio-3.36", "jobs": [{"jobname": "x", "read": {"bw_bytes": 1, "io_bytes": 1, "runtime": 1, "iops": 1}, "write": {"bw_bytes": 0, "io_bytes": 0, "runtime": 0, "iops": 0}}]}'
    node = _node("n1", {rf"^env -i PATH=\S+ sh -c .* {DIRECTORY}/fio \S+ --name=": fio_json}, tools)
    settings = storage.FioSettings(rw="read", size_bytes=1 << 20, block_size_bytes=1 << 20)
    _, result = storage.run_fio(node, "/scratch/d", settings, 30)
    assert f"{DIRECTORY}/fio" in result.command and not result.command.startswith("fio ")


def test_perftest_runs_the_pinned_copy_on_both_ends() -> None:
    tools = _tools(("ib_write_bw",))
    pinned = rf"^env -i PATH=\S+ sh -c .* {DIRECTORY}/ib_write_bw \S+ -d mlx5_0"
    server = _node("b", {pinned: "", r"^ss -Hltn": "LISTEN 0 0 *:18515 *:*\n"}, tools)
    client = _node("a", {pinned: "bandwidth table"}, tools)
    port = rdma.RdmaPort("a", "mlx5_0", 1, "Active", "LinkUp", Decimal(200), "InfiniBand")
    binding = rdma._Binding("", "", [], [])
    result, evidence = rdma._run_pair(NodePair(client, server), port, port, rdma.RdmaSettings(), 18515, "-s 8", binding)
    assert result.stdout == "bandwidth table"
    assert f"{DIRECTORY}/ib_write_bw" in evidence[0].command
