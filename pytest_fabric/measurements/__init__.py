"""Measurement fixtures, one plugin module per layer.

Each fixture reads the check's settings from the profile (skipping the test
when the profile sets none) and runs a probe during *setup*, so a check that
cannot measure is reported by pytest as an error, and one that measured but
missed its expectation as a failure.
"""
