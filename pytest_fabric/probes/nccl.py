"""Multi-node NCCL all_reduce with nccl-tests, launched from the first node: by mpirun, or the Slurm way.

How the ranks are started depends on what the first node's transport says it runs under
(:mod:`pytest_fabric.transport.scheduler`), never on how it reaches the node:

- no scheduler (SSH): ``mpirun -H addr:GPUS,...``, its daemons started over ssh;
- a Slurm job whose srun offers PMIx (``srun --mpi=list``, or ``slurm: mpi: pmix_v4``):
  ``srun --jobid=J --overlap --mpi=pmix -N K -n K*GPUS --ntasks-per-node=GPUS -w NODES all_reduce_perf``;
- a Slurm job without PMIx (or ``slurm: mpi: none``): mpirun inside the job, told the job's nodes
  (``SLURM_JOB_NODELIST`` ... of the K nodes, not the step's own) and ``plm_slurm_args=--overlap``,
  so it starts its daemons as steps of the job beside the step it runs in.

Under Slurm the ranks nccl-tests lists must be GPUS on each of the K nodes: a launch that started
each rank as a job of its own (srun without a working PMIx) or on other nodes is an error.

The verdict reads bus bandwidth at the profile's message size from the per-size
rows, never the "Avg bus bandwidth" line (it averages the whole sweep).  Every
run pins ``NCCL_ALGO=Ring``: NCCL picks Tree, NVLS or CollNet by node count and
message size, and their bus bandwidths are not comparable with each other, so
one pair, the scaling curve and its baseline all run the same algorithm.

What a run can end in, and what the check then says:

- the table, exit 0, no wrong results: the bus bandwidth is judged;
- wrong results (``#wrong`` > 0, or ``# Out of bounds values : N FAILED``, after
  which nccl-tests exits 1): the check **fails**.  The collective ran and the
  cluster returned corrupted data, a measured fault of the nodes named, whatever
  the bandwidth and whatever ranks print after the table (their own ``Test NCCL
  failure`` lines, added to the message).  The single-node run
  (``gpu.node_allreduce``) is read the same way, by :func:`read_run`;
- any other non-zero exit (mpirun could not start a rank, NCCL failed, a rank
  crashed after printing its rows): an **error**, the run cannot be trusted; the
  message names the node, the command, the end of its output and what to try.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pytest_fabric.config.units import Quantity, bandwidth, parse_quantity
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers import nccl_tests, srun_mpi_list
from pytest_fabric.parsers.base import ParseError
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import CommandFailed
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.scheduler import SchedulerJob, scheduler_job
from pytest_fabric.transport.shellcmd import join, quote

__all__ = ["ALGORITHM", "BASELINE_PAIRS", "COLLECTIVES_PER_RUN", "SCALING_MIN_NODES", "SCALING_SAMPLES", "Launch",
           "Launcher", "allreduce", "baseline_pairs", "launcher_for", "misplaced", "nccl_hcas", "read_run", "scaling",
           "scaling_groups", "wrong_results"]

ALGORITHM = "Ring"
# Two-node runs the scaling baseline is the median of: pairs spread over the node list, so one
# bad pair (or a bad first node) cannot set the baseline.
BASELINE_PAIRS = 3
# Interfaces every node has alike (loopback, docker's and libvirt's bridges): MPI over them reaches no other node.
BTL_TCP_EXCLUDE = "127.0.0.1/8,sppp,docker0,virbr0"
# Runs per node count; the median is judged, so one slow run (a noisy neighbour) does not fail.
SCALING_SAMPLES = 3
# Fewer nodes make no curve beyond the two-node baseline: the check skips.
SCALING_MIN_NODES = 3

_FIX_LAUNCH = (
    "run the mpirun command by hand on the first node; check passwordless SSH between the nodes, "
    "that all_reduce_perf is on every node's PATH, and NCCL_DEBUG=WARN for NCCL's reason"
)
_FIX_SRUN = (
    "run the srun command by hand inside the job; check that Open MPI (and nccl-tests, built with MPI=1) "
    "support PMIx (ompi_info | grep pmix), that all_reduce_perf is on every node's PATH, and NCCL_DEBUG=WARN "
    "for NCCL's reason; slurm: {mpi: none} in the inventory launches with mpirun inside the job instead"
)
_FIX_MPIRUN_SLURM = (
    "run the mpirun command by hand inside the job; check that Open MPI was built with Slurm support "
    "(ompi_info | grep plm) and all_reduce_perf is on every node's PATH, and NCCL_DEBUG=WARN for NCCL's reason"
)
# A step's own SLURM_* (its one node, its one task) would be taken for the job's by the srun or mpirun
# it starts ("Only allocated 1 nodes asked for 2"): drop them all but the configuration's path.
_CLEAR_STEP_ENV = (
    "for v in $(env | sed -n 's/^\\(SLURM_[A-Za-z0-9_]*\\)=.*/\\1/p'); do "
    '[ "$v" = SLURM_CONF ] || unset "$v"; done; '
)


@dataclass(frozen=True)
class Launcher:
    """How a run across nodes starts its ranks: ``mpirun`` (over ssh), ``srun`` (PMIx) or ``mpirun-slurm``."""

    how: Literal["mpirun", "srun", "mpirun-slurm"] = "mpirun"
    job: SchedulerJob | None = None
    mpi: str | None = None  #: the srun --mpi plugin

    @property
    def fix(self) -> str:
        return {"srun": _FIX_SRUN, "mpirun-slurm": _FIX_MPIRUN_SLURM}.get(self.how, _FIX_LAUNCH)


def launcher_for(node: NodeHandle) -> Launcher:
    """How a run started from ``node`` launches: from its transport's job and, for ``auto``, srun --mpi=list."""
    job = scheduler_job(node.transport)
    if job is None or job.scheduler != "slurm":
        return Launcher()
    if job.mpi == "none":
        return Launcher("mpirun-slurm", job)
    if job.mpi != "auto":
        return Launcher("srun", job, job.mpi)
    listed = node.run("srun --mpi=list", timeout=30, check=False)
    plugins = srun_mpi_list.parse(listed.stdout + "\n" + listed.stderr)
    plugin = "pmix" if "pmix" in plugins else next((p for p in plugins if p.startswith("pmix")), None)
    return Launcher("srun", job, plugin) if plugin else Launcher("mpirun-slurm", job)


