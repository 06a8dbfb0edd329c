"""``--lf`` with ``--cluster``: every test is collected, and what did not fail last time is deselected.

pytest's ``--lf`` skips whole files with no recorded failure at collection, and drops the tests
that passed from the files it keeps, before any plugin sees them. For a conformance run that hides
what the run left out: the checks in the skipped files read as "not collected (test paths left it
out)", the ones dropped from a kept file as nothing at all, and the verdict line had no "not run"
count. Without pytest's collection filter (its ``lfplugin-collwrapper`` plugin; pytest has no
option for this) every test is collected and ``--lf``'s own selection deselects the ones that
passed through ``pytest_deselected``, so the verdict counts each of them as deselected, per
subject, as ``-k`` does. Collecting the whole suite costs what a run without ``--lf`` costs.
"""

from __future__ import annotations

import pytest

__all__: list[str] = []

#: the name pytest's cacheprovider registers its --lf collection filter under (pytest 8 and 9)
_COLLECTION_FILTER = "lfplugin-collwrapper"


@pytest.hookimpl(trylast=True)  # after the cacheprovider registered its --lf plugins
def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("fabric_cluster", None) or not config.getoption("lf", False):
        return
    plugin = config.pluginmanager.get_plugin(_COLLECTION_FILTER)
    if plugin is not None:
        config.pluginmanager.unregister(plugin, _COLLECTION_FILTER)
