"""The host-key policy and the keys a run accepted new or changed, in the HTML report and the JUnit XML.

The terminal and the record (``run.host_key_policy``, ``run.host_keys``) always said them; the
two reports a tenant signs off from must too.  Driven through pytest with the stand-in for the
core (``report/testing.py``), whose run carries the host-key decisions given to it.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from pytest_fabric.report.testing import sample_cluster, write_fake_project
from pytest_fabric.report.trust import host_keys_html, junit_properties

REPORT_PLUGINS = ["evidence", "compare", "collect", "record_json", "terminal", "html", "junit"]
PLUGIN_ARGS = [arg for m in REPORT_PLUGINS for arg in ("-p", f"pytest_fabric.report.{m}")]
EVIL = '<script>alert("x")</script>'
KNOWN = "/root/.ssh/known_hosts"


def _key(node: str, decision: str, policy: str, fp: str, name: str | None = None, expected: str | None = None) -> dict[str, Any]:
    return {"node": node, "name": name or f"[10.0.0.{node[-1]}]:22", "decision": decision, "policy": policy,
            "key_type": "ssh-ed25519", "fingerprint": fp, "known_hosts": KNOWN, "expected": expected}


def test_html_and_junit_show_the_policy_and_each_accepted_new_key(pytester: pytest.Pytester) -> None:
    info, checks = sample_cluster(3, slow=None, down=None)
    info.host_key_policy = "accept-new"
    keys = [
        _key("node01", "verified", "accept-new", "SHA256:old1"),
        _key("node02", "accepted new", "accept-new", "SHA256:new2"),
        _key("node03", "accepted new", "accept-new", "SHA256:new3", name=EVIL),  # a hostname is escaped
    ]
    write_fake_project(pytester.path, info, checks, host_keys=keys)
    result = pytester.runpytest(*PLUGIN_ARGS, "--html=report.html", "--self-contained-html",
                                "--conformance-json=record.json", "--junitxml=junit.xml")
    result.stdout.fnmatch_lines(["host keys (accept-new): accepted new, appended to /root/.ssh/known_hosts: node[[]02-03]"])

    page = (pytester.path / "report.html").read_text()
    table = page[page.index('<table class="fabric-table" id="fabric-host-keys">'):]
    table = table[:table.index("</table>")]
    assert "<th>Host-key policy</th><td><b>accept-new</b>: unknown keys are added to known_hosts, changed ones refused" in table
    assert f"<th>accepted new, appended to {KNOWN}</th>" in table
    assert "node02</code> [10.0.0.2]:22 ssh-ed25519 <code>SHA256:new2</code>" in table
    assert "node03</code> &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; ssh-ed25519 <code>SHA256:new3</code>" in table
    assert f"<th>verified against {KNOWN}</th><td><code>node01</code> (1 node)</td>" in table
    assert "<script>alert" not in page
    # Above the tables, with the run's facts: the page says it before any figure.
    assert page.index('id="fabric-run"') < page.index('id="fabric-host-keys"') < page.index('id="fabric-nodes"')

    suite = ET.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    props = [(p.get("name"), p.get("value")) for p in suite.iter("property")]
    assert ("fabric_host_key_policy", "accept-new") in props
    assert ("fabric_host_keys_verified", "node01") in props and ("fabric_host_keys_accepted_new", "node[02-03]") in props
    assert ("fabric_host_key", f"node02: accepted new: [10.0.0.2]:22 ssh-ed25519 SHA256:new2 (appended to {KNOWN})") in props
    assert ("fabric_host_key", f"node03: accepted new: {EVIL} ssh-ed25519 SHA256:new3 (appended to {KNOWN})") in props
    assert not any(name == "fabric_host_key" and str(value).startswith("node01") for name, value in props)  # verified: no line

    record = json.loads((pytester.path / "record.json").read_text())  # the signed record says the same
    assert record["run"]["host_key_policy"] == "accept-new" and record["run"]["host_keys"] == keys


def test_a_changed_key_names_both_fingerprints_in_html_and_junit() -> None:
    keys = [_key("node02", "accepted changed", "ignore", "SHA256:now", expected="SHA256:before"),
            _key("node03", "accepted unknown", "ignore", "SHA256:x3")]
    page = host_keys_html("ignore", keys)
    assert "<b>ignore</b>: ANY key is accepted and nothing is saved: the nodes are not authenticated" in page
    assert (f'<tr class="fabric-o-failed"><th>ACCEPTED CHANGED (differs from {KNOWN})</th><td><code>node02</code> (1 node)'
            in page)
    assert "node02</code> [10.0.0.2]:22 ssh-ed25519 <code>SHA256:now</code>, the file has <code>SHA256:before</code>" in page
    assert f"<th>accepted unknown, not saved (not in {KNOWN})</th>" in page
    assert junit_properties("ignore", keys) == [
        ("fabric_host_key_policy", "ignore"),
        ("fabric_host_keys_accepted_changed", "node02"),
        ("fabric_host_keys_accepted_unknown", "node03"),
        ("fabric_host_key", f"node02: ACCEPTED CHANGED: [10.0.0.2]:22 ssh-ed25519 SHA256:now (differs from {KNOWN}: "
                            "the file has SHA256:before)"),
        ("fabric_host_key", f"node03: accepted unknown: [10.0.0.2]:22 ssh-ed25519 SHA256:x3 (not saved, not in {KNOWN})"
         .replace("10.0.0.2", "10.0.0.3")),
    ]


def test_no_connections_still_say_the_policy() -> None:
    assert junit_properties("strict", []) == [("fabric_host_key_policy", "strict")]
    page = host_keys_html("strict", [])
    assert "<b>strict</b>: a node&#x27;s key must be in known_hosts" in page and "no connection to a node" in page
