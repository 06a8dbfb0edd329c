"""The tenant's pinned tools on a node: upload them to a fresh directory of the run's, verify them there, remove them.

:func:`install` (once per node per run, through ``run/tenant_tools.py``):

1. a fresh directory ``/tmp/.pytest-fabric-<run>.XXXXXX`` (``mktemp -d``: mode 0700, the SSH user's),
   marked as the run's, what a dead run left under ``/tmp`` removed first (``probes/leftovers.py``,
   through ``storage.workdir_for``, the same directories the fio checks make);
2. each pinned file copied there through the transport's file upload (SFTP over SSH), mode 0700;
3. on the node, with a clean environment: the directory's mode and owner, and the tool identity
   listing (``probes/tool_identity.py``) of each uploaded file: its SHA-256 as the node reads it,
   ELF magic, build id, and ``/etc/ld.so.preload``. A hash that is not the pinned one means the
   node changed (or did not keep) the file: the directory is removed and the error, naming the
   node, both hashes and the file, is kept for every check of that node.

:func:`remove` (at the end of the run) reads each file's SHA-256 again (a node that swapped the file
during the run is named) and removes the directory.
"""

from __future__ import annotations

import dataclasses

from pytest_fabric.config.tool_pins import PinnedTool
from pytest_fabric.parsers import tool_identity as identity_parser
from pytest_fabric.probes import storage
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.probes.tool_identity import identity_command
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.tenant_tools import CLEAN_PATH, InstalledTool, NodeTools
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill

__all__ = ["PARENT", "install", "remove"]

#: where each node's directory is made: every node has it, sticky, and mktemp's 0700 keeps others out
PARENT = "/tmp"
#: bytes a second an upload is given at least (a slow bastion), on top of a minute
_UPLOAD_RATE = 1 << 20
_SUM = "@@sum"


def _clean(script: str) -> str:
    """``script`` run by sh with a clean environment: the session's PATH and LD_PRELOAD do not reach it."""
    return fill("env -i PATH={path} sh -c {script}", path=CLEAN_PATH, script=script)


def install(node: NodeHandle, pins: tuple[PinnedTool, ...]) -> NodeTools:
    """Upload every pin to a fresh directory on ``node`` and verify it there (see the module)."""
    directory, evidence, removed = storage.workdir_for(node, PARENT)
    if not directory.startswith(f"{PARENT}/") or "\n" in directory:
        raise MeasurementError(node.name, f"mktemp -d under {PARENT} printed {directory!r}, not a directory there",
                               command=evidence[0].command, fix=f"check that {PARENT} exists and can be written")
    try:
        return _install_in(node, pins, directory, list(evidence), tuple(removed))
    except BaseException:
        _remove_directory(node, directory)
        raise


def _install_in(node: NodeHandle, pins: tuple[PinnedTool, ...], directory: str, evidence: list[CommandResult],
                notes: tuple[str, ...]) -> NodeTools:
    paths = {pin.name: f"{directory}/{pin.name}" for pin in pins}
    for pin in pins:
        node.put_file(pin.source, paths[pin.name], mode=0o700, timeout=60 + pin.size / _UPLOAD_RATE)
    check = fill("stat -c '@@dir %a %U' -- {d} >&2; id -un >&2; "
                 "findmnt -n -o OPTIONS -T {d} 2>/dev/null | sed 's/^/@@options /' >&2; ", d=directory)
    result = node.run(check + _clean(identity_command(paths.values())), timeout=60, check=False)
    evidence.append(result)
    listing = parse_or_raise(identity_parser.parse, result,
                             fix="run the tool identity listing by hand on the node; a login shell that prints text breaks it")
    _check_directory(node, directory, result)
    tools: dict[str, InstalledTool] = {}
    for pin in pins:
        found = listing.tools.get(paths[pin.name])
        got = found.sha256 if found is not None else None
        if found is None or got != pin.sha256:
            raise MeasurementError(
                node.name,
                f"the tenant's {pin.name}, uploaded to {paths[pin.name]}, has sha256 {got or 'unreadable'} on "
                f"{node.name}, not the pinned {pin.sha256} ({pin.source}): the node changed the file after the "
                "upload, or did not keep it",
                command=f"sha256sum -- {paths[pin.name]} (in the tool identity listing, after the upload)",
                fix=f"do not trust measurements of {node.name}: a file the run uploaded was not kept as sent; ask the "
                "provider why, and measure the other nodes",
            )
        identity = dataclasses.replace(found, name=pin.name, supplied_by="tenant", pinned_sha256=pin.sha256)
        tools[pin.name] = InstalledTool(pin, paths[pin.name], identity, result, listing.ld_so_preload)
    if listing.ld_so_preload:
        notes += (f"/etc/ld.so.preload on {node.name} loads {', '.join(listing.ld_so_preload)} into every process, "
                  "the tenant's tools too (a clean environment does not clear it)",)
    return NodeTools(node.name, directory, tools, tuple(evidence), notes)


