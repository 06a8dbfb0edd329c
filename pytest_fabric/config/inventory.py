"""The inventory: which nodes, how to reach them, what storage and egress to test.

See docs/inventory.md.  ``load_inventory(path)`` returns an
:class:`Inventory` of resolved :class:`Node` objects (hostlists expanded,
defaults applied) or raises :class:`~pytest_fabric.config.yamlsource.SourceError`
naming the file, the line and the field.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from pytest_fabric.config import hostlist, yamlsource
from pytest_fabric.config.rdma_ports import rdma_port_names
from pytest_fabric.config.tool_pins import PinnedTool, ToolPinEntry, check_tool_name, resolve_pins
from pytest_fabric.config.units import Dimension, QuantityError, parse_quantity
from pytest_fabric.config.yamlsource import SourceError
from pytest_fabric.transport.slurm.settings import (
    NoAllocationError,
    SlurmSection,
    SlurmSettings,
    current_allocation,
    settings_from,
)

__all__ = [
    "DEFAULT_EGRESS_CONCURRENCY",
    "Inventory",
    "Mount",
    "Node",
    "load_inventory",
    "with_data_addresses",
    "LOCAL_HOSTS",
    "SHARED_FSTYPES",
]

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

# What may reach a shell or an ssh command line.  Anything else (spaces, quotes,
# ';', '$', backticks) is refused when the inventory loads, not quoted later.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
# A leading ':' is for IPv6 (::1); a leading '-' would read as an ssh option.
_HOST_RE = re.compile(r"^[A-Za-z0-9:][A-Za-z0-9._:%-]{0,252}$")
_USER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9._-]{0,31}$")
_PATH_RE = re.compile(r"^[A-Za-z0-9._/@+~=,-]+$")
_LABEL_RE = re.compile(r"^[A-Za-z0-9._-]+$")
# A filesystem type as findmnt prints it (xfs, nfs4, lustre, fuse.sshfs) and one mount option
# (`ro`, `proto=rdma`, `addr=10.0.0.1`): they reach a shell only quoted, but are checked here.
_FSTYPE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_MOUNT_OPTION_RE = re.compile(r"^[A-Za-z0-9_.-]+(?:=[A-Za-z0-9_.:/@+-]+)?$")

#: filesystems every node sees as one: aggregate_write runs on these, or on a mount written `shared: true`.
#: Network and parallel filesystems as findmnt names them (the kernel's ceph client is ``ceph``; GlusterFS
#: and ceph-fuse mount through FUSE), and the cluster filesystems of one block device under many nodes
#: (gfs2, ocfs2). Not 9p or virtiofs: a VM's host directory, node-local or shared as the host's is.
SHARED_FSTYPES = frozenset({
    "nfs", "nfs4", "lustre", "gpfs", "beegfs", "cephfs", "ceph", "fuse.ceph-fuse", "wekafs", "glusterfs",
    "fuse.glusterfs", "cifs", "smb3", "gfs2", "ocfs2",
})


def _check_host(value: str) -> str:
    if not _HOST_RE.match(value):
        raise ValueError(f"{value!r} is not a hostname or IP address")
    return value


def _check_path(value: str, what: str) -> str:
    if not _PATH_RE.match(value):
        raise ValueError(f"{value!r} is not a usable {what} (letters, digits and ._/@+~=,- only)")
    return value


def _seconds(value: Any) -> Any:
    """``10``, ``10 s`` or ``500 ms`` -> seconds; anything else says what to write."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration; {_DURATION_HINT}")
    if isinstance(value, str):
        try:
            value = float(parse_quantity(value, dimension=Dimension.TIME if not _is_number(value) else None).value)
        except QuantityError:
            raise ValueError(f"{value!r} is not a duration; {_DURATION_HINT}") from None
    if isinstance(value, (int, float)) and not 0 < value <= 600:
        raise ValueError(f"connect_timeout is {value:g} s; give more than 0 and at most 600 s")
    return value


_DURATION_HINT = "write seconds (10) or a duration with its unit (10 s, 500 ms)"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_Seconds = Annotated[float, BeforeValidator(_seconds)]


