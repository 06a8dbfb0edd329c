"""mpirun's failed launches (tests/data/mpirun-launch): the host it could not reach, never the launcher."""

from __future__ import annotations

from pathlib import Path

from pytest_fabric.parsers.mpirun_launch import LaunchFailure, parse

DATA = Path(__file__).resolve().parents[2] / "data" / "mpirun-launch"


def test_ssh_refused_names_the_daemons_host_as_real_open_mpi_4_1_4_prints_it() -> None:
    launch = parse((DATA / "openmpi-4.1.4-ssh-refused.txt").read_text())
    assert launch.failures == (LaunchFailure("127.0.0.2", "ssh: Connection refused"),)
    assert launch.daemons_failed and launch.launcher is None


def test_a_lost_daemon_names_the_remote_node_not_the_hnp() -> None:
    for name in ("openmpi-4.1-node-died-constructed.txt", "openmpi-5-prte-node-died-constructed.txt"):
        launch = parse((DATA / name).read_text())
        assert launch.hosts == ("node03",), name
        assert launch.launcher == "node02" and launch.daemons_failed


def test_no_connect_names_the_target_node() -> None:
    launch = parse((DATA / "openmpi-4.1-no-connect-constructed.txt").read_text())
    assert launch.failures == (LaunchFailure("10.200.0.13", "mpirun could not connect to its daemon there"),)
    assert launch.launcher == "node02"


def test_unresolved_and_refused_logins_name_each_host_once_in_order() -> None:
    launch = parse((DATA / "openmpi-4.1-ssh-unresolved-and-denied-constructed.txt").read_text())
    assert launch.failures == (
        LaunchFailure("nodx04", "ssh: Name or service not known"),
        LaunchFailure("10.200.0.15", "ssh: Permission denied (publickey,password)"),
    )


def test_a_run_that_launched_names_no_host() -> None:
    text = "# Rank  0 Group  0 Pid   4242 on     node02 device  0 [0x1b] NVIDIA H100\n" \
           "mpirun noticed that process rank 1 with PID 17 on node node03 exited on signal 11 (Segmentation fault).\n"
    launch = parse(text)
    assert launch.failures == () and not launch.daemons_failed
