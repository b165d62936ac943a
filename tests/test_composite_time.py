"""The time model's pricing of a softmax and a SiLU written op by op (config ``softmax_impl`` / ``hidden_act_impl``
"composite", the Stanford CS336 staff model): the kernels the estimate lists against those autograd runs, counted
with torch's profiler on the CPU, and the step slower than with the fused ops by at least the extra bytes at the
GPU's peak bandwidth (docs/kernels.md, "Hand-written softmax and SiLU")."""

from __future__ import annotations

import math

import pytest
from test_composite_ops import COMPOSITE, CONFIG, HEADS, INTER

from gpuwork import TrainPlan
from gpuwork.estimate.composite_ops import silu_cost, softmax_chain_cost
from gpuwork.estimate.ops import step_ops
from gpuwork.plan import Precision

# aten ops that launch one kernel on a GPU; an event inside another of them is its implementation, not a kernel
# (the CPU sum's fill_, the scatter's index copies); views (expand, as_strided) and allocations launch none
KERNEL_OPS = frozenset({"aten::div", "aten::where", "aten::max", "aten::sub", "aten::exp", "aten::sum", "aten::neg",
                        "aten::mul", "aten::add_", "aten::add", "aten::zero_", "aten::scatter_", "aten::_to_copy",
                        "aten::sigmoid", "aten::sigmoid_backward", "aten::_softmax", "aten::_softmax_backward_data",
                        "aten::silu", "aten::silu_backward"})


def _kernels(torch, fn, x, grad) -> tuple[int, int]:
    """Kernels launched by ``fn(x)`` and by its backward, counted with torch.profiler on the CPU."""
    from torch.profiler import ProfilerActivity, profile

    def counted(events) -> int:
        def nested(e) -> bool:
            p = e.cpu_parent
            while p is not None:
                if p.name in KERNEL_OPS:
                    return True
                p = p.cpu_parent
            return False
        return sum(1 for e in events if e.name in KERNEL_OPS and not nested(e))

    with profile(activities=[ProfilerActivity.CPU]) as forward:
        y = fn(x)
    with profile(activities=[ProfilerActivity.CPU]) as backward:
        y.backward(grad)
    return counted(forward.events()), counted(backward.events())


def _staff_core(torch, autocast_casts: bool):
    """The staff attention core between the two einsums: scale, causal mask with torch.where, softmax op by op
    (own code, the same ops). ``autocast_casts``: the casts CUDA autocast inserts (exp on its fp32 list; P·V's
    16-bit copy of the quotient), written out since CPU autocast lists differ."""

    def core(scores):
        s = scores.shape[-1]
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
        x = torch.where(mask, scores / math.sqrt(16), float("-inf"))
        shifted = x - torch.max(x, dim=-1, keepdim=True)[0]
        if autocast_casts:
            shifted = shifted.float()
        exp = torch.exp(shifted)
        probs = exp / torch.sum(exp, dim=-1, keepdim=True)
        return probs.to(scores.dtype) if autocast_casts else probs

    return core


@pytest.mark.parametrize(("dtype", "autocast"), [("float32", False), ("bfloat16", False), ("bfloat16", True)])
def test_softmax_chain_kernels_match_the_profiler(dtype, autocast):
    torch = pytest.importorskip("torch")
    dt = getattr(torch, dtype)
    x = torch.randn(2, HEADS, 16, 16, dtype=dt, requires_grad=True)
    forward, backward = _kernels(torch, _staff_core(torch, autocast), x, torch.randn(2, HEADS, 16, 16, dtype=dt))
    cost = softmax_chain_cost(dt.itemsize, autocast)
    assert (forward, backward) == (cost.forward_launches, cost.backward_launches)


def test_silu_kernels_match_the_profiler():
    torch = pytest.importorskip("torch")
    x = torch.randn(8, INTER, requires_grad=True)
    forward, backward = _kernels(torch, lambda v: v * torch.sigmoid(v), x, torch.randn(8, INTER))
    cost = silu_cost(4)
    assert (forward, backward) == (cost.forward_launches, cost.backward_launches) == (2, 4)
    x = torch.randn(8, INTER, requires_grad=True)  # a fresh leaf: a second backward would add into x.grad
    fused = _kernels(torch, torch.nn.functional.silu, x, torch.randn(8, INTER))
    assert fused == (1, 1)  # what the fused pricing ("MLP activation") lists


def _spec(extra: dict):
    from gpuwork.measure.accuracy import case_spec

    return case_spec("tiny-cs336", {**CONFIG, **extra})