class _Connection(BaseModel):
    """Connection settings shared by `defaults:` and each node entry."""

    model_config = ConfigDict(extra="forbid")

    user: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    identity_file: str | None = None
    connect_timeout: _Seconds | None = None
    max_sessions: int | None = Field(default=None, ge=1, le=1000)  # the node sshd's MaxSessions
    known_hosts: str | None = None
    jump: str | None = None
    transport: Literal["ssh", "local", "slurm"] | None = None

    @field_validator("user")
    @classmethod
    def _user(cls, value: str | None) -> str | None:
        if value is not None and not _USER_RE.match(value):
            raise ValueError(f"{value!r} is not a user name")
        return value

    @field_validator("identity_file", "known_hosts")
    @classmethod
    def _file(cls, value: str | None) -> str | None:
        return None if value is None else _check_path(value, "file path")

    @field_validator("jump")
    @classmethod
    def _jump(cls, value: str | None) -> str | None:
        if value is None:
            return None
        for hop in value.split(","):  # [user@]host[:port], each hop of a chain
            user, _, hostport = hop.rpartition("@")
            host, _, port = hostport.partition(":")
            if (user and not _USER_RE.match(user)) or not _HOST_RE.match(host) or (port and not port.isdigit()):
                raise ValueError(
                    f"{value!r} is not a jump host: write [user@]host[:port] (several: comma-separated), "
                    "the user and host in letters, digits and ._-"
                )
        return value


class _NodeEntry(_Connection):
    name: str
    host: str | None = None
    data_address: str | None = None  # where data-plane traffic (iperf3) goes, if not `host`
    labels: dict[str, str | int] = Field(default_factory=dict)  # `rack: 3` is a label too
    # The RDMA ports the node must have, by name (mlx5_0 or mlx5_0/1): subjects then
    # read node:mlx5_0/1 instead of node:port0, and a missing one is named.
    rdma_ports: list[str] = Field(default_factory=list)

    @field_validator("rdma_ports")
    @classmethod
    def _rdma_ports(cls, value: list[str]) -> list[str]:
        return rdma_port_names(value, twice="an RDMA port is listed twice")

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str | int]) -> dict[str, str]:
        for key, label in value.items():
            if not _LABEL_RE.match(str(key)) or not _LABEL_RE.match(str(label)):
                raise ValueError(f"label {key}: {label} may use only letters, digits and ._-")
        return {str(k): str(v) for k, v in value.items()}


def _check_mount(mount: str) -> str:
    if not mount.startswith("/"):
        raise ValueError(f"{mount!r}: a mount must be an absolute path")
    return _check_path(mount, "mount path")


#: what curl would read as a list of URLs ([1-3], {a,b}): one target must be one transfer
_GLOB_CHARACTERS = "[]{}"


def _check_target(target: str) -> str:
    if any(c in target for c in " '\"`$;\\|&<>") or any(ord(c) < 0x21 or 0x7F <= ord(c) <= 0x9F for c in target):
        raise ValueError(f"{target!r}: contains characters a URL does not need")
    try:
        parts = urlsplit(target if "://" in target else f"tcp://{target}")
        scheme, hostname = parts.scheme, parts.hostname
    except ValueError:  # urlsplit refuses some malformed netlocs (unbalanced '[', bad port)
        scheme, hostname = "", None
    if scheme not in ("http", "https", "tcp") or not hostname:
        raise ValueError(f"{target!r}: write a URL (https://host/file) or host:port")
    _check_host(hostname)
    # Brackets are allowed only around an IPv6 host (http://[::1]:8080/x).
    beyond_host = re.sub(r"^([a-z]+://)?\[[0-9A-Fa-f:.%]+\]", "", target)
    glob = sorted({c for c in beyond_host if c in _GLOB_CHARACTERS})
    if glob:
        encoded = ", ".join(f"{c} as %{ord(c):02X}" for c in glob)
        raise ValueError(
            f"{target!r}: {' '.join(glob)} would make curl fetch a list of URLs, not this one; "
            f"percent-encode them ({encoded})"
        )
    return target


# Validated one item at a time, so an error points at the line of that item.
_MountPath = Annotated[str, AfterValidator(_check_mount)]
_Target = Annotated[str, AfterValidator(_check_target)]


