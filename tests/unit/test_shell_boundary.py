"""Profile and inventory values reach a node's shell only as quoted words (issue 27).

Each command is built with a hostile value and run under ``sh -c`` here, in a temporary
directory: the value must arrive as one inert argument, so nothing it names is created.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from pytest_fabric.probes.preflight import preflight_script
from pytest_fabric.transport import shellcmd

#: what a shared profile or inventory could hold: each would create a file if a shell read it as code
HOSTILE = [
    "jq$(touch X1)",
    'x"; touch X2; echo "',
    "y`touch X3`",
    "z'; touch X4; echo '",
    "w\ntouch X5",
    "v;touch X6",
    "u|touch X7",
    "t&&touch X8",
    "s>X9",
]


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", command], cwd=cwd, capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(cwd)})


def _created(cwd: Path) -> list[str]:
    return sorted(p.name for p in cwd.iterdir())


@pytest.mark.parametrize("value", HOSTILE)
def test_quote_is_one_inert_word(tmp_path: Path, value: str) -> None:
    result = _run(shellcmd.fill("printf '%s\\n' {value}", value=value), tmp_path)
    assert result.stdout == value + "\n" and _created(tmp_path) == []


def test_fill_quotes_every_value_and_keeps_the_template() -> None:
    assert shellcmd.fill("ip -o link show dev {name}", name="eth0") == "ip -o link show dev eth0"
    assert shellcmd.fill("cat {path}/x", path="/a b") == "cat '/a b'/x"
    assert shellcmd.fill("seq {n}", n=3) == "seq 3"
    assert shellcmd.join(["srun", "-w", "a;b", 4]) == "srun -w 'a;b' 4"
    with pytest.raises(KeyError):
        shellcmd.fill("echo {missing}")


def test_a_value_with_a_nul_is_refused() -> None:
    # A NUL cannot travel in an argument at all: the shell would cut the word there.
    with pytest.raises(ValueError, match="NUL"):
        shellcmd.quote("a\0b")


def test_preflight_script_with_hostile_tool_names_creates_nothing(tmp_path: Path) -> None:
    """The former injection: tool names were quoted for `command -v` but not in the echo lines."""
    tools = ["jq$(touch X)", 'x"; touch Y; echo "', "y`touch Z`", "sh"]
    result = _run(preflight_script(tools), tmp_path)
    assert _created(tmp_path) == []
    # each name comes back as written, found or missing, so the record still says what was asked
    assert "@@missing jq$(touch X)" in result.stdout and "@@missing y`touch Z`" in result.stdout
    assert "@@tool sh /" in result.stdout


def test_no_probe_quotes_on_its_own() -> None:
    """One boundary: probes and measurements build command lines with shellcmd, never shlex directly."""
    root = Path(shellcmd.__file__).parent
    offenders = []
    for folder in ("probes", "measurements"):
        for path in sorted((root / folder).glob("*.py")):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                    if "shlex" in names:
                        offenders.append(f"{folder}/{path.name}:{node.lineno}")
    assert offenders == []