def _plan(precision: str, seq_len: int = 256, batch_size: int = 4) -> TrainPlan:
    return TrainPlan(model="tiny-cs336", method="scratch", precision=precision, attention="eager",
                     stack="hf-trainer", seq_len=seq_len, batch_size=batch_size)


def _ops(extra: dict, precision: str) -> dict[str, tuple[int, int, float]]:
    """name -> (launches x count, bytes x count) of the step's ops, forward and backward apart."""
    out: dict[str, tuple[int, int, float]] = {}
    for op in step_ops(_plan(precision), _spec(extra)):
        key = f"{op.name} [{op.phase}]"
        launches, count, moved = out.get(key, (0, 0, 0.0))
        out[key] = (launches + op.launches * op.count, count + op.count, moved + op.bytes * op.count)
    return out


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed"])
def test_the_step_lists_the_composite_kernels(precision):
    """Forward and backward of every block list the composite chain's kernels in place of the fused ones."""
    fused, composite = _ops({}, precision), _ops(COMPOSITE, precision)
    autocast = Precision(precision) is not Precision.FP32
    cost = softmax_chain_cost(2 if autocast else 4, autocast)
    names = [k for k in composite if k.startswith("attention softmax chain (composite)")]
    assert len(names) == 2 and not any(k.startswith("attention softmax chain (composite)") for k in fused)
    per_layer = sorted(composite[k][0] // composite[k][1] for k in names)
    assert per_layer == sorted([cost.forward_launches, cost.backward_launches])
    assert any(k.startswith("MLP activation (SiLU, composite)") for k in composite)


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed"])
def test_composite_is_slower_by_at_least_its_extra_bytes(precision):
    """The step with the hand-written ops takes at least the extra bytes they move at the GPU's peak bandwidth
    longer than with torch.softmax and F.silu (each extra kernel also pays its fixed time)."""
    from gpuwork.measure.accuracy import case_estimate, case_gpu
    from gpuwork.measure.heldout import plan_from_json

    fused, composite = _ops({}, precision), _ops(COMPOSITE, precision)
    extra = sum(v[2] for v in composite.values()) - sum(v[2] for v in fused.values())
    assert extra > 0
    gpu = case_gpu("h100_sxm")
    fields = {"model": "tiny-cs336", "method": "scratch", "precision": precision, "attention": "eager",
              "stack": "hf-trainer", "seq_len": 256, "batch_size": 4, "eval_fraction": 0.0}
    plan = plan_from_json(fields)
    slow = case_estimate(plan, gpu, 1, None, None, {**CONFIG, **COMPOSITE}).step_time_s
    fast = case_estimate(plan, gpu, 1, None, None, CONFIG).step_time_s
    assert slow - fast >= extra / gpu.mem_bw_bytes_s


def test_a_time_case_reread_with_composite_ops_prices_them():
    """A time held-out case's re-reading merges its model_config keys into the recorded config, and the re-read
    case's time estimate runs the composite kernels (slower than as recorded)."""
    from gpuwork.measure.accuracy import case_estimate, case_gpu
    from gpuwork.measure.heldout import _case

    raw = {"name": "tiny staff model", "source_id": "src", "source": "https://example.org/run", "gpu_id": "h100_sxm",
           "plan": {"model": "tiny-cs336", "method": "scratch", "precision": "fp32", "attention": "eager",
                    "stack": "hf-trainer", "seq_len": 256, "batch_size": 4, "eval_fraction": 0.0},
           "metric": "step_s", "predicted_tokens_per_s_per_gpu": 1000.0, "measured": 0.02, "model_config": CONFIG,
           "reread": {"model_config": COMPOSITE, "why": "the model's code writes softmax and SiLU op by op",
                      "evidence": [{"url": "https://example.org/model.py", "quote": "x * torch.sigmoid(x)"}]}}
    case = _case(raw)
    again = case.as_reread().time_case()
    assert again.model_config == {**CONFIG, **COMPOSITE} and case.time_case().model_config == CONFIG
    assert {c[0] for c in case.reread.changed} == {"model_config.softmax_impl", "model_config.hidden_act_impl"}
    gpu = case_gpu("h100_sxm")
    reread = case_estimate(again.plan, gpu, 1, None, None, again.model_config).step_time_s
    recorded = case_estimate(case.plan, gpu, 1, None, None, case.model_config).step_time_s
    assert reread > recorded
