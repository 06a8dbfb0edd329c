"""What ``python -m simcluster up`` holds while it runs: the cluster, an egress target on its bridge,
optionally Slurm and a profile's hardware, and the faults a newcomer can set on them by name.

The faults are the ones docs/simulated-cluster.md describes, each one call on a running lab
(:data:`FAULTS`); ``python -m simcluster fault NAME ARGS`` sends one over the lab's control socket
(:mod:`simcluster.control`), so every object stays in the process that made it and is torn down there.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from simcluster.cluster import SimCluster, SimClusterError
from simcluster.gpu import FakeGpus, install_gpus
from simcluster.hardware import FakeHardware, FakePort, install_hardware
from simcluster.stack import FakeStack, install_stack

__all__ = ["EGRESS_FILE", "FAULTS", "HARDWARE", "Lab", "STATE_FILE"]

STATE_FILE = "lab.json"  # in the workdir: what `fault` and `run` read to find the lab
EGRESS_FILE = "16MiB.bin"
_EGRESS_BYTES = 16 << 20


def _ports(count: int, gbps: int, layer: str = "InfiniBand") -> list[FakePort]:
    netdev = "ib" if layer == "InfiniBand" else "eth"
    return [FakePort(device=f"mlx5_{i}", netdev=f"{netdev}{i}", rate_gbps=gbps, link_layer=layer,
                     active_mtu=4096) for i in range(count)]


def _a100(nics: int) -> FakeGpus:
    # an A100 node's PCIe is Gen4; with four NICs two GPUs share each NIC's PCIe switch
    return FakeGpus(model="NVIDIA A100-SXM4-80GB", max_generation=4, nics=nics,
                    nic_of={g: g * nics // 8 for g in range(8)})


#: --hardware NAME: what a bundled profile expects of a node, as stand-ins (ports, GPUs, stack)
HARDWARE: dict[str, Callable[[], tuple[FakeHardware, FakeGpus]]] = {
    "hdr200": lambda: (FakeHardware(ports=_ports(4, 200), gpu_name="NVIDIA A100-SXM4-80GB"), _a100(4)),
    "hdr200-8rail": lambda: (FakeHardware(ports=_ports(8, 200), gpu_name="NVIDIA A100-SXM4-80GB"), _a100(8)),
    "ndr400-large": lambda: (FakeHardware(ports=_ports(8, 400)), FakeGpus()),
    "roce-small": lambda: (FakeHardware(ports=_ports(1, 100, "Ethernet")), FakeGpus(nics=1, nic_of=dict.fromkeys(range(8), 0))),
}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 -- http.server's name
        pass


@dataclass
class Lab:
    """A running simulated cluster and what was added to it; :meth:`close` tears all of it down."""

    cluster: SimCluster
    slurm: Any = None  # simcluster.slurm.SlurmSim when started with --slurm
    hardware: dict[str, FakeHardware] = field(default_factory=dict)
    gpus: dict[str, FakeGpus] = field(default_factory=dict)
    egress_url: str = ""
    state_profile: str | None = None  # the --hardware profile: what restore puts back
    _server: ThreadingHTTPServer | None = None

    def start_egress(self) -> str:
        """An HTTP server on the bridge, which every node reaches: the inventory's egress target."""
        root = self.cluster.workdir / "egress"
        root.mkdir(parents=True, exist_ok=True)
        with open(root / EGRESS_FILE, "wb") as f:
            f.truncate(_EGRESS_BYTES)
        self._server = ThreadingHTTPServer((self.cluster.bridge_address, 0), partial(_Quiet, directory=str(root)))
        threading.Thread(target=self._server.serve_forever, name="simcluster-egress", daemon=True).start()
        self.egress_url = f"http://{self.cluster.bridge_address}:{self._server.server_address[1]}/{EGRESS_FILE}"
        return self.egress_url

    def start_slurm(self) -> None:
        from simcluster.slurm import SlurmSim

        self.slurm = SlurmSim(self.cluster)
        self.slurm.start()

    def install(self, profile: str) -> None:
        """Every node gets the ports, GPUs and software stack ``profile`` expects (``HARDWARE``)."""
        if profile not in HARDWARE:
            raise SimClusterError(f"--hardware {profile}: one of {', '.join(HARDWARE)}")
        self.state_profile = profile
        for node in self.cluster.nodes:
            self.hardware[node.name], self.gpus[node.name] = HARDWARE[profile]()
            self.hardware[node.name].leaf = self.leaf(node.name)
            install_gpus(self.cluster, node, self.gpus[node.name])
            install_stack(self.cluster, node, FakeStack())
        install_hardware(self.cluster, self.hardware)

    def leaf(self, node: str) -> str:
        """The leaf switch a node hangs off: the first half of the nodes on leaf1, the rest on leaf2."""
        names = [n.name for n in self.cluster.nodes]
        return f"leaf{1 + names.index(node) * 2 // len(names)}"

    def write_inventories(self) -> dict[str, str]:
        """inventory.yaml (SSH) and, with Slurm, slurm-inventory.yaml; both list the egress target and
        label each node with its leaf (what a profile's oversubscription check needs)."""
        extra = {"egress": {"targets": [self.egress_url]}}
        out = {"ssh": self.cluster.write_inventory(self.cluster.workdir / "inventory.yaml", extra=extra)}
        if self.slurm is not None:
            out["slurm"] = self.slurm.write_inventory(self.cluster.workdir / "slurm-inventory.yaml", extra=extra)
        for path in out.values():
            doc = yaml.safe_load(path.read_text())
            for entry in doc["nodes"]:
                entry["labels"] = {"leaf": self.leaf(entry["name"])}
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return {k: str(v) for k, v in out.items()}

    def state(self, inventories: dict[str, str], control: str) -> dict[str, Any]:
        return {"inventories": inventories, "control": control, "egress": self.egress_url,
                "nodes": {n.name: n.address for n in self.cluster.nodes},
                "slurm_conf": str(self.slurm.conf) if self.slurm is not None else None,
                "hardware": self.state_profile}

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self.slurm is not None:
            self.slurm.stop()
        self.cluster.stop()

    # ------------------------------------------------------------------ faults

    def _model(self, node: str) -> FakeHardware:
        self.cluster.node(node)  # KeyError naming the nodes there are
        if node not in self.hardware:
            raise SimClusterError("no hardware stand-ins: start the lab with --hardware PROFILE")
        return self.hardware[node]

    def _reinstall(self) -> None:
        install_hardware(self.cluster, self.hardware)

    def port_rate(self, node: str, gbps: str) -> str:
        self._model(node).ports[0].rate_gbps = int(gbps)
        self._reinstall()
        return f"{node}: {self.hardware[node].ports[0].device} trained at {gbps} Gb/s"

    def symbol_errors(self, node: str, per_read: str) -> str:
        self._model(node).ports[0].counter_growth = {"SymbolErrorCounter": int(per_read)}
        self._reinstall()
        return f"{node}: {self.hardware[node].ports[0].device} gains {per_read} symbol errors a perfquery read"

    def slow_cable(self, node: str, peer: str, fraction: str) -> str:
        self._model(peer)
        self._model(node).slow_peers[peer] = float(fraction)
        self._reinstall()
        return f"{node}<->{peer}: RDMA and NCCL at {float(fraction):.0%} of normal"

    def pcie_only_pair(self, node: str, gpu_a: str, gpu_b: str) -> str:
        self._model(node)
        gpus = self.gpus[node]
        gpus.pcie_only_pairs = [*gpus.pcie_only_pairs, (int(gpu_a), int(gpu_b))]
        install_gpus(self.cluster, node, gpus)
        return f"{node}: GPU{gpu_a}<->GPU{gpu_b} over PCIe only ({gpus.pcie_path} in nvidia-smi topo -m)"

    def ofed(self, node: str, version: str) -> str:
        self._model(node)
        install_stack(self.cluster, node, dataclasses.replace(FakeStack(), ofed=version))
        return f"{node}: ofed_info says MLNX_OFED_LINUX-{version}"

    def drain(self, node: str, *reason: str) -> str:
        if self.slurm is None:
            raise SimClusterError("no Slurm: start the lab with --slurm")
        self.slurm.drain(node, " ".join(reason) or "simcluster fault")
        return f"{node}: drained in Slurm"

    def resume(self, node: str) -> str:
        if self.slurm is None:
            raise SimClusterError("no Slurm: start the lab with --slurm")
        self.slurm.resume(node)
        return f"{node}: resumed in Slurm"

    def restore(self, node: str) -> str:
        """Undo every fault on the node: network, sshd, and its hardware model back to the profile's."""
        self.cluster.restore(node)
        self.cluster.set_disk(node, mbps=None, iops=None)
        if node in self.hardware and self.state_profile:
            self.hardware[node], self.gpus[node] = HARDWARE[self.state_profile]()
            install_gpus(self.cluster, node, self.gpus[node])
            install_stack(self.cluster, node, FakeStack())
            self._reinstall()
        if self.slurm is not None and node in self.slurm.nodes:
            self.slurm.ensure_slurmds()
        return f"{node}: restored"


