"""Storage: saving a checkpoint (a large write, then fsync) is fast enough on every node and mount."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.fixtures import Judge, MountHandle

pytestmark = pytest.mark.storage


def test_checkpoint_write(mount: MountHandle, checkpoint_write: Measurement, judge: Judge) -> None:
    judge(checkpoint_write)
