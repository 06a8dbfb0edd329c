"""Profiles: the expected values a cluster is judged against.

A profile is YAML with one section per layer (docs/profiles.md).
Bundled profiles live in ``pytest_fabric/profiles``; ``--profile NAME`` picks
one, ``--profile path.yaml`` reads a file, ``extends:`` inherits (bundled name
or a path relative to the extending file) and ``--expect a.b.c=VALUE``
overrides one value.  Every key is checked: a typo is an error that names the
file, line and the key it probably meant.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from pytest_fabric.config import yamlsource
from pytest_fabric.config.bundled import profiles_dir
from pytest_fabric.config.rdma_ports import rdma_port_names
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.config.yamlsource import SourceError
from pytest_fabric.judge.ceilings import Ceiling, impossible
from pytest_fabric.judge.verdict import Expectation, Op
from pytest_fabric.run.pairs import resolve_strategy

__all__ = ["Profile", "load_profile", "bundled_profiles", "ProfileDocument", "ProfileSchema", "profile_schema", "LAYERS"]

# software first: it is checked before any measurement (README "The software layer")
LAYERS = ("software", "intra_node", "inter_node", "storage", "egress")


# ---------------------------------------------------------------------------
# Check specifications.  Each has the bound(s) it is judged by plus the
# parameters of its measurement; `source:` and `waiver:` may go on any.


class CheckSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str | None = None
    waiver: str | None = None
    #: a check that may find nothing to measure on some clusters (no dcgmi, one leaf): then it is
    #: listed under "not run" and does not block ACCEPT; a check it measures is judged as any other
    optional: bool = False

    #: (field, op, dimension) of the bounds this kind of check accepts
    BOUNDS: ClassVar[tuple[tuple[str, Op, Dimension], ...]] = ()
    #: how a bare scalar (``mtu: 4096``) is read
    SCALAR_FIELD: ClassVar[str] = "min"
    #: what one measurement holds that other members of its wave may need too (run/sharing.py): "mount",
    #: a shared mount it loads (taken in turns unless ``measured: together``); "server", an egress
    #: target's server (at most ``egress.concurrency`` at once); None: nothing, only --fabric-fanout caps it
    SHARES: ClassVar[Literal["mount", "server"] | None] = None
    #: the field, if any, that names a check the blame model reads (attribution's ``check``): held at
    #: load to the registered checks that feed it (``ProfileSchema.attributed``), with its file and line
    NAMES_BLAME_INPUT: ClassVar[str | None] = None

    @model_validator(mode="before")
    @classmethod
    def _scalar(cls, value: Any) -> Any:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and cls.SCALAR_FIELD in cls.model_fields:
            return {cls.SCALAR_FIELD: value}
        return value

    @field_validator("*")
    @classmethod
    def _dimension(cls, value: Any, info: ValidationInfo) -> Any:
        # Checked per field, so the error points at the line of the value (or at --expect).
        wanted = {name: dimension for name, _op, dimension in cls.BOUNDS}.get(str(info.field_name))
        wanted = wanted or _PARAM_DIMENSIONS.get(str(info.field_name))
        if wanted is not None and isinstance(value, Quantity):
            parse_quantity(value, dimension=wanted)
        return value

    @model_validator(mode="after")
    def _dimensions(self) -> Any:
        if not any(getattr(self, name, None) is not None for name, _, _ in self.BOUNDS):
            names = " or ".join(name for name, _, _ in self.BOUNDS)
            raise ValueError(f"give {names}")
        return self

    def bounds(self) -> list[tuple[str, Op, Quantity | str | int | bool]]:
        out = []
        for name, op, _dimension in self.BOUNDS:
            value = getattr(self, name, None)
            if value is not None:
                out.append((name, op, value))
        return out

    def seconds(self) -> float | None:
        """How long one measurement takes where these settings decide it other than by a ``duration``, a
        ``runtime`` or a size at the floor (DCGM's level); None: the plan works it out (run/plan.py)."""
        return None

    def params(self) -> dict[str, Any]:
        bound_names = {name for name, _, _ in self.BOUNDS}
        return {
            k: v for k, v in self.__dict__.items() if k not in bound_names and k not in ("source", "waiver", "optional")
        }


# Measurement parameters that are quantities, by name: the dimension each must have.
_PARAM_DIMENSIONS = {
    "size": Dimension.SIZE,
    "block_size": Dimension.SIZE,
    "duration": Dimension.TIME,
    "runtime": Dimension.TIME,
}


def _bounds(*spec: tuple[str, Op, Dimension]) -> Any:
    return spec


S = TypeVar("S", bound=CheckSpec)
S_co = TypeVar("S_co", bound=CheckSpec, covariant=True)


class Declared(Protocol[S_co]):
    """What the profile reads of a check's declaration (a :class:`pytest_fabric.checks.base.Check`):
    its layer, its key there and its settings model.  A protocol, not the class: checks/base.py
    declares checks with this module's models, so importing it here would be a loop."""

    @property
    def layer(self) -> str: ...

    @property
    def setting(self) -> str: ...

    @property
    def model(self) -> type[S_co] | None: ...


class BandwidthFloor(CheckSpec):
    BOUNDS = _bounds(("min", Op.MIN, Dimension.BANDWIDTH))
    min: QuantityField | None = None


class NcclBandwidth(BandwidthFloor):
    size: QuantityField = Field(default_factory=lambda: parse_quantity("8 GiB"))


class Count(CheckSpec):
    """An exact count (``gpu_count: 8``) or a floor (``ports: {min: 4}``)."""

    BOUNDS = _bounds(("equal", Op.EQUAL, Dimension.COUNT), ("min", Op.MIN, Dimension.COUNT))
    SCALAR_FIELD = "equal"
    equal: QuantityField | None = None
    min: QuantityField | None = None

    @property
    def stated(self) -> int | None:
        """The count the profile states, exact or as a floor (None: it states none)."""
        value = self.equal or self.min
        return int(value.value) if value is not None else None


class Ports(Count):
    """Active RDMA ports per node: ``ports: 4`` is at least four; ``names`` judges exactly those.

    A node may carry more ports than the fabric under test (a storage HCA), so a bare
    count is a floor; ``equal:`` asks for an exact count.  With ``names`` (or the
    inventory's ``rdma_ports`` for a node) every named port must be there and Active,
    per-port subjects are those ports, and rails pair by those names.
    """

    SCALAR_FIELD = "min"
    names: list[str] = Field(default_factory=list)

    @property
    def stated(self) -> int | None:
        """The ports the profile states: the count, else as many as it names."""
        return super().stated or len(self.names) or None

    @field_validator("names")
    @classmethod
    def _port_names(cls, value: list[str]) -> list[str]:
        return rdma_port_names(value, twice="a port is named twice")

    @model_validator(mode="after")
    def _dimensions(self) -> Any:
        if self.equal is None and self.min is None and not self.names:
            raise ValueError("give min, equal or names")
        return self

    def bounds(self) -> list[tuple[str, Op, Quantity | str | int | bool]]:
        found = super().bounds()
        if not found and self.names:
            return [("equal", Op.EQUAL, parse_quantity(len(self.names)))]
        return found




class Text(CheckSpec):
    """A word the measurement must contain (``gpu_model: A100``) or equal (``link_layer: infiniband``)."""

    value: str

    SCALAR_FIELD = "value"

    @model_validator(mode="after")
    def _dimensions(self) -> Any:
        return self

    def bounds(self) -> list[tuple[str, Op, Quantity | str | int | bool]]:
        return [("value", Op.CONTAINS, self.value)]


class Outlier(CheckSpec):
    BOUNDS = _bounds(("max_below_median", Op.MAX, Dimension.PERCENT),)
    SCALAR_FIELD = "max_below_median"
    max_below_median: QuantityField | None = None


class Share(CheckSpec):
    """A ratio that must stay high: all ports at once vs one port times N, all pairs vs alone, N nodes vs 2."""

    BOUNDS = _bounds(("min", Op.MIN, Dimension.PERCENT),)
    min: QuantityField | None = None


class Roce(CheckSpec):
    pfc_priorities: list[int] = Field(default_factory=list)
    ecn: bool | None = None
    trust: Literal["dscp", "pcp"] | None = None
    # What RDMA tests mark their traffic with, so they run in the lossless class this
    # check requires and not in TC 0: perftest --tclass (the GRH traffic class, DSCP << 2
    # plus the ECN bits) under DSCP trust, -S (the service level, sent as the PCP) under
    # PCP trust.  Unset: derived from the first PFC priority (DSCP 8p+2, e.g. 26 -> 106).
    traffic_class: int | None = Field(default=None, ge=0, le=255)
    service_level: int | None = Field(default=None, ge=0, le=15)
    # The GID table entry every RDMA tool uses (RoCEv2 over IPv4 is usually 3; `show_gids` lists
    # them). Unset: each tool picks its own (perftest the first, NCCL its auto-detection).
    gid_index: int | None = Field(default=None, ge=0, le=255)

    @model_validator(mode="after")
    def _dimensions(self) -> Any:
        if not self.pfc_priorities and self.ecn is None and self.trust is None:
            raise ValueError("give pfc_priorities, ecn or trust")
        for priority in self.pfc_priorities:
            if not 0 <= priority <= 7:
                raise ValueError(f"pfc_priorities: {priority} is not a priority 0-7")
        if self.pfc_priorities and self.traffic_class is not None and self.trust != "pcp":
            priority = self.traffic_class >> 5  # DSCP (tclass >> 2) >> 3 in the default dscp2prio map
            if priority not in self.pfc_priorities:
                raise ValueError(
                    f"traffic_class: {self.traffic_class} is DSCP {self.traffic_class >> 2}, priority {priority} "
                    f"in the default dscp2prio map, which has no PFC here (pfc_priorities {self.pfc_priorities})"
                )
        return self

    def marking(self) -> tuple[str, int] | None:
        """How RDMA traffic is put in the lossless class: ("sl", level) under PCP trust, else
        ("tclass", traffic class); None: nothing to mark."""
        if self.trust == "pcp":
            level = self.service_level if self.service_level is not None else min(self.pfc_priorities, default=None)
            return None if level is None else ("sl", level)
        tclass = self.traffic_class
        if tclass is None and self.pfc_priorities:
            tclass = (8 * min(self.pfc_priorities) + 2) << 2 | (2 if self.ecn else 0)
        return None if tclass is None else ("tclass", tclass)

    def perftest_args(self) -> tuple[str, ...]:
        """perftest options that put RDMA traffic in the lossless class, on the profile's GID (empty: none)."""
        mark = self.marking()
        out = [] if mark is None else [f"--sl={mark[1]}" if mark[0] == "sl" else f"--tclass={mark[1]}"]
        if self.gid_index is not None:
            out.append(f"--gid-index={self.gid_index}")
        return tuple(out)

    def nccl_env(self) -> tuple[str, ...]:
        """The same class and GID for NCCL (NCCL_IB_TC, NCCL_IB_SL, NCCL_IB_GID_INDEX), as ``NAME=value``."""
        mark = self.marking()
        out = [] if mark is None else [f"NCCL_IB_SL={mark[1]}" if mark[0] == "sl" else f"NCCL_IB_TC={mark[1]}"]
        if self.gid_index is not None:
            out.append(f"NCCL_IB_GID_INDEX={self.gid_index}")
        return tuple(out)

    def bounds(self) -> list[tuple[str, Op, Quantity | str | int | bool]]:
        out: list[tuple[str, Op, Quantity | str | int | bool]] = []
        if self.trust is not None:
            out.append(("trust", Op.EQUAL, self.trust))
        if self.pfc_priorities:
            out.append(("pfc_priorities", Op.EQUAL, ",".join(str(p) for p in sorted(self.pfc_priorities))))
        if self.ecn is not None:
            out.append(("ecn", Op.EQUAL, "on" if self.ecn else "off"))
        return out


class Finding(CheckSpec):
    """A check whose measurement states its own finding in a word (``ok``, ``consistent``); the
    profile only switches it on (``preflight: {}``) and sets how it measures."""

    OK: ClassVar[str] = "ok"

    @model_validator(mode="before")
    @classmethod
    def _switch(cls, value: Any) -> Any:
        return {} if value is True else value  # `preflight: true` reads as `preflight: {}`

    @model_validator(mode="after")
    def _dimensions(self) -> Any:
        return self

    def bounds(self) -> list[tuple[str, Op, Quantity | str | int | bool]]:
        return [("value", Op.EQUAL, self.OK)]


# ---------------------------------------------------------------------------
# Sections


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Software(_Section):
    """Its checks' keys are their family's (checks/software.py), added by :func:`profile_schema`."""


class IntraNode(_Section):
    """The keys of the GPU family (checks/gpu.py) and the others' are added by :func:`profile_schema`."""

    gpu_count: Count | None = None


class InterNode(_Section):
    link_layer: Text | None = None
    ports: Ports | None = None
    port_state: Text | None = None
    outlier: Outlier | None = None
    roce: Roce | None = None
    # every pair is N-1 rounds and N(N-1)/2 tests per pair check: right for a pod, not for 512 nodes
    pairs: str = "all up to 32 nodes, then random:4"

    @field_validator("pairs")
    @classmethod
    def _pairs(cls, value: str) -> str:
        resolve_strategy(value, 0)  # checks both halves of a size rule
        return value


class Storage(_Section):
    """Its checks' keys are their families' (checks/storage.py), added by :func:`profile_schema`."""


class Egress(_Section):
    """Its checks' keys are their family's (checks/egress.py), added by :func:`profile_schema`."""


class Soak(BaseModel):
    """``soak:``: how a ``--soak`` burn-in is judged over time and sampled (docs/running.md, "A burn-in").

    ``max_drift``: a figure more than this much worse than its best earlier cycle fails the soak,
    even above its floor (``10%``; unset: drift is not judged). ``interval``: telemetry every this
    long (GPU temperature, clocks, clock-event reasons, power, ECC, ports). ``load``: between two
    cycles, the tensor-core GEMM on every GPU of every node for this long (probes/gpu_load.py;
    unset: no load between cycles, only the checks' own).
    """

    model_config = ConfigDict(extra="forbid")

    max_drift: QuantityField | None = None
    interval: QuantityField = Field(default_factory=lambda: parse_quantity("30 s"))
    load: QuantityField | None = None
    source: str = ""

    @field_validator("max_drift")
    @classmethod
    def _a_share(cls, value: Quantity | None) -> Quantity | None:
        if value is None:
            return None
        share = parse_quantity(value, dimension=Dimension.PERCENT)
        if not 0 < share.value < 1:
            raise ValueError(f"max_drift {share.text or share}: give a share between 0% and 100%, e.g. '10%'")
        return share

    @field_validator("interval", "load")
    @classmethod
    def _seconds(cls, value: Quantity | None) -> Quantity | None:
        if value is None:
            return None
        seconds = float(parse_quantity(value, dimension=Dimension.TIME).to("s"))
        if seconds < 1:
            raise ValueError(f"{value.text or value}: give at least '1 s'")
        return value

    @property
    def max_drift_fraction(self) -> float | None:
        """``max_drift`` as a fraction (0.1 for 10%), None when unset."""
        return float(self.max_drift.value) if self.max_drift is not None else None

    @property
    def interval_s(self) -> float:
        return float(self.interval.to("s"))

    @property
    def load_s(self) -> float | None:
        return float(self.load.to("s")) if self.load is not None else None


class ProfileDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    extends: str | None = None
    software: Software = Field(default_factory=Software)
    intra_node: IntraNode = Field(default_factory=IntraNode)
    inter_node: InterNode = Field(default_factory=InterNode)
    storage: Storage = Field(default_factory=Storage)
    egress: Egress = Field(default_factory=Egress)
    #: --soak's settings: judged over time (not a layer: no check of its own)
    soak: Soak = Field(default_factory=Soak)


_SECTION_MODELS: dict[str, type[BaseModel]] = {
    "software": Software,
    "intra_node": IntraNode,
    "inter_node": InterNode,
    "storage": Storage,
    "egress": Egress,
}


@dataclass(frozen=True)
class ProfileSchema:
    """The document model a profile is validated by, and its section models by layer.

    :data:`BUILTIN_SCHEMA` is the typed sections above alone; :func:`profile_schema` adds the keys of
    the registered checks (the check families', an extension's), each typed by its settings model.
    ``ceilings``: (layer, key) -> what bounds that key's floor, as its check declares it
    (judge/ceilings.py holds each floor to it at load).
    """

    document: type[ProfileDocument]
    sections: dict[str, type[BaseModel]]
    ceilings: Mapping[tuple[str, str], Ceiling] = field(default_factory=dict)
    #: the registered checks that declare they feed attribution (``CheckRegistry.blame_inputs``): what
    #: a ``NAMES_BLAME_INPUT`` field (attribution's ``check``) may name
    attributed: tuple[str, ...] = ()

    def known_fields(self, loc: tuple[Any, ...]) -> list[str]:
        """The keys written at ``loc`` may be (a layer's checks and settings, a check's fields)."""
        if not loc:
            return list(self.document.model_fields)
        section = self.sections.get(str(loc[0]))
        if section is None:
            return []
        if len(loc) == 1:
            return list(section.model_fields)
        annotation = section.model_fields.get(str(loc[1]))
        if annotation is None:
            return []
        for arg in getattr(annotation.annotation, "__args__", (annotation.annotation,)):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                return list(arg.model_fields)
        return []

    def bound_fields(self, parts: list[str]) -> list[str]:
        """The fields of ``layer.check`` that are bounds (``min``, ``max``...), not parameters."""
        model = _spec_model(self.sections[parts[0]].model_fields[parts[1]].annotation)
        return [name for name, _op, _dimension in model.BOUNDS] if model is not None else []

    def scalar_field_of(self, parts: list[str]) -> str:
        """The field a bare value of ``layer.check`` sets (``mtu: 4096``: ``min``)."""
        annotation = self.sections[parts[0]].model_fields[parts[1]].annotation
        for arg in getattr(annotation, "__args__", (annotation,)):
            if isinstance(arg, type) and issubclass(arg, CheckSpec):
                return arg.SCALAR_FIELD
        return "min"


BUILTIN_SCHEMA = ProfileSchema(ProfileDocument, _SECTION_MODELS)


def _spec_model(annotation: Any) -> Any:
    """The CheckSpec model of a section field (``RdmaBandwidth | None``); None for a setting (``pairs``)."""
    return next((arg for arg in getattr(annotation, "__args__", (annotation,))
                 if isinstance(arg, type) and issubclass(arg, CheckSpec)), None)


def profile_schema(settings: dict[str, dict[str, type[CheckSpec]]],
                   ceilings: Mapping[tuple[str, str], Ceiling] | None = None,
                   attributed: Iterable[str] = ()) -> ProfileSchema:
    """The schema for the registered checks' settings models (layer -> key -> model, as
    ``CheckRegistry.settings_models`` gives them): each layer's typed section, plus a field for every
    key no built-in check declares, typed by its model. A key a section already types with another
    model, or a layer that is not one, is a ``ValueError``. ``ceilings``: what bounds each key's floor
    (``CheckRegistry.ceilings``); ``attributed``: the checks attribution may be told to read
    (``CheckRegistry.blame_inputs``)."""
    sections = dict(_SECTION_MODELS)
    for layer, models in settings.items():
        if layer not in _SECTION_MODELS:
            raise ValueError(f"layer {layer!r} is not one of {', '.join(LAYERS)}")
        base = _SECTION_MODELS[layer]
        added: dict[str, Any] = {}
        for key, model in models.items():
            existing = base.model_fields.get(key)
            if existing is None:
                added[key] = (model | None, None)
            elif _spec_model(existing.annotation) is not model:
                typed = _spec_model(existing.annotation)
                raise ValueError(
                    f"{layer}.{key} is already a profile key of type "
                    f"{getattr(typed or existing.annotation, '__name__', existing.annotation)}, not {model.__name__}: "
                    "give the check a key of its own (Check(key=...))")
        if added:
            sections[layer] = create_model(base.__name__, __base__=base, __module__=base.__module__, **added)
    if sections == _SECTION_MODELS and not ceilings and not attributed:
        return BUILTIN_SCHEMA
    changed: dict[str, Any] = {layer: (section, Field(default_factory=section)) for layer, section in sections.items()
                               if section is not _SECTION_MODELS[layer]}
    document = create_model("ProfileDocument", __base__=ProfileDocument, __module__=ProfileDocument.__module__,
                            **changed) if changed else ProfileDocument
    return ProfileSchema(document, sections, dict(ceilings or {}), tuple(attributed))


# ---------------------------------------------------------------------------


@dataclass
class Profile:
    """A loaded profile: the validated document plus where it came from."""

    document: ProfileDocument
    path: Path
    chain: list[Path]  # this file first, then what it extends
    sha256: str
    overrides: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.document.name

    @property
    def extends(self) -> list[str]:
        return [p.stem for p in self.chain[1:]]

    def section(self, layer: str) -> BaseModel:
        return getattr(self.document, layer)  # type: ignore[no-any-return]

    def spec(self, layer: str, check: str) -> CheckSpec | None:
        value = getattr(self.section(layer), check, None)
        return value if isinstance(value, CheckSpec) else None  # `pairs` is a setting, not a check

    def spec_of(self, check: Declared[S]) -> S | None:
        """The settings of a declared check, typed as its model (None: the profile does not set it)."""
        value = getattr(self.section(check.layer), check.setting, None)
        return value if check.model is not None and isinstance(value, check.model) else None

    def expectations(self, layer: str, check: str) -> list[Expectation]:
        """Every bound the profile sets for a check (empty when it sets none)."""
        spec = self.spec(layer, check)
        if spec is None:
            return []
        return [
            Expectation(
                layer=layer,
                check=check,
                op=op,
                value=value,
                key=f"{layer}.{check}.{name}",
                profile=self.name,
                source=spec.source,
                waiver=spec.waiver,
                params=spec.params(),
            )
            for name, op, value in spec.bounds()
        ]

    def set_checks(self) -> list[str]:
        """``layer.check`` for every check this profile sets."""
        out = []
        for layer in LAYERS:
            section = self.section(layer)
            for name in type(section).model_fields:
                value = getattr(section, name)
                if isinstance(value, CheckSpec):
                    out.append(f"{layer}.{name}")
        return out


def bundled_profiles() -> dict[str, Path]:
    """Bundled profile names -> paths."""
    return {path.stem: path for path in sorted(profiles_dir().glob("*.yaml"))}


def _resolve(reference: str, relative_to: Path | None) -> Path:
    candidate = Path(reference).expanduser()
    if reference.endswith((".yaml", ".yml")) or "/" in reference:
        if not candidate.is_absolute() and relative_to is not None:
            candidate = relative_to.parent / candidate
        return candidate
    bundled = bundled_profiles()
    if reference in bundled:
        return bundled[reference]
    if candidate.exists():
        return candidate
    raise SourceError(
        f"no profile named {reference!r}{yamlsource.suggest(reference, bundled)}; bundled profiles: "
        f"{', '.join(bundled)} (or give a path to a .yaml file)"
    )


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _read_chain(path: Path, seen: list[Path]) -> tuple[dict[str, Any], dict[tuple[Any, ...], tuple[str, int]], list[Path], bytes]:
    resolved = path.resolve()
    if resolved in seen:
        cycle = " -> ".join(str(p) for p in seen + [resolved])
        raise SourceError(f"{path}: `extends` makes a cycle: {cycle}")
    data, lines = yamlsource.load(path)
    if not isinstance(data, dict):
        raise SourceError(f"{path}: a profile is a mapping with `name:` and layer sections (see the README)")
    raw = path.read_bytes()
    where = {loc: (str(path), line) for loc, line in lines.items()}
    chain = [resolved]
    extends = data.get("extends")
    if extends is None:
        return data, where, chain, raw
    if not isinstance(extends, str):
        raise SourceError(f"{path}:{lines.get(('extends',), '?')}: extends: write the name or path of one profile")
    where_extends = f"{path}:{lines.get(('extends',), '?')}: extends"
    try:
        parent_path = _resolve(extends, path)
    except SourceError as exc:
        raise SourceError(f"{where_extends}: {exc}") from None
    if not parent_path.is_file():
        raise SourceError(f"{where_extends}: {parent_path}: no such file")
    parent, parent_where, parent_chain, parent_raw = _read_chain(parent_path, seen + [resolved])
    merged = _merge(parent, {k: v for k, v in data.items() if k != "extends"})
    merged["extends"] = extends
    parent_where.update(where)
    return merged, parent_where, chain + parent_chain, raw + parent_raw


def _apply_override(data: dict[str, Any], override: str, schema: ProfileSchema = BUILTIN_SCHEMA) -> tuple[str, ...]:
    """Apply one ``--expect KEY=VALUE``; return the key path it set (for error messages)."""
    key, sep, text = override.partition("=")
    if not sep or not key.strip():
        raise SourceError(f"--expect {override!r}: write KEY=VALUE, the key a layer, a check and a field, "
                          f"e.g. {_example_floor(schema)}=VALUE")
    parts = key.strip().split(".")
    if parts[0] not in LAYERS or len(parts) < 2:
        raise SourceError(
            f"--expect {override!r}: the key starts with a layer ({', '.join(LAYERS)}), then the check, "
            f"e.g. {_example_floor(schema)}"
        )
    known = schema.known_fields(tuple(parts[:1]))
    if parts[1] not in known:
        raise SourceError(f"--expect {override!r}: {parts[0]} has no check {parts[1]!r}{yamlsource.suggest(parts[1], known)}")
    try:
        value: Any = yaml.safe_load(text) if text.strip() else text
    except yaml.YAMLError:
        raise SourceError(f"--expect {override!r}: {text!r} is not a value (e.g. 150Gb/s, 9000, '2 us')") from None
    existing = data.get(parts[0], {}).get(parts[1]) if isinstance(data.get(parts[0]), dict) else None
    if len(parts) == 2 and isinstance(existing, dict) and not isinstance(value, dict):
        # `inter_node.CHECK=150Gb/s` sets the bound and keeps size, qps, source...
        parts = [*parts, schema.scalar_field_of(parts)]
    target = data
    for part in parts[:-1]:
        current = target.get(part)
        if not isinstance(current, dict):
            # a scalar shorthand (`mtu: 4096`) becomes a mapping the override can extend
            current = {} if current is None else {schema.scalar_field_of(parts): current}
            target[part] = current
        target = current
    target[parts[-1]] = value
    if len(parts) == 3 and parts[2] in schema.bound_fields(parts):
        # the profile's source: says where its own value came from, not this one
        target["source"] = f"--expect {key.strip()}={text.strip()}"
    return tuple(parts)


def load_profile(reference: str, overrides: list[str] | None = None, schema: ProfileSchema = BUILTIN_SCHEMA) -> Profile:
    """Load a bundled profile by name or a profile file by path, with ``--expect`` overrides applied,
    validated by ``schema`` (a run's: :func:`profile_schema` of its registered checks)."""
    path = _resolve(reference, None)
    data, where, chain, raw = _read_chain(path, [])
    overrides = list(overrides or [])
    for override in overrides:
        where[_apply_override(data, override, schema)] = ("--expect", 0)
    try:
        document = schema.document.model_validate(data)
    except ValidationError as exc:
        raise SourceError(_describe(exc, where, path, schema)) from None
    _refuse_unattributed(document, schema, where, path)
    refused = impossible(document, schema.ceilings)
    if refused:
        raise SourceError(f"profile {document.name} asks for more than the hardware it describes can carry:\n  "
                          + "\n  ".join(f"{_place(where, loc, path)}: {why}" for loc, why in refused))
    digest = hashlib.sha256(raw).hexdigest()
    profile = Profile(document=document, path=path, chain=chain, sha256=digest, overrides=overrides)
    if not profile.set_checks():
        # Nothing to judge: every test would skip, and a run that measured nothing must not read as a pass.
        layer, key, _ = _example_floor(schema).split(".")
        raise SourceError(
            f"{path}: profile {document.name} sets no check: give at least one layer section with a check, "
            f"e.g. `{layer}: {{{key}: {{min: ...}}}}`, or `extends:` a profile that does (see the README)"
        )
    return profile


def _example_floor(schema: ProfileSchema) -> str:
    """``layer.key.min`` of the first key of ``schema`` (the inter-node layer first) with a floor: an
    example for a message, from the registered checks, never a check named here."""
    for layer in ("inter_node", *LAYERS):
        for key, info in schema.sections[layer].model_fields.items():
            model = _spec_model(info.annotation)
            if model is not None and "min" in model.model_fields:
                return f"{layer}.{key}.min"
    return "LAYER.CHECK.min"


def _refuse_unattributed(document: ProfileDocument, schema: ProfileSchema,
                         where: dict[tuple[Any, ...], tuple[str, int]], path: Path) -> None:
    """A check's settings whose ``NAMES_BLAME_INPUT`` field (attribution's ``check``) names no registered
    check that feeds the blame model, refused with its file and line, the field and the checks it may name."""
    for layer in LAYERS:
        section = getattr(document, layer)
        for key in type(section).model_fields:
            value = getattr(section, key)
            field_name = value.NAMES_BLAME_INPUT if isinstance(value, CheckSpec) else None
            named = getattr(value, field_name) if field_name is not None else None
            if named is not None and named not in schema.attributed:
                allowed = ", ".join(schema.attributed) or "none is registered"
                raise SourceError(
                    f"{_place(where, (layer, key, field_name), path)}: {layer}.{key}.{field_name}: {named!r} is no pair "
                    f"check attribution reads; the checks that feed it: {allowed} (or leave check out: every one the "
                    "profile sets)")


def _place(where: dict[tuple[Any, ...], tuple[str, int]], loc: tuple[Any, ...], path: Path) -> str:
    """``file:line`` of the innermost written key of ``loc`` (``--expect`` for an override)."""
    source, line = str(path), 0
    for end in range(len(loc), -1, -1):
        if loc[:end] in where:
            source, line = where[loc[:end]]
            break
    return "--expect" if source == "--expect" else (f"{source}:{line}" if line else source)


def _describe(exc: ValidationError, where: dict[tuple[Any, ...], tuple[str, int]], path: Path,
              schema: ProfileSchema = BUILTIN_SCHEMA) -> str:
    out = []
    for error in exc.errors():
        loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
        place = _place(where, loc, path)
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if error["type"] == "extra_forbidden":
            message = _unknown_key(str(loc[-1]), schema.known_fields(loc[:-1]), len(loc) == 2)
        elif error["type"] == "missing":
            message = "required but missing"
        elif error["type"] in ("model_type", "dict_type"):
            message = f"write a mapping (key: value), not {error['input']!r}"
        out.append(f"{place}: {yamlsource.path_text(loc)}: {message}")
    return "\n".join(out)


def _unknown_key(key: str, known: list[str], is_check: bool) -> str:
    """A key no model has: the one it probably meant, else the keys there are (a layer's include every
    registered check's, an extension's too, so a key of an extension not installed reads as such)."""
    close = yamlsource.suggest(key, known)
    if close or not known:
        return f"unknown key{close}"
    plugin = "; a key of an extension's check needs its plugin (pytest11 or -p)" if is_check else ""
    return f"unknown key; known keys: {', '.join(known)}{plugin}"
