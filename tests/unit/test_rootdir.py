"""Test ids and the cache do not follow the inventory's folder (pytest takes ``--cluster PATH`` for a test path)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_fabric.config.bundled import inventories_dir


def _inventory_elsewhere(pytester: pytest.Pytester) -> Path:
    elsewhere = pytester.path.parent / f"{pytester.path.name}-inventories" / "site"
    elsewhere.mkdir(parents=True)
    target = elsewhere / "inv.yaml"
    target.write_text((inventories_dir() / "local.yaml").read_text())
    return target


def test_ids_and_cache_do_not_depend_on_where_the_inventory_is(pytester: pytest.Pytester) -> None:
    inventory = _inventory_elsewhere(pytester)
    result = pytester.runpytest_subprocess("--cluster", str(inventory), "--profile", "localhost", "-k", "mtu",
                                           "--conformance-json", "record.json")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()[-3000:]
    ids = [c["nodeid"] for c in json.loads((pytester.path / "record.json").read_text())["checks"]]
    assert ids and all(i.startswith("conformance/") for i in ids), ids
    # The cache is the invocation directory's, as for a bare pytest there; none beside the inventory.
    assert (pytester.path / ".pytest_cache").is_dir()
    assert not any(p.name == ".pytest_cache" for p in inventory.parent.parent.rglob("*"))
    # --lf reads it back: the same ids, found again from the same directory.
    again = pytester.runpytest_subprocess("--cluster", str(inventory), "--profile", "localhost", "--lf",
                                          "--collect-only", "-q")
    assert again.ret in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), again.stdout.str()[-3000:]
    assert "rootdir" not in again.stdout.str() or str(inventory.parent) not in again.stdout.str()


def test_collect_only_ids_read_the_same_from_any_directory(pytester: pytest.Pytester) -> None:
    inventory = _inventory_elsewhere(pytester)
    result = pytester.runpytest_subprocess("--cluster", str(inventory), "--profile", "localhost",
                                           "--collect-only", "-q")
    listed = [line for line in result.stdout.lines if "::" in line]
    assert listed and all(line.startswith("conformance/") for line in listed), listed[:5]


def test_the_users_rootdir_wins(pytester: pytest.Pytester) -> None:
    inventory = _inventory_elsewhere(pytester)
    mine = pytester.mkdir("mine")
    result = pytester.runpytest_subprocess("--cluster", str(inventory), "--profile", "localhost",
                                           "--rootdir", str(mine), "--collect-only")
    assert f"rootdir: {mine}" in result.stdout.str(), result.stdout.str()[:2000]


@pytest.mark.parametrize("verbosity", [(), ("-v",)], ids=["progress", "verbose"])
def test_terminal_ids_read_as_the_record_does(pytester: pytest.Pytester, verbosity: tuple[str, ...]) -> None:
    # Before: the progress, -v and short-summary lines named the suite by its path from the working
    # directory (../../venv/lib/python3.11/site-packages/pytest_fabric/conformance/...), not its id.
    result = pytester.runpytest("--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider", "-k", "mtu",
                                "--expect", "inter_node.mtu.min=100000", "-rf", *verbosity)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    mtu = "conformance/inter_node/test_mtu.py"
    progress = f"{mtu}::test_mtu[[]local[]] FAILED*" if verbosity else f"{mtu} F*"  # [[]: a literal [
    result.stdout.fnmatch_lines([progress, f"FAILED {mtu}::test_mtu[[]local[]]*"])
    assert not [line for line in result.outlines if "test_mtu.py" in line and "../" in line], result.stdout.str()