class _MountEntry(BaseModel):
    """One mount: ``/scratch``, or ``{path: /data, fstype: nfs4, options: [proto=rdma], shared: true}``."""

    model_config = ConfigDict(extra="forbid")
    path: _MountPath
    fstype: str | None = None  # as findmnt prints it; the mount check fails another type
    options: list[str] = Field(default_factory=list)  # each must be among the mounted options
    shared: bool | None = None  # every node sees the same files; default: from fstype

    @field_validator("fstype")
    @classmethod
    def _fstype(cls, value: str | None) -> str | None:
        if value is not None and not _FSTYPE_RE.match(value):
            raise ValueError(f"{value!r} is not a filesystem type as findmnt prints it (xfs, nfs4, lustre, fuse.sshfs)")
        return value

    @field_validator("options")
    @classmethod
    def _options(cls, value: list[str]) -> list[str]:
        for option in value:
            if not _MOUNT_OPTION_RE.match(option):
                raise ValueError(f"{option!r} is not a mount option; write one per item, e.g. [proto=rdma, ro]")
        return value


def _mount_entry(value: Any) -> Any:
    # A plain path stays the usual form; checked here so an error points at the item itself.
    return {"path": _check_mount(value)} if isinstance(value, str) else value


_MountItem = Annotated[_MountEntry, BeforeValidator(_mount_entry)]


class _Storage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mounts: list[_MountItem] = Field(default_factory=list)

    @field_validator("mounts")
    @classmethod
    def _mounts(cls, value: list[_MountEntry]) -> list[_MountEntry]:
        paths = [m.path for m in value]
        if len(set(paths)) != len(paths):
            raise ValueError("a mount is listed twice")
        return value


class _TargetEntry(BaseModel):
    """One egress target: ``{url: ..., upload: true}``; a plain string is ``{url: string}``."""

    model_config = ConfigDict(extra="forbid")
    url: _Target
    upload: bool = False  # the URL accepts an HTTP PUT, so the upload check may send to it


def _target_entry(value: Any) -> Any:
    # Plain strings stay the usual form; the mapping is only for what a string cannot say.
    # Checked here so an error points at the item itself (`egress.targets[0]`), not at `.url`.
    return {"url": _check_target(value)} if isinstance(value, str) else value


_TargetItem = Annotated[_TargetEntry, BeforeValidator(_target_entry)]
_ToolName = Annotated[str, AfterValidator(check_tool_name)]


#: downloads or uploads to one egress server at once when the inventory does not say: a handful,
#: as one well-behaved client opens (a download manager's parallel connections; pip and apt open
#: a few), since the whole site reaches a mirror from a few NAT addresses and a mirror that sees
#: 512 transfers at once from them throttles or bans the site, which would fail the run for the
#: mirror's policy, not the egress
DEFAULT_EGRESS_CONCURRENCY = 8


class _Egress(BaseModel):
    model_config = ConfigDict(extra="forbid")
    targets: list[_TargetItem] = Field(default_factory=list)
    #: at most this many nodes transfer to one target's server (host:port) at once
    concurrency: int = Field(default=DEFAULT_EGRESS_CONCURRENCY, ge=1, le=4096)


class _InventoryFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = "cluster"
    defaults: _Connection = Field(default_factory=_Connection)
    nodes: list[_NodeEntry] = Field(default_factory=list)  # may come from slurm: instead
    storage: _Storage = Field(default_factory=_Storage)
    egress: _Egress = Field(default_factory=_Egress)
    slurm: SlurmSection | None = None  # run through Slurm steps (transport/slurm/settings.py)
    #: the tenant's own binaries, uploaded to every node and run by absolute path (config/tool_pins.py)
    tools: dict[_ToolName, ToolPinEntry] = Field(default_factory=dict)

    @field_validator("nodes")
    @classmethod
    def _some_nodes(cls, value: list[_NodeEntry]) -> list[_NodeEntry]:
        if not value:
            raise ValueError("list at least one node")
        return value


@dataclass(frozen=True)
class Node:
    """One node, everything resolved: how to reach it and what it is."""

    name: str
    host: str
    port: int | None = None  # None: what ~/.ssh/config says, else 22
    user: str | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    connect_timeout: float = 10.0
    max_sessions: int = 10  # sshd's MaxSessions (OpenSSH default 10): sessions per connection
    jump: str | None = None
    transport: Literal["ssh", "local", "slurm"] = "ssh"
    data_address: str = ""
    rdma_ports: tuple[str, ...] = ()  # DEVICE/PORT names the inventory requires, if it lists them
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def address(self) -> str:
        """Where other nodes send data-plane traffic to this node."""
        return self.data_address or self.host