@dataclass(frozen=True)
class Launch:
    """What a multi-node launch must tell Open MPI and NCCL that they would not find on their own.

    ``hcas``: the RDMA ports the inventory (or the profile's ``ports.names``) names, as NCCL_IB_HCA
    takes them (``=mlx5_0:1,mlx5_1:1``: ``=`` is an exact match, so ``mlx5_1`` never also picks
    ``mlx5_10``); without it NCCL uses every HCA it finds, a storage HCA included.  ``nccl_env``:
    the RoCE class the profile requires (``NCCL_IB_TC``, ``NCCL_IB_GID_INDEX``, ``NCCL_IB_SL``), the
    same one perftest is given, so NCCL does not run in the lossy class.
    """

    hcas: tuple[str, ...] = ()
    nccl_env: tuple[str, ...] = ()


def _ip(address: str) -> bool:
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return False
    return True


def _nccl_env(algorithm: str, launch: Launch) -> list[str]:
    env = [f"NCCL_ALGO={algorithm}", "NCCL_DEBUG=VERSION"]
    if launch.hcas:
        env.append("NCCL_IB_HCA==" + ",".join(launch.hcas))
    return env + list(launch.nccl_env)


# -c 1: nccl-tests checks every result against the expected values (its default, made explicit).
CHECK_ITERS = 1
# -w and -n are left at nccl-tests' defaults: v2.17.0's src/common.cu (tag v2.17.0, commit e12dbb0)
# sets warmup_iters = 1 and iters = 20 (before 2.17 warmup was 5, as older recorded outputs show).
WARMUP_ITERS = 1
ITERS = 20
# The collectives one run of _program makes at its one size (common.cu, v2.17.0): TimeTest warms up
# warmup_iters at each size of the sweep (one size here), then BenchTime runs twice, out-of-place and
# in-place, each one sync collective, iters timed ones and CHECK_ITERS checked ones: 1 + 2 x 22 = 45.
COLLECTIVES_PER_RUN = WARMUP_ITERS + 2 * (1 + ITERS + CHECK_ITERS)


