"""Where bundled data lives (overridable with the GPUWORK_DATA environment variable)."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    override = os.environ.get("GPUWORK_DATA")
    if override:
        return Path(override)
    return Path(__file__).resolve().parent.parent / "data"


def models_dir() -> Path:
    return data_dir() / "models"
