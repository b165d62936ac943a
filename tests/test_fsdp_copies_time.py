"""FSDP2's copies around its collectives in the time model (gpuwork.estimate.fsdp_costs): the bytes and stream of
each kind on plans, their seconds in the step, and one real FSDP2 step on the CPU (torch's fake process group)
whose copies, casts and their streams are counted op by op and compared with the plan's figures."""

from __future__ import annotations

import pytest

from gpuwork import TrainPlan
from gpuwork.estimate.fsdp_costs import (
    COPY_IN_STREAM,
    DEFAULT_STREAM,
    fsdp_copies_s,
    fsdp_kernels,
    reduce_bytes,
)
from gpuwork.estimate.steptime import memory_kernel_t0_us
from gpuwork.facts.model import spec_for_plan
from gpuwork.facts.resolve import resolve
from gpuwork.facts.spec import count_params
from gpuwork.sizing import estimate_time

# torchtitan's Llama3-8B defaults: FSDP2 over 8 GPUs, bf16 gathers, fp32 shards and fp32 reduce
_TITAN = {"model": "llama-3.1-8b", "method": "scratch", "precision": "bf16-mixed", "seq_len": 4096,
          "batch_size": 1, "attention": "sdpa", "gpus": 8, "sharding": "fsdp", "stack": "framework"}


def _kernels(plan: TrainPlan) -> dict[str, tuple[str, float, int]]:
    spec = spec_for_plan(plan)
    return {k.name: (k.stream, k.bytes_per_step, k.launches_per_step)
            for k in fsdp_kernels(plan, spec, count_params(spec, plan))}


def _sizes(plan: TrainPlan) -> tuple[int, int, int, int]:
    spec = spec_for_plan(plan)
    return (spec.params_embedding + spec.params_head + spec.params_other, spec.params_block, spec.num_layers,
            count_params(spec, plan).trainable)


def test_mixed_fsdp_copies_bytes_and_streams():
    plan = TrainPlan(**_TITAN)
    root, block, layers, trained = _sizes(plan)
    k = _kernels(plan)
    # copy-out on the default stream: the root once (kept gathered after forward), each block in forward and
    # backward, read and written in bf16; one split_with_sizes_copy per gather
    assert k["all-gather copy-out"] == (DEFAULT_STREAM, 2 * 2 * (root + 2 * layers * block), 1 + 2 * layers)
    # the reduce-scatter input: bf16 gradients read, fp32 written (reduce_dtype fp32), one chunk_cat per unit
    assert reduce_bytes(plan) == 4
    assert k["reduce-scatter copy-in"] == (DEFAULT_STREAM, trained * (2 + 4), layers + 1)
    assert "gradient cast to reduce dtype" not in k  # one micro-batch: nothing accumulates
    # copy-in on its own stream: the fp32 shard cast to bf16 (4 + 2 B) and copied into the buffer (2 + 2 B)
    stream, moved, launches = k["all-gather copy-in"]
    assert stream == COPY_IN_STREAM
    assert moved == pytest.approx((root + 2 * layers * block) / 8 * (6 + 4))
    assert launches == 2 * (1 + 2 * layers)


def test_pure_bf16_reduces_in_bf16_and_casts_nothing():
    plan = TrainPlan(**{**_TITAN, "precision": "bf16"})
    root, block, layers, trained = _sizes(plan)
    k = _kernels(plan)
    assert reduce_bytes(plan) == 2
    assert k["reduce-scatter copy-in"][1] == trained * (2 + 2)  # half the fp32 reduce's output bytes
    assert k["all-gather copy-in"][1] == pytest.approx((root + 2 * layers * block) / 8 * 4)  # no cast
    mixed = _kernels(TrainPlan(**_TITAN))
    assert k["all-gather copy-out"] == mixed["all-gather copy-out"]


def test_accumulation_casts_once_and_reduces_the_fp32_sum():
    plan = TrainPlan(**{**_TITAN, "grad_accum": 4})
    root, block, layers, trained = _sizes(plan)
    k = _kernels(plan)
    assert k["all-gather copy-out"][1] == 4 * 2 * 2 * (root + 2 * layers * block)  # every micro-batch gathers
    assert k["gradient cast to reduce dtype"] == (DEFAULT_STREAM, trained * (2 + 4), layers + 1)
    assert k["reduce-scatter copy-in"] == (DEFAULT_STREAM, trained * (4 + 4), layers + 1)  # fp32 -> fp32


def test_hsdp_zero2_gathers_blocks_once():
    plan = TrainPlan(**{**_TITAN, "gpus": 16, "sharding": "hsdp-zero2"})
    root, block, layers, _ = _sizes(plan)
    assert _kernels(plan)["all-gather copy-out"][1:] == (2 * 2 * (root + layers * block), 1 + layers)


@pytest.mark.parametrize("fields", [{"sharding": "ddp"}, {"sharding": "zero3"}, {"gpus": 1, "sharding": "ddp"}],
                         ids=["ddp", "zero3", "one-gpu"])
def test_other_shardings_have_no_fsdp_copies(fields):
    plan = TrainPlan(**{**_TITAN, **fields})
    assert _kernels(plan) == {}
    assert "FSDP copies" not in estimate_time(plan, "h100_sxm").breakdown


