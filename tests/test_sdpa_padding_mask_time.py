"""SDPA with a padding mask runs the memory-efficient kernel, not flash (estimate.ops.sdpa_padding_mask,
docs/time_misses.md#sdpa-with-a-padding-mask): the op list and its price against the plan's lengths and stack, a
histogram's micro-batches split by whether they carry padding, and the mask a real transformers model hands SDPA."""

from __future__ import annotations

import dataclasses

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.lengths import padded_lengths, padding_parts
from gpuwork.estimate.ops import StackKernels, sdpa_padding_mask, step_ops
from gpuwork.estimate.steptime import price_ops, stack_kernels
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import get_spec
from gpuwork.facts.rates import load_rates
from gpuwork.plan import Stack, TrainPlan, lengths_text
from gpuwork.sizing import estimate_time

LLAMA_8B = "llama-3.1-8b"


def _plan(**changes) -> TrainPlan:
    base = dict(model=LLAMA_8B, method="lora", precision="bf16", seq_len=4096, batch_size=2,
                lora_targets="all-linear", grad_checkpointing=True)
    return TrainPlan(**{**base, **changes})


def _stack(name: str) -> StackKernels:
    return stack_kernels(load_rates().stacks[Stack(name)])


def _attention(plan: TrainPlan, stack: str = "hf-trainer"):
    ops = step_ops(plan, get_spec(plan.model), _stack(stack))
    forward = [o for o in ops if o.name == "attention (fused kernel)" and o.phase.value == "forward"]
    assert len(forward) == 1
    return forward[0], [o for o in ops if o.kind.value == "attention"]


def test_padded_rows_run_the_memory_efficient_kernel_over_the_whole_matrix():
    spec = get_spec(LLAMA_8B)
    b, s, a, d = 2, 4096, spec.num_heads, spec.head_dim
    full = 4.0 * b * s * s * a * d
    fixed, _ = _attention(_plan())
    assert not fixed.mem_efficient and fixed.causal
    assert fixed.flops == pytest.approx(full * 0.5 * (1 + 128 / s))  # flash skips the blocks above the diagonal
    padded, both = _attention(_plan(lengths="padded"))
    assert padded.mem_efficient and not padded.causal
    assert padded.flops == pytest.approx(full)  # the mask is added over every block
    assert padded.bytes == pytest.approx(fixed.bytes + 2 * b * s * s)  # and read once (bf16)
    assert all(o.mem_efficient for o in both) and len(both) == 3  # forward, recompute and backward


@pytest.mark.parametrize("stack", ["unsloth", "torchtune", "framework"])
def test_stacks_that_hand_sdpa_no_padding_mask_keep_flash(stack):
    """Unsloth drops the mask in training, torchtune's padded collate passes none, the frameworks pack."""
    assert not _attention(_plan(lengths="padded", stack=stack), stack)[0].mem_efficient


@pytest.mark.parametrize("changes", [{"attention": "flash"}, {"attention": "eager"}, {"lengths": "packed"},
                                     {"lengths": "fixed"}])
def test_only_sdpa_on_padded_rows_takes_the_mask(changes):
    plan = _plan(**{"lengths": "padded", **changes})
    assert not sdpa_padding_mask(plan, _stack("hf-trainer"))
    assert not [o for o in step_ops(plan, get_spec(LLAMA_8B), _stack("hf-trainer")) if o.mem_efficient]


@pytest.mark.parametrize("gpu_id", ["a100_80_sxm", "h100_sxm"])
def test_memory_efficient_kernel_runs_at_the_flash_rate_times_the_fa1_to_fa2_ratio(gpu_id):
    """kernels.csv: sdpa_mem_efficient_fraction / flash_attn_fwd_fraction (the FA2 paper's A100 figures) of the
    family's full-matrix flash rate at the same shape, forward and backward."""
    rates, gpu = load_rates(), get_gpu(gpu_id)
    _, ops = _attention(_plan(lengths="padded"))
    as_flash = tuple(dataclasses.replace(o, mem_efficient=False) for o in ops)
    profile = rates.stacks[Stack.HF_TRAINER]

    def seconds(o):
        return price_ops(o, gpu, rates.device(gpu_id), rates, profile).by_kind["attention"]

    ratio = rates.kernel("sdpa_mem_efficient_fraction") / rates.kernel("flash_attn_fwd_fraction")
    assert seconds(tuple(ops)) == pytest.approx(seconds(as_flash) / ratio, rel=1e-9)
    assert ratio < 1


def test_a_padded_step_prices_more_attention_than_the_fixed_one():
    fixed = estimate_time(_plan(), "a100_80_sxm")
    padded = estimate_time(_plan(lengths="padded"), "a100_80_sxm")
    assert padded.breakdown["attention"] > 3 * fixed.breakdown["attention"]  # 2 x the FLOPs at 0.48 of the rate
    assert padded.breakdown["matmul"] == pytest.approx(fixed.breakdown["matmul"])


