"""The one message catalog: every code a decision returns, and every label shown, in English and Russian.

Decision code (``gpuwork.estimate``) returns ``gpuwork.message.Msg`` objects: a code and its numbers.
``render(msg, lang)`` looks the code up in ``CATALOG`` and fills the template. Each placeholder says how
its value is shown after a colon, so numbers take the language's form (``8,294`` / ``8 294``,
``1.5 GiB`` / ``1,5 ГиБ``) through the formatters of ``gpuwork.units``:

    {need_bytes:gib}   bytes as GiB               {run_s:dur}    seconds as a run's length
    {size_bytes:size}  bytes as decimal GB/TB     {size_bytes:gb}  the same, whole when round (200 GB)
    {each_bytes:gb2}   bytes as GB, 2 decimals    {bytes_s:rate} bytes per second
    {x:usd}            dollars
    {n:int}            a whole number, grouped    {x:n0} {x:n1} {x:n2} {x:n3}  that many decimals
    {x:g}              a number, no trailing zeros {x:sci}       scientific (4.825e+10)
    {share:pct}        a fraction as a percentage {params:bn}    a count in billions, 2 decimals
    {params:count}     6.8 M / 70.55 B (6,8 млн)  {tokens:tokens}  100 M tokens (100 млн токенов)
    {day:date}         an ISO date in words       {n:pl:день|дня|дней}  the noun form for n
    {mode:@mode}       another entry: mode.<value> {x:raw}      str(x), no number form (ids, years)
    {x}                text (control characters shown escaped); a nested Msg rendered; a tuple joined with "; "
    {x:list}           a tuple of Msgs joined with ", "

A plain ``{x}`` shows whole numbers grouped and refuses other floats: a number must say its kind.
English plurals take two forms (``{n:pl:GPU|GPUs}``), Russian three (one, few, many; see
``gpuwork.units.plural_ru``). Templates are plain strings; both languages use the same placeholders
(tests/test_messages.py checks it, and that every code the decision modules emit is here).

    >>> render(msg("fit.as_planned", need_bytes=3 * 2**29, usable_bytes=20 * 2**30), "ru")
    'помещается как запланировано: 1,5 ГиБ из 20,0 ГиБ'
"""

from __future__ import annotations

import functools
import math
import string
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from typing import Any

from gpuwork import errors
from gpuwork.facts.reading import escape_chars
from gpuwork.message import Msg, msg
from gpuwork.present.catalog import ENTRIES as _ENTRIES
from gpuwork.units import (
    GB,
    LANGS,
    MISSING,
    SP,
    check_lang,
    fmt_duration,
    fmt_gib,
    fmt_int,
    fmt_number,
    fmt_rate,
    fmt_size,
    fmt_size_short,
    fmt_usd,
    plural_ru,
    unit,
)


