"""Kernel rates of this machine, measured with torch, and a training step priced with them.

The step-time model (``gpuwork.estimate.ops`` + ``steptime``) prices each operation of a step from
kernel-level rates: achievable GEMM FLOP/s, copy bandwidth and the host's cost per dispatched op.
For GPUs those rates are data (``data/rates.csv``); for the CPU a trial runs on, this module
measures them in a few seconds (``measure_cpu_rates``) so that the same op model predicts the
CPU trial's step, and a measured step calibrates it (``calibrate_then_predict``): the one-factor
rule of ``gpuwork.estimate.timing.estimate_time`` (every operation's time divided by the factor
that makes the measured step come out right), applied to another sequence length and batch.

The benchmark functions (``time_call``, ``gemm_rate``, ``copy_rate``, ``dispatch_cost``,
``sdpa_rate``) take a ``device`` and run on a CPU or a CUDA GPU alike; ``scripts/gpu_check.py``
uses them for its kernel table.

What is measured (medians over repeats, after warm-up):

- GEMM: ``torch.mm`` of fp32 matrices at shapes a tiny model's step runs (tokens x hidden by
  hidden x out); the rate used is the median over those shapes (the op model has one matmul rate
  per dtype; on a CPU there are no waves of tiles, so ``sm_count`` = torch's intra-op threads
  makes the wave efficiency 1 for one thread);
- copy: a copy into a tensor larger than the caches, read + write bytes per second (a
  cache-resident copy is measured too, and reported);
- dispatch: the host time per kernel of a chain of tiny ``nn.Linear`` modules run forward and
  backward (module call, views, autograd, dispatch: what kernels.csv's eager launch cost is on a
  GPU); a bare 1-element op is measured too, and reported. A CPU runs each op on the dispatching
  thread, so this cost adds to the kernel's (``DeviceRates.synchronous``);
- SDPA forward and backward FLOP/s at tiny-llama's head shape (reported, not used).

Measured on the machine this was written on (one thread of a 2-core Xeon with AVX-512, time as
thread CPU time): GEMM about 165 GFLOP/s, copy 13 GB/s (28 GB/s cache-resident), 6.7-7.2 us per
kernel (1.2 us for a bare op); the op model's price of gpuwork's CPU trial of tiny-llama was within
5 % of the measured median step from 128 to 1,024 tokens per micro-batch (LoRA and full), and a
factor fitted at one such shape predicted another within 8 % (``scripts/calibration_transfer.py``).

Limitations: the CPU runs every precision as fp32 (the trial substitutes it), so the bf16 and fp16
rates are the fp32 one; element-wise ops on tensors that stay in the caches run faster than the
large-copy bandwidth prices them; a step's eager views and Python overhead outside the modules'
kernels (HF mask and rotary set-up, peft wrappers, optimizer and scheduler bookkeeping: about 3,000
ATen calls for 419 kernels in a tiny-llama LoRA step) are not all counted, so below ~100 tokens per
micro-batch the price is short by ~15 % and a factor fitted there overshoots larger shapes; the
fused attention is priced at kernels.csv's GPU share of the GEMM rate (0.35), while torch's CPU
flash kernel reaches about 0.4-0.45 of it.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpuwork.estimate.ops import Kind, Op, Phase, step_ops
from gpuwork.estimate.steptime import StepPrice, price_ops, stack_kernels
from gpuwork.facts.catalog import GpuClass, GpuSpec, Link
from gpuwork.facts.model import spec_for_plan
from gpuwork.facts.rates import DeviceRates, Rates, load_rates
from gpuwork.facts.spec import ModelSpec
from gpuwork.measure.trial import cpu_model
from gpuwork.plan import Attention, Precision, Stack, TrainPlan

Clock = Callable[[], float]

# GEMM shapes (m tokens, n outputs, k inputs) like a tiny model's projections, MLP and output layer
# (tiny-llama: hidden 256, intermediate 688, vocab 4096) at 256-1024 tokens per micro-batch.
CPU_GEMM_SHAPES: tuple[tuple[int, int, int], ...] = (
    (256, 256, 256), (512, 256, 256), (1024, 256, 256), (512, 688, 256), (512, 256, 688), (512, 4096, 256),
)
COPY_BYTES = 256 * 2**20  # larger than the last-level cache of most servers: device-memory bandwidth
CACHED_COPY_BYTES = 2 * 2**20  # fits in a core's L2: what element-wise ops on small activations see
CPU_SDPA_SHAPE = (2, 8, 256, 32)  # batch, heads, sequence, head dim (tiny-llama's heads)
DISPATCH_CHAIN = 200  # tiny ops per timed chain
MIN_REPEAT_S = 0.004  # each timed repeat runs the call at least this long (timer resolution, jitter)


@dataclass(frozen=True)
class GemmRate:
    """One timed ``torch.mm``: C[m, n] = A[m, k] @ B[k, n]."""

    m: int
    n: int
    k: int
    dtype: str
    seconds: float  # median per call
    flops_s: float  # 2mnk / seconds

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class DispatchCost:
    """Host cost of tiny ops (their own work negligible), microseconds.

    Two chains: a bare op (``torch.mul`` on 1 element) shows the dispatcher alone; a chain of tiny
    ``nn.Linear`` modules run forward and backward shows what one kernel of an eager model costs the
    host: the module call, the views around the GEMM, autograd recording and the backward engine.
    The op model charges the second per kernel (``per_kernel_us``): on a GPU the same quantity is
    kernels.csv ``launch_overhead_eager_us`` (Python + autograd + dispatch + launch).
    """

    eager_us: float  # bare torch.mul, no autograd
    autograd_forward_us: float  # the same op recording the graph
    autograd_backward_us: float  # per node of that chain's backward (one kernel each)
    module_forward_us: float  # per nn.Linear(1, 1, bias=False) forward: one GEMM kernel
    module_backward_us: float  # per nn.Linear backward: two GEMM kernels (input and weight gradients)

    @property
    def per_kernel_us(self) -> float:
        """Host microseconds per kernel of an eager module graph: (forward + backward) / 3 kernels."""
        return (self.module_forward_us + self.module_backward_us) / 3

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "per_kernel_us": self.per_kernel_us}


@dataclass(frozen=True)
class CpuRates:
    """What ``measure_cpu_rates`` found, and the op model's inputs built from it."""

    device: DeviceRates  # for ``price_ops``: gpu_id "cpu", synchronous, host_us_per_kernel measured
    gpu: GpuSpec  # a GpuSpec for the CPU whose peak fields hold the measured rates (see its notes)
    threads: int  # torch intra-op threads during the measurement (the trial must use the same)
    gemm: tuple[GemmRate, ...]
    matmul_flops_s: float  # the rate used: median over ``gemm``
    copy_bytes_s: float  # large-tensor clone, read + write bytes per second
    cached_copy_bytes_s: float  # a cache-resident clone (reported, not used)
    dispatch: DispatchCost
    seconds: float  # wall time the measurement took
    # SDPA forward / backward FLOP/s at CPU_SDPA_SHAPE (reported: the op model prices a fused attention
    # kernel at kernels.csv sdpa_mem_efficient_fraction x the fp32 rate, a GPU figure)
    sdpa_flops_s: tuple[float, float] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"threads": self.threads, "gemm": [g.as_dict() for g in self.gemm],
                "matmul_flops_s": self.matmul_flops_s, "copy_bytes_s": self.copy_bytes_s,
                "cached_copy_bytes_s": self.cached_copy_bytes_s, "dispatch": self.dispatch.as_dict(),
                "host_us_per_kernel": self.device.host_us_per_kernel, "seconds": self.seconds,
                "sdpa_flops_s": list(self.sdpa_flops_s) if self.sdpa_flops_s else None,
                "basis": dict(self.device.basis)}