def _program(size_bytes: int) -> str:
    return f"all_reduce_perf -b {size_bytes} -e {size_bytes} -f 2 -g 1 -c {CHECK_ITERS}"


def _srun_command(nodes: Sequence[NodeHandle], size_bytes: int, gpus_per_node: int, algorithm: str,
                  launch: Launch, launcher: Launcher) -> str:
    assert launcher.job is not None
    names = quote(",".join(n.name for n in nodes))
    # srun passes its environment to the ranks: NCCL's settings go before it, not through --export
    # (whose commas would split NCCL_IB_HCA's list).
    return (
        _CLEAR_STEP_ENV + join(_nccl_env(algorithm, launch)) + " "
        f"srun --jobid={quote(launcher.job.job_id)} --overlap --mpi={quote(launcher.mpi or 'pmix')} "
        f"-N {len(nodes)} -n {len(nodes) * gpus_per_node} --ntasks-per-node={gpus_per_node} -w {names} "
        "--cpu-bind=none --kill-on-bad-exit=1 --input=none " + _program(size_bytes)
    )


def _command(nodes: Sequence[NodeHandle], size_bytes: int, gpus_per_node: int, algorithm: str,
             launch: Launch = Launch(), launcher: Launcher = Launcher()) -> str:
    if launcher.how == "srun":
        return _srun_command(nodes, size_bytes, gpus_per_node, algorithm, launch, launcher)
    inside = launcher.how == "mpirun-slurm"
    # Inside a Slurm job mpirun's daemons are started by srun, which knows the nodes by their Slurm names.
    hosts = quote(",".join(f"{n.name if inside else n.address}:{gpus_per_node}" for n in nodes))
    options = [
        # PATH and LD_LIBRARY_PATH of the launching shell reach the remote ranks: all_reduce_perf and
        # libnccl are found where they are on the first node, not only on the default PATH.
        "-x PATH", "-x LD_LIBRARY_PATH",
        # hcoll (Mellanox's collectives, in HPC-X and MLNX_OFED's Open MPI) is not used by NCCL and
        # fails to initialise on nodes without its daemons: off.
        "--mca coll_hcoll_enable 0",
    ]
    addresses = [n.address for n in nodes]
    if all(_ip(a) for a in addresses):
        # Open MPI's own wire-up on the network the hosts were named by (CIDR per host), not on
        # whichever interface it tries first (docker0, an IPoIB down link).
        cidrs = ",".join(f"{a}/{32 if ipaddress.ip_address(a).version == 4 else 128}" for a in addresses)
        options.append(f"--mca oob_tcp_if_include {cidrs}")
    # MPI's own messages (nccl-tests' bootstrap and result checks) off the interfaces every node has
    # alike.  Not btl_tcp_if_include with the hosts' /32s: with those, real Open MPI 4.1.4 hung in the
    # ranks' first collective across two nodes (the simulated cluster under a real mpirun, 40 s
    # timeout), and completed in 2 s with the network's /24 or without the option.
    options.append(f"--mca btl_tcp_if_exclude {BTL_TCP_EXCLUDE}")
    env = _nccl_env(algorithm, launch)
    prefix = ""
    if inside:
        assert launcher.job is not None
        names = quote(",".join(n.name for n in nodes))
        job = quote(launcher.job.job_id)
        # mpirun reads the job it runs in from these (its ras/plm slurm components): the K nodes, the
        # GPUs' worth of slots on each; its daemons' srun steps need --overlap beside the step mpirun is in.
        prefix = (
            _CLEAR_STEP_ENV + f"export SLURM_JOB_ID={job} SLURM_JOBID={job} SLURM_JOB_NODELIST={names} "
            f"SLURM_NODELIST={names} SLURM_NNODES={len(nodes)} SLURM_JOB_NUM_NODES={len(nodes)} "
            f"SLURM_TASKS_PER_NODE='{gpus_per_node}(x{len(nodes)})' OMPI_MCA_plm_slurm_args=--overlap; "
        )
    return (
        prefix + f"mpirun --allow-run-as-root -H {hosts} -np {len(nodes) * gpus_per_node} --bind-to none "
        + " ".join(options) + " "
        + " ".join(f"-x {quote(e)}" for e in env) + " "
        + _program(size_bytes)
    )


