"""Storage: every node reads each mount at random at the profile's IOPS."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.fixtures import Judge, MountHandle

pytestmark = pytest.mark.storage


def test_random_read_iops(mount: MountHandle, random_read_iops: Measurement, judge: Judge) -> None:
    judge(random_read_iops)
