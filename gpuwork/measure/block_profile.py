"""Trace one transformer block of the real model class and record what it runs, op by op.

The plan's model is built on the meta device with the plan's method applied (as ``measure.trace``
does: peft LoRA, the 4-bit stand-in for QLoRA), its parameters become fake CPU tensors, and the model
runs up to its first block to capture the block's real inputs (hidden states, rotary cos/sin, mask).
Then that block alone runs forward and backward at the plan's hidden sizes and a concrete (batch,
seq) under a dispatch mode that records, per aten op:

- FLOPs: PyTorch's ``FlopCounterMode`` formulas (its registry; the CPU flash-attention ops, which it
  does not list, use the formulas of the CUDA flash ops they mirror — same arguments);
- bytes: the sizes of the op's input and output tensors (read + written);
- one kernel launch per op that is not a view or a metadata op;
- the bytes autograd saves for backward (``saved_tensors_hooks``; parameters and the shared rotary
  tables and mask left out, the block's input hidden states counted).

It traces at two sequence lengths; every figure per token is affine in the length, so the two
traces give its constant and its per-token-of-context part exactly (``facts.block_profiles``).

Importing this module registers ``trace_for_gather`` with ``facts.block_profiles.register_tracer``: the gather
step (``facts.resolve``) then traces the block of a family without a hand-written model for every surface
(the package root imports it, so the CLI, the workbook and ``gpuwork.sizing`` all do).

Stand-ins (as in ``measure.trace``): fake tensors run on the CPU device, so SDPA dispatches to the
CPU flash kernel (the CUDA flash kernel's inputs, outputs and saved tensors), and dropout runs as
CPU's decomposition (bernoulli_, div_, mul with a mask in the input dtype): it is recorded as CUDA's
fused dropout — one kernel that reads the input and writes the output and a 1-byte mask.
Limitations: mixed precision follows CPU autocast's op lists; QLoRA's 4-bit GEMM is the stand-in
linear of ``measure.trace`` (its dequantisation kernel is not seen); freeze is traced as a trained block.

Example:
    >>> profile = trace_block_profile(TrainPlan(model="tiny-llama", method="lora", precision="bf16"))
    >>> profile.flops_per_token("forward", "matmul", 512) > 0
    True
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from gpuwork.errors import GpuworkError, TraceError
from gpuwork.facts.block_profiles import (
    DEFAULT_CACHE,
    Affine,
    BlockProfile,
    BlockProfileCache,
    ProfileOp,
    plan_profile_key,
    profile_method,
    register_tracer,
)
from gpuwork.message import Msg, msg
from gpuwork.plan import Method, Recompute, Sharding, TrainPlan

DEFAULT_SEQ_LENS = (64, 128)  # two short lengths: fake tensors cost the same at any length
_DTYPE_NAMES = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32"}
_MATMUL_OPS = ("mm", "addmm", "bmm", "baddbmm", "_grouped_mm", "_scaled_mm")
# ops that launch no kernel: allocation and metadata only
_NO_KERNEL = ("empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "detach", "lift_fresh",
              "_unsafe_view", "_reshape_alias", "as_strided", "alias", "scalar_tensor", "_local_scalar_dense",
              "set_", "resize_", "_to_copy_noop")


class _Captured(Exception):
    """Raised by the block's pre-hook once its inputs are captured: the rest of the model need not run."""


