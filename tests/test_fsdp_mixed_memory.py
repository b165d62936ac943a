"""Full fine-tuning under torch FSDP with mixed precision computes in 16 bit: the policy's param_dtype is the dtype
each unit's parameters are gathered in, so the step saves what a pure 16-bit step saves (a 16-bit residual stream,
no autocast weight copies) and a unit's full gradient comes in 16 bit before it is reduce-scattered into the fp32
shard (docs/memory_misses.md#fsdp-mixed-precision-computes-in-16-bit). Checked against one real FSDP2 step on the
CPU (gloo, one rank, 127.0.0.1)."""

from __future__ import annotations

import contextlib
import socket

import pytest

from gpuwork import TrainPlan, estimate_memory
from gpuwork.estimate.memory import (
    Dtypes,
    _block_activations,
    _gathered,
    fsdp_16bit_compute,
    memory_dtypes,
    stack_profile,
)
from gpuwork.estimate.model_states import model_states
from gpuwork.facts.model import load_config, spec_for_plan
from gpuwork.facts.spec import count_params


def _activations(plan: TrainPlan):
    spec = spec_for_plan(plan)
    profile = stack_profile(plan, spec)
    return _block_activations(spec, plan, memory_dtypes(plan, profile), profile)


def _plan(**fields) -> TrainPlan:
    base = {"model": "tiny-llama", "method": "full", "precision": "bf16-mixed", "batch_size": 2, "seq_len": 256,
            "sharding": "fsdp", "gpus": 4}
    return TrainPlan(**{**base, **fields})


@pytest.mark.parametrize("model", ["tiny-llama", "tiny-qwen2"])
def test_fsdp_mixed_full_fine_tuning_saves_the_pure_16bit_block(model):
    mixed = _plan(model=model)
    pure = mixed.replace(precision="bf16")
    assert fsdp_16bit_compute(mixed)
    assert memory_dtypes(mixed) == Dtypes(2, 2, False)
    assert _activations(mixed) == _activations(pure)
    assert estimate_memory(mixed).breakdown.get("autocast_weight_copies", 0) == 0
    # DDP keeps the fp32 model under autocast: an fp32 stream and 16-bit copies of the trained weights
    ddp = mixed.replace(sharding="ddp")
    assert not fsdp_16bit_compute(ddp)
    assert memory_dtypes(ddp).stream == 4
    assert _activations(ddp).per_layer_trained > _activations(mixed).per_layer_trained
    assert estimate_memory(ddp).breakdown["autocast_weight_copies"] > 0


def test_the_rule_leaves_other_plans_alone():
    assert fsdp_16bit_compute(_plan(sharding="hsdp", gpus=16))
    assert not fsdp_16bit_compute(_plan(precision="bf16"))  # FSDP without mixed precision: the loaded dtype
    assert not fsdp_16bit_compute(_plan(sharding="zero3"))  # DeepSpeed keeps its own rule
    assert not fsdp_16bit_compute(_plan(method="lora", lora_targets="all-linear"))  # adapters keep theirs


def test_fsdp_mixed_gathers_16bit_gradients():
    """While a block's backward runs, the gathered part holds the root and two blocks in 16 bit and one block's full
    gradient in 16 bit (not in the fp32 of the shards it is reduce-scattered into): what a pure 16-bit plan gathers."""
    mixed = _plan(model="qwen2.5-7b", batch_size=8, seq_len=512, grad_checkpointing=True)
    pure = mixed.replace(precision="bf16")
    spec = spec_for_plan(mixed)
    gathered = {}
    for plan in (mixed, pure):
        states = model_states(spec, plan, count_params(spec, plan))
        gathered[plan.precision] = _gathered(spec, plan, count_params(spec, plan), states.trainable_param_bytes,
                                             spec.num_layers)
    assert gathered[mixed.precision] == gathered[pure.precision]
    assert gathered[mixed.precision]["block backward"] == (2 * (spec.params_embedding + spec.params_head
                                                                + spec.params_other) + 3 * 2 * spec.params_block)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _model(name: str, dtype):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config, _ = load_config(name)
    config = {k: v for k, v in config.items() if k != "transformers_version"}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=dtype, attn_implementation="sdpa")
    model.train()
    return model, config["vocab_size"]


def _saved_per_block(model, layers, batch, autocast, grad_dtypes: set) -> list[int]:
    """Bytes of the distinct tensors autograd saves inside each block, not counting the block's own (gathered)
    parameters; the dtype of every gradient that reaches a gathered parameter goes to ``grad_dtypes``."""
    import torch

    saved = [0] * len(layers)
    current = [-1]
    params: set[int] = set()
    kept, seen = [], set()

    def enter(module, i):
        current[0] = i
        params.clear()
        for p in module.parameters():
            params.add(p.untyped_storage().data_ptr())
            if p.requires_grad:
                p.register_hook(lambda g: grad_dtypes.add(g.dtype))

    hooks = []
    for i, layer in enumerate(layers):
        hooks.append(layer.register_forward_pre_hook(lambda m, a, i=i: enter(m, i)))
        hooks.append(layer.register_forward_hook(lambda m, a, o: current.__setitem__(0, -1)))

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if current[0] >= 0 and ptr not in params and ptr not in seen:
            seen.add(ptr)
            kept.append(t)  # alive, so a later tensor cannot reuse the address
            saved[current[0]] += t.untyped_storage().nbytes()
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast:
            loss = model(**batch).loss
        loss.backward()
    finally:
        for h in hooks:
            h.remove()
    return saved


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiny-llama", "tiny-qwen2"])
def test_real_fsdp2_mixed_step_saves_what_the_estimate_counts(name):
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    batch_size, seq_len = 2, 256
    plan = _plan(model=name, batch_size=batch_size, seq_len=seq_len)
    per_block = _activations(plan).per_layer_trained * batch_size * seq_len
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{_free_port()}", rank=0, world_size=1)
    try:
        model, vocab = _model(name, torch.float32)
        mesh = init_device_mesh("cpu", (1,))
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=policy, mesh=mesh)
        fully_shard(model, mp_policy=policy, mesh=mesh)
        ids = torch.randint(0, vocab, (batch_size, seq_len), generator=torch.Generator().manual_seed(0))
        batch = {"input_ids": ids, "labels": ids}
        grads: set = set()
        fsdp = _saved_per_block(model, model.model.layers, batch, torch.autocast("cpu", dtype=torch.bfloat16), grads)
        assert grads == {torch.bfloat16}  # the gathered parameters' gradients
        assert {p.grad.dtype for p in model.parameters()} == {torch.float32}  # the shards'
    finally:
        dist.destroy_process_group()
    pure_model, _ = _model(name, torch.bfloat16)
    pure = _saved_per_block(pure_model, pure_model.model.layers, batch, contextlib.nullcontext(), set())
    assert fsdp == pure
    for measured in fsdp[1:]:  # the first block's input is the embedding's output, shared with the root
        assert per_block == pytest.approx(measured, rel=0.015)
