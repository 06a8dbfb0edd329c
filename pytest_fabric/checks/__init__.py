"""The checks: their declarations and registry (``base``), and one module per check family.

A family module holds its settings model, its declaration, its probe and its measurement fixture,
and registers through the ``pytest_fabric_checks`` hook, as an extension's check does.
"""
