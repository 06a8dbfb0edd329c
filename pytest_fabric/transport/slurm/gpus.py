"""The GPUs an allocation asks for: as many per node as the profile expects, the way the site counts them.

On a cluster with ``ConstrainDevices=yes`` a job (and every step in it) sees only the GPUs it was
given, so an allocation that asks for none makes every GPU check fail for the wrong reason.  The
run asks for the profile's ``gpu_count`` per node:

- ``slurm: {gpus: auto}`` (the default): from what the cluster says.  ``sinfo -o %G`` lists the
  nodes' generic resources; where it lists no ``gpu`` the allocation asks for none (the site does
  not schedule GPUs), else ``--gpus-per-node=N`` on ``select/cons_tres`` and ``--gres=gpu:N`` on
  the older select plugins, which know only gres;
- ``gpus-per-node`` or ``gres``: that option, whatever sinfo says; ``none``: no GPU option.

A node Slurm gives fewer GPUs than the profile expects cannot be allocated as asked: it errors
alone before anything runs (naming the node, what sinfo says and the profile's field), as a
drained node does, and the others are allocated without it.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence

from pytest_fabric.config.hostlist import fold
from pytest_fabric.transport.slurm.settings import SlurmSettings

__all__ = ["gpu_counts", "gpu_option", "gpu_request"]

Run = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]

# One gres item as sinfo prints it: gpu:8, gpu:h100:8, gpu:a100:4(S:0-1), gpu:8(IDX:0-7); ``nic:1`` is not a GPU.
_GRES_GPU = re.compile(r"^gpu(?::[A-Za-z0-9_.-]+)?:(\d+)")


def gpu_counts(sinfo_stdout: str) -> dict[str, tuple[int, str]]:
    """Each node's GPUs from ``sinfo -h -N -o '%N|%G'``: (count, the gres as sinfo wrote it)."""
    counts: dict[str, tuple[int, str]] = {}
    for line in sinfo_stdout.splitlines():
        name, sep, gres = line.strip().partition("|")
        if not sep:
            continue
        # Items are comma-separated, but a socket list inside parentheses has commas too: split outside them.
        items = re.split(r",(?![^()]*\))", gres.strip())
        count = sum(int(m.group(1)) for item in items if (m := _GRES_GPU.match(item.strip())))
        counts[name.strip()] = (count, gres.strip())
    return counts


def gpu_option(request: str, gpus: int, select_type: str) -> str:
    """The salloc option for ``gpus`` per node: ``--gpus-per-node`` on cons_tres (or when asked), else ``--gres``."""
    if request == "gres" or (request == "auto" and "cons_tres" not in select_type):
        return f"--gres=gpu:{gpus}"
    return f"--gpus-per-node={gpus}"


def _select_type(run: Run) -> str:
    proc = run(["scontrol", "show", "config"])
    found = re.search(r"^SelectType\s*=\s*(\S+)", proc.stdout, re.MULTILINE)
    return found.group(1) if found else ""


def gpu_request(settings: SlurmSettings, nodes: Sequence[str], run: Run) -> tuple[list[str], dict[str, str]]:
    """(the salloc options for the profile's GPUs, why each node that cannot give them cannot).

    ``run`` runs a Slurm client command.  No GPU expected, ``gpus: none``, or (``auto``) a cluster
    that lists no GPU gres: no option and no node left out.
    """
    wanted = settings.gpus_per_node or 0
    if wanted <= 0 or settings.gpu_request == "none" or not nodes:
        return [], {}
    command = ["sinfo", "-h", "-N", "-n", fold(nodes), "-o", "%N|%G"]
    counts = gpu_counts(run(command).stdout)
    if settings.gpu_request == "auto" and not any(count for count, _ in counts.values()):
        return [], {}  # the site does not schedule GPUs: asking for them would be refused
    short: dict[str, str] = {}
    for node in nodes:
        count, gres = counts.get(node, (0, "(null)"))
        if count < wanted:
            short[node] = (
                f"Slurm gives {node} {count} GPUs (sinfo -o %G: {gres}), the profile expects {wanted} per node "
                f"(gpu_count): an allocation of {wanted} GPUs per node cannot include it; command: {' '.join(command)}"
            )
    return [gpu_option(settings.gpu_request, wanted, _select_type(run))], short


def describe(settings: SlurmSettings) -> str:
    """The run header's line on what the allocation asks for."""
    wanted = settings.gpus_per_node or 0
    if settings.job_id is not None:
        return f"slurm: in job {settings.job_id} (its GPUs are the job's own; the profile expects {wanted} per node)"
    if wanted <= 0 or settings.gpu_request == "none":
        gpus = "no GPUs" + (" (slurm: gpus: none)" if settings.gpu_request == "none" and wanted else "")
    elif settings.gpu_request == "auto":
        gpus = (f"{wanted} GPUs per node (--gpus-per-node on select/cons_tres, else --gres=gpu:{wanted}; "
                "none where sinfo lists no GPU gres)")
    else:
        gpus = f"{wanted} GPUs per node ({gpu_option(settings.gpu_request, wanted, '')})"
    return f"slurm: the allocation asks for whole nodes (--exclusive) and {gpus}"
