"""Storage: each inventory mount is mounted on every node, with the type and options the inventory states."""

import pytest

pytestmark = pytest.mark.storage


def test_mount(mount, mount_state, mount_expected, judge):
    """A mount point, not a directory on the local disk; of the stated type (lustre, nfs4) and options (proto=rdma)."""
    judge(mount_state, "storage.mount", mount_expected)
