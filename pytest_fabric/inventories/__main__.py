"""``python -m pytest_fabric.inventories NAME DEST``: an editable copy of a bundled inventory.

A bundled inventory (``--cluster slurm``, ``--cluster local``) lives inside the installed package;
checks it gives nothing to measure (no mounts, no egress targets, no leaf labels) are named at the
start of a run with this command, never with the package's own file. The copy is the bundled file
with the sections it lacks written out, commented, to fill in; then ``--cluster DEST``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_fabric.config.bundled import bundled_inventories, inventories_dir

_SECTIONS = """
# What the bundled file leaves out: fill in what the profile's checks need, then run with
# --cluster {dest}
# storage:                       # storage.* checks: the filesystems jobs read and write
#   mounts:
#     - {{path: /scratch, shared: true}}
# egress:                        # egress.* checks: what nodes reach outside the cluster
#   targets: [https://mirror.example.com/100MB.bin, pypi.org:443]
# nodes:                         # each node's leaf switch (oversubscription), and the address it is sent
#                                # data at where its name does not resolve on the controller
#   - {{name: gpu001, data_address: 10.0.0.1, labels: {{leaf: leaf1}}}}
#   - {{name: gpu002, data_address: 10.0.0.2, labels: {{leaf: leaf2}}}}
"""


def main(argv: list[str] | None = None) -> int:
    """Write the copy; exit 0, or 2 with what to give."""
    args = list(sys.argv[1:] if argv is None else argv)
    names = bundled_inventories()
    if len(args) != 2 or args[0] not in names:
        print(f"usage: python -m pytest_fabric.inventories NAME DEST.yaml  (NAME: {', '.join(names)})", file=sys.stderr)
        return 2
    name, dest = args[0], Path(args[1])
    if dest.exists():
        print(f"{dest} exists: give another name, or remove it first", file=sys.stderr)
        return 2
    text = (inventories_dir() / f"{name}.yaml").read_text()
    dest.write_text(text.rstrip("\n") + "\n" + _SECTIONS.format(dest=dest))
    print(f"wrote {dest}: a copy of the bundled inventory {name!r} to edit; run with --cluster {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
