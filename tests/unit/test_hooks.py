"""pytest-fabric's own hooks, implemented by an ordinary conftest, on a local single-node run."""

from __future__ import annotations

import pytest


def test_check_recorded_and_suite_paths_hooks(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", inv="name: one\nnodes:\n  - name: local\n    host: localhost\n")
    pytester.makefile(".yaml", prof="name: tiny\ninter_node:\n  mtu: {min: 1500}\n")
    extra = pytester.mkdir("mychecks")
    (extra / "test_mine.py").write_text(
        "import pytest\n\n@pytest.mark.inter_node\ndef test_my_check(node):\n    assert node.name == 'local'\n"
    )
    pytester.makeconftest(
        f"""
        import json
        seen = []

        def pytest_fabric_suite_paths(config):
            return [{str(extra)!r}]

        def pytest_fabric_check_recorded(record, config):
            seen.append(record)

        def pytest_sessionfinish(session):
            with open("seen.json", "w") as f:
                json.dump([(r["check"], r["subject"], r["outcome"]) for r in seen], f)
        """
    )
    result = pytester.runpytest_subprocess("--cluster", "inv.yaml", "--profile", "prof.yaml", "-k", "mtu or my_check")
    result.assert_outcomes(passed=2)
    import json

    seen = json.loads((pytester.path / "seen.json").read_text())
    assert ["mtu", "local", "passed"] in seen
    assert ["my_check", "local", "passed"] in seen


def test_pairs_hook_replaces_the_strategy(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", inv="name: three\nnodes:\n  - name: n[1-3]\n")
    pytester.makefile(".yaml", prof="name: tiny\ninter_node:\n  tcp_throughput: {min: 1 Gb/s}\n")
    pytester.makeconftest(
        """
        from pytest_fabric.run.pairs import Pair

        def pytest_fabric_pairs(nodes, strategy, labels, config):
            return [Pair(0, 0, nodes[0], nodes[-1])]
        """
    )
    result = pytester.runpytest_subprocess("--cluster", "inv.yaml", "--profile", "prof.yaml", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*test_tcp_throughput[[]n1<->n3[]]*"])
    assert "n1<->n2" not in result.stdout.str()
