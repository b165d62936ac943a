"""Older Unsloth releases return their full logits, and accelerate hands them to the Trainer as an fp32 copy
(stacks unsloth-2023-12 and unsloth-2024-04, stacks.csv loss_kernel inplace-returned; rates_sources.md [M4])."""

import dataclasses

import pytest

from gpuwork.estimate.memory import estimate_memory
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.plan import UNSLOTH_STACKS, Stack, TrainPlan

TOKENS, VOCAB, HIDDEN, LAYERS = 2 * 2048, 128_256, 2048, 16  # llama-3.2-1b, batch 2 x 2,048


def _est(stack: str, **kw):
    plan = TrainPlan(**{"model": "llama-3.2-1b", "method": "qlora", "precision": "fp16-mixed", "seq_len": 2048,
                        "batch_size": 2, "grad_checkpointing": True, "lora_targets": ("all-linear",), "kbit_upcast": False,
                        "stack": stack, **kw})
    return estimate_memory(plan, resolve(plan).spec)


def test_the_older_releases_differ_from_today_only_in_memory():
    stacks = load_rates().stacks
    today = stacks[Stack.UNSLOTH]
    assert UNSLOTH_STACKS == {Stack.UNSLOTH, Stack.UNSLOTH_2023_12, Stack.UNSLOTH_2024_04}
    for old, checkpoint in ((Stack.UNSLOTH_2023_12, "recompute"), (Stack.UNSLOTH_2024_04, "offload")):
        profile = stacks[old]
        assert profile.loss_kernel == "inplace-returned" and profile.checkpoint == checkpoint
        assert "[M4]" in profile.memory_basis
        # the kernels (what the time model reads) are today's
        same = dataclasses.replace(profile, stack=today.stack, basis=today.basis, memory_basis=today.memory_basis,
                                   loss_kernel=today.loss_kernel, checkpoint=today.checkpoint)
        assert same == today


def test_the_fp32_copy_of_the_returned_logits_is_alive_only_at_the_forward_end():
    today, old = _est("unsloth"), _est("unsloth-2024-04")
    copy = 4 * VOCAB * TOKENS
    assert old.phase_peaks["forward"] - today.phase_peaks["forward"] == copy
    for phase in ("loss backward", "block backward", "optimizer step"):
        assert old.phase_peaks[phase] == today.phase_peaks[phase]
    assert old.peak_phase == "forward"
    assert old.breakdown["logits_and_loss"] - today.breakdown["logits_and_loss"] == copy
    assert old.host_bytes == today.host_bytes > 0  # both offload the checkpointed block inputs


@pytest.mark.parametrize("precision", ["bf16", "fp32"])
def test_no_copy_without_mixed_precision(precision: str):
    # accelerate wraps the forward in convert_outputs_to_fp32 only under fp16/bf16 mixed precision
    kw = {"method": "lora", "precision": precision}
    assert _est("unsloth-2024-04", **kw).phase_peaks == _est("unsloth", **kw).phase_peaks


def test_releases_before_april_2024_keep_every_checkpointed_block_input_on_the_gpu():
    before, after = _est("unsloth-2023-12"), _est("unsloth-2024-04")
    block_input = 2 * HIDDEN * TOKENS  # one fp16 hidden state per block
    assert before.host_bytes == 0 and after.host_bytes == (LAYERS - 1) * block_input
    assert before.phase_peaks["forward"] - after.phase_peaks["forward"] == (LAYERS - 1) * block_input


def test_the_copy_is_replayed_by_the_allocator_under_varying_lengths():
    lengths = ((512, 0.5), (2048, 0.5))
    today, old = _est("unsloth", lengths=lengths), _est("unsloth-2024-04", lengths=lengths)
    assert old.peak_reserved_bytes > today.peak_reserved_bytes + 4 * VOCAB * TOKENS


@pytest.mark.parametrize(("batch_size", "seq_len"), [(2, 512), (4, 256), (1, 1024)])
def test_todays_release_returns_the_logits_of_a_micro_batch_of_at_most_1024_tokens(batch_size: int, seq_len: int):
    # llama.py CausalLM_fast_forward: "if bsz*q_len <= 1024: RETURN_LOGITS = True" (from 2024-12-10, release 2025.9.7)
    today = _est("unsloth", batch_size=batch_size, seq_len=seq_len)
    tokens = batch_size * seq_len
    # fp16 final RMSNorm input + fp32 rstd, the 16-bit logits the loss saves, its fp32 logsumexp, the fp32 copy
    assert today.breakdown["logits_and_loss"] == tokens * (2 * HIDDEN + 4 + 2 * VOCAB + 4 + 4 * VOCAB)
    assert today.phase_peaks == _est("unsloth-2024-04", batch_size=batch_size, seq_len=seq_len).phase_peaks


@pytest.mark.parametrize(("batch_size", "seq_len"), [(2, 513), (1, 1025)])
def test_todays_release_returns_no_logits_above_1024_tokens(batch_size: int, seq_len: int):
    tokens = batch_size * seq_len
    today = _est("unsloth", batch_size=batch_size, seq_len=seq_len)
    old = _est("unsloth-2024-04", batch_size=batch_size, seq_len=seq_len)
    assert today.breakdown["logits_and_loss"] == tokens * (2 * HIDDEN + 4 + 2 * VOCAB + 4)
    assert old.phase_peaks["forward"] - today.phase_peaks["forward"] == 4 * VOCAB * tokens


def test_short_micro_batches_return_logits_without_a_copy_outside_mixed_precision():
    # accelerate converts the outputs to fp32 only under mixed precision: pure bf16 keeps the 16-bit logits alone
    pure = _est("unsloth", method="lora", precision="bf16", seq_len=512)
    assert pure.breakdown["logits_and_loss"] == 2 * 512 * (2 * HIDDEN + 4 + 2 * VOCAB + 4)
