"""The package's shape stays readable (issue 22): no function over 100 lines, none taking more than 8 parameters
(constructors whose options are keyword-only are exempt, like a data class's), no module over 1,000 lines."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gpuwork"
MAX_FUNCTION_LINES = 100
MAX_PARAMETERS = 8
MAX_MODULE_LINES = 1_000


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _functions(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[list[str], list[str]]:
    """(positional names but self/cls, keyword-only names); *args and **kwargs count as one each."""
    a = node.args
    positional = [x.arg for x in a.posonlyargs + a.args if x.arg not in ("self", "cls")]
    keyword = [x.arg for x in a.kwonlyargs]
    return positional + ["*"] * bool(a.vararg), keyword + ["**"] * bool(a.kwarg)


def test_the_rules_see_the_whole_package() -> None:
    assert len(_modules()) > 150
    assert sum(1 for path in _modules() for _ in _functions(path)) > 1_500


def test_no_function_is_over_100_lines() -> None:
    long = [f"{path.relative_to(PACKAGE.parent)}:{f.lineno} {f.name} ({f.end_lineno - f.lineno + 1} lines)"
            for path in _modules() for f in _functions(path) if f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, "split these where their seams are:\n" + "\n".join(long)


def test_no_function_takes_more_than_8_parameters() -> None:
    many = []
    for path in _modules():
        for f in _functions(path):
            positional, keyword = _parameters(f)
            if f.name == "__init__" and len(positional) <= MAX_PARAMETERS:
                continue  # a constructor's keyword-only options are its fields
            if len(positional) + len(keyword) > MAX_PARAMETERS:
                many.append(f"{path.relative_to(PACKAGE.parent)}:{f.lineno} {f.name} "
                            f"({len(positional) + len(keyword)} parameters)")
    assert not many, "pass an options object instead:\n" + "\n".join(many)


def test_no_module_is_over_1000_lines() -> None:
    big = [f"{path.relative_to(PACKAGE.parent)} ({n} lines)" for path in _modules()
           if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert not big, "split these modules:\n" + "\n".join(big)
