"""The app's kernel manager: Voila's kernels (one per page, plus the preheated pool), bounded and fair.

Voila refuses its own page limit (``prelaunch_hook``) together with its preheated pool, and the pool is what makes
the first chart appear quickly (the notebook has run before the visitor comes). So the limits live here, where
every kernel starts or is handed to a page:

- at most ``max_pages`` kernels at once, pool included. A page that needs a kernel at the limit first takes the
  place of a kernel whose page has gone (closed, or never connected within ``page_connect_timeout``), the one gone
  longest; with none, the visitor gets a page "503: try again in a few minutes". A kernel for the pool (started
  with ``VOILA_PREHEAT=True`` in its environment) takes such a place too, else waits until there is room; a visitor
  who takes a pool entry that is still waiting is served when it starts;
- at most ``max_pages_per_visitor`` open pages per visitor (a browser: a signed cookie, ``VISITOR_COOKIE``, set
  on its first page), so one visitor with many tabs cannot take every place. The refused tab gets a page, in
  English and Russian, saying to close a tab; it takes no kernel. A tab counts while its page is connected or
  loading; a closed tab frees its place at once (its kernel is culled later, or taken over at the limit).

Culling (``MappingKernelManager.cull_*``) never takes a kernel that was handed to a page before the page connects
(``page_connect_timeout``): Voila's pool shields its own kernels only while they are in the pool, and an idle pool
kernel handed to a page was culled in the moment before its page connected (about one load in twenty at the app's
settings, the page stuck at "Loading widget..."). A connected page is never culled (``cull_connected`` False); a
page that has gone is culled ``cull_idle_timeout`` after it left.

Configured through Voila's ``VoilaConfiguration.multi_kernel_manager_class`` (``gpuwork.cli.app.voila_argv``);
Voila's preheating subclass derives from this class, so the traits reach it too, and ``__init_subclass__`` counts
the kernels it hands out from the pool. The request being served comes from jupyter_server's ``CallContext``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import html
import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from jupyter_server.base.call_context import CallContext
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.web import Finish, HTTPError
from traitlets import Float, Int

from gpuwork.cli.app import MAX_PAGES, MAX_PAGES_PER_VISITOR
from gpuwork.present.messages import text

VISITOR_COOKIE = "gpuwork_visitor"


def _utcnow() -> dt.datetime:
    """The clock jupyter_server keeps ``kernel.last_activity`` in (timezone-aware UTC)."""
    return dt.datetime.now(dt.UTC)


@dataclass
class _Page:
    """A kernel handed to a page."""

    visitor: str | None  # None: not handed through a page request (the Python API)
    handed_at: float  # time.monotonic()
    connected: bool = False  # the page has connected at least once
    left_at: float | None = None  # when its last connection closed; None while connected or loading


def refusal_page(code: str, status: int, **fields: Any) -> str:
    """A small HTML page with the catalog message ``code`` in English and in Russian (the server does not know
    the visitor's language)."""
    parts = [f'<p lang="{lang}">{html.escape(text(code, lang, **fields))}</p>' for lang in ("en", "ru")]
    title = html.escape(f"{status}: {text('app.refused_title', 'en')} / {text('app.refused_title', 'ru')}")
    return ('<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>' + title + '</title>'
            '<style>body{font-family:sans-serif;max-width:42em;margin:4em auto;line-height:1.5}</style></head>'
            '<body><h1>' + title + '</h1>' + "".join(parts) + '</body></html>\n')


KERNEL_WATCH_S = 10  # how often a page asks whether its kernel is still there
# Appended to every page the app serves: every KERNEL_WATCH_S a page asks the server for its kernel; when the
# answer is "no such kernel" (culled, shut down, the server restarted), or the server has not answered three times,
# a banner says so in both languages with a link that reloads the page (a reload could also be refused at the page
# limits, so the page does not reload by itself).
_WATCH = """<script>
(function () {
  var url = %(url)s, said = false, misses = 0;
  function say() {
    if (said) { return; }
    said = true;
    clearInterval(timer);
    var box = document.createElement("div");
    box.className = "gpuwork-kernel-lost";
    box.setAttribute("role", "alert");
    box.style.cssText = "position:fixed;top:0;left:0;right:0;z-index:100000;padding:12px 16px;" +
      "background:#b00020;color:#fff;font:15px/1.5 sans-serif";
    [%(en)s, %(ru)s].forEach(function (line) {
      var p = document.createElement("div");
      p.textContent = line;
      box.appendChild(p);
    });
    var again = document.createElement("a");
    again.href = window.location.href;
    again.textContent = %(reload)s;
    again.style.cssText = "color:#fff;text-decoration:underline;font-weight:bold";
    box.appendChild(again);
    document.body.appendChild(box);
  }
  function check() {
    fetch(url, {credentials: "same-origin", cache: "no-store"}).then(function (r) {
      misses = 0;
      if (r.status === 404) { say(); }
    }, function () {
      misses += 1;
      if (misses >= 3) { say(); }
    });
  }
  var timer = setInterval(check, %(every_ms)d);
})();
</script>
"""


def kernel_watch_script(kernel_id: str, base_url: str) -> str:
    """The script that makes a page say so when it has lost its kernel (see ``_WATCH``)."""
    def js(value: str) -> str:  # a JSON string that cannot end the script element
        return json.dumps(value).replace("</", "<\\/")

    fields = {"url": js(f"{base_url.rstrip('/')}/api/kernels/{kernel_id}"), "en": js(text("app.kernel_lost", "en")),
              "ru": js(text("app.kernel_lost", "ru")),
              "reload": js(f"{text('app.reload', 'en')} / {text('app.reload', 'ru')}"),
              "every_ms": KERNEL_WATCH_S * 1000}
    return _WATCH % fields


class PagesKernelManager(AsyncMappingKernelManager):
    """``AsyncMappingKernelManager`` with a bound on the kernels it runs at once and on the pages per visitor,
    and culling that spares a kernel whose page has not connected yet."""

    max_pages = Int(MAX_PAGES, config=True, help="kernels at once (pages and the preheated pool)")
    max_pages_per_visitor = Int(MAX_PAGES_PER_VISITOR, config=True,
                                help="open pages (tabs) of one visitor at once")
    page_connect_timeout = Float(300.0, config=True,
                                 help="seconds a kernel handed to a page waits for the page to connect, never culled")
    room_poll_s = Float(1.0, config=True, help="how often a pool kernel waiting for room looks again")

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._starting = asyncio.Lock()  # one check-and-start at a time: two starts never take the last place
        self._pages: dict[str, _Page] = {}  # kernel id -> the page it was handed to
        self._arriving: Counter[str] = Counter()  # visitor -> pages admitted whose kernel is still on its way

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Voila's preheating subclass hands a pool kernel to a page in get_rendered_notebook: admit the visitor
        # before the pool is touched, and record the page in the same step as the hand-over (no await between, so
        # the culler cannot run in between)
        super().__init_subclass__(**kwargs)
        take = cls.__dict__.get("get_rendered_notebook")
        if take is None:
            return

        @functools.wraps(take)
        async def get_rendered_notebook(self: PagesKernelManager, *args: Any, **kw: Any) -> Any:
            visitor = await self._admit()
            try:
                render_task, rendered, kernel_id = await take(self, *args, **kw)
                self._hand(kernel_id, visitor)
            finally:
                self._arrived(visitor)
            return render_task, rendered, kernel_id

        cls.get_rendered_notebook = get_rendered_notebook  # type: ignore[attr-defined]  # voila's mixin, at run time

    # -- visitors -------------------------------------------------------------------------------------------------

    def _visitor(self, handler: Any) -> str:
        """The visitor of a page request: its cookie, or a new one set on the response."""
        raw = handler.get_signed_cookie(VISITOR_COOKIE)
        if raw:
            return raw.decode("ascii", "replace")
        visitor = uuid.uuid4().hex
        handler.set_signed_cookie(VISITOR_COOKIE, visitor, expires_days=None, httponly=True, samesite="Lax")
        return visitor

    def _open(self, page: _Page) -> bool:
        """Does ``page`` hold its place: connected, or loading within ``page_connect_timeout``?"""
        if page.connected:
            return page.left_at is None
        return time.monotonic() - page.handed_at < self.page_connect_timeout

    def pages_of(self, visitor: str) -> int:
        """Open pages of ``visitor``, counting those whose kernel is on its way."""
        held = sum(1 for kid, page in self._pages.items() if page.visitor == visitor and kid in self and self._open(page))
        return held + self._arriving[visitor]

    async def _admit(self) -> str | None:
        """The visitor of the page being served, its place reserved (release with ``_arrived``); a visitor at its
        limit is answered with a page saying to close a tab. None outside a page request."""
        handler = CallContext.get(CallContext.JUPYTER_HANDLER)
        if handler is None:
            return None
        visitor = self._visitor(handler)
        limit = min(self.max_pages_per_visitor, self.max_pages)
        if self.pages_of(visitor) >= limit:
            self.log.warning("Refused a page: visitor %s already has %d pages open", visitor[:8], limit)
            self._refuse(429, "error.app.too_many_tabs", n=limit)
        self._arriving[visitor] += 1
        return visitor

    def _arrived(self, visitor: str | None) -> None:
        if visitor is not None:
            self._arriving[visitor] -= 1
            if self._arriving[visitor] <= 0:
                del self._arriving[visitor]

    def _hand(self, kernel_id: str, visitor: str | None) -> None:
        """``kernel_id`` now serves a page: kept until the page connects, its idle clock restarts, and the page
        gets the script that says so when its kernel is gone."""
        self._pages[kernel_id] = _Page(visitor, time.monotonic())
        kernel = self._kernels.get(kernel_id)
        if kernel is not None:
            kernel.last_activity = _utcnow()
        handler = CallContext.get(CallContext.JUPYTER_HANDLER)
        if handler is not None:
            finish = handler.finish

            def finish_with_watch(chunk: Any = None) -> Any:
                # Voila's page handler streams the page and leaves finish() to tornado: the script goes last
                if handler.get_status() == 200:
                    handler.write(kernel_watch_script(kernel_id, handler.base_url))
                return finish(chunk)

            handler.finish = finish_with_watch

    def _refuse(self, status: int, code: str, **fields: Any) -> None:
        """End the request being served with ``status`` and a page saying ``code`` in both languages (an HTTPError
        with the English text outside a page request)."""
        handler = CallContext.get(CallContext.JUPYTER_HANDLER)
        if handler is None:
            raise HTTPError(status, reason=text(code, "en", **fields))
        try:  # the English text as the status line's reason too, where HTTP allows it
            handler.set_status(status, reason=text(code, "en", **fields))
        except ValueError:
            handler.set_status(status)
        handler.set_header("Content-Type", "text/html; charset=UTF-8")
        handler.set_header("Retry-After", "60")
        raise Finish(refusal_page(code, status, **fields))

    # -- connections and culling -------------------------------------------------------------------------------

    def notify_connect(self, kernel_id: str) -> None:
        super().notify_connect(kernel_id)
        page = self._pages.get(kernel_id)
        if page is not None:
            page.connected, page.left_at = True, None
        kernel = self._kernels.get(kernel_id)
        if kernel is not None:
            kernel.last_activity = _utcnow()

    def notify_disconnect(self, kernel_id: str) -> None:
        super().notify_disconnect(kernel_id)
        page = self._pages.get(kernel_id)
        if page is not None and self._kernel_connections.get(kernel_id, 0) <= 0:
            page.left_at = time.monotonic()
            kernel = self._kernels.get(kernel_id)
            if kernel is not None:  # culled cull_idle_timeout after the page left, not after it last did something
                kernel.last_activity = _utcnow()

    async def cull_kernel_if_idle(self, kernel_id: str) -> None:
        page = self._pages.get(kernel_id)
        if page is not None and not page.connected and self._open(page):
            return  # handed to a page that is still loading
        kernel = self._kernels.get(kernel_id)
        if page is not None and not page.connected and page.left_at is None and kernel is not None:
            # handed to a page that never connected within page_connect_timeout: nobody will use it, and a
            # kernel no client ever talked to stays "starting", which jupyter_server's idle check passes over
            self.log.info("gpuwork: culling kernel %s: its page never connected", kernel_id)
            await self.shutdown_kernel(kernel_id)
            return
        if kernel is None or not kernel.trait_has_value("last_activity"):
            return  # still starting: jupyter_server's check would fail on its unset last_activity (logged traceback)
        await super().cull_kernel_if_idle(kernel_id)

    # jupyter_client types these as synchronous; jupyter_server's async manager overrides them with coroutines
    async def shutdown_kernel(self, kernel_id: str, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self._pages.pop(kernel_id, None)
        await super().shutdown_kernel(kernel_id, *args, **kwargs)

    # -- starting kernels ---------------------------------------------------------------------------------------

    def _gone(self) -> str | None:
        """The kernel whose page has been gone longest (closed, or never connected in time), if any."""
        gone = [(page.left_at if page.connected else page.handed_at, kid)
                for kid, page in self._pages.items() if kid in self and not self._open(page)
                and self._kernel_connections.get(kid, 0) <= 0]
        return min(gone)[1] if gone else None

    async def start_kernel(self, *args: Any, **kwargs: Any) -> str:  # type: ignore[override]
        for_pool = (kwargs.get("env") or {}).get("VOILA_PREHEAT") == "True"
        visitor = None if for_pool else await self._admit()
        try:
            while True:
                async with self._starting:
                    running = len(self)
                    if running >= self.max_pages and (gone := self._gone()) is not None:
                        self.log.info("At the page limit: shutting down kernel %s, whose page has gone", gone)
                        await self.shutdown_kernel(gone, now=True)
                        running = len(self)
                    if running < self.max_pages:
                        kernel_id = await super().start_kernel(*args, **kwargs)
                        if not for_pool:
                            self._hand(kernel_id, visitor)
                        return kernel_id
                if not for_pool:
                    self._refuse(503, "error.app.too_many_pages", n=running)
                await asyncio.sleep(self.room_poll_s)
        finally:
            self._arrived(visitor)


__all__ = ["KERNEL_WATCH_S", "VISITOR_COOKIE", "PagesKernelManager", "kernel_watch_script", "refusal_page"]
