"""``--junitxml``: the run's verdict and what it was judged against, as testsuite properties.

The core already puts each check's layer, subject, measured, expected and
margin on its testcase (``user_properties``); CI systems that only read JUnit
also need the run-level answer, so it goes on the ``<testsuite>``:
``fabric_verdict`` (``accept``, ``reject``, ``incomplete``, ``interrupted``, or
``none`` when nothing was measured: the same verdict the terminal, HTML and JSON
show), ``fabric_status``, ``fabric_send_back`` (a nodeset), ``fabric_cluster``,
``fabric_profile``, ``fabric_profile_sha256``, ``fabric_nodes``, the counts per
outcome and, per reason, how many subjects of the profile's checks did not run
(``fabric_not_run_deselected``, ...), and what the run trusted (:mod:`.trust`):
``fabric_host_key_policy``, ``fabric_host_keys_<decision>`` (the nodes, as a nodeset) and one
``fabric_host_key`` for each key accepted new, changed or refused (node, decision, host, key type,
fingerprint, known_hosts file, and the fingerprint on file when it changed).

Each check's own properties go on its testcase only where the JUnit family allows them
(:func:`per_test_properties`): pytest's default family, xunit2, has no ``<properties>`` in a
``<testcase>`` (pytest warns about ``record_property`` there for the same reason), so by default
the file validates against its schema and a check's figures are in its failure message, the
HTML report and the JSON record; ``-o junit_family=xunit1`` puts them back on each testcase.
"""

from __future__ import annotations

import pytest
from _pytest.junitxml import xml_key  # the LogXML object: pytest has no public accessor for it

from pytest_fabric.record.runinfo import get_run_info
from pytest_fabric.report.collect import final_verdict, get_checks, is_controller
from pytest_fabric.report.summary import nodeset, send_back

__all__ = ["per_test_properties"]

#: the families whose schema has ``<properties>`` inside ``<testcase>`` (legacy is xunit1)
PER_TEST_FAMILIES = ("xunit1", "legacy")


def per_test_properties(config: pytest.Config) -> bool:
    """Whether a check's properties may go on its ``<testcase>`` (the ``junit_family`` ini)."""
    try:
        return config.getini("junit_family") in PER_TEST_FAMILIES
    except ValueError:  # -p no:junitxml: no such ini, and no file to write them to
        return False


@pytest.hookimpl(tryfirst=True)  # before junitxml writes the file in its own sessionfinish
def pytest_sessionfinish(session: pytest.Session) -> None:
    # .trust is a plugin of its own, registered after this one: imported when called
    from pytest_fabric.report.trust import host_key_decisions, junit_properties

    config = session.config
    info = get_run_info(config)
    xml = config.stash.get(xml_key, None)
    if info is None or xml is None or not is_controller(config):
        return
    checks = get_checks(config)
    verdict = final_verdict(config)
    props = {
        "fabric_verdict": verdict.verdict or "none",
        "fabric_status": verdict.status,
        "fabric_send_back": nodeset(send_back(checks)),
        "fabric_cluster": info.cluster_name,
        "fabric_profile": info.profile_name,
        "fabric_profile_sha256": info.profile_sha256,
        "fabric_nodes": str(len(info.nodes)),
    }
    props.update({f"fabric_{k}": str(v) for k, v in verdict.counts.items()})
    props.update({f"fabric_not_run_{r.replace(' ', '_')}": str(verdict.not_run_count(r)) for r in verdict.not_run})
    for name, value in [*props.items(), *junit_properties(info.host_key_policy, host_key_decisions(config))]:
        xml.add_global_property(name, value)  # fabric_host_key repeats: one per key
