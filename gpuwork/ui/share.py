"""A shareable plan: a TrainPlan as URL query parameters and as a downloadable plan file, and back.

``plan_query(plan)`` writes the fields that differ from ``TrainPlan()`` as ``?model=...&seq_len=4096`` (the
precision when it differs from its method's, ``gpuwork.plan.default_precision``: QLoRA's is bf16-mixed);
``plan_from_query(query)`` reads them back through the validation layer: each value is parsed like a typed
form field (``gpuwork.units``: counts accept "4k", sizes "200MB") and the plan is checked by ``TrainPlan``, so
a bad value or a misspelt field is the same one-line message the form and the CLI give. ``plan_file_bytes``
is the plan file (``TrainPlan.as_dict`` as JSON, what ``gpuwork report --plan`` reads) and
``share_html`` the link and the download, for a panel. ``page_query()`` is the query string of the page a
Voila kernel serves.

Example:
    >>> plan = TrainPlan(model="llama-3.1-8b", method="qlora", precision="bf16-mixed", seq_len=4096,
    ...                  grad_checkpointing=True)
    >>> plan_query(plan)
    'model=llama-3.1-8b&method=qlora&seq_len=4096&grad_checkpointing=true'
    >>> plan_from_query("?" + plan_query(plan)) == plan
    True

Limitations: a model given as a local config file travels as its path, which only this machine can open.
"""

from __future__ import annotations

import base64
import html
import json
import os
from collections.abc import Mapping
from dataclasses import fields
from enum import StrEnum
from typing import Any
from urllib.parse import parse_qs, urlencode

from gpuwork.errors import PlanError
from gpuwork.message import msg
from gpuwork.plan import (
    OPTIONAL_BOOLS,
    OPTIONAL_FIELDS,
    TrainPlan,
    default_precision,
    follow_method,
    plan_from_choices,
)
from gpuwork.present.messages import text
from gpuwork.units import parse_count, parse_number, parse_size

# Query keys that are not plan fields but belong to the page (the app's language).
PAGE_KEYS = ("lang",)
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
_NONE = ("", "none", "null")
_DEFAULTS = {f.name: f.default for f in fields(TrainPlan)}
_NUMBER_FIELDS = ("lora_alpha",)  # an int by default, but a fraction is a valid alpha


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, tuple | list) and value and isinstance(value[0], tuple):  # lengths: LEN:COUNT,...
        return ",".join(f"{length}:{weight!r}" for length, weight in value)
    if isinstance(value, tuple | list):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return repr(value)  # the shortest text that reads back as the same float
    return str(value)


def plan_query(plan: TrainPlan) -> str:
    """The URL query (without "?") of the fields of ``plan`` that differ from ``TrainPlan()`` (the precision: from
    its method's), in field order."""
    default = TrainPlan().replace(precision=default_precision(plan.method))
    pairs = [(f.name, _as_text(getattr(plan, f.name))) for f in fields(TrainPlan)
             if getattr(plan, f.name) != getattr(default, f.name)]
    return urlencode(pairs, safe=",/")


def _parse(name: str, raw: str) -> Any:
    """One query value as the field's type, through the validation layer's parsers."""
    value = raw.strip()
    default = _DEFAULTS.get(name)
    if name == "dataset_bytes":
        return None if value.lower() in _NONE else parse_size(value, name)
    if name == "weight_decay":  # a fraction, or none (the stack's default); TrainPlan checks its range
        return None if value.lower() in _NONE else parse_number(value, name)
    if name in OPTIONAL_FIELDS:  # the others: a whole number, or none
        return None if value.lower() in _NONE else parse_count(value, name, minimum=None)
    if name == "seq_len":  # "4k" is 4,096, as the form reads it
        from gpuwork.sizing import parse_seq_len

        return parse_seq_len(value, name)
    if name in OPTIONAL_BOOLS and value.lower() in _NONE:  # unset: the stack's behaviour
        return None
    if isinstance(default, bool) or name in OPTIONAL_BOOLS:
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise PlanError(name, msg("error.share.bool", field=name, value=repr(raw)))
    if name in _NUMBER_FIELDS:
        number = parse_number(value, name)
        return int(number) if float(number).is_integer() else number
    if isinstance(default, int):
        return parse_count(value, name, minimum=None)  # TrainPlan says which minimum, by field
    if isinstance(default, float):
        return parse_number(value, name)
    return value  # text and choices: TrainPlan checks them (and names the closest choice)


