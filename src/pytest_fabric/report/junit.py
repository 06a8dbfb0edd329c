"""``--junitxml``: the run's verdict and what it was judged against, as testsuite properties.

The core already puts each check's layer, subject, measured, expected and
margin on its testcase (``user_properties``); CI systems that only read JUnit
also need the run-level answer, so it goes on the ``<testsuite>``:
``fabric_verdict``, ``fabric_cluster``, ``fabric_profile``,
``fabric_profile_sha256``, ``fabric_nodes`` and the counts per outcome.
"""

from __future__ import annotations

import pytest
from _pytest.junitxml import xml_key  # the LogXML object: pytest has no public accessor for it

from ..runinfo import get_run_info
from .collect import get_checks, is_controller
from .summary import outcome_counts, run_verdict

__all__: list[str] = []


@pytest.hookimpl(tryfirst=True)  # before junitxml writes the file in its own sessionfinish
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    info = get_run_info(config)
    xml = config.stash.get(xml_key, None)
    if info is None or xml is None or not is_controller(config):
        return
    checks = get_checks(config)
    props = {
        "fabric_verdict": run_verdict(checks),
        "fabric_cluster": info.cluster_name,
        "fabric_profile": info.profile_name,
        "fabric_profile_sha256": info.profile_sha256,
        "fabric_nodes": str(len(info.nodes)),
    }
    props.update({f"fabric_{k}": str(v) for k, v in outcome_counts(checks).items()})
    for name, value in props.items():
        xml.add_global_property(name, value)
