"""The gather step: everything the pure estimators read, looked up once for a plan.

``resolve(plan)`` reads the model (preset, config.json or hub id), the GPU table and the kernel
rates; the estimators in ``gpuwork.estimate`` then touch no file, network or torch.
"""

from __future__ import annotations

import dataclasses

from gpuwork.errors import GpuworkError
from gpuwork.facts.block_profiles import DEFAULT_CACHE, HAND_MODELLED
from gpuwork.facts.catalog import load_gpus
from gpuwork.facts.inputs import Inputs
from gpuwork.facts.model import ModelSpec, load_config, spec_for_plan
from gpuwork.facts.rates import Rates, load_rates
from gpuwork.plan import TrainPlan


def resolve(plan: TrainPlan, spec: ModelSpec | None = None) -> Inputs:
    """Look up the model, the GPU table and the kernel rates for ``plan`` (cached by the loaders); a model
    of a family without a hand-written block model carries its traced block profiles at hand."""
    rates = load_rates()
    spec = with_stacks(with_block_profiles(plan, spec or spec_for_plan(plan)), rates)
    return Inputs(spec=spec, gpus=load_gpus(), rates=rates)


def with_stacks(spec: ModelSpec, rates: Rates) -> ModelSpec:
    """``spec`` with ``extras["stacks"]``: what each software stack changes in memory (stacks.csv), at hand for
    ``estimate_memory`` wherever the spec travels."""
    if "stacks" in spec.extras:
        return spec
    return dataclasses.replace(spec, extras={**spec.extras, "stacks": rates.stacks})


def with_block_profiles(plan: TrainPlan, spec: ModelSpec) -> ModelSpec:
    """``spec`` with ``extras["block_profiles"]``: the traced profiles of its block at hand (this process, the
    bundled folder, $GPUWORK_PROFILES), when its family has no hand-written block model; the estimators
    use the one that matches a plan (``facts.block_profiles.matching_profile``)."""
    if spec.model_type in HAND_MODELLED or "block_profiles" in spec.extras:
        return spec
    try:
        config, _ = load_config(plan.model)
    except GpuworkError:
        return spec
    profiles = DEFAULT_CACHE.for_config(config)
    return dataclasses.replace(spec, extras={**spec.extras, "block_profiles": profiles}) if profiles else spec


__all__ = ["Inputs", "resolve", "with_block_profiles", "with_stacks"]
