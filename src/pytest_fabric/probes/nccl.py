"""Multi-node NCCL all_reduce with nccl-tests, launched by mpirun from the first node.

The verdict reads bus bandwidth at the profile's message size from the per-size
rows, never the "Avg bus bandwidth" line (it averages the whole sweep).
Two-node runs pin NCCL_ALGO=Ring: with two nodes NCCL may pick Tree or
NVLS-Tree, whose bus bandwidth is not comparable across node counts.
"""

from __future__ import annotations

import shlex

from ..cluster import NodeHandle
from ..parsers import nccl_tests
from ..parsers.base import ParseError
from ..units import bandwidth
from ..verdict import Measurement
from .base import MeasurementError, parse_or_raise

__all__ = ["allreduce"]


def allreduce(nodes: list[NodeHandle], *, size_bytes: int, gpus_per_node: int, timeout: float = 600) -> Measurement:
    """Bus bandwidth of all_reduce_perf across ``nodes`` at ``size_bytes``."""
    hosts = ",".join(f"{shlex.quote(n.address)}:{gpus_per_node}" for n in nodes)
    env = "-x NCCL_ALGO=Ring " if len(nodes) == 2 else ""
    command = (
        f"mpirun --allow-run-as-root -H {hosts} -np {len(nodes) * gpus_per_node} --bind-to none "
        f"{env}-x NCCL_DEBUG=VERSION all_reduce_perf -b {size_bytes} -e {size_bytes} -f 2 -g 1"
    )
    launcher = nodes[0]
    result = launcher.run(command, timeout=timeout, check=False)
    parsed = parse_or_raise(
        nccl_tests.parse, result, fix="run the mpirun command by hand on the first node; check passwordless SSH between nodes"
    )
    try:
        busbw = nccl_tests.busbw_at(parsed, size_bytes)
    except ParseError as exc:
        raise MeasurementError(launcher.name, str(exc), command=command) from exc
    names = ", ".join(n.name for n in nodes)
    version = f" (NCCL {parsed.nccl_version})" if parsed.nccl_version else ""
    return Measurement(
        value=bandwidth(busbw, "GB/s"),
        detail=f"all_reduce_perf busbw at {size_bytes} B over {len(nodes)} nodes x {gpus_per_node} GPUs ({names}){version}",
        evidence=(result,),
        extra={"tool_versions": {"nccl": parsed.nccl_version} if parsed.nccl_version else {}},
    )
