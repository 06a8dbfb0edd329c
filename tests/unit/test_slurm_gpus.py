"""The GPUs an allocation asks for, from what sinfo and scontrol say (canned answers)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from pytest_fabric.parsers import srun_mpi_list
from pytest_fabric.transport.slurm.gpus import gpu_counts, gpu_request
from pytest_fabric.transport.slurm.settings import SlurmSettings


def test_gres_counts_only_gpus_and_keeps_socket_lists_whole() -> None:
    text = "gpu01|gpu:h100:8(S:0-1),nic:2\ngpu02|gpu:a100:4(S:0,1)\ngpu03|(null)\n"
    assert gpu_counts(text) == {"gpu01": (8, "gpu:h100:8(S:0-1),nic:2"), "gpu02": (4, "gpu:a100:4(S:0,1)"),
                                "gpu03": (0, "(null)")}


def _run(gres: str, select: str = "select/cons_tres"):  # type: ignore[no-untyped-def]
    def run(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        out = gres if argv[0] == "sinfo" else f"SelectType              = {select}\n"
        return subprocess.CompletedProcess(list(argv), 0, out, "")
    return run


def test_the_option_follows_the_select_plugin_and_short_nodes_are_named() -> None:
    settings = SlurmSettings(gpus_per_node=8)
    assert gpu_request(settings, ["a", "b"], _run("a|gpu:8\nb|gpu:8\n")) == (["--gpus-per-node=8"], {})
    assert gpu_request(settings, ["a"], _run("a|gpu:8\n", "select/linear"))[0] == ["--gres=gpu:8"]
    options, short = gpu_request(settings, ["a", "b"], _run("a|gpu:8\nb|gpu:4\n"))
    assert list(short) == ["b"] and "Slurm gives b 4 GPUs" in short["b"] and "(gpu_count)" in short["b"]


def test_a_site_without_gpu_gres_is_asked_for_none_unless_told() -> None:
    assert gpu_request(SlurmSettings(gpus_per_node=8), ["a"], _run("a|(null)\n")) == ([], {})
    options, short = gpu_request(SlurmSettings(gpus_per_node=8, gpu_request="gres"), ["a"], _run("a|(null)\n"))
    assert options == ["--gres=gpu:8"] and "a" in short


def test_srun_mpi_list_of_22_05_and_older() -> None:
    assert srun_mpi_list.parse("MPI plugin types are...\n\tpmix\n\tnone\n\tpmi2\n"
                               "specific pmix plugin versions available: pmix_v4\n") == ("pmix", "none", "pmi2", "pmix_v4")
    assert srun_mpi_list.parse("srun: MPI types are...\nsrun: none\nsrun: pmix_v3\n") == ("none", "pmix_v3")
