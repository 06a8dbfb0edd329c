"""The one place a tool name becomes the words that run it on a node: the tenant's copy where pinned.

Every probe that runs a pinnable tool (config/tool_pins.py's ``TENANT_TOOLS``) writes
``node.tool("iperf3")`` where it would write ``iperf3``. Without ``tools:`` in the inventory that is
the name, found on the node's PATH (the provider's file). With a pin it is :func:`clean_command`
of the copy the run uploaded to a fresh directory of its own on that node and verified there:

    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin sh -c '<check the SHA-256 again>; exec "$0" "$@"' /tmp/.pytest-fabric-<run>.XXXXXX/iperf3 <sha256>

so the node's PATH (a wrapper earlier on it), ``LD_PRELOAD`` and the rest of the session's
environment never reach the tool, and a file changed after the upload is refused (exit 126) rather
than run. What it cannot stop (the commands around the tool are the node's: ``sh``, ``env``,
``sha256sum``, ``numactl``, the kernel; a dynamically linked tool loads the node's libraries) is in
docs/security.md.

The upload is once per node per run, through the run's ``once`` (``ONCE_KIND``): the first check
that runs a pinned tool on a node (preflight, in the software layer's first wave) uploads every
pinned tool there; an upload or a verification that failed is kept and raised to every later check
of that node. The work itself (commands, upload, verification, removal) is the probes'
(``probes/tool_upload.py``), handed in as ``install`` and ``remove``: this module only routes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_fabric.config.tool_pins import PinnedTool
from pytest_fabric.parsers.tool_identity import ToolIdentity
from pytest_fabric.run.once import Once
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill

__all__ = ["CLEAN_PATH", "ONCE_KIND", "REFUSED_EXIT", "InstalledTool", "NodeTools", "TenantTools", "clean_command"]

#: the only environment a tenant's tool gets: no LD_PRELOAD, LD_LIBRARY_PATH, or /usr/local/bin
CLEAN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
ONCE_KIND = "tenant tools"
#: the exit status of a pinned tool refused because its file no longer has its SHA-256
REFUSED_EXIT = 126
#: what a refused run prints first on stderr, so a probe's error shows the cause
REFUSED_MARK = "pytest-fabric: refused to run"

# Shell syntax owned here; the path and the hash arrive quoted by fill(). "$0" is the tool, "$1" its hash.
_CHECKED_EXEC = (
    'h=$(sha256sum -- "$0" 2>/dev/null) && [ "${h%% *}" = "$1" ] || '
    '{ printf "%s %s on %s: its SHA-256 is now %s, not the pinned %s\\n" '
    f"'{REFUSED_MARK}' \"$0\" \"$(uname -n)\" \"${{h%% *}}\" \"$1\" >&2; exit {REFUSED_EXIT}; }}; "
    'shift; exec "$0" "$@"'
)


def clean_command(path: str, sha256: str) -> str:
    """The words that run the file at ``path`` (absolute, on the node) with a clean environment, once its
    SHA-256 is checked again; the tool's own arguments follow them."""
    if not path.startswith("/"):
        raise ValueError(f"{path!r}: a tenant's tool runs by its absolute path")
    return fill("env -i PATH={path_var} sh -c {script} {tool} {sha}",
                path_var=CLEAN_PATH, script=_CHECKED_EXEC, tool=path, sha=sha256)


@dataclass(frozen=True)
class InstalledTool:
    """A pinned tool as it is on one node: where it was uploaded and what the node's listing said of it."""

    pin: PinnedTool
    path: str  # absolute, on the node
    #: the tool identity listing of the uploaded file, run on the node after the upload
    identity: ToolIdentity
    #: that listing's command and output (the evidence), and the node's /etc/ld.so.preload lines it read
    listing: CommandResult
    ld_so_preload: tuple[str, ...] = ()

    @property
    def verified(self) -> bool:
        return self.identity.sha256 == self.pin.sha256

    @property
    def command(self) -> str:
        return clean_command(self.path, self.pin.sha256)


@dataclass(frozen=True)
class NodeTools:
    """Every pinned tool on one node: the run's directory there and each tool in it."""

    node: str
    directory: str
    tools: dict[str, InstalledTool]
    evidence: tuple[CommandResult, ...] = ()
    #: what looks wrong on the node beside the files (``/etc/ld.so.preload``), and old runs' directories removed
    notes: tuple[str, ...] = field(default=())


class TenantTools:
    """The run's pinned tools: routes a tool name to the node's verified copy, uploading it on first use."""

    def __init__(
        self,
        pins: Sequence[PinnedTool],
        *,
        once: Callable[[], Once],
        install: Callable[[str], NodeTools],
        remove: Callable[[NodeTools], list[str]],
    ) -> None:
        self.pins = {pin.name: pin for pin in pins}
        self._once = once  # the run's: a soak gives each cycle a new one
        self._install = install
        self._remove = remove
        self._lock = threading.Lock()
        self._made: list[NodeTools] = []  # every node's directory, in every cycle: removed at the end

    def on(self, node: str) -> NodeTools:
        """``node``'s pinned tools, uploaded and verified by the first asker; its error raised to every later one."""
        return self._once().get(ONCE_KIND, node, lambda: self._installed(node))

    def _installed(self, node: str) -> NodeTools:
        made = self._install(node)
        with self._lock:
            self._made.append(made)
        return made

    def installed(self, node: str, name: str) -> InstalledTool | None:
        """The verified copy of ``name`` on ``node`` (uploading now if need be); None where it is not pinned."""
        if name not in self.pins:
            return None
        return self.on(node).tools[name]

    def command(self, node: str, name: str) -> str:
        """The words that run tool ``name`` on ``node``: its pinned copy, else the name."""
        tool = self.installed(node, name)
        return name if tool is None else tool.command

    def remove_all(
        self, fan_out: Callable[[list[NodeTools], Callable[[NodeTools], list[str]]], list[list[str]]]
    ) -> tuple[list[str], list[str]]:
        """Check every uploaded file again and remove the run's directories (``fan_out`` runs ``remove`` on
        each node's): the nodes done, and what ``remove`` said (a file that changed during the run, a
        node's /etc/ld.so.preload, a dead run's directory the upload removed), one line each."""
        with self._lock:
            made, self._made = list(self._made), []
        changed = [line for lines in fan_out(made, self._remove) for line in lines]
        return sorted({m.node for m in made}), changed
