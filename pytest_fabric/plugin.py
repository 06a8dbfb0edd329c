"""pytest-fabric's pytest plugin: options, loading, collection, records.  It wires; it does not measure.

``pytest --cluster inv.yaml --profile hdr200`` loads the inventory and profile
(stopping with a usage error that names file, line and field when either is
wrong), collects the bundled conformance suite when no test paths are given,
and attaches a :class:`~pytest_fabric.record.check_record.CheckRecord` to every conformance
test's report.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pluggy
import pytest

from pytest_fabric import __version__, hookspecs
from pytest_fabric.checks.base import CheckRegistry, RegistryError
from pytest_fabric.config.bundled import (
    bundled_inventories,
    bundled_inventory_name,
    conformance_dir,
    inventory_path,
)
from pytest_fabric.config.hostlist import fold
from pytest_fabric.config.inventory import Node, load_inventory, with_data_addresses
from pytest_fabric.config.profile import bundled_profiles, load_profile, profile_schema
from pytest_fabric.config.yamlsource import MissingFile, SourceError
from pytest_fabric.judge.applicability import cannot_exist, unmeasurable
from pytest_fabric.judge.verdict import Op, Verdict, display_unit
from pytest_fabric.record.check_record import (
    PLANNED_KEY,
    REPORT_ATTRIBUTE,
    CheckRecord,
    PlannedCheck,
    quantity_json,
)
from pytest_fabric.record.runinfo import RUN_INFO_KEY, RunInfo, utc_now
from pytest_fabric.run.batches import DEFAULT_FANOUT, BatchCache
from pytest_fabric.run.open_cluster import LockPlugin
from pytest_fabric.run.pairs import make_pairs
from pytest_fabric.run.state import (
    CHECK_KEY,
    ELAPSED_KEY,
    STARTED_KEY,
    STATE_KEY,
    VERDICTS_KEY,
    CheckInfo,
    FabricState,
    get_state,
)
from pytest_fabric.run.subjects import (
    DEVICE_TESTS_UP_TO,
    SUBJECT_FIXTURES,
    is_subject,
    layer_and_check,
    subject_id,
    subject_nodes,
)
from pytest_fabric.session.plugin_conflicts import refuse_conflicting_plugins
from pytest_fabric.transport.base import Transport, TransportError
from pytest_fabric.transport.local import LocalTransport
from pytest_fabric.transport.slurm.gpus import describe
from pytest_fabric.transport.slurm.settings import SlurmSettings
from pytest_fabric.transport.ssh import SSHSettings, SSHTransport, hostname_lookup

#: ``layer.key`` -> why a set check cannot exist on this inventory (a median of fewer than 3 pairs)
CANNOT_EXIST_KEY = pytest.StashKey[dict[str, str]]()

pytest_plugins = [
    "pytest_fabric.session.rootdir",  # test ids and the cache that do not follow the inventory's folder
    "pytest_fabric.session.lastfailed",  # --lf: deselect what passed, rather than leave it uncollected
    "pytest_fabric.session.gcpause",  # collection without the cyclic collector (large inventories)
    "pytest_fabric.session.stopping",  # SIGTERM and SIGHUP stop a run as Ctrl-C does
    "pytest_fabric.session.soak",  # --soak DURATION: the checks in cycles, judged over time
    "pytest_fabric.run.fixtures",
    # first of the measurement plugins: the others import its GPU inventory, and a plugin module must
    # not be imported before pytest registers it (its asserts would not be rewritten)
    "pytest_fabric.checks.gpu",  # GPUs, their links, NCCL inside a node, DCGM (a family: its own declarations)
    "pytest_fabric.measurements.inter_node",
    # before gpudirect, which imports its declarations (a family: its own declarations; it imports inter_node)
    "pytest_fabric.checks.rdma",
    "pytest_fabric.checks.software",  # preflight and the software stack (a family: its own declarations)
    "pytest_fabric.measurements.tenant_tools",  # inventory tools: the tenant's pinned binaries, uploaded and removed
    "pytest_fabric.measurements.gpudirect",
    # before its driver, which imports its declarations (a family: its own declarations)
    "pytest_fabric.checks.attribution",
    "pytest_fabric.measurements.attribution",  # every pair check judged by one model (judge/blame.py)
    "pytest_fabric.checks.xid",  # Xid events in the kernel log, per GPU (a family: its own declarations)
    "pytest_fabric.checks.pcie_errors",  # PCIe replays and AER of GPUs and NICs, before and after the run
    "pytest_fabric.checks.link_history",  # port counters as they stand, link-downs in the kernel log
    "pytest_fabric.checks.gpu_load",  # GEMM, HBM and clock throttling per GPU (a family: its own declarations)
    "pytest_fabric.checks.storage",  # mounts and fio on them (a family: its own declarations)
    "pytest_fabric.checks.egress",  # DNS, connects, downloads and uploads to targets (a family)
    "pytest_fabric.checks.tcp",  # iperf3 between pairs and their outliers (a family; after inter_node and rdma, it imports them)
    "pytest_fabric.checks.nccl",  # NCCL over pairs and the cluster's scaling (a family; after inter_node and rdma too)
    # the fabric's switch links and the spine under load (a family: its own declarations; after rdma and tcp,
    # whose settings oversubscription measures with)
    "pytest_fabric.checks.links",
    # reporting, one feature per module (report/): order matters only for assertion rewriting
    "pytest_fabric.report.errors",
    "pytest_fabric.report.evidence",
    "pytest_fabric.report.compare",
    "pytest_fabric.report.collect",
    "pytest_fabric.report.record_json",
    "pytest_fabric.report.terminal",
    "pytest_fabric.report.progress",  # the plan after collection, a live line per wave or round
    "pytest_fabric.report.html",
    "pytest_fabric.report.junit",
    "pytest_fabric.report.trust",
    "pytest_fabric.report.sign",
    "pytest_fabric.report.exit_status",  # --require-accept
    "pytest_fabric.slurm.drain",  # after report/: it reads the records through report/collect.py
]

LAYER_HELP = {
    "software": "software checks: preflight (tools, devices, GPUDirect, memlock, ACS) and one software stack",
    "intra_node": "intra-node checks: NVLink/NVSwitch/PCIe inside one node",
    "inter_node": "inter-node checks: InfiniBand/RoCE/Ethernet between nodes",
    "storage": "storage checks: mounts and their throughput",
    "egress": "egress checks: name resolution and throughput to outside targets",
}



def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fabric", "pytest-fabric: measure a cluster against a profile")
    group.addoption(
        "--cluster",
        dest="fabric_cluster",
        metavar="INVENTORY",
        help="inventory YAML: the nodes to measure and how to reach them; or a bundled name "
        f"({', '.join(bundled_inventories())}: this machine, without SSH)",
    )
    profile_help = f"profile: a bundled name ({', '.join(bundled_profiles())}) or a path to a YAML file"
    try:
        group.addoption("--profile", dest="fabric_profile", metavar="PROFILE", help=profile_help)
    except ValueError:
        # pytest-profiling owns --profile; --fabric-profile still works.
        pass
    group.addoption("--fabric-profile", dest="fabric_profile", metavar="PROFILE", help="same as --profile")
    group.addoption(
        "--expect",
        dest="fabric_expect",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one expected value of the profile, LAYER.CHECK.FIELD=VALUE, e.g. a check's floor "
             "--expect inter_node.CHECK.min=150Gb/s (repeatable)",
    )
    group.addoption(
        "--host-key-policy",
        dest="fabric_host_key_policy",
        choices=("strict", "accept-new", "ignore"),
        default="strict",
        help="SSH host keys, like OpenSSH StrictHostKeyChecking: strict (default: must be in known_hosts), "
        "accept-new (add unknown keys, refuse changed ones), ignore",
    )
    group.addoption(
        "--fabric-fanout",
        dest="fabric_fanout",
        type=int,
        default=DEFAULT_FANOUT,
        metavar="N",
        help=f"at most N nodes at once, for commands of a wave and for opening connections, like pdsh -f "
        f"(default {DEFAULT_FANOUT})",
    )
    group.addoption(
        "--fabric-lock",
        dest="fabric_lock",
        choices=("stop", "wait", "take", "off"),
        default="stop",
        help="the run takes its nodes (a lock on each): stop (default: another run holds them, stop at once naming "
        "it), wait (until it gives them back), take (its lock: its run is gone and was on another host), off "
        "(no lock: two runs then measure each other's traffic)",
    )
    group.addoption(
        "--fabric-device-tests-up-to",
        dest="fabric_device_tests_up_to",
        type=int,
        default=DEVICE_TESTS_UP_TO,
        metavar="N",
        help=f"each GPU and RDMA port is a test of its own up to N nodes (default {DEVICE_TESTS_UP_TO}); above, "
        "one test per node and check judges all of a node's and names each that fails (0: always per node)",
    )
    group.addoption(
        "--fabric-no-witness",
        dest="fabric_no_witness",
        action="store_true",
        default=False,
        help="do not read the interface and HCA port counters before and after each TCP and RDMA measurement: "
        "cheaper, but each figure is then its tool's word alone (the record says no witness ran)",
    )
    group.addoption(
        "--ssh-config",
        dest="fabric_ssh_config",
        metavar="PATH",
        default=None,
        help="OpenSSH client config to honour (default: ~/.ssh/config)",
    )


def _conformance_dir() -> Path:
    return conformance_dir()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    for layer, text in LAYER_HELP.items():
        config.addinivalue_line("markers", f"{layer}: {text}")
    inventory_ref = config.getoption("fabric_cluster", None)
    profile_ref = config.getoption("fabric_profile", None)
    if not inventory_ref:
        if profile_ref:
            raise pytest.UsageError("--profile needs --cluster INVENTORY (the nodes to measure)")
        return
    # paramiko logs each failed handshake with a traceback at ERROR level; the
    # transport's typed errors already say the same in plain words, with the fix.
    for name in ("paramiko", "pytest_fabric.transport.ssh.paramiko"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    if not profile_ref:
        raise pytest.UsageError(
            f"--cluster needs --profile NAME: a bundled profile ({', '.join(bundled_profiles())}) or a YAML path"
        )
    try:
        inventory = load_inventory(inventory_path(inventory_ref))
    except SourceError as exc:
        raise pytest.UsageError(_named_option("--cluster", inventory_ref, exc)) from None
    ssh_config = config.getoption("fabric_ssh_config")
    if ssh_config and not Path(ssh_config).expanduser().is_file():
        raise pytest.UsageError(f"--ssh-config {ssh_config}: no such file")
    if any(n.transport == "ssh" for n in inventory.nodes):
        # Data traffic goes where SSH connects (an alias's HostName), unless data_address says otherwise.
        inventory = with_data_addresses(inventory, hostname_lookup(ssh_config))
    # Every plugin's checks first: the profile's schema is built from their settings models.
    registry = registered_checks(config)
    try:
        schema = profile_schema(registry.settings_models(), registry.ceilings(), registry.blame_inputs())
    except ValueError as exc:
        raise pytest.UsageError(f"pytest_fabric_checks: {exc}") from None
    try:
        profile = load_profile(profile_ref, config.getoption("fabric_expect") or [], schema)
    except SourceError as exc:
        raise pytest.UsageError(_named_option("--profile", profile_ref, exc)) from None

    refuse_conflicting_plugins(config)
    fanout = config.getoption("fabric_fanout")
    if fanout < 1:
        raise pytest.UsageError(f"--fabric-fanout {fanout}: at least 1 node at a time")
    if config.getoption("fabric_device_tests_up_to") < 0:
        raise pytest.UsageError("--fabric-device-tests-up-to: give a node count, 0 or more")
    labels = {n.name: dict(n.labels) for n in inventory.nodes}
    strategy = profile.document.inter_node.pairs
    pairs = config.hook.pytest_fabric_pairs(
        nodes=inventory.node_names, strategy=strategy, labels=labels, config=config
    )
    state = FabricState(
        inventory=inventory,
        profile=profile,
        pairs=list(pairs),
        host_key_policy=config.getoption("fabric_host_key_policy"),
        checks=registry,
        ssh_config=config.getoption("fabric_ssh_config"),
        batches=BatchCache(fanout),
        device_tests_up_to=config.getoption("fabric_device_tests_up_to"),
        witnesses=not config.getoption("fabric_no_witness"),
    )
    # Checks that cannot exist on a cluster this small (a median of two pairs): said at load, in the header.
    config.stash[CANNOT_EXIST_KEY] = dict(cannot_exist(profile, inventory, state.pairs, registry))
    config.stash[STATE_KEY] = state
    config.stash[RUN_INFO_KEY] = RunInfo(
        cluster_name=inventory.name,
        inventory_path=str(inventory.path),
        inventory_sha256=inventory.sha256,
        profile_name=profile.name,
        profile_path=str(profile.path),
        profile_sha256=profile.sha256,
        profile_extends=profile.extends,
        profile_description=profile.document.description,
        nodes=inventory.node_names,
        node_labels=labels,
        overrides=list(profile.overrides),
        pytest_fabric_version=__version__,
        profile_checks=profile.set_checks(),
        host_key_policy=state.host_key_policy,
    )
    if not hasattr(config, "workerinput"):  # pytest-xdist workers report to the controller
        config.pluginmanager.register(RecordSink(config), "fabric-record-sink")
    config.pluginmanager.register(LockPlugin(config), "fabric-cluster-lock")
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # No test paths on the command line: run the installed conformance suite
        # (plus whatever extensions add), from any directory.
        paths = [str(_conformance_dir())]
        for extra in config.hook.pytest_fabric_suite_paths(config=config):
            paths.extend(extra or [])
        config.args[:] = paths


def registered_checks(config: pytest.Config) -> CheckRegistry:
    """Every plugin's ``pytest_fabric_checks`` answer, assembled into the run's registry; declarations
    that cannot all hold (one name twice) are a usage error naming the plugins."""
    answers = []
    # Each implementation is called on its own, in pluggy's registration order (the built-ins,
    # trylast, first), so an error can name the plugin that declared what.  pluggy's HookImpl, not
    # pytest's API: what pytest-fabric takes from pluggy itself (pyproject.toml declares it).
    impls: list[pluggy.HookImpl] = config.hook.pytest_fabric_checks.get_hookimpls()
    for impl in impls:
        if impl.hookwrapper or impl.wrapper:
            continue
        declared: Any = impl.function(**{name: config for name in impl.argnames if name == "config"})
        answers.append((impl.plugin_name, list(declared or [])))
    try:
        return CheckRegistry.assemble(answers)
    except RegistryError as exc:
        raise pytest.UsageError(f"pytest_fabric_checks: {exc}") from None




def _named_option(option: str, ref: str, exc: SourceError) -> str:
    """A file the option itself names that is not there says which option (``--cluster nope.yaml``)."""
    if isinstance(exc, MissingFile) and Path(exc.path).expanduser() == Path(ref).expanduser():
        return f"{option} {ref}: no such file ({Path(exc.path).expanduser().absolute()})"
    return str(exc)


@pytest.hookimpl(trylast=True)
def pytest_fabric_pairs(nodes: list[str], strategy: str, labels: dict[str, dict[str, str]], config: pytest.Config) -> Any:
    return make_pairs(nodes, strategy, labels)


@pytest.hookimpl(trylast=True)
def pytest_fabric_make_transport(node: Node, config: pytest.Config) -> Transport:
    state = get_state(config)
    assert state is not None
    if node.transport == "local":
        return LocalTransport(node.name)
    if node.transport == "slurm":
        # Here, not at the top: slurm/ reads report/progress.py's plan, and a report module imported
        # with this one, before pytest registers the report plugins, could not be assertion-rewritten.
        from pytest_fabric.slurm.allocation import slurm_transport

        return slurm_transport(node, config)
    return SSHTransport(
        node.name,
        SSHSettings(
            host=node.host,
            port=node.port,
            user=node.user,
            identity_file=node.identity_file,
            known_hosts=node.known_hosts,
            connect_timeout=node.connect_timeout,
            max_sessions=node.max_sessions,
            jump=node.jump,
            host_key_policy=state.host_key_policy,  # type: ignore[arg-type]
            ssh_config=state.ssh_config,
            host_key_log=state.host_keys,
        ),
        jump_hosts=state.jump_hosts,
    )


@dataclass(frozen=True)
class _TestFunction:
    """What every item of one test function shares (400,000 items of ~50 functions at 4,096 nodes)."""

    layer: str
    check: str
    fixture: str | None  # the subject fixture it is parametrized by
    measured_by: tuple[str, ...]


def _test_function(item: pytest.Function) -> _TestFunction | None:
    found = layer_and_check(item, item.originalname)
    if found is None:
        return None
    params = getattr(getattr(item, "callspec", None), "params", {})
    fixture = next((name for name in SUBJECT_FIXTURES if name in params), None)
    measured_by = tuple(name for name in item.fixturenames if name not in SUBJECT_FIXTURES)
    return _TestFunction(*found, fixture, measured_by)


def _check_info(item: pytest.Item, functions: dict[tuple[int, str], _TestFunction | None]) -> CheckInfo | None:
    if not isinstance(item, pytest.Function):
        return None
    key = (id(item.parent), item.originalname)
    if key not in functions:
        functions[key] = _test_function(item)
    function = functions[key]
    if function is None:
        return None
    subject, fixture, param = "cluster", function.fixture, None
    nodes: tuple[str, ...] = ()
    if fixture is not None:
        param = item.callspec.params[fixture]
        if is_subject(fixture, param):
            subject, nodes = subject_id(fixture, param), subject_nodes(fixture, param)
        else:  # an empty parameter set: pytest skips the item, there is no subject
            subject, param = f"(no {fixture.replace('_', ' ')})", None
    return CheckInfo(function.layer, function.check, subject, nodes, fixture, param, function.measured_by)


@pytest.hookimpl(tryfirst=True)  # before -k, -m, --deselect and --lf remove items: those still count as planned
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = get_state(config)
    registry = state.checks if state is not None else registered_checks(config)
    sets_of: dict[tuple[str, str], bool] = {}  # per check, not per item: 400,000 items at 4,096 nodes
    optional_of: dict[tuple[str, str], bool] = {}
    functions: dict[tuple[int, str], _TestFunction | None] = {}
    for item in items:
        info = _check_info(item, functions)
        if info is not None:
            item.stash[CHECK_KEY] = info
            key = registry.profile_key_of(info.check, info.layer)
            if (info.layer, info.check) not in sets_of:
                sets_of[(info.layer, info.check)] = state is not None and registry.is_set(state.profile, info.check,
                                                                                          info.layer)
            sets = sets_of[(info.layer, info.check)]
            if (info.layer, key) not in optional_of:
                spec = state.profile.spec(info.layer, key) if state is not None else None
                impossible = f"{info.layer}.{key}" in config.stash.get(CANNOT_EXIST_KEY, {})
                optional_of[(info.layer, key)] = spec is not None and (spec.optional or impossible)
            item.stash[PLANNED_KEY] = PlannedCheck(item.nodeid, info.layer, info.check, info.subject,
                                                   f"{info.layer}.{key}", sets, optional_of[(info.layer, key)])

    def phase(item: pytest.Item) -> int:
        info = item.stash.get(CHECK_KEY, None)
        check = registry.check_of(info.check) if info is not None else None
        return check.phase if check is not None else 0

    items.sort(key=phase)  # stable: within a phase, collection (round) order stays


def pytest_collection_finish(session: pytest.Session) -> None:
    state = get_state(session.config)
    if state is None:
        return
    _refuse_unmeasurable(state, session.items, session.config)
    # A wave measures only the subjects still selected after -k / -m / --lf, per measurement
    # fixture their tests use; a round only the pairs among them (one registry for both).
    seen: dict[str, set[str]] = {}
    for item in session.items:
        info = item.stash.get(CHECK_KEY, None)
        if info is None:
            continue
        if info.fixture is None or info.param is None:
            continue
        done = seen.setdefault(info.subject, set())
        for fixture_name in info.measured_by:
            if fixture_name not in done:
                done.add(fixture_name)
                state.selected_subjects.setdefault(fixture_name, []).append((info.fixture, info.param))


def _refuse_unmeasurable(state: FabricState, items: list[pytest.Item], config: pytest.Config) -> None:
    """Selected checks the profile sets that this inventory gives nothing to measure: a usage error now,
    naming what to add, not quiet skips at the end (a set check that measured nothing is no pass).

    The bundled Slurm inventory (``--cluster slurm``) is the package's own file, bare on purpose: the run
    goes on, those checks are said here and left unmeasured (not run: the verdict cannot be ACCEPT),
    with the command that writes a copy to fill in."""
    problems = unmeasurable(state.profile, state.inventory, state.pairs, state.checks)
    if not problems:
        return
    selected = set()
    for item in items:
        info = item.stash.get(CHECK_KEY, None)
        if info is not None:
            selected.add(f"{info.layer}.{state.checks.profile_key_of(info.check, info.layer)}")
    chosen = [why for key, why in problems if key in selected]
    # The bundled Slurm inventory is the allocation's nodes and nothing else, by design: the run goes on.
    bundled = bundled_inventory_name(state.inventory.path) if state.inventory.slurm is not None else None
    if chosen and bundled:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"fabric: not measured with the bundled inventory {bundled!r} (listed as not run):")
            for why in chosen:
                reporter.write_line(f"  {why}")
        unmeasured = dict(problems)
        for item in items:  # skipped, not measured in a stand-in place (a temp dir for a mount)
            info = item.stash.get(CHECK_KEY, None)
            key = f"{info.layer}.{state.checks.profile_key_of(info.check, info.layer)}" if info is not None else ""
            if key in unmeasured:
                item.add_marker(pytest.mark.skip(reason=f"not measured: {unmeasured[key]}"))
        return
    if chosen:
        raise pytest.UsageError(
            f"profile {state.profile.name} sets checks that inventory {state.inventory.path} gives nothing to "
            "measure:\n  " + "\n  ".join(chosen)
        )


def _closest_to_limit(verdicts: list[Verdict]) -> Verdict | None:
    """The verdict a record shows: the worst margin (of a node's eight GPUs, the slowest), unless one
    has no margin: a missing GPU, a port Down say more than any number, so the first of those."""
    if not verdicts:
        return None
    unmeasured = [v for v in verdicts if v.margin is None]
    if unmeasured:
        return unmeasured[0]

    def headroom(verdict: Verdict) -> Decimal:  # a margin is signed: below a ceiling is negative
        assert verdict.margin is not None
        return verdict.margin if verdict.expectation.op is Op.MIN else -verdict.margin

    return min(verdicts, key=headroom)


def _outcome(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return "waived"
    if report.when != "call" and report.failed:
        return "error"
    return report.outcome


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report: pytest.TestReport = yield
    info = item.stash.get(CHECK_KEY, None)
    if info is None:
        return report
    # Measurements run in fixture setup: a check's time is setup plus call.
    item.stash[ELAPSED_KEY] = item.stash.get(ELAPSED_KEY, 0.0) + report.duration
    if report.when == "setup":
        item.stash[STARTED_KEY] = datetime.fromtimestamp(call.start, timezone.utc).isoformat(timespec="seconds")
    final = report.when == "call" or (report.when == "setup" and not report.passed) or (
        report.when == "teardown" and report.failed
    )
    if not final:
        return report
    verdicts = item.stash.get(VERDICTS_KEY, [])
    failed = [v for v in verdicts if not v.passed]
    shown = _closest_to_limit(failed or verdicts)
    if shown is not None and report.when == "call":
        record = CheckRecord.from_verdict(nodeid=item.nodeid, subject=info.subject, nodes=list(info.nodes), verdict=shown)
        # The test names the check (rdma_bandwidth_outlier); the profile key it is judged by may differ (outlier).
        record.layer, record.check = info.layer, info.check
        record.outcome = _outcome(report)
        if len(failed) > 1 or (len(verdicts) > 1 and not failed):
            record.message = "\n".join(v.message for v in (failed or verdicts))
    else:
        record = CheckRecord(
            nodeid=item.nodeid,
            layer=info.layer,
            check=info.check,
            subject=info.subject,
            outcome=_outcome(report),
            message=_failure_text(report),
            nodes=list(info.nodes),
        )
        state = get_state(item.config)
        if state is not None:
            expectations = state.profile.expectations(info.layer, state.checks.profile_key_of(info.check, info.layer))
            if expectations:
                e = expectations[0]
                # in the unit a measured record of the check uses (the one its author wrote)
                record.expected = quantity_json(e.value, display_unit(e)) or {}
                record.expected.update({"op": e.op.value, "key": e.key, "source": e.source, "as_written": str(e.value)})
                record.waiver = e.waiver
    elapsed: float = item.stash.get(ELAPSED_KEY, report.duration)
    record.duration_s = round(elapsed, 3)
    record.started = item.stash.get(STARTED_KEY, None)
    record.finished = utc_now()
    for verdict in verdicts[:1]:
        record.extra.update(verdict.measured.extra)
    error = call.excinfo.value if call.excinfo is not None else None
    if record.outcome == "error" and isinstance(error, TransportError):
        # Whose fault: a peer's sshd that stopped is that peer's, not the node that waited on it.
        record.extra["error_node"] = error.node
    setattr(report, REPORT_ATTRIBUTE, record.to_dict())
    # junitxml writes the properties it finds on the *teardown* report, which
    # pytest copies from the item: so they go on the item, once; only where the family allows them.
    # imported here: a report plugin this module imports at its top escapes assertion rewriting
    from pytest_fabric.report.junit import per_test_properties

    if per_test_properties(item.config):
        item.user_properties.extend(_junit_properties(record))
    return report


def _failure_text(report: pytest.TestReport) -> str:
    if report.skipped:
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            return str(longrepr[2]).removeprefix("Skipped: ")
        return str(longrepr or "")
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            # "pytest_fabric.transport.base.NodeUnreachable: node x: ..." -> "node x: ..."
            head, sep, rest = str(crash.message).partition(": ")
            return rest if sep and "." in head and " " not in head else str(crash.message)
        return str(report.longrepr)[-2000:]
    return ""


def _junit_properties(record: CheckRecord) -> list[tuple[str, object]]:
    props: list[tuple[str, object]] = [
        ("layer", record.layer),
        ("check", record.check),
        ("subject", record.subject),
        ("outcome", record.outcome),
    ]
    if record.measured:
        props.append(("measured", f"{record.measured['value']} {record.measured.get('unit') or ''}".strip()))
    if record.expected and record.expected.get("value") is not None:
        e = record.expected
        props.append(("expected", f"{e.get('op', '')} {e['value']} {e.get('unit') or ''}".strip()))
    if record.margin is not None:
        props.append(("margin", f"{record.margin * 100:+.1f}%"))
    return props


class RecordSink:
    """Hands each finished check's record to ``pytest_fabric_check_recorded`` on the controller."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, REPORT_ATTRIBUTE, None)
        if record is not None:
            self.config.hook.pytest_fabric_check_recorded(record=record, config=self.config)


HOST_KEY_POLICY_TEXT = {
    "strict": "strict (a node's key must be in known_hosts)",
    "accept-new": "accept-new (unknown keys are added to known_hosts, changed ones refused)",
    "ignore": "ignore (ANY key is accepted and nothing is saved: the nodes are not authenticated)",
}


@pytest.hookimpl(trylast=True)
def pytest_report_header(config: pytest.Config) -> list[str] | None:
    state = get_state(config)
    if state is None:
        return None
    p = state.profile
    extends = f" (extends {', '.join(p.extends)})" if p.extends else ""
    lines = [
        f"fabric: cluster {state.inventory.name} from {state.inventory.path}",
        # Folded as Slurm and clush write nodesets, so the list pastes into srun -w or --exclude.
        f"fabric: {len(state.inventory.nodes)} nodes: {fold(state.inventory.node_names)}",
        f"fabric: profile {p.name}{extends} sha256:{p.sha256[:12]} from {p.path}",
        f"fabric: host keys: {HOST_KEY_POLICY_TEXT.get(state.host_key_policy, state.host_key_policy)}",
    ]
    if state.pairs:
        rounds = len({pair.round for pair in state.pairs})
        lines.append(f"fabric: pairs: {p.document.inter_node.pairs} on {len(state.inventory.nodes):,} nodes: "
                     f"{len(state.pairs):,} pairs in {rounds:,} rounds of disjoint pairs")
    for key, why in sorted(config.stash.get(CANNOT_EXIST_KEY, {}).items()):
        lines.append(f"fabric: {key} cannot exist on this inventory ({why}): listed as not run, not blocking")
    if any(n.transport == "slurm" for n in state.inventory.nodes):
        # Here, not at the top: as in pytest_fabric_make_transport.
        from pytest_fabric.slurm.allocation import expected_gpus

        slurm = dataclasses.replace(state.inventory.slurm or SlurmSettings(), gpus_per_node=expected_gpus(p, state.checks))
        lines.append(f"fabric: {describe(slurm)}")
    if len(state.inventory.nodes) > state.device_tests_up_to:
        lines.append(f"fabric: GPUs and RDMA ports: one test per node and check above {state.device_tests_up_to:,} "
                     "nodes, naming each GPU or port that fails (--fabric-device-tests-up-to)")
    return lines


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    info = session.config.stash.get(RUN_INFO_KEY, None)
    if info is not None:
        info.finished = utc_now()
    state = get_state(session.config)
    if state is not None and any(n.transport == "slurm" for n in state.inventory.nodes):
        from pytest_fabric.slurm.allocation import (
            record_job,  # imported where used, as in pytest_fabric_make_transport
        )

        record_job(session.config)
    if state is not None and state.cluster is not None:
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            state.cluster.interrupt()  # what the interrupted test ran in the foreground
        state.cluster.close()
    if state is not None:
        state.jump_hosts.close_all()