def _model_for(plan: TrainPlan):
    """(model, spec, autocast, fake_mode) of the plan with fake CPU parameters (as measure.trace builds it)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from gpuwork.facts.model import spec_for_plan
    from gpuwork.measure.trace import _materialize_fake, _training_model

    spec = spec_for_plan(plan)
    model, _task, autocast = _training_model(plan, spec, [], device="meta")
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    _materialize_fake(model, fake_mode)
    return model, spec, autocast, fake_mode


def _first_block(model, spec):
    from gpuwork.facts.model import find_blocks

    return find_blocks(model, spec.num_layers)[1][0]


def _capture_block_inputs(model, block, batch: int, seq: int, autocast) -> tuple[tuple, dict]:
    """The positional and keyword arguments the model passes to its first block."""
    import torch

    got: dict[str, Any] = {}

    def hook(_module, args, kwargs):
        got["args"], got["kwargs"] = args, kwargs
        raise _Captured

    handle = block.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with autocast:
            model(input_ids=torch.zeros((batch, seq), dtype=torch.long))
    except _Captured:
        pass
    finally:
        handle.remove()
    if "args" not in got:
        raise TraceError(msg("error.trace.method", architecture=type(model).__name__, method="block profile",
                             detail="the model never called its first block"))
    return got["args"], got["kwargs"]


def _make_recorder():
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    bernoulli = {torch.ops.aten.bernoulli_.float, torch.ops.aten.bernoulli_.Tensor}

    class Recorder(TorchDispatchMode):
        """Per aten op: name, phase, FLOPs, bytes, launches, dtype and GEMM shape."""

        def __init__(self, flop_registry: dict) -> None:
            super().__init__()
            self.flop_registry = flop_registry
            self.phase = "forward"
            self.records: list[dict[str, Any]] = []
            self.masks: dict[int, tuple] = {}  # dropout masks: (storage, traced element size); CUDA keeps 1 byte

        def _tensor_bytes(self, t) -> int:
            if not isinstance(t, torch.Tensor):
                return 0
            try:
                storage = t.untyped_storage()
            except (NotImplementedError, RuntimeError):
                return t.numel() * t.element_size()
            if storage._cdata in self.masks:
                return t.numel()
            # an expanded (stride-0) view reads no more than its storage
            return min(t.numel() * t.element_size(), storage.nbytes())

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if func.namespace != "aten":
                return out  # prim.device and the like: no kernel
            name = func._overloadpacket.__name__
            if func in bernoulli and self.phase == "forward":
                # CPU dropout: mask = bernoulli_, div_, x * mask. CUDA: one fused kernel, 1-byte mask.
                storage = args[0].untyped_storage()
                self.masks[storage._cdata] = (storage, args[0].element_size())
                return out
            inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
            outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            if name.endswith("_") and inputs and inputs[0].untyped_storage()._cdata in self.masks:
                return out  # the in-place scaling of the mask: part of the fused kernel
            view = func.is_view or name in _NO_KERNEL
            sizes: list[int] = []  # bytes of each tensor read or written, in argument order
            if not view:
                read: set[int] = set()
                for t in inputs:
                    if id(t) not in read:  # x * x reads x once
                        read.add(id(t))
                        sizes.append(self._tensor_bytes(t))
                sizes += [self._tensor_bytes(t) for t in outputs]
            flops = 0
            packet = func._overloadpacket
            if packet in self.flop_registry:
                flops = int(self.flop_registry[packet](*args, **kwargs, out_val=out))
            m = n = 0
            if name in _MATMUL_OPS and outputs:
                o = outputs[0]
                n = int(o.shape[-1])
                m = int(o.numel() // max(n, 1))
            dtype = _DTYPE_NAMES.get(str(inputs[0].dtype), "fp32") if inputs else "fp32"
            self.records.append({"name": name, "phase": self.phase, "flops": flops, "sizes": sizes,
                                 "launches": 0 if view else 1, "dtype": dtype, "m": m, "n": n})
            return out

    return Recorder


def _flop_counter():
    """PyTorch's FlopCounterMode, taught the CPU flash-attention ops (same arguments as the CUDA ones)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode, flop_registry

    aten = torch.ops.aten

    def same_as(cuda_op):
        formula = flop_registry[cuda_op]

        def count(*args, **kwargs):
            return formula(*args, **kwargs)

        count._get_raw = True  # already takes tensors (FlopCounterMode would wrap it a second time)
        return count

    mapping = {aten._scaled_dot_product_flash_attention_for_cpu: same_as(aten._scaled_dot_product_flash_attention),
               aten._scaled_dot_product_flash_attention_for_cpu_backward:
                   same_as(aten._scaled_dot_product_flash_attention_backward)}
    return FlopCounterMode(display=False, custom_mapping=mapping)


def _trace_once(model, block, autocast, batch: int, seq: int) -> dict[str, Any]:
    """One forward + backward of ``block`` at (batch, seq): op records, saved bytes, FlopCounterMode's total."""
    import torch

    for p in model.parameters():
        p.grad = None  # the first micro-batch: gradients are stored, not accumulated (the step's ops count those)
    captured_args, captured_kwargs = _capture_block_inputs(model, block, batch, seq, autocast)
    args, kwargs = list(captured_args), dict(captured_kwargs)
    source = args[0] if args else kwargs["hidden_states"]
    hidden = torch.empty(source.shape, dtype=source.dtype).requires_grad_(True)
    if args:
        args[0] = hidden
    else:
        kwargs["hidden_states"] = hidden
    excluded: dict[int, Any] = {}
    for t in (*model.parameters(), *model.buffers(), *args[1:], *kwargs.values()):
        for x in (t if isinstance(t, (tuple, list)) else (t,)):
            if isinstance(x, torch.Tensor) and x is not hidden:
                excluded[x.untyped_storage()._cdata] = x
    saved: dict[int, Any] = {}

    counter = _flop_counter()
    recorder = _make_recorder()(counter.flop_registry)

    def pack(t):
        storage = t.untyped_storage()
        if storage._cdata not in excluded and storage._cdata not in saved:
            saved[storage._cdata] = storage
        return t

    with counter, recorder:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast:
            out = block(*args, **kwargs)
        first = out if isinstance(out, torch.Tensor) else next(o for o in out if isinstance(o, torch.Tensor))
        grad = torch.empty(first.shape, dtype=first.dtype)
        recorder.phase = "backward"
        torch.autograd.backward(first, grad)
    saved_bytes = sum(s.nbytes() // (recorder.masks[key][1] if key in recorder.masks else 1)
                      for key, s in saved.items())
    return {"records": recorder.records, "saved_bytes": saved_bytes, "flop_total": counter.get_total_flops(),
            "input_bytes": hidden.numel() * hidden.element_size(), "block": type(block).__name__,
            "causal": bool(getattr(_attention_module(block), "is_causal", False))}


