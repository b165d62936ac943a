"""The ``gpuwork`` command: one module per group of verbs, shared argument handling in ``args``.

Errors in what the user typed print one line on stderr and exit with status 2 (no traceback).
"""

from __future__ import annotations

import argparse
import functools
import sys

from gpuwork.cli import app, estimate, plan, report, trial
from gpuwork.cli import args as args_module
from gpuwork.cli.args import EXIT_USAGE, Parser, argv_lang, error_line
from gpuwork.errors import GpuworkError
from gpuwork.present.messages import text

# Which extra brings a module that a verb imports lazily (the core install has none of them).
_EXTRA_FOR = {**dict.fromkeys(("torch", "transformers", "peft", "bitsandbytes", "tokenizers", "safetensors", "psutil",
                               "tqdm"), "trial"),
              **dict.fromkeys(("papermill", "nbconvert", "nbformat", "nbclient", "ipywidgets", "plotly", "pandas",
                               "jupytext", "anywidget"), "workbook"),
              "voila": "app"}


def _version() -> str:
    from gpuwork import __version__

    return f"gpuwork {__version__}"


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
    """gpuwork's parser, its help in ``lang`` (``main`` passes the --lang of the command line)."""
    parser = Parser(prog="gpuwork", description=text("cli.help.gpuwork.description", lang), lang=lang)
    parser.add_argument("--version", action="version", version=_version(), help=text("cli.help.version", lang))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=functools.partial(Parser, lang=lang))
    sub.required = True
    for verbs in (estimate, plan, trial, report, app):
        verbs.register(sub, lang)
    return parser


def main(argv: list[str] | None = None) -> int:
    args_module.current_argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv_lang())
    args = parser.parse_args(argv)
    lang = getattr(args, "lang", None) or "en"
    try:
        return args.func(args)
    except GpuworkError as exc:
        print(error_line(exc.text(lang), lang), file=sys.stderr)
        return EXIT_USAGE
    except ModuleNotFoundError as exc:
        extra = _EXTRA_FOR.get((exc.name or "").split(".")[0])
        if extra is None:
            raise
        print(error_line(text("error.cli.missing_extra", lang, command=args.command, module=exc.name, extra=extra),
                         lang), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("gpuwork: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `gpuwork models | head`
        sys.stderr.close()
        return 0


__all__ = ["build_parser", "main"]
