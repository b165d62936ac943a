"""Tests for gpuwork.estimate.disk: disk lines worked by hand (docs/sources.md#s-disk), fields it must not
read, compression, pre-quantized downloads, checkpoint sizes per optimizer and sharding."""

from __future__ import annotations

import math

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.disk import (
    BYTES_PER_TOKEN_TEXT,
    DISK_MARGIN,
    ENVIRONMENT_BYTES,
    NF4_DQ_BYTES_PER_PARAM,
    checkpoint_size,
    token_id_bytes,
)
from gpuwork.facts.model import count_params, get_spec
from gpuwork.message import msg
from gpuwork.plan import TrainPlan
from gpuwork.sizing import checkpoint_bytes, estimate_disk

P_8B = 8_030_261_248  # Llama-3.1-8B parameters (data/model_specs.json)
ADAPTER_8B_R16_QV = 6_815_744  # 32 layers x 16 x ((4096+4096) + (4096+1024))


def test_token_id_bytes_by_vocabulary():
    assert token_id_bytes(50_257) == 2  # GPT-2: uint16 (nanoGPT prepare.py)
    assert token_id_bytes(65_535) == 2
    assert token_id_bytes(65_536) == 4  # 2**16 ids no longer fit uint16
    assert token_id_bytes(128_256) == 4  # Llama 3


def test_lora_disk_worked_example():
    """Llama-3.1-8B LoRA r16 q,v; 200 GB dataset (50 B tokens at 4 B/token); 2 checkpoints kept."""
    plan = TrainPlan(model="llama-3.1-8b", method="lora", dataset_bytes=200 * 10**9, dataset_tokens=50 * 10**9)
    disk = estimate_disk(plan)
    assert disk.line("dataset_raw").bytes == 200 * 10**9
    assert disk.line("tokenized").bytes == 50 * 10**9 * 4  # vocab 128,256 -> uint32
    assert disk.line("tokenized").rule == msg("disk.rule.tokenized_uint32", tokens=50 * 10**9, id_bytes=4,
                                              vocab=128_256, limit=65_536)
    assert disk.line("dataset_raw").rule == msg("disk.rule.given")
    assert disk.line("base_model").bytes == 2 * P_8B  # bf16 safetensors: 16,060,522,496 B
    # checkpoint: adapters in fp32 (4 B) + AdamW m, v in fp32 (8 B) = 12 B x 6,815,744 = 81,788,928 B
    assert disk.checkpoint.total_bytes == 12 * ADAPTER_8B_R16_QV == 81_788_928
    assert disk.checkpoints_on_disk == 3  # 2 kept + the one being written
    assert disk.line("checkpoints").bytes == 3 * 81_788_928
    assert disk.line("checkpoints").label == msg("disk.label.checkpoints", kept=2)
    assert disk.line("checkpoints").rule == msg("disk.rule.checkpoints", count=3, each_bytes=81_788_928,
                                                what=msg("disk.what.adapter"))
    assert disk.line("export").bytes == 4 * ADAPTER_8B_R16_QV
    assert disk.line("environment").bytes == ENVIRONMENT_BYTES
    subtotal = 200e9 + 200e9 + 2 * P_8B + 3 * 81_788_928 + 4 * ADAPTER_8B_R16_QV + ENVIRONMENT_BYTES
    assert disk.subtotal_bytes == subtotal
    assert disk.margin_bytes == math.ceil(subtotal * DISK_MARGIN)
    assert disk.recommended_bytes == disk.subtotal_bytes + disk.margin_bytes
    assert disk.recommended_bytes == pytest.approx(523.6e9, rel=1e-3)
    assert not disk.notes
    assert {"lines", "recommended_bytes", "checkpoint"} <= set(disk.as_dict())


def test_full_checkpoints_follow_the_real_optimizer_bytes():
    spec = get_spec("llama-3.1-8b")
    plan = TrainPlan(model="llama-3.1-8b", method="full", precision="bf16-mixed", gpus=8, sharding="fsdp")
    # mixed precision: fp32 parameters (4 B) + AdamW m, v in fp32 (8 B) = 12 B/param (docs/sources.md#s-disk)
    assert checkpoint_bytes(plan) == 12 * P_8B
    # DeepSpeed ZeRO, mixed: 16-bit weights (2) + fp32 master (4) + m, v (8) = 14 B/param
    zero = checkpoint_size(plan.replace(sharding="zero3"), spec)
    assert (zero.weights_bytes, zero.master_bytes, zero.optimizer_bytes) == (2 * P_8B, 4 * P_8B, 8 * P_8B)
    # pure bf16: weights 2 B + AdamW states in the parameter dtype 2 x 2 B = 6 B/param
    assert checkpoint_bytes(plan.replace(precision="bf16", gpus=1, sharding="ddp")) == 6 * P_8B
    # 8-bit AdamW: 2 B of states per param + an fp32 absmax per 256 values, much smaller than AdamW
    eight = checkpoint_size(plan.replace(precision="bf16", gpus=1, sharding="ddp", optimizer="adamw-8bit"), spec)
    assert eight.optimizer_bytes == pytest.approx(2 * P_8B, rel=0.05)
    # SGD: one momentum buffer
    assert checkpoint_size(plan.replace(precision="bf16", gpus=1, sharding="ddp", optimizer="sgd"), spec).optimizer_bytes \
        == 2 * count_params(spec, plan).trainable


