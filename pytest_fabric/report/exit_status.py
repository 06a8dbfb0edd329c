"""``--require-accept``: the exit status as a CI gate, 0 only when the run's verdict is ACCEPT.

pytest's own exit status says whether tests failed: a run that measured a subset (INCOMPLETE) or
nothing at all (NO VERDICT, everything skipped or nothing collected) exits 0 (or 5), which a CI
gate reads as "the cluster passed". With ``--require-accept`` such a run exits 1 (pytest's "tests
failed") and the terminal says why. Statuses that already fail (1 failed, 2 interrupted, 3
internal error) are left as they are, and so is a run whose verdict is ACCEPT; without the option
pytest's conventions stay.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_fabric.record.runinfo import get_run_info
from pytest_fabric.report.collect import final_verdict, is_controller

__all__: list[str] = []

#: the verdict's word when the option turned a passing status into 1
_GATED_KEY = pytest.StashKey[str]()
#: statuses that say "nothing failed": the only ones the gate changes
_PASSING = (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("fabric").addoption(
        "--require-accept",
        dest="fabric_require_accept",
        action="store_true",
        default=False,
        help="exit 0 only when the verdict is ACCEPT: INCOMPLETE (a subset ran), NO VERDICT and REJECT "
        "exit 1 (a CI gate); without it pytest's exit statuses",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("fabric_require_accept") and not config.getoption("fabric_cluster", None):
        raise pytest.UsageError("--require-accept needs --cluster INVENTORY: without a cluster there is no verdict")


@pytest.hookimpl(trylast=True)  # after the records and the verdict's last inputs are in
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not config.getoption("fabric_require_accept") or get_run_info(config) is None:
        return
    if not is_controller(config) or config.getoption("collectonly"):
        return
    verdict = final_verdict(config)
    if verdict.verdict != "accept" and session.exitstatus in _PASSING:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        config.stash[_GATED_KEY] = verdict.word


@pytest.hookimpl(trylast=True)  # after the verdict line
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    word = config.stash.get(_GATED_KEY, None)
    if word is not None:
        terminalreporter.write_line(f"fabric: --require-accept: exit status 1, the verdict is {word}, not ACCEPT")
