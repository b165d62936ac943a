"""Read a saved plan: a JSON file with TrainPlan fields, or the output of ``gpuwork estimate --json``.

Read through ``gpuwork.facts.reading``: a regular file of at most ``reading.PLAN`` bytes, JSON within bounds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.facts import reading
from gpuwork.message import msg
from gpuwork.plan import TrainPlan


def read_plan_fields(path: str | Path) -> dict[str, Any]:
    """The TrainPlan fields stored in ``path`` (not yet validated: callers may override some first)."""
    file = Path(path)
    try:
        data = reading.load_json(file, reading.PLAN, missing=msg("error.planfile.missing", file=str(file)))
    except reading.ReadError as exc:
        raise PlanError("plan", exc.msg) from None
    except json.JSONDecodeError as exc:
        raise PlanError("plan", msg("error.planfile.bad_json", file=str(file), line=exc.lineno,
                                    reason=exc.msg)) from None
    if isinstance(data, dict) and isinstance(data.get("plan"), dict):
        data = data["plan"]  # the output of `gpuwork estimate --json`
    if not isinstance(data, dict):
        raise PlanError("plan", msg("error.planfile.not_object", file=str(file)))
    return data


def load_plan(path: str | Path) -> TrainPlan:
    """A validated TrainPlan from a plan file."""
    return TrainPlan.from_dict(read_plan_fields(path))