@dataclass(frozen=True)
class Mount:
    """A mount the storage layer tests, as the inventory states it."""

    path: str
    fstype: str | None = None  # None: any type will do
    options: tuple[str, ...] = ()  # each must be mounted (``proto=rdma``, ``ro``)
    shared: bool | None = None  # as written; None: decided by the filesystem type

    def is_shared(self, mounted_fstype: str | None = None) -> bool:
        """Whether every node sees the same files here: ``shared:`` if written, else by type."""
        if self.shared is not None:
            return self.shared
        return (self.fstype or mounted_fstype or "") in SHARED_FSTYPES


@dataclass(frozen=True)
class Inventory:
    name: str
    path: Path
    nodes: tuple[Node, ...]
    mounts: tuple[str, ...]  # the mount paths, in inventory order
    egress_targets: tuple[str, ...]
    #: the egress targets that accept uploads (``upload: true``), a subset of egress_targets
    upload_targets: tuple[str, ...] = ()
    #: what the inventory states about each mount (type, options, shared), in the order of ``mounts``
    mount_specs: tuple[Mount, ...] = ()
    #: how to get and use the Slurm allocation, when the inventory has a ``slurm:`` section
    slurm: SlurmSettings | None = None
    #: ``egress.concurrency``: downloads or uploads to one egress server at once, whatever the fan-out
    egress_concurrency: int = DEFAULT_EGRESS_CONCURRENCY
    #: the SHA-256 of the file as loaded: the record names what was judged, not only where it was
    sha256: str = ""
    #: ``tools:``: the tenant's binaries, checked against their pins at load (config/tool_pins.py)
    tools: tuple[PinnedTool, ...] = ()

    def tool(self, name: str) -> PinnedTool | None:
        """The tenant's pin of tool ``name``, if the inventory pins it."""
        return next((pin for pin in self.tools if pin.name == name), None)

    def mount(self, path: str) -> Mount:
        """What the inventory states about the mount at ``path`` (nothing, for one it does not list)."""
        for mount in self.mount_specs:
            if mount.path == path:
                return mount
        return Mount(path)

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(name)

    @property
    def node_names(self) -> list[str]:
        return [n.name for n in self.nodes]


def _known_fields(loc: tuple[Any, ...]) -> list[str]:
    model: type[BaseModel] = _InventoryFile
    if loc and loc[0] == "nodes":
        model = _NodeEntry
    elif len(loc) >= 3 and loc[:2] == ("egress", "targets"):
        model = _TargetEntry
    elif len(loc) >= 3 and loc[:2] == ("storage", "mounts"):
        model = _MountEntry
    elif loc and loc[0] == "slurm":
        model = SlurmSection
    elif len(loc) >= 2 and loc[0] == "tools":
        model = ToolPinEntry
    elif loc and loc[0] in ("defaults", "storage", "egress"):
        sections: dict[str, type[BaseModel]] = {"defaults": _Connection, "storage": _Storage, "egress": _Egress}
        model = sections[loc[0]]
    return list(model.model_fields)


def _expand_field(where: str, index: int, key: str, value: str) -> list[str]:
    try:
        return hostlist.expand(value)
    except hostlist.HostlistError as exc:
        raise SourceError(f"{where}: nodes[{index}].{key}: {exc}") from None


def _one_address_each(address: str, count: int) -> str:
    """A data_address nodeset giving ``count`` nodes one address each, starting at ``address``."""
    match = re.fullmatch(r"((?:\d{1,3}\.){3})(\d{1,3})", address)
    if match and int(match.group(2)) + count - 1 <= 255:
        first = int(match.group(2))
        return f"{match.group(1)}[{first}-{first + count - 1}]"
    return f"192.168.0.[1-{count}]"


