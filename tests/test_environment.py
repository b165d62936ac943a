"""The install paths agree: constraints.txt, environment.yml, pyproject.toml, the Makefile, .ci/run, README.

The torch pin lives in constraints.txt; the Makefile and environment.yml install it first and must name the
same version, and pyproject.toml's [trial] range must contain it. conda cannot run here (no conda channel
is reachable), so environment.yml is checked structurally. Each test fails when one file drifts.
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


def _torch_pin() -> str:
    """The torch version of constraints.txt (the one pin every install path shares)."""
    lines = [line.split("#")[0].strip() for line in (ROOT / "constraints.txt").read_text().splitlines()]
    torch = [Requirement(line) for line in lines if line and Requirement(line).name == "torch"]
    assert len(torch) == 1, "constraints.txt must pin torch once"
    specs = list(torch[0].specifier)
    assert len(specs) == 1 and specs[0].operator == "==", f"torch must be pinned with ==, got {torch[0]}"
    return specs[0].version


def _extra(pyproject: dict, name: str) -> list[Requirement]:
    return [Requirement(r) for r in pyproject["project"]["optional-dependencies"][name]]


def test_torch_pin_lies_in_the_trial_range(pyproject: dict) -> None:
    torch = [r for r in _extra(pyproject, "trial") if r.name == "torch"]
    assert len(torch) == 1, "pyproject.toml's [trial] extra must list torch once"
    specs = list(torch[0].specifier)
    assert specs and all(s.operator != "==" for s in specs), f"[trial] takes a range of torch, got {torch[0]}"
    assert torch[0].specifier.contains(_torch_pin()), f"constraints.txt's torch {_torch_pin()} is outside {torch[0]}"


def test_core_dependencies_are_light(pyproject: dict) -> None:
    """`pip install gpuwork` brings no torch, no model libraries and no notebook stack."""
    core = {Requirement(r).name for r in pyproject["project"]["dependencies"]}
    heavy = {"torch", "transformers", "peft", "bitsandbytes", "accelerate", "voila", "jupyterlab", "pandas",
             "plotly", "ipywidgets"}
    assert not core & heavy, f"move {sorted(core & heavy)} from [project] dependencies to an extra"


def test_extras_compose(pyproject: dict) -> None:
    """[all] is trial + workbook + app + configs (PyYAML); [test] is [all] plus the test tools; accelerate is
    nowhere."""
    assert [(r.name, r.extras) for r in _extra(pyproject, "all")] == [("gpuwork",
                                                                       {"trial", "workbook", "app", "configs"})]
    test = _extra(pyproject, "test")
    assert any(r.name == "gpuwork" and r.extras == {"all"} for r in test), "[test] must include gpuwork[all]"
    assert {"pytest", "pytest-timeout", "playwright", "ruff", "import-linter"} <= {r.name for r in test}
    declared = {Requirement(r).name for r in pyproject["project"]["dependencies"]}
    for extra in pyproject["project"]["optional-dependencies"]:
        declared |= {r.name for r in _extra(pyproject, extra)}
    assert "accelerate" not in declared, "gpuwork imports no accelerate: do not declare it"
    assert pyproject["project"]["license"] == "Apache-2.0" and pyproject["project"]["license-files"] == ["LICENSE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]


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


def test_environment_torch_pin_matches_constraints(env: dict) -> None:
    pip = _pip_section(env)
    torch_lines = [line for line in pip if re.match(r"torch\b", line)]
    assert torch_lines, "environment.yml's pip section must pin torch"
    assert pip[0] == torch_lines[0], "torch must come first in the pip section (before the package)"
    assert torch_lines[0] == f"torch=={_torch_pin()}"


def test_environment_pip_installs_this_package(env: dict) -> None:
    pip = _pip_section(env)
    package = [line for line in pip if re.fullmatch(r"(-e\s+)?\.(\[[\w,-]+\])?", line)]
    assert package, f"the pip section must install this package (`-e .` or `.`); got {pip}"
    assert pip.index(package[0]) > 0, "the package must come after the torch pin"
    assert re.search(r"\[(.*,)?(test|all)(,.*)?\]", package[0]), f"install the extras: `-e .[test]`, got {package[0]}"
    assert "-c constraints.txt" in pip, "the pip section must install under `-c constraints.txt`"


def test_environment_pip_section_is_well_formed(env: dict) -> None:
    """Every line of environment.yml's pip section is something pip accepts, checked offline: a requirement
    that parses, a constraints file that exists, or this package with extras that pyproject.toml defines."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for line in _pip_section(env):
        if line.startswith("-c "):
            assert (ROOT / line[3:].strip()).is_file(), f"{line}: no such constraints file"
        elif line.startswith("-e "):
            target = line[3:].strip()
            assert target.split("[")[0] == ".", f"{line}: the package is installed from the repository root"
            wanted = set(target[target.index("[") + 1:-1].split(",")) if "[" in target else set()
            assert wanted <= extras, f"{line}: unknown extras {sorted(wanted - extras)}"
        else:
            Requirement(line)  # raises InvalidRequirement on a malformed line


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


