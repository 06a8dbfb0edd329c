"""The storage probe against canned findmnt and fio output (MockTransport): what it checks, runs and refuses."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Mount, Node
from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.probes import storage
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import NodeUnreachable, ToolMissing
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool
from pytest_fabric.transport.results import CommandResult

DATA = Path(__file__).resolve().parents[1] / "data"
ROOT_EXT4 = (DATA / "findmnt" / "target-ext4-root.json").read_text()
FIO_READ = (DATA / "fio" / "json-seqread-1M-8M-fio-3.33.json").read_text()
FIO_ODIRECT_REFUSED = (DATA / "fio" / "json-error-22-ramfs-odirect-fio-3.33.json").read_text()
# What fio 3.33 printed on stderr beside that JSON (captured with it).
FIO_ODIRECT_STDERR = "fio: looks like your file system does not support direct=1/buffered=0\nfio: destination does not support O_DIRECT\n"
WORKDIR = "/data/pytest-fabric.abc123"


def findmnt(target: str, fstype: str, options: str, source: str = "srv:/export") -> str:
    return json.dumps({"filesystems": [{"target": target, "source": source, "fstype": fstype, "options": options}]})


def handle(transport: MockTransport) -> NodeHandle:
    return NodeHandle(Node(name=transport.node, host=transport.node), ConnectionPool(lambda name: transport))


def node(name: str, mounted: str | CannedCommand, **more: str | CannedCommand) -> NodeHandle:
    answers: dict[str, str | CannedCommand] = {r"findmnt -J": mounted, r"^mktemp -d": WORKDIR + "\n", r"^rm -rf": ""}
    answers.update(more)
    return handle(MockTransport(name, answers))


NFS_RDMA = findmnt("/data", "nfs4", "rw,relatime,vers=4.2,proto=rdma,port=20049")
NOT_MOUNTED = "pytest-fabric: not a mount point\n" + ROOT_EXT4
STATED = Mount("/data", "nfs4", ("proto=rdma",))
READ = storage.FioSettings(rw="read", size_bytes=8 << 20, block_size_bytes=1 << 20, check="storage.sequential_read")
WRITE = storage.FioSettings(rw="write", size_bytes=8 << 20, block_size_bytes=1 << 20, check="storage.sequential_write")


def test_a_directory_with_nothing_mounted_says_what_it_lives_on() -> None:
    state = storage.check_mount(node("gpu01", NOT_MOUNTED), Mount("/mnt/lustre", "lustre"))
    assert state.exists and state.mounted is None and state.containing is not None
    assert state.problems() == [
        "/mnt/lustre is not a mount point on gpu01: it is a directory on / "
        "(ext4 from /dev/vda (rw,relatime,discard,resv_strict,resuid=65534,resgid=65534))"
    ]
    measured = storage.mount_measurement(state)
    assert measured.missing == state.problems()[0]


def test_another_type_or_missing_options_are_named_with_what_is_mounted() -> None:
    tcp = findmnt("/data", "nfs", "rw,vers=3,proto=tcp")
    state = storage.check_mount(node("gpu01", tcp), STATED)
    assert state.problems() == [
        "/data on gpu01 is nfs from srv:/export (rw,vers=3,proto=tcp), not nfs4 as the inventory states",
        "/data on gpu01 is mounted without proto=rdma (found proto=tcp; mounted rw,vers=3,proto=tcp)",
    ]
    measured = storage.mount_measurement(state)
    assert measured.bounds == {"mounted": "yes", "fstype": "nfs", "options": "proto=tcp"}
    assert storage.check_mount(node("gpu01", NFS_RDMA), STATED).ok


def test_stacked_mounts_are_judged_by_the_one_on_top() -> None:
    stacked = (DATA / "findmnt" / "mountpoint-stacked-tmpfs.json").read_text()
    state = storage.check_mount(node("gpu01", stacked), Mount("/dev/shm", "tmpfs"))
    assert state.ok and state.mounted is not None and state.mounted.fstype == "tmpfs"


def test_a_missing_directory_and_a_missing_findmnt() -> None:
    gone = storage.check_mount(node("gpu01", "pytest-fabric: no such directory\n"), STATED)
    assert gone.problems() == ["/data does not exist on gpu01"]
    no_tool = node("gpu01", CannedCommand(exit_code=127, stderr="bash: findmnt: command not found"))
    with pytest.raises(ToolMissing, match="install util-linux on gpu01"):
        storage.check_mount(no_tool, STATED)


def test_no_throughput_is_measured_on_a_mount_that_is_not_as_stated() -> None:
    unmounted = node("gpu01", NOT_MOUNTED)
    with pytest.raises(MeasurementError, match="is not a mount point on gpu01.*nothing was measured there") as raised:
        storage.sequential(unmounted, Mount("/data"), WRITE)
    assert "fix: mount /data on gpu01 as the inventory states" in str(raised.value)
    assert not any(c.startswith(("fio", "mktemp")) for c in unmounted.transport.calls)  # type: ignore[attr-defined]


def test_tmpfs_is_memory_even_with_odirect_unless_direct_false() -> None:
    tmpfs = findmnt("/data", "tmpfs", "rw,relatime,size=262144k", source="simtmpfs")
    with pytest.raises(MeasurementError, match="is tmpfs on gpu01: its files live in memory") as raised:
        storage.sequential(node("gpu01", tmpfs), Mount("/data"), WRITE)
    assert "set direct: false for storage.sequential_write" in str(raised.value)

    buffered = storage.FioSettings(rw="write", size_bytes=8 << 20, block_size_bytes=1 << 20, direct=False)
    box = node("gpu01", tmpfs, **{r"^fio ": json.dumps(_as_write(json.loads(FIO_READ)))})
    measured = storage.sequential(box, Mount("/data"), buffered)
    assert measured.extra["io"] == "buffered" and "buffered (direct: false), ended by fsync" in measured.detail
    (fio_command,) = [c for c in box.transport.calls if c.startswith("fio ")]  # type: ignore[attr-defined]
    assert "--direct=0" in fio_command and "--end_fsync=1" in fio_command


def _as_write(document: dict[str, object]) -> dict[str, object]:
    """The captured read run as a write run (its read and write figures swapped)."""
    for job in document["jobs"]:  # type: ignore[attr-defined]
        job["read"], job["write"] = job["write"], job["read"]
    return document


def test_a_refused_odirect_is_an_error_and_never_a_buffered_rerun() -> None:
    ext4 = findmnt("/data", "fuse.sshfs", "rw,nosuid,nodev")
    box = node("gpu01", ext4, **{r"^fio ": CannedCommand(exit_code=1, stdout=FIO_ODIRECT_REFUSED, stderr=FIO_ODIRECT_STDERR)})
    with pytest.raises(MeasurementError, match="refused O_DIRECT .*destination does not support O_DIRECT") as raised:
        storage.sequential(box, Mount("/data"), WRITE)
    assert "set direct: false for storage.sequential_write" in str(raised.value)
    assert len([c for c in box.transport.calls if c.startswith("fio ")]) == 1  # type: ignore[attr-defined]


def test_a_read_on_a_shared_mount_reads_files_another_node_laid_out() -> None:
    reader = node("gpu01", NFS_RDMA, **{r"^stat ": f"{WORKDIR}/pytest-fabric-read.0.0 8388608 bytes\n", r"^fio ": FIO_READ})
    writer = node("gpu02", NFS_RDMA, **{r"^fio .*--create_only=1": FIO_READ})
    measured = storage.sequential(reader, STATED, READ, peers=[writer])
    assert measured.extra["read_from"] == {"laid_out_by": "gpu02", "cache": "other node"}
    assert "files laid out by gpu02 on the shared mount; gpu01 never wrote them" in measured.detail
    assert [c.split()[0] for c in writer.transport.calls] == ["test", "mktemp", "fio", "rm"]  # type: ignore[attr-defined]
    (read,) = [c for c in reader.transport.calls if c.startswith("fio ")]  # type: ignore[attr-defined]
    assert "--allow_file_create=0" in read and "--invalidate=1" in read and "--create_only" not in read
    assert [e.node for e in measured.evidence if e.command.startswith("fio ")] == ["gpu02", "gpu01"]


def test_a_shared_mount_another_node_does_not_see_is_not_read_at_all() -> None:
    reader = node("gpu01", NFS_RDMA, **{r"^stat ": CannedCommand(exit_code=1, stderr="stat: cannot statx: No such file")})
    writer = node("gpu02", NFS_RDMA, **{r"^fio .*--create_only=1": FIO_READ})
    with pytest.raises(MeasurementError, match="the files gpu02 laid out in .* are not there on gpu01"):
        storage.sequential(reader, STATED, READ, peers=[writer])
    assert writer.transport.calls[-1].startswith("rm -rf")  # type: ignore[attr-defined]


def test_a_read_on_a_local_disk_drops_caches_or_says_only_fio_invalidated() -> None:
    xfs = findmnt("/data", "xfs", "rw,relatime", source="/dev/nvme0n1")
    local = Mount("/data", "xfs", shared=False)
    common: dict[str, str | CannedCommand] = {r"^stat ": f"{WORKDIR}/pytest-fabric-read.0.0 8388608 bytes\n", r"^fio ": FIO_READ}
    root = node("gpu01", xfs, **{r"drop_caches": "", **common})
    measured = storage.sequential(root, local, READ, peers=[node("gpu02", xfs)])
    assert measured.extra["read_from"] == {"laid_out_by": "gpu01", "cache": "dropped"}
    assert "then its page cache dropped (sync; echo 3 > /proc/sys/vm/drop_caches)" in measured.detail
    calls = root.transport.calls  # type: ignore[attr-defined]
    layout, drop = next(i for i, c in enumerate(calls) if "--create_only=1" in c), next(i for i, c in enumerate(calls) if "drop_caches" in c)
    assert layout < drop < next(i for i, c in enumerate(calls) if "--allow_file_create=0" in c)

    refused = CannedCommand(exit_code=1, stderr="sh: 1: cannot create /proc/sys/vm/drop_caches: Permission denied")
    user = node("gpu01", xfs, **{r"drop_caches": refused, **common})
    measured = storage.sequential(user, local, READ)
    assert measured.extra["read_from"]["cache"] == "fio invalidate=1"
    assert "Permission denied: not root?), so only fio's invalidate=1" in measured.detail


def test_checkpoint_writers_are_buffered_and_end_with_fsync() -> None:
    xfs = findmnt("/data", "xfs", "rw", source="/dev/nvme0n1")
    box = node("gpu01", xfs, **{r"^fio ": json.dumps(_as_write(json.loads(FIO_READ)))})
    settings = storage.FioSettings(rw="write", size_bytes=512 << 20, block_size_bytes=1 << 20, jobs=8, direct=False,
                                   fsync_on_close=True, check="storage.checkpoint_write")
    measured = storage.checkpoint_write(box, Mount("/data"), settings)
    (command,) = [c for c in box.transport.calls if c.startswith("fio ")]  # type: ignore[attr-defined]
    assert all(flag in command for flag in ("--numjobs=8", "--direct=0", "--end_fsync=1", "--size=536870912"))
    assert measured.extra["writers"] == 8 and "4096 MiB over 8 writer(s)" in measured.detail


def test_shared_mounts_by_stated_flag_stated_type_or_mounted_type() -> None:
    lustre = node("gpu01", findmnt("/lfs", "lustre", "rw,flock", source="10.0.0.1@o2ib:/fs"))
    specs = [Mount("/lfs"), Mount("/nvme", "xfs"), Mount("/data", "nfs4"), Mount("/scratch", "xfs", shared=True),
             Mount("/nfs", "nfs", shared=False)]
    shared, reasons = storage.shared_mounts(lustre, specs)
    assert [m.path for m in shared] == ["/lfs", "/data", "/scratch"]
    assert reasons == ["/nvme is xfs, a node-local filesystem", "/nfs is node-local (shared: false)"]


class _Down(MockTransport):
    """A node whose sshd stopped: every command is refused."""

    def run(self, command: str, *, timeout: float, check: bool = True) -> CommandResult:
        raise NodeUnreachable(self.node, "connection refused (sshd stopped)")


def test_a_peer_that_cannot_be_reached_does_not_lay_out_the_files_another_does() -> None:
    # node04 laid out the files node03 reads; node04's sshd stopped: node03 errored and was sent back.
    reader = node("node03", NFS_RDMA, **{r"^stat ": f"{WORKDIR}/pytest-fabric-read.0.0 8388608 bytes\n", r"^fio ": FIO_READ})
    down = handle(_Down("node04", {}))
    writer = node("node05", NFS_RDMA, **{r"^fio .*--create_only=1": FIO_READ})
    measured = storage.sequential(reader, STATED, READ, peers=[down, writer])
    assert measured.extra["read_from"] == {"laid_out_by": "node05", "cache": "other node"}


# --- all nodes at once on a shared mount: figures that add up (issue 20) ---------------------------


def _fio_wrote(io_bytes: int, runtime_s: float) -> str:
    """fio JSON of a write job that wrote ``io_bytes`` in ``runtime_s`` (the captured run, reshaped)."""
    document = _as_write(json.loads(FIO_READ))
    for job in document["jobs"]:  # type: ignore[attr-defined]
        job["write"].update(io_bytes=io_bytes, io_kbytes=io_bytes // 1024, runtime=int(runtime_s * 1000),
                            bw_bytes=int(io_bytes / runtime_s), bw=int(io_bytes / runtime_s / 1024))
        job["job_runtime"] = int(runtime_s * 1000)
    return json.dumps(document)


AGGREGATE = storage.FioSettings(rw="write", size_bytes=1 << 30, block_size_bytes=1 << 20, iodepth=16, ioengine="libaio",
                                runtime_s=10, check="storage.aggregate_write")


def test_the_shared_figure_is_all_bytes_over_the_span_not_the_sum_of_rates() -> None:
    # The case: one node writes its share at 8 GB/s and finishes; the other, slowed while
    # both ran, then has the filesystem to itself. 8 + 5 = 13 GB/s is what adding says; the
    # filesystem took 160 GB in 16 s: 10 GB/s.
    runs = [storage.WriterRun("gpu01", 80 * 10**9, 10.0, 0.0, 10.0), storage.WriterRun("gpu02", 80 * 10**9, 16.0, 0.0, 16.0)]
    figure = storage.shared_figure(runs)
    assert figure.sum_of_rates == pytest.approx(13e9)
    assert figure.span_s == 16.0 and figure.bytes_per_s == pytest.approx(10e9)


def test_the_span_runs_from_the_first_launch_to_the_last_return() -> None:
    # Time-based runs of 30 s, launched 0.4 s apart, the last one back at 31.0 s.
    runs = [storage.WriterRun("gpu01", 300 * 10**9, 30.0, 0.0, 30.3), storage.WriterRun("gpu02", 150 * 10**9, 30.0, 0.4, 31.0)]
    figure = storage.shared_figure(runs)
    assert figure.span_s == pytest.approx(31.0) and figure.fio_span_s == 30.0
    assert figure.bytes_per_s == pytest.approx(450e9 / 31.0)  # below the 15 GB/s the rates add up to
    assert figure.sum_of_rates == pytest.approx(15e9)
    # a clock that says less than fio ran (a mock transport returns at once) gives way to fio's runtime
    instant = [storage.WriterRun("gpu01", 10**9, 2.0, 5.0, 5.0)]
    assert storage.shared_figure(instant).span_s == 2.0


def test_aggregate_write_runs_time_based_and_reports_the_shared_figure_not_the_sum() -> None:
    lustre = findmnt("/lfs", "lustre", "rw,flock", source="10.0.0.1@o2ib:/fs")
    fast = node("gpu01", lustre, **{r"^fio ": _fio_wrote(80 * 10**9, 10.0)})  # 8 GB/s, done at 10 s
    slow = node("gpu02", lustre, **{r"^fio ": _fio_wrote(80 * 10**9, 16.0)})  # 5 GB/s over 16 s
    measured = storage.aggregate_write([fast, slow], [Mount("/lfs", "lustre")], AGGREGATE)
    assert measured.value == parse_quantity("10 GB/s")  # 160 GB over 16 s, not 8 + 5
    shared = measured.extra["shared"]["/lfs"]
    assert shared["total_bytes"] == 160 * 10**9 and shared["sum_of_rates_bytes_per_s"] == pytest.approx(13e9)
    assert measured.extra["per_node_bytes_per_s"]["/lfs"] == {"gpu01": 8e9, "gpu02": 5e9}
    assert "judged by all bytes written over the span from the first start to the last end" in measured.detail
    assert "the nodes' own rates add up to 13 GB/s, which is not the figure" in measured.detail
    for box in (fast, slow):
        (command,) = [c for c in box.transport.calls if c.startswith("fio ")]  # type: ignore[attr-defined]
        for flag in ("--time_based", "--runtime=10", "--ioengine=libaio", "--iodepth=16", "--direct=1"):
            assert flag in command.split(), (flag, command)
    with pytest.raises(ValueError, match="time-based"):
        storage.aggregate_write([fast], [Mount("/lfs", "lustre")], storage.FioSettings(rw="write", size_bytes=1, block_size_bytes=1))


def test_sequential_checks_say_the_engine_and_depth() -> None:
    xfs = findmnt("/data", "xfs", "rw", source="/dev/nvme0n1")
    queued = storage.FioSettings(rw="write", size_bytes=8 << 20, block_size_bytes=1 << 20, iodepth=16, ioengine="libaio")
    box = node("gpu01", xfs, **{r"^fio ": json.dumps(_as_write(json.loads(FIO_READ)))})
    measured = storage.sequential(box, Mount("/data"), queued)
    (command,) = [c for c in box.transport.calls if c.startswith("fio ")]  # type: ignore[attr-defined]
    assert "--ioengine=libaio" in command and "--iodepth=16" in command
    assert "libaio iodepth 16" in measured.detail
    one = storage.sequential(node("gpu01", xfs, **{r"^fio ": json.dumps(_as_write(json.loads(FIO_READ)))}), Mount("/data"), WRITE)
    assert "psync, one request at a time" in one.detail


class _Logged(MockTransport):
    """A MockTransport that writes each command, with its node, to one log shared by the nodes."""

    def __init__(self, node: str, answers: dict[str, str | CannedCommand], log: list[tuple[str, str]]) -> None:
        super().__init__(node, answers)
        self.log = log

    def run(self, command: str, *, timeout: float, check: bool = True) -> CommandResult:
        self.log.append((self.node, command.split()[0]))
        return super().run(command, timeout=timeout, check=check)


TOGETHER_WRITE = storage.FioSettings(rw="write", size_bytes=64 << 20, block_size_bytes=1 << 20, iodepth=16,
                                     ioengine="libaio", runtime_s=20, check="storage.sequential_write")


def test_a_together_run_prepares_every_node_then_launches_all_time_based_over_the_same_window() -> None:
    lustre = findmnt("/lfs", "lustre", "rw,flock", source="10.0.0.1@o2ib:/fs")
    log: list[tuple[str, str]] = []
    # Over the same 20 s window: 5 GB/s and 2 GB/s, each its share while both ran.
    wrote = {"gpu01": _fio_wrote(100 * 10**9, 20.0), "gpu02": _fio_wrote(40 * 10**9, 20.0)}
    nodes = [handle(_Logged(name, {r"findmnt -J": lustre, r"^mktemp -d": WORKDIR + "\n", r"^rm -rf": "",
                                   r"^fio ": wrote[name]}, log)) for name in ("gpu01", "gpu02")]
    out = storage.together(nodes, Mount("/lfs", "lustre"), TOGETHER_WRITE, "sequential", lambda n: [], at_once=2)
    figures = {name: m for name, m in out.items() if not isinstance(m, Exception)}
    assert figures["gpu01"].value == parse_quantity("5 GB/s") and figures["gpu02"].value == parse_quantity("2 GB/s")
    # Every node's preparation ended before any node's fio began: they start together.
    first_fio = next(i for i, (_, what) in enumerate(log) if what == "fio")
    assert {(n, w) for n, w in log[:first_fio]} == {(n, w) for n in ("gpu01", "gpu02") for w in ("test", "mktemp")}
    assert [w for _, w in log[first_fio:]] == ["fio", "fio", "rm", "rm"]
    for box in nodes:
        (command,) = [c for c in box.transport.calls if c.startswith("fio ")]  # type: ignore[attr-defined]
        assert {"--time_based", "--runtime=20", f"--size={64 << 20}"} <= set(command.split()), command
    detail = figures["gpu02"].detail
    assert "20 s time-based (looping over the files)" in detail
    assert "started together with 1 other node(s) on the shared mount /lfs" in detail
    assert "the same window as theirs, so its share of what the mount gave them all" in detail
    assert figures["gpu02"].extra["together"]["nodes"] == 2
    with pytest.raises(ValueError, match="time-based"):
        storage.together(nodes, Mount("/lfs", "lustre"), WRITE, "sequential", lambda n: [], at_once=2)


def test_a_together_run_goes_in_groups_under_the_fanout_and_a_node_that_fails_errors_alone() -> None:
    lustre = findmnt("/lfs", "lustre", "rw,flock", source="10.0.0.1@o2ib:/fs")
    log: list[tuple[str, str]] = []
    answers: dict[str, str | CannedCommand] = {r"findmnt -J": lustre, r"^mktemp -d": WORKDIR + "\n", r"^rm -rf": "",
                                               r"^fio ": _fio_wrote(10 * 10**9, 20.0)}
    broken = {**answers, r"findmnt -J": "pytest-fabric: no such directory\n"}
    nodes = [handle(_Logged(name, broken if name == "gpu02" else answers, log)) for name in ("gpu01", "gpu02", "gpu03")]
    out = storage.together(nodes, Mount("/lfs", "lustre"), TOGETHER_WRITE, "sequential", lambda n: [], at_once=2)
    assert isinstance(out["gpu02"], MeasurementError) and "/lfs does not exist on gpu02" in str(out["gpu02"])
    assert not isinstance(out["gpu01"], Exception) and "the only node of its group" in out["gpu01"].detail
    # gpu03 ran in a second group, after the first group's run and clean-up.
    assert log.index(("gpu03", "test")) > log.index(("gpu01", "rm"))
    assert not isinstance(out["gpu03"], Exception)


def test_together_reads_are_laid_out_by_peers_first_and_checkpoints_still_end_with_fsync() -> None:
    log: list[tuple[str, str]] = []
    answers: dict[str, str | CannedCommand] = {
        r"findmnt -J": NFS_RDMA, r"^mktemp -d": WORKDIR + "\n", r"^rm -rf": "", r"^fio .*--create_only=1": FIO_READ,
        r"^stat ": f"{WORKDIR}/pytest-fabric-read.0.0 8388608 bytes\n", r"^fio ": FIO_READ,
    }
    nodes = [handle(_Logged(name, answers, log)) for name in ("gpu01", "gpu02")]
    peers = {"gpu01": [nodes[1]], "gpu02": [nodes[0]]}
    read = storage.FioSettings(rw="read", size_bytes=8 << 20, block_size_bytes=1 << 20, runtime_s=5, check="storage.sequential_read")
    out = storage.together(nodes, STATED, read, "sequential", lambda n: peers[n.name], at_once=2)
    assert all(not isinstance(m, Exception) for m in out.values()), out
    calls = [c for box in nodes for c in box.transport.calls]  # type: ignore[attr-defined]
    layouts = [i for i, (_, w) in enumerate(log) if w == "fio"][:2]
    reads = [c for c in calls if c.startswith("fio ") and "--allow_file_create=0" in c]
    assert len(reads) == 2 and all("--time_based" in c and "--runtime=5" in c for c in reads)
    # The two lay-outs come first, then the two reads: no read shares the mount with a lay-out.
    assert max(layouts) < [i for i, (_, w) in enumerate(log) if w == "fio"][2]
    assert "files laid out by gpu02 on the shared mount" in out["gpu01"].detail  # type: ignore[union-attr]

    xfs_writes = {r"findmnt -J": NFS_RDMA, r"^mktemp -d": WORKDIR + "\n", r"^rm -rf": "",
                  r"^fio ": _fio_wrote(10 * 10**9, 21.0)}
    writers = [handle(_Logged(name, xfs_writes, [])) for name in ("gpu01", "gpu02")]
    checkpoint = storage.FioSettings(rw="write", size_bytes=512 << 20, block_size_bytes=1 << 20, jobs=8, direct=False,
                                     fsync_on_close=True, runtime_s=20, check="storage.checkpoint_write")
    saved = storage.together(writers, STATED, checkpoint, "checkpoint", lambda n: [], at_once=2)
    (command,) = [c for c in writers[0].transport.calls if c.startswith("fio ")]  # type: ignore[attr-defined]
    assert {"--end_fsync=1", "--time_based", "--runtime=20", "--direct=0"} <= set(command.split())
    assert "the closing fsync, counted in, is each node's own after the window" in saved["gpu01"].detail  # type: ignore[union-attr]


def test_fio_figures_that_do_not_follow_from_each_other_are_uncorroborated() -> None:
    # A wrapper that edits fio's bandwidth alone (bytes and runtime left as fio wrote them) fails on the
    # node whose fio printed it; fio's own figures, as captured, agree and the record says so.
    xfs = findmnt("/data", "xfs", "rw", source="/dev/nvme0n1")
    honest = dataclasses.replace(WRITE, corroborate=True)
    fine = storage.sequential(node("gpu01", xfs, **{r"^fio ": json.dumps(_as_write(json.loads(FIO_READ)))}),
                              Mount("/data"), honest)
    assert fine.missing is None and {c["status"] for c in fine.extra["corroborations"]} == {"agrees"}
    edited = _as_write(json.loads(FIO_READ))
    for job in edited["jobs"]:  # type: ignore[attr-defined]
        job["write"]["bw_bytes"] *= 4
        job["write"]["bw"] *= 4
    caught = storage.sequential(node("gpu07", xfs, **{r"^fio ": json.dumps(edited)}), Mount("/data"), honest)
    assert caught.missing is not None and caught.missing.startswith("uncorroborated on gpu07: ")
    assert "corroboration" not in " ".join(storage.sequential(
        node("gpu01", xfs, **{r"^fio ": json.dumps(edited)}), Mount("/data"), WRITE).extra)  # a bare probe call: off


class CountsBetween(MockTransport):
    """A node whose storage counters read ``before`` the first time and ``after`` from then on."""

    def __init__(self, name: str, answers: dict[str, str | CannedCommand], before: str, after: str) -> None:
        super().__init__(name, answers)
        self.readings = [before, after]

    def _answer(self, command: str) -> CannedCommand:
        if command.startswith("d=") and "/proc/diskstats" in command:
            self.calls.append(command)
            return CannedCommand(stdout=self.readings.pop(0) if len(self.readings) > 1 else self.readings[0])
        return super()._answer(command)


def test_fio_bytes_the_block_device_never_saw_are_uncorroborated_on_that_node() -> None:
    # The loop device's sectors grew by 19.4 MB around a real 16 MiB fio write: an 8 MiB claim agrees;
    # a wrapper's x4 of every figure (still agreeing with itself) claims 32 MiB and is caught.
    counters = DATA / "storage-counters"
    before = (counters / "ext4-loop-before-fio-write-16M.txt").read_text()
    after = (counters / "ext4-loop-after-fio-write-16M.txt").read_text()
    ext4 = findmnt("/data", "ext4", "rw", source="/dev/loop0")

    def measure(name: str, document: dict[str, object], settings: storage.FioSettings) -> Measurement:
        answers: dict[str, str | CannedCommand] = {
            r"findmnt -J": ext4, r"^mktemp -d": WORKDIR + "\n", r"^rm -rf": "", r"^fio ": json.dumps(document)}
        return storage.sequential(handle(CountsBetween(name, answers, before, after)), Mount("/data"), settings)

    witnessed = dataclasses.replace(WRITE, corroborate=True, witness=True)
    honest = measure("gpu01", _as_write(json.loads(FIO_READ)), witnessed)
    assert honest.missing is None
    (block,) = [c for c in honest.extra["corroborations"] if c["witness"] == "block device counters"]
    assert block["status"] == "agrees" and block["witnessed"] == (1537420 - 1499538) * 512
    inflated = _as_write(json.loads(FIO_READ))
    for job in inflated["jobs"]:  # type: ignore[attr-defined]
        for key in ("io_bytes", "io_kbytes", "bw_bytes", "bw", "iops", "total_ios"):
            job["write"][key] *= 4
    caught = measure("gpu07", inflated, witnessed)
    assert caught.missing is not None and caught.missing.startswith("uncorroborated on gpu07: ")
    assert "never reached the device" in caught.missing
    assert {c["status"] for c in caught.extra["corroborations"] if c["witness"] == "internal"} == {"agrees"}
    # --fabric-no-witness: the counters are not read, fio's word stands (its figures agree)
    assert measure("gpu07", inflated, dataclasses.replace(WRITE, corroborate=True)).missing is None
