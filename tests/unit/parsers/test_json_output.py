"""What ``python -m pytest_fabric.parsers TOOL FILE`` prints is JSON a jq user can walk.

Every registered parser's result, on every sample it reads, converts to JSON whose
object keys are plain names (``GPU0``, ``mlx5_0``, ``99.0``), never a Python repr
such as ``"('GPU0', 'GPU1')"``: a matrix keyed by pairs becomes nested objects
(``.links.GPU0.GPU1``).  Parsers come from ``registry()``, so a new parser is
checked without editing this file.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from unit.parsers.corpus import corpus_root
from unit.parsers.test_fuzz import samples

from pytest_fabric.parsers.__main__ import to_jsonable
from pytest_fabric.parsers.base import ParseError, registry

DATA = Path(__file__).resolve().parents[2] / "data"
PARSERS = registry()
# What str() of a tuple, list, set, dict, bytes or object looks like.
REPR_KEY = re.compile(r"""^[(\[{]|^frozenset\(|^b'|^<.*>$|['"]""")


def keys(value: Any, path: str = "") -> list[tuple[str, str]]:
    """Every (path, key) of every object in a JSON value."""
    found: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((path, key))
            found += keys(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += keys(item, f"{path}[{index}]")
    return found


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_json_keys_are_names_not_python_reprs(tool: str) -> None:
    parsed = 0
    for text in samples(tool, corpus_root()):
        try:
            result = PARSERS[tool].function(text)
        except ParseError:
            continue  # error captures (a tool's own failure) have no result to print
        document = json.loads(json.dumps(to_jsonable(result)))
        bad = [f"{path or '.'}: {key!r}" for path, key in keys(document) if REPR_KEY.search(key)]
        assert not bad, f"{tool}: keys that are Python reprs: {bad[:5]}"
        parsed += 1
    if not parsed:
        pytest.skip(f"no sample of {tool} that parses (tests/data has none; corpus at {corpus_root()})")


def test_topology_matrix_is_nested_by_row_and_column() -> None:
    sample = DATA / "nvidia-smi-topo" / "h100-8gpu-nv18-gpu2-gpu5-pcie-only-8nic-constructed.txt"
    out = subprocess.run(
        [sys.executable, "-m", "pytest_fabric.parsers", "nvidia-smi-topo", str(sample)],
        capture_output=True, text=True, check=True,
    )
    document = json.loads(out.stdout)
    # jq '.links.GPU2.GPU5.kind'
    assert document["links"]["GPU2"]["GPU5"] == {"kind": "NODE", "nvlink_count": None}
    assert document["links"]["GPU0"]["GPU1"] == {"kind": "NV", "nvlink_count": 18}
    assert document["links"]["GPU0"]["NIC0"]["kind"] == "PIX"


def test_pair_keys_of_unequal_length_are_joined_with_commas() -> None:
    assert to_jsonable({("GPU0", "GPU1"): 1, ("GPU0",): 2}) == {"GPU0,GPU1": 1, "GPU0": 2}
    assert to_jsonable({(0, 1): 3.5, (1, 0): None}) == {"0": {"1": 3.5}, "1": {"0": None}}
