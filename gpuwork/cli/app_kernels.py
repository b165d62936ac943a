"""The app's kernel manager: Voila's kernels (one per page, plus the preheated pool), at most ``max_pages`` at once.

Voila refuses its own page limit (``prelaunch_hook``) together with its preheated pool, and the pool is what makes
the first chart appear quickly (the notebook has run before the visitor comes). So the limit lives here, where
every kernel starts, for both:

- a visitor's page (Voila starts a kernel for it when the pool is empty or preheating is off): at the limit the
  visitor is answered "503: try again in a few minutes", and no kernel starts;
- a kernel for the pool (started with ``VOILA_PREHEAT=True`` in its environment): at the limit it waits until a
  page closes (its kernel culled) and starts then. A visitor who takes a pool entry that is still waiting is
  served when it starts: a line, in arrival order, instead of a refusal.

Configured through Voila's ``VoilaConfiguration.multi_kernel_manager_class`` (``gpuwork.cli.app.voila_argv``);
Voila's preheating subclass derives from this class, so ``PagesKernelManager.max_pages`` reaches it too.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado.web import HTTPError
from traitlets import Float, Int

from gpuwork.cli.app import MAX_PAGES
from gpuwork.present.messages import text


class PagesKernelManager(AsyncMappingKernelManager):
    """``AsyncMappingKernelManager`` with a bound on the kernels it runs at once."""

    max_pages = Int(MAX_PAGES, config=True, help="kernels at once (pages and the preheated pool)")
    room_poll_s = Float(1.0, config=True, help="how often a pool kernel waiting for room looks again")

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._starting = asyncio.Lock()  # one check-and-start at a time: two starts never take the last place

    async def start_kernel(self, *args: Any, **kwargs: Any) -> str:
        for_pool = (kwargs.get("env") or {}).get("VOILA_PREHEAT") == "True"
        while True:
            async with self._starting:
                running = len(self)
                if running < self.max_pages:
                    return await super().start_kernel(*args, **kwargs)
            if not for_pool:
                raise HTTPError(503, reason=text("error.app.too_many_pages", n=running))
            await asyncio.sleep(self.room_poll_s)


__all__ = ["PagesKernelManager"]
