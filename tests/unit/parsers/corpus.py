"""Reading the recorded tool outputs (shared/corpus) from parser tests.

``FABRIC_CORPUS`` points elsewhere; the default is ``shared/corpus`` beside the
repository.  A test that needs a file skips, naming the path, when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

#: corpus folders of tools no check runs, read by no parser: their parsers (ping, sockperf, qperf,
#: iperf2, ibstatus, ibv_devices, CUDA's bandwidthTest and p2pBandwidthLatencyTest; 962 lines)
#: were removed because no probe used them (issue 28).  The captures stay, for whoever adds a
#: check that runs one of these tools, with its parser.
UNREAD = frozenset({
    "cuda-bandwidthTest", "cuda-p2pBandwidthLatencyTest", "ibstatus", "ibv_devices", "iperf2", "ping", "qperf",
    "sockperf",
})


def corpus_root() -> Path:
    """The corpus folder, present or not."""
    return Path(os.environ.get("FABRIC_CORPUS") or REPO.parent / "shared" / "corpus")


def corpus_text(folder: str, name: str) -> str:
    """The text of ``<corpus>/<folder>/<name>``; skips the calling test when it is not there."""
    path = corpus_root() / folder / name
    if not path.is_file():
        pytest.skip(f"corpus file {path} not present")
    return path.read_text()
