#!/usr/bin/python3
"""all_reduce_perf as a real MPI program: nccl-tests' output from the ranks MPI really started.

Installed by tests/simcluster/mpi.py as a node's ``all_reduce_perf``, beside the fabric stand-ins
(their ``fabric-hardware.json`` is the hardware model) and ``nccl-tests-options.txt`` (nccl-tests
2.17's option table, tests/data/option-tables/).  Started by ``srun --mpi=pmix`` or a real
``mpirun``, it joins the job through mpi4py (Open MPI, over PMIx), learns its rank count and every
rank's host (MPI_Get_processor_name) by a real gather, checks a real all-reduce, and rank 0 prints
the run as nccl-tests does, with the figures the fabric stand-ins derive from the hardware model
of the hosts the ranks ran on (their ports, NCCL_IB_HCA).  Rank 0 also appends what it saw (ranks,
hosts, how it was launched) to ``nccl-mpi-runs.jsonl`` beside itself, for the tests to read.

Options are read as glibc's getopt_long reads nccl-tests': an unknown option, a missing argument
or an ambiguous prefix is refused with glibc's words, then nccl-tests' usage, and exit 0 before
MPI_Init, as nccl-tests 2.17 does.

Standard library and Debian's python3-mpi4py: it runs under the nodes' system python3.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import socket
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
OPTIONS_FILE = os.path.join(HERE, "nccl-tests-options.txt")
RUNS_FILE = os.path.join(HERE, "nccl-mpi-runs.jsonl")
# Present: this build of nccl-tests has no MPI (make without MPI=1), a fault tests reproduce.
NO_MPI_FILE = os.path.join(HERE, "nccl-tests-built-without-mpi")
# Any of the fabric stand-ins' names: they are one program (tests/simcluster/standins/fabric_standin.py).
FABRIC_STANDIN = os.path.join(HERE, "ibstat")


def option_table() -> tuple[dict[str, tuple[str, bool]], dict[str, str]]:
    """({short: (long, takes an argument)}, messages) from nccl-tests-options.txt."""
    options: dict[str, tuple[str, bool]] = {}
    messages: dict[str, str] = {}
    with open(OPTIONS_FILE) as handle:
        for line in handle:
            if line.startswith("option "):
                _, short, long_, argument = line.split()
                options[short] = (long_, argument == "required")
            elif line.startswith("message "):
                _, name, text = line.rstrip("\n").split(" ", 2)
                messages[name] = text.encode().decode("unicode_escape")
    return options, messages


class Refused(Exception):
    """What glibc's getopt_long prints on stderr for a word it refuses."""


def getopt_long(argv0: str, args: list[str], options: dict[str, tuple[str, bool]]) -> dict[str, str]:
    """Short options (-b 8, -b8, -hb8), long ones (--minbytes=8, --minbytes 8, unique prefixes);
    words that are not options are permuted past (and ignored, as nccl-tests ignores them)."""
    by_long = {long_: (short, needs) for short, (long_, needs) in options.items()}
    values: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            break
        if arg.startswith("--"):
            name, eq, inline = arg[2:].partition("=")
            found = [name] if name in by_long else [n for n in by_long if n.startswith(name)]
            if not found:
                raise Refused(f"{argv0}: unrecognized option '{arg}'")
            if len(found) > 1:
                raise Refused(f"{argv0}: option '{arg}' is ambiguous; possibilities:"
                              + "".join(f" '--{n}'" for n in found))
            short, needs = by_long[found[0]]
            if not needs:
                if eq:
                    raise Refused(f"{argv0}: option '--{found[0]}' doesn't allow an argument")
                values[short] = ""
            elif eq:
                values[short] = inline
            elif i < len(args):
                values[short] = args[i]
                i += 1
            else:
                raise Refused(f"{argv0}: option '--{found[0]}' requires an argument")
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            while letters:
                letter, letters = letters[0], letters[1:]
                if letter not in options:
                    raise Refused(f"{argv0}: invalid option -- '{letter}'")
                if not options[letter][1]:
                    values[letter] = ""
                    continue
                if letters:
                    values[letter], letters = letters, ""
                elif i < len(args):
                    values[letter] = args[i]
                    i += 1
                else:
                    raise Refused(f"{argv0}: option requires an argument -- '{letter}'")
    return values


def load_fabric() -> Any:
    """The fabric stand-ins' program, as a module: its hardware model and nccl-tests figures.

    The installed tool is a launcher (tests/simcluster/hardware.py standin_launcher) that puts the
    stand-ins' folder on sys.path, imports fabric_standin and runs main() at once: import that module
    from the same folder, never the launcher (it would run as all_reduce_perf itself).
    """
    with open(FABRIC_STANDIN) as handle:
        text = handle.read()
    folder = re.search(r"^sys\.path\.insert\(0, (['\"])(.+?)\1\)$", text, re.MULTILINE)
    if folder is None or "import fabric_standin" not in text:
        raise Refused(f"{FABRIC_STANDIN} is not the fabric stand-ins' launcher (install_hardware puts it there)")
    sys.path.insert(0, folder.group(2))
    return importlib.import_module("fabric_standin")


def launched_by() -> str:
    """mpirun (its daemons set OMPI_COMM_WORLD_*) or srun (a Slurm step's tasks, PMIx from slurmstepd)."""
    if "OMPI_COMM_WORLD_SIZE" in os.environ:
        return "mpirun"
    return "srun" if "SLURM_STEP_ID" in os.environ else "none"


def main() -> int:
    argv0 = sys.argv[0]
    tool = os.path.basename(argv0)
    options, messages = option_table()
    try:
        values = getopt_long(argv0, sys.argv[1:], options)
    except Refused as refused:
        sys.stderr.write(f"{refused}\n")
        sys.stdout.write("invalid option '?'\n" + messages["usage"].format(program=tool))
        return 0
    if "h" in values:
        sys.stdout.write(messages["usage"].format(program=tool))
        return 0
    if os.path.exists(NO_MPI_FILE):
        # nccl-tests built without MPI=1: every process the launcher starts is a one-rank run of its own.
        rank, size, hosts, total = 0, 1, [socket.gethostname()], 1
    else:
        from mpi4py import MPI  # MPI_Init: after the options, as nccl-tests does

        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        hosts = comm.gather(MPI.Get_processor_name(), root=0)
        total = comm.allreduce(rank + 1)  # a real collective over every rank
    if rank != 0:
        return 0
    assert hosts is not None
    fabric = load_fabric()
    doc = fabric.load_cluster()
    placed: list[tuple[str, int]] = []
    for host in hosts:  # ranks in order, grouped by host as MPI placed them
        name = fabric.resolve_host(doc, host) or host
        if placed and placed[-1][0] == name:
            placed[-1] = (name, placed[-1][1] + 1)
        else:
            placed.append((name, 1))
    with open(RUNS_FILE, "a") as handle:
        handle.write(json.dumps({"ranks": size, "hosts": hosts, "launcher": launched_by(), "argv": sys.argv[1:],
                                 "allreduce_ok": total == size * (size + 1) // 2}) + "\n")
    short_argv = [word for key, value in values.items() for word in (f"-{key}", value)]
    env = {k: v for k, v in os.environ.items() if k.startswith("NCCL_")}
    code = int(fabric.nccl_test(doc, tool, short_argv, placed, env))
    # Before MPI_Finalize (mpi4py's atexit): under mpirun the daemon may close rank 0's stdout then.
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
