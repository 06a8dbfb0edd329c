"""The tenant's pinned tools on a node: the command that runs them, the upload, the verification, the removal.

Run against this machine through the local transport (a real shell, real files under /tmp), as the
simulated cluster does over SSH in tests/integration/test_tenant_tools_run.py.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import cast

import pytest

from pytest_fabric.config.inventory import Inventory, Node
from pytest_fabric.config.profile import Profile
from pytest_fabric.config.tool_pins import PinnedTool
from pytest_fabric.probes import tool_upload
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.probes.preflight import read_preflight
from pytest_fabric.probes.tool_identity import read_identity
from pytest_fabric.run.cluster import Cluster, NodeHandle
from pytest_fabric.run.once import Once
from pytest_fabric.run.owner import this_run
from pytest_fabric.run.tenant_tools import (
    CLEAN_PATH,
    REFUSED_EXIT,
    REFUSED_MARK,
    TenantTools,
    clean_command,
)
from pytest_fabric.transport.base import TransportError
from pytest_fabric.transport.local import LocalTransport
from pytest_fabric.transport.mock import MockTransport
from pytest_fabric.transport.pool import ConnectionPool
from pytest_fabric.transport.results import CommandResult

TOOL = '#!/bin/sh\nprintf "ran %s\\n" "$*"; env | sort\n'


def _pin(tmp_path: Path, text: str = TOOL, name: str = "iperf3") -> PinnedTool:
    source = tmp_path / name
    source.write_text(text)
    source.chmod(0o755)
    data = source.read_bytes()
    return PinnedTool(name, source, hashlib.sha256(data).hexdigest(), len(data))


def _sh(command: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, timeout=30,
                          env={"PATH": os.environ["PATH"], **env})


def test_the_pinned_tool_runs_by_its_path_with_a_clean_environment(tmp_path: Path) -> None:
    pin = _pin(tmp_path)
    result = _sh(clean_command(str(pin.source), pin.sha256) + " -c 'a b'", LD_PRELOAD="libfake.so", SECRET="1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "ran -c a b"
    env = dict(line.split("=", 1) for line in lines[1:] if "=" in line)
    assert env.get("PATH") == CLEAN_PATH
    assert "LD_PRELOAD" not in env and "SECRET" not in env


def test_a_file_changed_after_it_was_pinned_is_refused_not_run(tmp_path: Path) -> None:
    pin = _pin(tmp_path)
    marker = tmp_path / "wrapper-ran"
    pin.source.write_text(f"#!/bin/sh\ntouch {marker}\n")
    result = _sh(clean_command(str(pin.source), pin.sha256) + " -s")
    assert result.returncode == REFUSED_EXIT
    assert result.stderr.startswith(f"{REFUSED_MARK} {pin.source} on ") and pin.sha256 in result.stderr
    assert not marker.exists()


def test_a_hostile_path_stays_one_word(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="absolute path"):
        clean_command("iperf3", "0" * 64)
    result = _sh(clean_command(f"/nonexistent/x; touch {tmp_path}/owned", "0" * 64))
    assert result.returncode == REFUSED_EXIT and not (tmp_path / "owned").exists()


def _node(tools: TenantTools | None, transport: LocalTransport | MockTransport | None = None) -> NodeHandle:
    spec = Node(name="local", host="localhost", transport="local")
    return NodeHandle(spec, ConnectionPool(lambda name: transport or LocalTransport(name)), None, tools)


def _tools(pins: tuple[PinnedTool, ...], holder: list[NodeHandle], once: Once) -> TenantTools:
    return TenantTools(pins, once=lambda: once,
                       install=lambda name: tool_upload.install(holder[0], pins),
                       remove=lambda made: tool_upload.remove(holder[0], made))


def _runs_dirs() -> set[str]:
    return set(glob.glob(f"/tmp/.pytest-fabric-{this_run().run}.*"))


def test_without_pins_a_tool_is_its_name() -> None:
    assert _node(None).tool("iperf3") == "iperf3" and _node(None).tenant_tool("iperf3") is None


def test_upload_verify_run_and_remove_on_a_node(tmp_path: Path) -> None:
    pin = _pin(tmp_path)
    holder: list[NodeHandle] = []
    tools = _tools((pin,), holder, Once())
    holder.append(node := _node(tools))
    before = _runs_dirs()

    command = node.tool("iperf3")
    assert node.tool("fio") == "fio"  # not pinned: the node's own
    installed = node.tenant_tool("iperf3")
    assert installed is not None and command == installed.command
    directory = Path(installed.path).parent
    assert str(directory).startswith(f"/tmp/.pytest-fabric-{this_run().run}.")
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700 and directory.stat().st_uid == os.getuid()
    assert hashlib.sha256(Path(installed.path).read_bytes()).hexdigest() == pin.sha256
    record = installed.identity.to_dict()
    assert record["supplied_by"] == "tenant" and record["verified_on_node"] is True
    assert record["sha256"] == pin.sha256 and record["path"] == installed.path

    assert node.run(command + " x").stdout.startswith("ran x\n")
    assert node.tool("iperf3") == command  # once per node: the same copy

    nodes, changed = tools.remove_all(lambda made, fn: [fn(m) for m in made])
    assert (nodes, changed) == (["local"], [])
    assert not directory.exists() and _runs_dirs() == before


def test_a_file_changed_on_the_node_during_the_run_is_refused_and_named_at_the_end(tmp_path: Path) -> None:
    pin = _pin(tmp_path)
    holder: list[NodeHandle] = []
    tools = _tools((pin,), holder, Once())
    holder.append(node := _node(tools))
    installed = node.tenant_tool("iperf3")
    assert installed is not None
    Path(installed.path).write_text("#!/bin/sh\necho 999 Gbits/sec\n")

    result = node.run(node.tool("iperf3") + " -c x", check=False)
    assert result.exit_code == REFUSED_EXIT and "999" not in result.stdout
    _, changed = tools.remove_all(lambda made, fn: [fn(m) for m in made])
    assert len(changed) == 1 and "local: the tenant's iperf3" in changed[0] and "changed on the node" in changed[0]


class _AlteringTransport(LocalTransport):
    """A node that does not keep what it is sent: the upload lands, then the file is another."""

    puts = 0

    def put_file(self, local: Path, remote: str, *, mode: int = 0o600, timeout: float) -> None:
        _AlteringTransport.puts += 1
        super().put_file(local, remote, mode=mode, timeout=timeout)
        Path(remote).write_text("#!/bin/sh\nexec iperf3 \"$@\"\n")


def test_a_node_that_alters_the_upload_is_named_and_every_check_there_is_told(tmp_path: Path) -> None:
    pin = _pin(tmp_path)
    holder: list[NodeHandle] = []
    tools = _tools((pin,), holder, Once())
    holder.append(node := _node(tools, _AlteringTransport("local")))
    before = _runs_dirs()
    for _ in range(2):
        with pytest.raises(MeasurementError) as excinfo:
            node.tool("iperf3")
        message = str(excinfo.value)
        assert message.startswith("node local: ") and "the tenant's iperf3, uploaded to /tmp/.pytest-fabric-" in message
        assert f"not the pinned {pin.sha256}" in message and "the node changed the file" in message
    assert _AlteringTransport.puts == 1  # the error is kept: uploaded once, told to every asker
    assert _runs_dirs() == before  # its directory is removed at once


def test_a_transport_without_file_upload_is_an_error_with_the_fix(tmp_path: Path) -> None:
    node = _node(None, MockTransport("local", {}))
    with pytest.raises(TransportError, match="has no file upload") as excinfo:
        node.put_file(tmp_path / "x", "/tmp/x")
    assert "transport: ssh" in str(excinfo.value)


def test_preflight_and_the_tool_identity_ask_the_tenants_copy_never_path(tmp_path: Path) -> None:
    pin = _pin(tmp_path, '#!/bin/sh\n[ "$1" = --version ] && echo "iperf 3.99 (tenant)"\n')
    holder: list[NodeHandle] = []
    tools = _tools((pin,), holder, Once())
    holder.append(node := _node(tools))
    try:
        found = read_preflight(node, ["iperf3", "sh"])
        installed = node.tenant_tool("iperf3")
        assert installed is not None
        assert found.tools["iperf3"] == installed.path and found.versions["iperf3"] == "3.99"
        assert found.tools["sh"].startswith("/")  # not pinned: as PATH finds it
        listed, _ = read_identity(node, ["iperf3", "sh"])
        assert listed.tools["iperf3"].supplied_by == "tenant" and listed.tools["iperf3"].path == installed.path
        assert listed.tools["sh"].supplied_by == "provider"
        only, evidence = read_identity(node, ["iperf3"])  # every tool pinned: the upload's listing is the evidence
        assert only.tools["iperf3"].sha256 == pin.sha256 and evidence is installed.listing
    finally:
        tools.remove_all(lambda made, fn: [fn(m) for m in made])


def test_a_killed_runs_tool_directory_is_removed_by_the_next_upload(tmp_path: Path) -> None:
    dead = Path("/tmp/.pytest-fabric-0dead0run000.Zz9Yy8")
    dead.mkdir(mode=0o700)
    (dead / "iperf3").write_text("left by a run killed with SIGKILL")
    (dead / ".owner").write_text("run=0dead0run000 controller=elsewhere pid=1 pidstart=1 started=1 until=2\n")
    pin = _pin(tmp_path)
    holder: list[NodeHandle] = []
    tools = _tools((pin,), holder, Once())
    holder.append(node := _node(tools))
    try:
        made = tools.on("local")
        assert not dead.exists()
        assert any(str(dead) in note and "lease ended" in note for note in made.notes), made.notes
        assert node.tenant_tool("iperf3") is not None
        _, said = tools.remove_all(lambda made, fn: [fn(m) for m in made])
        assert said == list(made.notes)  # the terminal summary says it
    finally:
        tools.remove_all(lambda made, fn: [fn(m) for m in made])
        if dead.exists():  # only when the test failed: leave nothing behind
            shutil.rmtree(dead)


@pytest.mark.parametrize(("stderr", "said"), [
    ("@@dir 755 root\nroot\n", "is mode 755 owned by root, not 700 owned by root"),
    ("@@dir 700 nobody\nroot\n", "is mode 700 owned by nobody, not 700 owned by root"),
    ("@@dir 700 root\nroot\n@@options rw,nosuid,nodev,noexec,relatime\n", "is mounted noexec"),
])
def test_a_directory_others_can_write_or_that_cannot_run_programs_is_refused(stderr: str, said: str) -> None:
    result = CommandResult("n1", "stat ...", 0, "", stderr)
    with pytest.raises(MeasurementError, match=said):
        tool_upload._check_directory(_node(None), "/tmp/.pytest-fabric-x.y", result)
    tool_upload._check_directory(_node(None), "/tmp/.pytest-fabric-x.y",
                                 CommandResult("n1", "stat ...", 0, "", "@@dir 700 root\nroot\n@@options rw,nosuid\n"))


def test_a_cluster_whose_inventory_pins_tools_never_runs_without_the_pins(tmp_path: Path) -> None:
    pin = _pin(tmp_path)
    inventory = Inventory(name="c", path=tmp_path / "inv.yaml", nodes=(Node(name="local", host="localhost", transport="local"),),
                          mounts=(), egress_targets=(), tools=(pin,))
    with pytest.raises(ValueError, match="pins iperf3 but nothing routes"):
        Cluster(inventory, cast(Profile, None), LocalTransport)
