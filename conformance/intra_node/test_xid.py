"""Intra-node, what the GPUs reported themselves: no fatal NVIDIA Xid event in the node's kernel log."""

import pytest

from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.fixtures import Judge

pytestmark = pytest.mark.intra_node


def test_xid_errors(node: NodeHandle, xid_errors: Measurement, judge: Judge) -> None:
    """No GPU has more fatal Xid events than intra_node.xid_errors.max (none) since boot or within its
    window: 48, 63, 64, 74, 79, 92, 94, 95, 119, 120 by default (NVIDIA's Xid catalogue); other codes
    are reported. A failure names the GPU by bus id and quotes the kernel line; the record says whether
    journalctl -k or dmesg was read. A node whose log cannot be read is an error with the fix."""
    judge(xid_errors)
