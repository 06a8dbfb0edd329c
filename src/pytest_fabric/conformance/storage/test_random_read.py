"""Storage: every node reads each mount at random at the profile's IOPS."""

import pytest

pytestmark = pytest.mark.storage


def test_random_read_iops(mount, random_read_iops, judge):
    judge(random_read_iops, "storage.random_read_iops")
