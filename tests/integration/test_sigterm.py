"""SIGTERM stops a run as Ctrl-C does (issue 19): scancel, a Slurm time limit, a CI cancel, ``kill``.

A real ``pytest --cluster`` in a subprocess, measuring a 60 s tcp_throughput round on the simulated
cluster, gets SIGTERM: it ends within seconds, the JSON record says ``interrupted``, the HTML report
is written, no iperf3 (nor anything else of the run) is left on a node, and a Slurm allocation the
run asked for is gone from ``squeue``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from simcluster import SimCluster
from simcluster.mounts import SimMounts
from simcluster.slurm import SlurmSim

LONG_PROFILE = "name: long\ninter_node:\n  tcp_throughput: {min: 1 Gb/s, streams: 1, duration: 60 s}\n"
ENDS_WITHIN_S = 15


def _iperf3(sim: SimCluster) -> dict[str, list[str]]:
    found = {n.name: [cmd for _, cmd in sim.processes(n) if "iperf3" in cmd] for n in sim.nodes}
    return {name: cmds for name, cmds in found.items() if cmds}


def _ended(run: subprocess.Popen[str]) -> str:
    """What a run that did not get as far as the test needed wrote (it is ended first)."""
    if run.poll() is None:
        run.kill()
    return run.communicate()[0][-3000:]


def _stop_with_sigterm(sim: SimCluster, inventory: Path, where: Path, signals: int = 1,
                       env: dict[str, str] | None = None) -> tuple[str, float]:
    """Start the long run (in ``env``, else this environment), SIGTERM it (``signals`` times) once a
    client measures; its output and how long it took to end."""
    (where / "long.yaml").write_text(LONG_PROFILE)
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "long.yaml",
         "-p", "no:cacheprovider", "-k", "tcp_throughput and not outlier", "--conformance-json=record.json",
         "--html=report.html", "--self-contained-html"],
        cwd=where, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**(os.environ if env is None else env), "FABRIC_TEST_CHECKOUT": "1"},
    )
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and run.poll() is None and not any(
            "iperf3 -c" in cmd for cmds in _iperf3(sim).values() for cmd in cmds
        ):
            time.sleep(0.1)
        if run.poll() is not None or not _iperf3(sim):
            pytest.fail(f"the run never started measuring:\n{_ended(run)}")
        assert json.loads((where / "record.json").read_text())["run"]["status"] == "running"
        stopped = time.monotonic()
        run.send_signal(signal.SIGTERM)
        for _ in range(signals - 1):  # a second SIGTERM while it unwinds does not cut that short
            time.sleep(0.3)
            if run.poll() is None:
                run.send_signal(signal.SIGTERM)
        try:
            output, _ = run.communicate(timeout=ENDS_WITHIN_S)
        except subprocess.TimeoutExpired:
            run.kill()
            output, _ = run.communicate()
            pytest.fail(f"still running {ENDS_WITHIN_S} s after SIGTERM:\n{output[-3000:]}")
        took = time.monotonic() - stopped
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    return output, took


def _assert_stopped(output: str, where: Path) -> None:
    assert "SIGTERM" in output, output[-3000:]
    record = json.loads((where / "record.json").read_text())
    assert (record["run"]["status"], record["run"]["verdict"]) == ("interrupted", "interrupted"), output[-3000:]
    html = (where / "report.html").read_text()
    assert 'class="fabric-verdict interrupted"' in html


@pytest.mark.parametrize("signals", [1, 2], ids=["once", "twice"])
def test_sigterm_stops_a_round_as_ctrl_c_does(
    simcluster: SimCluster, sim_inventory: Path, tmp_path: Path, signals: int
) -> None:
    output, took = _stop_with_sigterm(simcluster, sim_inventory, tmp_path, signals)
    print(f"ended {took:.1f} s after SIGTERM")
    _assert_stopped(output, tmp_path)
    assert "Traceback" not in output, output[-3000:]
    if signals == 2:
        assert "the run is already ending" in output, output[-3000:]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(simcluster.processes(n) for n in simcluster.nodes):
        time.sleep(0.2)
    assert {n.name: simcluster.processes(n) for n in simcluster.nodes} == {n.name: [] for n in simcluster.nodes}


def test_sigterm_cancels_the_slurm_allocation_the_run_asked_for(slurm_cluster: SlurmSim, tmp_path: Path) -> None:
    slurm_cluster.ensure_slurmds()
    sim = slurm_cluster.cluster
    assert slurm_cluster.jobs() == []
    inventory = slurm_cluster.write_inventory(tmp_path / "inventory.yaml", nodes=[n.name for n in sim.nodes[:4]])
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["SLURM_CONF"] = str(slurm_cluster.conf)
    output, took = _stop_with_sigterm(sim, inventory, tmp_path, env=env)
    print(f"ended {took:.1f} s after SIGTERM")
    _assert_stopped(output, tmp_path)
    assert slurm_cluster.jobs() == [], output[-3000:]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _iperf3(sim):
        time.sleep(0.2)
    assert _iperf3(sim) == {}


def test_sigterm_during_a_wave_kills_every_node_command(simcluster: SimCluster, tmp_path: Path) -> None:
    """A wave's commands wait in worker threads (a stand-in that would run 300 s on every node): they end too."""
    token = f"300.{uuid.uuid4().int % 10**6:06d}"
    for node in simcluster.nodes:
        simcluster.install_tool(node, "getent", f"sleep {token}\n")
    (tmp_path / "waves.yaml").write_text("name: sim-waves\negress:\n  dns_resolve: {max: 600 s}\n")
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", extra={"egress": {"targets": ["localhost"]}})

    def sleeping() -> list[str]:
        return [n.name for n in simcluster.nodes if any(token in cmd for _, cmd in simcluster.processes(n))]

    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "waves.yaml",
         "-p", "no:cacheprovider", "-k", "dns_resolve", "--conformance-json=record.json"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "FABRIC_TEST_CHECKOUT": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and run.poll() is None and len(sleeping()) < len(simcluster.nodes):
            time.sleep(0.1)
        if len(sleeping()) < len(simcluster.nodes):
            pytest.fail(f"the wave never ran on every node ({sleeping()}):\n{_ended(run)}")
        run.send_signal(signal.SIGTERM)
        output, _ = run.communicate(timeout=ENDS_WITHIN_S)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for node in simcluster.nodes:
            simcluster.remove_tool(node, "getent")
    assert "SIGTERM" in output, output[-3000:]
    assert json.loads((tmp_path / "record.json").read_text())["run"]["status"] == "interrupted"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sleeping():
        time.sleep(0.2)
    assert sleeping() == []


