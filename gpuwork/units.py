"""Units, defined once: bytes, seconds and dollars internally; GiB, GB, hours and $ only on display.

Display helpers take the language (``"en"`` or ``"ru"``): Russian groups digits with a space and uses a
decimal comma (``8 294``, ``1,5 ГиБ``), English uses ``8,294`` and ``1.5 GiB``. A missing value shows
as an en dash, an infinite one as ``∞``.

    >>> fmt_gib(3 * GIB / 2, "ru")
    '1,5 ГиБ'
    >>> fmt_int(8294, "ru")
    '8 294'
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeGuard

from gpuwork.errors import PlanError
from gpuwork.message import msg

KIB = 2**10
MIB = 2**20
GIB = 2**30  # what PyTorch, nvidia-smi ("MiB") and the memory estimate count in
TIB = 2**40
KB = 10**3
MB = 10**6
GB = 10**9  # vendors' and disks' decimal gigabyte (card labels, dataset and disk sizes)
TB = 10**12
MINUTE_S = 60.0
HOUR_S = 3600.0
DAY_S = 86400.0

LANGS = ("en", "ru")
SP = " "  # between a number and its unit and between Russian digit groups (a plain space: pasteable anywhere)
MISSING = "–"
INFINITE = "∞"

_UNITS = {
    "en": {"GiB": "GiB", "MiB": "MiB", "GB": "GB", "TB": "TB", "MB": "MB", "s": "s", "min": "min", "h": "h",
           "days": "days", "GB/s": "GB/s", "MB/s": "MB/s", "kB/s": "kB/s", "B/s": "B/s"},
    "ru": {"GiB": "ГиБ", "MiB": "МиБ", "GB": "ГБ", "TB": "ТБ", "MB": "МБ", "s": "с", "min": "мин", "h": "ч",
           "days": "дн.", "GB/s": "ГБ/с", "MB/s": "МБ/с", "kB/s": "кБ/с", "B/s": "Б/с"},
}


def check_lang(lang: str) -> str:
    if lang not in LANGS:
        raise ValueError(f"lang={lang!r} must be one of {', '.join(LANGS)}")
    return lang


def unit(name: str, lang: str = "en") -> str:
    """A unit's symbol in a language: ``unit("GiB", "ru") == "ГиБ"``."""
    return _UNITS[check_lang(lang)][name]


def fmt_number(x: float, lang: str = "en", decimals: int = 0) -> str:
    """A number with the language's digit groups and decimal mark."""
    if not math.isfinite(x):
        return INFINITE
    text = f"{x:,.{decimals}f}"
    return text.replace(",", SP).replace(".", ",") if check_lang(lang) == "ru" else text


def fmt_int(n: float, lang: str = "en") -> str:
    return fmt_number(round(n), lang, 0)


def _finite(x: float) -> bool:
    # ints are always finite (and may be too large for math.isfinite)
    return isinstance(x, int) or math.isfinite(x)


def _gap(x: float | None) -> str:
    """What stands for a value with no number to show: missing (None) or not finite."""
    return MISSING if x is None else INFINITE


def _in_unit(value: float, name: str, lang: str, decimals: int) -> str:
    """A value already in unit ``name``, with the language's digits and symbol: ``1.5 GiB``, ``1,5 ГиБ``."""
    return f"{fmt_number(value, lang, decimals)}{SP}{unit(name, lang)}"


def fmt_gib(n_bytes: float | None, lang: str = "en", decimals: int = 1) -> str:
    """Binary gibibytes, as PyTorch and nvidia-smi count memory: ``1.5 GiB``."""
    if n_bytes is None or not _finite(n_bytes):
        return _gap(n_bytes)
    return _in_unit(n_bytes / GIB, "GiB", lang, decimals)


def fmt_memory(n_bytes: float | None, lang: str = "en") -> str:
    """GiB from one GiB up (two decimals), MiB below: ``12.34 GiB``, ``512.0 MiB``."""
    if n_bytes is None or not _finite(n_bytes):
        return _gap(n_bytes)
    if abs(n_bytes) >= GIB:
        return fmt_gib(n_bytes, lang, 2)
    return _in_unit(n_bytes / MIB, "MiB", lang, 1)


