"""Is every node's tool the same file, and is it what its package installed?  Pure.

Reads what :mod:`pytest_fabric.parsers.tool_identity` made of each node's listing. The one finding
that fails ``software_consistency`` is the same tool name with different SHA-256 on different
nodes (:func:`hash_differences`): the cluster does not run one tool. What else looks wrong on a node
(:func:`flags`: a script where an ELF is expected, no package owning the file, the package
manager's verification naming it, anything preloaded into every process) is recorded and shown,
not failed on its own: a site may build a tool itself, and the stand-ins of the simulated
cluster are scripts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from pytest_fabric.config.hostlist import fold
from pytest_fabric.parsers.tool_identity import NodeToolIdentity

__all__ = ["EXPECTED_ELF", "flags", "hash_differences"]

#: tools that are compiled programs wherever they come from (a ``#!`` file under these names wraps one)
EXPECTED_ELF = frozenset({
    "iperf3", "iperf", "fio", "qperf", "sockperf",
    "ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat",
    "perfquery", "ibstat", "ibv_devinfo", "iblinkinfo",
    "all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf", "sendrecv_perf",
    "nvidia-smi", "nvbandwidth", "dcgmi",
})


def hash_differences(identities: Mapping[str, NodeToolIdentity]) -> list[str]:
    """One line per tool whose SHA-256 differs between nodes: the odd nodes, their hash and path, the majority's.

    ``node03: iperf3 sha256 5e1c... (/usr/local/bin/iperf3); 7 others 9b2a... (/usr/bin/iperf3)``.
    A node where the tool is missing is not a hash (preflight reports it); empty when all agree.
    """
    findings: list[str] = []
    names = sorted({t for ident in identities.values() for t in ident.tools})
    for name in names:
        hashes = {node: ident.tools[name] for node, ident in identities.items()
                  if name in ident.tools and ident.tools[name].sha256}
        counts = Counter(t.sha256 for t in hashes.values())
        if len(counts) < 2:
            continue
        majority, size = max(counts.items(), key=lambda kv: (kv[1], kv[0] or ""))
        where = {t.resolved for t in hashes.values() if t.sha256 == majority}
        for value, _ in sorted(counts.items(), key=lambda kv: (kv[1], kv[0] or "")):
            if value == majority:
                continue
            odd = sorted(n for n, t in hashes.items() if t.sha256 == value)
            paths = sorted({hashes[n].resolved or "?" for n in odd})
            findings.append(
                f"{fold(odd)}: {name} sha256 {(value or '')[:16]}... ({', '.join(paths)}); "
                f"{size} other{'s' if size != 1 else ''} {(majority or '')[:16]}... ({', '.join(sorted(p or '?' for p in where))})"
            )
    return findings


def flags(identity: NodeToolIdentity) -> list[str]:
    """What looks wrong on one node, one line each (empty when nothing does)."""
    out: list[str] = []
    for name, tool in sorted(identity.tools.items()):
        if tool.missing:
            continue
        if name in EXPECTED_ELF and not tool.is_elf:
            what = f"a script ({tool.shebang})" if tool.is_script else f"not an ELF (magic {tool.magic or 'unread'})"
            out.append(f"{name}: {tool.resolved} is {what} where a compiled program is expected")
        if tool.package_manager and not tool.package and tool.supplied_by != "tenant":  # the tenant's own build
            out.append(f"{name}: no {tool.package_manager} package owns {tool.resolved}")
        if tool.verify:
            out.append(f"{name}: {tool.package_manager} verification of {tool.package}: {'; '.join(tool.verify)}")
    if identity.ld_preload:
        out.append(f"LD_PRELOAD={identity.ld_preload} in the session the tools run in")
    if identity.ld_so_preload:
        out.append(f"/etc/ld.so.preload loads {', '.join(identity.ld_so_preload)} into every process")
    return out
