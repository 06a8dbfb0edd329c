"""``ofed_info -s``: which OFED distribution the node runs, and its version.

MLNX_OFED prints ``MLNX_OFED_LINUX-23.10-1.1.9.0:``; DOCA-OFED (its successor) prints
``OFED-internal-24.10-1.1.4:``. Both end in a colon; the version is what follows the
distribution name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_fabric.parsers._textscan import split_lines
from pytest_fabric.parsers.base import UnrecognizedOutput, register

__all__ = ["OfedInfo", "parse_ofed_info"]

TOOL = "ofed_info"

_LINE = re.compile(r"^(?P<name>[A-Za-z][A-Za-z_-]*?)-(?P<version>[0-9]+(?:\.[0-9]+)+(?:-[0-9A-Za-z.]+)*):?\s*$")


@dataclass(frozen=True)
class OfedInfo:
    """``distribution`` as printed (``MLNX_OFED_LINUX``, ``OFED-internal``) and ``version`` (``23.10-1.1.9.0``)."""

    distribution: str
    version: str

    @property
    def label(self) -> str:
        """What people call it: MLNX_OFED for MLNX_OFED_LINUX, DOCA-OFED for OFED-internal."""
        return {"MLNX_OFED_LINUX": "MLNX_OFED", "OFED-internal": "DOCA-OFED"}.get(self.distribution, self.distribution)


@register(TOOL, "ofed_info -s: MLNX_OFED / DOCA-OFED distribution and version")
def parse_ofed_info(text: str) -> OfedInfo:
    """Parse the one line of ``ofed_info -s``."""
    for line in split_lines(TOOL, text):
        match = _LINE.match(line.strip())
        if match:
            return OfedInfo(match.group("name"), match.group("version"))
    raise UnrecognizedOutput(TOOL, "no 'NAME-VERSION:' line such as 'MLNX_OFED_LINUX-23.10-1.1.9.0:'")
