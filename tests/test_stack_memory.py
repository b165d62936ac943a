"""A stack changes memory, not only time: stacks.csv memory columns read by estimate_memory."""

import dataclasses

import pytest

from gpuwork.errors import CatalogError
from gpuwork.estimate.memory import _chunked_logits_bytes, estimate_memory
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.plan import Stack, TrainPlan
from gpuwork.units import MIB


def _est(stack: str, **kw):
    plan = TrainPlan(**{"model": "llama-3.2-1b", "method": "lora", "seq_len": 4096, "batch_size": 2,
                        "stack": stack, **kw})
    return estimate_memory(plan, resolve(plan).spec)


def test_the_data_names_each_stacks_memory_behaviour():
    stacks = load_rates().stacks
    assert stacks[Stack.HF_TRAINER].loss_kernel == "eager" and stacks[Stack.HF_TRAINER].checkpoint == "recompute"
    assert stacks[Stack.HF_LIGER].loss_kernel == "chunked" and stacks[Stack.HF_LIGER].swiglu_saved == 2
    assert stacks[Stack.UNSLOTH].loss_kernel == "inplace" and stacks[Stack.UNSLOTH].checkpoint == "offload"
    for profile in stacks.values():
        assert "[M" in profile.memory_basis  # every memory behaviour names its source


def test_liger_never_stores_the_full_logits():
    hf, liger = _est("hf-trainer"), _est("hf-liger")
    tokens, vocab, h = 2 * 4096, 128_256, 2048
    # eager: fp32 log_softmax of every token's logits is saved (4 bytes x V per token)
    assert hf.breakdown["logits_and_loss"] >= 4 * vocab * tokens
    # Liger: the (tokens x h) input gradient plus, in the forward, one chunk of about tokens x h logits
    assert liger.breakdown["logits_and_loss"] < 4 * h * tokens * 2 + 8 * tokens + 64 * MIB
    assert liger.peak_allocated_bytes < 0.6 * hf.peak_allocated_bytes


def test_liger_chunk_follows_its_source_formula():
    class Spec:
        vocab_size, hidden_size = 32_000, 4096
    # the worked example in fused_linear_cross_entropy.py: BT = 4096 x 4, V = 32000, H = 4096 -> 2048 rows
    assert _chunked_logits_bytes(Spec, 4096 * 4, 2) == 2048 * 32_000 * 2
    assert _chunked_logits_bytes(Spec, 3, 2) == 1 * 32_000 * 2  # never more rows than tokens


def test_unsloth_keeps_16_bit_logits_once_and_offloads_checkpoints():
    hf, uns = _est("hf-trainer"), _est("unsloth")
    tokens, vocab = 2 * 4096, 128_256
    assert uns.breakdown["logits_and_loss"] < hf.breakdown["logits_and_loss"] / 3
    assert uns.breakdown["logits_and_loss"] >= 2 * vocab * tokens  # the bf16 logits themselves
    hf_gc, uns_gc = _est("hf-trainer", grad_checkpointing=True), _est("unsloth", grad_checkpointing=True)
    per_block = 2 * 2048 * tokens  # one bf16 hidden state per block
    layers = 16
    assert uns_gc.host_bytes == (layers - 1) * per_block
    assert uns_gc.host_transfer_bytes == 2 * uns_gc.host_bytes
    assert any(w.code == "memory.activation_offload" for w in uns_gc.warnings)
    assert hf_gc.host_bytes == 0 and hf_gc.host_transfer_bytes == 0
    # without checkpointing nothing is offloaded
    assert uns.host_bytes == 0


def test_fused_swiglu_and_rmsnorm_save_less_without_checkpointing():
    hf, liger = _est("hf-trainer"), _est("hf-liger")
    assert liger.breakdown["activations"] < hf.breakdown["activations"]


def test_without_stack_facts_the_estimate_is_the_eager_one():
    plan = TrainPlan(model="llama-3.2-1b", method="lora", seq_len=2048, stack="hf-liger")
    spec = resolve(plan).spec
    bare = dataclasses.replace(spec, extras={k: v for k, v in spec.extras.items() if k != "stacks"})
    eager = estimate_memory(plan.replace(stack="hf-trainer"), spec)
    assert estimate_memory(plan, bare).peak_allocated_bytes == eager.peak_allocated_bytes
    # an explicit profile wins over the spec's
    hf_profile = load_rates().stacks[Stack.HF_TRAINER]
    assert estimate_memory(plan, spec, hf_profile).peak_allocated_bytes == eager.peak_allocated_bytes
    assert estimate_memory(plan, spec).peak_allocated_bytes < eager.peak_allocated_bytes


def test_the_loader_refuses_an_unknown_memory_value(tmp_path):
    import shutil

    from gpuwork.facts.paths import data_dir

    for name in ("rates.csv", "kernels.csv"):
        shutil.copy(data_dir() / name, tmp_path / name)
    text = (data_dir() / "stacks.csv").read_text(encoding="utf-8")
    (tmp_path / "stacks.csv").write_text(text.replace(",chunked,", ",tiled,", 1), encoding="utf-8")
    with pytest.raises(CatalogError) as info:
        load_rates(tmp_path)
    assert info.value.msg["column"] == "loss_kernel" and info.value.msg["value"] == "tiled"
