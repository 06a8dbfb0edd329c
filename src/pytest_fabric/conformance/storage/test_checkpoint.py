"""Storage: saving a checkpoint (a large write, then fsync) is fast enough on every node and mount."""

import pytest

pytestmark = pytest.mark.storage


def test_checkpoint_write(mount, checkpoint_write, judge):
    judge(checkpoint_write, "storage.checkpoint_write")