class MessageError(LookupError):
    """A message the catalog cannot render: unknown code or language, missing parameter, bad kind."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


# -- the catalog: code -> (English, Russian) ---------------------------------------------------------------------
# Technical names stay as they are in both languages (GPU and model names, LoRA, QLoRA, ZeRO, FSDP, DDP,
# NVLink, PCIe, InfiniBand, bf16, AdamW, USD, config keys such as gradient_checkpointing): they are what the
# user types into a training config or reads on a provider's page. "Gradient checkpointing" is said in
# Russian ("пересчёт активаций") with the config key next to it, so the user knows which switch it is.


# -- the catalog: code -> {"en", "ru"} (entries in gpuwork/present/catalog/, one module per code prefix) --
CATALOG: dict[str, dict[str, str]] = {code: {"en": en, "ru": ru} for code, (en, ru) in _ENTRIES.items()}


# -- rendering ------------------------------------------------------------------------------------------------


def _g(x: float, lang: str) -> str:
    """A number without trailing zeros (up to 3 decimals): 4, 0.05, 989.5."""
    if not math.isfinite(x) or float(x).is_integer():
        return fmt_number(x, lang, 0)
    text = fmt_number(x, lang, 3)
    mark = "," if lang == "ru" else "."
    return text.rstrip("0").rstrip(mark) if mark in text else text


def _pct(x: float | None, lang: str) -> str:
    if x is None:
        return MISSING
    return f"{fmt_number(x * 100, lang, 0)}{SP}%" if lang == "ru" else f"{fmt_number(x * 100, lang, 0)}%"


def _sci(x: float, lang: str) -> str:
    text = f"{x:.3e}"
    return text.replace(".", ",") if lang == "ru" else text


def _count(n: float, lang: str) -> str:
    """A parameter count in words: 6.8 M / 70.55 B (6,8 млн / 70,55 млрд)."""
    if n >= 1e9:
        return render(msg("unit.billions", n=n / 1e9), lang)
    return render(msg("unit.millions", n=n / 1e6), lang)


def _tokens(n: float, lang: str) -> str:
    if n >= 1e9:
        return render(msg("unit.billion_tokens", n=n / 1e9), lang)
    return render(msg("unit.million_tokens", n=n / 1e6), lang)


def _date(value: str | date, lang: str) -> str:
    day = date.fromisoformat(value) if isinstance(value, str) else value
    return render(msg("date", day=day.day, month=day.month, year=day.year), lang)


# placeholder kind -> (value, lang) -> text
_KINDS: dict[str, Callable[[Any, str], str]] = {
    "raw": lambda v, lang: escape_chars(str(v)),  # a text parameter is often what a user typed
    "int": fmt_int,
    "n0": lambda v, lang: fmt_number(v, lang, 0),
    "n1": lambda v, lang: fmt_number(v, lang, 1),
    "n2": lambda v, lang: fmt_number(v, lang, 2),
    "n3": lambda v, lang: fmt_number(v, lang, 3),
    "g": _g,
    "sci": _sci,
    "pct": _pct,
    "gib": fmt_gib,
    "size": fmt_size,
    "gb": fmt_size_short,
    "gb2": lambda v, lang: f"{fmt_number(v / GB, lang, 2)}{SP}{unit('GB', lang)}",
    "rate": fmt_rate,
    "dur": fmt_duration,
    "usd": fmt_usd,
    "bn": lambda v, lang: fmt_number(v / 1e9, lang, 2),
    "count": _count,
    "tokens": _tokens,
    "date": _date,
    "list": lambda v, lang: ", ".join(_plain(item, lang, "list") for item in v),
}
_NUMERIC = {"int", "n0", "n1", "n2", "n3", "g", "sci", "count", "tokens", "bn"}


@functools.lru_cache(maxsize=4096)
def _parsed(template: str) -> tuple[tuple[str, str | None, str], ...]:
    return tuple((literal, name, spec or "") for literal, name, spec, _conv in string.Formatter().parse(template))


def placeholders(template: str) -> dict[str, set[str]]:
    """Placeholder name -> the kinds it is shown with, in one template."""
    out: dict[str, set[str]] = {}
    for _literal, name, spec in _parsed(template):
        if name is not None:
            out.setdefault(name, set()).add(spec)
    return out


def _plain(value: Any, lang: str, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, Msg):
        return render(value, lang)
    if isinstance(value, tuple):
        return "; ".join(_plain(item, lang, where) for item in value)
    if isinstance(value, bool):
        raise MessageError(f"{where} holds a bool: say it with its own code, not as text")
    if isinstance(value, int):
        return fmt_int(value, lang)
    if isinstance(value, float):
        if value.is_integer():
            return fmt_int(value, lang)
        raise MessageError(f"{where} holds {value!r}: declare how it is shown (e.g. {{x:n2}}, {{x:gib}})")
    return escape_chars(str(value))


def _show(value: Any, spec: str, lang: str, where: str) -> str:
    if spec.startswith("pl:"):
        forms = spec[3:].split("|")
        if value is None:
            return ""
        if lang == "ru":
            return plural_ru(int(value), *forms)
        return forms[0] if value == 1 else forms[1]
    if spec.startswith("@"):
        return render(Msg(f"{spec[1:]}.{str(value).replace(' ', '_')}"), lang)
    if not spec:
        return _plain(value, lang, where)
    kind = _KINDS.get(spec)
    if kind is None:
        raise MessageError(f"{where}: unknown placeholder kind {spec!r} (kinds: {', '.join(sorted(_KINDS))}, "
                           "pl:..., @...)")
    if value is None and spec in _NUMERIC:
        return MISSING
    return kind(value, lang)


def time_kind_code(kind: str) -> str:
    """Catalog code of a step-time part (``TimeEstimate.breakdown`` key): "launch overhead" ->
    "time.kind.launch_overhead"."""
    return "time.kind." + "".join(c if c.isalnum() else "_" for c in kind.lower()).strip("_").replace("__", "_")


def render(message: Msg, lang: str = "en") -> str:
    """The message in ``lang`` ("en" or "ru"), numbers in that language's form.

    Raises MessageError for a code the catalog does not hold or a parameter the template needs and the
    message lacks; ValueError for an unknown language.
    """
    check_lang(lang)
    entry = CATALOG.get(message.code)
    if entry is None:
        raise MessageError(f"no message {message.code!r} in the catalog (gpuwork.present.messages.CATALOG): add "
                           "it with its English and Russian text")
    params = message.kwargs
    out = []
    for literal, name, spec in _parsed(entry[lang]):
        out.append(literal)
        if name is None:
            continue
        if name not in params:
            raise MessageError(f"message {message.code!r} needs the parameter {name!r}; it has "
                               f"{', '.join(sorted(params)) or 'none'}")
        out.append(_show(params[name], spec, lang, f"message {message.code!r}, placeholder {name!r}"))
    return "".join(out)


def render_all(messages: Iterable[Msg], lang: str = "en") -> list[str]:
    """Each message rendered in ``lang``."""
    return [render(m, lang) for m in messages]


def text(code: str, lang: str = "en", **params: Any) -> str:
    """Render a catalog entry straight from its code: ``text("chart.runs_out", "ru")``."""
    return render(msg(code, **params), lang)


def render_dict(messages: Mapping[str, Msg], lang: str = "en") -> dict[str, str]:
    """Each value rendered in ``lang`` (e.g. a profile match's rejected profiles)."""
    return {key: render(m, lang) for key, m in messages.items()}


__all__ = ["CATALOG", "LANGS", "MessageError", "placeholders", "render", "render_all",
           "render_dict", "text"]


errors.set_renderer(render)  # coded errors (PlanError(..., msg(...))) render through this catalog
