"""The conformance report: JSON record, terminal summary, HTML (pytest-html) and comparison.

Each feature is its own pytest plugin module, listed in ``pytest_plugins`` of
:mod:`pytest_fabric.plugin`:

- :mod:`.collect`      gathers the per-check records and what collection planned, on the controller
- :mod:`.evidence`     ``--evidence-dir``: raw command outputs as files named by sha256
- :mod:`.compare`      ``--compare``: each check's change since a previous record
- :mod:`.record_json`  ``--conformance-json``: the machine-readable record, sealed with a sha256
- :mod:`.terminal`     the verdict and the worst checks at the end of the terminal output
- :mod:`.html`         columns, summary, heatmaps and evidence in the pytest-html report

The pure parts (:mod:`.run_verdict`, :mod:`.summary`, :mod:`.heatmap`, :mod:`.verify`) know nothing
of pytest.  The run's verdict is :func:`.run_verdict.judge_run`; every output shows what it says.
"""

from __future__ import annotations

# verify is not imported here: ``python -m pytest_fabric.report.verify`` would then find it
# already loaded and warn.
from pytest_fabric.report.run_verdict import Plan, RunVerdict, judge_run
from pytest_fabric.report.summary import nodeset, outcome_counts, send_back

__all__ = ["Plan", "RunVerdict", "judge_run", "nodeset", "outcome_counts", "send_back"]
