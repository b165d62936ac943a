"""Errors that carry one human message: what is wrong and how to fix it."""

from __future__ import annotations


class GpuworkError(Exception):
    """Base class: the message is meant to be shown to a user as it is (no traceback)."""


class PlanError(GpuworkError, ValueError):
    """A TrainPlan field holds an invalid value or an invalid combination.

    Attributes:
        field: the TrainPlan field at fault (or the first of the combination).
    """

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class ModelError(GpuworkError, ValueError):
    """A model preset, config.json or hub id cannot be resolved or built."""


class CatalogError(GpuworkError, ValueError):
    """A data file (GPU specs, offers) has a bad row: names file, line and field."""


class TraceError(GpuworkError, RuntimeError):
    """A traced (fake-tensor) step could not run; the message names the op or module."""
