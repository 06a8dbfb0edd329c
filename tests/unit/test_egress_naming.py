"""Egress targets named by what they are, and their errors in the tool's words, not the shell's."""

from __future__ import annotations

from pytest_fabric.probes.egress import _shown, _write_out, connect_error
from pytest_fabric.run.subjects import subject_id, target_label


def test_three_urls_on_one_host_are_three_subjects() -> None:
    targets = ["http://10.213.21.6:8080/100MB.bin", "http://10.213.21.6:8080/drop", "http://10.213.21.6/x?y=1"]
    ids = [subject_id("egress_target", ("nu1", t)) for t in targets]
    assert ids == ["nu1:10.213.21.6:8080/100MB.bin", "nu1:10.213.21.6:8080/drop", "nu1:10.213.21.6/x?y=1"]
    assert subject_id("egress_target", ("nu1", "mirror.example.com:443")) == "nu1:mirror.example.com:443"
    assert target_label("https://mirror.example.com/") == "mirror.example.com/"


def test_a_refused_connect_says_what_the_tool_saw() -> None:
    assert connect_error("bash: line 1: /dev/tcp/10.213.21.6/9999: Connection refused\n") == "connection refused"
    assert connect_error("bash: connect: No route to host\nbash: line 1: /dev/tcp/10.0.0.9/80: No route to host") \
        == "no route to host"
    assert connect_error("") == ""


def test_the_command_an_error_names_is_one_a_person_can_run() -> None:
    command = f"curl -sS -o /dev/null --max-time 30 -w '{_write_out('download')}' http://m/x"
    assert _shown(command) == "curl -sS -o /dev/null --max-time 30 http://m/x"
