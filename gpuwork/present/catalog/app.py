"""Catalog entries "app.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "app"

ENTRIES: dict[str, tuple[str, str]] = {
    "app.refused_title": ("page not opened", "страница не открыта"),
    "app.kernel_lost": (
        "This page has lost its session on the server (the server was restarted, or the page was away too long): "
        "it no longer answers changes. Reload the page to continue.",
        "Эта страница потеряла свой сеанс на сервере (сервер перезапущен или страница слишком долго была без "
        "связи): она больше не отвечает на изменения. Обновите страницу, чтобы продолжить."),
    "app.reload": ("Reload", "Обновить"),
}
