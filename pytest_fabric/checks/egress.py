"""Egress (``egress.*``), for each target from each node: name resolution, TCP connect time, download
and upload: settings, declarations and fixtures.

Each check runs in a wave over every node and target, under ``--fabric-fanout``. A target's server
is someone else's: downloads and uploads to one server (host:port) run at most the inventory's
``egress.concurrency`` at a time (default 8; the check's ``concurrency:`` may lower it), whatever the
fan-out (pytest_fabric/run/sharing.py, which the plan reads too). The detail says the cap.
A transfer moves the check's ``bytes:`` where the profile bounds it (a download asks for a Range).
The family registers its checks through ``pytest_fabric_checks``, as an extension does; the probe is
:mod:`pytest_fabric.probes.egress`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import Field, field_validator

from pytest_fabric.checks.base import Check
from pytest_fabric.config.profile import BandwidthFloor, CheckSpec
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge.verdict import Measurement, Op
from pytest_fabric.probes import egress
from pytest_fabric.run import sharing
from pytest_fabric.run.batches import Share
from pytest_fabric.run.fixtures import EgressTarget, SpecLookup
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.run.waves import wave

__all__ = ["CONNECT_LATENCY", "DNS_RESOLVE", "DOWNLOAD", "UPLOAD", "EgressTransfer", "TimeCeiling",
           "pytest_fabric_checks"]


class TimeCeiling(CheckSpec):
    """A lookup or a connect that must take at most ``max``."""

    BOUNDS = (("max", Op.MAX, Dimension.TIME),)
    SCALAR_FIELD = "max"
    max: QuantityField | None = None


class EgressTransfer(BandwidthFloor):
    """A transfer to or from a target, at least ``min``; what one moves is ``bytes`` (unset: the whole
    file, the default upload size)."""

    SHARES = "server"
    #: nodes transferring to one target's server at once; unset: the inventory's egress.concurrency
    #: (a cap for the server's sake, which this can lower, never raise)
    concurrency: int | None = Field(default=None, ge=1, le=4096)
    #: what one transfer moves: a download asks for the file's first ``bytes`` (an HTTP Range), an
    #: upload sends that many; unset: the whole file, and the upload's default size. Bounded, a
    #: transfer takes as long as it needs and the plan knows how long that is (bytes over ``min``).
    bytes: QuantityField | None = None

    @field_validator("bytes")
    @classmethod
    def _some_bytes(cls, value: Quantity | None) -> Quantity | None:
        if value is not None and float(parse_quantity(value, dimension=Dimension.SIZE).to("B")) < 1:
            raise ValueError(f"bytes: {value} moves nothing; give a size of at least a byte (e.g. '256 MiB')")
        return value


# a lookup or a TCP handshake takes milliseconds: one is a command's round trip, like a reading.
# One DNS lookup takes 1-2 ms from a cache and tens of ms past it: a change under 5 ms says nothing.
DNS_RESOLVE = Check("dns_resolve", "egress", TimeCeiling, "egress_target", "wave", tools=("getent",), typical_s=0.3,
                    needs=("egress_targets",), noise=parse_quantity("5 ms"))
CONNECT_LATENCY = Check("connect_latency", "egress", TimeCeiling, "egress_target", "wave", typical_s=0.3,
                        needs=("egress_targets",))
DOWNLOAD = Check("download", "egress", EgressTransfer, "egress_target", "wave", tools=("curl",), typical_s=10.0,
                 needs=("egress_targets", "download_url"))
UPLOAD = Check("upload", "egress", EgressTransfer, "egress_target", "wave", tools=("curl",), typical_s=10.0,
               needs=("egress_targets", "upload_target"))


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [DNS_RESOLVE, CONNECT_LATENCY, DOWNLOAD, UPLOAD]


def _server(check: str) -> Callable[[FabricState, EgressTarget], Share | None]:
    """What a node's transfer to a target shares: the target's server, ``egress.concurrency`` at once."""

    def share(state: FabricState, target: EgressTarget) -> Share | None:
        return sharing.egress_share(state.inventory, state.profile, check, target.target)

    return share


def _capped(request: pytest.FixtureRequest, check: str, target: EgressTarget, measured: Measurement) -> Measurement:
    """``measured`` saying how many transfers to its server ran at once at most, and what capped them."""
    state = get_state(request.config)
    share = None if state is None else sharing.egress_share(state.inventory, state.profile, check, target.target)
    if state is None or share is None:
        return measured
    server = sharing.egress_server(target.target)
    fanout = state.batches.fanout
    stated = state.inventory.egress_concurrency
    by = f"egress.concurrency {stated} in the inventory"
    if share.limit < stated:
        by = f"egress.{check}.concurrency {share.limit} in the profile, under {by}"
    note = f"at most {min(share.limit, fanout)} {check}s to {server} at once ({by}; --fabric-fanout {fanout})"
    detail = f"{measured.detail}; {note}" if measured.detail else note
    extra = {**measured.extra, "egress_cap": {"server": server, "concurrency": share.limit, "fanout": fanout}}
    return dataclasses.replace(measured, detail=detail, extra=extra)


def _bytes(settings: EgressTransfer) -> int | None:
    """The profile's ``bytes:`` for a transfer, in bytes; None: unbounded (the whole file, the default upload)."""
    return None if settings.bytes is None else int(settings.bytes.to("B"))


@pytest.fixture
@wave("egress_target")
def dns_resolve(egress_target: EgressTarget, spec: SpecLookup) -> Measurement:
    spec(DNS_RESOLVE)
    return egress.dns_resolve(egress_target.node, egress_target.target)


@pytest.fixture
@wave("egress_target")
def connect_latency(egress_target: EgressTarget, spec: SpecLookup) -> Measurement:
    """Median of a few TCP connects to the target's host and port, timed on the node."""
    spec(CONNECT_LATENCY)
    return egress.connect_latency(egress_target.node, egress_target.target)


@pytest.fixture
@wave("egress_target", shares=_server("download"))
def download(request: pytest.FixtureRequest, egress_target: EgressTarget, spec: SpecLookup) -> Measurement:
    """curl the target URL on the node; the average download rate.  Not for upload targets."""
    settings = spec(DOWNLOAD)
    if not egress.is_url(egress_target.target):
        pytest.skip(f"{egress_target.target} is not an http(s) URL: host:port targets get dns_resolve and connect_latency only")
    state = get_state(request.config)
    if state is not None and egress_target.target in state.inventory.upload_targets:
        # A drop URL takes PUTs; a GET of it answers 404 and would err every node.
        pytest.skip(f"{egress_target.target} is an upload target (upload: true): it is uploaded to, not downloaded")
    measured = egress.download(egress_target.node, egress_target.target, _bytes(settings))
    return _capped(request, "download", egress_target, measured)


@pytest.fixture
@wave("egress_target", shares=_server("upload"))
def upload(request: pytest.FixtureRequest, egress_target: EgressTarget, spec: SpecLookup) -> Measurement:
    """HTTP PUT to the target from the node, only for targets the inventory marks ``upload: true``."""
    settings = spec(UPLOAD)
    state = get_state(request.config)
    assert state is not None  # `egress_target` skips first when the plugin is not configured
    accepting = state.inventory.upload_targets
    if not accepting:
        pytest.skip("no target accepts uploads (mark one `upload: true` in the inventory's egress.targets)")
    if egress_target.target not in accepting:
        pytest.skip(f"{egress_target.target} does not accept uploads (the inventory does not mark it `upload: true`)")
    measured = egress.upload(egress_target.node, egress_target.target, _bytes(settings))
    return _capped(request, "upload", egress_target, measured)
