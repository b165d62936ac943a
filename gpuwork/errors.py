"""Errors that carry one human message: what is wrong and how to fix it.

An error raised with a ``gpuwork.message.Msg`` (a code and its values) is rendered by the message catalog in
the reader's language: ``str(err)`` in English, ``err.text("ru")`` in Russian. The catalog registers its
renderer here when it is imported (``gpuwork`` imports it), so this base module depends on nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_renderer: Callable[[Any, str], str] | None = None


def set_renderer(render: Callable[[Any, str], str]) -> None:
    """Install the function that turns a message code into text (``gpuwork.present.messages.render``)."""
    global _renderer
    _renderer = render


class GpuworkError(Exception):
    """Base class: the message is meant to be shown to a user as it is (no traceback).

    Attributes:
        msg: the coded message (``gpuwork.message.Msg``) when the error was raised with one, else None.
    """

    def __init__(self, message: Any = "", *args: Any):
        self.msg = message if hasattr(message, "code") and hasattr(message, "params") else None
        super().__init__(message, *args)

    def text(self, lang: str = "en") -> str:
        """The message in ``lang`` ("en" or "ru"); an error without a code has English text only."""
        if self.msg is not None and _renderer is not None:
            return _renderer(self.msg, lang)
        return super().__str__() if self.msg is None else f"{self.msg.code} {dict(self.msg.params)}"

    def __str__(self) -> str:
        return self.text("en")


class PlanError(GpuworkError, ValueError):
    """A TrainPlan field holds an invalid value or an invalid combination.

    Attributes:
        field: the TrainPlan field at fault (or the first of the combination).
    """

    def __init__(self, field: str, message: Any):
        super().__init__(message)
        self.field = field


class ModelError(GpuworkError, ValueError):
    """A model preset, config.json or hub id cannot be resolved or built."""


class CatalogError(GpuworkError, ValueError):
    """A data file (GPU specs, offers) has a bad row: names file, line and field."""


class TraceError(GpuworkError, RuntimeError):
    """A traced (fake-tensor) step could not run; the message names the op or module."""


# -- exit codes of the gpuwork commands (one definition each) -----------------------------------------------

EXIT_OK = 0
EXIT_NO_FIT = 1  # --check on plan, offers and advise: nothing fits
EXIT_USAGE = 2  # a bad command line
EXIT_DOES_NOT_FIT = 3  # a trial (or one rank of it) ran out of memory
EXIT_CHECKPOINT_NOT_VERIFIED = 4
EXIT_SIGNAL_BASE = 128  # stopped by a signal: 128 + its number, as a shell reports it (130 SIGINT, 143 SIGTERM)
