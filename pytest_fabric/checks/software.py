"""The software layer (``software.*``): preflight before any measurement, and one software stack on
every node: settings, declarations and fixtures.

Per node, each in a wave over every node (the first test of a check reads all nodes at once):
``preflight`` (the tools the profile's checks run, GPUs and HCAs visible), ``gpudirect``
(nvidia_peermem or dma-buf), ``memlock`` (``ulimit -l``), ``pcie_acs`` (ACS redirection off
above GPUs and NICs), all judged on one reading per node (:mod:`~pytest_fabric.probes.preflight`);
``min_versions`` judges the node's stack (:mod:`~pytest_fabric.probes.software`) against the
profile's pins. Once for the cluster: ``software_consistency`` compares every node's stack and
names the nodes that differ from the majority.

A node that preflight found without a tool makes every later check that runs the tool there
error at once, with that cause and the package to install, instead of each check finding out
by itself (``pytest_runtest_setup`` below).  The family registers its checks through
``pytest_fabric_checks``, as an extension does.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import pytest
from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from pytest_fabric.checks.base import Check
from pytest_fabric.checks.gpu import node_gpus
from pytest_fabric.config.hostlist import fold
from pytest_fabric.config.profile import Finding
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge import tool_identity as identity_judge
from pytest_fabric.judge.verdict import Measurement, Op
from pytest_fabric.parsers.tool_identity import NodeToolIdentity
from pytest_fabric.probes import preflight as preflight_probe
from pytest_fabric.probes import software as software_probe
from pytest_fabric.probes import tool_identity as identity_probe
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.probes.software import SOFTWARE_COMPONENTS
from pytest_fabric.record.check_record import REPORT_ATTRIBUTE
from pytest_fabric.run.cluster import Cluster, NodeHandle
from pytest_fabric.run.fixtures import SpecLookup
from pytest_fabric.run.state import CHECK_KEY, FabricState, get_state
from pytest_fabric.run.waves import wave
from pytest_fabric.transport.base import ToolMissing, TransportError

__all__ = ["GPUDIRECT", "MEMLOCK", "MIN_VERSIONS", "PCIE_ACS", "PREFLIGHT", "SOFTWARE_CONSISTENCY", "GpuDirect",
           "Memlock", "MinVersions", "PcieAcs", "Preflight", "SoftwareConsistency", "pytest_fabric_checks"]

Component = Literal["kernel", "driver", "cuda", "nccl", "ofed", "rdma_core", "hca_firmware"]
_ALL_COMPONENTS: tuple[Component, ...] = ("kernel", "driver", "cuda", "nccl", "ofed", "rdma_core", "hca_firmware")


#: a program name as preflight looks it up on PATH: no '/' (a path), no leading '-' (an option),
#: nothing a shell reads as syntax; shared profiles are untrusted input (docs/security.md)
_TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9._+][A-Za-z0-9._+-]{0,63}$")


def _tool_name(value: str) -> str:
    if not _TOOL_NAME_RE.match(value) or value in (".", ".."):
        raise ValueError(
            f"{value!r} is not a program name: write the name preflight finds on PATH (e.g. jq, g++, "
            "python3.11), up to 64 of the characters A-Z a-z 0-9 . _ + - (no '/', spaces or shell "
            "characters, not starting with '-')"
        )
    return value


#: checked one item at a time, so an error names the line of that item
ToolName = Annotated[str, AfterValidator(_tool_name)]


class Preflight(Finding):
    """Before any measurement: the tools the profile's checks run, on every node, and its GPUs and HCAs."""

    tools: list[ToolName] = Field(default_factory=list)  # more programs every node must have


class GpuDirect(Finding):
    """GPUDirect RDMA: ``peermem`` (nvidia_peermem loaded), ``dmabuf`` (open kernel module, kernel 5.12+) or ``either``."""

    SCALAR_FIELD = "via"
    via: Literal["peermem", "dmabuf", "either"] = "either"


