"""``srun --mpi=list``: the MPI plugin types this Slurm offers (pmix, pmi2, none, ...).

Slurm 22.05 prints (on stderr)::

    MPI plugin types are...
    	pmix
    	none
    	cray_shasta
    	pmi2
    specific pmix plugin versions available: pmix_v4

Older releases print ``srun: MPI types are...`` and one ``srun: NAME`` line each.
"""

from __future__ import annotations

import re

__all__ = ["parse"]

_TYPE = re.compile(r"^(?:srun: )?\s+([A-Za-z][A-Za-z0-9_]*)\s*$|^srun: ([A-Za-z][A-Za-z0-9_]*)$")
_VERSIONS = re.compile(r"specific pmix plugin versions available:\s*(.*)$")


def parse(text: str) -> tuple[str, ...]:
    """Every plugin name listed, the specific pmix versions (pmix_v4) included, in order."""
    names: list[str] = []
    for line in text.splitlines():
        versions = _VERSIONS.search(line)
        if versions:
            names += [v for v in re.split(r"[,\s]+", versions.group(1)) if v]
            continue
        match = _TYPE.match(line)
        if match and "types" not in line:
            names.append(match.group(1) or match.group(2))
    return tuple(dict.fromkeys(names))
