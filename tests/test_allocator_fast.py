"""The fast whole-step replay (gpuwork.estimate.allocator_step) gives the plain replay's numbers, and the sizing
tables bound it by each row's card.

The fast path forks the part of the program every optimizer implementation shares (the parameters, the first step,
the AdamW states) from one cached replay, and runs the allocator's inlined loop; the plain path replays the whole
program on an empty allocator, and the reference of tests/test_allocator_replay.py (a block list per segment, the
allocator before the faster replay) replays it request by request. No expected number is written down: every
comparison runs the replays."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_allocator_replay import BeforeAllocator

from gpuwork import TrainPlan
from gpuwork.estimate import memory as memory_model
from gpuwork.estimate.allocator import StepTensors
from gpuwork.estimate.allocator_step import (
    ParamLayout,
    StepBytes,
    _built_in_order,
    replayed_allocator,
    step_requests,
)
from gpuwork.estimate.fitmatrix import fit_matrix
from gpuwork.estimate.offers import fit_plan
from gpuwork.facts.catalog import load_offers
from gpuwork.facts.model import build_spec
from gpuwork.facts.resolve import resolve

IMPLS = ("foreach", "for-loop", "fused", "out-of-place")


def _layout(hidden: int, inner: int, vocab: int, layers: int, gated: bool, tied: bool) -> ParamLayout:
    """A Llama-like block (q, k, v, o, the MLP's matrices, two norms) as allocator_step.param_layout makes it."""
    mats = (hidden * hidden,) * 4 + (hidden * inner,) * (3 if gated else 2)
    return ParamLayout(embed=(vocab * hidden,), block=mats + (hidden, hidden), head=() if tied else (vocab * hidden,),
                       layers=layers, linears=(True,) * len(mats) + (False, False))


def _per_token(hidden: int, inner: int, counts: tuple[int, int]) -> tuple[int, ...]:
    """Bytes per token of ``counts`` hidden-sized and intermediate-sized fp32 tensors."""
    return (4 * hidden,) * counts[0] + (4 * inner,) * counts[1]


shapes = st.fixed_dictionaries({
    "hidden": st.sampled_from((256, 512, 768, 1024, 1600, 2048, 2560)),
    "ratio": st.sampled_from((2, 4)),
    "vocab": st.sampled_from((1000, 10000, 32000, 50257)),
    "layers": st.integers(1, 5),
    "gated": st.booleans(),
    "tied": st.booleans(),
    "seq": st.sampled_from((127, 128, 500, 512, 1000, 1024, 2047)),
    "batch": st.sampled_from((1, 2, 4, 8)),
    "saved": st.tuples(st.integers(0, 6), st.integers(0, 3)),
    "transient": st.tuples(st.integers(0, 2), st.integers(0, 2)),
    "inner": st.tuples(st.integers(0, 2), st.integers(0, 1)),
    "checkpointed": st.booleans(),
    "param": st.sampled_from((2, 4)),
    "mixed": st.booleans(),
    "impl": st.sampled_from(IMPLS),
})


def _program_args(s: dict) -> tuple[ParamLayout, StepBytes, StepTensors, int]:
    h, i = s["hidden"], s["hidden"] * s["ratio"]
    layout = _layout(h, i, s["vocab"], s["layers"], s["gated"], s["tied"])
    saved, transient = _per_token(h, i, s["saved"]), _per_token(h, i, s["transient"])
    step = StepTensors(layers=s["layers"], layer_saved=saved if not s["checkpointed"] else (4 * h,),
                       layer_transient=transient + (saved if s["checkpointed"] else ()), head=(4 * s["vocab"],),
                       loss_transient=(4 * s["vocab"],), recompute=saved if s["checkpointed"] else (),
                       backward_transient=_per_token(h, i, s["inner"]))
    by = StepBytes(param=s["param"], grad=s["param"], state=4, copy=2 if s["mixed"] else 0, impl=s["impl"])
    return layout, by, step, s["seq"] * s["batch"]


def _reference(program) -> tuple[int, tuple[int, ...]]:
    """(reserved peak, segment sizes) of ``program`` replayed request by request on the reference allocator: a size
    is a malloc, ``~i`` releases the i-th block taken, a burst mallocs its sizes and releases them in its order."""
    alloc, held = BeforeAllocator(), []
    for op in program:
        if isinstance(op, tuple):
            inner: list[int | None] = []
            for request in op[2]:
                if request > 0:
                    inner.append(alloc.malloc(request))
                else:
                    alloc.release(inner[~request])
        elif op > 0:
            held.append(alloc.malloc(op))
        else:
            alloc.release(held[~op])
    return alloc.peak_reserved, alloc.segment_sizes()


@settings(max_examples=40, deadline=None, database=None)
@given(shape=shapes, bound=st.sampled_from((None, 0.5, 0.8, 0.95, 0.99)))
def test_the_forked_replay_is_the_plain_replay(shape, bound):
    args = _program_args(shape)
    plain = replayed_allocator(*args, forked=False)
    limit = None if bound is None else int(plain.peak_reserved * bound)
    if limit is not None:
        plain = replayed_allocator(*args, limit, forked=False)
    fast = replayed_allocator(*args, limit)
    assert (fast.peak_reserved, fast.reserved, fast.released, fast.segments, fast.free) == (
        plain.peak_reserved, plain.reserved, plain.released, plain.segments, plain.free)
    # the implementations fork from the same replay: each one's answer is still its own plain replay's
    for impl in IMPLS:
        other = (args[0], StepBytes(args[1].param, args[1].grad, args[1].state, args[1].copy, impl), *args[2:])
        assert replayed_allocator(*other, limit).segments == replayed_allocator(*other, limit, forked=False).segments


@settings(max_examples=25, deadline=None, database=None)
@given(shape=shapes)
def test_the_replay_is_the_reference_allocator_s(shape):
    args = _program_args(shape)
    program = step_requests(*args)[0]
    # the program built from its shared parts (first step, later steps, updates) is the one built step by step,
    # with the same allocated peak and the same update marks
    assert step_requests(*args) == _built_in_order(*args)
    alloc = replayed_allocator(*args)
    assert (alloc.peak_reserved, alloc.segment_sizes()) == _reference(program)


# the CS336 staff 'xl' Transformer LM (2.7B): its config states how it writes softmax and SiLU (a hand-written model)
_XL = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 10000, "hidden_size": 2560,
       "intermediate_size": 10240, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
       "head_dim": 80, "max_position_embeddings": 8192, "rms_norm_eps": 1e-05, "hidden_act": "silu",
       "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
       "softmax_impl": "composite", "hidden_act_impl": "composite"}