def test_sigterm_while_the_allocation_is_pending_leaves_no_job(slurm_cluster: SlurmSim, tmp_path: Path) -> None:
    """The run's salloc waits for nodes another job holds: SIGTERM then leaves no pending job behind."""
    slurm_cluster.ensure_slurmds()
    sim = slurm_cluster.cluster
    nodes = [n.name for n in sim.nodes[:2]]
    slurm_cluster.run(["salloc", "--no-shell", "--exclusive", "--job-name=blocker", "-N", "2",
                      "-w", ",".join(nodes), "--partition=sim", "--time=5", "--immediate=10"])
    try:
        inventory = slurm_cluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes, wait_s=120)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(slurm_cluster.conf)
        (tmp_path / "long.yaml").write_text(LONG_PROFILE)
        run = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "long.yaml",
             "-p", "no:cacheprovider", "-k", "tcp_throughput and not outlier", "--conformance-json=record.json"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**env, "FABRIC_TEST_CHECKOUT": "1"},
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and run.poll() is None and not any(
                "PENDING" in line for line in slurm_cluster.jobs()
            ):
                time.sleep(0.2)
            if not any("PENDING" in line for line in slurm_cluster.jobs()):
                pytest.fail(f"no pending job ({slurm_cluster.jobs()}):\n{_ended(run)}")
            run.send_signal(signal.SIGTERM)
            output, _ = run.communicate(timeout=ENDS_WITHIN_S)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
        assert "SIGTERM" in output, output[-3000:]
        assert json.loads((tmp_path / "record.json").read_text())["run"]["status"] == "interrupted"
        assert [line for line in slurm_cluster.jobs() if "blocker" not in line] == [], output[-3000:]
    finally:
        slurm_cluster.run(["scancel", "--name=blocker"], check=False)
        slurm_cluster.wait_idle(slurm_cluster.nodes)


ONE_AT_A_TIME_PROFILE = (
    "name: long-iops\nstorage:\n"
    "  random_read_iops: {min: 1, runtime: 60 s, size: 16 MiB, iodepth: 1, measured: alone}\n"
)


