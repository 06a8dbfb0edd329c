"""Where the wheel's packages come from: the plugin, and the suite and profiles beside it.

The repository keeps the conformance suite (``conformance/``) and the bundled profiles
(``profiles/``) at its top level, where a reader finds them first; the wheel installs them
inside the plugin as ``pytest_fabric.conformance`` and ``pytest_fabric.profiles``. Packages
are discovered, never listed by hand (tests/integration/test_wheel.py checks the built wheel
against the source tree). Everything else about the project is in pyproject.toml.
"""

from setuptools import find_packages, setup

MAPPED = {"pytest_fabric.conformance": "conformance", "pytest_fabric.profiles": "profiles"}

packages = find_packages(include=["pytest_fabric", "pytest_fabric.*"])
for package, folder in MAPPED.items():
    packages += [package, *(f"{package}.{sub}" for sub in find_packages(folder))]

setup(packages=packages, package_dir=MAPPED)
