"""Coded messages in measurement records: a ``Msg`` to JSON and back, and text written before codes.

Records (trial, calibration) keep what they say as ``gpuwork.message.Msg`` values, so a reader renders
them in their own language (``gpuwork.present.messages.render``). ``to_json`` turns a record (any nest of
dataclasses, dicts, lists, enums and messages) into JSON-ready data, each message as ``Msg.as_dict()``;
``from_json`` reads a message back. Records written before messages were coded hold English text in
those fields: ``from_json`` keeps such text as it was, as the message ``measure.text``.

    >>> from_json({"code": "trial.sub.paged_cpu", "params": {}}) == msg("trial.sub.paged_cpu")
    True
    >>> from_json("an old note")["text"]
    'an old note'
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from typing import Any

from gpuwork.message import Msg, msg

LEGACY_TEXT = "measure.text"  # text a record held before its messages were coded (shown as it is)


def to_json(value: Any) -> Any:
    """JSON-ready data: dataclasses as dicts of their fields, messages as ``as_dict()``, enums as values."""
    if isinstance(value, Msg):
        return value.as_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _param(value: Any) -> Any:
    if isinstance(value, dict) and "code" in value:
        return from_json(value)
    if isinstance(value, list | tuple):
        return tuple(_param(v) for v in value)
    return value


def from_json(value: Any) -> Msg | None:
    """A message from its JSON form; None stays None; a plain string (an older record) becomes ``measure.text``."""
    if value is None or isinstance(value, Msg):
        return value
    if isinstance(value, str):
        return msg(LEGACY_TEXT, text=value)
    if isinstance(value, dict) and isinstance(value.get("code"), str):
        return msg(value["code"], **{k: _param(v) for k, v in (value.get("params") or {}).items()})
    raise TypeError(f"{value!r} is not a message: expected {{'code': ..., 'params': {{...}}}} or text")


def all_from_json(values: Iterable[Any] | None) -> tuple[Msg, ...]:
    """Each item of a JSON list read with ``from_json`` (None or empty: no messages)."""
    return tuple(m for m in (from_json(v) for v in values or ()) if m is not None)


__all__ = ["LEGACY_TEXT", "all_from_json", "from_json", "to_json"]
