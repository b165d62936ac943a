"""Read a saved plan: a JSON file with TrainPlan fields, or the output of ``gpuwork estimate --json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuwork.errors import PlanError


def read_plan_fields(path: str | Path) -> dict[str, Any]:
    """The TrainPlan fields stored in ``path`` (not yet validated: callers may override some first)."""
    file = Path(path)
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        raise PlanError("plan", f"plan file '{file}' does not exist") from None
    except json.JSONDecodeError as exc:
        raise PlanError("plan", f"{file} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if isinstance(data, dict) and isinstance(data.get("plan"), dict):
        data = data["plan"]  # the output of `gpuwork estimate --json`
    if not isinstance(data, dict):
        raise PlanError("plan", f"{file} must hold a JSON object of TrainPlan fields")
    return data


def load_plan(path: str | Path):
    """A validated TrainPlan from a plan file."""
    from gpuwork.plan import TrainPlan

    return TrainPlan.from_dict(read_plan_fields(path))