def _expand_entry(
    source: str, line: int | None, index: int, entry: _NodeEntry
) -> list[tuple[str, str | None, str | None]]:
    # name, host and data_address pair by position: hostlist.expand keeps the order written,
    # where ClusterShell's NodeSet would sort (gpu[01-04],cpu[1-2] iterates cpu1 first).
    where = f"{source}:{line}" if line else source
    names = _expand_field(where, index, "name", entry.name)
    hosts: list[str | None] = [None] * len(names)
    if entry.host:
        hosts = list(_expand_field(where, index, "host", entry.host))
    if len(hosts) != len(names):
        raise SourceError(
            f"{where}: nodes[{index}]: name {entry.name!r} expands to {len(names)} nodes but host "
            f"{entry.host!r} to {len(hosts)}; they expand in step, so give both the same count"
        )
    addresses: list[str | None] = [None] * len(names)
    if entry.data_address:
        addresses = list(_expand_field(where, index, "data_address", entry.data_address))
        for address in addresses:  # what reaches iperf3's command line, checked as host is
            if not _HOST_RE.match(address or ""):
                raise SourceError(
                    f"{where}: nodes[{index}].data_address: {address!r} is not a hostname or IP address"
                )
    if len(addresses) == 1 and len(names) > 1:
        # iperf3 to one address from 16 nodes measures one node 16 times, never the other 15.
        raise SourceError(
            f"{where}: nodes[{index}].data_address: one address {entry.data_address!r} for the "
            f"{len(names)} nodes of {entry.name!r}; each node needs its own, so write a nodeset "
            f"that expands in step with name, e.g. {_one_address_each(addresses[0] or '', len(names))}"
        )
    if len(addresses) != len(names):
        raise SourceError(
            f"{where}: nodes[{index}]: name {entry.name!r} expands to {len(names)} nodes but data_address "
            f"{entry.data_address!r} to {len(addresses)}; they expand in step, so give both the same count"
        )
    for name in names:
        if not _NAME_RE.match(name):
            raise SourceError(f"{where}: nodes[{index}].name: {name!r} is not a node name (letters, digits, ._-)")
    for host in hosts:
        if host is not None and not _HOST_RE.match(host):
            raise SourceError(f"{where}: nodes[{index}].host: {host!r} is not a hostname or IP address")
    return list(zip(names, hosts, addresses))


def _written_as_text(loc: tuple[Any, ...]) -> bool:
    """The cluster's and the nodes' names and the labels (keys and values) are the text written:
    ``leaf: 010`` is the leaf "010", not the octal 8, and ``spine: no`` the spine "no", not False."""
    if loc == ("name",):
        return True
    if len(loc) == 3 and loc[0] == "tools" and loc[2] == "sha256":
        return True  # a hash of digits only (or 12e4...) is not a number to YAML here
    if len(loc) < 3 or loc[0] != "nodes" or not isinstance(loc[1], int):
        return False
    return (len(loc) == 3 and loc[2] == "name") or (len(loc) == 4 and loc[2] == "labels")


def load_inventory(path: Path | str) -> Inventory:
    """Load and resolve an inventory file; errors name the file, line and field, all of them at once."""
    path = Path(path)
    data, lines = yamlsource.load(path, as_written=_written_as_text)
    if not isinstance(data, dict):
        raise SourceError(f"{path}: an inventory is a mapping with at least `nodes:` (see the README)")
    try:
        parsed = _InventoryFile.model_validate(data)
    except ValidationError as exc:
        problems = yamlsource.describe_errors(str(path), exc, lines, known_fields=_known_fields).splitlines()
        # What is wrong elsewhere is said in the same run: the entries that are valid on their own
        # are still expanded and checked (hostlists, duplicates, key files).
        _, more = _resolve_nodes(path, lines, *_valid_parts(data), slurm=None)
        raise SourceError("\n".join(_by_line(problems + more))) from None

    slurm, job_id = _slurm_nodes(path, parsed, lines)
    nodes, problems = _resolve_nodes(path, lines, parsed.defaults, list(enumerate(parsed.nodes)), slurm=slurm)
    tools, tool_problems = resolve_pins(path, lines, parsed.tools)
    problems += tool_problems + _tools_through_slurm(path, lines, parsed.tools, nodes)
    if problems:
        raise SourceError("\n".join(_by_line(problems)))
    return Inventory(
        name=parsed.name,
        path=path,
        nodes=tuple(nodes),
        mounts=tuple(m.path for m in parsed.storage.mounts),
        egress_targets=tuple(t.url for t in parsed.egress.targets),
        upload_targets=tuple(t.url for t in parsed.egress.targets if t.upload),
        mount_specs=tuple(
            Mount(m.path, m.fstype, tuple(m.options), m.shared) for m in parsed.storage.mounts
        ),
        slurm=settings_from(slurm, job_id) if slurm is not None else None,
        egress_concurrency=parsed.egress.concurrency,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        tools=tools,
    )