def _attention_module(block):
    for module in block.modules():
        if hasattr(module, "is_causal"):
            return module
    return None


def _classify(name: str, flops: Affine) -> str:
    if "scaled_dot_product" in name or "flash_attention" in name or "efficient_attention" in name:
        return "attention"
    if name in _MATMUL_OPS:
        # score and probability matmuls of eager attention: their FLOPs per token grow with the context
        return "attention" if flops.b > 0 else "matmul"
    return "memory"


def _pair(first: dict, second: dict, s1: int, s2: int, batch: int) -> tuple[tuple[ProfileOp, ...], Affine]:
    """Per-op affine figures from the traces at s1 and s2, identical kernels merged."""
    r1, r2 = first["records"], second["records"]
    if [r["name"] for r in r1] != [r["name"] for r in r2]:
        raise TraceError(msg("error.trace.method", architecture=first["block"], method="block profile",
                             detail="the block runs different ops at different sequence lengths"))
    t1, t2 = batch * s1, batch * s2
    merged: dict[ProfileOp, int] = {}
    for a, b in zip(r1, r2, strict=True):
        if not a["launches"]:
            continue
        flops = Affine.through(s1, a["flops"] / t1, s2, b["flops"] / t2)
        # a tensor of the same size at both lengths (a weight, its gradient) is read or written once
        # per kernel whatever the tokens: kept apart from the per-token part
        fixed = sum(x for x, y in zip(a["sizes"], b["sizes"], strict=True) if x == y)
        var1 = sum(a["sizes"]) - fixed
        var2 = sum(b["sizes"]) - fixed
        nbytes = Affine.through(s1, var1 / t1, s2, var2 / t2)
        m_per_token, m_fixed = 0.0, 0
        n = a["n"]
        if a["m"]:
            if a["m"] * t2 == b["m"] * t1:
                m_per_token = a["m"] / t1
            else:
                m_fixed = a["m"]
        if a["n"] != b["n"]:
            n = 0  # columns grow with the context (eager attention scores): one per token of context
        op = ProfileOp(a["name"], _classify(a["name"], flops), a["phase"], a["dtype"], 1, _round(flops),
                       _round(nbytes), fixed, 1, m_per_token, m_fixed, n)
        key = dataclasses.replace(op, count=0)
        merged[key] = merged.get(key, 0) + 1
    ops = tuple(dataclasses.replace(op, count=c) for op, c in merged.items())
    saved = Affine.through(s1, first["saved_bytes"] / t1, s2, second["saved_bytes"] / t2)
    return ops, _round(saved)


