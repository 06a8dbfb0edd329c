"""A simulated GPU cluster for pytest-fabric's own tests and demos.

Network namespaces on a bridge, one real sshd per node, real iperf3 and fio, stand-ins for tools
that need hardware. See cluster.py for the layout; ``python -m simcluster up`` starts one.
"""

from __future__ import annotations

from simcluster.breaker import NodeBreaker
from simcluster.cluster import SimCluster, SimClusterError, SimNode, missing_prerequisites
from simcluster.hardware import FakeHardware, FakePort, install_hardware, uninstall_hardware

__all__ = [
    "FakeHardware", "FakePort", "NodeBreaker", "SimCluster", "SimClusterError", "SimNode",
    "install_hardware", "missing_prerequisites", "uninstall_hardware",
]