def _check_directory(node: NodeHandle, directory: str, result: CommandResult) -> None:
    """The directory is 0700 and the SSH user's: nobody but that user (and root) can put a file into it."""
    lines = result.stderr.splitlines()
    said = next((line.split()[1:] for line in lines if line.startswith("@@dir ")), [])
    me = next((line.strip() for line in lines if line.strip() and not line.startswith("@@")), "")
    if len(said) != 2 or said[0] != "700" or said[1] != me:
        raise MeasurementError(
            node.name, f"the run's directory {directory} is mode {said[0] if said else '?'} owned by "
            f"{said[1] if len(said) > 1 else '?'}, not 700 owned by {me or 'the SSH user'}: another user could "
            "replace the tenant's tools in it", command=result.command,
            fix=f"check {PARENT} on {node.name} (mktemp -d makes 0700 directories of the user who runs it)",
        )
    options = next((line.split()[1] for line in lines if line.startswith("@@options ") and len(line.split()) > 1), "")
    if "noexec" in options.split(","):
        raise MeasurementError(
            node.name, f"{PARENT} on {node.name} is mounted noexec ({options}): the tenant's tools cannot run from "
            f"{directory}", command=result.command,
            fix=f"mount {PARENT} without noexec on {node.name}, or remove tools: from the inventory to run the "
            "node's own tools",
        )


def _remove_directory(node: NodeHandle, directory: str) -> CommandResult | None:
    try:
        return node.run(fill("rm -rf -- {d}", d=directory), timeout=30, check=False, cleanup=True)
    except Exception:  # noqa: BLE001 - best effort: the next run removes what is left (leftovers.py)
        return None


def remove(node: NodeHandle, made: NodeTools) -> list[str]:
    """Read each uploaded file's SHA-256 once more, then remove the run's directory on ``node``.

    What to say of the node, one line each: what the upload found beside the files (an
    ``/etc/ld.so.preload``, a dead run's directory removed), then each tool that changed during the run.
    """
    sums = "; ".join(
        fill("h=$(sha256sum -- {p} 2>/dev/null) || h=-; printf '" + _SUM + "\\t%s\\t%s\\n' {name} \"${{h%% *}}\"",
             p=tool.path, name=name)
        for name, tool in sorted(made.tools.items())
    )
    command = _clean(sums + "; " + fill("rm -rf -- {d}", d=made.directory))
    try:
        result = node.run(command, timeout=60, check=False, cleanup=True)
    except Exception as exc:  # noqa: BLE001 - the run is ending; say it, the next run removes the directory
        return [*made.notes,
                f"{node.name}: the tenant's tools in {made.directory} could not be checked again or removed: {exc}"]
    read = dict(line.split("\t")[1:3] for line in result.stdout.splitlines()
                if line.startswith(_SUM + "\t") and line.count("\t") == 2)
    out = list(made.notes)
    for name, tool in sorted(made.tools.items()):
        got = read.get(name, "-")
        if got != tool.pin.sha256:
            out.append(f"{node.name}: the tenant's {name} ({tool.path}) had sha256 {got if got != '-' else 'unreadable'} "
                       f"at the end of the run, not the pinned {tool.pin.sha256}: it changed on the node during the run")
    return out
