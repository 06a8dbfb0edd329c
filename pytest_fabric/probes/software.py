"""The software stack of a node, and whether the cluster runs one stack.

One command per node (:data:`STACK_SCRIPT`) prints, each under an ``@@section`` line:

- ``uname -r``: the kernel;
- ``ofed_info -s``: MLNX_OFED or DOCA-OFED and its version;
- ``dpkg-query`` / ``rpm -q``: the rdma-core package (inbox RDMA stack);
- ``ldconfig -p`` and ``readlink -f`` of each ``libnccl.so*`` it lists: libnccl's version is
  in the file name the soname link resolves to (``libnccl.so.2.21.5``);
- ``ibstat``: each HCA's ``Firmware version``; ``ethtool -i`` of each RDMA device's netdev
  gives the same for adapters ibstat does not list.

The driver and the CUDA version it supports come from the node's ``nvidia-smi -q -x``
reading, which the GPU checks share (see :func:`stack`). The judgement is pure:
:func:`consistency` names the nodes that differ from the majority, :func:`below_minimum`
the components below what the profile pins.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_fabric.config.hostlist import fold
from pytest_fabric.parsers import ethtool, ibstat, ldconfig, ofed_info
from pytest_fabric.parsers.base import ParseError
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.results import CommandResult

__all__ = [
    "LABELS",
    "NodeStack",
    "SOFTWARE_COMPONENTS",
    "STACK_SCRIPT",
    "below_minimum",
    "compare_versions",
    "consistency",
    "odd_ones",
    "read_stack",
    "sections",
    "stack_from",
]

#: the software stack components pytest-fabric reads on every node
SOFTWARE_COMPONENTS = ("kernel", "driver", "cuda", "nccl", "ofed", "rdma_core", "hca_firmware")
#: how messages name each component
LABELS = {
    "kernel": "kernel",
    "driver": "driver",
    "cuda": "CUDA",
    "nccl": "NCCL",
    "ofed": "OFED",
    "rdma_core": "rdma-core",
    "hca_firmware": "HCA firmware",
}
NOT_FOUND = "not found"

STACK_SCRIPT = r"""echo @@kernel; uname -r
echo @@ofed_info; ofed_info -s 2>/dev/null
echo @@rdma_core; v=$(dpkg-query -W -f='${Version}' rdma-core 2>/dev/null) && [ -n "$v" ] && echo "$v" || { v=$(rpm -q --qf '%{VERSION}-%{RELEASE}' rdma-core 2>/dev/null) && echo "$v"; }
echo @@ldconfig; ldconfig -p 2>/dev/null | grep -E 'libs found|libnccl\.so'
echo @@nccl_files; for f in $(ldconfig -p 2>/dev/null | awk '/libnccl\.so/ {print $NF}'); do readlink -f "$f"; done
echo @@ibstat; ibstat 2>/dev/null
for n in /sys/class/infiniband/*/device/net/*; do [ -e "$n" ] || continue; d=${n#/sys/class/infiniband/}; echo "@@ethtool ${d%%/*} ${n##*/}"; ethtool -i "${n##*/}" 2>/dev/null; done
true"""

_SECTION = re.compile(r"^@@(?P<name>[a-z_]+)(?: (?P<args>.*))?$")
_NCCL_FILE = re.compile(r"libnccl\.so\.(?P<version>[0-9]+\.[0-9]+\.[0-9]+)$")
_PSID = re.compile(r"\s*\(.*\)\s*$")  # ethtool -i: "28.39.1002 (MT_0000000838)"


def sections(text: str) -> list[tuple[str, str, str]]:
    """``(name, args, body)`` for each ``@@name args`` block of a probe script's output, in order."""
    out: list[tuple[str, str, list[str]]] = []
    for line in text.splitlines():
        match = _SECTION.match(line)
        if match:
            out.append((match.group("name"), match.group("args") or "", []))
        elif out:
            out[-1][2].append(line)
    return [(name, args, "\n".join(body).strip("\n")) for name, args, body in out]


@dataclass(frozen=True)
class NodeStack:
    """One node's component versions (None: not installed or not found) and where they came from."""

    node: str
    versions: dict[str, str | None]
    #: HCA device -> firmware version
    firmware: dict[str, str] = field(default_factory=dict)
    ofed_distribution: str | None = None
    evidence: tuple[CommandResult, ...] = ()

    def shown(self, component: str) -> str:
        return self.versions.get(component) or NOT_FOUND

    def tool_versions(self) -> dict[str, str]:
        """What the report's tool table lists for this node."""
        names = {"driver": "nvidia-driver", "cuda": "cuda", "nccl": "nccl", "kernel": "kernel",
                 "rdma_core": "rdma-core", "hca_firmware": "hca-firmware"}
        out = {names[c]: v for c, v in self.versions.items() if v and c in names}
        if self.versions.get("ofed"):
            out[(self.ofed_distribution or "ofed").lower()] = str(self.versions["ofed"])
        return out


def stack_from(node: str, text: str, *, driver: str | None, cuda: str | None) -> NodeStack:
    """A :class:`NodeStack` from :data:`STACK_SCRIPT`'s output and the node's nvidia-smi versions."""
    versions: dict[str, str | None] = dict.fromkeys(SOFTWARE_COMPONENTS)
    versions["driver"], versions["cuda"] = driver, cuda
    firmware: dict[str, str] = {}
    distribution = None
    nccl_files: list[str] = []
    for name, args, body in sections(text):
        if not body.strip():
            continue
        if name == "kernel":
            versions["kernel"] = body.strip().splitlines()[0].strip()
        elif name == "ofed_info":
            try:
                info = ofed_info.parse_ofed_info(body)
            except ParseError:
                continue  # an ofed_info that prints no version: as if absent, the check says 'not found'
            versions["ofed"], distribution = info.version, info.label
        elif name == "rdma_core":
            versions["rdma_core"] = body.strip().splitlines()[0].strip()
        elif name == "ldconfig":
            try:
                listed = ldconfig.parse_ldconfig(body)
            except ParseError:
                continue
            nccl_files += [lib.path for lib in listed if lib.soname.startswith("libnccl.so")]
        elif name == "nccl_files":
            nccl_files += body.split()
        elif name == "ibstat":
            try:
                cas = ibstat.parse_ibstat(body)
            except ParseError:
                continue
            firmware.update({ca.name: ca.firmware_version for ca in cas if ca.firmware_version})
        elif name == "ethtool":
            device = args.split()[0] if args.split() else ""
            try:
                info_i = ethtool.parse_ethtool_driver(body)
            except ParseError:
                continue
            if device and device not in firmware and info_i.firmware_version:
                firmware[device] = _PSID.sub("", info_i.firmware_version)
    nccl = sorted({m.group("version") for f in nccl_files if (m := _NCCL_FILE.search(f.rsplit("/", 1)[-1]))},
                  key=_version_key)
    versions["nccl"] = ", ".join(nccl) or None
    if firmware:
        versions["hca_firmware"] = ", ".join(sorted(set(firmware.values()), key=_version_key))
    return NodeStack(node, versions, firmware, distribution)


def read_stack(node: NodeHandle, *, driver: str | None, cuda: str | None) -> NodeStack:
    """Run :data:`STACK_SCRIPT` on ``node`` (one command) and read its stack."""
    result = node.run(STACK_SCRIPT, timeout=60, check=False)
    if not result.stdout.startswith("@@kernel"):
        raise MeasurementError(
            node.name, f"the software stack listing printed no sections (exit {result.exit_code}): "
            f"{(result.stderr or result.stdout).strip()[-300:]}",
            command="uname -r; ofed_info -s; ldconfig -p; ibstat; ethtool -i ...",
            fix="run the commands by hand on the node; a login shell that prints text breaks the listing",
        )
    stack = stack_from(node.name, result.stdout, driver=driver, cuda=cuda)
    return NodeStack(stack.node, stack.versions, stack.firmware, stack.ofed_distribution, (result,))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"[0-9]+", version))


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` is older than, the same as or newer than ``b``: the numbers in each, in order
    (``23.10-1.1.9.0`` > ``23.10``; ``5.15.0-105-generic`` > ``5.15.0-91-generic``)."""
    ka, kb = _version_key(a), _version_key(b)
    width = max(len(ka), len(kb))
    ka, kb = ka + (0,) * (width - len(ka)), kb + (0,) * (width - len(kb))
    return (ka > kb) - (ka < kb)


def odd_ones(values: Mapping[str, str], label: str) -> list[str]:
    """Each group of nodes whose value differs from the majority's, as one line:
    ``gpu07: HCA firmware 20.31.1014; 63 others 20.35.2000``. Empty when all nodes agree."""
    counts = Counter(values.values())
    if len(counts) < 2:
        return []
    # The majority; a tie goes to the newer version, so the message reads as "these are behind".
    majority, size = max(counts.items(), key=lambda kv: (kv[1], kv[0] != NOT_FOUND, _version_key(kv[0])))
    findings = []
    for value, _ in sorted(counts.items(), key=lambda kv: (kv[1], kv[0])):
        if value != majority:
            odd = fold([n for n, v in values.items() if v == value])
            findings.append(f"{odd}: {label} {value}; {size} other{'s' if size != 1 else ''} {majority}")
    return findings


def consistency(stacks: Mapping[str, NodeStack], components: Iterable[str]) -> list[str]:
    """:func:`odd_ones` for each component, in order. Empty when every node agrees on all."""
    findings: list[str] = []
    for component in components:
        findings += odd_ones({node: stack.shown(component) for node, stack in stacks.items()}, LABELS[component])
    return findings


def below_minimum(stack: NodeStack, pins: Mapping[str, str]) -> list[str]:
    """What on this node is older than the profile pins (or absent), one line per component.

    HCA firmware is compared per adapter family: the first number of a ConnectX firmware
    version names the device (20 ConnectX-6, 22 ConnectX-6 Dx, 28 ConnectX-7), so a pin
    ``28.39.1002`` judges the ConnectX-7s and leaves a ConnectX-6 Dx storage NIC alone;
    several pins may be given, comma-separated.
    """
    out: list[str] = []
    for component, minimum in pins.items():
        label = LABELS[component]
        if component == "hca_firmware":
            out += _firmware_below(stack.firmware, [p.strip() for p in minimum.split(",") if p.strip()])
            continue
        have = stack.versions.get(component)
        if have is None:
            out.append(f"{label} {NOT_FOUND} (the profile asks for at least {minimum})")
            continue
        older = [v for v in have.split(", ") if compare_versions(v, minimum) < 0]
        if older:
            out.append(f"{label} {', '.join(older)} is older than the profile's minimum {minimum}")
    return out


def _firmware_below(firmware: Mapping[str, str], pins: Sequence[str]) -> list[str]:
    if not firmware:
        return [f"HCA firmware {NOT_FOUND}: no HCA in ibstat or ethtool -i (the profile asks for at least {', '.join(pins)})"]
    out = []
    for pin in pins:
        family = pin.split(".", 1)[0]
        judged = {d: v for d, v in firmware.items() if v.split(".", 1)[0] == family}
        if not judged:
            found = ", ".join(f"{d} {v}" for d, v in sorted(firmware.items()))
            out.append(f"HCA firmware: no adapter of the {family}.x family the profile pins ({pin}); found {found}")
            continue
        older = [f"{d} {v}" for d, v in sorted(judged.items()) if compare_versions(v, pin) < 0]
        if older:
            out.append(f"HCA firmware {', '.join(older)} is older than the profile's minimum {pin}")
    return out
