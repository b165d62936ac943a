"""FSDP2 allocates on its own CUDA streams, and the caching allocator keeps a pool per stream: the flat all-gather
outputs (root and first block in the compute dtype, plus the next unit's shard cast) sit in the all-gather copy-in
stream's pool and every sharded gradient in the reduce-scatter stream's, reserved beside the default stream's
peak (docs/memory_misses.md#fsdp2s-stream-pools). Plan-level byte checks, and one real FSDP2 step on the CPU
(torch's fake process group, no network) whose new storages are tagged with the stream FSDP2 entered."""

from __future__ import annotations

import contextlib
import math

import pytest

from gpuwork import TrainPlan, estimate_memory
from gpuwork.estimate.memory import ALLOCATOR_SLACK, CUBLAS_WORKSPACE_BYTES, SOURCES, TERM_LABELS
from gpuwork.facts.model import load_config, spec_for_plan

# torchtitan's Llama3-8B defaults: FSDP2 over 8 GPUs, bf16 gathers, fp32 shards, one 4,096-token sequence
_TITAN = {"model": "llama-3.1-8b", "method": "scratch", "precision": "bf16-mixed", "optimizer": "adamw",
          "optimizer_impl": "foreach", "seq_len": 4096, "batch_size": 1, "attention": "sdpa", "gpus": 8,
          "sharding": "fsdp", "stack": "framework", "lengths": "packed"}


def _all_gather_pool(plan: TrainPlan) -> int:
    """Root's flat output held while the first block's shard cast and output are allocated, 2 B a weight."""
    spec = spec_for_plan(plan)
    root = 2 * (spec.params_embedding + spec.params_head + spec.params_other)
    block = 2 * spec.params_block
    return root + block + math.ceil(block / plan.gpus)


@pytest.mark.parametrize("checkpointing", [False, True])
def test_fsdp_plan_reserves_the_side_stream_pools(checkpointing):
    plan = TrainPlan(**_TITAN, grad_checkpointing=checkpointing)
    est = estimate_memory(plan)
    spec = spec_for_plan(plan)
    sharded_grads = math.ceil(4 * spec.params_total / 8)  # fp32 reduce-scatter outputs, one shard per GPU
    assert est.peak_phase == "loss backward" and est.breakdown["gradients"] == 0  # zero_grad set them to None
    assert est.breakdown["stream_pools"] == _all_gather_pool(plan) + sharded_grads
    # the pools are cache, not tensors of the peak: max_memory_allocated does not see them
    assert est.peak_allocated_bytes == max(est.phase_peaks.values())
    default = est.peak_allocated_bytes
    assert est.peak_reserved_bytes == int(default * (1 + ALLOCATOR_SLACK)) + est.breakdown["stream_pools"]
    assert est.breakdown["allocator_cache"] == int(default * (1 + ALLOCATOR_SLACK)) - default
    assert "stream_pools" in SOURCES and "stream_pools" in TERM_LABELS


def test_gradients_alive_at_the_peak_are_not_counted_twice():
    """With accumulation the sharded gradients are allocated (in the reduce-scatter pool) through the forward:
    the peak already holds them, so only the all-gather pool is added."""
    plan = TrainPlan(**_TITAN, grad_accum=4)
    est = estimate_memory(plan)
    assert est.breakdown["gradients"] > 0
    assert est.breakdown["stream_pools"] == _all_gather_pool(plan)
    # the gradients of the peak sit in the reduce-scatter pool: reserved holds them, the default stream's peak and
    # its cache, and the all-gather pool (found by test_properties: reserved fell below allocated)
    default = est.peak_allocated_bytes - est.breakdown["gradients"]
    cache = int(default * (1 + ALLOCATOR_SLACK)) - default
    assert est.breakdown["allocator_cache"] == cache
    assert est.peak_reserved_bytes == est.peak_allocated_bytes + cache + _all_gather_pool(plan)


@pytest.mark.parametrize("fields", [
    {"model": "llama-3.2-1b", "precision": "fp32", "attention": "eager", "seq_len": 16, "gpus": 2, "stack": "hf-trainer",
     "lengths": "fixed"},
    {"grad_accum": 2}, {"sharding": "hsdp", "gpus": 16}], ids=["fp32-2gpus-16-tokens", "accumulation", "hsdp"])
def test_an_fsdp_plan_reserves_at_least_what_it_allocates(fields):
    est = estimate_memory(TrainPlan(**{**_TITAN, **fields}))
    assert est.peak_allocated_bytes <= est.peak_reserved_bytes < est.device_total_bytes
    assert sum(est.breakdown.values()) == est.device_total_bytes  # every reserved byte is a term of the breakdown


@pytest.mark.parametrize("fields", [{"sharding": "ddp"}, {"sharding": "zero3"}, {"gpus": 1, "sharding": "ddp"}],
                         ids=["ddp", "zero3", "one-gpu"])
def test_other_shardings_keep_one_pool(fields):
    est = estimate_memory(TrainPlan(**{**_TITAN, **fields}))
    assert "stream_pools" not in est.breakdown
    assert est.peak_reserved_bytes == (est.peak_allocated_bytes + est.breakdown["allocator_cache"]
                                       + est.breakdown.get("allocator_fragmentation", 0))


