"""The hardware stand-ins print what the real tools print, and what the model says.

One model for the whole module: node03's mlx5_0 trained at 100G, node04's mlx5_0 gains symbol
errors on every read, node05<->node06 is a bad cable (half bandwidth). Every output is read with
our own parsers, over real SSH, so a test of the plugin against these stand-ins exercises the same
parsing it does on a real cluster.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Iterator

import pytest
from simcluster import SimCluster
from simcluster.hardware import (
    STANDIN_TOOLS,
    FakeHardware,
    FakePort,
    default_ports,
    install_hardware,
    uninstall_hardware,
)

from pytest_fabric.parsers import (
    ibdev2netdev,
    ibstat,
    ibv_devinfo,
    mlnx_qos,
    nccl_tests,
    perfquery,
    perftest,
    rdma_link,
)
from pytest_fabric.parsers.base import ToolReportedError

LINE_GBPS = 200 * 0.98  # default HDR port x default rdma_bw_fraction
NCCL_EFFICIENCY = FakeHardware().nccl_efficiency
HDR_NODE_GBYTES = NCCL_EFFICIENCY * 4 * 200 / 8  # 4 x 200 Gb/s rails: 100 GB/s of line, 90 carried
EIGHT_MIB = 8 * 2**20
EIGHT_GIB = 8 * 2**30


def ssh(cluster: SimCluster, node: str, command: str, timeout: float = 20
        ) -> subprocess.CompletedProcess[str]:
    """Run `command` on the node over real SSH."""
    return subprocess.run(cluster.ssh_argv(node, command), capture_output=True, text=True, check=False,
                          timeout=timeout)


def _model() -> dict[str, FakeHardware]:
    """The module's hardware: one degraded port, one erroring port, one bad cable, one RoCE node."""
    node03_ports = default_ports()
    node03_ports[0].rate_gbps = 100
    node04_ports = default_ports()
    node04_ports[0].counter_growth = {"SymbolErrorCounter": 3}
    return {
        "node03": FakeHardware(ports=node03_ports),
        "node04": FakeHardware(ports=node04_ports),
        "node05": FakeHardware(slow_peers={"node06": 0.5}),
        # Short retry: the "no server" test waits out the client's whole retry window.
        "node07": FakeHardware(perftest_connect_retry_s=0.5),
        "node08": FakeHardware(ports=[FakePort(link_layer="Ethernet", netdev="eth2",
                                               rate_gbps=400, active_mtu=1024)]),
    }


@pytest.fixture(scope="module")
def fabric(simcluster: SimCluster) -> Iterator[SimCluster]:
    """The module's model installed on the shared cluster, removed however the module ends."""
    install_hardware(simcluster, _model())
    try:
        yield simcluster
    finally:
        uninstall_hardware(simcluster)


def test_ibstat_shows_the_port_that_trained_down(fabric: SimCluster) -> None:
    run = ssh(fabric, "node03", "ibstat")
    assert run.returncode == 0, run.stderr
    cas = {ca.name: ca for ca in ibstat.parse_ibstat(run.stdout)}
    assert sorted(cas) == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert cas["mlx5_0"].ports[0].rate_gbps == 100
    assert cas["mlx5_1"].ports[0].rate_gbps == 200
    assert cas["mlx5_0"].ports[0].state == "Active"
    assert cas["mlx5_0"].ports[0].link_layer == "InfiniBand"

    listed = ssh(fabric, "node03", "ibstat -l; ibstat mlx5_2; ibstat mlx5_9")
    names, _, rest = listed.stdout.partition("CA '")
    assert names.split() == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]
    assert [ca.name for ca in ibstat.parse_ibstat("CA '" + rest)] == ["mlx5_2"]
    assert "stat of IB device 'mlx5_9' failed" in listed.stderr


