"""A tenant reads a run: the HTML page carries the record's seal; --compare says when the other
record is EDITED or has no seal (issue 33). Local runs of the software layer: a few seconds each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_fabric.report import verify

_RUN = ("--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider", "-m", "software")


def _record(pytester: pytest.Pytester, name: str, *extra: str) -> tuple[Path, pytest.RunResult]:
    record, page = pytester.path / name, pytester.path / f"{name}.html"
    result = pytester.runpytest_subprocess(*_RUN, f"--conformance-json={record}", f"--html={page}",
                                           "--self-contained-html", *extra, timeout=120)
    return record, result


def test_the_html_page_carries_the_records_seal(pytester: pytest.Pytester) -> None:
    record, _ = _record(pytester, "record.json")
    page = (pytester.path / "record.json.html").read_text()
    seal = json.loads(record.read_text())["sha256"]
    assert f"Record record.json: sealed, sha256 <code>{seal}</code>" in page
    assert "python -m pytest_fabric.report.verify record.json" in page
    assert verify.check_file(record).ok  # the seal on the page is the file's, not an earlier write's


def test_a_page_without_a_record_says_nothing_seals_it(pytester: pytest.Pytester) -> None:
    page = pytester.path / "bare.html"
    pytester.runpytest_subprocess(*_RUN, f"--html={page}", "--self-contained-html", timeout=120)
    assert "not sealed: no conformance record was written (--conformance-json PATH)" in page.read_text()


@pytest.mark.parametrize("how", ["edited", "unsealed"])
def test_compare_warns_when_the_other_record_is_edited_or_unsealed(pytester: pytest.Pytester, how: str) -> None:
    before, _ = _record(pytester, "before.json")
    data = json.loads(before.read_text())
    if how == "edited":
        data["checks"][0]["outcome"] = "passed" if data["checks"][0]["outcome"] != "passed" else "failed"
        expected = "*WARNING: before.json is EDITED: its content does not match its seal*"
    else:
        del data["sha256"]
        expected = "*WARNING: before.json is not sealed*"
    before.write_text(json.dumps(data))
    now, result = _record(pytester, "now.json", f"--compare={before}")
    result.stdout.fnmatch_lines([expected])
    warnings = json.loads(now.read_text())["run"]["comparison_warnings"]
    assert any(w.startswith(f"before.json is {'EDITED' if how == 'edited' else 'not sealed'}") for w in warnings), warnings
    page = (pytester.path / "now.json.html").read_text()
    assert ("is EDITED" if how == "edited" else "is not sealed") in page


def test_compare_with_an_intact_record_says_no_seal_warning(pytester: pytest.Pytester) -> None:
    before, _ = _record(pytester, "before.json")
    now, result = _record(pytester, "now.json", f"--compare={before}")
    assert "EDITED" not in result.stdout.str() and "not sealed" not in result.stdout.str()
    assert json.loads(now.read_text())["run"]["comparison_warnings"] == []
