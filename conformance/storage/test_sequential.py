"""Storage: every node reads and writes each mount sequentially at the profile's rate."""

import pytest

from pytest_fabric.fixtures import Judge, MountHandle
from pytest_fabric.verdict import Measurement

pytestmark = pytest.mark.storage


def test_sequential_read(mount: MountHandle, sequential_read: Measurement, judge: Judge) -> None:
    judge(sequential_read)


def test_sequential_write(mount: MountHandle, sequential_write: Measurement, judge: Judge) -> None:
    judge(sequential_write)
