"""The catalog's shelves: one module per code prefix under gpuwork/present/catalog/ (issue: error.* was spread
over 9 files, cli.* over 10)."""

from __future__ import annotations

from gpuwork.present import catalog
from gpuwork.present.messages import CATALOG


def _prefixes() -> dict[str, object]:
    return {module.PREFIX: module for module in catalog.modules()}


def test_each_module_is_named_after_the_prefix_it_holds():
    for module in catalog.modules():
        assert module.__name__.rsplit(".", 1)[1] == module.PREFIX.replace(".", "_"), module.__name__


def test_every_code_lives_in_the_module_of_its_longest_prefix():
    prefixes = _prefixes()
    for module in catalog.modules():
        for code in module.ENTRIES:
            homes = [p for p in prefixes if code == p or code.startswith(p + ".")]
            assert homes, f"{code}: no module holds its prefix ({module.__name__}); add one named after it"
            assert max(homes, key=len) == module.PREFIX, (
                f"{code} is in {module.__name__} but belongs in the module for {max(homes, key=len)!r}")


def test_the_catalog_is_exactly_the_modules_entries():
    merged = {code for module in catalog.modules() for code in module.ENTRIES}
    assert merged == set(CATALOG)
    assert sum(len(module.ENTRIES) for module in catalog.modules()) == len(CATALOG)  # no code twice


def test_no_shelf_outgrows_a_module():
    import inspect

    for module in catalog.modules():
        assert len(inspect.getsource(module).splitlines()) <= 1000, module.__name__