def _tools_through_slurm(path: Path, lines: dict[Any, int], tools: dict[str, ToolPinEntry], nodes: list[Node]) -> list[str]:
    """Pinned tools cannot reach a node run through Slurm steps: refused at load, with the way that works.

    sbcast writes one path on every node of the job, and a shared directory is the provider's
    filesystem: neither is a fresh directory of the run's own on each node.
    """
    slurm = [n.name for n in nodes if n.transport == "slurm"]
    if not tools or not slurm:
        return []
    line = yamlsource.line_of(lines, ("tools",))
    return [
        f"{path}:{line}: tools: the pinned tools cannot be uploaded to {hostlist.fold(slurm)}, reached through Slurm "
        "job steps (the Slurm transport has no file upload); reach those nodes over SSH (transport: ssh, and no "
        "slurm: section) to run your own binaries, or remove tools: to run the provider's"
    ]


def with_data_addresses(inventory: Inventory, hostname: Callable[[str], str]) -> Inventory:
    """The inventory with each SSH node's data address set to what SSH connects to.

    ``hostname`` maps a host to the HostName ssh_config gives it: a node written by its alias
    (``nu2``) is sent data at ``10.0.0.2``, as SSH reaches it.  A ``data_address`` written in the
    inventory stays.
    """
    nodes = []
    for node in inventory.nodes:
        if node.transport == "ssh" and not node.data_address:
            connected = hostname(node.host)
            if connected != node.host:
                node = replace(node, data_address=connected)
        nodes.append(node)
    return replace(inventory, nodes=tuple(nodes))


def _valid_parts(data: dict[str, Any]) -> tuple[_Connection, list[tuple[int, _NodeEntry]]]:
    """The defaults (empty if they are wrong) and each node entry that is valid on its own."""
    try:
        defaults = _Connection.model_validate(data.get("defaults") or {})
    except ValidationError:
        defaults = _Connection()
    entries = []
    raw = data.get("nodes")
    for index, item in enumerate(raw if isinstance(raw, list) else []):
        try:
            entries.append((index, _NodeEntry.model_validate(item)))
        except ValidationError:
            continue
    return defaults, entries


def _by_line(problems: list[str]) -> list[str]:
    """Problems in the order of the file (``inv.yaml:12: ...``), each once."""
    def line(problem: str) -> int:
        match = re.match(r"^.*?:(\d+): ", problem)
        return int(match.group(1)) if match else 0

    return sorted(dict.fromkeys(problems), key=line)


_KEY_HINT = "give the private key ssh logs in with (ssh -i), e.g. ~/.ssh/id_ed25519"


def _resolve_nodes(
    path: Path,
    lines: dict[Any, int],
    defaults: _Connection,
    entries: list[tuple[int, _NodeEntry]],
    *,
    slurm: SlurmSection | None,
) -> tuple[list[Node], list[str]]:
    """Expand the node entries and apply the defaults; return the nodes and every problem found."""
    nodes: list[Node] = []
    problems: list[str] = []
    seen: dict[str, int | None] = {}
    machines: dict[tuple[str, str], tuple[str, int | None]] = {}  # (what, where) -> the first node there, its line
    for index, entry in entries:
        line = lines.get(("nodes", index))
        try:
            expanded = _expand_entry(str(path), line, index, entry)
        except SourceError as exc:
            problems.append(str(exc))
            continue
        twice: dict[int | None, list[str]] = {}  # first line -> names this entry repeats
        for name, host, address in expanded:
            if name in seen:
                twice.setdefault(seen[name], []).append(name)
                continue
            seen[name] = line
            resolved_host = host or name

            # entry bound as a default: ruff B023 cannot see that pick is only called in this pass
            def pick(key: str, fallback: Any, entry: _NodeEntry = entry) -> Any:
                own = getattr(entry, key)
                if own is not None:
                    return own
                common = getattr(defaults, key)
                return common if common is not None else fallback

            transport = pick("transport", None) or (
                "slurm" if slurm is not None else "local" if resolved_host in LOCAL_HOSTS else "ssh"
            )
            node = Node(
                name=name,
                host=resolved_host,
                port=pick("port", None),
                user=pick("user", None),
                identity_file=pick("identity_file", None),
                known_hosts=pick("known_hosts", None),
                connect_timeout=float(pick("connect_timeout", 10.0)),
                max_sessions=int(pick("max_sessions", 10)),
                jump=pick("jump", None),
                transport="local" if transport == "local" else "slurm" if transport == "slurm" else "ssh",
                data_address=address or "",
                rdma_ports=tuple(entry.rdma_ports),
                labels={k: str(v) for k, v in entry.labels.items()},
            )
            if node.transport == "ssh" and node.identity_file:
                problem = _missing_key(path, lines, index, entry, node.identity_file)
                if problem:
                    problems.append(problem)
            problem = _same_machine(node, line, machines)
            if problem:
                problems.append(f"{path}:{line}: nodes[{index}]: {problem}")
            nodes.append(node)
        for first, names in twice.items():
            what = f"node {names[0]!r} is" if len(names) == 1 else f"nodes {hostlist.fold(names)} are"
            problems.append(
                f"{path}:{line}: nodes[{index}]: {what} listed twice" + (f" (first on line {first})" if first else "")
            )
    return nodes, problems


