"""``--junitxml`` validates against the xunit2 schema pytest targets; per-test properties under xunit1.

The schema is pytest's own ``testing/example_scripts/junit-10.xsd``, read from ``../shared/schemas/``
beside the checkout (not shipped in the repository); the tests skip when it is absent.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import REPO

SCHEMA = REPO.parent / "shared" / "schemas" / "junit-10.xsd"
LOCAL = ("--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider")
# mtu passes, against an impossible floor fails; the storage checks skip (deselected by -k)
SELECT = ("-k", "mtu or dns_resolve")


def _schema() -> object:
    xmlschema = pytest.importorskip("xmlschema")
    if not SCHEMA.is_file():
        pytest.skip(f"{SCHEMA} is absent (the schemas live beside the checkout, in ../shared/schemas)")
    return xmlschema.XMLSchema(str(SCHEMA))


def _junit(pytester: pytest.Pytester, *args: str) -> Path:
    path = pytester.path / "junit.xml"
    result = pytester.runpytest(*LOCAL, *SELECT, f"--junitxml={path}", *args)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    return path


@pytest.mark.parametrize("args", [(), ("--expect", "inter_node.mtu.min=100000")], ids=["passed", "failed"])
def test_default_junit_validates_against_xunit2(pytester: pytest.Pytester, args: tuple[str, ...]) -> None:
    # Before: one <properties> per testcase, which xunit2 does not allow (49 errors on a full run).
    schema = _schema()
    path = _junit(pytester, *args)
    errors = [str(e.reason) for e in schema.iter_errors(str(path))]  # type: ignore[attr-defined]
    assert errors == [], errors
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    assert {p.get("name") for p in suite.iter("property")} >= {"fabric_verdict", "fabric_status"}
    assert all(case.find("properties") is None for case in suite.iter("testcase"))


def test_xunit1_keeps_per_test_properties(pytester: pytest.Pytester) -> None:
    path = _junit(pytester, "-o", "junit_family=xunit1")
    cases = {c.get("name"): c for c in ET.parse(path).getroot().iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["test_mtu[local]"].iter("property")}
    assert props["check"] == "mtu" and props["subject"] == "local" and props["expected"] == ">= 1500"


def test_no_report_plugin_escapes_assertion_rewriting(pytester: pytest.Pytester) -> None:
    # plugin.py importing report.junit at its top made every run warn "Module already imported so
    # cannot be rewritten" for five report plugins.
    result = pytester.runpytest_subprocess(*LOCAL, "-k", "mtu")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "PytestAssertRewriteWarning" not in result.stdout.str() + result.stderr.str()
