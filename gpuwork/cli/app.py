"""Command line: ``gpuwork app`` — serve the bundled app notebook with Voila, from any directory.

``register(subparsers, lang)`` adds the subcommand to gpuwork's parser.

    gpuwork app                       # http://127.0.0.1:8866, stop with Ctrl+C
    gpuwork app --port 9000

The notebook is the installed package's (``gpuwork.facts.paths.notebooks_dir() / "app.ipynb"``), and
the Voila settings travel on Voila's command line (``VOILA_SETTINGS``, the same as the checkout's
voila.json, which a wheel does not ship): local address, no browser, code sources stripped, idle
kernels culled. Voila runs in this process; SIGINT or SIGTERM stops it and the kernels it started.
Needs the ``app`` extra (``pip install 'gpuwork[app]'``).

First paint: Voila's preheated pool (``--pool``, default 5 kernels) runs the notebook before a visitor comes,
so the page arrives rendered and only the browser's work remains, and the page loads plotly.js's basic bundle
instead of plotly's renderer extension (see VOILA_SETTINGS). Measured on a 2-core machine: first chart 1.6 s for
one visitor (3.4 s with ``--pool 0``), as fast as a Voila page holding one chart and nothing else. A used kernel
is replaced after ``fill_delay`` (10 s): a burst of visitors finds the pool's kernels instead of competing with
their replacements for the CPU. ``--pool 0`` starts a kernel per visitor instead.

Kernels (about 135 MB each) and pages are bounded (``gpuwork.cli.app_kernels.PagesKernelManager``):

- a kernel handed to a page is never culled before the page connects (the pool's kernels, idle for minutes, were
  culled in that moment about one load in twenty, the page stuck at "Loading widget..."); an open page is never
  culled (``cull_connected`` False: its kernel may idle while someone reads) and a busy kernel never
  (``cull_busy`` False); a page that has gone (the tab closed, the network lost) leaves its kernel, culled
  ``cull_idle_timeout`` after it left (2 min, checked every 30 s). Voila's own shutdown on ``beforeunload`` does
  not reach the server from its bundled front end (measured: no request leaves the page), so culling is what
  releases a closed tab's kernel;
- at most ``--max-pages`` kernels at once, pool included (default 40, about 6 GB): a new page first takes the
  place of a kernel whose page has gone, else the visitor is answered "503: try again in a few minutes";
- at most ``--pages-per-visitor`` open pages per visitor (default 5; a visitor is a browser, told apart by a
  cookie): the next tab is answered 429 with a page, in English and Russian, saying to close a tab, so one
  visitor cannot take every place. A client that refuses cookies is a new visitor on every page; the limit
  above still bounds it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from gpuwork.cli.args import FlagValueError
from gpuwork.errors import GpuworkError
from gpuwork.message import msg
from gpuwork.present.messages import text

APP_NOTEBOOK = "app.ipynb"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8866
# Section -> trait -> value, as in voila.json (tests/test_cli_app.py checks that the two agree).
VOILA_SETTINGS: Mapping[str, Mapping[str, Any]] = {
    "Voila": {"ip": DEFAULT_HOST, "port": DEFAULT_PORT, "open_browser": False},
    # the jupytext front-end extension does not load in Voila's older front end; the page has no code to highlight
    # (pygments), no anywidget, and draws its charts with plotly.js's basic bundle, served from beside the notebook,
    # instead of plotly's renderer extension (all of plotly.js, parsed before the page connects to its kernel; see
    # gpuwork.ui.common.PLOTLY_BASIC_URL): less JavaScript for each visitor's browser to parse
    "VoilaConfiguration": {"strip_sources": True,
                           "extension_denylist": ["jupyterlab-jupytext", "jupyterlab_pygments", "anywidget",
                                                  "jupyterlab-plotly"],
                           "file_allowlist": [r"static/plotly-basic\.min\.js"],
                           # the page limit lives in the kernel manager: Voila refuses a prelaunch hook with a pool
                           "preheat_kernel": True, "default_pool_size": 5,
                           "multi_kernel_manager_class": "gpuwork.cli.app_kernels.PagesKernelManager"},
    # a used pool kernel is replaced 10 s later: a burst of visitors does not compete with the replacements
    "VoilaKernelManager": {"fill_delay": 10},
    # kernels at once, pool included; open pages of one visitor (a cookie) at once
    "PagesKernelManager": {"max_pages": 40, "max_pages_per_visitor": 5},
    # after a cell's reply, wait this long for its output (the app's widget): nbclient's 4 s default dropped the
    # whole app from pages under load (20 visitors on 2 cores: "Timeout waiting for IOPub output", no chart)
    "VoilaExecutor": {"iopub_timeout": 60},
    # a page whose connection is gone (tab closed, network lost) leaves its kernel: cull it 2 minutes after it
    # left, checking every 30 s; a connected or still-loading page or a busy kernel is never culled
    "MappingKernelManager": {"cull_interval": 30, "cull_idle_timeout": 120, "cull_connected": False,
                             "cull_busy": False},
}
MAX_PAGES = VOILA_SETTINGS["PagesKernelManager"]["max_pages"]  # kernels at once: ~135 MB each, ~6 GB in all
MAX_PAGES_PER_VISITOR = VOILA_SETTINGS["PagesKernelManager"]["max_pages_per_visitor"]  # tabs of one visitor
POOL_SIZE = VOILA_SETTINGS["VoilaConfiguration"]["default_pool_size"]
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def app_notebook() -> Path:
    """The app notebook shipped inside the package."""
    from gpuwork.facts.paths import notebooks_dir

    return notebooks_dir() / APP_NOTEBOOK


def voila_argv(notebook: str | Path, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
               max_pages: int = MAX_PAGES, pool: int = POOL_SIZE,
               pages_per_visitor: int = MAX_PAGES_PER_VISITOR) -> list[str]:
    """Voila's command line for ``notebook``: VOILA_SETTINGS with ``host``, ``port``, the page limits (in all and
    per visitor) and the preheated pool's size (0: no pool, a kernel per visitor) in place."""
    settings = {section: dict(traits) for section, traits in VOILA_SETTINGS.items()}
    settings["Voila"].update(ip=host, port=port)
    settings["PagesKernelManager"].update(max_pages=max_pages, max_pages_per_visitor=min(pages_per_visitor,
                                                                                           max_pages))
    pool = min(pool, max_pages)  # the pool's kernels count against the limit
    settings["VoilaConfiguration"].update(preheat_kernel=pool > 0, default_pool_size=pool)
    argv = [str(notebook)]
    for section, traits in settings.items():
        for name, value in traits.items():
            # traitlets reads a list trait from the flag repeated once per item
            for item in value if isinstance(value, list) else [value]:
                argv.append(f"--{section}.{name}={item}")
    return argv


