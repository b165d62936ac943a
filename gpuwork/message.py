"""A decision's message as data: a code and its parameters, never a sentence.

Estimators say *why* (a profile's reasons, an offer's notes, a verdict, a warning) with a ``Msg``;
``gpuwork.present.messages`` holds the one catalog that renders a code in English or Russian, with numbers
in the language's form. A Msg is frozen, hashable and compares by value, so tests assert on codes and
numbers, and ``as_dict()`` is its JSON form.

    >>> m = msg("fit.as_planned", need_bytes=2**30, usable_bytes=2 * 2**30)
    >>> m.code, m["need_bytes"]
    ('fit.as_planned', 1073741824)
    >>> m.as_dict()
    {'code': 'fit.as_planned', 'params': {'need_bytes': 1073741824, 'usable_bytes': 2147483648}}

Parameter values are plain data: ``str``, ``int``, ``float``, ``bool``, ``None``, another ``Msg`` or a
tuple of them (an Enum is stored as its value, a list as a tuple).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any


@dataclass(frozen=True)
class Msg:
    """One message: ``code`` names the catalog entry, ``params`` its values (pairs sorted by name)."""

    code: str
    params: tuple[tuple[str, Any], ...] = ()

    def __getitem__(self, name: str) -> Any:
        for key, value in self.params:
            if key == name:
                return value
        raise KeyError(f"{self.code} has no parameter {name!r}")

    __iter__ = None  # not a container: `"x" in msg` is a TypeError, not a silent scan of parameters

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    def walk(self) -> Iterator[Msg]:
        """This message and every message nested in its parameters, depth first."""
        yield self
        for _key, value in self.params:
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, Msg):
                    yield from item.walk()

    def as_dict(self) -> dict[str, Any]:
        """JSON form: {"code": ..., "params": {...}} (nested messages likewise)."""
        return {"code": self.code, "params": {k: _json(v) for k, v in self.params}}

    def __str__(self) -> str:
        # Not for people: a stable debug form. People get gpuwork.present.messages.render(msg, lang).
        inner = ", ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.code}({inner})"


def _json(value: Any) -> Any:
    if isinstance(value, Msg):
        return value.as_dict()
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    return value


_ATOMS = frozenset((str, int, float, bool, type(None)))


def _plain(value: Any) -> Any:
    if type(value) in _ATOMS:  # the common case first: an estimate builds dozens of messages
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    if value is None or isinstance(value, Msg | str | int | float | bool):
        return value
    raise TypeError(f"message parameter {value!r} is {type(value).__name__}: pass str, int, float, bool, None, "
                    "an Enum, a Msg or a tuple of them")


def msg(code: str, /, **params: Any) -> Msg:
    """A message: ``msg("fit.as_planned", need_bytes=..., usable_bytes=...)``."""
    if not code or not isinstance(code, str):
        raise ValueError(f"message code {code!r} must be a non-empty string such as 'fit.as_planned'")
    return Msg(code, tuple(sorted((k, _plain(v)) for k, v in params.items())))


__all__ = ["Msg", "msg"]
