"""Collection without the cyclic garbage collector: a large inventory's items are collected once and live all run.

A 4,096-node inventory collects a few hundred thousand items, some tens of millions of
objects, none of them garbage. CPython's collector scans every live object at each
full collection; during collection that is most of the CPU time spent (100,000 items:
10.0 s with it, 4.2 s without). So, when pytest-fabric measures a cluster, collection
runs with the collector off, and what it built is frozen (``gc.freeze``): later
collections during the run scan only what the run allocates, and pytest's five full
collections at exit (looking for unraisable exceptions) skip them. A pytest session run
inside another in the same process (pytester) unfreezes at its end, so the outer process
frees each inner run; the outermost leaves them frozen, as the process ends with it.
"""

from __future__ import annotations

import gc
from collections.abc import Generator

import pytest

from pytest_fabric.run.state import get_state

__all__ = ["PAUSED_KEY"]

#: whether this session paused the collector for its collection (and so froze what it built)
PAUSED_KEY = pytest.StashKey[bool]()
#: how many pytest sessions of this process enclose this one (0: the outermost)
DEPTH_KEY = pytest.StashKey[int]()

# Sessions running in this process now: process-wide, as the collector is.
_running = [0]


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.stash[DEPTH_KEY] = _running[0]
    _running[0] += 1


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    if get_state(session.config) is None or not gc.isenabled():
        return (yield)
    session.config.stash[PAUSED_KEY] = True
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.enable()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if DEPTH_KEY in config.stash:
        _running[0] -= 1
    if config.stash.get(PAUSED_KEY, False) and config.stash.get(DEPTH_KEY, 0) > 0:
        gc.unfreeze()
