"""Storage measurements: fio on each mount (sequential, random read, checkpoint) and on the shared mount from every node at once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ..cluster import Cluster
from ..fixtures import MountHandle
from ..probes import storage
from ..state import get_state
from ..verdict import Measurement


def _settings(spec: Any, rw: str) -> storage.FioSettings:
    return storage.FioSettings(
        rw=rw,
        size_bytes=int(spec.size.to("B")),
        block_size_bytes=int(spec.block_size.to("B")),
        jobs=spec.jobs,
        direct=spec.direct,
    )


@pytest.fixture
def sequential_read(mount: MountHandle, spec: Callable[[str], Any]) -> Measurement:
    settings = spec("storage.sequential_read")
    return storage.sequential(mount.node, mount.path, _settings(settings, "read"))


@pytest.fixture
def sequential_write(mount: MountHandle, spec: Callable[[str], Any]) -> Measurement:
    settings = spec("storage.sequential_write")
    return storage.sequential(mount.node, mount.path, _settings(settings, "write"))


@pytest.fixture
def random_read_iops(mount: MountHandle, spec: Callable[[str], Any]) -> Measurement:
    """fio randread for ``runtime`` at ``iodepth`` (libaio): IOPS as a count."""
    settings = spec("storage.random_read_iops")
    fio_settings = storage.FioSettings(
        rw="randread",
        size_bytes=int(settings.size.to("B")),
        block_size_bytes=int(settings.block_size.to("B")),
        iodepth=settings.iodepth,
        runtime_s=float(settings.runtime.to("s")),
    )
    return storage.random_read(mount.node, mount.path, fio_settings)


@pytest.fixture
def checkpoint_write(mount: MountHandle, spec: Callable[[str], Any]) -> Measurement:
    """A ``size`` sequential write ended by fsync: what saving a checkpoint costs."""
    settings = spec("storage.checkpoint_write")
    fio_settings = storage.FioSettings(
        rw="write",
        size_bytes=int(settings.size.to("B")),
        block_size_bytes=int(settings.block_size.to("B")),
        jobs=settings.jobs,
        direct=settings.direct,
        fsync_on_close=True,
    )
    return storage.checkpoint_write(mount.node, mount.path, fio_settings)


@pytest.fixture
def shared_mount_write(request: pytest.FixtureRequest, cluster: Cluster, spec: Callable[[str], Any]) -> Measurement:
    """All nodes write to each inventory mount at once; the sum of their bandwidths.

    Skipped without inventory mounts: the fallback temp dir is node-local, so
    "all nodes at once" would measure N separate disks, not shared storage.
    """
    settings = spec("storage.aggregate_write")
    state = get_state(request.config)
    assert state is not None  # `cluster` skips first when the plugin is not configured
    mounts = list(state.inventory.mounts)
    if not mounts:
        pytest.skip("aggregate_write needs a shared mount: the inventory lists no storage.mounts")
    return storage.aggregate_write(cluster.nodes, mounts, _settings(settings, "write"))
