"""The catalog's entries: code -> (English, Russian), one module per code prefix.

Each module names the prefix it holds (``PREFIX``) after its file name (``error_trial.py`` holds ``error.trial.*``)
and holds every code that starts with it, except those of a longer prefix that has a module of its own
(tests/test_messages.py checks both). Add a code to the module of its longest prefix; a new prefix gets a new
module. ``gpuwork.present.messages`` renders them.


"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules() -> list[ModuleType]:
    """Every entry module of the catalog, by name."""
    return [importlib.import_module(f"{__name__}.{info.name}") for info in sorted(pkgutil.iter_modules(__path__),
                                                                                    key=lambda i: i.name)]


def _merged() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for module in modules():
        clash = out.keys() & module.ENTRIES.keys()
        assert not clash, f"catalog codes defined twice: {sorted(clash)}"
        out.update(module.ENTRIES)
    return out


ENTRIES: dict[str, tuple[str, str]] = _merged()