def test_qlora_downloads_a_prequantized_base():
    plan = TrainPlan(model="llama-3.1-8b", method="qlora")
    counts = count_params(get_spec("llama-3.1-8b"), plan)
    disk = estimate_disk(plan)
    # NF4 + double quant: 4.127 bits for the quantized linears, 2 B for the rest (embeddings, norms, lm_head)
    expected = math.ceil(counts.quantized * NF4_DQ_BYTES_PER_PARAM) + 2 * (counts.base - counts.quantized)
    assert disk.line("base_model").bytes == expected
    assert 0.55 <= expected / counts.base <= 0.75  # docs/sources.md#s-disk: 0.55-0.75 B/p (8B: large vocab)
    assert estimate_disk(plan, prequantized_base=False).line("base_model").bytes == 2 * counts.base


def test_dataset_from_tokens_and_compression():
    plan = TrainPlan(model="gpt2", method="full", dataset_tokens=1_000_000)
    disk = estimate_disk(plan)
    assert disk.line("dataset_raw").bytes == 1_000_000 * BYTES_PER_TOKEN_TEXT
    assert disk.line("tokenized").bytes == 2_000_000  # GPT-2 vocab 50,257 -> uint16
    assert disk.line("tokenized").rule.code == "disk.rule.tokenized_uint16"
    packed = estimate_disk(plan.replace(dataset_bytes=1_000_000), compression_ratio=3)
    assert packed.line("dataset_raw").bytes == 1_000_000  # the download as given
    assert packed.line("dataset_unpacked").bytes == 3_000_000  # unpacked next to it
    derived = estimate_disk(plan, compression_ratio=2)  # tokens give the unpacked text
    assert derived.line("dataset_unpacked").bytes == 4_000_000 and derived.line("dataset_raw").bytes == 2_000_000
    with pytest.raises(PlanError, match="compression_ratio") as info:
        estimate_disk(plan, compression_ratio=0.5)
    assert info.value.msg.code == "error.disk.compression_ratio"
    assert info.value.text("ru").startswith("compression_ratio=0.5: нужно число ≥ 1 (размер после распаковки")


def test_disk_ignores_fields_it_must_not_read():
    plan = TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=2048)
    base = estimate_disk(plan)
    other = estimate_disk(plan.replace(seq_len=512, batch_size=8, epochs=3, eval_fraction=0.2,
                                       checkpoint_every_steps=10))
    assert other.recommended_bytes == base.recommended_bytes
    more = estimate_disk(plan.replace(checkpoints_kept=5))
    assert more.line("checkpoints").bytes == 6 * base.checkpoint.total_bytes


def test_notes_and_special_cases():
    # 200 GB of data but the default 100 M tokens: 2,000 B per token is flagged
    odd = estimate_disk(TrainPlan(model="llama-3.1-8b", method="lora", dataset_bytes=200 * 10**9))
    assert odd.notes == (msg("disk.note.bytes_per_token", bytes_per_token=2000.0, expected=BYTES_PER_TOKEN_TEXT),)
    assert odd.as_dict()["notes"] == [{"code": "disk.note.bytes_per_token",
                                       "params": {"bytes_per_token": 2000.0, "expected": 4.0}}]
    assert estimate_disk(TrainPlan(model="gpt2", method="full", gpus=2)).notes == (msg("disk.note.multi_node"),)
    scratch = estimate_disk(TrainPlan(model="gpt2", method="scratch"))
    assert "base_model" not in {item.key for item in scratch.lines}
    none_kept = estimate_disk(TrainPlan(model="gpt2", method="full", checkpoints_kept=0))
    assert "checkpoints" not in {item.key for item in none_kept.lines}
    merged = estimate_disk(TrainPlan(model="gpt2", method="lora", lora_targets=("c_attn",)), merged_export=True)
    assert merged.line("export").bytes > 2 * get_spec("gpt2").params_total
    assert estimate_disk(TrainPlan(model="gpt2", method="full"), include_environment=False).lines[-1].key == "export"
