"""An extension's check, added by an ordinary plugin, runs as a built-in one does.

The extension is the one docs/extending.md shows ("A check of your own"): its code blocks that start
with a ``# path`` comment are written out as files and installed with ``-p``, so the page and what
runs cannot drift apart. It runs against ``--cluster local`` (this machine, no SSH).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
BLOCK = re.compile(r"^```(?:python|yaml)\n(?P<body># (?P<path>[\w./]+)\n.*?)^```", re.MULTILINE | re.DOTALL)


def _write_extension(pytester: pytest.Pytester) -> dict[str, Path]:
    if not DOCS.is_file():
        pytest.skip("docs/extending.md is not beside this copy of the tests")
    written = {}
    for block in BLOCK.finditer(DOCS.read_text()):
        path = pytester.path / block["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block["body"])
        written[block["path"]] = path
    assert set(written) >= {"fabric_meminfo/__init__.py", "fabric_meminfo/conformance/test_host_memory.py",
                            "memory.yaml"}, "the example in docs/extending.md lost a file"
    return written


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # `python -m pytest` in pytester.path: the extension there is importable, as if installed
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cluster", "local", *args, timeout=120)


def test_an_extensions_check_is_collected_measured_judged_planned_and_recorded(pytester: pytest.Pytester) -> None:
    _write_extension(pytester)
    result = _run(pytester, "-p", "fabric_meminfo", "--profile", "memory.yaml", "-k", "host_memory", "-rA",
                  "--conformance-json", "record.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["PASSED *test_host_memory.py::test_host_memory[[]local[]]"])
    assert "cannot be rewritten; pytest_fabric.run.fixtures" not in result.stdout.str()  # the example's imports
    record = json.loads((pytester.path / "record.json").read_text())
    (check,) = [c for c in record["checks"] if c["check"] == "host_memory"]
    assert (check["layer"], check["subject"], check["outcome"]) == ("intra_node", "local", "passed")
    assert check["measured"]["value"] > 0 and check["expected"]["key"] == "intra_node.host_memory.min"
    assert check["expected"]["source"] == "job needs 64 MiB free"
    phases = {p["phase"]: p for p in record["run"]["plan"]["phases"]}
    assert phases["intra-node"]["checks"] == ["host_memory"]


def test_an_extensions_key_takes_expect_and_its_model_types_it(pytester: pytest.Pytester) -> None:
    _write_extension(pytester)
    result = _run(pytester, "-p", "fabric_meminfo", "--profile", "memory.yaml", "-k", "host_memory",
                  "--expect", "intra_node.host_memory=1000 TiB")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["local: measured * TiB *, does not meet >= 1000 TiB; MemAvailable*"])
    wrong = _run(pytester, "-p", "fabric_meminfo", "--profile", "memory.yaml", "--expect",
                 "intra_node.host_memory.min=10 Gb/s")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    assert "--expect: intra_node.host_memory.min" in wrong.stderr.str()


def test_an_unknown_key_is_still_refused_naming_the_line_and_the_known_keys(pytester: pytest.Pytester) -> None:
    _write_extension(pytester)
    pytester.makefile(".yaml", typo="name: typo\nintra_node:\n  host_memory: {min: 1 MiB}\n  ram_free: 2\n")
    result = _run(pytester, "-p", "fabric_meminfo", "--profile", "typo.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    message = result.stderr.str()
    assert "typo.yaml:4: intra_node.ram_free: unknown key; known keys: " in message
    assert re.search(r"known keys: [^\n]*gpu_count[^\n]*host_memory", message), message


def test_without_the_plugin_its_key_is_unknown(pytester: pytest.Pytester) -> None:
    _write_extension(pytester)
    result = _run(pytester, "--profile", "memory.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "memory.yaml:5: intra_node.host_memory: unknown key" in result.stderr.str()


def test_two_plugins_declaring_one_check_name_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _write_extension(pytester)
    (pytester.path / "other_meminfo.py").write_text(
        "from pytest_fabric.checks.base import Check\n"
        "from fabric_meminfo import HostMemory\n\n"
        "def pytest_fabric_checks():\n"
        "    return [Check('host_memory', 'intra_node', HostMemory, 'node', 'wave', typical_s=2.0)]\n"
    )
    result = _run(pytester, "-p", "fabric_meminfo", "-p", "other_meminfo", "--profile", "memory.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    message = result.stderr.str()
    assert "check host_memory is declared twice" in message
    assert "fabric_meminfo" in message and "other_meminfo" in message


def test_a_plugin_redeclaring_a_builtin_check_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "mtu_again.py").write_text(
        "from pytest_fabric.checks.base import Check\n"
        "from pytest_fabric.checks.links import Mtu\n\n"
        "def pytest_fabric_checks(config):\n"
        "    return [Check('mtu', 'inter_node', Mtu, 'node', 'wave')]\n"
    )
    result = pytester.runpytest_subprocess("-p", "mtu_again", "--cluster", "local", "--profile", "localhost")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "check mtu is declared twice" in result.stderr.str() and "mtu_again" in result.stderr.str()


def test_a_rootdir_conftest_can_install_the_extension(pytester: pytest.Pytester) -> None:
    _write_extension(pytester)
    pytester.makeconftest('pytest_plugins = ["fabric_meminfo"]\n')
    result = _run(pytester, "--profile", "memory.yaml", "-k", "host_memory")
    result.assert_outcomes(passed=1)
