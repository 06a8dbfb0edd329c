"""Collection runs with the cyclic garbage collector off, and what it built is frozen, then freed at the end."""

from __future__ import annotations

import gc

import pytest


def _suite(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", inv="name: two\nnodes:\n  - name: n[1-2]\n")
    pytester.makefile(".yaml", prof="name: tiny\ninter_node:\n  mtu: {min: 1500}\n")
    pytester.makeconftest(
        """
        import gc, json
        seen = {}

        def pytest_collection_modifyitems(items):
            seen["during"] = gc.isenabled()

        def pytest_sessionfinish(session):
            seen["frozen_after"] = gc.get_freeze_count()
            seen["enabled_after"] = gc.isenabled()
            with open("gc.json", "w") as f:
                json.dump(seen, f)
        """
    )


def test_collection_pauses_the_collector_and_freezes_the_items(pytester: pytest.Pytester) -> None:
    """Fails without pytest_fabric.session.gcpause: the collector runs during collection, nothing is frozen."""
    _suite(pytester)
    before = gc.get_freeze_count()
    result = pytester.runpytest("--cluster", "inv.yaml", "--profile", "prof.yaml", "--collect-only", "-q")
    assert result.ret == 0
    import json

    seen = json.loads((pytester.path / "gc.json").read_text())
    assert seen["during"] is False
    assert seen["enabled_after"] is True
    assert seen["frozen_after"] > before
    # run inside this session: its objects are unfrozen again, so they can be freed
    # nothing of the inner run stays frozen (gc.unfreeze is all or nothing: what was frozen before may thaw too)
    assert gc.get_freeze_count() <= before
    assert gc.isenabled()


def test_without_a_cluster_the_collector_is_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    pytester.makeconftest(
        "import gc\n\ndef pytest_collection_modifyitems(items):\n    assert gc.isenabled()\n"
    )
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=1)
    assert gc.get_freeze_count() == 0


def test_the_outermost_session_leaves_its_items_frozen(pytester: pytest.Pytester) -> None:
    """In its own process the run ends frozen: pytest's full collections at exit skip the items."""
    _suite(pytester)
    pytester.makeconftest(
        (pytester.path / "conftest.py").read_text()
        + "\n\ndef pytest_unconfigure(config):\n    open('after.txt', 'w').write(str(gc.get_freeze_count()))\n"
    )
    result = pytester.runpytest_subprocess("--cluster", "inv.yaml", "--profile", "prof.yaml", "--collect-only", "-q")
    assert result.ret == 0
    assert int((pytester.path / "after.txt").read_text()) > 0