def test_port_inventory_tools_parse(fabric: SimCluster) -> None:
    run = ssh(fabric, "node08", "ibv_devinfo; echo @@; ibv_devinfo -d mlx5_0; echo @@; "
                               "ibdev2netdev; echo @@; rdma link; echo @@; mlnx_qos -i eth2")
    assert run.returncode == 0, run.stderr
    devinfo, one, mapping, links, qos = run.stdout.split("@@\n")
    for text in (devinfo, one):
        [device] = ibv_devinfo.parse_ibv_devinfo(text)
        assert device.name == "mlx5_0"
        assert device.ports[0].link_layer == "Ethernet"
        assert device.ports[0].active_mtu_bytes == 1024
        assert device.ports[0].state == "PORT_ACTIVE"
    [entry] = ibdev2netdev.parse_ibdev2netdev(mapping)
    assert (entry.device, entry.port, entry.netdev, entry.is_up) == ("mlx5_0", 1, "eth2", True)
    [link] = rdma_link.parse_rdma_link(links)
    assert (link.device, link.state, link.netdev) == ("mlx5_0", "ACTIVE", "eth2")
    parsed = mlnx_qos.parse_mlnx_qos(qos)
    assert parsed.trust == "dscp"
    assert parsed.pfc_priorities == (3,)

    ib = ssh(fabric, "node01", "ibv_devinfo")
    assert [d.name for d in ibv_devinfo.parse_ibv_devinfo(ib.stdout)] == [f"mlx5_{i}" for i in range(4)]


def test_perfquery_counters_grow_between_reads(fabric: SimCluster) -> None:
    command = "perfquery -x -C mlx5_0 -P 1"
    first = perfquery.parse_perfquery(ssh(fabric, "node04", command).stdout)
    second = perfquery.parse_perfquery(ssh(fabric, "node04", command).stdout)
    grown = (perfquery.error_counters(second[0])["SymbolErrorCounter"]
             - perfquery.error_counters(first[0])["SymbolErrorCounter"])
    assert grown == 3
    # A port without growth reads the same each time.
    quiet = [perfquery.parse_perfquery(ssh(fabric, "node04", "perfquery -x -C mlx5_1 -P 1").stdout)
             for _ in range(2)]
    assert all(set(perfquery.error_counters(p[0]).values()) == {0} for p in quiet)
    # The positional LID form reaches the same port.
    lid = first[0].lid
    by_lid = perfquery.parse_perfquery(ssh(fabric, "node04", f"perfquery -x {lid} 1").stdout)
    assert by_lid[0].lid == lid and by_lid[0].port == 1


