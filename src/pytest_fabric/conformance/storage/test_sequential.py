"""Storage: every node reads and writes each mount sequentially at the profile's rate."""

import pytest

pytestmark = pytest.mark.storage


def test_sequential_read(mount, sequential_read, judge):
    judge(sequential_read, "storage.sequential_read")


def test_sequential_write(mount, sequential_write, judge):
    judge(sequential_write, "storage.sequential_write")