# -- device-agnostic timers -------------------------------------------------------------------------


def _torch():
    import torch

    return torch


def _device(device: Any):
    torch = _torch()
    return device if isinstance(device, torch.device) else torch.device(device or "cpu")


def synchronize(device: Any) -> None:
    """Wait for the device's queued kernels (a no-op on a CPU, where every op runs when called)."""
    dev = _device(device)
    if dev.type == "cuda":
        _torch().cuda.synchronize(dev)


def time_call(fn: Callable[[], Any], *, device: Any = "cpu", repeats: int = 5, warmup: int = 2,
              min_repeat_s: float = MIN_REPEAT_S, clock: Clock = time.perf_counter) -> float:
    """Median seconds of one ``fn()`` call: ``warmup`` calls first, then ``repeats`` timed groups of
    as many calls as make a group last ``min_repeat_s`` (so short calls are above the timer's noise).

    Example:
        >>> time_call(lambda: sum(range(1000))) > 0
        True
    """
    for _ in range(warmup):
        fn()
    synchronize(device)
    start = clock()
    fn()
    synchronize(device)
    one = max(clock() - start, 1e-9)
    inner = max(1, min(100_000, math.ceil(min_repeat_s / one)))
    samples = []
    for _ in range(repeats):
        start = clock()
        for _ in range(inner):
            fn()
        synchronize(device)
        samples.append((clock() - start) / inner)
    return statistics.median(samples)


