"""The gather step: everything the pure estimators read, looked up once for a plan.

``resolve(plan)`` reads the model (preset, config.json or hub id), the GPU table and the kernel
rates; the estimators in ``gpuwork.estimate`` then touch no file, network or torch.
"""

from __future__ import annotations

from gpuwork.facts.catalog import load_gpus
from gpuwork.facts.inputs import Inputs
from gpuwork.facts.model import ModelSpec, spec_for_plan
from gpuwork.facts.rates import load_rates
from gpuwork.plan import TrainPlan


def resolve(plan: TrainPlan, spec: ModelSpec | None = None) -> Inputs:
    """Look up the model, the GPU table and the efficiency table for ``plan`` (cached by the loaders)."""
    return Inputs(spec=spec or spec_for_plan(plan), gpus=load_gpus(), rates=load_rates())


__all__ = ["Inputs", "resolve"]
