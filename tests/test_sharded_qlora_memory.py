"""QLoRA under FSDP / ZeRO-3 keeps the model and its adapters in the 16-bit storage dtype (estimate.memory.sharded_qlora):
TRL skips prepare_model_for_kbit_training and creates the adapters with autocast_adapter_dtype=False. Numbers by hand."""

from __future__ import annotations

import math

import pytest

from gpuwork import TrainPlan, count_params, estimate_memory, get_spec
from gpuwork.estimate.memory import Dtypes, _consumer_saved, memory_dtypes, plan_dtypes, sharded_qlora
from gpuwork.facts.spec import Linear

BASE = dict(model="llama-3.1-8b", method="qlora", lora_r=8, lora_targets="all-linear", gpus=2, seq_len=1024,
            grad_checkpointing=True)


@pytest.mark.parametrize(("sharding", "sharded"), [("fsdp", True), ("zero3", True), ("zero2", False),
                                                    ("ddp", False)])
def test_only_sharded_parameters_skip_the_fp32_preparation(sharding, sharded):
    plan = TrainPlan(**BASE, sharding=sharding)
    assert sharded_qlora(plan) is sharded
    assert memory_dtypes(plan) == (Dtypes(2, 2, False, 2) if sharded else Dtypes(4, 4, False, 4))
    assert plan_dtypes(plan) == Dtypes(4, 4, False)  # what the time model prices stays as it was


def test_sharded_lora_without_quantisation_is_not_affected():
    plan = TrainPlan(**{**BASE, "method": "lora"}, sharding="fsdp")
    assert not sharded_qlora(plan) and memory_dtypes(plan) == plan_dtypes(plan)


def test_weights_keep_the_16_bit_non_quantised_parameters_and_adapters():
    spec = get_spec("llama-3.1-8b")
    plan = TrainPlan(**BASE, sharding="fsdp")
    counts = count_params(spec, plan)
    q = counts.quantized
    blocks = math.ceil(q / 64)
    # 4-bit packed + double-quantised absmax; embeddings, head, norms and adapters at 2 B (not 4), then / 2 GPUs
    absmax = blocks + 4 * math.ceil(blocks / 256)
    whole = q // 2 + absmax + 2 * (counts.base - q) + 2 * counts.adapter
    # the quantisation constants live on the modules, not in the sharded parameters: every rank keeps all of them
    expected = math.ceil(whole / 2) + absmax - math.ceil(absmax / 2)
    assert estimate_memory(plan).breakdown["weights"] == expected
    # 8B: about 0.127 / 8 B a quantised weight, replicated
    assert absmax / q == pytest.approx(0.127 / 8, rel=0.01)


def test_unsharded_qlora_divides_nothing_it_does_not_shard():
    spec = get_spec("llama-3.1-8b")
    plan = TrainPlan(**BASE, sharding="zero2")  # ZeRO-2 shards no parameters: the whole model on each GPU
    counts = count_params(spec, plan)
    q = counts.quantized
    blocks = math.ceil(q / 64)
    whole = q // 2 + blocks + 4 * math.ceil(blocks / 256) + 4 * (counts.base - q) + 4 * counts.adapter
    assert estimate_memory(plan).breakdown["weights"] == whole


def test_a_dropped_adapter_input_is_saved_in_the_adapter_dtype():
    lin = Linear("self_attn.q_proj", 4096, 4096, bias=False, count=1, in_block=True)
    plan = TrainPlan(**BASE, sharding="fsdp", lora_dropout=0.1)
    lora = {lin.name}
    # dropout output (2 B) + its 1-byte mask per element, plus lora_A's r outputs at 2 B: 3 x 4,096 + 2 x 8
    assert _consumer_saved(4096, 2, [lin], False, lora, plan, Dtypes(2, 2, False, 2)) == 3 * 4096 + 16
    # peft's fp32 adapters: 4 + 1 bytes per element, r outputs at 4 B
    assert _consumer_saved(4096, 2, [lin], False, lora, plan, Dtypes(2, 2, True)) == 5 * 4096 + 32


def test_an_undropped_adapter_input_of_its_own_dtype_is_not_copied():
    lin = Linear("self_attn.q_proj", 4096, 4096, bias=False, count=1, in_block=True)
    plan = TrainPlan(**BASE, sharding="fsdp", lora_dropout=0.0)
    # bf16 input into bf16 adapters: lora_A saves the input itself once (2 B), plus r outputs at 2 B
    assert _consumer_saved(4096, 2, [lin], False, {lin.name}, plan, Dtypes(2, 2, False, 2)) == 2 * 4096 + 16


def test_sharded_qlora_saves_less_than_the_same_plan_prepared_in_fp32():
    fsdp = estimate_memory(TrainPlan(**BASE, sharding="fsdp"))
    zero2 = estimate_memory(TrainPlan(**BASE, sharding="zero2"))
    # same checkpointed block inputs and batch: the residual stream is 2 B instead of 4 B per element
    assert fsdp.breakdown["activations"] < zero2.breakdown["activations"]


def test_a_sharded_4bit_block_is_gathered_as_stored():
    from gpuwork.estimate.memory import _gathered

    spec = get_spec("llama-3.1-8b")
    qlora = TrainPlan(**BASE, sharding="fsdp")
    lora = TrainPlan(**{**BASE, "method": "lora"}, sharding="fsdp")
    # a block's linears: q and o 4,096 x 4,096, k and v 4,096 x 1,024, gate/up/down 4,096 x 14,336
    linears = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336
    assert linears == 218_103_808
    g_q = _gathered(spec, qlora, count_params(spec, qlora), 2, 0)
    g_l = _gathered(spec, lora, count_params(spec, lora), 2, 0)
    # bf16 linears (2 B a weight) against the packed 4-bit data in its 16-bit storage (0.5 B a weight)
    assert g_l["forward"] - g_q["forward"] == 2 * linears - linears // 2
    assert g_l["block backward"] - g_q["block backward"] == 2 * (2 * linears - linears // 2)  # and the prefetched
