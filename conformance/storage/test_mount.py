"""Storage: each inventory mount is mounted on every node, with the type and options the inventory states."""

import pytest

from pytest_fabric.judge.verdict import Expectation, Measurement
from pytest_fabric.run.fixtures import Judge, MountHandle

pytestmark = pytest.mark.storage


def test_mount(mount: MountHandle, mount_state: Measurement, mount_expected: list[Expectation], judge: Judge) -> None:
    """A mount point, not a directory on the local disk; of the stated type (lustre, nfs4) and options (proto=rdma)."""
    judge(mount_state, expectations=mount_expected)