def test_makefile_installs_torch_pin_before_package() -> None:
    recipe = _make_recipe("$(STAMP)")
    torch_idx = [i for i, line in enumerate(recipe) if "pip install" in line and "torch==" in line]
    pkg_idx = [i for i, line in enumerate(recipe) if re.search(r"pip install\s.*-e\s+\"?\.\[(test|all)", line)]
    assert torch_idx and pkg_idx, f"the venv recipe must pip install torch, then -e .[test]; got {recipe}"
    assert torch_idx[0] < pkg_idx[0], "torch must be installed before the package"
    pin = re.search(r"torch==([\w.+-]+)", recipe[torch_idx[0]]).group(1)
    assert pin == _torch_pin()
    text = (ROOT / "Makefile").read_text()
    assert re.search(r"^CONSTRAINTS\s*:=\s*constraints\.txt\s*$", text, re.M)
    assert all("-c $(CONSTRAINTS)" in recipe[i] for i in (torch_idx[0], pkg_idx[0])), \
        "both installs must run under -c $(CONSTRAINTS)"
    assert re.search(r"^\$\(STAMP\):.*\$\(CONSTRAINTS\)", text, re.M), "the stamp must depend on the constraints"
    assert "python3.11" in text, "the venv must be made with python3.11"


def test_makefile_has_the_documented_targets() -> None:
    text = (ROOT / "Makefile").read_text()
    for target in ("venv", "app", "test", "lint", "browser-deps", "check-wheel"):
        assert re.search(rf"^{target}\s*:", text, re.M), f"Makefile lacks target {target}"
    assert any("pytest" in line for line in _make_recipe("test"))
    assert any(re.search(r"bin/gpuwork app\b.*--port \$\(PORT\)", line) for line in _make_recipe("app"))
    assert any("scripts/check_wheel.sh" in line for line in _make_recipe("check-wheel"))