def fmt_size(n_bytes: float | None, lang: str = "en") -> str:
    """Decimal GB/TB, as disks and datasets are sold: ``200.0 GB``, ``1.50 TB``."""
    if n_bytes is None or not _finite(n_bytes):
        return _gap(n_bytes)
    if n_bytes >= TB:
        return _in_unit(n_bytes / TB, "TB", lang, 2)
    return _in_unit(n_bytes / GB, "GB", lang, 1)


def fmt_size_short(n_bytes: float | None, lang: str = "en") -> str:
    """Decimal GB/TB as requests state them, whole when round or from 10 up: ``200 GB``, ``1.5 TB``, ``1,5 ТБ``."""
    if n_bytes is None:
        return MISSING
    name, value = ("TB", n_bytes / TB) if n_bytes >= TB else ("GB", n_bytes / GB)
    if value >= 10 or float(value).is_integer():
        return _in_unit(round(value), name, lang, 0)
    return _in_unit(value, name, lang, 1)


def fmt_rate(bytes_s: float, lang: str = "en") -> str:
    """Bytes per second in decimal units: ``1.2 GB/s``."""
    for name, size in (("GB/s", GB), ("MB/s", MB), ("kB/s", KB)):
        if bytes_s >= size:
            return _in_unit(bytes_s / size, name, lang, 1)
    return _in_unit(bytes_s, "B/s", lang, 0)


def fmt_duration(seconds: float | None, lang: str = "en") -> str:
    """A run's length: minutes under an hour, hours (one decimal under 10), days added past three days."""
    if seconds is None or not _finite(seconds):
        return _gap(seconds)
    hours = seconds / HOUR_S
    if hours < 1:
        return _in_unit(seconds / MINUTE_S, "min", lang, 0)
    out = _in_unit(hours, "h", lang, 1 if hours < 10 else 0)
    if hours > 72:
        out += f" ({_in_unit(hours / 24, 'days', lang, 0)})"
    return out


def fmt_seconds(seconds: float | None, lang: str = "en") -> str:
    """A short interval (a step, a save): ``0.215 s``, ``12.5 s``, ``3.2 min``, ``1.1 h``."""
    if seconds is None or not _finite(seconds):
        return _gap(seconds)
    if seconds >= HOUR_S:
        return _in_unit(seconds / HOUR_S, "h", lang, 1)
    if seconds >= MINUTE_S:
        return _in_unit(seconds / MINUTE_S, "min", lang, 1)
    return _in_unit(seconds, "s", lang, 3 if seconds < 10 else 1)


def fmt_usd(x: float | None, lang: str = "en") -> str:
    """Dollars: whole from $100 up, cents below; Russian writes the currency after: ``1 250 USD``."""
    if x is None or not _finite(x):
        return _gap(x)
    decimals = 0 if abs(x) >= 100 else 2
    if check_lang(lang) == "ru":
        return f"{fmt_number(x, lang, decimals)}{SP}USD"
    return f"${fmt_number(x, lang, decimals)}"


def plural_ru(n: int, one: str, few: str, many: str) -> str:
    """Russian noun form for a count: 1 день, 2 дня, 5 дней, 11 дней, 21 день."""
    n = abs(int(n))
    if n % 10 == 1 and n % 100 != 11:
        return one
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return few
    return many


# -- reading numbers that people type -------------------------------------------------------------------------

# Sizes: decimal kB/MB/GB/TB/PB as disks and datasets are sold, binary KiB/MiB/GiB/TiB as memory is counted.
_SIZE_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, "kb": KB, "mb": MB, "gb": GB, "tb": TB, "pb": 10**15,
               "kib": KIB, "mib": MIB, "gib": GIB, "tib": TIB}
# Counts (tokens, rows): k, M, B (or G), T; a trailing word such as "tokens" is allowed and ignored.
_COUNT_UNITS = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
_COUNT_WORDS = ("tokens", "token", "tok", "rows", "sequences", "samples")
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?"
# digits grouped by "_", a space, a thin space or (English) commas of exactly three digits: 4_096, 4 096, 4,096
_GROUPED = re.compile(r"[+-]?\d{1,3}(?:([,_ \u2009\u202f])\d{3})(?:\1\d{3})*(?:\.\d+)?")