def _same_machine(node: Node, line: int | None, machines: dict[tuple[str, str], tuple[str, int | None]]) -> str | None:
    """Why ``node`` is a machine another name already lists (its SSH endpoint or its data address), if it is.

    A pair of one machine under two names is measured against itself: its loopback passed a TCP
    floor above the link's line rate. Local nodes are this machine by definition (trying the suite
    out), and one host on two ports is two sshds; the host key seen at connect catches the rest.
    """
    found = []
    if node.transport == "ssh":
        found.append((("endpoint", f"{node.host.lower()}:{node.port or 22}"), f"is {node.host} port {node.port or 22}"))
    if node.data_address:
        found.append((("data", node.data_address.lower()), f"sends and receives data at {node.data_address}"))
    for key, what in found:
        first = machines.setdefault(key, (node.name, line))
        if first[0] != node.name:
            at = f" (line {first[1]})" if first[1] else ""
            return (f"node {node.name!r} {what}, as node {first[0]!r}{at}: one machine listed twice would be "
                    "measured against itself; list each machine once")
    return None


def _missing_key(path: Path, lines: dict[Any, int], index: int, entry: _NodeEntry, key: str) -> str | None:
    """An identity_file that is not a readable file, named where it was written (the node's or `defaults:`)."""
    expanded = Path(key).expanduser()
    if expanded.is_file() and os.access(expanded, os.R_OK):
        return None
    loc: tuple[Any, ...] = ("nodes", index, "identity_file") if entry.identity_file is not None else ("defaults", "identity_file")
    line = yamlsource.line_of(lines, loc)
    where = f"{path}:{line}" if line else str(path)
    what = "no such file" if not expanded.exists() else "not a file" if not expanded.is_file() else "cannot be read"
    shown = key if str(expanded) == key else f"{key} ({expanded})"
    return f"{where}: {yamlsource.path_text(loc)}: {shown}: {what}; {_KEY_HINT}"


def _slurm_nodes(
    path: Path, parsed: _InventoryFile, lines: dict[Any, int]
) -> tuple[SlurmSection | None, str | None]:
    """The slurm: section and the job to run in; fills ``parsed.nodes`` from it when none are listed."""
    slurm = parsed.slurm
    where = f"{path}:{lines.get(('slurm',))}" if lines.get(("slurm",)) else str(path)
    job_id: str | None = None
    if slurm is not None and slurm.allocation == "current":
        try:
            job_id, nodelist = current_allocation()
        except NoAllocationError as exc:
            raise SourceError(f"{where}: slurm.allocation: current: {exc}") from None
        if not parsed.nodes:
            parsed.nodes = [_NodeEntry(name=nodelist)]
    elif slurm is not None and slurm.nodes and not parsed.nodes:
        parsed.nodes = [_NodeEntry(name=slurm.nodes)]
    if not parsed.nodes:
        raise SourceError(
            f"{path}:1: nodes: required but missing"
            + ("; or give slurm.nodes (a nodeset such as gpu[001-128])" if slurm is not None else "")
        )
    return slurm, job_id
