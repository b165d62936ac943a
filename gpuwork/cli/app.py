"""Command line: ``gpuwork app`` — serve the bundled app notebook with Voila, from any directory.

``register(subparsers, lang)`` adds the subcommand to gpuwork's parser.

    gpuwork app                       # http://127.0.0.1:8866, stop with Ctrl+C
    gpuwork app --port 9000

The notebook is the installed package's (``gpuwork.facts.paths.notebooks_dir() / "app.ipynb"``), and
the Voila settings travel on Voila's command line (``VOILA_SETTINGS``, the same as the checkout's
voila.json, which a wheel does not ship): local address, no browser, code sources stripped, idle
kernels culled. Voila runs in this process; SIGINT or SIGTERM stops it and the kernels it started.
Needs the ``app`` extra (``pip install 'gpuwork[app]'``).
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
    # closed tabs leave their kernels running: cull those idle for 10 minutes, checking every minute
    "MappingKernelManager": {"cull_interval": 60, "cull_idle_timeout": 600},
}
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


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


def _cmd_app(args: argparse.Namespace) -> int:
    notebook = app_notebook()
    if not notebook.is_file():
        raise GpuworkError(msg("error.cli.app_notebook", path=str(notebook)))
    require("voila", "app")
    if args.host not in _LOCAL_HOSTS:
        print(f"gpuwork app: note: listening on {args.host}, beyond this machine; the app has no login, so "
              "put it behind a reverse proxy that authenticates users", file=sys.stderr)
    from voila.app import Voila

    Voila.launch_instance(argv=voila_argv(notebook, host=args.host, port=args.port))
    return 0


def register(subparsers: Any, lang: str = "en") -> None:
    """Add ``app`` to a gpuwork subparsers object, its help in ``lang``."""
    p = subparsers.add_parser("app", help=text("cli.help.app.summary", lang),
                              description=text("cli.help.app.description", lang))
    p.add_argument("--port", type=_port, default=DEFAULT_PORT, help=text("cli.help.app.port", lang, port=DEFAULT_PORT))
    p.add_argument("--host", default=DEFAULT_HOST, help=text("cli.help.app.host", lang, host=DEFAULT_HOST))
    p.set_defaults(func=_cmd_app)


__all__ = ["APP_NOTEBOOK", "VOILA_SETTINGS", "app_notebook", "register", "require", "voila_argv"]