def require(module: str, extra: str) -> None:
    """Raise a one-line GpuworkError naming the extra to install when ``module`` cannot be imported."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        raise GpuworkError(msg("error.cli.not_installed", module=module, extra=extra)) from None


def _whole(lo: int, hi: int, error: str) -> Callable[[str], int]:
    """An argparse type: a whole number from ``lo`` to ``hi``, else the one-line message ``error``."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = lo - 1
        if not lo <= n <= hi:
            raise FlagValueError(msg(error, value=repr(text)))
        return n

    return parse


def _host(value: str) -> str:
    """An argparse type: a host name or address to listen on. An empty one would make Voila listen on every
    interface, the opposite of what a blank usually means, so it is refused like any name with spaces or controls."""
    if not value or len(value) > 253 or any(c.isspace() or not c.isprintable() for c in value):
        raise FlagValueError(msg("error.args.host", value=repr(value)))
    return value


_port = _whole(1, 65535, "error.args.port")
_max_pages = _whole(1, 1000, "error.args.max_pages")
_pool = _whole(0, 100, "error.args.pool")
_pages_per_visitor = _whole(1, 1000, "error.args.pages_per_visitor")


def _cmd_app(args: argparse.Namespace) -> int:
    notebook = app_notebook()
    if not notebook.is_file():
        raise GpuworkError(msg("error.cli.app_notebook", path=str(notebook)))
    require("voila", "app")
    if args.host not in _LOCAL_HOSTS:
        print(text("cli.app.public_host", args.help_lang, host=args.host), file=sys.stderr)
    from voila.app import Voila

    Voila.launch_instance(argv=voila_argv(notebook, host=args.host, port=args.port, max_pages=args.max_pages,
                                          pool=args.pool, pages_per_visitor=args.pages_per_visitor))
    return 0


def register(subparsers: Any, lang: str = "en") -> None:
    """Add ``app`` to a gpuwork subparsers object, its help in ``lang``."""
    p = subparsers.add_parser("app", help=text("cli.help.app.summary", lang),
                              description=text("cli.help.app.description", lang))
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=text("cli.help.app.port", lang, port=DEFAULT_PORT))
    p.add_argument("--host", type=_host, default=DEFAULT_HOST,
                   help=text("cli.help.app.host", lang, host=DEFAULT_HOST))
    p.add_argument("--max-pages", type=_max_pages, default=MAX_PAGES,
                   help=text("cli.help.app.max_pages", lang, n=MAX_PAGES))
    p.add_argument("--pages-per-visitor", type=_pages_per_visitor, default=MAX_PAGES_PER_VISITOR,
                   help=text("cli.help.app.pages_per_visitor", lang, n=MAX_PAGES_PER_VISITOR))
    p.add_argument("--pool", type=_pool, default=POOL_SIZE, help=text("cli.help.app.pool", lang, n=POOL_SIZE))
    p.set_defaults(func=_cmd_app, help_lang=lang)  # the app has no --lang: its notes follow the help's language


__all__ = ["APP_NOTEBOOK", "MAX_PAGES", "MAX_PAGES_PER_VISITOR", "POOL_SIZE", "VOILA_SETTINGS", "app_notebook", "register", "require",
           "voila_argv"]
