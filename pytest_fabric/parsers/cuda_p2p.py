"""CUDA samples ``p2pBandwidthLatencyTest``: peer access, P2P bandwidth and latency matrices.

The output lists which device can access which peer, a 0/1 connectivity matrix,
four bandwidth matrices (uni/bidirectional with P2P disabled/enabled, GB/s) and two
latency sections (P2P disabled/enabled), each with a ``GPU`` and a ``CPU`` matrix (us).
Captures are often cut, so every section is optional; at least one must be present.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput, register

__all__ = ["P2pResult", "parse_cuda_p2p"]

TOOL = "cuda-p2pBandwidthLatencyTest"

Matrix = dict[tuple[int, int], float]

_DEVICE = re.compile(r"^Device:\s*(\d+),\s*([^,]+?)\s*,\s*pciBusID:\s*([0-9a-fA-F]+)")
_PEER = re.compile(r"^Device=(\d+)\s+(CAN|CANNOT)\s+Access Peer Device=(\d+)", re.IGNORECASE)
_HEADER = re.compile(r"^(D\\D|GPU|CPU)((?:\s+\d+)+)\s*$")
_ROW = re.compile(r"^(\d+)((?:\s+[-+0-9.eE]+)+)\s*$")
_TITLES = {
    "P2P Connectivity Matrix": "connectivity",
    "Unidirectional P2P=Disabled Bandwidth": "unidirectional_p2p_disabled",
    "Unidirectional P2P=Enabled Bandwidth": "unidirectional_p2p_enabled",
    "Bidirectional P2P=Disabled Bandwidth": "bidirectional_p2p_disabled",
    "Bidirectional P2P=Enabled Bandwidth": "bidirectional_p2p_enabled",
    "P2P=Disabled Latency": "latency_p2p_disabled",
    "P2P=Enabled Latency": "latency_p2p_enabled",
}


@dataclass(frozen=True)
class P2pResult:
    """Everything the test printed; matrices map ``(row, column)`` device indexes to the value.

    ``peer_access[(a, b)]`` is True for ``Device=a CAN Access Peer Device=b``.
    ``connectivity`` is the 0/1 ``P2P Connectivity Matrix`` as booleans.  The
    ``unidirectional``/``bidirectional`` matrices are GB/s, the latency ones microseconds,
    measured on the GPU and (``_cpu_``) as seen from the CPU.  Empty where not printed.
    """

    devices: dict[int, str] = field(default_factory=dict)
    peer_access: dict[tuple[int, int], bool] = field(default_factory=dict)
    connectivity: dict[tuple[int, int], bool] = field(default_factory=dict)
    unidirectional_p2p_disabled_gbytes_per_s: Matrix = field(default_factory=dict)
    unidirectional_p2p_enabled_gbytes_per_s: Matrix = field(default_factory=dict)
    bidirectional_p2p_disabled_gbytes_per_s: Matrix = field(default_factory=dict)
    bidirectional_p2p_enabled_gbytes_per_s: Matrix = field(default_factory=dict)
    latency_gpu_p2p_disabled_us: Matrix = field(default_factory=dict)
    latency_cpu_p2p_disabled_us: Matrix = field(default_factory=dict)
    latency_gpu_p2p_enabled_us: Matrix = field(default_factory=dict)
    latency_cpu_p2p_enabled_us: Matrix = field(default_factory=dict)

    def pairs_without_peer_access(self) -> list[tuple[int, int]]:
        """Ordered pairs without peer access.

        The connectivity matrix is preferred: captures often cut the ``CAN/CANNOT``
        list short, while the matrix is printed whole.
        """
        if self.connectivity:
            return sorted(pair for pair, can in self.connectivity.items() if not can and pair[0] != pair[1])
        return sorted(pair for pair, can in self.peer_access.items() if not can)


@register(TOOL, "CUDA samples p2pBandwidthLatencyTest: peer access, P2P bandwidth (GB/s) and latency (us) matrices", corpus=("cuda-p2pBandwidthLatencyTest",))
def parse_cuda_p2p(text: str) -> P2pResult:
    """Parse ``p2pBandwidthLatencyTest`` output into a :class:`P2pResult`."""
    devices: dict[int, str] = {}
    peer_access: dict[tuple[int, int], bool] = {}
    matrices: dict[str, Matrix] = {}
    section: str | None = None
    target: Matrix | None = None
    columns: list[int] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if match := _DEVICE.match(line):
            devices[int(match.group(1))] = match.group(2)
            continue
        if match := _PEER.match(line):
            peer_access[(int(match.group(1)), int(match.group(3)))] = match.group(2).upper() == "CAN"
            continue
        title = next((key for prefix, key in _TITLES.items() if line.startswith(prefix)), None)
        if title is not None:
            section, target = title, None
            continue
        if match := _HEADER.match(line):
            if section is None:
                raise UnrecognizedOutput(TOOL, f"matrix header {line!r} without a title", line=number)
            kind = match.group(1)
            name = f"{section}_{kind.lower()}" if section.startswith("latency") else section
            target = matrices.setdefault(name, {})
            columns = [int(token) for token in match.group(2).split()]
            continue
        if (match := _ROW.match(line)) and target is not None:
            values = match.group(2).split()
            if len(values) != len(columns):
                raise UnrecognizedOutput(TOOL, f"row {match.group(1)} has {len(values)} values for {len(columns)} columns", line=number)
            row = int(match.group(1))
            for column, value in zip(columns, values):
                try:
                    target[(row, column)] = float(value)
                except ValueError:
                    raise UnrecognizedOutput(TOOL, f"value {value!r} in row {row} is not a number", line=number) from None
            continue
        target = None
        if line.lower().startswith(("cuda error", "cudaerror", "error", "waiving")):
            raise ToolReportedError(TOOL, line, line=number)
    if not devices and not peer_access and not matrices:
        raise UnrecognizedOutput(TOOL, "no device list, peer-access lines or P2P matrices found")
    latency = {
        f"latency_{kind}_p2p_{state}_us": matrices.get(f"latency_p2p_{state}_{kind}", {})
        for kind in ("gpu", "cpu")
        for state in ("disabled", "enabled")
    }
    return P2pResult(
        devices=devices,
        peer_access=peer_access,
        connectivity={pair: value != 0 for pair, value in matrices.get("connectivity", {}).items()},
        unidirectional_p2p_disabled_gbytes_per_s=matrices.get("unidirectional_p2p_disabled", {}),
        unidirectional_p2p_enabled_gbytes_per_s=matrices.get("unidirectional_p2p_enabled", {}),
        bidirectional_p2p_disabled_gbytes_per_s=matrices.get("bidirectional_p2p_disabled", {}),
        bidirectional_p2p_enabled_gbytes_per_s=matrices.get("bidirectional_p2p_enabled", {}),
        **latency,
    )