def misplaced(parsed: nccl_tests.NcclTestsResult, nodes: Sequence[NodeHandle], gpus_per_node: int) -> str | None:
    """What is wrong with where the ranks ran (None: GPUS ranks on each of the nodes, or no rank list).

    A launch that did not join the ranks into one job (srun without a working PMIx, nccl-tests
    built without MPI) prints each rank's own one-rank run; one that placed ranks elsewhere lists
    other hosts or counts.
    """
    if not parsed.ranks:
        return None
    expected = len(nodes) * gpus_per_node
    per_host: dict[str, int] = {}
    for rank in parsed.ranks:
        per_host[rank.host] = per_host.get(rank.host, 0) + 1
    if parsed.num_ranks == expected and len(per_host) == len(nodes) and set(per_host.values()) == {gpus_per_node}:
        names = {n.name for n in nodes}
        strangers = [h for h in per_host if h not in names and h.split(".")[0] not in names]
        if not strangers or len(strangers) == len(per_host):  # all named otherwise: FQDNs, other spellings
            return None
    listed = ", ".join(f"{count} on {host}" for host, count in per_host.items())
    return (
        f"nccl-tests ran {parsed.num_ranks} ranks ({listed}); expected {expected}: {gpus_per_node} on each of "
        f"{', '.join(n.name for n in nodes)}"
    )


def nccl_hcas(ports: Sequence[str]) -> tuple[str, ...]:
    """``mlx5_0/1`` (the inventory's and profile's spelling) as NCCL_IB_HCA writes it: ``mlx5_0:1``."""
    return tuple(p.replace("/", ":") if "/" in p else f"{p}:1" for p in ports)


def wrong_results(parsed: nccl_tests.NcclTestsResult) -> str | None:
    """What nccl-tests said was wrong with the results, or None when they checked out.

    For any nccl-tests run (the single-node one too): ``#wrong`` counts and a FAILED
    ``Out of bounds values`` line, the only verdict the old ``error`` layout gives.
    """
    found = []
    wrong = [
        (row.size_bytes, place, count)
        for row in parsed.rows
        for place, count in (("out-of-place", row.wrong), ("in-place", row.in_place_wrong))
        if count
    ]
    if wrong:
        cells = ", ".join(f"{count} at {size} B {place}" for size, place, count in wrong)
        found.append(f"{sum(c for _, _, c in wrong)} wrong elements ({cells})")
    if (parsed.out_of_bounds or 0) > 0 or parsed.out_of_bounds_ok is False:
        found.append(f"'Out of bounds values : {parsed.out_of_bounds} FAILED'")
    return "; ".join(found) or None


def read_run(result: CommandResult, *, fix: str) -> tuple[nccl_tests.NcclTestsResult, str | None]:
    """An nccl-tests run read for judging: its table, and what was wrong with its results (None if nothing).

    For every nccl-tests run, across nodes (:func:`allreduce`) or inside one
    (``gpu.node_allreduce``).  Wrong results come back whatever the exit code
    (nccl-tests exits 1 on them), with the ranks' own failure lines, printed beside
    the table, added to the description.  Raises :class:`CommandFailed` or
    :class:`MeasurementError` when the run cannot be judged: no table, or a
    non-zero exit or failure lines with results that checked out (a rank crashed;
    the figures cannot be trusted).
    """
    try:
        parsed = nccl_tests.parse(result.stdout)
    except ParseError:
        if result.exit_code != 0:
            raise CommandFailed(result, fix=fix) from None
        parsed = parse_or_raise(nccl_tests.parse, result, fix=fix)
    corrupted = wrong_results(parsed)
    failures = "; ".join(parsed.failures)
    if corrupted is not None:
        return parsed, corrupted + (f"; the ranks also reported: {failures}" if failures else "")
    if result.exit_code != 0:
        # The rows are there but a rank did not finish cleanly: the figures cannot be trusted.
        raise CommandFailed(result, fix=fix)
    if failures:
        raise MeasurementError(result.node, f"nccl-tests reported failures beside its table: {failures}",
                               command=result.command, fix=fix)
    return parsed, None