def torch_dtype(name: str):
    """The torch dtype of a plan's dtype name (fp32, bf16, fp16)."""
    torch = _torch()
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def gemm_rate(m: int, n: int, k: int, dtype: str = "fp32", *, device: Any = "cpu", repeats: int = 5,
              clock: Clock = time.perf_counter) -> GemmRate:
    """Achieved FLOP/s of ``torch.mm`` on [m, k] x [k, n] (2mnk FLOPs per call)."""
    torch = _torch()
    dev = _device(device)
    a = torch.randn(m, k, device=dev, dtype=torch_dtype(dtype))
    b = torch.randn(k, n, device=dev, dtype=torch_dtype(dtype))
    out = torch.empty(m, n, device=dev, dtype=torch_dtype(dtype))
    seconds = time_call(lambda: torch.mm(a, b, out=out), device=dev, repeats=repeats, clock=clock)
    return GemmRate(m, n, k, dtype, seconds, 2.0 * m * n * k / seconds)


def copy_rate(nbytes: int = COPY_BYTES, *, device: Any = "cpu", repeats: int = 5,
              clock: Clock = time.perf_counter) -> float:
    """Bytes per second (read + write) of cloning a float32 tensor of ``nbytes``."""
    torch = _torch()
    dev = _device(device)
    src = torch.ones(max(1, nbytes // 4), device=dev, dtype=torch.float32)
    dst = torch.empty_like(src)
    seconds = time_call(lambda: dst.copy_(src), device=dev, repeats=repeats, clock=clock)
    return 2.0 * src.numel() * 4 / seconds


def dispatch_cost(*, device: Any = "cpu", chain: int = DISPATCH_CHAIN, repeats: int = 5,
                  clock: Clock = time.perf_counter) -> DispatchCost:
    """Host microseconds per tiny op: bare, recorded by autograd, per backward node, and per kernel
    of a chain of tiny ``nn.Linear`` modules (see ``DispatchCost``).

    On a GPU the kernels queue behind the host, so these are the host's dispatch rates.
    """
    torch = _torch()
    dev = _device(device)
    w = torch.full((1,), 1.0001, device=dev)
    x = torch.ones(1, device=dev)

    def eager() -> None:
        y = x
        for _ in range(chain):
            y = torch.mul(y, w)

    leaf = torch.ones(1, device=dev, requires_grad=True)

    def forward():
        y = leaf
        for _ in range(chain):
            y = torch.mul(y, w)
        return y

    def forward_backward() -> None:
        forward().backward()
        leaf.grad = None

    eager_s = time_call(eager, device=dev, repeats=repeats, clock=clock) / chain
    forward_s = time_call(forward, device=dev, repeats=repeats, clock=clock) / chain
    both_s = time_call(forward_backward, device=dev, repeats=repeats, clock=clock) / chain

    layers = [torch.nn.Linear(1, 1, bias=False, device=dev) for _ in range(chain // 4)]
    row = torch.ones(1, 1, device=dev)

    def modules_forward():
        y = row
        for layer in layers:
            y = layer(y)
        return y

    def modules_both() -> None:
        modules_forward().sum().backward()
        for layer in layers:
            layer.weight.grad = None

    module_fwd_s = time_call(modules_forward, device=dev, repeats=repeats, clock=clock) / len(layers)
    module_both_s = time_call(modules_both, device=dev, repeats=repeats, clock=clock) / len(layers)
    return DispatchCost(eager_us=eager_s * 1e6, autograd_forward_us=forward_s * 1e6,
                        autograd_backward_us=max(both_s - forward_s, 0.0) * 1e6,
                        module_forward_us=module_fwd_s * 1e6,
                        module_backward_us=max(module_both_s - module_fwd_s, 0.0) * 1e6)


def sdpa_flops(batch: int, heads: int, seq: int, head_dim: int, causal: bool = True) -> tuple[float, float]:
    """(forward, backward) FLOPs of one attention call as the op model counts them: 4·b·s²·a·d for
    Q·K^T and P·V, halved (plus the diagonal blocks) when causal; backward 2.5x forward."""
    full = 4.0 * batch * seq * seq * heads * head_dim
    fwd = full * (0.5 * (1 + 128 / seq) if causal and seq > 128 else 1.0)
    return fwd, 2.5 * fwd


def sdpa_rate(shape: tuple[int, int, int, int], dtype: str = "fp32", *, causal: bool = True, device: Any = "cpu",
              repeats: int = 5, clock: Clock = time.perf_counter,
              backend: str | None = None) -> tuple[float, float]:
    """Achieved (forward, backward) FLOP/s of ``scaled_dot_product_attention`` (FLOPs of ``sdpa_flops``) on
    queries, keys and values of ``shape``: (batch, heads, seq, head_dim). ``backend``: a
    ``torch.nn.attention.SDPBackend`` member name the calls are restricted to (None: torch picks); torch raises
    RuntimeError when that kernel cannot run them."""
    torch = _torch()
    if backend is not None:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, backend)):
            return sdpa_rate(shape, dtype, causal=causal, device=device, repeats=repeats, clock=clock)
    dev = _device(device)
    q, k, v = (torch.randn(shape, device=dev, dtype=torch_dtype(dtype), requires_grad=True) for _ in range(3))
    sdpa = torch.nn.functional.scaled_dot_product_attention
    fwd_s = time_call(lambda: sdpa(q, k, v, is_causal=causal), device=dev, repeats=repeats, clock=clock)
    grad = torch.randn(shape, device=dev, dtype=torch_dtype(dtype))

    def both() -> None:
        sdpa(q, k, v, is_causal=causal).backward(grad)
        q.grad = k.grad = v.grad = None

    both_s = time_call(both, device=dev, repeats=repeats, clock=clock)
    fwd_flops, bwd_flops = sdpa_flops(*shape, causal)
    return fwd_flops / fwd_s, bwd_flops / max(both_s - fwd_s, 1e-9)


# -- the CPU's rates --------------------------------------------------------------------------------


def measure_cpu_rates(*, shapes: tuple[tuple[int, int, int], ...] = CPU_GEMM_SHAPES, copy_bytes: int = COPY_BYTES,
                      sdpa_shape: tuple[int, int, int, int] = CPU_SDPA_SHAPE, repeats: int = 5,
                      clock: Clock = time.perf_counter) -> CpuRates:
    """Measure this CPU's GEMM rate, copy bandwidth and dispatch cost with torch's current thread count.

    Takes about 1-3 s on one thread. Use the same thread count (``torch.set_num_threads``) and the
    same ``clock`` as the trial it prices.

    Example:
        >>> rates = measure_cpu_rates()
        >>> rates.device.synchronous, rates.device.matmul_flops["fp32"] > 0
        (True, True)
    """
    torch = _torch()
    started = time.perf_counter()
    threads = torch.get_num_threads()
    gemm = tuple(gemm_rate(m, n, k, "fp32", repeats=repeats, clock=clock) for m, n, k in shapes)
    matmul = statistics.median(g.flops_s for g in gemm)
    copy = copy_rate(copy_bytes, repeats=repeats, clock=clock)
    cached = copy_rate(CACHED_COPY_BYTES, repeats=repeats, clock=clock)
    dispatch = dispatch_cost(repeats=repeats, clock=clock)
    attention = sdpa_rate(sdpa_shape, "fp32", repeats=repeats, clock=clock)
    rates = cpu_rates_from(threads=threads, gemm=gemm, matmul_flops_s=matmul, copy_bytes_s=copy,
                           cached_copy_bytes_s=cached, dispatch=dispatch, copy_bytes=copy_bytes,
                           seconds=time.perf_counter() - started)
    return dataclasses.replace(rates, sdpa_flops_s=attention)


def cpu_rates_from(*, threads: int, gemm: tuple[GemmRate, ...], matmul_flops_s: float, copy_bytes_s: float,
                   dispatch: DispatchCost, cached_copy_bytes_s: float | None = None, copy_bytes: int = COPY_BYTES,
                   seconds: float = 0.0) -> CpuRates:
    """The op model's inputs (``DeviceRates`` and a ``GpuSpec``) from measured CPU figures (pure)."""
    for name, value in (("matmul_flops_s", matmul_flops_s), ("copy_bytes_s", copy_bytes_s),
                        ("per_kernel_us", dispatch.per_kernel_us)):
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise ValueError(f"cpu_rates_from: {name} must be a positive finite number, got {value!r}")
    shapes = ", ".join(f"{g.m}x{g.n}x{g.k}: {g.flops_s / 1e9:.0f}" for g in gemm)
    matmul_basis = (f"measured here: torch.mm fp32, {threads} thread(s), median over shapes (m x n x k: GFLOP/s) "
                    f"{shapes}")
    basis = {f"matmul_{d}": matmul_basis + ("" if d == "fp32" else "; the CPU trial runs fp32") for d in
             ("fp32", "bf16", "fp16")}
    basis["mem_bw"] = f"measured here: clone of {copy_bytes / 2**20:.0f} MiB, read + write"
    basis["sm"] = f"torch.get_num_threads() = {threads} (no tile waves on a CPU)"
    basis["host"] = (f"measured here: chain of nn.Linear(1, 1) forward {dispatch.module_forward_us:.1f} us (1 kernel) "
                     f"+ backward {dispatch.module_backward_us:.1f} us (2 kernels) = {dispatch.per_kernel_us:.1f} us "
                     f"per kernel; a bare torch.mul: {dispatch.eager_us:.1f} us, with autograd "
                     f"{dispatch.autograd_forward_us:.1f} us forward + {dispatch.autograd_backward_us:.1f} us backward")
    device = DeviceRates(gpu_id="cpu", matmul_flops={"fp32": matmul_flops_s, "bf16": matmul_flops_s,
                                                     "fp16": matmul_flops_s},
                         mem_bw_bytes_s=copy_bytes_s, sm_count=max(1, threads), basis=basis, synchronous=True,
                         host_us_per_kernel=dispatch.per_kernel_us)
    gpu = GpuSpec(
        gpu_id="cpu", display_name=f"CPU ({cpu_model()}, {threads} thread{'s' if threads != 1 else ''})",
        vendor=_cpu_vendor(), architecture=_machine(), gpu_class=GpuClass.SERVER, form_factor="host CPU",
        memory_bytes=_host_memory_bytes(), mem_bw_bytes_s=copy_bytes_s, bf16_dense_flops=matmul_flops_s,
        fp16_dense_flops=matmul_flops_s, fp8_dense_flops=None, fp32_flops=matmul_flops_s, link=Link.PCIE,
        link_bw_bytes_s=copy_bytes_s, pcie_gen=4, compute_capability="cpu", tdp_w=0, status="M",
        sources=("measured",),
        notes="peak fields hold rates measured here by gpuwork.measure.cpu_rates (fp32 torch.mm median, large "
              "clone bandwidth), not a datasheet; link and PCIe fields are placeholders (one CPU, no peers)",
        kernel_family="a100",  # CPU runs are fp32 (sdpa_mem_efficient_fraction); 16-bit fused attention: the generic FA2 shares
    )
    return CpuRates(device=device, gpu=gpu, threads=threads, gemm=gemm, matmul_flops_s=matmul_flops_s,
                    copy_bytes_s=copy_bytes_s, cached_copy_bytes_s=cached_copy_bytes_s or copy_bytes_s,
                    dispatch=dispatch, seconds=seconds)




def _cpu_vendor() -> str:
    name = cpu_model().lower()
    return "Intel" if "intel" in name else "AMD" if "amd" in name else "CPU"


def _machine() -> str:
    import platform

    return platform.machine() or "cpu"


def _host_memory_bytes() -> int:
    try:
        import os

        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


# -- pricing a plan on the CPU ----------------------------------------------------------------------

# gpuwork's own loop (gpuwork.measure.runtime.train_step) beside the op list of ``step_ops``: the op
# list already follows its AdamW (7 passes over 18 tensors, and the decay pass at the plan's weight_decay
# in effect, which the trial's optimizer is built with), its ``loss / grad_accum``
# and its clip_grad_norm_; the loop adds ``torch.stack(losses).sum().item()`` for the logged loss, once
# per step (2 kernels).


def cpu_plan(plan: TrainPlan) -> TrainPlan:
    """The plan as gpuwork's trial runs it on a CPU: fp32 (the trial substitutes every precision),
    SDPA for flash-attention (no CUDA), one process, the eager hf-trainer stack (gpuwork's loop runs
    the Hugging Face model and peft unfused whatever the plan's stack)."""
    changes: dict[str, Any] = {}
    if plan.precision is not Precision.FP32:
        changes["precision"] = Precision.FP32
    if plan.attention.is_flash:
        changes["attention"] = Attention.SDPA
    if plan.stack is not Stack.HF_TRAINER:
        changes["stack"] = Stack.HF_TRAINER
        # the optimizer keeps the plan's weight decay, which the stack's default may have set
        changes["weight_decay"] = plan.weight_decay_in_effect
    out = plan.single_gpu() if plan.gpus > 1 else plan
    return out.replace(**changes) if changes else out


def gpuwork_loop_ops(ops: tuple[Op, ...], plan: TrainPlan) -> tuple[Op, ...]:
    """``ops`` with what gpuwork's loop adds to the op list: the logged loss (see the note above)."""
    hit = _LOOP_OPS.get(id(ops))
    if hit is not None and hit[0] is ops:
        return hit[1]
    result = (*ops, Op("logged loss (stack, sum)", Kind.MEMORY, Phase.OPTIMIZER, 0.0, 8.0 * plan.grad_accum, 2, 1))
    if len(_LOOP_OPS) > 512:
        _LOOP_OPS.clear()
    _LOOP_OPS[id(ops)] = (ops, result)
    return result


_LOOP_OPS: dict[int, tuple[tuple[Op, ...], tuple[Op, ...]]] = {}


def _cpu_inputs(plan: TrainPlan, spec: ModelSpec | None, rates: Rates | None) -> tuple[TrainPlan, ModelSpec, Rates]:
    run = cpu_plan(plan)
    return run, spec or spec_for_plan(run), rates or load_rates()


def loop_step_ops(plan: TrainPlan, spec: ModelSpec, rates: Rates, *, gpuwork_loop: bool = True) -> tuple[Op, ...]:
    """``step_ops`` of ``plan`` under its stack, adjusted to gpuwork's loop when ``gpuwork_loop``."""
    ops = step_ops(plan, spec, stack_kernels(rates.stacks[plan.stack]))
    return gpuwork_loop_ops(ops, plan) if gpuwork_loop else ops


def cpu_step_ops(plan: TrainPlan, *, spec: ModelSpec | None = None, rates: Rates | None = None,
                 gpuwork_loop: bool = True) -> tuple[Op, ...]:
    """The operations of one step of ``plan`` as the CPU trial runs it (``cpu_plan``), adjusted to
    gpuwork's loop when ``gpuwork_loop`` (``gpuwork_loop_ops``)."""
    run, spec, rates = _cpu_inputs(plan, spec, rates)
    return loop_step_ops(run, spec, rates, gpuwork_loop=gpuwork_loop)


def predict_step(plan: TrainPlan, gpu: GpuSpec, device: DeviceRates, *, spec: ModelSpec | None = None,
                 rates: Rates | None = None, efficiency: float = 1.0, gpuwork_loop: bool = True) -> StepPrice:
    """Seconds of one optimizer step of ``plan`` on one device (a GPU of rates.csv, or the CPU's measured
    rates), priced by the op model as gpuwork's trial runs it (``gpuwork_loop``; see ``gpuwork_loop_ops``)."""
    rates = rates or load_rates()
    ops = loop_step_ops(plan, spec or spec_for_plan(plan), rates, gpuwork_loop=gpuwork_loop)
    return price_ops(ops, gpu, device, rates, rates.stacks[plan.stack], efficiency=efficiency)


def predict_cpu_step(plan: TrainPlan, cpu_rates: CpuRates, *, spec: ModelSpec | None = None,
                     rates: Rates | None = None, efficiency: float = 1.0, gpuwork_loop: bool = True) -> StepPrice:
    """Seconds of one optimizer step of ``plan`` in gpuwork's CPU trial, priced by the op model.

    Args:
        plan: the run; priced as the CPU trial runs it (``cpu_plan``: fp32, SDPA, hf-trainer stack).
        cpu_rates: from ``measure_cpu_rates`` (same thread count and clock as the trial).
        spec: the model (default: read from the plan's model).
        rates: the kernel facts (default ``load_rates()``); the CPU's own rates replace the GPU's.
        efficiency: the factor every operation's time is divided by (``calibrate_then_predict`` fits it).
        gpuwork_loop: price the loop gpuwork's trial runs (AdamW without weight decay, the loss
            bookkeeping); False prices ``step_ops`` as is (the Trainer's default AdamW with decay).

    Example:
        >>> price = predict_cpu_step(TrainPlan(model="tiny-llama", method="lora", seq_len=128), measure_cpu_rates())
        >>> price.total_s > 0
        True
    """
    run, spec, rates = _cpu_inputs(plan, spec, rates)
    return predict_step(run, cpu_rates.gpu, cpu_rates.device, spec=spec, rates=rates, efficiency=efficiency,
                        gpuwork_loop=gpuwork_loop)


@dataclass(frozen=True)
class CalibratedPrediction:
    """A step predicted at one shape from a step measured at another (one factor on every operation)."""

    measured_plan: TrainPlan
    measured_step_s: float
    priced_measured_s: float  # the op model's price of the measured plan (factor 1)
    factor: float  # priced / measured: every operation's time is divided by it
    plan: TrainPlan
    uncalibrated: StepPrice  # the op model's price of ``plan`` (factor 1)
    calibrated: StepPrice  # the same operations divided by ``factor``

    @property
    def step_s(self) -> float:
        return self.calibrated.total_s

    def as_dict(self) -> dict[str, Any]:
        return {"measured_step_s": self.measured_step_s, "priced_measured_s": self.priced_measured_s,
                "factor": self.factor, "uncalibrated_s": self.uncalibrated.total_s,
                "calibrated_s": self.calibrated.total_s, "by_kind_calibrated_s": dict(self.calibrated.by_kind)}


def calibrate_on(measured_plan: TrainPlan, measured_step_s: float, other_plan: TrainPlan, gpu: GpuSpec,
                 device: DeviceRates, *, spec: ModelSpec | None = None, rates: Rates | None = None,
                 gpuwork_loop: bool = True) -> CalibratedPrediction:
    """Fit the one factor from a step measured at ``measured_plan`` on ``gpu`` and price ``other_plan`` with it.

    The rule of ``estimate_time(..., calibration=...)`` (``timing._fit_scale``): the factor is the
    op model's price of the measured step over its measured time, and every operation of the other
    plan (device-bound and host time alike) is divided by it (``price_ops(..., efficiency=factor)``).
    Both plans must use the same model, method, optimizer and stack: the factor belongs to one stack
    on one device. Unlike ``estimate_time``'s calibration, the measured plan keeps its own batch.
    """
    if isinstance(measured_step_s, bool) or not (isinstance(measured_step_s, int | float)
                                                 and math.isfinite(measured_step_s) and measured_step_s > 0):
        raise ValueError(f"calibrate: measured_step_s must be a positive number of seconds, got {measured_step_s!r}")
    for name in ("model", "method", "optimizer", "optimizer_impl", "stack", "precision"):
        if getattr(measured_plan, name) != getattr(other_plan, name):
            raise ValueError(f"calibrate: the plans differ in {name} ({getattr(measured_plan, name)} vs "
                             f"{getattr(other_plan, name)}); a factor transfers only between shapes of one run")
    rates = rates or load_rates()
    spec = spec or spec_for_plan(measured_plan)

    def price(plan: TrainPlan, efficiency: float = 1.0) -> StepPrice:
        return predict_step(plan, gpu, device, spec=spec, rates=rates, efficiency=efficiency,
                            gpuwork_loop=gpuwork_loop)

    priced = price(measured_plan).total_s
    factor = priced / measured_step_s
    return CalibratedPrediction(measured_plan=measured_plan, measured_step_s=float(measured_step_s),
                                priced_measured_s=priced, factor=factor, plan=other_plan,
                                uncalibrated=price(other_plan), calibrated=price(other_plan, factor))


def calibrate_then_predict(measured_plan: TrainPlan, measured_step_s: float, other_plan: TrainPlan,
                           cpu_rates: CpuRates, *, spec: ModelSpec | None = None, rates: Rates | None = None,
                           gpuwork_loop: bool = True) -> CalibratedPrediction:
    """``calibrate_on`` for gpuwork's CPU trial: both plans as the CPU runs them (``cpu_plan``), priced with
    the CPU's measured rates.

    Example:
        >>> cal = calibrate_then_predict(plan_a, record_a.summary.median_step_time_s, plan_b, measure_cpu_rates())
        >>> cal.step_s  # plan_b's step, seconds
    """
    run_a, spec, rates = _cpu_inputs(measured_plan, spec, rates)
    return calibrate_on(run_a, measured_step_s, cpu_plan(other_plan), cpu_rates.gpu, cpu_rates.device, spec=spec,
                        rates=rates, gpuwork_loop=gpuwork_loop)


def cpu_inputs_rates(rates: Rates, cpu_rates: CpuRates) -> Rates:
    """``rates`` with the CPU's measured device rates added under gpu_id "cpu" (for ``estimate_time``)."""
    return dataclasses.replace(rates, devices={**rates.devices, "cpu": cpu_rates.device})


__all__ = [
    "torch_dtype",
    "CPU_GEMM_SHAPES",
    "CPU_SDPA_SHAPE",
    "CalibratedPrediction",
    "CpuRates",
    "DispatchCost",
    "GemmRate",
    "calibrate_on",
    "calibrate_then_predict",
    "copy_rate",
    "cpu_inputs_rates",
    "cpu_plan",
    "cpu_rates_from",
    "cpu_step_ops",
    "dispatch_cost",
    "gemm_rate",
    "gpuwork_loop_ops",
    "loop_step_ops",
    "measure_cpu_rates",
    "predict_cpu_step",
    "predict_step",
    "sdpa_flops",
    "sdpa_rate",
    "synchronize",
    "time_call",
]
