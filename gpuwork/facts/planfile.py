"""Read a saved plan: a JSON file with TrainPlan fields, or the output of ``gpuwork estimate --json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.message import msg


def read_plan_fields(path: str | Path) -> dict[str, Any]:
    """The TrainPlan fields stored in ``path`` (not yet validated: callers may override some first)."""
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError("plan", msg("error.planfile.missing", file=str(file))) from None
    except IsADirectoryError:
        raise PlanError("plan", msg("error.file.is_directory", path=str(file))) from None
    except PermissionError:
        raise PlanError("plan", msg("error.file.permission", path=str(file))) from None
    except UnicodeDecodeError as exc:  # a binary file, or text saved in another encoding
        raise PlanError("plan", msg("error.file.not_utf8", path=str(file), byte=exc.start,
                                    reason=exc.reason)) from None
    except json.JSONDecodeError as exc:
        raise PlanError("plan", msg("error.planfile.bad_json", file=str(file), line=exc.lineno,
                                    reason=exc.msg)) from None
    except OSError as exc:
        raise PlanError("plan", msg("error.file.os", path=str(file), reason=str(exc.strerror or exc))) from None
    if isinstance(data, dict) and isinstance(data.get("plan"), dict):
        data = data["plan"]  # the output of `gpuwork estimate --json`
    if not isinstance(data, dict):
        raise PlanError("plan", msg("error.planfile.not_object", file=str(file)))
    return data


def load_plan(path: str | Path):
    """A validated TrainPlan from a plan file."""
    from gpuwork.plan import TrainPlan

    return TrainPlan.from_dict(read_plan_fields(path))
