"""The cpu-free fio's option parsing and disk model (tests/simcluster/standins/cpu_free_fio.py), without a
cluster: every command line the storage probe makes gets through, as fio 3.33 takes it; the integration
tests (tests/integration/test_simcluster_cpu_free.py) run it on a simulated cluster."""

from __future__ import annotations

import itertools
import shlex
from types import ModuleType

import pytest
from simcluster.hardware import link_document, standin_module

from pytest_fabric.probes import storage
from pytest_fabric.probes.storage import FioSettings

FIO: ModuleType = standin_module("cpu_free_fio")
LINK = link_document("node01", None)


def _probe_commands() -> list[str]:
    commands = []
    for rw, direct, fsync, runtime in itertools.product(("write", "read", "randread"), (True, False), (True, False),
                                                        (None, 30.0)):
        settings = FioSettings(rw=rw, size_bytes=2**30, block_size_bytes=4096 if rw == "randread" else 2**20,
                               jobs=4, direct=direct, iodepth=32 if rw == "randread" else 1,
                               fsync_on_close=fsync and rw == "write", runtime_s=runtime)
        for how in ({}, {"layout": True}, {"existing": True}):
            commands.append(storage._fio_command("/mnt/x/pytest-fabric.AbC123", settings, **how))
    return commands


@pytest.mark.parametrize("command", _probe_commands())
def test_every_probe_command_is_one_the_stand_in_models(command: str) -> None:
    cmdline, job = FIO._parse(shlex.split(command)[1:], LINK)
    assert cmdline == {"output-format": "json"}
    parsed = FIO._Job(job)
    assert (parsed.size, parsed.numjobs, parsed.directory) == (2**30, 4, "/mnt/x/pytest-fabric.AbC123")


@pytest.mark.parametrize(("argv", "err"), [
    ("--name=x --paralel=3", "fio: unrecognized option '--paralel=3'\nfio: unrecognized option '--paralel=3'\n"),
    ("--name=x --bogus", "fio: unrecognized option '--bogus'\nfio: unrecognized option '--bogus'\nDid you mean bs?\n"),
    ("--name=x --size", "fio: option '--size' requires an argument\nfio: unrecognized option '--size'\n"
                        "Did you mean size?\n"),
])
def test_refuses_what_fio_3_33_refuses_in_its_words(argv: str, err: str, capsys: pytest.CaptureFixture[str]) -> None:
    # the stderr /usr/bin/fio 3.33 printed for each, exit 1
    with pytest.raises(SystemExit) as stop:
        FIO._parse(argv.split(), LINK)
    assert stop.value.code == 1
    assert capsys.readouterr().err == err


@pytest.mark.parametrize("argv", ["--name=x --verify=md5", "--name=x --rw=write job.fio", "-name=x",
                                  "--name=x --output=/tmp/o"])
def test_what_fio_has_but_the_stand_in_does_not_model_is_exit_2(argv: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        FIO._parse(argv.split(), LINK)
    assert stop.value.code == 2
    assert "not modelled by the cpu-free stand-in" in capsys.readouterr().err


def test_an_alias_and_a_unique_prefix_are_fios_options() -> None:
    # options.c's .alias names the same option; getopt takes a unique prefix (--nam for --name) as fio does
    _, job = FIO._parse(["--nam=x", "--readwrite=write", "--blocksize=4k", "--timeout=5", "--time_b"], LINK)
    assert job == [("name", "x"), ("rw", "write"), ("bs", "4k"), ("runtime", "5"), ("time_based", "")]


def test_disk_model() -> None:
    assert FIO.disk_figures({"disk_mbps": 1000}, "write", 2**20) == (1e9, 1e9 / 2**20)
    # random reads: the IOPS figure, capped by the sequential rate at the block size
    assert FIO.disk_figures({"disk_mbps": 1000, "disk_iops": 100_000}, "randread", 4096) == (4096e5, 1e5)
    assert FIO.disk_figures({"disk_mbps": 100, "disk_iops": 100_000}, "randread", 4096)[1] == pytest.approx(1e8 / 4096)
    assert [FIO.parse_size(t) for t in ("4096", "4k", "1m", "1MiB", "2g")] == [4096, 4096, 2**20, 2**20, 2 * 2**30]
