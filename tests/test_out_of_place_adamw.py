"""A hand-written out-of-place AdamW loop (optimizer_impl='out-of-place', the CS336 staff AdamW;
estimate.adamw_passes, docs/kernels.md "A hand-written out-of-place AdamW"): its update moves 35 parameter-sized
tensors in 16 kernels per tensor, torch's for-loop 18 in 7, and nothing else in the step changes."""

from __future__ import annotations

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.model_states import largest_trainable, optimizer_step_temporary
from gpuwork.estimate.ops import step_ops
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import get_spec
from gpuwork.facts.spec import count_params
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_time

PLAN = TrainPlan(model="qwen2.5-0.5b", method="scratch", precision="fp32", seq_len=256, batch_size=4,
                 attention="eager", optimizer_impl="for-loop")
OUT = PLAN.replace(optimizer_impl="out-of-place")


def _update(plan: TrainPlan):
    return next(o for o in step_ops(plan, get_spec(plan.model)) if o.name == "AdamW update")


def _tensors(plan: TrainPlan) -> int:
    spec = get_spec(plan.model)
    per_block = sum(2 if lin.bias else 1 for lin in spec.block_linears) + 2  # + the two RMSNorm weights
    return per_block * spec.num_layers + 3  # + embedding, final norm and lm_head, as ops._param_tensors counts them


def test_the_update_moves_35_tensors_in_16_kernels_per_parameter_tensor():
    spec = get_spec(PLAN.model)
    n = count_params(spec, PLAN).trainable
    loop, out = _update(PLAN), _update(OUT)
    # fp32 states: 4 bytes per element; the staff code's 19 reads and 16 writes
    assert out.bytes * out.count == pytest.approx(n * 35 * 4)
    assert loop.bytes * loop.count == pytest.approx(n * 18 * 4)
    tensors = _tensors(PLAN)
    assert out.launches == 16 * tensors
    assert loop.launches == 7 * tensors


def test_only_the_optimizer_time_changes():
    gpu = get_gpu("h100_sxm")
    loop, out = estimate_time(PLAN, gpu), estimate_time(OUT, gpu)
    assert out.breakdown["optimizer"] > loop.breakdown["optimizer"]
    # the extra time is at least the 17 extra tensors' bytes at the GPU's bandwidth (launch costs come on top)
    n = count_params(get_spec(PLAN.model), PLAN).trainable
    bw = 2.90e12  # rates.csv h100_sxm copy rate
    assert out.breakdown["optimizer"] - loop.breakdown["optimizer"] >= n * 17 * 4 / bw * 0.99
    for kind in ("matmul", "attention", "memory"):
        assert out.breakdown[kind] == pytest.approx(loop.breakdown[kind])
    assert out.step_time_s > loop.step_time_s


def test_other_implementations_are_priced_as_before():
    fused, foreach = _update(PLAN.replace(optimizer_impl="fused")), _update(PLAN.replace(optimizer_impl="foreach"))
    n = count_params(get_spec(PLAN.model), PLAN).trainable
    assert fused.bytes * fused.count == pytest.approx(n * 7 * 4)
    assert foreach.bytes * foreach.count == pytest.approx(n * 18 * 4)


def test_the_step_holds_five_temporaries_of_the_largest_tensor():
    spec = get_spec(PLAN.model)
    counts = count_params(spec, PLAN)
    largest = largest_trainable(spec, PLAN)
    assert optimizer_step_temporary(spec, OUT, counts) == 5 * 4 * largest
    assert optimizer_step_temporary(spec, PLAN, counts) == 2 * 4 * largest


def test_only_adamw_has_it_and_no_trial_runs_it():
    with pytest.raises(PlanError):
        TrainPlan(optimizer="sgd", optimizer_impl="out-of-place")
    with pytest.raises(PlanError):
        _ = OUT.optimizer_impl.torch_kwargs
    assert PLAN.optimizer_impl.torch_kwargs == {"foreach": False}


# Held-out sources whose own AdamW code updates out of place (quoted in each case's `reread`), and those whose
# hand-written or library loop updates in place (left as recorded): docs/kernels.md.
OUT_OF_PLACE_SOURCES = {"github-yyin-dev-cs336-a2": 21, "github-shihaofu2003-cs336-basics": 1,
                        "github-dfrumkin-cs336-a2-h100": 36, "github-brandon-snider-cs336-a2": 11,
                        "github-enzoding-cs336-a2-a800": 4, "github-royyu0509-llm-system-project": 12}
IN_PLACE_SOURCES = {"github-gaoyuetianc-cs336-compile-benchmark", "lambda-dlbench", "github-rtx5090-cs336-e2e-benchmark"}


def test_every_out_of_place_source_is_re_read_and_the_in_place_ones_are_not():
    from gpuwork.measure.heldout import heldout_sets

    cases = [c for held in heldout_sets() for c in held.cases]
    seen: dict[str, int] = {}
    for c in cases:
        if c.source_id in OUT_OF_PLACE_SOURCES:
            assert c.plan.optimizer_impl.value == "for-loop", c.name  # the frozen record stays as it was
            assert c.reread is not None and c.reread.plan.optimizer_impl.value == "out-of-place", c.name
            assert any("optim" in e.url for e in c.reread.evidence), c.name
            seen[c.source_id] = seen.get(c.source_id, 0) + 1
        elif c.source_id in IN_PLACE_SOURCES and c.reread is not None:
            assert c.reread.plan.optimizer_impl.value != "out-of-place", c.name
    assert seen == OUT_OF_PLACE_SOURCES
    shihaofu = next(c for c in cases if c.source_id == "github-shihaofu2003-cs336-basics")
    assert shihaofu.reread is not None and shihaofu.reread.plan.eval_fraction == pytest.approx(0.556)  # merged, kept
