"""The defaults a framework applies to a field its config file leaves out.

Read from the installed package when it is installed: the dataclass field defaults of its source file, parsed
with ``ast`` (no import: importing TRL or transformers starts torch and takes seconds). Otherwise from the table
pinned to a named release, ``facts/data/config_defaults.json``, each class with the URL of its source at that
release (docs/configs.md). Either way the printed mapping names the source ("TRL 1.16.0 default").

Example:
    >>> d = defaults_for("trl.SFTConfig")
    >>> d.get("max_length"), d.get("gradient_checkpointing")
    (1024, True)
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.facts import reading
from gpuwork.facts.paths import data_dir
from gpuwork.message import Msg, msg

_MISSING = object()


@dataclass(frozen=True)
class Defaults:
    """One framework config class's defaults and where they were read."""

    name: str  # "trl.SFTConfig"
    framework: str  # display name: "TRL", "transformers", "peft"
    version: str
    values: dict[str, Any]
    url: str  # the pinned table's source; "" when read from the installed package

    fallback: Defaults | None = None  # the pinned table, for a field the installed source gives no literal for

    def get(self, key: str, default: Any = None) -> Any:
        return self.lookup(key)[0] if self.has(key) else default

    def has(self, key: str) -> bool:
        return key in self.values or (self.fallback is not None and self.fallback.has(key))

    def lookup(self, key: str) -> tuple[Any, Msg]:
        """(default value, where it was read) of one field; KeyError when neither source has it."""
        if key in self.values:
            return self.values[key], self.source
        if self.fallback is not None:
            return self.fallback.lookup(key)
        raise KeyError(key)

    @property
    def source(self) -> Msg:
        """How the mapping names this source."""
        if self.url:
            return msg("config.default.pinned", framework=self.framework, version=self.version,
                       cls=self.name.split(".")[-1], url=self.url)
        return msg("config.default.installed", framework=self.framework, version=self.version,
                   cls=self.name.split(".")[-1])


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    path = data_dir() / "config_defaults.json"
    data = reading.load_json(path, reading.TABLE)
    return data if isinstance(data, dict) else {}


def pinned(name: str) -> Defaults:
    """The pinned table's defaults of ``name`` (a key of config_defaults.json's "classes")."""
    entry = _table()["classes"][name]
    values: dict[str, Any] = {}
    for base in entry.get("bases", ()):
        values.update(pinned(base).values)
    values.update(entry["fields"])
    return Defaults(name, entry["framework"], entry["release"], values, entry["url"])


def _installed(name: str) -> Defaults | None:
    """The installed package's defaults of ``name``, or None when the package (or the class) is not there."""
    entry = _table()["classes"][name]
    package = entry["package"]
    try:
        spec = importlib.util.find_spec(package)
        version = importlib.metadata.version(entry.get("distribution", package))
    except (ImportError, ValueError, importlib.metadata.PackageNotFoundError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    values: dict[str, Any] = {}
    for base in entry.get("bases", ()):
        found = _installed(base)
        if found is None:
            return None
        values.update(found.values)
    own = _class_defaults(Path(next(iter(spec.submodule_search_locations))) / entry["module"], entry["class"])
    if own is None:
        return None
    values.update({k: v for k, v in own.items() if k in entry["fields"]})
    return Defaults(name, entry["framework"], version, values, "", fallback=pinned(name))


def _class_defaults(source: Path, cls: str) -> dict[str, Any] | None:
    """Literal defaults of a dataclass's fields, read from its source (``x: T = v`` and ``field(default=v)``)."""
    try:
        tree = ast.parse(source.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            out: dict[str, Any] = {}
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    value = _literal(item.value)
                    if value is not _MISSING:
                        out[item.target.id] = value
            return out
    return None


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "field":
        for kw in node.keywords:
            if kw.arg == "default":
                return _literal(kw.value)
        return _MISSING
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


@functools.cache
def defaults_for(name: str, prefer_installed: bool = True) -> Defaults:
    """The defaults of ``name``: the installed package's when it is installed, else the pinned table's."""
    if prefer_installed:
        found = _installed(name)
        if found is not None:
            return found
    return pinned(name)


__all__ = ["Defaults", "defaults_for", "pinned"]
