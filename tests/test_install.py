"""gpuwork as an installed package: its version, its wheel's contents, its dependencies against its imports.

The wheel is built from a copy of the package sources (pyproject.toml, README.md, LICENSE, gpuwork/), so a
stale build/ folder in the checkout cannot hide a missing file. scripts/check_wheel.sh goes further in CI:
it installs the wheel in fresh virtualenvs and runs every verb from outside the checkout.
"""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import packages_distributions, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import gpuwork

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpuwork"
# Imported only when present, inside try/except ImportError: not declared on purpose.
OPTIONAL_IMPORTS = {
    "pynvml": "the NVIDIA driver version in a trial record; nvidia-smi is the fallback",
    "numpy": "its RNG state in a trial checkpoint when numpy is there (transformers brings it)",
}
# Declared although gpuwork's code imports none of them: what runs the notebooks and the app.
NEEDED_NOT_IMPORTED = {
    "ipykernel": "the kernel that runs the notebooks, the reports and the app",
    "jupyterlab": "the editor for the workbook's notebooks",
    "nbclient": "executes notebooks for papermill and Voila",
    "jupytext": "pairs each notebook with its .py (notebooks/*.py)",
}


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


# -- version ------------------------------------------------------------------------------------------


def test_version_comes_from_the_installed_metadata(pyproject: dict) -> None:
    assert gpuwork.__version__ == version("gpuwork") == pyproject["project"]["version"]


def test_version_falls_back_when_no_metadata_is_installed() -> None:
    # a distribution name that nothing installs: what a never-installed source tree sees for gpuwork
    assert gpuwork._installed_version("gpuwork-never-installed") == "0+unknown"


