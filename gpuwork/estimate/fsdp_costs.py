"""The copies torch FSDP2 (``fully_shard``) runs around its collectives, priced as memory-bound kernels.

Pure. Read in torch's ``torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py`` and ``_fsdp_param_group.py``
(docs/kernels.md 'FSDP2's copies around its collectives' gives the commits and lines):

- All-gather copy-in (``foreach_all_gather`` under ``all_gather_copy_in_stream``): each unit's local shard is
  cast to the policy's ``param_dtype`` (``_get_param_all_gather_inputs``' foreach copy into a fresh flat tensor,
  only when a param_dtype is set) and copied into the rank's slice of the all-gather output
  (``all_gather_copy_in``). A side stream: it overlaps compute and is not added to the step.
- All-gather copy-out (``foreach_all_gather_copy_out``, called by ``wait_for_unshard`` on the current, default
  stream after waiting for the all-gather's event): ``split_with_sizes_copy`` copies the whole gathered unit into
  its parameters, read and written in the gathered dtype, at every gather: forward, and backward where the unit
  was resharded after forward (the root, never resharded after forward, is gathered once per micro-batch).
- Reduce-scatter copy-in (``foreach_reduce`` -> ``foreach_reduce_scatter_copy_in``, ``chunk_cat``): the unit's
  unsharded gradients are copied, and cast to ``reduce_dtype``, into the reduce-scatter input on the default
  stream (since pytorch#129721; before it, on the reduce-scatter stream), once per optimizer step.
- Accumulation without gradient sync: with a ``reduce_dtype`` other than the gradients' dtype, the first
  micro-batch's unsharded gradient is cast to it (``to_accumulated_grad_if_needed``) on the default stream; the
  later micro-batches add into it as AccumulateGrad would (the op list's "gradient accumulation").

The reduce dtype is the one the communication model reduce-scatters in (``estimate.timing._traffic``: the
parameters' master dtype, fp32 for a mixed plan, as torchtitan's and OLMo-core's ``reduce_dtype=float32``).
FSDP1 (``FullyShardedDataParallel``) differs: it gathers into the flat parameter its views point into (no
copy-out) and casts on its pre-unshard and post-backward streams; the plan does not say which FSDP ran, and the
memory model prices FSDP2's stream pools for these shardings, so both read them as FSDP2.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwork.estimate.memory import _gathered_block_bytes
from gpuwork.estimate.memory_dtypes import fsdp_param_dtype
from gpuwork.estimate.steptime import memory_kernel_s, memory_kernel_t0_us
from gpuwork.facts.catalog import GpuSpec
from gpuwork.facts.rates import DeviceRates, Rates
from gpuwork.facts.spec import ModelSpec, ParamCounts
from gpuwork.plan import Sharding, TrainPlan

# torch fully_shard shardings (the memory model's _FSDP_SHARDINGS); DeepSpeed ZeRO-3 has its own buffers
FSDP2_SHARDINGS = (Sharding.FSDP, Sharding.HSDP, Sharding.HSDP_ZERO2)
DEFAULT_STREAM = "default"
COPY_IN_STREAM = "all_gather_copy_in"


@dataclass(frozen=True)
class FsdpKernel:
    """One kind of FSDP2 copy over an optimizer step on one GPU: bytes read plus written, kernels, its stream."""

    name: str
    stream: str  # DEFAULT_STREAM (serialised with compute) or COPY_IN_STREAM (overlaps it)
    bytes_per_step: float
    launches_per_step: int


def reduce_bytes(plan: TrainPlan) -> int:
    """Bytes per element of the gradients FSDP reduce-scatters (the communication model's rule: fp32 adapters,
    else the parameters' master dtype)."""
    return 4 if plan.uses_adapters else plan.precision.param_bytes


def fsdp_kernels(plan: TrainPlan, spec: ModelSpec, counts: ParamCounts) -> tuple[FsdpKernel, ...]:
    """FSDP2's copies per optimizer step on one GPU (module docstring); () outside the FSDP shardings."""
    if plan.sharding not in FSDP2_SHARDINGS:
        return ()
    c = plan.precision.compute_bytes  # the gathered dtype: param_dtype under a policy, else the model's
    units = max(spec.num_layers, 1)
    root = c * (spec.params_embedding + spec.params_head + spec.params_other)
    blocks = units * _gathered_block_bytes(spec, plan, counts) + c * counts.adapter
    if plan.whole_fsdp_unit:  # fsdp_wrap 'whole': the root unit is the whole model, gathered once a micro-batch
        root, blocks, units = root + blocks, 0, 0
    gathers = 2 if plan.sharding.shards_params else 1  # hsdp-zero2 keeps the forward's gather for backward
    mb = plan.grad_accum
    gathered = root + gathers * blocks  # per micro-batch
    mixed = fsdp_param_dtype(plan)
    g = c if mixed else reduce_bytes(plan)  # the unsharded gradients' dtype: the gathered parameters'
    r = reduce_bytes(plan)
    t = counts.trainable
    out = [FsdpKernel("all-gather copy-out", DEFAULT_STREAM, 2 * gathered * mb, (1 + gathers * units) * mb)]
    # the reduce-scatter input: the last micro-batch's gradients, or the fp32 accumulated ones, cast and copied
    last = g if mb == 1 or r == g else r
    out.append(FsdpKernel("reduce-scatter copy-in", DEFAULT_STREAM, t * (last + r), units + 1))
    if mb > 1 and r != g:
        out.append(FsdpKernel("gradient cast to reduce dtype", DEFAULT_STREAM, t * (g + r), units + 1))
    # copy-in: the shard cast to param_dtype (a policy only), then copied into the all-gather buffer
    shard = gathered / plan.shard_ranks
    cast = shard / c * (plan.precision.param_bytes + c) if mixed else 0.0
    out.append(FsdpKernel("all-gather copy-in", COPY_IN_STREAM, (cast + 2 * shard) * mb,
                          (1 + gathers * units) * mb * (2 if mixed else 1)))
    return tuple(out)


def default_stream_kernels(kernels: tuple[FsdpKernel, ...]) -> tuple[float, int]:
    """(bytes, kernels) of the copies that run on the default stream, serialised with the step's compute."""
    on = [k for k in kernels if k.stream == DEFAULT_STREAM]
    return sum(k.bytes_per_step for k in on), sum(k.launches_per_step for k in on)


def fsdp_copies_s(plan: TrainPlan, spec: ModelSpec, counts: ParamCounts, gpu: GpuSpec, device: DeviceRates,
                  rates: Rates, efficiency: float = 1.0, breakdown: dict[str, float] | None = None) -> float:
    """Seconds per optimizer step of FSDP2's default-stream copies, priced as the op list prices a memory-bound
    kernel (``steptime.memory_kernel_s``: the GPU's copy bandwidth, a measured fixed time per kernel), divided
    by the step's efficiency factor as every priced time is, and written to ``breakdown`` as "FSDP copies";
    0 outside the FSDP shardings."""
    moved, launches = default_stream_kernels(fsdp_kernels(plan, spec, counts))
    if not launches:
        return 0.0
    t0_s = 0.0 if device.synchronous else memory_kernel_t0_us(gpu, rates)[0] * 1e-6
    seconds = memory_kernel_s(moved, launches, device.mem_bw_bytes_s, t0_s) / efficiency
    if breakdown is not None:
        breakdown["FSDP copies"] = seconds
    return seconds


__all__ = ["COPY_IN_STREAM", "DEFAULT_STREAM", "FSDP2_SHARDINGS", "FsdpKernel", "default_stream_kernels",
           "fsdp_copies_s", "fsdp_kernels", "reduce_bytes"]