def test_default_stream_copies_add_to_the_step():
    plan = TrainPlan(**_TITAN)
    est = estimate_time(plan, "h100_sxm")
    k = _kernels(plan)
    moved = k["all-gather copy-out"][1] + k["reduce-scatter copy-in"][1]
    launches = k["all-gather copy-out"][2] + k["reduce-scatter copy-in"][2]
    inputs = resolve(plan)  # the facts the estimate reads
    gpu = inputs.gpu("h100_sxm")
    device = inputs.rates.device(gpu.gpu_id)
    assert device is not None
    t0_us, _ = memory_kernel_t0_us(gpu, inputs.rates)
    bw = device.mem_bw_bytes_s
    assert est.breakdown["FSDP copies"] == pytest.approx(launches * t0_us * 1e-6 + moved / bw)
    assert est.step_time_s == pytest.approx(sum(est.breakdown.values()))
    spec = spec_for_plan(plan)
    assert fsdp_copies_s(plan, spec, count_params(spec, plan), gpu, device, inputs.rates, efficiency=0.5) == pytest.approx(2 * est.breakdown["FSDP copies"])


class _Copies:
    """FSDP2's copy ops as they reach the dispatcher, with the stream FSDP2 entered (torch.cpu.stream on the CPU)
    and the bytes each reads and writes."""

    def __init__(self):
        self.active = None
        self.ops: list[tuple[str, object, int]] = []
        self.param_shapes: set[tuple[int, ...]] = set()

    def stream(self, stream):
        import contextlib

        @contextlib.contextmanager
        def entered():
            previous, self.active = self.active, stream
            try:
                yield
            finally:
                self.active = previous

        return entered()

    def mode(self):
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        copies = self

        def nbytes(ts):
            return sum(t.numel() * t.element_size() for t in ts)

        class _Seen(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                name = str(func.overloadpacket)
                if name == "fsdp.split_with_sizes_copy":
                    copies.ops.append(("copy-out", copies.active, nbytes([args[0]]) + nbytes(kwargs["out"])))
                elif name == "fsdp.chunk_cat":
                    copies.ops.append(("chunk_cat", copies.active, nbytes(args[0]) + nbytes([kwargs["out"]])))
                elif name == "fsdp.all_gather_copy_in":
                    copies.ops.append(("copy-in", copies.active, 2 * nbytes(args[0])))
                elif name == "aten._foreach_copy_":
                    copies.ops.append(("cast", copies.active, nbytes(args[0]) + nbytes(args[1])))
                elif (name == "aten._to_copy" and args[0].dtype == torch.bfloat16
                      and kwargs.get("dtype") == torch.float32 and tuple(args[0].shape) in copies.param_shapes):
                    copies.ops.append(("grad cast", copies.active, args[0].numel() * 6))
                return func(*args, **kwargs)

        return _Seen()


@pytest.mark.slow
@pytest.mark.parametrize("accum", [1, 2])
def test_real_fsdp2_step_runs_the_priced_copies(monkeypatch, accum):
    """Two ranks under torch's fake process group (collectives are no-ops; one rank of two runs here), torchtitan's
    policy; with accumulation the first micro-batch runs without gradient sync, as the plan's step does."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore
    from transformers import AutoConfig, AutoModelForCausalLM

    from gpuwork.facts.model import load_config

    config, _ = load_config("tiny-llama")
    config = {k: v for k, v in config.items() if k != "transformers_version"}
    ranks = 2
    plan = TrainPlan(model="tiny-llama", method="scratch", precision="bf16-mixed", seq_len=64, gpus=ranks,
                     sharding="fsdp", stack="framework", grad_accum=accum)
    copies = _Copies()
    monkeypatch.setattr(torch.cpu, "stream", copies.stream)
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=ranks)
    try:
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=torch.float32,
                                                 attn_implementation="sdpa")
        copies.param_shapes = {tuple(p.shape) for p in model.parameters()}
        mesh = init_device_mesh("cpu", (ranks,))
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)  # torchtitan's
        for layer in model.model.layers:
            fully_shard(layer, mp_policy=policy, mesh=mesh)
        fully_shard(model, mp_policy=policy, mesh=mesh)
        ctx = model._get_fsdp_state()._comm_ctx
        ids = torch.randint(0, config["vocab_size"], (1, 64), generator=torch.Generator().manual_seed(0))
        with copies.mode():
            for mb in range(accum):
                model.set_requires_gradient_sync(mb == accum - 1)
                model(input_ids=ids, labels=ids).loss.backward()
    finally:
        dist.destroy_process_group()
    k = _kernels(plan)
    seen: dict[str, tuple[object, int, int]] = {}
    for kind, stream, moved in copies.ops:
        before = seen.get(kind, (stream, 0, 0))
        assert before[0] is stream  # each kind of copy always on one stream
        seen[kind] = (stream, before[1] + moved, before[2] + 1)
    assert seen["copy-out"] == (None, k["all-gather copy-out"][1], k["all-gather copy-out"][2])
    assert seen["chunk_cat"] == (None, k["reduce-scatter copy-in"][1], k["reduce-scatter copy-in"][2])
    # copy-in: the shard cast (foreach copy) and the copy into the buffer, both on the copy-in stream
    assert seen["cast"][0] is ctx.all_gather_copy_in_stream and seen["copy-in"][0] is ctx.all_gather_copy_in_stream
    assert seen["cast"][1] + seen["copy-in"][1] == pytest.approx(k["all-gather copy-in"][1])
    assert seen["cast"][2] + seen["copy-in"][2] == k["all-gather copy-in"][2]
    if accum == 1:
        assert "grad cast" not in seen and "gradient cast to reduce dtype" not in k
    else:  # the unsynced micro-batch's bf16 gradients cast to fp32 on the default stream
        assert seen["grad cast"][:2] == (None, k["gradient cast to reduce dtype"][1])
