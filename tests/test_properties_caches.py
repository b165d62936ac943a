"""The estimators' caches never answer for a plan they did not see (hypothesis): a plan estimated right after
another that shares some of its fields (the caches keyed on a part of a plan then hit) gets the answer a
process with empty caches computes for it alone."""

from __future__ import annotations

from typing import Any

from conftest import clear_package_caches
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gpuwork.errors import GpuworkError, PlanError
from gpuwork.estimate.disk import checkpoint_size
from gpuwork.estimate.memory import estimate_memory
from gpuwork.estimate.timing import estimate_time, flops_per_token
from gpuwork.facts.resolve import resolve
from gpuwork.facts.spec import count_params
from gpuwork.plan import Attention, Method, Optimizer, Precision, Sharding, Stack, TrainPlan

CACHES = settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
GPUS = ("h100_sxm", "a100_80_sxm", "l40s", "mi300x", "rtx3090")

# each field a cache may or may not key on, with values a plan may take
_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "model": st.sampled_from(["tiny-llama", "tiny-mixtral", "qwen2.5-0.5b", "gpt2", "llama-3.1-8b"]),
    "method": st.sampled_from(list(Method)),
    "precision": st.sampled_from(list(Precision)),
    "optimizer": st.sampled_from(list(Optimizer)),
    "attention": st.sampled_from(list(Attention)),
    "stack": st.sampled_from(list(Stack)),
    "seq_len": st.sampled_from([128, 512, 2048]),
    "batch_size": st.sampled_from([1, 2, 8]),
    "grad_accum": st.sampled_from([1, 2, 8]),
    "grad_checkpointing": st.booleans(),
    "trainable_layers": st.sampled_from([1, 2, 3]),
    "lora_r": st.sampled_from([8, 64]),
    "lora_targets": st.sampled_from([("q_proj", "v_proj"), ("all-linear",)]),
    "gpus": st.sampled_from([1, 2, 8]),
    "sharding": st.sampled_from(list(Sharding)),
    "offload_optimizer": st.booleans(),
    "lengths": st.sampled_from(["fixed", "packed", ((64, 1.0), (100, 2.0))]),
    "dataset_tokens": st.sampled_from([10**7, 10**9]),
    "epochs": st.sampled_from([1.0, 2.5]),
    "eval_fraction": st.sampled_from([0.0, 0.05]),
    "checkpoint_every_steps": st.sampled_from([10, 500]),
}


def _answers(plan: TrainPlan, gpu_id: str) -> tuple[Any, ...]:
    """Every figure of the plan the cached paths produce (or the error it gets)."""
    try:
        inputs = resolve(plan)
        spec = inputs.spec
        est = estimate_time(plan, inputs.gpu(gpu_id), inputs)
        return (est.as_dict(), sorted(est.sources.items()), count_params(spec, plan), flops_per_token(plan, spec),
                checkpoint_size(plan, spec), estimate_memory(plan, spec).as_dict())
    except GpuworkError as exc:
        return ("refused", type(exc).__name__, str(exc))


@st.composite
def _plan_pair(draw: st.DrawFn) -> tuple[TrainPlan, TrainPlan, str]:
    """Two valid plans, the second the first with a few fields changed."""
    first = {name: draw(strategy) for name, strategy in _FIELDS.items() if draw(st.booleans())}
    second = dict(first)
    for name in draw(st.sets(st.sampled_from(sorted(_FIELDS)), min_size=1, max_size=3)):
        second[name] = draw(_FIELDS[name])
    try:
        plans = TrainPlan(**first), TrainPlan(**second)
    except PlanError:
        assume(False)
        raise
    return plans[0], plans[1], draw(st.sampled_from(GPUS))


@CACHES
@given(_plan_pair())
def test_a_plan_after_another_gets_the_answer_it_gets_alone(pair) -> None:
    first, second, gpu_id = pair
    clear_package_caches()
    _answers(first, gpu_id)
    warm = _answers(second, gpu_id)
    clear_package_caches()
    assert warm == _answers(second, gpu_id)
