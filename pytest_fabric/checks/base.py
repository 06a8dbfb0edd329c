"""Every check, declared once: what the plugin, the plan, preflight, the fixtures and the report know of it.

A check is a conformance test (``test_<name>``) and everything that is true of it before it
runs: its layer, the profile key it is judged by and that key's model, its subject, how it is
batched, when it runs relative to the others, the programs it runs on a node, how long one
measurement takes when the profile's settings do not say, and the block of TCP ports its
servers listen on.  ReFrame keeps a test's expectations apart from the test in the same
spirit; here the expectations are the profile's, and this table says how to reach them.

Adding a check means: its declaration in its family module (``checks/<family>.py``, returned from
its ``pytest_fabric_checks``, the hook an extension implements too), its test under
``conformance/<layer>/``, its probe and parser, and its measurement fixture.
tests/unit/test_checks.py holds every conformance test to a declaration and every declaration to its
profile model.  The run reads the :class:`CheckRegistry` assembled from every plugin's answer at
configure time (``FabricState.checks``); what a generic module needs of a check is an attribute of
its declaration, read there.  This module declares no check: it holds what a declaration is
(:class:`Check`) and the registry (:class:`CheckRegistry`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, cast, get_args

from pytest_fabric.config import profile as p
from pytest_fabric.config.units import Quantity
from pytest_fabric.judge.blame_inputs import BlameInput
from pytest_fabric.judge.ceilings import Ceiling
from pytest_fabric.judge.cross_checks import Bound

__all__ = [
    "Allreduce",
    "Batching",
    "BlameInput",
    "Bound",
    "Check",
    "Need",
    "NO_CHECKS",
    "OUTLIER_RETESTS",
    "PHASE_READS_ROUNDS",
    "CheckRegistry",
    "RegistryError",
    "Retests",
    "PortBlock",
    "Stated",
    "Subject",
]

Layer = Literal["software", "intra_node", "inter_node", "storage", "egress"]
#: the fixture a check's tests are parametrized by; "cluster": one test for the whole cluster
Subject = Literal["node", "gpu", "hca", "node_pair", "mount", "egress_target", "cluster"]
#: wave: every subject at once (per node, GPU, port, mount, target); round: pairs of a round of
#: disjoint pairs at once; cluster: one measurement of the whole cluster; reads: judges what
#: other checks measured and measures nothing itself
Batching = Literal["wave", "round", "cluster", "reads"]
#: what a check needs the cluster to give it (Check.needs)
Need = Literal["mounts", "shared_mount", "egress_targets", "download_url", "upload_target", "leaves",
               "infiniband", "pair_checks", "three_nodes", "three_pairs"]

#: how one measurement runs all_reduce_perf (the plan counts its runs, run/plan.py ``nccl_runs``): over a
#: "pair"'s GPUs (both nodes), over one "node"'s GPUs, or over the cluster's "scaling" groups
Allreduce = Literal["pair", "node", "scaling"]

#: the part of the hardware a check's settings are the profile's word on, which other checks, the plan
#: and the Slurm allocation read (:meth:`CheckRegistry.statement`): "gpus" (a node's GPUs), "rails" (a
#: node's RDMA ports, their count and names), "link_layer" (InfiniBand or Ethernet), "roce" (the RoCE
#: class and GID every RDMA tool is given)
Stated = Literal["gpus", "rails", "link_layer", "roce"]

S = TypeVar("S", bound=p.CheckSpec)


@dataclass(frozen=True)
class Retests:
    """The most a check that judges pairs re-measures before it judges (the plan's bound reads it).

    ``steps``: steps of retests alone, each at most every pair of the sweep once, in retest rounds
    of disjoint pairs (measurements/inter_node.py ``retest_alone``), ``samples`` samples a pair;
    ``rounds_again``: the sweep's rounds measured again, each once (attribution's "in its round again");
    ``both_ways``: a step may measure a pair in both directions (a suspect sending to its helpers and
    receiving from them), so a node may be in twice as many retests of a step as it has pairs.
    """

    steps: int
    samples: int
    rounds_again: bool = False
    both_ways: bool = False


@dataclass(frozen=True)
class PortBlock:
    """TCP ports a check's servers listen on: ``base`` up to, not including, ``base + size``.

    Blocks of different checks never overlap, so a server one check left behind can never
    answer another check's client.
    """

    base: int
    size: int

    @property
    def end(self) -> int:
        return self.base + self.size

    def port(self, index: int) -> int:
        """The ``index``-th port of the block (a pair's slot, a rail, a retest offset added)."""
        if not 0 <= index < self.size:
            raise ValueError(f"port {index} of a block of {self.size} starting at {self.base}: the block is too small")
        return self.base + index

    def lanes(self, slot: int, count: int = 0) -> tuple[int, ...]:
        """The ports of slot ``slot`` when each slot holds ``count`` (default :data:`LANES_PER_SLOT`):
        a pair's rails or GPUs measured at once, one port each, apart from every other slot's."""
        count = count or LANES_PER_SLOT
        return tuple(self.port(slot * count + i) for i in range(count))

    def overlaps(self, other: PortBlock) -> bool:
        return self.base < other.end and other.base < self.end


@dataclass(frozen=True)
class Check(Generic[S]):
    """One check's declaration."""

    name: str  # the test is test_<name>; the record's ``check``
    layer: Layer
    model: type[S] | None  # the profile model of ``layer.key``; None: judged by the inventory (mount)
    subject: Subject
    batching: Batching
    key: str = ""  # the profile key within the layer; empty: the check's name
    phase: int = 0  # run order: lower first; within a phase, collection (round) order
    tools: tuple[str, ...] = ()  # programs its probe runs on every node it measures
    #: tools by link layer, where they depend on it (error counters: perfquery on InfiniBand)
    tools_by_link_layer: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    typical_s: float | None = None  # one measurement, when the profile's settings do not say
    #: what one measurement adds to its tools' own time (SSH channels, starting the tools, a server
    #: on the peer, results back); None: the plan's general OVERHEAD_S
    start_s: float | None = None
    ports: PortBlock | None = None
    #: what one measurement of a subject goes through one after the other: a pair's "rails" (latency
    #: runs rail by rail, aggregate measures each rail alone) or a node's "gpus"; None: all at once
    #: (rdma_bandwidth's rails, gpudirect_bandwidth's GPUs). The plan multiplies by their count.
    one_at_a_time: Literal["rails", "gpus"] | None = None
    #: a check of batching "reads": the check whose results it judges; it is set only when both
    #: its own key and that check are (the outlier rule with no rdma_bandwidth judges nothing)
    reads_from: str | None = None
    #: what the inventory must give it to measure anything (judge/applicability.py says which key to
    #: add when it does not): "mounts" (storage.mounts), "shared_mount" (one that is not node-local),
    #: "egress_targets", "download_url" (an http(s) target not marked upload), "upload_target", "leaves"
    #: (nodes labelled by at least two leaf switches), "infiniband" (a profile whose link_layer is not
    #: ethernet), "pair_checks" (a profile that sets a pair check feeding attribution, ``blame``); and
    #: what a cluster this small cannot have (said, not run, ACCEPT not blocked): "three_nodes",
    #: "three_pairs" (a median)
    needs: tuple[Need, ...] = ()
    #: what bounds its floor (judge/ceilings.py, at load): "port_line" (one port's port_rate), "all_rails"
    #: (ports x port_rate), "gpu_pcie" (the GPU's PCIe link), "nvlink" (the GPU model's NVLink); None: nothing
    ceiling: Ceiling | None = None
    #: its figure's run-to-run noise where that is an amount, not a share: ``--compare`` calls a change
    #: below it no change (a DNS lookup: milliseconds either way); None: the comparison's share alone
    noise: Quantity | None = None
    #: the most retests it takes before it judges (None: it re-measures nothing)
    retests: Retests | None = None
    #: a pair check that feeds the blame model (attribution): how its measurement becomes figures
    #: (judge/blame_inputs.py); None: attribution does not read it
    blame: BlameInput | None = None
    #: another check's figure of the same hardware that bounds its own (judge/cross_checks.py,
    #: measurements/cross_checked.py): which check, by which relation, with what tolerance
    bounded_by: Bound | None = None
    #: how one measurement runs all_reduce_perf, for the plan (None: it runs none)
    allreduce: Allreduce | None = None
    #: the check whose settings give the size it runs at (scaling runs at the pair check's size)
    sized_by: str | None = None
    #: the unit its figure is shown in, in messages comparing pairs (outliers, retests); None: as measured
    shown_in: str | None = None
    #: what of the hardware its settings state for the others to read (``gpu_count``: the GPUs NCCL's
    #: ranks, the plan and the Slurm allocation count); None: nothing
    states: Stated | None = None

    @property
    def profile_key(self) -> str:
        """``layer.key``, as profiles, ``--expect`` and the record write it."""
        return f"{self.layer}.{self.key or self.name}"

    @property
    def setting(self) -> str:
        """The key within the layer (``outlier`` for ``rdma_bandwidth_outlier``)."""
        return self.key or self.name

    @property
    def measures(self) -> bool:
        """False for checks that judge what other checks measured (outliers, attribution)."""
        return self.batching != "reads"

    def tools_on(self, link_layer: str | None) -> tuple[str, ...]:
        if self.tools_by_link_layer:
            return self.tools_by_link_layer.get((link_layer or "infiniband").lower(), ())
        return self.tools


#: ports a slot of a block holds where a pair's rails or GPUs run at once (more run in groups)
LANES_PER_SLOT = 8

PHASE_READS_ROUNDS = 20  # after the pair rounds whose results they read

# Every check is declared in its family module (checks/<family>.py) and registered through
# pytest_fabric_checks: software, gpu, gpu_load, xid, pcie_errors, link_history, links, tcp, rdma, nccl,
# attribution, storage, egress.  Pair checks' port blocks leave room for 256 slots (512 nodes), the
# retests' offset (100 slots), and a pair's rails or streams: checks that run a pair's rails or GPUs
# at once take LANES_PER_SLOT ports a slot (356 x 8 = 2,848), below the kernel's ephemeral range
# (32768 and up), where a listener could meet a client's own port.

#: an outlier check re-measures the pairs that stand out, one step, OUTLIER_REPEATS (3) samples each
OUTLIER_RETESTS = Retests(steps=1, samples=3)


class RegistryError(ValueError):
    """Declarations that cannot all hold: one name twice, one key with two models, overlapping ports."""


_LAYER_NAMES: tuple[str, ...] = get_args(Layer)
_SUBJECTS: tuple[str, ...] = get_args(Subject)
_BATCHINGS: tuple[str, ...] = get_args(Batching)
_NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class CheckRegistry:
    """Every check of a run, the built-in ones and the extensions', by name (in registration order).

    Assembled once at configure time from the ``pytest_fabric_checks`` answers
    (:meth:`assemble`); the plugin, the profile loader, the plan, preflight, the fixtures and the
    report read it.  :func:`pytest_fabric.checks.builtin.builtin_registry` assembles pytest-fabric's
    own families the same way, for what reads declarations without a run.
    """

    checks: Mapping[str, Check[p.CheckSpec]]

    @classmethod
    def assemble(cls, declared_by: Iterable[tuple[str, Iterable[Check[p.CheckSpec]]]]) -> CheckRegistry:
        """The registry of (plugin name, its declarations) answers; a :class:`RegistryError` names the
        plugins whose declarations cannot all hold."""
        found: dict[str, Check[p.CheckSpec]] = {}
        owner: dict[str, str] = {}
        keys: dict[tuple[str, str], tuple[type[p.CheckSpec], str]] = {}
        for plugin, declarations in declared_by:
            for check in declarations:
                _refuse_malformed(check, plugin)
                if check.name in found:
                    raise RegistryError(
                        f"check {check.name} is declared twice: by plugin {owner[check.name]} and by plugin {plugin}; "
                        "a check's name is its test (test_<name>) and its record: rename one, or leave one plugin out "
                        "(-p no:NAME)")
                for other in found.values():
                    if check.ports and other.ports and check.ports.overlaps(other.ports):
                        raise RegistryError(
                            f"ports of {check.name} ({check.ports}, plugin {plugin}) overlap those of {other.name} "
                            f"({other.ports}, plugin {owner[other.name]}): give one a block of its own")
                if check.model is not None:
                    typed = keys.setdefault((check.layer, check.setting), (check.model, plugin))
                    if typed[0] is not check.model:
                        raise RegistryError(
                            f"{check.profile_key} is typed {typed[0].__name__} (plugin {typed[1]}) and "
                            f"{check.model.__name__} by check {check.name} (plugin {plugin}): one key, one model; "
                            "give the check a key of its own (Check(key=...))")
                found[check.name], owner[check.name] = check, plugin
        return cls(found)

    def check_of(self, name: str) -> Check[p.CheckSpec] | None:
        """The declaration of check ``name`` (a test's name without ``test_``); None for other tests."""
        return self.checks.get(name)

    def declared(self) -> Iterator[Check[p.CheckSpec]]:
        return iter(self.checks.values())

    def is_set(self, profile: p.Profile, name: str, layer: str) -> bool:
        """Whether the profile sets check ``name``: its key, and the check it reads where it reads one."""
        if not profile.expectations(layer, self.profile_key_of(name, layer)):
            return False
        check = self.checks.get(name)
        source = self.checks.get(check.reads_from) if check is not None and check.reads_from else None
        return source is None or bool(profile.expectations(source.layer, source.setting))

    def profile_key_of(self, name: str, layer: str) -> str:
        """The key within ``layer`` that check ``name`` is judged by: its declared one, else its name."""
        check = self.checks.get(name)
        return check.setting if check is not None and check.layer == layer else name

    def checks_judged_by(self, profile_key: str) -> list[Check[p.CheckSpec]]:
        """The checks whose verdict reads ``layer.key`` (``inter_node.outlier``: both outlier checks)."""
        return [c for c in self.checks.values() if c.profile_key == profile_key]

    def tools_for(self, profile_keys: Iterable[str], link_layer: str | None) -> dict[str, list[str]]:
        """tool -> the ``layer.key`` names (of ``profile_keys``, those the profile sets) whose checks run it."""
        out: dict[str, list[str]] = {}
        for key in profile_keys:
            for check in self.checks_judged_by(key):
                for tool in check.tools_on(link_layer):
                    if key not in out.setdefault(tool, []):
                        out[tool].append(key)
        return out

    def stating(self, what: Stated, model: type[S]) -> Check[S] | None:
        """The check whose settings state ``what`` (its ``states``), typed ``model``; None where no
        registered check states it (a registry without that family)."""
        for check in self.checks.values():
            if check.states == what and check.model is not None and issubclass(check.model, model):
                return cast("Check[S]", check)
        return None

    def statement(self, profile: p.Profile, what: Stated, model: type[S]) -> S | None:
        """The profile's settings of the check that states ``what``: its word on that part of the
        hardware (None where it sets none, or no registered check states it)."""
        check = self.stating(what, model)
        return profile.spec_of(check) if check is not None else None

    def blame_inputs(self) -> dict[str, BlameInput]:
        """name -> how it feeds the blame model, for every check attribution reads (registration order)."""
        return {c.name: c.blame for c in self.checks.values() if c.blame is not None}

    def ceilings(self) -> dict[tuple[str, str], Ceiling]:
        """(layer, key) -> what bounds that key's floor, for the checks that declare one: what the profile
        loader holds each floor to (:func:`pytest_fabric.config.profile.profile_schema`)."""
        return {(c.layer, c.setting): c.ceiling for c in self.checks.values() if c.ceiling is not None}

    def settings_models(self) -> dict[str, dict[str, type[p.CheckSpec]]]:
        """layer -> key -> the settings model of that profile key: what the profile loader builds its
        sections from (:func:`pytest_fabric.config.profile.profile_schema`)."""
        out: dict[str, dict[str, type[p.CheckSpec]]] = {}
        for check in self.checks.values():
            if check.model is not None:
                out.setdefault(check.layer, {}).setdefault(check.setting, check.model)
        return out


def _refuse_malformed(check: Any, plugin: str) -> None:
    """A declaration the run could not use, said at configure time with the plugin that returned it."""
    where = f"plugin {plugin}"
    if not isinstance(check, Check):
        raise RegistryError(f"{where}: pytest_fabric_checks returned {check!r}; return a list of "
                            "pytest_fabric.checks.base.Check declarations")
    if not _NAME_RE.match(check.name):
        raise RegistryError(f"{where}: check name {check.name!r}: lower-case letters, digits and _ (its test is "
                            "test_<name>)")
    for what, value, allowed in (("layer", check.layer, _LAYER_NAMES), ("subject", check.subject, _SUBJECTS),
                                 ("batching", check.batching, _BATCHINGS)):
        if value not in allowed:
            raise RegistryError(f"{where}: check {check.name}: {what} {value!r} is not one of {', '.join(allowed)}")
    if check.model is not None and not (isinstance(check.model, type) and issubclass(check.model, p.CheckSpec)):
        raise RegistryError(f"{where}: check {check.name}: its model {check.model!r} is not a "
                            "pytest_fabric.config.profile.CheckSpec subclass")


#: a registry of no check: the default of a pure function called without the run's registry (every
#: built-in check is declared in its family: pass ``state.checks``, or ``checks.builtin.builtin_registry()``)
NO_CHECKS = CheckRegistry({})
