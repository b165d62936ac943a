"""The install paths agree: environment.yml, pyproject.toml, the Makefile, .ci/run and the README.

conda cannot run here (no conda channel is reachable), so environment.yml is checked structurally.
Each test fails when one of these files drifts from the others.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def env() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def _conda_deps(env: dict) -> list[str]:
    return [d for d in env["dependencies"] if isinstance(d, str)]


def _pip_section(env: dict) -> list[str]:
    sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(sections) == 1, "environment.yml needs exactly one `- pip:` section"
    return [str(line).strip() for line in sections[0]]


def _torch_pin_pyproject(pyproject: dict) -> str:
    reqs = [Requirement(r) for r in pyproject["project"]["dependencies"]]
    torch = [r for r in reqs if r.name == "torch"]
    assert len(torch) == 1, "pyproject.toml must list torch once in [project] dependencies"
    specs = list(torch[0].specifier)
    assert len(specs) == 1 and specs[0].operator == "==", f"torch must be pinned with ==, got {torch[0]}"
    return specs[0].version


def test_environment_uses_conda_forge(env: dict) -> None:
    assert env["channels"] == ["conda-forge"]


def test_environment_python_matches_requires_python(env: dict, pyproject: dict) -> None:
    pythons = [d for d in _conda_deps(env) if re.match(r"python\s*[=<>]", d)]
    assert pythons == ["python=3.11"], f"expected python=3.11 in environment.yml, got {pythons}"
    version = pythons[0].split("=", 1)[1]
    assert SpecifierSet(pyproject["project"]["requires-python"]).contains(f"{version}.0"), (
        f"python {version} in environment.yml does not satisfy requires-python "
        f"{pyproject['project']['requires-python']}")
    assert "pip" in _conda_deps(env)


def test_environment_torch_pin_matches_pyproject(env: dict, pyproject: dict) -> None:
    pip = _pip_section(env)
    torch_lines = [line for line in pip if re.match(r"torch\b", line)]
    assert torch_lines, "environment.yml's pip section must pin torch"
    assert pip[0] == torch_lines[0], "torch must come first in the pip section (before the package)"
    assert torch_lines[0] == f"torch=={_torch_pin_pyproject(pyproject)}"


def test_environment_pip_installs_this_package(env: dict) -> None:
    pip = _pip_section(env)
    package = [line for line in pip if re.fullmatch(r"(-e\s+)?\.(\[[\w,-]+\])?", line)]
    assert package, f"the pip section must install this package (`-e .` or `.`); got {pip}"
    assert pip.index(package[0]) > 0, "the package must come after the torch pin"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_environment_pip_section_resolves(env: dict) -> None:
    """pip can resolve environment.yml's pip section as written (dry run: nothing is installed)."""
    import shlex
    import subprocess
    import sys

    args = [arg for line in _pip_section(env) for arg in shlex.split(line)]
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "-q", *args],
                            cwd=ROOT, capture_output=True, text=True, timeout=280)
    assert result.returncode == 0, result.stdout + result.stderr


def _make_recipe(target: str) -> list[str]:
    """Recipe lines of a Makefile rule (the rule whose target is exactly ``target``)."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"^{re.escape(target)}\s*:(?!=)", line):
            recipe = []
            for body in lines[i + 1:]:
                if not body.startswith("\t"):
                    break
                recipe.append(body.strip())
            return recipe
    raise AssertionError(f"Makefile has no rule for {target}")


def test_makefile_installs_torch_pin_before_package(pyproject: dict) -> None:
    recipe = _make_recipe("$(STAMP)")
    torch_idx = [i for i, line in enumerate(recipe) if "pip install" in line and "torch==" in line]
    pkg_idx = [i for i, line in enumerate(recipe) if re.search(r"pip install\s.*-e\s+\"?\.", line)]
    assert torch_idx and pkg_idx, f"the venv recipe must pip install torch, then -e .; got {recipe}"
    assert torch_idx[0] < pkg_idx[0], "torch must be installed before the package"
    pin = re.search(r"torch==([\w.+-]+)", recipe[torch_idx[0]]).group(1)
    assert pin == _torch_pin_pyproject(pyproject)
    assert "python3.11" in (ROOT / "Makefile").read_text(), "the venv must be made with python3.11"


def test_makefile_has_the_documented_targets() -> None:
    text = (ROOT / "Makefile").read_text()
    for target in ("venv", "app", "test", "lint", "browser-deps"):
        assert re.search(rf"^{target}\s*:", text, re.M), f"Makefile lacks target {target}"
    assert any("pytest" in line for line in _make_recipe("test"))
    assert any("voila" in line and "notebooks/app.ipynb" in line for line in _make_recipe("app"))


def test_ci_runs_make_test() -> None:
    ci = ROOT / ".ci" / "run"
    text = ci.read_text()
    assert ci.stat().st_mode & 0o111, ".ci/run must be executable"
    assert text.startswith("#!/usr/bin/env bash") or text.startswith("#!/bin/bash")
    assert "set -euo pipefail" in text
    commands = [line.strip() for line in text.splitlines() if not line.strip().startswith("#")]
    assert any(re.match(r"^make test\b", c) for c in commands), ".ci/run must run `make test`"


def test_readme_quick_start_commands() -> None:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
    lines = {line.strip() for block in blocks for line in block.splitlines()}
    for command in ("make app", "make test"):
        assert command in lines, f"README.md must show `{command}` in a code block"


def test_voila_config_is_local_and_culls_kernels() -> None:
    import json

    config = json.loads((ROOT / "voila.json").read_text())
    assert config["Voila"]["ip"] == "127.0.0.1"
    assert config["Voila"]["open_browser"] is False
    assert config["VoilaConfiguration"]["strip_sources"] is True
    assert "jupyterlab-jupytext" in config["VoilaConfiguration"]["extension_denylist"]
    assert config["MappingKernelManager"] == {"cull_interval": 60, "cull_idle_timeout": 600}