class Memlock(Finding):
    """``ulimit -l`` in the sessions the checks run in: RDMA registers (pins) memory.

    ``memlock: unlimited`` (what RDMA stacks ask for) or a floor, ``memlock: {min: 64 GiB}``.
    """

    SCALAR_FIELD = "value"
    value: Literal["unlimited"] | None = None
    min: QuantityField | None = None

    @model_validator(mode="before")
    @classmethod
    def _size(cls, value: Any) -> Any:
        return {"min": value} if isinstance(value, str) and value.strip() != "unlimited" else value

    @field_validator("min")
    @classmethod
    def _min_size(cls, value: Quantity | None) -> Quantity | None:
        return None if value is None else parse_quantity(value, dimension=Dimension.SIZE)

    def bounds(self) -> list[tuple[str, Op, Quantity | str | int | bool]]:
        if self.min is not None:
            return [("min", Op.MIN, self.min)]
        return [("value", Op.EQUAL, "unlimited")]


class PcieAcs(Finding):
    """``pcie_acs: off``: no PCIe bridge has ACS redirection on (it routes GPU-NIC peer traffic via the root complex)."""

    OK = "off"
    SCALAR_FIELD = "value"
    value: Literal["off"] = "off"

    @model_validator(mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return {"value": "off"} if value is False else value  # YAML 1.1 reads a bare `off` as false


class SoftwareConsistency(Finding):
    """The same version of each component on every node (``components``: which ones; all by default)."""

    OK = "consistent"
    components: list[Component] = Field(default_factory=lambda: list(_ALL_COMPONENTS))

    @model_validator(mode="before")
    @classmethod
    def _list(cls, value: Any) -> Any:
        return {"components": value} if isinstance(value, list) else value


class MinVersions(Finding):
    """The lowest version of a component each node may run (``nccl: '2.21.5'``); dotted parts compare as numbers."""

    kernel: str | None = None
    driver: str | None = None
    cuda: str | None = None
    nccl: str | None = None
    ofed: str | None = None
    rdma_core: str | None = None
    hca_firmware: str | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _quoted(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
            raise ValueError(
                f"write the version in quotes ('{value}'): YAML reads an unquoted {value} as a number "
                "(12.10 would become 12.1)"
            )
        return value

    @model_validator(mode="after")
    def _dimensions(self) -> Any:
        if not self.pins():
            raise ValueError(f"give at least one of {', '.join(SOFTWARE_COMPONENTS)}")
        return self

    def pins(self) -> dict[str, str]:
        """component -> the minimum version the profile pins."""
        return {name: getattr(self, name) for name in SOFTWARE_COMPONENTS if getattr(self, name) is not None}


# what a node has before anything is measured on it: preflight first, it tells later checks which
# nodes lack their tools; the stack's versions after the node's own settings
PREFLIGHT = Check("preflight", "software", Preflight, "node", "wave", phase=-30)
GPUDIRECT = Check("gpudirect", "software", GpuDirect, "node", "wave", phase=-29)
MEMLOCK = Check("memlock", "software", Memlock, "node", "wave", phase=-29)
PCIE_ACS = Check("pcie_acs", "software", PcieAcs, "node", "wave", phase=-29)
MIN_VERSIONS = Check("min_versions", "software", MinVersions, "node", "wave", phase=-28)
SOFTWARE_CONSISTENCY = Check("software_consistency", "software", SoftwareConsistency, "cluster", "cluster", phase=-27)


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [PREFLIGHT, GPUDIRECT, MEMLOCK, PCIE_ACS, SOFTWARE_CONSISTENCY, MIN_VERSIONS]


_PREFLIGHT = "preflight"


def _state(request: pytest.FixtureRequest) -> FabricState:
    state = get_state(request.config)
    assert state is not None  # every fixture here asks for `spec` first, which skips when unconfigured
    return state


def _link_layer(state: FabricState) -> str | None:
    spec = state.profile.spec("inter_node", "link_layer")
    return str(getattr(spec, "value", "")) or None


def _required(state: FabricState) -> dict[str, list[str]]:
    spec = state.profile.spec("software", "preflight")
    extra = list(getattr(spec, "tools", []) or [])
    return preflight_probe.required_tools(state.profile.set_checks(), _link_layer(state), extra, state.checks)


def node_preflight(request: pytest.FixtureRequest, node: NodeHandle) -> preflight_probe.NodePreflight:
    """The node's preflight reading, once per run (an error is kept: the node's other checks report it)."""
    state = _state(request)
    return state.once.get(_PREFLIGHT, node.name, lambda: preflight_probe.read_preflight(node, _required(state)))


def node_stack(request: pytest.FixtureRequest, node: NodeHandle) -> software_probe.NodeStack:
    """The node's software stack, once per run (an error is kept, as for preflight)."""

    def read() -> software_probe.NodeStack:
        try:
            inv = node_gpus(request, node)
            driver, cuda = inv.report.driver_version, inv.report.cuda_version
        except ToolMissing:
            driver = cuda = None  # no NVIDIA driver: 'not found', which the checks judge
        return software_probe.read_stack(node, driver=driver, cuda=cuda)

    return _state(request).once.get("software stack", node.name, read)


def _expected_count(state: FabricState, layer: str, check: str) -> int:
    spec = state.profile.spec(layer, check)
    value = getattr(spec, "equal", None) or getattr(spec, "min", None) if spec is not None else None
    return int(value.value) if value is not None else 0


@pytest.fixture
@wave("node")
def preflight(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """Tools on PATH (missing ones: an error naming the package), GPUs and HCAs the profile expects visible."""
    spec(PREFLIGHT)
    state = _state(request)
    found = node_preflight(request, node)
    needed = _required(state)
    extra = {"tool_versions": dict(found.versions), "tools": dict(found.tools)}
    if found.missing:
        lines = [f"{t} (for {', '.join(needed.get(t, ['software.preflight.tools']))})" for t in found.missing]
        raise MeasurementError(
            node.name, f"not installed: {'; '.join(lines)}. Every check that runs them errors on {node.name} at once",
            command="command -v " + " ".join(found.missing),
            fix=f"install {preflight_probe.install_hint(found.missing)} on {node.name}",
        )
    problems = []
    gpus = _expected_count(state, "intra_node", "gpu_count")
    if gpus and (found.gpus or 0) < gpus:
        seen = f"{found.gpus} GPU(s)" if found.gpus is not None else f"no GPU ({found.gpu_error})"
        problems.append(f"nvidia-smi -L lists {seen}; the profile expects {gpus}")
    if state.profile.spec("inter_node", "ports") is not None:
        names = list(getattr(state.profile.spec("inter_node", "ports"), "names", []) or [])
        wanted = sorted({n.split("/")[0] for n in (state.inventory.node(node.name).rdma_ports or names)})
        absent = [d for d in wanted if d not in found.hcas]
        if not found.hcas:
            problems.append("no RDMA device in ibstat -l or /sys/class/infiniband (is the HCA driver, mlx5_ib, loaded?)")
        elif absent:
            problems.append(f"RDMA device(s) {', '.join(absent)} not listed by ibstat -l (have {', '.join(found.hcas)})")
    tools = ", ".join(f"{t} {found.versions.get(t, '(no version)')}" for t in sorted(found.tools))
    seen_devices = f"{found.gpus if found.gpus is not None else 0} GPU(s), {len(found.hcas)} RDMA device(s)"
    detail = f"{seen_devices}; tools: {tools or 'none required'}"
    if problems:
        return Measurement(value="devices missing", detail="; ".join(problems) + f" ({detail})",
                           evidence=found.evidence, extra=extra)
    return Measurement(value="ok", detail=detail, evidence=found.evidence, extra=extra)


@pytest.fixture
@wave("node")
def gpudirect(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """nvidia_peermem loaded, or dma-buf possible (open kernel module on Linux 5.12+), as the profile's ``via`` asks."""
    settings = spec(GPUDIRECT)
    found = node_preflight(request, node)
    ok, why = preflight_probe.gpudirect(found, settings.via)
    if ok:
        return Measurement(value="ok", detail=why, evidence=found.evidence)
    fix = {"peermem": "modprobe nvidia_peermem", "dmabuf": "install the NVIDIA open kernel module driver on Linux 5.12+",
           "either": "modprobe nvidia_peermem (or use the open kernel module driver for dma-buf)"}[settings.via]
    return Measurement(value="unavailable", detail=f"GPUDirect RDMA ({settings.via}) is not available: {why}; "
                       f"ib_write_bw --use_cuda and NCCL would stage through host memory; fix: {fix}",
                       evidence=found.evidence)


@pytest.fixture
@wave("node")
def memlock(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """``ulimit -l`` of the session the checks run in."""
    spec(MEMLOCK)
    found = node_preflight(request, node)
    if found.memlock is None:
        raise MeasurementError(node.name, "ulimit -l printed nothing", command="ulimit -l")
    if found.memlock == "unlimited":
        return Measurement(value="unlimited", detail="ulimit -l: unlimited", evidence=found.evidence,
                           bounds={"min": parse_quantity(f"{2**60} B")})
    if not found.memlock.isdigit():
        raise MeasurementError(node.name, f"ulimit -l printed {found.memlock!r}, not a number of KiB", command="ulimit -l")
    return Measurement(
        value=f"{found.memlock} KiB", evidence=found.evidence,
        bounds={"min": parse_quantity(f"{found.memlock} KiB")},
        detail=f"ulimit -l is {found.memlock} KiB: RDMA memory registration beyond it fails; "
        "set `* - memlock unlimited` in /etc/security/limits.conf (and LimitMEMLOCK=infinity for sshd/slurmd)",
    )


@pytest.fixture
@wave("node")
def pcie_acs(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """No PCIe bridge above a GPU or Mellanox NIC has ACS redirection on (lspci -vvv ACSCtl)."""
    spec(PCIE_ACS)
    found = node_preflight(request, node)
    if found.acs is None:
        raise MeasurementError(node.name, "lspci -vvv listed no PCI device", command="lspci -vvv",
                               fix="install pciutils on the node")
    if not found.acs.acs and found.acs.devices:
        # As another user than root lspci prints no ACS lines at all: that is not 'off'.
        raise MeasurementError(node.name, "lspci -vvv shows no ACSCtl line on any device", command="lspci -vvv",
                               fix="lspci needs root to read ACS: connect as root or allow sudo lspci")
    on = preflight_probe.acs_on_paths(found.acs)
    if not on:
        return Measurement(value="off", detail=f"ACS redirection off on all {len(found.acs.acs)} bridges with ACS",
                           evidence=found.evidence)
    return Measurement(value="on", evidence=found.evidence,
                       detail="ACS redirection on above GPUs/NICs: " + "; ".join(on) +
                       " (peer traffic goes through the root complex; disable ACS in the BIOS or with setpci)")


@pytest.fixture
@wave("node")
def min_versions(request: pytest.FixtureRequest, node: NodeHandle, spec: SpecLookup) -> Measurement:
    """Each component the profile pins is at least that version on this node."""
    settings = spec(MIN_VERSIONS)
    stack = node_stack(request, node)
    pins = settings.pins()
    below = software_probe.below_minimum(stack, pins)
    extra = {"tool_versions": stack.tool_versions(), "software": dict(stack.versions)}
    shown = ", ".join(f"{software_probe.LABELS[c]} {stack.shown(c)}" for c in pins)
    if below:
        return Measurement(value="below minimum", detail="; ".join(below), evidence=stack.evidence, extra=extra)
    return Measurement(value="ok", detail=shown, evidence=stack.evidence, extra=extra)


def all_stacks(request: pytest.FixtureRequest, cluster: Cluster) -> tuple[dict[str, software_probe.NodeStack], dict[str, str]]:
    """Every node's stack (read in parallel where not read yet), and the nodes that could not be read, with why."""
    state = _state(request)

    def one(node: NodeHandle) -> software_probe.NodeStack | TransportError:
        try:
            return node_stack(request, node)
        except TransportError as exc:
            return exc

    results = dict(zip([n.name for n in cluster.nodes], state.batches.fan_out(cluster.nodes, one)))
    stacks = {n: r for n, r in results.items() if isinstance(r, software_probe.NodeStack)}
    errors = {n: str(r.detail).splitlines()[0] for n, r in results.items() if isinstance(r, TransportError)}
    return stacks, errors


def all_identities(state: FabricState, cluster: Cluster) -> dict[str, NodeToolIdentity]:
    """Every node's tool identity listing (one command per node per run, in parallel where not read yet);
    a node that could not be read is left out (its own checks say why)."""
    tools = sorted(_required(state))
    if not tools:
        return {}

    def one(node: NodeHandle) -> NodeToolIdentity | None:
        try:
            return identity_probe.read_identity(node, tools, state.once)[0]
        except TransportError:
            return None

    found = state.batches.fan_out(cluster.nodes, one)
    return {node.name: ident for node, ident in zip(cluster.nodes, found) if ident is not None}


@pytest.fixture
def software_consistency(request: pytest.FixtureRequest, cluster: Cluster, spec: SpecLookup) -> Measurement:
    """The same kernel, driver, CUDA, NCCL, OFED, rdma-core and HCA firmware on every node, and the same
    file (SHA-256) under each tool name the profile's checks run."""
    settings = spec(SOFTWARE_CONSISTENCY)
    stacks, errors = all_stacks(request, cluster)
    findings = software_probe.consistency(stacks, settings.components)
    identities = all_identities(_state(request), cluster)
    findings += identity_judge.hash_differences(identities)
    unread = "; ".join(f"{n}: {why}" for n, why in sorted(errors.items()))
    if not findings and errors:
        raise MeasurementError(
            fold(errors), f"the software stack of {fold(errors)} could not be read ({unread}); "
            f"the other {len(stacks)} node(s) agree, but a node not read cannot count as the same",
            fix="make those nodes reachable and run again",
        )
    same = {software_probe.LABELS[c]: sorted({s.shown(c) for s in stacks.values()}) for c in settings.components}
    extra: dict[str, object] = {"software": {n: dict(s.versions) for n, s in sorted(stacks.items())}}
    if identities:
        extra["tool_identity"] = {n: i.to_dict()["tools"] for n, i in sorted(identities.items())}
        extra["tool_flags"] = {n: identity_judge.flags(i) for n, i in sorted(identities.items())}
    if findings:
        detail = "; ".join(findings) + (f" (not read: {unread})" if errors else "")
        return Measurement(value="inconsistent", detail=detail, extra=extra)
    detail = ", ".join(f"{label} {values[0]}" for label, values in same.items())
    return Measurement(value="consistent", detail=f"all {len(stacks)} nodes: {detail}", extra=extra)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: the plugin's record is on the report by now
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """A check's record names the file each tool it ran was, on each of its nodes (path, SHA-256, build id,
    package), and what looks wrong about it: read once per node per run, the first time a check asks."""
    report = yield
    record = getattr(report, REPORT_ATTRIBUTE, None)
    state = get_state(item.config)
    info = item.stash.get(CHECK_KEY, None)
    if not isinstance(record, dict) or state is None or info is None or state.cluster is None:
        return report
    key = f"{info.layer}.{state.checks.profile_key_of(info.check, info.layer)}"
    tools = sorted(t for t, keys in _required(state).items() if key in keys)
    if not tools or not info.nodes:
        return report
    identities = all_identities(state, state.cluster)
    extra = record.setdefault("extra", {})
    extra["tool_identity"] = {n: {t: identities[n].tools[t].to_dict() for t in tools if t in identities[n].tools}
                              for n in info.nodes if n in identities}
    # a flag of another tool is that tool's checks'; a preload is every check's
    extra["tool_flags"] = {n: [f for f in identity_judge.flags(identities[n])
                               if f.split(":", 1)[0] in tools or f.split(":", 1)[0] not in identities[n].tools]
                           for n in info.nodes if n in identities}
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A check that runs a tool preflight found missing on one of its nodes errors now, with that cause."""
    state = get_state(item.config)
    info = item.stash.get(CHECK_KEY, None)
    if state is None or info is None or info.layer == "software":
        return
    found_by_node = {node: found for node in info.nodes if isinstance(found := _preflight_read(state, node),
                                                                          preflight_probe.NodePreflight)}
    if not found_by_node:
        return

    key = f"{info.layer}.{state.checks.profile_key_of(info.check, info.layer)}"
    tools = _required(state)
    needs = [t for t, checks in tools.items() if key in checks]
    for node, found in found_by_node.items():
        lacking = [t for t in needs if t in found.missing]
        if lacking:
            raise MeasurementError(
                node, f"preflight found {', '.join(lacking)} not installed, which {key} runs",
                command="command -v " + " ".join(lacking),
                fix=f"install {preflight_probe.install_hint(lacking)} on {node}",
            )


def _preflight_read(state: FabricState, node: str) -> object:
    """What preflight read on ``node`` so far, reading nothing (None: not read, or it failed)."""
    try:
        return state.once.peek(_PREFLIGHT, node)
    except Exception:  # the node's own checks report it
        return None