def test_the_sizing_tables_bound_the_replay_by_each_row_s_card():
    # the xl at 2 x 1,024 tokens, fp32, foreach AdamW: unbounded the replay's cache passes an 80 GB H100's memory;
    # on that card a failed mapping releases the cached segments (estimate_memory(device_bytes=)), on a 141 GB H200
    # NVL nothing is released and the figure is the unbounded one
    spec = build_spec(_XL, "staff-xl")
    plan = TrainPlan(model="staff-xl", method="scratch", precision="fp32", attention="eager", seq_len=1024,
                     batch_size=2, optimizer_impl="foreach", stack="torch-loop")
    inputs = resolve(plan, spec)
    small, large = inputs.gpu("h100_sxm"), inputs.gpu("h200_nvl")
    free = memory_model.estimate_memory(plan, spec)
    bounded = memory_model.estimate_memory(plan, spec, device_bytes=small.memory_total_bytes)
    assert bounded.device_total_bytes < small.memory_total_bytes < free.device_total_bytes < large.memory_total_bytes
    matrix = fit_matrix(plan, load_offers(), inputs, counts=(1,), gpu_ids=["h100_sxm", "h200_nvl"])
    assert matrix.cell("h100_sxm", 1).device_total_bytes == bounded.device_total_bytes
    assert matrix.cell("h200_nvl", 1).device_total_bytes == free.device_total_bytes
    memo: dict = {}
    assert fit_plan(plan, small, max_gpus=1, spec=spec, memo=memo).device_total_bytes == bounded.device_total_bytes
    assert fit_plan(plan, large, max_gpus=1, spec=spec, memo=memo).device_total_bytes == free.device_total_bytes
    # a Hugging Face model's figure does not depend on the card: one estimate serves every row
    hf = TrainPlan(model="llama-3.2-1b", method="full", seq_len=512)
    rows = fit_matrix(hf, load_offers(), resolve(hf), counts=(1,), gpu_ids=["h100_sxm", "h200_nvl"])
    assert rows.cell("h100_sxm", 1).device_total_bytes == rows.cell("h200_nvl", 1).device_total_bytes
