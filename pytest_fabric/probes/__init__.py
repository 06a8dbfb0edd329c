"""Probes: measurements that run tools on nodes through a transport and hand the text to a parser.

One module per kind of measurement.  A probe returns a
:class:`~pytest_fabric.judge.verdict.Measurement` carrying the commands it ran as
evidence; when it cannot measure it raises :class:`MeasurementError` naming the
node, the command and what to do.
"""

from __future__ import annotations

from pytest_fabric.probes.base import MeasurementError, parse_or_raise

__all__ = ["MeasurementError", "parse_or_raise"]
