"""Egress measurements, for each target from each node: name resolution, TCP connect time, download and upload.

Each check runs in a wave over every node and target at once; transfers share the site's
uplink, so downloads and uploads run one at a time (the profile's ``concurrency:`` raises it).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .. import checks
from ..batches import Share
from ..fixtures import EgressTarget, SpecLookup
from ..probes import egress
from ..state import FabricState, get_state
from ..verdict import Measurement
from ..waves import wave


def _uplink(check: str) -> Callable[[FabricState, EgressTarget], Share]:
    def share(state: FabricState, target: EgressTarget) -> Share:
        spec = state.profile.spec("egress", check)
        return Share("the egress uplink", getattr(spec, "concurrency", None) or 1)

    return share


@pytest.fixture
@wave("egress_target")
def dns_resolve(egress_target: EgressTarget, spec: SpecLookup) -> Measurement:
    spec(checks.DNS_RESOLVE)
    return egress.dns_resolve(egress_target.node, egress_target.target)


@pytest.fixture
@wave("egress_target")
def connect_latency(egress_target: EgressTarget, spec: SpecLookup) -> Measurement:
    """Median of a few TCP connects to the target's host and port, timed on the node."""
    spec(checks.CONNECT_LATENCY)
    return egress.connect_latency(egress_target.node, egress_target.target)


@pytest.fixture
@wave("egress_target", shares=_uplink("download"))
def download(request: pytest.FixtureRequest, egress_target: EgressTarget, spec: SpecLookup) -> Measurement:
    """curl the target URL on the node; the average download rate.  Not for upload targets."""
    spec(checks.DOWNLOAD)
    if not egress.is_url(egress_target.target):
        pytest.skip(f"{egress_target.target} is not an http(s) URL: host:port targets get dns_resolve and connect_latency only")
    state = get_state(request.config)
    if state is not None and egress_target.target in state.inventory.upload_targets:
        # A drop URL takes PUTs; a GET of it answers 404 and would err every node.
        pytest.skip(f"{egress_target.target} is an upload target (upload: true): it is uploaded to, not downloaded")
    return egress.download(egress_target.node, egress_target.target)


@pytest.fixture
@wave("egress_target", shares=_uplink("upload"))
def upload(request: pytest.FixtureRequest, egress_target: EgressTarget, spec: SpecLookup) -> Measurement:
    """HTTP PUT to the target from the node, only for targets the inventory marks ``upload: true``."""
    spec(checks.UPLOAD)
    state = get_state(request.config)
    assert state is not None  # `egress_target` skips first when the plugin is not configured
    accepting = state.inventory.upload_targets
    if not accepting:
        pytest.skip("no target accepts uploads (mark one `upload: true` in the inventory's egress.targets)")
    if egress_target.target not in accepting:
        pytest.skip(f"{egress_target.target} does not accept uploads (the inventory does not mark it `upload: true`)")
    return egress.upload(egress_target.node, egress_target.target)
