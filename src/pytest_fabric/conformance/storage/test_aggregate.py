"""Storage: the shared mount keeps its rate when every node writes to it at once."""

import pytest

pytestmark = pytest.mark.storage


def test_aggregate_write(shared_mount_write, judge):
    judge(shared_mount_write, "storage.aggregate_write")
