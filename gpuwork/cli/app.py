"""Command line: ``gpuwork app`` — serve the bundled app notebook with Voila, from any directory.

``register(subparsers, lang)`` adds the subcommand to gpuwork's parser.

    gpuwork app                       # http://127.0.0.1:8866, stop with Ctrl+C
    gpuwork app --port 9000

The notebook is the installed package's (``gpuwork.facts.paths.notebooks_dir() / "app.ipynb"``), and
the Voila settings travel on Voila's command line (``VOILA_SETTINGS``, the same as the checkout's
voila.json, which a wheel does not ship): local address, no browser, code sources stripped, idle
kernels culled. Voila runs in this process; SIGINT or SIGTERM stops it and the kernels it started.
Needs the ``app`` extra (``pip install 'gpuwork[app]'``).

Kernels (one per page, about 135 MB each) are bounded two ways:

- a kernel without a connected page (the tab closed, the network lost) is culled after ``cull_idle_timeout``
  seconds idle (2 min, checked every 30 s, so gone within 2.5 min); an open page is never culled
  (``cull_connected`` False: its kernel may idle while someone reads) and a busy kernel never (``cull_busy``
  False). Voila's own shutdown on ``beforeunload`` does not reach the server from its bundled front end
  (measured: no request leaves the page), so culling is what releases a closed tab's kernel;
- at most ``--max-pages`` kernels at once (default 40, about 6 GB): ``page_hook``, Voila's prelaunch hook (a
  Python callable, so it travels as a traitlets Config rather than a flag), answers the next visitor
  "503: try again in a few minutes" instead of starting a kernel.

A Voila started by hand with the checkout's voila.json gets the culling but not the page limit.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
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
    # the jupytext front-end extension does not load in Voila's older front end
    "VoilaConfiguration": {"strip_sources": True, "extension_denylist": ["jupyterlab-jupytext"]},
    # after a cell's reply, wait this long for its output (the app's widget): nbclient's 4 s default dropped the
    # whole app from pages under load (20 visitors on 2 cores: "Timeout waiting for IOPub output", no chart)
    "VoilaExecutor": {"iopub_timeout": 60},
    # a page whose connection is gone (tab closed, network lost) leaves its kernel: cull it after 2 idle minutes,
    # checking every 30 s; a connected page or a busy kernel is never culled
    "MappingKernelManager": {"cull_interval": 30, "cull_idle_timeout": 120, "cull_connected": False,
                             "cull_busy": False},
}
MAX_PAGES = 40  # kernels at once: ~135 MB each, ~6 GB in all
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def page_hook(max_pages: int = MAX_PAGES) -> Any:
    """Voila's prelaunch hook for each page: refuse a page beyond ``max_pages`` kernels (HTTP 503)."""
    def prelaunch(handler: Any, notebook: Any = None, cwd: Any = None) -> None:
        running = len(handler.kernel_manager.list_kernel_ids())
        if running >= max_pages:
            # the server calling this hook is a tornado application: its HTTPError answers the request
            http_error = sys.modules["tornado.web"].HTTPError
            raise http_error(503, reason=text("error.app.too_many_pages", n=running))

    return prelaunch


def voila_config(max_pages: int = MAX_PAGES) -> Any:
    """The settings that cannot travel as flags (a Python callable), as a traitlets Config."""
    from traitlets.config import Config

    return Config({"VoilaConfiguration": {"prelaunch_hook": page_hook(max_pages)}})


def app_notebook() -> Path:
    """The app notebook shipped inside the package."""
    from gpuwork.facts.paths import notebooks_dir

    return notebooks_dir() / APP_NOTEBOOK


def voila_argv(notebook: str | Path, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> list[str]:
    """Voila's command line for ``notebook``: VOILA_SETTINGS with ``host`` and ``port`` in place."""
    settings = {section: dict(traits) for section, traits in VOILA_SETTINGS.items()}
    settings["Voila"].update(ip=host, port=port)
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


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise FlagValueError(msg("error.args.port", value=repr(text)))
    return port


def _max_pages(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if not 1 <= n <= 1000:
        raise FlagValueError(msg("error.args.max_pages", value=repr(value)))
    return n


def _cmd_app(args: argparse.Namespace) -> int:
    notebook = app_notebook()
    if not notebook.is_file():
        raise GpuworkError(msg("error.cli.app_notebook", path=str(notebook)))
    require("voila", "app")
    if args.host not in _LOCAL_HOSTS:
        print(f"gpuwork app: note: listening on {args.host}, beyond this machine; the app has no login, so "
              "put it behind a reverse proxy that authenticates users", file=sys.stderr)
    from voila.app import Voila

    Voila.launch_instance(argv=voila_argv(notebook, host=args.host, port=args.port),
                          config=voila_config(args.max_pages))
    return 0


def register(subparsers: Any, lang: str = "en") -> None:
    """Add ``app`` to a gpuwork subparsers object, its help in ``lang``."""
    p = subparsers.add_parser("app", help=text("cli.help.app.summary", lang),
                              description=text("cli.help.app.description", lang))
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=text("cli.help.app.port", lang, port=DEFAULT_PORT))
    p.add_argument("--host", default=DEFAULT_HOST, help=text("cli.help.app.host", lang, host=DEFAULT_HOST))
    p.add_argument("--max-pages", type=_max_pages, default=MAX_PAGES,
                   help=text("cli.help.app.max_pages", lang, n=MAX_PAGES))
    p.set_defaults(func=_cmd_app)


__all__ = ["APP_NOTEBOOK", "MAX_PAGES", "VOILA_SETTINGS", "app_notebook", "page_hook", "register", "require",
           "voila_argv", "voila_config"]
