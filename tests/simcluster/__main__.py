"""Run a simulated cluster by hand (as root, from the repository root, ``PYTHONPATH=tests``):

    python -m simcluster up --nodes 4 [--slurm] [--hardware hdr200] [--workdir DIR]
    python -m simcluster fault shape node02 100        # in another shell, while `up` runs
    python -m simcluster run --profile hdr200 [--slurm] [PYTEST_ARGS ...]
    python -m simcluster faults                        # what `fault` can set

`up` brings the cluster up (with an HTTP egress target on its bridge; with --slurm a real Slurm;
with --hardware the stand-ins a bundled profile expects), writes DIR/inventory.yaml (and
DIR/slurm-inventory.yaml), prints how to use them, and tears it all down on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from simcluster.cluster import SimCluster, SimClusterError, missing_prerequisites
from simcluster.control import ControlServer, request
from simcluster.lab import FAULTS, HARDWARE, STATE_FILE, Lab, apply, write_state

_WORKDIR = Path("/tmp/fabric-sim")


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    # SIGTERM takes the same path as Ctrl-C, so the finally below tears the cluster down.
    raise KeyboardInterrupt


def _up(args: argparse.Namespace) -> int:
    missing = missing_prerequisites()
    if args.slurm:
        from simcluster.slurm import missing_slurm

        missing += missing_slurm()
    if missing:
        print("cannot start a simulated cluster: " + "; ".join(missing), file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _raise_interrupt)
    lab = Lab(SimCluster(args.nodes, args.workdir, name=args.name, cpu_free=args.cpu_free))
    control: ControlServer | None = None
    try:
        cluster = lab.cluster
        cluster.start()
        lab.start_egress()
        if args.hardware:
            lab.install(args.hardware)
        if args.slurm:
            lab.start_slurm()
        inventories = lab.write_inventories()
        control = ControlServer(cluster.workdir / "control.sock", lambda words: apply(lab, words))
        write_state(lab, cluster.workdir / STATE_FILE, inventories, str(control.path))
        first = cluster.nodes[0]
        print(f"{len(cluster.nodes)} nodes up in {cluster.started_s:.2f} s "
              f"(prefix {cluster.prefix}, bridge {cluster.bridge} {cluster.bridge_address}/16)"
              + (", cpu-free iperf3 and fio" if cluster.cpu_free else "")
              + (f", {args.hardware} hardware stand-ins" if args.hardware else "")
              + (", Slurm (partition sim)" if args.slurm else ""))
        for node in cluster.nodes:
            print(f"  {node.name}  {node.address}  netns {node.netns}  sshd pid {node.sshd_pid}"
                  f"  stand-ins: {node.bindir}")
        print(f"\ninventory: {inventories['ssh']}")
        print(f"egress:    {lab.egress_url} (served from the bridge, inside the cluster's network)")
        print(f"ssh:       {' '.join(cluster.ssh_argv(first, 'hostname')[:-1])} hostname")
        print(f"pytest:    pytest --cluster {inventories['ssh']} --profile <profile>")
        if lab.slurm is not None:
            print(f"slurm:     export SLURM_CONF={lab.slurm.conf}   # then sinfo, salloc -p sim ...")
            print(f"           pytest --cluster {inventories['slurm']} --profile <profile>")
        workdir = "" if args.workdir == _WORKDIR else f" --workdir {args.workdir}"
        print(f"faults:    python -m simcluster{workdir} fault shape {first.name} 100   "
              f"(python -m simcluster faults lists them)")
        print(f"run:       python -m simcluster{workdir} run --profile <profile>"
              + (" [--slurm]" if lab.slurm is not None else ""))
        print("\nCtrl-C or SIGTERM tears it down.", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("\ntearing down", flush=True)
    except SimClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if control is not None:
            control.close()
        (args.workdir / STATE_FILE).unlink(missing_ok=True)
        lab.close()
    return 0


def _state(workdir: Path) -> dict[str, object] | None:
    try:
        return json.loads((workdir / STATE_FILE).read_text())  # type: ignore[no-any-return]
    except FileNotFoundError:
        print(f"no simulated cluster runs with workdir {workdir}: start one with python -m simcluster up",
              file=sys.stderr)
        return None


def _fault(args: argparse.Namespace) -> int:
    state = _state(args.workdir)
    if state is None:
        return 2
    ok, said = request(Path(str(state["control"])), [args.fault, *args.args])
    print(said, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def _faults(args: argparse.Namespace) -> int:
    for name, (usage, what, _) in FAULTS.items():
        print(f"  fault {name} {usage}".ljust(44) + what)
    return 0


def _run(args: argparse.Namespace, pytest_args: list[str]) -> int:
    state = _state(args.workdir)
    if state is None:
        return 2
    inventories = dict(state["inventories"])  # type: ignore[call-overload]
    env = dict(os.environ)
    if args.slurm:
        if "slurm" not in inventories:
            print("this cluster runs no Slurm: start it with python -m simcluster up --slurm", file=sys.stderr)
            return 2
        env = {k: v for k, v in env.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = str(state["slurm_conf"])
    inventory = inventories["slurm" if args.slurm else "ssh"]
    argv = [sys.executable, "-m", "pytest", "--cluster", inventory, "--profile", args.profile, *pytest_args]
    print("running: " + " ".join(argv[2:]), flush=True)
    return subprocess.run(argv, env=env).returncode


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    parser = argparse.ArgumentParser(prog="python -m simcluster",
                                     description="Simulated GPU cluster for pytest-fabric.")
    parser.add_argument("--workdir", type=Path, default=_WORKDIR,
                        help=f"keys, per-node dirs and the inventories go here (default {_WORKDIR})")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="bring a cluster up and keep it until Ctrl-C/SIGTERM")
    up.add_argument("--nodes", type=int, default=4, help="number of nodes (default 4)")
    up.add_argument("--workdir", type=Path, default=argparse.SUPPRESS, help="as before the command")
    up.add_argument("--name", default="sim", help="inventory name (default sim)")
    up.add_argument("--cpu-free", action="store_true",
                    help="iperf3 and fio are stand-ins that sleep for their run and report the node's link and modelled disk (for hundreds of nodes)")
    up.add_argument("--slurm", action="store_true", help="start a real Slurm on the nodes (munged, slurmctld, slurmds)")
    up.add_argument("--hardware", choices=sorted(HARDWARE), default=None,
                    help="install the stand-ins (RDMA ports, GPUs, OFED, DCGM) a bundled profile expects")
    fault = sub.add_parser("fault", help="set a fault on a running cluster (python -m simcluster faults lists them)")
    fault.add_argument("fault", choices=sorted(FAULTS))
    fault.add_argument("args", nargs="*")
    sub.add_parser("faults", help="list the faults `fault` sets")
    run = sub.add_parser("run", help="run pytest-fabric against the running cluster; further arguments go to pytest")
    run.add_argument("--profile", required=True, help="a bundled profile's name or a profile file")
    run.add_argument("--slurm", action="store_true", help="reach the nodes through Slurm (slurm-inventory.yaml)")
    args, rest = parser.parse_known_args(argv)
    if rest and args.command != "run":
        parser.error("unrecognized arguments: " + " ".join(rest))
    if args.command == "up":
        return _up(args)
    if args.command == "fault":
        return _fault(args)
    if args.command == "faults":
        return _faults(args)
    return _run(args, rest)


if __name__ == "__main__":
    sys.exit(main())