def _split_number(text: str) -> tuple[str, str] | None:
    """("4.5", "gb") from "4.5 GB": the number (digit groups removed) and the lower-case unit, or None."""
    s = text.strip().lower()
    grouped = _GROUPED.match(s)
    if grouped and grouped.group(1):
        number, rest = re.sub(r"[,_ \u2009\u202f]", "", grouped.group(0)), s[grouped.end():]
    else:
        found = re.match(_NUMBER, s)
        if not found:
            return None
        number, rest = found.group(0), s[found.end():]
    return number, rest.strip()


def _exact(number: str, factor: int) -> int | float:
    """``number`` x ``factor`` in decimal arithmetic: exact for whole results ("1.1k" is 1100, "4611686019B" all
    its digits), a float when fractional, infinity when it overflows a float (as "1e400" does)."""
    value = Decimal(number) * factor
    if not math.isfinite(float(value)):
        return math.inf
    return int(value) if value == value.to_integral_value() else float(value)


# -- ranges ------------------------------------------------------------------------------------------------------

# what is wrong with a number, as Range.problem says it; each surface words it in its own catalog entry
NOT_NUMBER, NOT_WHOLE, NOT_FINITE, BELOW, ABOVE = "number", "whole", "finite", "below", "above"


@dataclass(frozen=True)
class Range:
    """The values a number may take, both ends given: the one range mechanism of plans, flags and records.

    ``low`` / ``high`` are inclusive unless ``low_open`` / ``high_open``; ``whole``: an integer (a bool is not a
    number); ``nonfinite``: NaN and +-inf pass too (a loss that diverged); ``infinite``: +inf passes too;
    ``unit``: what the number counts, for a message that names it."""

    low: float
    high: float
    low_open: bool = False
    high_open: bool = False
    whole: bool = False
    nonfinite: bool = False
    infinite: bool = False
    unit: str = ""

    def problem(self, value: Any) -> str | None:
        """None when ``value`` lies in the range, else what is wrong: NOT_NUMBER, NOT_WHOLE, NOT_FINITE, BELOW or
        ABOVE (checked in that order)."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return NOT_NUMBER
        if self.whole and not isinstance(value, int):
            return NOT_WHOLE
        if isinstance(value, float) and not math.isfinite(value):
            return None if self.nonfinite or (self.infinite and value == math.inf) else NOT_FINITE
        if value < self.low or (self.low_open and value == self.low):
            return BELOW
        if value > self.high or (self.high_open and value == self.high):
            return ABOVE
        return None


def _checked(value: float, text: Any, field: str, *, integer: bool, minimum: float | None,
             maximum: float | None, strict: bool) -> int | float:
    if not math.isfinite(value):
        raise PlanError(field, msg("error.input.not_finite", field=field, value=repr(text)))
    if integer:
        if not float(value).is_integer():
            raise PlanError(field, msg("error.input.not_whole", field=field, value=repr(text)))
        value = int(value)
    bounds = Range(-math.inf if minimum is None else minimum, math.inf if maximum is None else maximum,
                   low_open=strict)
    problem = bounds.problem(value)
    if problem == BELOW:
        code = "error.input.above" if strict else "error.input.at_least"
        raise PlanError(field, msg(code, field=field, value=repr(text), minimum=minimum))
    if problem == ABOVE:
        raise PlanError(field, msg("error.input.at_most", field=field, value=repr(text), maximum=maximum))
    return value


def parse_number(text: Any, field: str = "value", *, integer: bool = False, minimum: float | None = None,
                 maximum: float | None = None, strict: bool = False) -> int | float:
    """A plain number typed by a person ("1e4", "0.5", "4 096"), checked: finite, whole if ``integer``, in range.

    ``strict`` makes ``minimum`` exclusive. Raises PlanError naming ``field`` and the fix; an int or float
    given as such is checked the same way (a bool is not a number).

        >>> parse_number("1e4", "seq_len", integer=True)
        10000
    """
    if isinstance(text, bool):
        raise PlanError(field, msg("error.input.not_number", field=field, value=repr(text)))
    if isinstance(text, int | float):
        return _checked(text, text, field, integer=integer, minimum=minimum, maximum=maximum, strict=strict)
    parts = _split_number(str(text)) if isinstance(text, str) else None
    if parts is None or parts[1]:
        if isinstance(text, str) and text.strip().lower() in ("nan", "inf", "+inf", "-inf", "infinity", "-infinity"):
            raise PlanError(field, msg("error.input.not_finite", field=field, value=repr(text)))
        code = "error.input.not_whole_text" if integer else "error.input.not_number"
        raise PlanError(field, msg(code, field=field, value=repr(text)))
    return _checked(float(parts[0]), text, field, integer=integer, minimum=minimum, maximum=maximum, strict=strict)


def parse_count(text: Any, field: str = "count", *, minimum: float | None = 1, maximum: float | None = None) -> int:
    """A whole count with an optional k / M / B / T suffix: "4096", "4k", "1.5B", "2M tokens", "1e9" -> int.

    A fractional result ("4096.5", "1.5") is an error, never rounded; so is anything that does not parse
    ("200 MB" is a size, not a count). Raises PlanError naming ``field`` and what to write instead.

        >>> parse_count("2M tokens")
        2000000
    """
    if isinstance(text, bool) or not isinstance(text, int | float | str):
        raise PlanError(field, msg("error.input.not_count", field=field, value=repr(text)))
    if isinstance(text, int | float):
        return int(_checked(text, text, field, integer=True, minimum=minimum, maximum=maximum, strict=False))
    parts = _split_number(text)
    if parts is not None:
        number, rest = parts
        for word in _COUNT_WORDS:
            if rest.endswith(word):
                rest = rest[: -len(word)].strip()
                break
        if rest in _COUNT_UNITS:
            return int(_checked(_exact(number, _COUNT_UNITS[rest]), text, field, integer=True, minimum=minimum,
                                maximum=maximum, strict=False))
    if text.strip().lower() in ("nan", "inf", "+inf", "-inf", "infinity"):
        raise PlanError(field, msg("error.input.not_finite", field=field, value=repr(text)))
    raise PlanError(field, msg("error.input.not_count", field=field, value=repr(text)))


def parse_size(text: Any, field: str = "size", *, minimum: float | None = 1, maximum: float | None = None) -> int:
    """Bytes from a size with a unit: "200MB", "1.5 GB", "500MiB", "2e11" (bytes) -> int (rounded to a byte).

    Decimal kB/MB/GB/TB/PB and binary KiB/MiB/GiB/TiB; a bare number is bytes. Raises PlanError naming
    ``field`` and the units it takes.

        >>> parse_size("1.5 GB")
        1500000000
    """
    if isinstance(text, bool) or not isinstance(text, int | float | str):
        raise PlanError(field, msg("error.input.not_size", field=field, value=repr(text)))
    if isinstance(text, int | float):
        value = float(text)
    else:
        parts = _split_number(text)
        if parts is None or parts[1] not in _SIZE_UNITS:
            if text.strip().lower() in ("nan", "inf", "+inf", "-inf", "infinity"):
                raise PlanError(field, msg("error.input.not_finite", field=field, value=repr(text)))
            raise PlanError(field, msg("error.input.not_size", field=field, value=repr(text)))
        value = _exact(parts[0], _SIZE_UNITS[parts[1]])
    if math.isfinite(value):
        value = round(value)  # a fraction of a byte
    return int(_checked(value, text, field, integer=True, minimum=minimum, maximum=maximum, strict=False))


def is_whole(value: object, minimum: int) -> TypeGuard[int]:
    """Whether ``value`` is an int of at least ``minimum``, a bool not counting (JSON's true is not 1 step)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


__all__ = [
    "ABOVE", "BELOW", "DAY_S", "GB", "GIB", "HOUR_S", "INFINITE", "KB", "KIB", "LANGS", "MB", "MIB", "MINUTE_S",
    "MISSING", "NOT_FINITE", "NOT_NUMBER", "NOT_WHOLE", "SP", "TB", "TIB", "Range", "check_lang", "fmt_duration", "fmt_gib", "fmt_int", "fmt_memory", "fmt_number", "fmt_rate",
    "fmt_seconds", "fmt_size", "fmt_size_short", "fmt_usd", "is_whole", "parse_count", "parse_number", "parse_size", "plural_ru",
    "unit",
]