def _call(method: Callable[..., None], message: str) -> Callable[..., str]:
    def run(lab: Lab, *args: str) -> str:
        method(lab, *args)
        return message.format(*args)
    return run


#: name -> (arguments, what it does, how): the faults `python -m simcluster fault` sets
FAULTS: dict[str, tuple[str, str, Callable[..., str]]] = {
    "shape": ("NODE MBIT", "slow the node's link (tc tbf on its veth)",
              _call(lambda lab, n, r: lab.cluster.shape(n, int(r)), "{0}: link shaped to {1} Mbit/s")),
    "mtu": ("NODE MTU", "change the node's MTU", _call(lambda lab, n, m: lab.cluster.set_mtu(n, int(m)), "{0}: MTU {1}")),
    "stop-sshd": ("NODE", "stop the node's sshd (and so everything it runs)",
                  _call(lambda lab, n: lab.cluster.stop_sshd(n), "{0}: sshd stopped")),
    "freeze-sshd": ("NODE", "SIGSTOP the node's sshd: connections hang",
                    _call(lambda lab, n: lab.cluster.freeze_sshd(n), "{0}: sshd frozen")),
    "disk": ("NODE MBPS", "the node's modelled disk (cpu-free fio) at MBPS MB/s",
             _call(lambda lab, n, m: lab.cluster.set_disk(n, mbps=float(m)), "{0}: disk at {1} MB/s")),
    "port-rate": ("NODE GBPS", "the node's first RDMA port trained at GBPS (needs --hardware)", Lab.port_rate),
    "symbol-errors": ("NODE PER_READ", "the first port's symbol errors grow (needs --hardware)", Lab.symbol_errors),
    "slow-cable": ("NODE PEER FRACTION", "a bad cable between two nodes (needs --hardware)", Lab.slow_cable),
    "pcie-only-pair": ("NODE GPU GPU", "a GPU pair without NVLink (needs --hardware)", Lab.pcie_only_pair),
    "ofed": ("NODE VERSION", "another OFED version on the node (needs --hardware)", Lab.ofed),
    "drain": ("NODE [REASON]", "drain the node in Slurm (needs --slurm)", Lab.drain),
    "resume": ("NODE", "resume a drained node (needs --slurm)", Lab.resume),
    "restore": ("NODE", "undo every fault on the node", Lab.restore),
}


def apply(lab: Lab, request: list[str]) -> tuple[bool, str]:
    """One fault request (``["shape", "node02", "100"]``) applied; ``(ok, what it did or why not)``."""
    if not request or request[0] not in FAULTS:
        return False, f"unknown fault {request[:1]}: one of {', '.join(FAULTS)}"
    usage, _, how = FAULTS[request[0]]
    need = len([a for a in usage.split() if not a.startswith("[")])
    if len(request) - 1 < need:
        return False, f"usage: fault {request[0]} {usage}"
    try:
        lab.cluster.node(request[1])
        return True, how(lab, *request[1:])
    except (SimClusterError, KeyError, ValueError, OSError) as exc:
        return False, f"fault {' '.join(request)}: {exc}"


def write_state(lab: Lab, path: Path, inventories: dict[str, str], control: str) -> None:
    path.write_text(json.dumps(lab.state(inventories, control), indent=1))