def _round(x: Affine) -> Affine:
    """Clear float noise of the two-point fit (figures are whole bytes / FLOPs per token and context token)."""
    return Affine(round(x.a, 6), round(x.b, 9))


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for name in ("torch", "transformers", "peft"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return out


def profile_plan(plan: TrainPlan) -> TrainPlan:
    """The plan a block profile traces: the method's class (trained weights or adapters), no checkpointing,
    one micro-batch, one GPU; the fields a block does not read stay."""
    method = {"full": Method.FULL, "lora": Method.LORA, "qlora": Method.QLORA}[profile_method(plan.method.value)]
    return dataclasses.replace(plan, method=method, grad_checkpointing=False, recompute=Recompute.BLOCK, grad_accum=1,
                               gpus=1, sharding=Sharding.DDP, offload_optimizer=False, batch_size=1)


def block_profile_key(plan: TrainPlan, config: dict | None = None) -> str:
    from gpuwork.facts.model import load_config

    return plan_profile_key(config if config is not None else load_config(plan.model)[0], plan)


def trace_block_profile(plan: TrainPlan, *, seq_lens: tuple[int, int] = DEFAULT_SEQ_LENS,
                        batch_size: int = 1) -> BlockProfile:
    """Trace one block of the plan's model forward and backward (see the module docstring).

    Args:
        plan: model, method (full/scratch/freeze trace a trained block; lora/qlora a frozen one with the
            plan's adapters), precision, attention and LoRA fields are read; nothing else.
        seq_lens: the two concrete sequence lengths traced (any two distinct lengths give the same profile).
        batch_size: sequences per traced micro-batch.

    Raises TraceError when the real class cannot run under fake tensors.
    """
    import torch

    from gpuwork.facts.model import load_config

    s1, s2 = sorted(seq_lens)
    if s1 == s2 or s1 < 1:
        raise ValueError(f"seq_lens must be two distinct positive lengths, got {seq_lens}")
    config, _ = load_config(plan.model)
    traced = profile_plan(plan)
    model, spec, autocast, fake_mode = _model_for(traced)
    if spec.num_experts > 1:
        # the router's token counts per expert are data: fake tensors cannot say how many rows each GEMM gets
        raise TraceError(msg("error.trace.method", architecture=spec.architecture, method=plan.method,
                             detail="routed experts (MoE) take data-dependent token shares"))
    block = _first_block(model, spec)
    try:
        with fake_mode:
            first = _trace_once(model, block, autocast, batch_size, s1)
            second = _trace_once(model, block, autocast, batch_size, s2)
    except torch._subclasses.fake_tensor.DataDependentOutputException as exc:
        raise TraceError(msg("error.trace.data_dependent", op=str(getattr(exc, "func", exc)),
                             architecture=spec.architecture)) from None
    except (NotImplementedError, RuntimeError, TypeError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TraceError(msg("error.trace.method", architecture=spec.architecture, method=plan.method,
                             detail=first_line[:300])) from None
    ops, saved = _pair(first, second, s1, s2, batch_size)
    method = profile_method(plan.method.value)
    return BlockProfile(
        key=block_profile_key(plan, config), model_type=spec.model_type, architecture=first["block"], method=method,
        weights_trained=method == "full", precision=plan.precision.value, attention=plan.attention.value,
        lora_r=plan.lora_r if method != "full" else 0,
        lora_targets=tuple(plan.lora_targets) if method != "full" else (),
        lora_dropout=plan.lora_dropout if method != "full" else 0.0, hidden_size=spec.hidden_size,
        causal=first["causal"], seq_lens=(s1, s2), batch_size=batch_size, ops=ops, saved_bytes=saved,
        input_bytes=first["input_bytes"] / (batch_size * s1), versions=_versions(), source=str(plan.model))


def block_profile_for(plan: TrainPlan, cache: BlockProfileCache | None = None) -> BlockProfile:
    """The plan's block profile from ``cache`` (memory, bundled, user folder), traced and kept there if absent."""
    cache = cache if cache is not None else _DEFAULT_CACHE
    key = block_profile_key(plan)
    hit = cache.get(key)
    if hit is not None:
        return hit
    profile = trace_block_profile(plan)
    cache.put(profile)
    return profile


_DEFAULT_CACHE = DEFAULT_CACHE  # the one the estimates read (gpuwork.facts.resolve)


def trace_for_gather(plan: TrainPlan) -> tuple[BlockProfile | None, Msg]:
    """The gather step's tracer: the plan's block profile and a note saying it was traced in so many seconds,
    or None and why not (no torch: the core install; a class that cannot run under fake tensors). Never
    raises: the nearest family's block then stands in."""
    from gpuwork.facts.model import load_config

    try:
        model_type = str(load_config(plan.model)[0].get("model_type", "?"))  # a JSON read: no torch
    except GpuworkError as exc:
        return None, msg("cli.block_profile.failed", model_type="?", error=exc.msg or str(exc))
    try:
        import torch  # noqa: F401 - the core install has none
        import transformers  # noqa: F401
    except ImportError:
        return None, msg("cli.block_profile.no_torch", model_type=model_type)
    start = time.perf_counter()
    try:
        profile = trace_block_profile(plan)
    except GpuworkError as exc:
        return None, msg("cli.block_profile.failed", model_type=model_type, error=exc.msg or str(exc))
    except Exception as exc:  # noqa: BLE001 - the tracer runs a third-party class: any failure leaves the estimate
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        return None, msg("cli.block_profile.failed", model_type=model_type,
                         error=f"{type(exc).__name__}: {first_line}"[:200])
    return profile, msg("cli.block_profile.traced", model_type=model_type, seconds=time.perf_counter() - start)


register_tracer(trace_for_gather)

__all__ = ["DEFAULT_SEQ_LENS", "block_profile_for", "block_profile_key", "profile_plan", "trace_block_profile",
           "trace_for_gather"]
