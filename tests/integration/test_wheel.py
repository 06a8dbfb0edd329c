"""The package as users install it: a wheel built from the sdist, in a fresh virtualenv.

The rest of the suite imports whatever ``pytest_fabric`` is installed in the test
interpreter; this test alone proves what ``pip install .`` gives a new user: every module
and data file of the source tree is in the wheel, and the quick start's first command
runs from a directory that is not the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Where each shipped folder of the repository lands in the wheel (setup.py maps the last two).
SHIPPED_FOLDERS = {
    REPO / "pytest_fabric": "pytest_fabric",
    REPO / "conformance": "pytest_fabric/conformance",
    REPO / "profiles": "pytest_fabric/profiles",
}
SHIPPED_SUFFIXES = {".py", ".yaml", ".json", ".css", ".js", ".typed"}


def _tracked_files() -> list[Path]:
    """The files of the checkout as a fresh clone has them (tracked or new, never ignored)."""
    if shutil.which("git") and (REPO / ".git").exists():
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=REPO, capture_output=True, check=True,
        ).stdout.decode()
        return [REPO / name for name in out.split("\0") if name and (REPO / name).is_file()]
    ignored = {"__pycache__", ".git", "build", "dist", ".tox", ".venv"}
    return [p for p in REPO.rglob("*") if p.is_file() and not ignored & set(p.relative_to(REPO).parts)]


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _make_venv(env_dir: Path) -> Path:
    """A fresh virtualenv (no system site-packages) with its own pip; its python."""
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    return env_dir / "bin" / "python"


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[Path]]:
    """The virtualenv the wheel goes into, made while the wheel builds (``wheel`` asks for it first):
    ensurepip takes 5-10 s of one core, the build minutes of one core at a time."""
    env_dir = tmp_path_factory.mktemp("venv")
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(_make_venv, env_dir)


@pytest.fixture(scope="module")
def wheel(fresh_venv: Future[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sdist then wheel from that sdist (``python -m build``), from a copy of the checkout."""
    pytest.importorskip("build", reason="the wheel test needs the 'build' package (pip install '.[test]')")
    tree = tmp_path_factory.mktemp("source")
    for path in _tracked_files():
        target = tree / path.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    dist = tmp_path_factory.mktemp("dist")
    built = _run([sys.executable, "-m", "build", "--outdir", str(dist), str(tree)], cwd=tree)
    assert built.returncode == 0, f"python -m build failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}"
    (found,) = dist.glob("*.whl")
    return found


@pytest.fixture(scope="module")
def installed(wheel: Path, fresh_venv: Future[Path]) -> Iterator[Path]:
    """A fresh virtualenv (no system site-packages) with the wheel and its declared dependencies."""
    python = fresh_venv.result()
    done = _run([str(python), "-m", "pip", "install", "-q", str(wheel)], cwd=python.parent.parent)
    assert done.returncode == 0, f"pip install {wheel.name} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    yield python


def expected_in_wheel(tracked: list[Path]) -> set[str]:
    """The wheel's name for every module and data file of the shipped folders."""
    return {
        f"{inside}/{p.relative_to(folder).as_posix()}"
        for p in tracked
        for folder, inside in SHIPPED_FOLDERS.items()
        if p.is_relative_to(folder) and p.suffix in SHIPPED_SUFFIXES
    }


def left_out(wheel_names: set[str], tracked: list[Path]) -> list[str]:
    return sorted(expected_in_wheel(tracked) - wheel_names)


def test_the_comparison_notices_a_module_left_out(wheel: Path) -> None:
    """The check below must fail when the wheel lacks one module, of the plugin or of the suite."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for dropped in ("pytest_fabric/judge/verdict.py", "pytest_fabric/conformance/storage/test_mount.py",
                    "pytest_fabric/profiles/hdr200.yaml"):
        assert left_out(names - {dropped}, _tracked_files()) == [dropped]


def test_wheel_ships_every_module_and_data_file(wheel: Path) -> None:
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    tracked = _tracked_files()
    assert len(expected_in_wheel(tracked)) > 100, "no package files found under pytest_fabric/, conformance/, profiles/"
    missing = left_out(in_wheel, tracked)
    assert not missing, f"{wheel.name} lacks {len(missing)} file(s) of the source tree: {missing[:20]}"
    for required in (
        "pytest_fabric/checks/gpu.py",
        "pytest_fabric/conformance/inter_node/test_tcp.py",
        "pytest_fabric/profiles/hdr200.yaml",
        "pytest_fabric/inventories/local.yaml",
        "pytest_fabric/report/record.schema.json",
    ):
        assert required in in_wheel


def test_quick_start_runs_from_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    """The README's first command, against the installed copy, from a directory of its own."""
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    pytest_bin = installed.parent / "pytest"
    run = _run(
        [str(pytest_bin), "--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider",
         "--html", "report.html", "--self-contained-html", "--conformance-json", "record.json"],
        cwd=workdir,
    )
    output = run.stdout + run.stderr
    assert "Error importing plugin" not in output, output[-3000:]
    assert run.returncode in (0, 1), f"exit {run.returncode}:\n{output[-4000:]}"
    # The plugin, the suite and the profile all came from the virtualenv, none from the checkout.
    assert str(REPO) not in output.replace(str(workdir), ""), output[-3000:]
    record = json.loads((workdir / "record.json").read_text())
    ran = [c for c in record["checks"] if c["outcome"] in ("passed", "failed")]
    assert ran, f"no check was measured: {[(c['check'], c['outcome'], c.get('message')) for c in record['checks']]}"
    assert (workdir / "report.html").stat().st_size > 10_000
    verified = _run([str(installed), "-m", "pytest_fabric.report.verify", "record.json"], cwd=workdir)
    assert verified.returncode == 0 and "OK" in verified.stdout, verified.stdout + verified.stderr


def test_installed_copy_has_no_source_tree_on_its_path(installed: Path, tmp_path: Path) -> None:
    where = _run([str(installed), "-c", "import pytest_fabric; print(pytest_fabric.__file__)"], cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert str(installed.parent.parent) in where.stdout and str(REPO) not in where.stdout


def test_a_test_run_that_imports_the_checkout_instead_of_the_installed_copy_stops(installed: Path) -> None:
    """The guard the src/ layout gave for free: `python -m pytest` from the root puts the checkout's
    pytest_fabric/ first on sys.path, and the project's tests would then test that, not the wheel."""
    env = {k: v for k, v in os.environ.items() if k != "FABRIC_TEST_CHECKOUT"}
    run = subprocess.run([str(installed), "-m", "pytest", "-p", "no:cacheprovider", "--co", "-q",
                          "tests/unit/test_hostlist.py"], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 4, run.stdout[-2000:] + run.stderr[-2000:]
    assert "imported from the checkout" in run.stderr and ".venv/bin/pytest tests" in run.stderr, run.stderr[-2000:]
