"""Where the bundled facts live: inside the installed package, read through ``importlib.resources``.

``GPUWORK_DATA`` points the loaders at another folder of the same layout (your own catalog and GPU table).
"""

from __future__ import annotations

import functools
import os
from importlib import resources
from pathlib import Path

ENV_DATA_DIR = "GPUWORK_DATA"


@functools.cache
def bundled_data_dir() -> Path:
    """The data folder shipped inside the package (a real folder: the wheel is installed unpacked). Cached: the
    package does not move, and every estimate through ``resolve`` asks for it several times."""
    return Path(str(resources.files("gpuwork.facts") / "data"))


def data_dir() -> Path:
    """The data folder in use: ``$GPUWORK_DATA`` when set, else the bundled one."""
    override = os.environ.get(ENV_DATA_DIR)
    return Path(override).expanduser() if override else bundled_data_dir()


def models_dir() -> Path:
    return data_dir() / "models"


def notebooks_dir() -> Path:
    """The workbook's notebooks and the app, shipped inside the package."""
    return Path(str(resources.files("gpuwork.ui") / "notebooks"))
