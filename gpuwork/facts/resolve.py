"""The gather step: everything the pure estimators read, looked up once for a plan.

``resolve(plan)`` reads the model (preset, config.json or hub id), the GPU table and the kernel
rates; the estimators in ``gpuwork.estimate`` then touch no file, network or torch.
"""

from __future__ import annotations

import dataclasses
import threading

from gpuwork.errors import GpuworkError
from gpuwork.facts.block_profiles import (
    DEFAULT_CACHE,
    HAND_MODELLED,
    BlockProfileCache,
    plan_profile_key,
    registered_tracer,
)
from gpuwork.facts.catalog import load_gpus
from gpuwork.facts.hashed import IdentityMemo
from gpuwork.facts.inputs import Inputs
from gpuwork.facts.model import ModelSpec, list_presets, load_config, spec_for_plan
from gpuwork.facts.rates import Rates, load_rates
from gpuwork.facts.spec import count_params
from gpuwork.message import msg
from gpuwork.plan import TrainPlan

_TRACING = threading.Lock()  # the workbook's server may gather two plans at once: one trace per key


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
    # the same copy for the same spec and stacks: a fresh one per estimate hashes its extras again in every cache
    # the estimators key by the spec
    return _WITH_STACKS.get((rates.stacks,), spec,
                            lambda: dataclasses.replace(spec, extras={**spec.extras, "stacks": rates.stacks}))


_WITH_STACKS: IdentityMemo[ModelSpec] = IdentityMemo(256)


def with_block_profiles(plan: TrainPlan, spec: ModelSpec, cache: BlockProfileCache = DEFAULT_CACHE) -> ModelSpec:
    """``spec`` with ``extras["block_profiles"]``: the traced profiles of its block at hand (this process, the
    bundled folder, $GPUWORK_PROFILES), when its family has no hand-written block model; the estimators
    use the one that matches a plan (``facts.block_profiles.matching_profile``).

    When none matches and the model is a config.json or hub id, the registered tracer
    (``facts.block_profiles.register_tracer``; gpuwork.measure registers one) traces the plan's block once per
    process and key, and ``extras["block_profile_note"]`` says what came of it (traced, could not be traced
    and why, no torch) for every surface to show. Without a tracer nothing is traced and the nearest family's
    block stands in. A preset is never traced on the fly: it gets its bundled profiles or the nearest family's
    block (and a note saying so), the same figures on every install, with or without torch, and the ones the
    accuracy pages score."""
    if spec.model_type in HAND_MODELLED or "block_profiles" in spec.extras:
        return spec
    try:
        config, _ = load_config(plan.model)
    except GpuworkError:
        return spec
    key = plan_profile_key(config, plan)
    profiles = cache.for_config(config)
    preset = plan.model in list_presets()
    tracer = registered_tracer()
    matched = any(p.matches(plan) for p in profiles)
    if tracer is not None and not preset and not matched and _traceable(spec, plan):
        with _TRACING:
            if cache.note(key) is None:
                cache.keep_trace(key, *tracer(plan))
        profiles = cache.for_config(config)
    note = cache.note(key)
    if preset and not matched:
        note = msg("cli.block_profile.preset", model_type=spec.model_type)
    extras = {**spec.extras, **({"block_profiles": profiles} if profiles else {}),
              **({"block_profile_note": note} if note is not None else {})}
    return dataclasses.replace(spec, extras=extras) if extras != spec.extras else spec


def _traceable(spec: ModelSpec, plan: TrainPlan) -> bool:
    """A plan the estimate itself refuses (LoRA targets the model lacks) is not traced: its error is the answer."""
    try:
        count_params(spec, plan)
    except GpuworkError:
        return False
    return True


__all__ = ["Inputs", "resolve", "with_block_profiles", "with_stacks"]