def test_cli_prints_the_version(pyproject: dict) -> None:
    result = subprocess.run([sys.executable, "-m", "gpuwork", "--version"], capture_output=True, text=True,
                            timeout=60, cwd=ROOT.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"gpuwork {pyproject['project']['version']}\n"


def test_console_script_points_at_the_cli_main(pyproject: dict) -> None:
    from gpuwork.cli import main as cli_main

    module, _, attr = pyproject["project"]["scripts"]["gpuwork"].partition(":")
    assert getattr(importlib.import_module(module), attr) is cli_main


# -- the wheel ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel built (no build isolation: the venv's setuptools) from a clean copy of the sources."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(PACKAGE, src / "gpuwork", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                             "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (path,) = out.glob("gpuwork-*.whl")
    return zipfile.ZipFile(path)


def _tree(pattern: str) -> set[str]:
    return {f"gpuwork/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.glob(pattern)
            if p.is_file() and "__pycache__" not in p.parts}


def test_wheel_holds_every_bundled_data_file_and_notebook(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    groups = {
        "model configs": _tree("facts/data/models/*.json"),
        "preset cache": _tree("facts/data/model_specs.json"),
        "GPU table": _tree("facts/data/gpus.csv"),
        "offer catalog": _tree("facts/data/catalog.csv"),
        "kernel rates": _tree("facts/data/rates.csv") | _tree("facts/data/kernels.csv") | _tree("facts/data/stacks.csv"),
        "trial texts": _tree("facts/data/text/*.txt"),
        "notebooks": _tree("ui/notebooks/*.ipynb"),
        "the app's plotly.js bundle and its license": _tree("ui/notebooks/static/*"),
        "every data file": _tree("facts/data/**/*"),
    }
    for what, files in groups.items():
        assert files, f"the source tree has no {what}: the glob is wrong"
        missing = sorted(files - names)
        assert not missing, f"the wheel lacks {what}: {missing} (fix [tool.setuptools.package-data])"
    assert "gpuwork/ui/notebooks/app.ipynb" in names and "gpuwork/facts/data/models/llama-3.1-8b.json" in names


def test_wheel_holds_every_module_and_nothing_stale(wheel: zipfile.ZipFile) -> None:
    modules = {n for n in wheel.namelist() if n.startswith("gpuwork/") and n.endswith(".py")}
    assert modules == _tree("**/*.py")


def test_wheel_metadata_license_entry_point_and_light_core(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    metadata = wheel.read(f"{dist_info}/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()
    assert wheel.read(f"{dist_info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
    entry_points = wheel.read(f"{dist_info}/entry_points.txt").decode()
    assert "gpuwork = gpuwork.cli:main" in entry_points.splitlines()
    requires = [Requirement(line.removeprefix("Requires-Dist: ")) for line in metadata.splitlines()
                if line.startswith("Requires-Dist: ")]
    core = [str(r) for r in requires if r.marker is None]
    assert core == [], f"the core install must need the standard library only, got {core}"
    torch = [r for r in requires if r.name == "torch"]
    assert len(torch) == 1 and str(torch[0].marker) == 'extra == "trial"'


# -- dependencies against imports ---------------------------------------------------------------------


def _third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> the gpuwork files that import it (absolute imports outside the standard library)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top != "gpuwork" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def _declared(pyproject: dict, *, test: bool = True) -> dict[str, set[str]]:
    """Distribution (canonical name) -> the extras that declare it (gpuwork's own extras excluded)."""
    declared: dict[str, set[str]] = {}
    for extra, lines in pyproject["project"]["optional-dependencies"].items():
        if extra == "test" and not test:
            continue
        for line in lines:
            name = canonicalize_name(Requirement(line).name)
            if name != "gpuwork":
                declared.setdefault(name, set()).add(extra)
    for line in pyproject["project"]["dependencies"]:
        declared.setdefault(canonicalize_name(Requirement(line).name), set()).add("core")
    return declared


def test_every_import_is_declared(pyproject: dict) -> None:
    declared = _declared(pyproject)
    dists = packages_distributions()
    undeclared = {}
    for module, files in _third_party_imports().items():
        if module in OPTIONAL_IMPORTS:
            continue
        names = {canonicalize_name(d) for d in dists.get(module, [module])}
        if not names & declared.keys():
            undeclared[module] = sorted(files)
    assert not undeclared, f"imported but declared in no extra of pyproject.toml: {undeclared}"


def test_every_declared_dependency_is_imported_or_needed(pyproject: dict) -> None:
    dists = packages_distributions()
    imported = {canonicalize_name(d) for module in _third_party_imports() for d in dists.get(module, [module])}
    runtime = set(_declared(pyproject, test=False))  # the test tools are imported by tests/, not gpuwork/
    unused = sorted(runtime - imported - set(NEEDED_NOT_IMPORTED))
    assert not unused, f"declared in pyproject.toml but imported nowhere in gpuwork/: {unused}"
    # the two allowlists above stay true
    assert set(NEEDED_NOT_IMPORTED) <= runtime, "NEEDED_NOT_IMPORTED names a distribution pyproject.toml lacks"
    assert set(OPTIONAL_IMPORTS) <= set(_third_party_imports()), "OPTIONAL_IMPORTS names a module nothing imports"


def test_core_commands_load_no_third_party_module() -> None:
    """models, estimate, plan, offers and request run on the standard library: the light core install."""
    code = """
import contextlib, io, sys
before = set(sys.modules)  # whatever site's .pth hooks loaded before gpuwork
from gpuwork.cli import main
for argv in (["models"], ["estimate", "--model", "llama-3.1-8b", "--method", "lora"],
             ["plan", "--model", "llama-3.1-8b", "--method", "lora", "--dataset-tokens", "1B"],
             ["offers", "--model", "llama-3.1-8b", "--method", "full"],
             ["request", "--model", "llama-3.1-8b", "--method", "lora", "--lang", "ru"]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(argv) == 0, argv
loaded = {m.split(".")[0] for m in set(sys.modules) - before}
print(sorted(loaded - set(sys.stdlib_module_names) - {"gpuwork"}))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT.parent)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", f"third-party modules loaded by core commands: {result.stdout}"
