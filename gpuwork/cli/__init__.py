"""The ``gpuwork`` command: one module per group of verbs, shared argument handling in ``args``.

Errors in what the user typed print one line on stderr and exit with status 2 (no traceback). So do files that
cannot be read or written (missing, a folder, no permission, not UTF-8, not JSON/YAML, disk full): ``main``'s
one handler names the file and the fix. Anything else is a bug: one line, exit 1 (``GPUWORK_TRACEBACK=1``
shows the traceback).
"""

from __future__ import annotations

import argparse
import errno
import functools
import json
import os
import sys

from gpuwork.cli import advise, app, estimate, plan, report, trial
from gpuwork.cli import args as args_module
from gpuwork.cli.args import EXIT_USAGE, Parser, argv_lang, error_line
from gpuwork.errors import GpuworkError
from gpuwork.message import Msg, msg
from gpuwork.present.messages import render, text

EXIT_INTERNAL = 1

# Which extra brings a module that a verb imports lazily (the core install has none of them).
_EXTRA_FOR = {**dict.fromkeys(("torch", "transformers", "peft", "bitsandbytes", "tokenizers", "safetensors", "psutil",
                               "tqdm"), "trial"),
              **dict.fromkeys(("papermill", "nbconvert", "nbformat", "nbclient", "ipywidgets", "plotly", "pandas",
                               "jupytext"), "workbook"),
              "voila": "app"}


def _version() -> str:
    from gpuwork import __version__

    return f"gpuwork {__version__}"


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
    """gpuwork's parser, its help in ``lang`` (``main`` passes the --lang of the command line)."""
    parser = Parser(prog="gpuwork", description=text("cli.help.gpuwork.description", lang), lang=lang)
    parser.add_argument("--version", action="version", version=_version(), help=text("cli.help.version", lang))
    # argparse calls parser_class to build each verb's parser; typeshed wants a class, a partial does the same
    sub = parser.add_subparsers(dest="command", metavar="COMMAND",
                                parser_class=functools.partial(Parser, lang=lang))  # type: ignore[call-overload]
    sub.required = True
    for verbs in (estimate, plan, trial, report, app, advise):
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
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(error_line(render(file_error(exc), lang), lang), file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if _is_yaml_error(exc):
            print(error_line(render(msg("error.file.bad_yaml", path=_yaml_file(exc),
                                        reason=str(exc).splitlines()[0]), lang), lang), file=sys.stderr)
            return EXIT_USAGE
        if os.environ.get("GPUWORK_TRACEBACK"):
            raise
        # a bug, not the user's input: one line that can be reported, not a page of traceback
        detail = f"{type(exc).__name__}: {str(exc).splitlines()[0]}" if str(exc) else type(exc).__name__
        print(error_line(text("error.cli.internal", lang, error=detail), lang), file=sys.stderr)
        return EXIT_INTERNAL


def file_error(exc: BaseException) -> Msg:
    """The one-line message for a file that cannot be read or written: which file, what is wrong, the fix."""
    if isinstance(exc, UnicodeDecodeError):
        return msg("error.file.not_utf8_unnamed", byte=exc.start, reason=exc.reason)
    if isinstance(exc, json.JSONDecodeError):
        return msg("error.file.bad_json_unnamed", line=exc.lineno, column=exc.colno, reason=exc.msg)
    if not isinstance(exc, OSError) or exc.filename is None:
        return msg("error.file.os_unnamed", reason=str(getattr(exc, "strerror", None) or exc))
    path = os.fsdecode(exc.filename)
    if isinstance(exc, IsADirectoryError):
        return msg("error.file.is_directory", path=path)
    if isinstance(exc, FileNotFoundError):
        return msg("error.file.not_found", path=path)
    if isinstance(exc, PermissionError):
        return msg("error.file.permission", path=path)
    if exc.errno == errno.ENOSPC:
        return msg("error.file.no_space", path=path)
    if exc.errno == errno.EROFS:
        return msg("error.file.read_only", path=path)
    return msg("error.file.os", path=path, reason=str(exc.strerror or exc))


def _is_yaml_error(exc: BaseException) -> bool:
    return any(cls.__module__.split(".")[0] == "yaml" and cls.__name__ == "YAMLError" for cls in type(exc).__mro__)


def _yaml_file(exc: BaseException) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return str(getattr(mark, "name", None) or "YAML")


__all__ = ["build_parser", "file_error", "main"]
