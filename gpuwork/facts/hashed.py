"""A tuple that computes its hash once: the step model's price caches key on long tuples of facts (a step's
operations, a family's attention curves), which Python would otherwise hash again at every lookup."""

from __future__ import annotations

from typing import Any


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


__all__ = ["HashedTuple"]
