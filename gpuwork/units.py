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


def _missing(x: float | None) -> str | None:
    if x is None:
        return MISSING
    if isinstance(x, float) and not math.isfinite(x):
        return INFINITE
    return None


def fmt_gib(n_bytes: float | None, lang: str = "en", decimals: int = 1) -> str:
    """Binary gibibytes, as PyTorch and nvidia-smi count memory: ``1.5 GiB``."""
    return _missing(n_bytes) or f"{fmt_number(n_bytes / GIB, lang, decimals)}{SP}{unit('GiB', lang)}"


def fmt_memory(n_bytes: float | None, lang: str = "en") -> str:
    """GiB from one GiB up (two decimals), MiB below: ``12.34 GiB``, ``512.0 MiB``."""
    if (text := _missing(n_bytes)) is not None:
        return text
    if abs(n_bytes) >= GIB:
        return fmt_gib(n_bytes, lang, 2)
    return f"{fmt_number(n_bytes / MIB, lang, 1)}{SP}{unit('MiB', lang)}"


def fmt_size(n_bytes: float | None, lang: str = "en") -> str:
    """Decimal GB/TB, as disks and datasets are sold: ``200.0 GB``, ``1.50 TB``."""
    if (text := _missing(n_bytes)) is not None:
        return text
    if n_bytes >= TB:
        return f"{fmt_number(n_bytes / TB, lang, 2)}{SP}{unit('TB', lang)}"
    return f"{fmt_number(n_bytes / GB, lang, 1)}{SP}{unit('GB', lang)}"


def fmt_size_short(n_bytes: float | None, lang: str = "en") -> str:
    """Decimal GB/TB as requests state them, whole when round or from 10 up: ``200 GB``, ``1.5 TB``, ``1,5 ТБ``."""
    if n_bytes is None:
        return MISSING
    name, value = ("TB", n_bytes / TB) if n_bytes >= TB else ("GB", n_bytes / GB)
    if value >= 10 or float(value).is_integer():
        number = fmt_number(round(value), lang, 0)
    else:
        number = fmt_number(value, lang, 1)
    return f"{number}{SP}{unit(name, lang)}"


def fmt_rate(bytes_s: float, lang: str = "en") -> str:
    """Bytes per second in decimal units: ``1.2 GB/s``."""
    for name, size in (("GB/s", GB), ("MB/s", MB), ("kB/s", KB)):
        if bytes_s >= size:
            return f"{fmt_number(bytes_s / size, lang, 1)}{SP}{unit(name, lang)}"
    return f"{fmt_number(bytes_s, lang, 0)}{SP}{unit('B/s', lang)}"


def fmt_duration(seconds: float | None, lang: str = "en") -> str:
    """A run's length: minutes under an hour, hours (one decimal under 10), days added past three days."""
    if (text := _missing(seconds)) is not None:
        return text
    hours = seconds / HOUR_S
    if hours < 1:
        return f"{fmt_number(seconds / MINUTE_S, lang, 0)}{SP}{unit('min', lang)}"
    out = f"{fmt_number(hours, lang, 1 if hours < 10 else 0)}{SP}{unit('h', lang)}"
    if hours > 72:
        out += f" ({fmt_number(hours / 24, lang, 0)}{SP}{unit('days', lang)})"
    return out


def fmt_seconds(seconds: float | None, lang: str = "en") -> str:
    """A short interval (a step, a save): ``0.215 s``, ``12.5 s``, ``3.2 min``, ``1.1 h``."""
    if (text := _missing(seconds)) is not None:
        return text
    if seconds >= HOUR_S:
        return f"{fmt_number(seconds / HOUR_S, lang, 1)}{SP}{unit('h', lang)}"
    if seconds >= MINUTE_S:
        return f"{fmt_number(seconds / MINUTE_S, lang, 1)}{SP}{unit('min', lang)}"
    return f"{fmt_number(seconds, lang, 3 if seconds < 10 else 1)}{SP}{unit('s', lang)}"


def fmt_usd(x: float | None, lang: str = "en") -> str:
    """Dollars: whole from $100 up, cents below; Russian writes the currency after: ``1 250 USD``."""
    if (text := _missing(x)) is not None:
        return text
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


__all__ = [
    "DAY_S", "GB", "GIB", "HOUR_S", "INFINITE", "KB", "KIB", "LANGS", "MB", "MIB", "MINUTE_S", "MISSING", "SP", "TB",
    "TIB", "check_lang", "fmt_duration", "fmt_gib", "fmt_int", "fmt_memory", "fmt_number", "fmt_rate",
    "fmt_seconds", "fmt_size", "fmt_size_short", "fmt_usd", "plural_ru", "unit",
]
