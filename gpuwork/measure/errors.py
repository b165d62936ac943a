"""The measuring wing's error: one class for the runners, the record schema and the files, with no torch import."""

from __future__ import annotations

from gpuwork.errors import GpuworkError


class TrialError(GpuworkError, RuntimeError):
    """A trial cannot be set up as asked (bad arguments, unusable model or data)."""


__all__ = ["TrialError"]
