"""Storage: the shared mount keeps its rate when every node writes to it at once."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.storage


def test_aggregate_write(shared_mount_write: Measurement, judge: Judge) -> None:
    judge(shared_mount_write)