def _pair(cluster: SimCluster, tool: str, server: str, client: str, args: str
          ) -> tuple[subprocess.Popen[str], subprocess.Popen[str]]:
    """Start a perftest server and its client (the client retries while the server starts)."""
    srv = subprocess.Popen(cluster.ssh_argv(server, f"{tool} {args}"), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    address = cluster.node(server).address
    cli = subprocess.Popen(cluster.ssh_argv(client, f"{tool} {args} {shlex.quote(address)}"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return srv, cli


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def test_ib_write_bw_pairs_see_port_rate_and_bad_cable(fabric: SimCluster) -> None:
    args = f"-d mlx5_0 -i 1 -p 18515 -F -s {EIGHT_MIB} -q 2 --report_gbits"
    # Both pairs at once: separate nodes, so the same TCP port does not clash.
    slow = _pair(fabric, "ib_write_bw", "node06", "node05", args)
    good = _pair(fabric, "ib_write_bw", "node02", "node01", args)
    results = {name: [_finish(p) for p in procs] for name, procs in (("slow", slow), ("good", good))}
    for name, expected in (("slow", 0.5 * LINE_GBPS), ("good", LINE_GBPS)):
        (s_rc, s_out, s_err), (c_rc, c_out, c_err) = results[name]
        assert (s_rc, c_rc) == (0, 0), f"{name}: {s_err} {c_err}"
        client = perftest.parse_bandwidth(c_out)
        row = client.row_at(EIGHT_MIB)
        assert row.bw_average_gbps == pytest.approx(expected, rel=0.01)
        assert (client.device, client.num_qps, client.link_type, client.mtu_bytes) == ("mlx5_0", 2, "IB", 4096)
        assert client.reported_unit == "Gb/sec"
        server = perftest.parse_bandwidth(s_out)
        assert server.row_at(EIGHT_MIB).bw_average_gbps == pytest.approx(expected, rel=0.01)


def _port_data(cluster: SimCluster, node: str) -> dict[str, int]:
    found = perfquery.parse_perfquery(ssh(cluster, node, "perfquery -x -C mlx5_1 -P 1").stdout)[0].counters
    return {name: found[name] for name in ("PortXmitData", "PortRcvData")}


def test_ib_write_bw_counts_on_both_ports_what_it_claims(fabric: SimCluster) -> None:
    # The stand-in is honest: its ports' counters grow by what its table claims crossed them
    # (PortXmitData on the writer, PortRcvData on the target, 4-octet units, headers included),
    # and its iterations x size over perftest's window give its bandwidth.
    before = {node: _port_data(fabric, node) for node in ("node01", "node02")}
    started = time.monotonic()
    srv, cli = _pair(fabric, "ib_write_bw", "node02", "node01",
                     f"-d mlx5_1 -i 1 -p 18530 -F -s {EIGHT_MIB} -q 2 -D 4 --report_gbits")
    (s_rc, _, s_err), (c_rc, c_out, c_err) = _finish(srv), _finish(cli)
    assert time.monotonic() - started >= 4  # a -D run lasts its -D, as the probe's duration check holds it
    assert (s_rc, c_rc) == (0, 0), s_err + c_err
    after = {node: _port_data(fabric, node) for node in ("node01", "node02")}
    row = perftest.parse_bandwidth(c_out).row_at(EIGHT_MIB)
    claimed = row.bw_average_gbps * 1e9 / 8 * 4  # -D 4: traffic for all four seconds
    sent = (after["node01"]["PortXmitData"] - before["node01"]["PortXmitData"]) * 4
    received = (after["node02"]["PortRcvData"] - before["node02"]["PortRcvData"]) * 4
    assert claimed <= sent <= claimed * 1.02 and claimed <= received <= claimed * 1.02
    assert row.iterations * EIGHT_MIB * 8 / 2 / 1e9 == pytest.approx(row.bw_average_gbps, rel=0.01)  # window 4 - 2 x 1


def test_ib_write_bw_sweep_in_mb_per_s_and_trained_down_port(fabric: SimCluster) -> None:
    # node03's mlx5_0 runs at 100G: the pair gets the slower side's rate. MB/sec is 2^20 B/s.
    srv, cli = _pair(fabric, "ib_write_bw", "node03", "node04", "-d mlx5_0 -p 18520 -a -n 1000")
    (s_rc, _, s_err), (c_rc, c_out, c_err) = _finish(srv), _finish(cli)
    assert (s_rc, c_rc) == (0, 0), s_err + c_err
    parsed = perftest.parse_bandwidth(c_out)
    assert parsed.reported_unit == "MB/sec"
    assert [r.size_bytes for r in parsed.rows] == [2**k for k in range(1, 24)]
    assert parsed.largest_row.bw_average_gbps == pytest.approx(100 * 0.98, rel=0.01)
    assert parsed.rows[0].bw_average_gbps < parsed.largest_row.bw_average_gbps / 10


def test_ib_write_lat_pair(fabric: SimCluster) -> None:
    srv, cli = _pair(fabric, "ib_write_lat", "node02", "node07", "-d mlx5_0 -p 18516 -F -s 2 -n 1000")
    (s_rc, _, s_err), (c_rc, c_out, c_err) = _finish(srv), _finish(cli)
    assert (s_rc, c_rc) == (0, 0), s_err + c_err
    row = perftest.parse_latency(c_out).smallest_row
    assert row.size_bytes == 2 and row.iterations == 1000
    assert row.latency_typical_us == pytest.approx(1.6, abs=0.01)
    assert row.latency_p99_us == pytest.approx(1.9, abs=0.01)
    assert row.latency_min_us is not None and row.latency_min_us < 1.6


def test_client_without_server_reports_couldnt_connect(fabric: SimCluster) -> None:
    address = fabric.node("node08").address
    run = ssh(fabric, "node07", f"ib_write_bw -d mlx5_0 -p 18599 --report_gbits {address}")
    assert run.returncode == 1
    assert f"Couldn't connect to {address}:18599" in run.stderr
    with pytest.raises(ToolReportedError, match="Couldn't connect"):
        perftest.parse_bandwidth(run.stdout + run.stderr)


def test_mpirun_all_reduce_across_four_nodes(fabric: SimCluster) -> None:
    nodes = ["node01", "node02", "node03", "node04"]
    hosts = ",".join(f"{fabric.node(n).address}:8" for n in nodes)
    run = ssh(fabric, "node01", f"mpirun --allow-run-as-root -H {hosts} -np 32 --bind-to none "
                                "-x NCCL_DEBUG=VERSION all_reduce_perf -b 8 -e 8G -f 2 -g 1")
    assert run.returncode == 0, run.stderr
    parsed = nccl_tests.parse(run.stdout)
    assert parsed.hosts == tuple(nodes)
    assert parsed.num_ranks == 32
    assert parsed.nccl_version is not None and parsed.concluded
    # Derived from the rails: node03's mlx5_0 trained at 100G holds every ring back, so 4 ports x
    # 100 Gb/s x 0.9; 4 nodes are one doubling beyond 2, x 0.97.
    assert nccl_tests.busbw_at(parsed, EIGHT_GIB) == pytest.approx(NCCL_EFFICIENCY * 4 * 100 / 8 * 0.97, rel=0.01)
    assert nccl_tests.busbw_at(parsed, 2**20) < 30  # small sizes are latency bound

    # The bad cable between node05 and node06 caps a run that includes both: half of 4 x HDR's 90 GB/s.
    pair = ",".join(f"{fabric.node(n).address}:8" for n in ("node05", "node06"))
    slow = ssh(fabric, "node05", f"mpirun --allow-run-as-root -H {pair} -np 16 all_reduce_perf "
                                 "-b 8G -e 8G -g 1")
    assert nccl_tests.busbw_at(nccl_tests.parse(slow.stdout), EIGHT_GIB) == pytest.approx(HDR_NODE_GBYTES / 2, rel=0.01)

    unknown = ssh(fabric, "node01", "mpirun --allow-run-as-root -H 10.255.255.1:8,node02:8 -np 16 all_reduce_perf -b 8 -e 8")
    assert unknown.returncode == 1
    assert "Could not resolve hostname 10.255.255.1" in unknown.stderr


def test_no_standin_left_running_and_uninstall_is_clean(fabric: SimCluster) -> None:
    deadline = time.monotonic() + 5
    while any(fabric.processes(n) for n in fabric.nodes) and time.monotonic() < deadline:
        time.sleep(0.05)  # an SSH session that just ended may take a moment to go
    assert {n.name: fabric.processes(n) for n in fabric.nodes if fabric.processes(n)} == {}
    uninstall_hardware(fabric)
    try:
        node = fabric.node("node04")
        assert not any((node.bindir / t).exists() for t in STANDIN_TOOLS)
        assert ssh(fabric, "node04", "command -v perfquery").returncode != 0
    finally:
        # Put the module's model back for any test that runs after this one.
        install_hardware(fabric, _model())


def test_another_standin_sets_tool_is_left_alone(fabric: SimCluster) -> None:
    # The GPU stand-ins also provide all_reduce_perf; whoever installed it first keeps it.
    node = fabric.node("node08")
    fabric.install_tool(node, "all_reduce_perf", "echo other stand-in\n")
    try:
        install_hardware(fabric, _model())
        assert ssh(fabric, "node08", "all_reduce_perf").stdout == "other stand-in\n"
        uninstall_hardware(fabric)
        assert (node.bindir / "all_reduce_perf").exists()
        assert not (node.bindir / "mpirun").exists()
    finally:
        fabric.remove_tool(node, "all_reduce_perf")
        install_hardware(fabric, _model())


# --------------------------------------------------------------------------- as strict as the tools

def test_perftest_refuses_a_misspelt_option_as_perftest_does(fabric: SimCluster) -> None:
    """getopt_long's line, then parser()'s and main()'s (perftest 6.10), exit 1; usage on stdout."""
    run = ssh(fabric, "node01", "ib_write_bw -d mlx5_0 --report-gbits 10.0.0.2")
    assert run.returncode == 1
    assert run.stderr.splitlines() == ["ib_write_bw: unrecognized option '--report-gbits'",
                                       " Invalid Command or flag.", " Please check command line and run again.",
                                       "", " Parser function exited with Error"]
    assert run.stdout.startswith("Usage:\n  ib_write_bw            start a server and wait for connection\n")
    short = ssh(fabric, "node01", "ib_write_lat -d mlx5_0 -y 5 -W")
    assert short.returncode == 1 and short.stderr.startswith("ib_write_lat: option requires an argument -- 'W'\n")
    # a value the option refuses: parser()'s own check (CHECK_VALUE), no usage
    value = ssh(fabric, "node01", "ib_write_bw -d mlx5_0 -q two 10.0.0.2")
    assert (value.returncode, value.stdout) == (1, "")
    assert value.stderr == " num of Qps argument two should be int\n Parser function exited with Error\n"
    # -q is for bandwidth tests; --version is exit 1 too (main() returns FAILURE after VERSION_EXIT)
    lat = ssh(fabric, "node01", "ib_write_lat -q 2")
    assert lat.returncode == 1 and " Multiple QPs only available on bw tests" in lat.stderr
    version = ssh(fabric, "node01", "ib_write_bw --version")
    assert (version.returncode, version.stdout) == (1, "Version: 6.10\n")
    # glibc takes a unique prefix of a long option, and refuses an ambiguous one
    ambiguous = ssh(fabric, "node01", "ib_write_bw --rep 10.0.0.2")
    assert ambiguous.returncode == 1
    assert ambiguous.stderr.startswith("ib_write_bw: option '--rep' is ambiguous; possibilities: '--report-cycles'")


def test_mpirun_refuses_a_misspelt_option_as_open_mpi_does(fabric: SimCluster) -> None:
    """opal_cmd_line_parse (Open MPI 4.1): the unknown option, the help hint, exit 1."""
    run = ssh(fabric, "node01", "mpirun --allow-run-as-rot -np 2 all_reduce_perf -b 8 -e 8")
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == "mpirun: Error: unknown option \"--allow-run-as-rot\"\nType 'mpirun --help' for usage.\n"
    short = ssh(fabric, "node01", "mpirun --allow-run-as-root -np")
    assert short.returncode == 1
    assert short.stderr.startswith('mpirun: Error: option "-np" did not have enough parameters (1)\n')
    # root needs --allow-run-as-root (the suite's probes pass it), or both OMPI_ALLOW_RUN_AS_ROOT variables
    root = ssh(fabric, "node01", "mpirun -np 1 all_reduce_perf -b 8 -e 8")
    assert root.returncode == 1 and "mpirun has detected an attempt to run as root." in root.stderr
    allowed = ssh(fabric, "node01", "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                                    "mpirun -np 1 all_reduce_perf -b 8 -e 8")
    assert allowed.returncode == 0, allowed.stderr
    # options after the program are the program's; single-dash long names are Open MPI's too
    ok = ssh(fabric, "node01", "mpirun -allow-run-as-root -bind-to none -np 1 --mca coll_hcoll_enable 0 "
                               "all_reduce_perf -b 8 -e 8")
    assert ok.returncode == 0, ok.stderr
    version = ssh(fabric, "node01", "mpirun --version")
    assert (version.returncode, version.stdout.splitlines()[0]) == (0, "mpirun (Open MPI) 4.1.6")


def test_nccl_busbw_of_a_four_port_hdr_node_is_derived_from_its_rails(fabric: SimCluster) -> None:
    """Two healthy nodes: 4 x 200 Gb/s is 100 GB/s of line; a ring carries 90% of it, never the 190
    GB/s an eight-port node would."""
    pair = ",".join(f"{fabric.node(n).address}:8" for n in ("node01", "node02"))
    run = ssh(fabric, "node01", f"mpirun --allow-run-as-root -H {pair} -np 16 all_reduce_perf -b 8G -e 8G -g 1")
    assert run.returncode == 0, run.stderr
    busbw = nccl_tests.busbw_at(nccl_tests.parse(run.stdout), EIGHT_GIB)
    assert busbw < 100
    assert busbw == pytest.approx(HDR_NODE_GBYTES, rel=0.01)
    # NCCL told two of the four HCAs uses two rails: half of it
    two = ssh(fabric, "node01", f"mpirun --allow-run-as-root -H {pair} -np 16 -x NCCL_IB_HCA==mlx5_0:1,mlx5_1:1 "
                                "all_reduce_perf -b 8G -e 8G -g 1")
    assert nccl_tests.busbw_at(nccl_tests.parse(two.stdout), EIGHT_GIB) == pytest.approx(HDR_NODE_GBYTES / 2, rel=0.01)


@pytest.fixture
def gpu_node(fabric: SimCluster) -> Iterator[str]:
    """node08 with GPU stand-ins whose GPU 3 trained at Gen4 x8 (the fabric model stays installed)."""
    from simcluster.gpu import FakeGpus, install_gpus, uninstall_gpus

    install_gpus(fabric, "node08", FakeGpus(pcie={3: (4, 8)}))
    try:
        yield "node08"
    finally:
        uninstall_gpus(fabric, "node08")


def test_nvbandwidth_refuses_a_misspelt_option_as_nvbandwidth_does(fabric: SimCluster, gpu_node: str) -> None:
    """nvbandwidth v0.7 catches every boost::program_options error: its version lines, 'ERROR: Invalid
    Arguments', the command line and its options, on stdout, exit 1."""
    run = ssh(fabric, gpu_node, "nvbandwidth --testcases host_to_device_memcpy_ce")
    assert run.returncode == 1
    assert ("ERROR: Invalid Arguments \nnvbandwidth --testcases host_to_device_memcpy_ce :\n\nnvbandwidth CLI:\n"
            "  -h [ --help ]                  Produce help message\n") in run.stdout
    assert run.stdout.startswith("nvbandwidth Version: v0.7\n")
    # v0.7 has no --version (-v is --verbose); a testcase it does not know is said and skipped, exit 0
    assert ssh(fabric, gpu_node, "nvbandwidth --version").returncode == 1
    unknown = ssh(fabric, gpu_node, "nvbandwidth -t host_to_device_memcpy")
    assert unknown.returncode == 0 and "ERROR: Testcase host_to_device_memcpy not found!" in unknown.stdout


def test_a_degraded_pcie_link_lowers_the_host_to_device_copy(fabric: SimCluster, gpu_node: str) -> None:
    """Host copies are derived from each GPU's trained link: Gen5 x16 is 63 GB/s of line one way, Gen4 x8
    a quarter of it, and a copy moves ~83% of line (Gen4 x16 measures ~26 of its 31.5 GB/s)."""
    from pytest_fabric.parsers import nvbandwidth

    run = ssh(fabric, gpu_node, "nvbandwidth -t host_to_device_memcpy_ce")
    assert run.returncode == 0, run.stdout + run.stderr
    cells = nvbandwidth.parse_nvbandwidth(run.stdout).testcase("host_to_device_memcpy_ce").matrix().cells
    healthy, degraded = cells[(0, 0)], cells[(0, 3)]
    assert healthy == pytest.approx(3.938 * 16 * 0.83, abs=0.01)  # 52.3 GB/s, under the 63 GB/s line
    assert degraded == pytest.approx(1.969 * 8 * 0.83, abs=0.01)  # 13.1 GB/s
    assert degraded is not None and healthy is not None and degraded < healthy / 3