def _fio(sim: SimCluster, nodes: list[str]) -> dict[str, list[tuple[int, str]]]:
    found = {name: [(pid, cmd) for pid, cmd in sim.processes(name) if "fio" in cmd] for name in nodes}
    return {name: procs for name, procs in found.items() if procs}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_a_layout_on_a_shared_mount_taken_one_node_at_a_time_stops_the_run(
    simcluster: SimCluster, tmp_path: Path, signum: signal.Signals
) -> None:
    """Issue 27: random_read_iops on a shared mount, one node at a time, 4 nodes, 60 s each. The signal
    arrives while the first node's files are being laid out (that fio is held, as a hung server would
    hold it, so the signal lands in the layout whatever this disk's speed): the run ends within
    seconds, no fio is left on any node, nothing is left on the mount, and the record and the HTML
    report say interrupted. Before the fix the other nodes took their turns after the signal."""
    nodes = [n.name for n in simcluster.nodes[:4]]
    with SimMounts(simcluster) as mounts:
        path = mounts.shared(nodes)
        # shared: true, stated: the mount is taken one node at a time whatever the type says
        inventory = simcluster.write_inventory(
            tmp_path / "inventory.yaml", nodes=nodes,
            extra={"storage": {"mounts": [{"path": path, "fstype": "ext4", "shared": True}]}},
        )
        (tmp_path / "iops.yaml").write_text(ONE_AT_A_TIME_PROFILE)
        run = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "iops.yaml",
             "-p", "no:cacheprovider", "-k", "random_read_iops", "--conformance-json=record.json",
             "--html=report.html", "--self-contained-html"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "FABRIC_TEST_CHECKOUT": "1"},
        )
        held: list[int] = []
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and run.poll() is None and not held:
                for procs in _fio(simcluster, nodes).values():
                    held += [pid for pid, cmd in procs if cmd.startswith("fio ") and "--create_only=1" in cmd]
                time.sleep(0.05)
            if not held:
                pytest.fail(f"no layout was seen:\n{_ended(run)}")
            for pid in held:
                os.kill(pid, signal.SIGSTOP)
            stopped = time.monotonic()
            run.send_signal(signum)
            try:
                output, _ = run.communicate(timeout=ENDS_WITHIN_S)
            except subprocess.TimeoutExpired:
                run.kill()
                output, _ = run.communicate()
                pytest.fail(f"still running {ENDS_WITHIN_S} s after {signum.name}:\n{output[-3000:]}")
            took = time.monotonic() - stopped
            print(f"ended {took:.1f} s after {signum.name}")
            assert _fio(simcluster, nodes) == {}, output[-3000:]
            assert simcluster.exec(nodes[0], ["ls", "-A", path]).stdout == "", output[-3000:]
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
            for procs in _fio(simcluster, nodes).values():  # what a failed run left: ended here
                for pid, _ in procs:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        os.kill(pid, signal.SIGCONT)
    record = json.loads((tmp_path / "record.json").read_text())
    assert (record["run"]["status"], record["run"]["verdict"]) == ("interrupted", "interrupted"), output[-3000:]
    assert 'class="fabric-verdict interrupted"' in (tmp_path / "report.html").read_text()
    assert "Traceback" not in output, output[-3000:]


WRITING_TOGETHER = {
    # every node at once, in the main thread's own fan-out (no batch): it had no kill at all
    "aggregate_write": "  aggregate_write: {min: 1 MB/s, runtime: 60 s, size: 16 MiB}\n",
    # every node of the wave at once, inside a batch's worker
    "sequential_write": "  sequential_write: {min: 1 MB/s, size: 16 MiB, measured: together, runtime: 60 s}\n",
}


@pytest.mark.parametrize("check", list(WRITING_TOGETHER))
def test_sigterm_while_every_node_writes_to_a_shared_mount_stops_the_run(
    simcluster: SimCluster, tmp_path: Path, check: str
) -> None:
    """The other storage phases go through the same stop: 4 nodes writing for 60 s to a shared mount
    (the aggregate, or a check measured together) get SIGTERM: the run ends within seconds, no fio is
    left on a node nor a file on the mount, and the record and the HTML report say interrupted."""
    nodes = [n.name for n in simcluster.nodes[:4]]
    with SimMounts(simcluster) as mounts:
        path = mounts.shared(nodes)
        inventory = simcluster.write_inventory(
            tmp_path / "inventory.yaml", nodes=nodes,
            extra={"storage": {"mounts": [{"path": path, "fstype": "ext4", "shared": True}]}},
        )
        (tmp_path / "write.yaml").write_text("name: long-write\nstorage:\n" + WRITING_TOGETHER[check])
        run = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "write.yaml",
             "-p", "no:cacheprovider", "-k", check, "--conformance-json=record.json",
             "--html=report.html", "--self-contained-html"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "FABRIC_TEST_CHECKOUT": "1"},
        )

        def writers() -> list[str]:
            return [name for name, procs in _fio(simcluster, nodes).items()
                    if any(cmd.startswith("fio ") and "--rw=write" in cmd for _, cmd in procs)]

        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and run.poll() is None and len(writers()) < len(nodes):
                time.sleep(0.1)
            if len(writers()) < len(nodes):
                pytest.fail(f"not every node was writing ({writers()}):\n{_ended(run)}")
            stopped = time.monotonic()
            run.send_signal(signal.SIGTERM)
            try:
                output, _ = run.communicate(timeout=ENDS_WITHIN_S)
            except subprocess.TimeoutExpired:
                run.kill()
                output, _ = run.communicate()
                pytest.fail(f"still running {ENDS_WITHIN_S} s after SIGTERM:\n{output[-3000:]}")
            print(f"ended {time.monotonic() - stopped:.1f} s after SIGTERM")
            assert _fio(simcluster, nodes) == {}, output[-3000:]
            assert simcluster.exec(nodes[0], ["ls", "-A", path]).stdout == "", output[-3000:]
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
            for procs in _fio(simcluster, nodes).values():  # what a failed run left: ended here
                for pid, _ in procs:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
    _assert_stopped(output, tmp_path)


