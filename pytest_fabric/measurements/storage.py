"""Storage measurements: sequential read and write with fio on each mount."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from ..fixtures import MountHandle
from ..probes import storage
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