def test_ci_runs_make_test_then_the_wheel_check() -> None:
    ci = ROOT / ".ci" / "run"
    text = ci.read_text()
    assert ci.stat().st_mode & 0o111, ".ci/run must be executable"
    assert text.startswith("#!/usr/bin/env bash") or text.startswith("#!/bin/bash")
    assert "set -euo pipefail" in text
    commands = [line.strip() for line in text.splitlines() if not line.strip().startswith("#")]
    test = [i for i, c in enumerate(commands) if re.match(r"^make test\b", c)]
    wheel = [i for i, c in enumerate(commands) if re.match(r"^(bash )?scripts/check_wheel\.sh\b", c)]
    assert test, ".ci/run must run `make test`"
    assert wheel and wheel[0] > test[0], ".ci/run must run scripts/check_wheel.sh after `make test`"
    script = ROOT / "scripts" / "check_wheel.sh"
    assert script.stat().st_mode & 0o111, "scripts/check_wheel.sh must be executable"
    assert "set -euo pipefail" in script.read_text()
    assert "constraints.txt" in script.read_text(), "the wheel check installs torch from constraints.txt"
    matrix = [i for i, c in enumerate(commands) if re.match(r"^(bash )?scripts/ci_matrix\.sh test\b", c)]
    lint = [i for i, c in enumerate(commands) if re.match(r"^make lint\b", c)]
    assert matrix and matrix[0] > test[0], ".ci/run must run scripts/ci_matrix.sh after `make test`"
    assert lint and lint[0] > test[0], ".ci/run must run `make lint` (ruff, mypy) after `make test`"
    assert any("ruff check gpuwork tests scripts benchmarks" in line for line in _make_recipe("lint"))
    assert any(re.search(r"bin/mypy\b", line) for line in _make_recipe("lint"))


def _matrix_torches() -> dict[str, str]:
    """TORCH_NEWEST and TORCH_OLDEST of scripts/ci_matrix.sh."""
    text = (ROOT / "scripts" / "ci_matrix.sh").read_text()
    return dict(re.findall(r"^(TORCH_NEWEST|TORCH_OLDEST)=([\w.]+)$", text, re.M))


def test_ci_matrix_tests_both_ends_of_the_torch_range(pyproject: dict) -> None:
    """The matrix's oldest torch is [trial]'s floor and its newest the last minor release under the cap, so a
    change of the range without a change of what CI tests (or the other way round) fails here."""
    from packaging.version import Version

    torches = _matrix_torches()
    assert set(torches) == {"TORCH_NEWEST", "TORCH_OLDEST"}, "scripts/ci_matrix.sh must set both torch versions"
    spec = next(r for r in _extra(pyproject, "trial") if r.name == "torch").specifier
    floor = [Version(s.version) for s in spec if s.operator == ">="]
    cap = [Version(s.version) for s in spec if s.operator == "<"]
    assert len(floor) == 1 and len(cap) == 1, f"[trial] torch must be a >=floor,<cap range, got {spec}"
    oldest, newest = Version(torches["TORCH_OLDEST"]), Version(torches["TORCH_NEWEST"])
    assert (oldest.major, oldest.minor) == (floor[0].major, floor[0].minor), f"oldest {oldest} is not {floor[0]}"
    assert spec.contains(str(oldest)) and spec.contains(str(newest)), f"{oldest} and {newest} must lie in {spec}"
    assert (newest.major, newest.minor + 1) == (cap[0].major, cap[0].minor), f"newest {newest}: cap is {cap[0]}"
    assert spec.contains(_torch_pin()) and oldest <= Version(_torch_pin()) <= newest
    # the floor is what `make test` runs, so no leg of its own downloads it
    assert oldest == Version(_torch_pin()), f"the floor {oldest} is not make test's pin {_torch_pin()}"


def test_classifiers_name_the_pythons_ci_tests(pyproject: dict) -> None:
    """CI runs Python 3.11 (`make test`) and 3.12, 3.13 (scripts/ci_matrix.sh); the classifiers say so."""
    classifiers = pyproject["project"]["classifiers"]
    text = (ROOT / "scripts" / "ci_matrix.sh").read_text()
    for minor in ("3.11", "3.12", "3.13"):
        assert f"Programming Language :: Python :: {minor}" in classifiers
        assert f"python{minor}" in text, f"scripts/ci_matrix.sh does not use python{minor}"


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
    # idle kernels culled within 2.5 min (a closed tab's kernel too: Voila sends no shutdown on close), never an
    # open page's or a busy one's; a loaded server waits 60 s for a cell's output instead of failing the page
    assert config["MappingKernelManager"] == {"cull_interval": 30, "cull_idle_timeout": 120, "cull_connected": False,
                                              "cull_busy": False}
    assert config["VoilaExecutor"] == {"iopub_timeout": 60}
