"""Cache keys for the estimators' hot paths. ``HashedTuple`` computes its hash once: the step model's price caches
key on long tuples of facts (a step's operations, a family's attention curves), which Python would otherwise hash
again at every lookup. ``IdentityMemo`` keys values by the identity of the fact objects they are made from."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from operator import is_
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class HashedTuple(tuple):  # type: ignore[type-arg]
    """A tuple whose hash is computed on first use and kept; subclasses name what they hold."""

    def __hash__(self) -> int:
        try:
            return int(self.__dict__["hash"])
        except KeyError:
            value = self.__dict__["hash"] = tuple.__hash__(self)
            return value

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (tuple(self),)  # without the hash: string hashes differ from process to process


class IdentityMemo(Generic[V]):
    """Values made from fact objects, found by those objects' identity (and a hashable ``extra``): the facts are
    read once from files and a changed fact comes as a new object, so identity is enough and costs no hashing of
    their contents. Each entry holds its objects, so no id is reused while the entry lives; the memo empties when
    it holds ``size`` entries. ``cache_clear`` forgets every entry, like ``functools`` caches."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: dict[tuple[tuple[int, ...], Hashable], tuple[tuple[object, ...], V]] = {}

    def get(self, objects: tuple[object, ...], extra: Hashable, make: Callable[[], V]) -> V:
        """The value made for ``objects`` and ``extra``, made by ``make()`` the first time."""
        key = (tuple(map(id, objects)), extra)
        hit = self._entries.get(key)
        if hit is not None and all(map(is_, hit[0], objects)):  # the ids' own objects (the key has as many)
            return hit[1]
        value = make()
        if len(self._entries) >= self._size:
            self._entries.clear()
        self._entries[key] = (objects, value)
        return value

    def cache_clear(self) -> None:
        self._entries.clear()


__all__ = ["HashedTuple", "IdentityMemo"]