def allreduce(
    nodes: Sequence[NodeHandle],
    *,
    size_bytes: int,
    gpus_per_node: int,
    algorithm: str = ALGORITHM,
    timeout: float = 600,
    launch: Launch = Launch(),
) -> Measurement:
    """Bus bandwidth of all_reduce_perf across ``nodes`` at ``size_bytes`` (see the module for outcomes).

    Raises :class:`MeasurementError` or :class:`CommandFailed` when the run cannot be
    judged; returns a measurement that fails the check (``missing`` set) when the
    results were wrong.
    """
    first = nodes[0]
    how = launcher_for(first)
    command = _command(nodes, size_bytes, gpus_per_node, algorithm, launch, how)
    launcher = first
    names = ", ".join(n.name for n in nodes)
    result = launcher.run(command, timeout=timeout, check=False)
    parsed, corrupted = read_run(result, fix=how.fix)
    # Checked for the scheduler's launches, where a rank started as a job of its own is the usual fault
    # (srun without a working PMIx); mpirun over ssh places ranks by its -H list.
    wrong_place = misplaced(parsed, nodes, gpus_per_node) if how.how != "mpirun" else None
    if wrong_place is not None:
        raise MeasurementError(launcher.name, f"the {how.how} launch did not start one job across the nodes: "
                               f"{wrong_place}", command=command, fix=how.fix)
    try:
        busbw = nccl_tests.busbw_at(parsed, size_bytes)
        row = nccl_tests.row_at(parsed, size_bytes)
    except ParseError as exc:
        raise MeasurementError(launcher.name, str(exc), command=command) from exc
    version = f" (NCCL {parsed.nccl_version})" if parsed.nccl_version else ""
    unchecked = "" if row.wrong is not None or row.error is not None else "; results not checked by nccl-tests (N/A)"
    detail = (
        f"all_reduce_perf busbw at {size_bytes} B over {len(nodes)} nodes x {gpus_per_node} GPUs ({names}), "
        f"NCCL_ALGO={algorithm}{version}{unchecked}, launched by "
        + (f"srun --mpi={how.mpi}" if how.how == "srun" else "mpirun in the Slurm job" if how.how == "mpirun-slurm"
           else "mpirun")
    )
    value = bandwidth(busbw, "GB/s")
    missing = None
    if corrupted is not None:
        missing = (
            f"all_reduce over {names} returned wrong results: {corrupted} (exit code {result.exit_code}). "
            f"Measured {value.display('GB/s')}, but data was corrupted on the way: rerun on each pair of these "
            "nodes to find the one every bad run includes, and check its GPUs (dcgmi diag -r 3) and its "
            "HCAs' error counters"
        )
    return Measurement(
        value=value,
        detail=detail,
        evidence=(result,),
        missing=missing,
        extra={"tool_versions": {"nccl": parsed.nccl_version} if parsed.nccl_version else {}},
    )


def baseline_pairs(nodes: Sequence[NodeHandle], count: int = BASELINE_PAIRS) -> list[tuple[NodeHandle, NodeHandle]]:
    """Up to ``count`` neighbouring pairs spread evenly over ``nodes`` (first, middle, last ...).

    They are measured one after another, so they may share a node when there are few.
    """
    return [(nodes[i], nodes[i + 1]) for i in _baseline_starts(len(nodes), count)]


def _baseline_starts(node_count: int, count: int) -> list[int]:
    """Where each baseline pair starts in a node list of ``node_count`` (first, middle, last ...)."""
    if node_count < 2:
        return []
    last = node_count - 2
    return sorted({round(k * last / (count - 1)) for k in range(count)}) if count > 1 else [0]


def _curve_counts(node_count: int) -> list[int]:
    """The node counts the scaling curve measures: 4, 8, ... and all ``node_count`` nodes."""
    return sorted({2**k for k in range(2, node_count.bit_length()) if 2**k <= node_count} | {node_count})


