"""Run a simulated cluster by hand: ``python -m simcluster up --nodes 4 --workdir DIR``.

Brings the cluster up, writes DIR/inventory.yaml, prints how to use it, and tears it all down on
Ctrl-C or SIGTERM. Must run as root from the repository root.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from simcluster.cluster import SimCluster, SimClusterError, missing_prerequisites


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM takes the same path as Ctrl-C, so the finally below tears the cluster down.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(prog="python -m simcluster",
                                     description="Simulated GPU cluster for pytest-fabric.")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="bring a cluster up and keep it until Ctrl-C/SIGTERM")
    up.add_argument("--nodes", type=int, default=4, help="number of nodes (default 4)")
    up.add_argument("--workdir", type=Path, default=Path("/tmp/fabric-sim"),
                    help="keys, per-node dirs and inventory.yaml go here")
    up.add_argument("--name", default="sim", help="inventory name (default sim)")
    up.add_argument("--cpu-free", action="store_true",
                    help="iperf3 and fio are stand-ins that sleep for their run and report the node's link and modelled disk (for hundreds of nodes)")
    args = parser.parse_args(argv)

    missing = missing_prerequisites()
    if missing:
        print("cannot start a simulated cluster: " + "; ".join(missing), file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _raise_interrupt)
    cluster = SimCluster(args.nodes, args.workdir, name=args.name, cpu_free=args.cpu_free)
    try:
        cluster.start()
        inventory = cluster.write_inventory(cluster.workdir / "inventory.yaml")
        first = cluster.nodes[0]
        print(f"{len(cluster.nodes)} nodes up in {cluster.started_s:.2f} s "
              f"(prefix {cluster.prefix}, bridge {cluster.bridge} {cluster.bridge_address}/16)"
              + (", cpu-free iperf3 and fio" if cluster.cpu_free else ""))
        for node in cluster.nodes:
            print(f"  {node.name}  {node.address}  netns {node.netns}  sshd pid {node.sshd_pid}"
                  f"  stand-ins: {node.bindir}")
        print(f"\ninventory: {inventory}")
        print(f"ssh:       {' '.join(cluster.ssh_argv(first, 'hostname')[:-1])} hostname")
        print(f"pytest:    pytest --cluster {inventory} --profile <profile>")
        print("\nCtrl-C or SIGTERM tears it down.", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("\ntearing down", flush=True)
    except SimClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