def test_what_a_sigkilled_run_left_on_the_nodes_is_removed_by_the_next_run_which_says_so(
    simcluster: SimCluster, tmp_path: Path
) -> None:
    """Issue 27: SIGKILL leaves no chance to clean up. The controller is killed while two nodes write to
    their own disks (throttled, so the writes last); its directories, marked as its run's, stay. The next
    run finds them, ends the fio still writing there and removes them, and the record and the terminal say
    what it removed and whose it was. Before, nothing ever removed them."""
    from simcluster.mounts import ROOT
    from simcluster.throttle import WriteThrottle, missing_throttle

    missing = missing_throttle(ROOT)
    if missing:
        pytest.skip("node writes cannot be throttled here: " + "; ".join(missing))
    nodes = [n.name for n in simcluster.nodes[:2]]
    with SimMounts(simcluster) as mounts, WriteThrottle(simcluster) as throttle:
        path = mounts.local(nodes)
        for name in nodes:
            throttle.limit(name, 4_000_000, path)  # 64 MiB direct: 16 s of writing
        inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=nodes,
                                               extra={"storage": {"mounts": [{"path": path, "shared": False}]}})
        (tmp_path / "big.yaml").write_text("name: big\nstorage:\n  sequential_write: {min: 1 MB/s, size: 64 MiB}\n")
        (tmp_path / "small.yaml").write_text("name: small\nstorage:\n  sequential_write: {min: 1 kB/s, size: 1 MiB}\n")

        def writing() -> dict[str, list[tuple[int, str]]]:
            return {name: [(pid, cmd) for pid, cmd in procs if "--rw=write" in cmd]
                    for name, procs in _fio(simcluster, nodes).items()}

        def left() -> dict[str, str]:
            return {name: simcluster.exec(name, ["sh", "-c", f"ls -A {path}"]).stdout for name in nodes}

        killed = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "big.yaml",
             "-p", "no:cacheprovider", "-k", "sequential_write"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "FABRIC_TEST_CHECKOUT": "1"},
        )
        try:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and killed.poll() is None and len(
                    [n for n, procs in writing().items() if procs]) < len(nodes):
                time.sleep(0.1)
            if len([n for n, procs in writing().items() if procs]) < len(nodes):
                pytest.fail(f"the writes never started on both nodes:\n{_ended(killed)}")
            time.sleep(1)  # some MiB written
            killed.kill()  # SIGKILL: no clean-up of any kind
            killed.wait()
            stayed = left()
            assert all(".pytest-fabric-" in listing for listing in stayed.values()), stayed
            record = tmp_path / "record.json"
            after = subprocess.run(
                [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", "small.yaml",
                 "-p", "no:cacheprovider", "-k", "sequential_write", f"--conformance-json={record}"],
                cwd=tmp_path, capture_output=True, text=True, timeout=180,
                env={**os.environ, "FABRIC_TEST_CHECKOUT": "1"},
            )
            output = after.stdout + after.stderr
            assert after.returncode == 0, output[-3000:]
            assert left() == {name: "" for name in nodes}, output[-3000:]
            assert writing() == {}, output[-3000:]  # the fio the killed run left writing was ended
            checks = [c for c in json.loads(record.read_text())["checks"] if c["check"] == "sequential_write"]
            for check in checks:
                node = check["subject"].split(":")[0]
                (said,) = check["extra"]["leftovers_removed"]
                assert said.startswith("removed ") and " MiB left by run " in said and f"pid {killed.pid}" in said, said
                assert f" on {node}: its controller process {killed.pid} on " in said and "is gone" in said, said
                assert said in check["message"]
                assert f"cleaned up: {said}" in output, output[-3000:]
        finally:
            if killed.poll() is None:
                killed.kill()
                killed.wait()
            for procs in _fio(simcluster, nodes).values():  # what a failed test left: ended here
                for pid, _ in procs:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