def scaling_groups(node_count: int, pairs: int = BASELINE_PAIRS) -> tuple[int, list[int]]:
    """What :func:`scaling` measures on ``node_count`` nodes, each group ``samples`` times: how many
    two-node baseline pairs, and the curve's node counts (none below :data:`SCALING_MIN_NODES`, where
    the check skips). For the plan."""
    if node_count < SCALING_MIN_NODES:
        return 0, []
    return len(_baseline_starts(node_count, pairs)), _curve_counts(node_count)


def _median(values: Sequence[float]) -> float:
    # The upper median of an even count: a real run's figure, and the better of two.
    return sorted(values)[len(values) // 2]


def _runs(
    nodes: Sequence[NodeHandle], samples: int, *, size_bytes: int, gpus_per_node: int, timeout: float,
    launch: Launch = Launch(),
) -> tuple[list[Measurement], Measurement | None]:
    """``samples`` runs over ``nodes``; the second item is the first run with wrong results, if any."""
    runs = [allreduce(nodes, size_bytes=size_bytes, gpus_per_node=gpus_per_node, timeout=timeout, launch=launch)
            for _ in range(samples)]
    return runs, next((m for m in runs if m.missing is not None), None)


def _gbytes(measured: Measurement) -> float:
    assert isinstance(measured.value, Quantity)
    return float(measured.value.to("GB/s"))


def scaling(
    nodes: Sequence[NodeHandle],
    *,
    size_bytes: int,
    gpus_per_node: int,
    samples: int = SCALING_SAMPLES,
    pairs: int = BASELINE_PAIRS,
    timeout: float = 600,
    launch: Launch = Launch(),
) -> Measurement:
    """Bus bandwidth at 4, 8, ... all nodes as a share of the two-node figure (the worst share).

    The two-node figure is the median over :func:`baseline_pairs`; every figure is the
    median of ``samples`` runs, all with ``NCCL_ALGO=Ring``.  A run with wrong results
    fails the check; one that cannot be judged raises.
    """
    evidence: list[CommandResult] = []
    corrupted: Measurement | None = None

    def measure(group: Sequence[NodeHandle]) -> tuple[float, list[float]]:
        nonlocal corrupted
        runs, bad = _runs(group, samples, size_bytes=size_bytes, gpus_per_node=gpus_per_node, timeout=timeout,
                          launch=launch)
        for run in runs:
            evidence.extend(run.evidence)
        corrupted = corrupted or bad
        figures = [_gbytes(m) for m in runs]
        return _median(figures), figures

    base_runs = [(a, b, *measure([a, b])) for a, b in baseline_pairs(nodes, pairs)]
    base = _median([median for _, _, median, _ in base_runs])
    curve = [(count, *measure(nodes[:count])) for count in _curve_counts(len(nodes))]
    ratios = [(count, median / base) for count, median, _ in curve]
    worst = min(ratios, key=lambda r: r[1])
    baseline_text = ", ".join(f"{a.name}+{b.name} {median:.1f}" for a, b, median, _ in base_runs)
    curve_text = ", ".join(f"{count} nodes {median:.1f}" for count, median, _ in curve)
    detail = (
        f"worst at {worst[0]} nodes vs 2 nodes; busbw GB/s, median of {samples} runs, NCCL_ALGO={ALGORITHM}: "
        f"2 nodes {base:.1f} (median of {baseline_text}), {curve_text}"
    )
    return Measurement(
        value=parse_quantity(f"{worst[1] * 100:.4f}%"),
        detail=detail,
        evidence=tuple(evidence),
        missing=None if corrupted is None else corrupted.missing,
        extra={
            "scaling": [
                {"nodes": 2, "busbw_gbytes": base, "pairs": [
                    {"nodes": [a.name, b.name], "busbw_gbytes": median, "samples": figures}
                    for a, b, median, figures in base_runs
                ]},
                *({"nodes": count, "busbw_gbytes": median, "samples": figures} for count, median, figures in curve),
            ],
            "algorithm": ALGORITHM,
        },
    )