def test_hsdp_pools_follow_the_shard_group():
    """HSDP gathers and reduce-scatters inside a shard group of 8: the pools are the 8-GPU FSDP plan's."""
    fsdp = estimate_memory(TrainPlan(**_TITAN))
    hsdp = estimate_memory(TrainPlan(**{**_TITAN, "gpus": 32, "sharding": "hsdp"}))
    assert hsdp.breakdown["stream_pools"] == fsdp.breakdown["stream_pools"]
    assert CUBLAS_WORKSPACE_BYTES > 0


class _StreamTags:
    """Which stream FSDP2 entered (torch.cpu.stream, its device handle on the CPU) around each new storage."""

    def __init__(self):
        self.active = None
        self.born: dict[int, tuple[object, int, object]] = {}  # storage ptr -> (stream, bytes, dtype), the last
        self.log: list[tuple[object, int, object]] = []  # every new storage, in order (freed ones' ptrs are reused)

    @contextlib.contextmanager
    def stream(self, stream):
        previous, self.active = self.active, stream
        try:
            yield
        finally:
            self.active = previous

    def mode(self):
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_flatten

        tags = self

        class _Born(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                inputs = {t.untyped_storage().data_ptr() for t in tree_flatten((args, kwargs))[0]
                          if isinstance(t, torch.Tensor)}
                for t in tree_flatten(out)[0]:
                    if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in inputs:
                        storage = t.untyped_storage()
                        tags.born[storage.data_ptr()] = (tags.active, storage.nbytes(), t.dtype)
                        tags.log.append(tags.born[storage.data_ptr()])
                return out

        return _Born()


@pytest.mark.slow
def test_real_fsdp2_step_allocates_gathers_and_sharded_gradients_on_its_streams(monkeypatch):
    """Two ranks under torch's fake process group (collectives are no-ops; one rank of two runs in this process):
    on one rank FSDP2 skips the all-gather, so two are needed to see it."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from transformers import AutoConfig, AutoModelForCausalLM

    config, _ = load_config("tiny-llama")
    config = {k: v for k, v in config.items() if k != "transformers_version"}
    spec = spec_for_plan(TrainPlan(model="tiny-llama"))
    from torch.distributed.fsdp._fully_shard import _fsdp_param_group

    tags = _StreamTags()
    monkeypatch.setattr(torch.cpu, "stream", tags.stream)
    # at each all-gather: the flat output the previous unit's all_gather_state still holds, and this unit's numel
    held_then_new: list[tuple[int, int]] = []
    gather = _fsdp_param_group.foreach_all_gather

    def watched(fsdp_params, *args, **kwargs):
        state = ctx.all_gather_state
        held = state.all_gather_result.all_gather_output.numel() if state is not None else 0
        held_then_new.append((held, sum(p.sharded_param.numel() for p in fsdp_params)))  # global numel
        return gather(fsdp_params, *args, **kwargs)

    monkeypatch.setattr(_fsdp_param_group, "foreach_all_gather", watched)
    ranks = 2
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=ranks)
    try:
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=torch.float32,
                                                 attn_implementation="sdpa")
        mesh = init_device_mesh("cpu", (ranks,))
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)  # torchtitan's
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=policy, mesh=mesh)
        fully_shard(model, mp_policy=policy, mesh=mesh)
        ctx = model._get_fsdp_state()._comm_ctx  # the root's, shared with every unit at the first forward
        ids = torch.randint(0, config["vocab_size"], (1, 64), generator=torch.Generator().manual_seed(0))
        with tags.mode():
            model(input_ids=ids, labels=ids).loss.backward()
        grads = {p.grad.to_local().untyped_storage().data_ptr(): p.grad.to_local() for p in model.parameters()}
    finally:
        dist.destroy_process_group()
    born: dict[object, list[tuple[int, object]]] = {}
    for stream, nbytes, dtype in tags.log:
        born.setdefault(stream, []).append((nbytes, dtype))
    root, block = spec.params_embedding + spec.params_head + spec.params_other, spec.params_block
    # every sharded gradient is (a view of) a reduce-scatter output born on the reduce-scatter stream, in fp32,
    # one per unit: together the whole sharded gradient, which lives there until zero_grad
    assert all(tags.born[ptr][0] is ctx.reduce_scatter_stream for ptr in grads)
    assert {g.dtype for g in grads.values()} == {torch.float32}
    assert sorted(g.untyped_storage().nbytes() for g in grads.values()) == sorted(
        [4 * block // ranks] * spec.num_layers + [4 * root // ranks])
    # the flat all-gather outputs and the shard casts are born on the copy-in stream in the compute dtype: the
    # root's once (kept gathered after forward), each block's in forward and again in backward
    gathered = sorted(born[ctx.all_gather_copy_in_stream])
    assert gathered == sorted([(2 * root, torch.bfloat16), (2 * root // ranks, torch.bfloat16)]
                              + [(2 * block, torch.bfloat16), (2 * block // ranks, torch.bfloat16)]
                              * 2 * spec.num_layers)
    # the forward holds a unit's flat output until the next unit's copy-out: the root's beside the first block's
    # is the largest pair (the estimate's max(root, block) + block), the backward holds none
    assert held_then_new[:2] == [(0, root), (root, block)]
    assert max(held + new for held, new in held_then_new) == root + block
    assert all(held == 0 for held, _ in held_then_new[1 + spec.num_layers:])
    # the reduce-scatter input (a unit's whole gradient in the reduce dtype) is born on the default stream
    assert born[None].count((4 * block, torch.float32)) == spec.num_layers
    assert born[None].count((4 * root, torch.float32)) == 1