def plan_from_query(query: str | Mapping[str, Any], base: TrainPlan | None = None) -> TrainPlan:
    """The plan a URL query describes: ``base`` (default ``TrainPlan()``) with the query's fields. A query that
    names no precision gets its method's (``gpuwork.plan.plan_from_choices``; over a base, ``follow_method``).

    ``query``: "?model=gpt2&seq_len=1k", "model=gpt2" or a mapping (a value may be a list: the last one
    counts, as a form would). Keys in PAGE_KEYS are ignored. Raises PlanError naming the field and the fix
    for a bad value, and the closest field for a misspelt key.
    """
    if isinstance(query, str):
        items = {k: v[-1] for k, v in parse_qs(query.lstrip("?"), keep_blank_values=True).items()}
    else:
        items = {k: (v[-1] if isinstance(v, list | tuple) else v) for k, v in query.items()}
    changes: dict[str, Any] = {}
    for key, raw in items.items():
        if key in PAGE_KEYS:
            continue
        changes[key] = _parse(key, str(raw)) if key in _DEFAULTS else raw  # unknown keys: from_dict names them
    if base is None:
        return plan_from_choices(changes)
    if "method" in changes and "precision" not in changes:  # as the form's method control does
        changes["precision"] = follow_method(base.precision, base.method, changes["method"])
    return TrainPlan.from_dict({**base.as_dict(), **changes})


def page_link_query(plan: TrainPlan, lang: str = "en") -> str:
    """The query of a link to this page: the plan's fields and, when not English, the language (``lang=ru``)."""
    query = plan_query(plan)
    if lang == "en":
        return query
    return f"{query}&lang={lang}" if query else f"lang={lang}"


def address_bar_html(query: str, serial: int = 0) -> str:
    """A hidden element that sets the browser's address to ``?query`` without reloading (history.replaceState),
    so that the address bar follows the form and can be copied as a link. An image that fails to load runs the
    one statement (a widget's HTML runs no <script>); ``serial`` makes each update a new element."""
    target = json.dumps("?" + query) if query else "location.pathname"
    code = f"history.replaceState(history.state, '', {target});this.remove();"
    return (f'<img class="gpuwork-address" data-serial="{serial}" src="data:," alt="" style="display:none" '
            f'onerror="{html.escape(code, quote=True)}">')


def plan_file_bytes(plan: TrainPlan) -> bytes:
    """The plan file: ``TrainPlan.as_dict()`` as indented JSON (``gpuwork report --plan`` reads it)."""
    return (json.dumps(plan.as_dict(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def share_html(plan: TrainPlan, lang: str = "en", *, local_model: bool = False) -> str:
    """A link to this page with the plan in its query, and the plan file as a download (a data: URI)."""
    link = "?" + page_link_query(plan, lang)
    data = base64.b64encode(plan_file_bytes(plan)).decode("ascii")
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in plan.model.rsplit("/", 1)[-1])
    parts = [f'<a class="gpuwork-share-link" href="{html.escape(link)}" target="_top">'
             f"{html.escape(text('ui.share.link', lang))}</a>",
             f'<a class="gpuwork-plan-download" download="plan-{html.escape(name)}.json" '
             f'href="data:application/json;charset=utf-8;base64,{data}">{html.escape(text("ui.share.download", lang))}'
             "</a>"]
    note = text("ui.share.local_model" if local_model else "ui.share.hint", lang)
    return (f'<div class="gpuwork-share">{" &nbsp; ".join(parts)}'
            f'<div style="color:#555;font-size:90%">{html.escape(note)}</div></div>')


def page_query() -> str:
    """The query string of the page this kernel serves ("" outside Voila).

    Voila gives it to the kernel as QUERY_STRING; a preheated kernel learns it only when a visitor arrives,
    through ``voila.utils.get_query_string`` (which waits for that visitor).
    """
    if os.environ.get("QUERY_STRING"):
        return os.environ["QUERY_STRING"]
    try:
        from voila.utils import get_query_string
    except ImportError:
        return ""
    try:
        return get_query_string() or ""
    except Exception:  # noqa: BLE001 - not under Voila (a plain kernel): no query
        return ""


__all__ = ["PAGE_KEYS", "address_bar_html", "page_link_query", "page_query", "plan_file_bytes", "plan_from_query", "plan_query", "share_html"]
