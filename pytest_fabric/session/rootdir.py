"""Test ids and the cache that do not depend on where the inventory file lives.

pytest picks its rootdir before any plugin is loaded, from the arguments that look like paths,
and ``--cluster`` is not yet a known option then: ``--cluster /some/dir/inv.yaml`` reads as a
test path, so the rootdir (and with it every test id and the ``.pytest_cache``) follows the
inventory (``../venv/lib/python3.11/site-packages/pytest_fabric/conformance/...``).

When the run is the bundled suite (``--cluster`` and no test paths of the user's), this plugin
sets the rootdir to the installed package, so ids read the same on every machine and from every
directory (``conformance/inter_node/test_tcp.py::test_tcp_throughput[gpu01<->gpu02]``), and puts
the cache where a bare ``pytest`` in the invocation directory would (its ini file's folder, or the
directory itself), so ``--lf`` finds last run's failures wherever the inventory is.  A user's
``--rootdir`` or ``-c`` wins.  pytest has no public way to do either: the two assignments below
are to attributes of pytest's Config (``_rootpath``, ``_inicache``), present in pytest 8 and 9,
and tests/integration/test_rootdir.py fails if a pytest release moves them.

The terminal names tests by the same ids: pytest writes them relative to the working directory
(``../venv/lib/python3.11/site-packages/pytest_fabric/conformance/...`` in the progress, ``-v``
and short-summary lines), so where this plugin moved the rootdir the terminal reporter's start
path becomes the rootdir and ``Config.cwd_relative_nodeid`` (public, but with no way to change it)
returns the id as it is; tests/unit/test_rootdir.py fails if a pytest release reads them otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.config.findpaths import locate_config  # no public equivalent

from pytest_fabric.config.bundled import conformance_dir

#: set where this plugin moved the rootdir to the installed package
MOVED_KEY = pytest.StashKey[bool]()


def bundled_suite_runs(config: pytest.Config) -> bool:
    """``--cluster`` given and no test paths of the user's: the plugin will run its own suite."""
    ns = config.known_args_namespace
    return bool(getattr(ns, "fabric_cluster", None)) and not getattr(ns, "file_or_dir", None)


def invocation_root(config: pytest.Config) -> Path:
    """The rootdir a bare ``pytest`` would take in the invocation directory."""
    here = config.invocation_params.dir
    found = locate_config(here, [here])[0]
    return Path(found) if found is not None else here


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    ns = early_config.known_args_namespace
    if not bundled_suite_runs(early_config) or ns.rootdir or ns.inifilename:
        return
    try:
        cache_dir: Path | None = Path(early_config.getini("cache_dir"))  # read before the rootdir moves
    except ValueError:  # -p no:cacheprovider: no cache to place
        cache_dir = None
    early_config._rootpath = conformance_dir().parent
    early_config.stash[MOVED_KEY] = True
    if cache_dir is not None:
        cache_dir = cache_dir if cache_dir.is_absolute() else invocation_root(early_config) / cache_dir
        early_config._inicache["cache_dir"] = str(cache_dir)


@pytest.hookimpl(trylast=True)  # after the terminal reporter is registered
def pytest_configure(config: pytest.Config) -> None:
    if not config.stash.get(MOVED_KEY, False):
        return
    # The ids are already relative to the rootdir: say them as they are, as the record does.
    setattr(config, "cwd_relative_nodeid", lambda nodeid: nodeid)  # noqa: B010 (mypy: no method assignment)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.startpath = config.rootpath
