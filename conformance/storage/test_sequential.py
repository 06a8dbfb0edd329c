"""Storage: every node reads and writes each mount sequentially at the profile's rate."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.fixtures import Judge, MountHandle

pytestmark = pytest.mark.storage


def test_sequential_read(mount: MountHandle, sequential_read: Measurement, judge: Judge) -> None:
    judge(sequential_read)


def test_sequential_write(mount: MountHandle, sequential_write: Measurement, judge: Judge) -> None:
    judge(sequential_write)
