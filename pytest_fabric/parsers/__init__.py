"""Pure parsers for the tools pytest-fabric reads: text in, typed result out.

One module per tool (``perftest``, ``ibstat``, ``nccl_tests``, ...).  Nothing here
does I/O or knows pytest.  ``python -m pytest_fabric.parsers TOOL FILE`` prints a
parsed capture as JSON.
"""

from __future__ import annotations

from pytest_fabric.parsers.base import (
    ParseError,
    Parser,
    ToolReportedError,
    UnrecognizedOutput,
    get_parser,
    register,
    registry,
)

__all__ = ["ParseError", "Parser", "ToolReportedError", "UnrecognizedOutput", "get_parser", "register", "registry"]
