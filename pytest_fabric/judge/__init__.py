"""Judging what was measured: verdicts, consistency across subjects, attribution. Pure functions."""