def test_a_histogram_splits_its_batches_into_padded_ones_and_those_of_one_length():
    plan = _plan(lengths=((100, 1.0), (200, 1.0)), seq_len=256)
    mix = padded_lengths(plan)
    assert mix == ((0.25, 100), (0.75, 200))
    # two sequences of one length (1/4 each) carry no padding; a 100 and a 200 (1/2) are padded to 200
    assert padding_parts(plan, _stack("hf-trainer")) == (("padded", ((0.5, 200),)),
                                                         ("fixed", ((0.25, 100), (0.25, 200))))
    assert padding_parts(plan, _stack("unsloth")) == (("fixed", mix),)
    assert padding_parts(plan.replace(batch_size=1), _stack("hf-trainer")) == (("fixed", ((0.5, 100), (0.5, 200))),)
    one_length = plan.replace(lengths=((200, 3.0),))
    assert padding_parts(one_length, _stack("hf-trainer")) == (("fixed", ((1.0, 200),)),)
    assert padding_parts(_plan(), _stack("hf-trainer")) == ()


def test_a_histogram_step_is_the_weighted_step_of_its_padded_and_unpadded_batches():
    plan = _plan(lengths=((1024, 1.0), (4096, 1.0)))

    def attention(p: TrainPlan) -> float:
        return estimate_time(p, "a100_80_sxm").breakdown["attention"]

    expected = (0.5 * attention(plan.replace(lengths="padded"))
                + 0.25 * attention(plan.replace(lengths="fixed"))
                + 0.25 * attention(plan.replace(seq_len=1024, lengths="fixed")))
    assert attention(plan) == pytest.approx(expected, rel=1e-6)
    # batch 1 never pads: every micro-batch flash at its own length
    one = plan.replace(batch_size=1)
    assert attention(one) == pytest.approx(0.5 * attention(one.replace(lengths="fixed"))
                                           + 0.5 * attention(one.replace(seq_len=1024, lengths="fixed")), rel=1e-6)


def test_a_traced_block_takes_the_same_kernel(monkeypatch):
    """A family without a hand-written block (phi-1.5's bundled traced profile): padded rows price its fused
    attention as the memory-efficient kernel over the whole matrix, as the hand-written block does."""
    from pathlib import Path

    from gpuwork.estimate.traced_ops import with_traced_blocks
    from gpuwork.facts.block_profiles import BlockProfileCache
    from gpuwork.facts.model import spec_for_plan
    from gpuwork.measure.block_profile import block_profile_for

    phi = str(Path(__file__).resolve().parent / "data" / "models" / "phi-1_5.json")

    def no_trace(*_a, **_k):
        raise AssertionError("traced although bundled")

    monkeypatch.setattr("gpuwork.measure.block_profile.trace_block_profile", no_trace)
    base = TrainPlan(model=phi, method="lora", precision="bf16", seq_len=1024, batch_size=2,
                     lora_targets=("all-linear",))
    spec = spec_for_plan(base)
    profile = block_profile_for(base, BlockProfileCache())

    def attention(plan: TrainPlan):
        ops = with_traced_blocks(step_ops(plan, spec, _stack("hf-trainer")), plan, spec, profile)
        return [o for o in ops if o.attention_pass and o.phase.value == "forward"]

    fixed, padded = attention(base), attention(base.replace(lengths="padded"))
    assert fixed and len(fixed) == len(padded)
    assert not any(o.mem_efficient for o in fixed) and all(o.mem_efficient for o in padded)
    for f, p in zip(fixed, padded, strict=True):  # causal skipping undone: the whole matrix
        assert p.flops == pytest.approx(f.flops / (0.5 * (1 + 128 / 1024)))


def test_padded_is_a_lengths_kind_that_round_trips_and_a_typo_names_it():
    plan = TrainPlan(lengths="padded")
    assert plan.lengths == "padded" and plan.length_histogram is None and lengths_text(plan.lengths) == "padded"
    assert TrainPlan.from_dict(plan.as_dict()).lengths == "padded"
    with pytest.raises(PlanError) as caught:
        TrainPlan(lengths="paded")
    assert "padded" in str(caught.value)


@pytest.mark.parametrize(("padding", "masked"), [(False, False), (True, True)])
def test_transformers_hands_sdpa_a_mask_only_when_the_batch_has_padding(monkeypatch, padding, masked):
    """A tiny Llama under transformers' SDPA path: an all-ones attention mask reaches SDPA as no mask with
    is_causal (flash may run); one zero anywhere in the batch makes it a 4-D mask with is_causal false."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")

    from gpuwork.facts.model import load_config

    config, _ = load_config("tiny-llama")
    config = {k: v for k, v in config.items() if k != "transformers_version"}
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config),
                                                          attn_implementation="sdpa")
    model.train()
    calls: list[tuple[bool, bool]] = []
    original = torch.nn.functional.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append((kwargs.get("attn_mask") is not None, bool(kwargs.get("is_causal"))))
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    ids = torch.randint(0, config["vocab_size"], (2, 16))
    mask = torch.ones((2, 16), dtype=torch.long)
    if padding:
        mask[1, 10:] = 0  # the second row's last six tokens are padding
    model(input_ids=ids, attention_mask=mask, labels=ids)
    assert calls and set(calls) == {(masked, not masked)}
