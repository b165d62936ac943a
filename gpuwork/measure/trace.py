"""Exact mode: run one real training step under fake tensors and measure its peak memory.

The real transformers model class is built from the plan's config, the plan's method is applied
(peft LoRA, freeze, full), and forward, loss, backward and one optimizer step run on *fake*
tensors (shapes and dtypes only: no memory, no GPU, no weights). A dispatch-mode tracker adds up
the bytes of every live tensor storage and keeps the peak with its breakdown by category.

What is real and what stands in (reported in ``TraceResult.stand_ins``):
- bitsandbytes 0.50 registers its 4-bit ops with torch.library and they do run on fake tensors
  (``torch.ops.bitsandbytes.dequantize_4bit`` has a fake kernel), but its ``Params4bit`` tensor
  subclass cannot wrap a FakeTensor ("raw Tensor object is already associated to a python object
  of type FakeTensor"). So QLoRA traces a stand-in linear that stores the same packed uint8 weight
  and absmax tensors and reproduces bnb 0.50's ``MatMul4Bit`` (no saved input; a dequantized
  weight as a transient in backward).
- bitsandbytes optimizers (8-bit AdamW, Lion) run fused C kernels: a stand-in allocates the same
  state tensors and steps without temporaries, as the fused kernels do.
- Fake tensors live on the CPU device: autocast (mixed precision) follows PyTorch's CPU autocast
  op lists, which keep a few more ops in fp32 than CUDA's.
- FSDP / ZeRO-3 plans are traced per rank: FSDP2 ``fully_shard`` per block and root over a fake
  process group of ``plan.shard_ranks`` ranks (HSDP: one shard group), measured by PyTorch's FSDPMemTracker.
- Attention dropout under SDPA is switched off: CUDA's flash / memory-efficient kernels store
  nothing for it, while the CPU would fall back to the math kernel and keep an s x s mask.
Limitations: ZeRO-1/2 (DeepSpeed) are not traced; CUDA caching-allocator rounding and workspaces
are not traced (the estimator adds them for reserved and device totals).

Example:
    >>> result = trace_memory(TrainPlan(model="tiny-llama", method="full", precision="fp32"))
    >>> result.peak_allocated_bytes > 0
    True
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from gpuwork.errors import TraceError
from gpuwork.facts.model import auto_class, hook_input_grads, spec_for_plan
from gpuwork.measure.checkpoint_policy import checkpoint_kwargs, checkpoint_one_in
from gpuwork.message import Msg, msg
from gpuwork.plan import Attention, Method, Optimizer, Precision, Recompute, Task, TrainPlan

CATEGORIES = ("parameters", "buffers", "gradients", "optimizer_states", "activations", "temporaries")
_BNB_BLOCKSIZE_8BIT = 256  # bitsandbytes blockwise 8-bit optimizer states (functional.py)
_BNB_MIN_8BIT_SIZE = 4096  # bnb optimizers keep 32-bit states for tensors smaller than this
_NF4_BLOCKSIZE = 64  # bitsandbytes 4-bit quantization block (QLoRA paper §3)
_DQ_BLOCKSIZE = 256  # double quantization: absmax constants quantized in blocks of 256


@dataclass(frozen=True)
class TraceResult:
    """Peak memory of one traced training step (bytes of live tensors, CPU fake device)."""

    plan: TrainPlan
    peak_allocated_bytes: int
    breakdown: dict[str, int]  # categories at the moment of the peak
    phase_peaks: dict[str, int]  # peak reached in forward, backward and the optimizer step
    peak_phase: str
    params_total: int
    params_trainable: int
    stand_ins: tuple[Msg, ...] = ()  # what was traced in place of the real thing (trace.stand_in.* codes)
    elapsed_s: float = 0.0
    notes: tuple[Msg, ...] = field(default_factory=tuple)
    marks: dict[str, dict[str, int]] = field(default_factory=dict)  # live bytes at phase ends

    def as_dict(self) -> dict[str, Any]:
        return {
            "plan": self.plan.as_dict(),
            "params": {"total": self.params_total, "trainable": self.params_trainable},
            "memory": {
                "peak_allocated_bytes": self.peak_allocated_bytes,
                "breakdown": dict(self.breakdown),
                "phase_peaks": dict(self.phase_peaks),
                "peak_phase": self.peak_phase,
            },
            "trace": {"stand_ins": [m.as_dict() for m in self.stand_ins], "elapsed_s": round(self.elapsed_s, 3),
                      "notes": [m.as_dict() for m in self.notes]},
        }


# -- the tracker ---------------------------------------------------------------------------------


def _make_tracker_class():
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from torch.utils.weak import WeakIdKeyDictionary

    _BERNOULLI = {torch.ops.aten.bernoulli_.float, torch.ops.aten.bernoulli_.Tensor}

    class LiveBytes(TorchDispatchMode):
        """Sum of live storage bytes by category; the peak and its breakdown.

        Every tensor an op returns is attributed to the current phase's category the first time
        its storage is seen; a weakref callback subtracts it when the storage dies.
        """

        def __init__(self) -> None:
            super().__init__()
            self.current = dict.fromkeys(CATEGORIES, 0)
            self.total = 0
            self.peak = 0
            self.peak_breakdown = dict(self.current)
            self.phase = "forward"
            self.phase_peaks: dict[str, int] = {}
            self.peak_phase = "forward"
            self.marks: dict[str, dict[str, int]] = {}
            self._seen = WeakIdKeyDictionary()
            self._refs: list[Any] = []

        def category_for_phase(self) -> str:
            # states exist before the traced step (warm-up), so anything new in the step is temporary
            return "activations" if self.phase == "forward" else "temporaries"

        def track(self, tensor: Any, category: str) -> None:
            if not isinstance(tensor, torch.Tensor):
                return
            try:
                storage = tensor.untyped_storage()
            except (NotImplementedError, RuntimeError):
                return
            entry = self._seen.get(storage)
            if entry is not None:
                if entry[0] != category and category in ("gradients", "optimizer_states", "parameters"):
                    self.current[entry[0]] -= entry[1]
                    self.current[category] += entry[1]
                    entry[0] = category
                return
            nbytes = storage.nbytes()
            entry = [category, nbytes]
            self._seen[storage] = entry
            self.current[category] += nbytes
            self.total += nbytes
            self._refs.append(weakref.ref(storage, functools.partial(self._release, entry)))
            self._update_peak()

        def shrink_to_bytes(self, tensor: Any, nbytes: int) -> None:
            entry = self._seen.get(tensor.untyped_storage())
            if entry is None:
                self.track(tensor, self.category_for_phase())
                entry = self._seen.get(tensor.untyped_storage())
            if entry is not None and entry[1] > nbytes:
                self.current[entry[0]] -= entry[1] - nbytes
                self.total -= entry[1] - nbytes
                entry[1] = nbytes

        def _release(self, entry: list, _ref: Any) -> None:
            self.current[entry[0]] -= entry[1]
            self.total -= entry[1]

        def _update_peak(self) -> None:
            if self.total > self.phase_peaks.get(self.phase, 0):
                self.phase_peaks[self.phase] = self.total
            if self.total > self.peak:
                self.peak = self.total
                self.peak_breakdown = dict(self.current)
                self.peak_phase = self.phase

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func in _BERNOULLI and self.phase != "optimizer":
                # CPU dropout keeps its noise mask in the input dtype; CUDA's fused dropout keeps a
                # 1-byte mask. Count what the GPU will hold.
                self.shrink_to_bytes(args[0], args[0].numel())
            category = self.category_for_phase()
            for t in tree_flatten(out)[0]:
                self.track(t, category)
            return out

        def mark(self, name: str) -> None:
            self.marks[name] = dict(self.current)

        def reset_peak(self) -> None:
            self.peak = self.total
            self.peak_breakdown = dict(self.current)
            self.phase_peaks = {}

    return LiveBytes


# -- stand-ins for bitsandbytes ------------------------------------------------------------------


def _make_fake4bit_linear(torch):
    class _MatMul4BitStandIn(torch.autograd.Function):
        """bitsandbytes 0.50 MatMul4Bit: fused gemm forward, saves only the packed weight."""

        @staticmethod
        def forward(ctx, x, packed, out_features, in_features):
            ctx.shape = (out_features, in_features)
            ctx.save_for_backward(packed)
            return x.new_empty((*x.shape[:-1], out_features))

        @staticmethod
        def backward(ctx, grad_out):
            (packed,) = ctx.saved_tensors
            weight = grad_out.new_empty(ctx.shape)  # dequantize_4bit: a transient 16-bit weight
            return grad_out @ weight, None, None, None

    class Fake4bitLinear(torch.nn.Linear):
        """Stand-in for bnb Linear4bit: packed uint8 weight + absmax; casts input to compute dtype."""

        def __init__(self, in_features, out_features, bias, compute_dtype, double_quant, device):
            torch.nn.Module.__init__(self)
            self.in_features, self.out_features = in_features, out_features
            numel = in_features * out_features
            blocks = math.ceil(numel / _NF4_BLOCKSIZE)
            self.weight = torch.nn.Parameter(torch.empty((numel + 1) // 2, 1, dtype=torch.uint8, device=device),
                                             requires_grad=False)
            if double_quant:
                self.register_buffer("absmax", torch.empty(blocks, dtype=torch.uint8, device=device))
                self.register_buffer("absmax2", torch.empty(math.ceil(blocks / _DQ_BLOCKSIZE),
                                                            dtype=torch.float32, device=device))
            else:
                self.register_buffer("absmax", torch.empty(blocks, dtype=torch.float32, device=device))
            self.bias = (torch.nn.Parameter(torch.empty(out_features, dtype=compute_dtype, device=device),
                                            requires_grad=False) if bias else None)
            self.compute_dtype = compute_dtype

        def forward(self, x):
            in_dtype = x.dtype
            x = x.to(self.compute_dtype)
            out = _MatMul4BitStandIn.apply(x, self.weight, self.out_features, self.in_features)
            if self.bias is not None:
                out = out + self.bias
            return out.to(in_dtype)

    return Fake4bitLinear


def _make_bnb_optimizer_standin(torch):
    class BnbStandIn(torch.optim.Optimizer):
        """Allocates bitsandbytes optimizer states; the step is a fused kernel (no temporaries)."""

        def __init__(self, params, states: int, eight_bit: bool):
            super().__init__(params, {"lr": 1e-4})
            self.n_states, self.eight_bit = states, eight_bit

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if not state:
                        state["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
                        eight = self.eight_bit and p.numel() >= _BNB_MIN_8BIT_SIZE
                        for i in range(self.n_states):
                            if eight:
                                state[f"state{i + 1}"] = torch.empty_like(p, dtype=torch.uint8)
                                blocks = math.ceil(p.numel() / _BNB_BLOCKSIZE_8BIT)
                                state[f"absmax{i + 1}"] = torch.empty(blocks, dtype=torch.float32, device=p.device)
                                state[f"qmap{i + 1}"] = torch.empty(256, dtype=torch.float32, device=p.device)
                            else:
                                state[f"state{i + 1}"] = torch.empty_like(p, dtype=torch.float32)
                    p.add_(p.grad, alpha=0.0)  # the fused kernel writes p in place
            return None

    return BnbStandIn


# -- building the traced model ---------------------------------------------------------------------


def _dtype(torch, name: str):
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _build_model(plan: TrainPlan, config_dict: dict, stand_ins: list[Msg], device: str = "meta"):
    import torch
    import transformers

    from gpuwork.facts.model import resolve_task

    transformers.logging.set_verbosity_error()
    task = resolve_task(config_dict, plan.task)
    compute = _dtype(torch, plan.precision.torch_dtype_name)
    storage_dtype = torch.float32 if plan.precision in (Precision.FP32,) or (
        plan.precision.is_mixed and not plan.uses_adapters) else compute
    config = transformers.CONFIG_MAPPING[config_dict["model_type"]].from_dict(dict(config_dict))
    if task is Task.SEQ_CLS:
        config.num_labels = 2
        if getattr(config, "pad_token_id", None) is None:
            config.pad_token_id = 0
    attn = "eager" if plan.attention is Attention.EAGER else "sdpa"  # flash kernels run as SDPA here
    if attn == "sdpa":
        # CUDA's flash / memory-efficient SDPA kernels regenerate attention dropout from an RNG seed
        # and store no s x s tensor; on CPU, SDPA with dropout falls back to the math kernel, which
        # does. Trace the GPU kernel: attention dropout off (its memory is nil there).
        for key in ("attention_dropout", "attn_pdrop", "attention_probs_dropout_prob"):
            if getattr(config, key, 0):
                setattr(config, key, 0.0)
                stand_ins.append(msg("trace.stand_in.attention_dropout"))
    if plan.attention.is_flash:
        stand_ins.append(msg("trace.stand_in.flash"))
    auto = auto_class(task)
    with torch.device(device):
        model = auto.from_config(config, attn_implementation=attn, dtype=storage_dtype)
    return model, task, compute


def _apply_method(model, plan: TrainPlan, spec, task, compute, stand_ins: list[Msg]):
    import torch

    from gpuwork.facts.model import quantized_linears

    if plan.method is Method.QLORA:
        fake4 = _make_fake4bitLinear_cached(torch)
        names = {lin.name for lin in quantized_linears(spec)}
        prefix = spec.extras["blocks_prefix"]
        for module_name, module in list(model.named_modules()):
            if not isinstance(module, torch.nn.Linear):
                continue
            key = module_name
            if module_name.startswith(prefix + "."):
                key = module_name[len(prefix) + 1:].split(".", 1)[1]
            if key not in names:
                continue
            parent_name, _, child = module_name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            setattr(parent, child, fake4(module.in_features, module.out_features, module.bias is not None,
                                         compute, plan.double_quant, "meta"))
        # peft prepare_model_for_kbit_training: every non-quantized 16-bit parameter becomes fp32 (unless the
        # framework skips it or casts them back: kbit_upcast=False)
        for p in model.parameters():
            if plan.kbit_upcast and p.dtype in (torch.float16, torch.bfloat16):
                p.data = p.data.to(torch.float32)
        stand_ins.append(msg("trace.stand_in.qlora"))

    if plan.uses_adapters:
        from peft import LoraConfig, TaskType, get_peft_model

        targets = "all-linear" if plan.lora_targets == ("all-linear",) else list(plan.lora_targets)
        task_type = {Task.CAUSAL_LM: TaskType.CAUSAL_LM, Task.SEQ_CLS: TaskType.SEQ_CLS}.get(task)
        if plan.method is Method.QLORA and targets == "all-linear":
            targets = sorted({lin.short_name for lin in quantized_linears(spec)})
        lora = LoraConfig(r=plan.lora_r, lora_alpha=plan.lora_alpha, lora_dropout=plan.lora_dropout,
                          target_modules=targets, task_type=task_type)
        if plan.method is Method.QLORA:
            model.is_loaded_in_4bit = True
        model = get_peft_model(model, lora)
        if plan.precision.is_mixed or plan.method is Method.QLORA:
            for p in model.parameters():
                if p.requires_grad:
                    p.data = p.data.to(torch.float32)
    elif plan.method is Method.FREEZE:
        prefix = spec.extras["blocks_prefix"]
        first_trained = spec.num_layers - min(plan.trainable_layers, spec.num_layers)
        for name, p in model.named_parameters():
            trained = False
            if name.startswith(prefix + "."):
                trained = int(name[len(prefix) + 1:].split(".", 1)[0]) >= first_trained
            elif not any(e in name for e in ("embed", "wte", "wpe", "embeddings")):
                trained = True  # final norm and head
            p.requires_grad_(trained)
    return model


def _training_model(plan: TrainPlan, spec, stand_ins: list[Msg], device: str):
    """(model, task, autocast): the plan's model on ``device`` with its method applied, checkpointing
    as planned, in train mode, and the context its steps run under (CPU autocast to the compute
    dtype for mixed precision, else none)."""
    import torch

    from gpuwork.facts.model import load_config

    config_dict, _ = load_config(plan.model)
    model, task, compute = _build_model(plan, config_dict, stand_ins, device=device)
    model = _apply_method(model, plan, spec, task, compute, stand_ins)
    input_grads = _input_grads(plan)
    if plan.grad_checkpointing:
        # the non-reentrant kind where no input requires grad, as the trial's: the reentrant kind would leave the
        # trained blocks without a gradient
        # (torchtitan's op policy: non-reentrant with its context_fn, gpuwork.measure.checkpoint_policy)
        model.gradient_checkpointing_enable(**({} if input_grads and plan.recompute is Recompute.BLOCK else
                                               {"gradient_checkpointing_kwargs": checkpoint_kwargs(plan)}))
        checkpoint_one_in(model, plan)  # one block in n (recompute_every)
    if plan.method is Method.FREEZE:  # the other methods keep what their checkpointing did
        hook_input_grads(model, input_grads)
    model.train()
    autocast = torch.autocast("cpu", dtype=compute) if plan.precision.is_mixed else contextlib.nullcontext()
    return model, task, autocast


def _input_grads(plan: TrainPlan) -> bool:
    """Whether the backward crosses the frozen blocks: always but under freeze, where it is the plan's
    (input_require_grads; unset: its stack's, as the estimate and the trial decide it)."""
    from gpuwork.facts.rates import with_stack_input_grads

    return plan.method is not Method.FREEZE or bool(with_stack_input_grads(plan).input_require_grads)


def _fake_training_model(plan: TrainPlan, spec, stand_ins: list[Msg]):
    """(model, task, autocast, fake_mode): the training model with fake CPU tensors for parameters and
    buffers. Built and given its method on the meta device first: peft cannot swap fake parameters."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    model, task, autocast = _training_model(plan, spec, stand_ins, device="meta")
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    _materialize_fake(model, fake_mode)
    return model, task, autocast, fake_mode


@functools.lru_cache(maxsize=1)
def _make_fake4bitLinear_cached(torch):
    return _make_fake4bit_linear(torch)


def _materialize_fake(model, fake_mode) -> None:
    """Replace every meta parameter and buffer by a fake CPU tensor, keeping ties."""
    import torch

    replaced: dict[int, Any] = {}
    with fake_mode:
        for module in model.modules():
            for name, p in list(module._parameters.items()):
                if p is None:
                    continue
                if id(p) not in replaced:
                    new = torch.nn.Parameter(torch.empty(p.shape, dtype=p.dtype, device="cpu"),
                                             requires_grad=p.requires_grad)
                    replaced[id(p)] = new
                module._parameters[name] = replaced[id(p)]
            for name, b in list(module._buffers.items()):
                if b is None:
                    continue
                if id(b) not in replaced:
                    replaced[id(b)] = torch.zeros(b.shape, dtype=b.dtype, device="cpu")
                module._buffers[name] = replaced[id(b)]


def _optimizer(plan: TrainPlan, params, stand_ins: list[Msg]):
    import torch

    lr = 1e-4
    impl: dict[str, Any] = plan.optimizer_impl.torch_kwargs  # keywords only (fused / foreach)
    if plan.optimizer is Optimizer.ADAMW:
        return torch.optim.AdamW(params, lr=lr, **impl)
    if plan.optimizer is Optimizer.SGD:
        return torch.optim.SGD(params, lr=lr, momentum=0.9, **impl)
    if plan.optimizer is Optimizer.ADAFACTOR:
        from transformers.optimization import Adafactor

        return Adafactor(params, lr=lr, scale_parameter=False, relative_step=False, warmup_init=False)
    standin = _make_bnb_optimizer_standin(torch)
    stand_ins.append(msg("trace.stand_in.optimizer", optimizer=plan.optimizer))
    if plan.optimizer is Optimizer.LION:
        return standin(params, states=1, eight_bit=False)
    return standin(params, states=2, eight_bit=True)


def _batch(torch, plan: TrainPlan, spec, task):
    b, s = plan.batch_size, plan.seq_len
    input_ids = torch.zeros((b, s), dtype=torch.long)
    if task is Task.SEQ_CLS:
        return {"input_ids": input_ids, "labels": torch.zeros((b,), dtype=torch.long)}
    return {"input_ids": input_ids, "labels": torch.zeros((b, s), dtype=torch.long)}


def _train_step(model, optimizer, batch: dict, autocast, micro_batches: int) -> None:
    """Forward, loss and backward for each micro-batch, then the optimizer step (grads set to None)."""
    for _ in range(micro_batches):
        with autocast:
            loss = model(**batch).loss
        loss.backward()
        del loss
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def trace_memory(plan: TrainPlan, *, progress: bool = False, use_cache: bool = True,
                 progress_labels: tuple[str, str] = ("trace", "stage")) -> TraceResult:
    """Trace one steady-state training step of the plan (per GPU, no sharding) under fake tensors.

    Args:
        plan: the run; memory fields are read, data/schedule fields are not.
        progress: show a tqdm bar over the trace stages.
        progress_labels: the bar's description and unit (the CLI passes them in the reader's language).
        use_cache: reuse the result of an identical plan traced earlier in this process.

    Returns the peak of live tensor bytes (what ``torch.cuda.max_memory_allocated`` would report,
    less allocator rounding) with a breakdown by category at that moment.
    Raises TraceError naming the op or module that fake tensors cannot run.
    """
    if plan.sharding.value in ("zero1", "zero2"):
        raise TraceError(msg("error.trace.deepspeed", sharding=plan.sharding))
    if plan.mlm_predictions and _masked_lm(plan):  # transformers' head: every position, not the gathered ones
        raise TraceError(msg("error.trace.mlm_predictions", count=plan.mlm_predictions))
    key = _cache_key(plan)
    if use_cache and key in _CACHE:
        return _CACHE[key]
    if plan.sharding.per_unit:  # ZeRO-3, FSDP, HSDP, HSDP-ZeRO2: fully_shard unit by unit
        result = _run_isolated(plan) if _needs_isolation() else _trace_fsdp(plan)
    else:
        result = _trace_uncached(plan, progress=progress, labels=progress_labels)
    _CACHE[key] = result
    return result


_CACHE: dict[tuple, TraceResult] = {}


def _masked_lm(plan: TrainPlan) -> bool:
    return spec_for_plan(plan).task is Task.MASKED_LM


def _cache_key(plan: TrainPlan) -> tuple:
    memory_fields = plan.as_dict()
    for name in ("dataset_tokens", "dataset_bytes", "epochs", "eval_fraction", "checkpoint_every_steps",
                 "checkpoints_kept"):
        memory_fields.pop(name, None)
    return tuple(sorted((k, str(v)) for k, v in memory_fields.items()))


def _trace_uncached(plan: TrainPlan, progress: bool, labels: tuple[str, str] = ("trace", "stage")) -> TraceResult:
    import torch

    from gpuwork.facts.model import count_params, spec_for_plan

    started = time.perf_counter()
    stages = ["build", "warm-up step", "traced step"]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(stages), desc=labels[0], unit=labels[1])
    stand_ins: list[Msg] = []
    spec = spec_for_plan(plan)
    counts = count_params(spec, plan)
    model, task, autocast, fake_mode = _fake_training_model(plan, spec, stand_ins)
    if bar:
        bar.update(1)
    tracker_cls = _make_tracker_class()
    trainable = [p for p in model.parameters() if p.requires_grad]
    try:
        with fake_mode:
            optimizer = _optimizer(plan, trainable, stand_ins)
            batch = _batch(torch, plan, spec, task)
            # warm-up step (untracked): creates the optimizer states a steady-state step holds
            _train_step(model, optimizer, batch, autocast, 1)
            if bar:
                bar.update(1)
            tracker = tracker_cls()
            for p in model.parameters():
                tracker.track(p, "parameters")
            for b in model.buffers():
                tracker.track(b, "buffers")
            for state in optimizer.state.values():
                for value in state.values():
                    tracker.track(value, "optimizer_states")
            for t in batch.values():
                tracker.track(t, "activations")
            handles = [p.register_post_accumulate_grad_hook(lambda q: tracker.track(q.grad, "gradients"))
                       for p in trainable]
            tracker.reset_peak()
            with tracker:
                for micro in range(min(plan.grad_accum, 2)):
                    tracker.phase = "forward"
                    with autocast:
                        loss = model(**batch).loss
                    tracker.mark(f"end-forward-{micro}")
                    tracker.phase = "backward"
                    loss.backward()
                    del loss
                tracker.mark("end-backward")
                tracker.phase = "optimizer"
                optimizer.step()
                tracker.phase = "after-step"
                optimizer.zero_grad(set_to_none=True)
            for h in handles:
                h.remove()
    except torch._subclasses.fake_tensor.DataDependentOutputException as exc:
        raise TraceError(msg("error.trace.data_dependent", op=str(exc.func if hasattr(exc, "func") else exc),
                             architecture=spec.architecture)) from None
    except (NotImplementedError, RuntimeError, TypeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TraceError(msg("error.trace.method", architecture=spec.architecture, method=plan.method,
                             detail=first[:300])) from None
    finally:
        if bar:
            bar.close()
    if bar:
        bar.update(1)
    breakdown = {k: int(v) for k, v in tracker.peak_breakdown.items()}
    return TraceResult(
        plan=plan,
        peak_allocated_bytes=int(tracker.peak),
        breakdown=breakdown,
        phase_peaks={k: int(v) for k, v in tracker.phase_peaks.items()},
        peak_phase=tracker.peak_phase,
        params_total=counts.total,
        params_trainable=counts.trainable,
        stand_ins=tuple(dict.fromkeys(stand_ins)),
        elapsed_s=time.perf_counter() - started,
        marks={k: {c: int(v) for c, v in m.items()} for k, m in tracker.marks.items()},
    )


# -- sharded plans: FSDP2 under a fake process group ---------------------------------------------

_FSDP_CATEGORIES = {  # FSDPMemTracker reference types -> our categories
    "Sharded Param": "parameters",
    "Buffer": "buffers",
    "Sharded Grad": "gradients",
    "OptState": "optimizer_states",
    "Activation": "activations",
    "Inputs": "activations",
    "Temp": "temporaries",
    "Unsharded Param": "sharding_buffers",
    "Unsharded Grad": "sharding_buffers",
    "All Gather": "sharding_buffers",
    "Reduce Scatter": "sharding_buffers",
}


def _needs_isolation() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def _run_isolated(plan: TrainPlan) -> TraceResult:
    raise TraceError(msg("error.trace.process_group"))


def _trace_fsdp(plan: TrainPlan) -> TraceResult:
    """Per-rank peak of an FSDP2 (fully_shard per block + root) step with ``plan.gpus`` fake ranks.

    PyTorch's fake process group runs collectives as no-ops with the right shapes, and its
    FSDPMemTracker attributes the sharded and gathered tensors (torch.distributed._tools).
    """
    import torch
    import torch.distributed as dist
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from gpuwork.facts.model import count_params, spec_for_plan

    if plan.method is Method.QLORA:
        raise TraceError(msg("error.trace.sharded_qlora"))
    started = time.perf_counter()
    stand_ins = [msg("trace.stand_in.fsdp", sharding=plan.sharding, ranks=plan.shard_ranks)]
    spec = spec_for_plan(plan)
    counts = count_params(spec, plan)
    dist.init_process_group("fake", rank=0, world_size=plan.shard_ranks, store=FakeStore())
    try:
        mesh = init_device_mesh("cpu", (plan.shard_ranks,))  # HSDP: one shard group; outside fake mode
        model, task, autocast, fake_mode = _fake_training_model(plan, spec, stand_ins)
        with fake_mode:
            prefix = spec.extras["blocks_prefix"]
            # HSDP-ZeRO2 (_HYBRID_SHARD_ZERO2) keeps each block gathered from forward to its backward
            reshard = plan.sharding.shards_params
            for block in model.get_submodule(prefix if not plan.uses_adapters else "base_model.model." + prefix):
                fully_shard(block, mesh=mesh, reshard_after_forward=reshard)
            fully_shard(model, mesh=mesh)
            trainable = [p for p in model.parameters() if p.requires_grad]
            optimizer = _optimizer(plan, trainable, stand_ins)
            batch = _batch(torch, plan, spec, task)

            def step() -> None:
                _train_step(model, optimizer, batch, autocast, min(plan.grad_accum, 2))

            step()  # warm-up: optimizer states exist
            tracker = FSDPMemTracker(model, optimizer)
            tracker.track_inputs(tuple(batch.values()))
            with tracker:
                step()
            snapshot = next(iter(tracker.get_tracker_snapshot("peak").values()))
    except (NotImplementedError, RuntimeError, TypeError, AttributeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TraceError(msg("error.trace.sharding", architecture=spec.architecture, sharding=plan.sharding,
                             detail=first[:300])) from None
    finally:
        dist.destroy_process_group()
    breakdown = dict.fromkeys((*CATEGORIES, "sharding_buffers"), 0)
    for key, value in snapshot.items():
        name = getattr(key, "value", key)
        if name == "Total":
            continue
        breakdown[_FSDP_CATEGORIES.get(name, "temporaries")] += int(value)
    return TraceResult(plan=plan, peak_allocated_bytes=int(snapshot["Total"]), breakdown=breakdown,
                       phase_peaks={}, peak_phase="step", params_total=counts.total,
                       params_trainable=counts.trainable, stand_ins=tuple(stand_ins),
                       elapsed_s=time.perf_counter() - started)


def real_step_peak(plan: TrainPlan, *, seed: int = 0) -> dict[str, int]:
    """Run one real training step on the CPU and measure live tensor bytes with PyTorch's MemTracker.

    The reference that fake tracing is checked against: same model build, method, optimizer and
    batch, but real tensors (so only for small models). QLoRA is not built here: its real 4-bit model comes
    from transformers + bitsandbytes (tests/test_qlora_real_step.py measures it with ``step_peak``).

    Returns {"peak_bytes": ..., and MemTracker's categories at the peak}.
    """
    import torch

    from gpuwork.facts.model import spec_for_plan

    if plan.method is Method.QLORA:
        raise TraceError(msg("error.trace.real_qlora"))
    torch.manual_seed(seed)
    spec = spec_for_plan(plan)
    stand_ins: list[Msg] = []
    model, task, autocast = _training_model(plan, spec, stand_ins, device="cpu")
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = _optimizer(plan, trainable, stand_ins)
    batch = _batch(torch, plan, spec, task)
    return step_peak(model, optimizer, batch, autocast, min(plan.grad_accum, 2))


def step_peak(model: Any, optimizer: Any, batch: dict, autocast: Any, micro_batches: int = 1) -> dict[str, int]:
    """Live tensor bytes at the peak of one real training step of ``model`` (after a warm-up step, so the optimizer
    states exist), measured with PyTorch's MemTracker: {"peak_bytes": ..., and its categories at the peak}."""
    from torch.distributed._tools.mem_tracker import MemTracker

    def step() -> None:
        _train_step(model, optimizer, batch, autocast, micro_batches)

    step()  # warm-up: optimizer states exist before measuring

    class _TrainableHooksOnly(MemTracker):
        # MemTracker hooks every parameter's gradient and fails on frozen ones
        def _track_module_params_and_buffers(self, module, install_grad_hooks=True):
            frozen = [p for p in module.parameters() if not p.requires_grad]
            saved = {id(p): p.register_hook for p in frozen}
            for p in frozen:
                p.register_hook = lambda *a, **k: _NoHandle()
                p.register_post_accumulate_grad_hook = lambda *a, **k: _NoHandle()
            try:
                return super()._track_module_params_and_buffers(module, install_grad_hooks)
            finally:
                for p in frozen:
                    del p.register_hook
                    del p.register_post_accumulate_grad_hook
                del saved

    tracker = _TrainableHooksOnly()
    tracker.track_external(model, optimizer, *batch.values())
    with tracker:
        step()
    snapshot = tracker.get_tracker_snapshot("peak")
    device_snapshot = next(iter(snapshot.values()))
    out = {"peak_bytes": int(device_snapshot["Total"])}
    out.update({str(k): int(v) for k, v in device_snapshot.items() if k != "Total"})
    return out


def saved_per_block(model: Any, layers: Any, batch: dict, autocast: Any) -> list[int]:
    """Bytes of the distinct non-parameter tensors autograd saves inside each of ``layers`` (the decoder blocks)
    during one real forward of ``model``, counted with saved-tensor hooks."""
    import torch

    seen = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved = [0] * len(layers)
    current = [-1]
    hooks = []
    for i, layer in enumerate(layers):
        hooks.append(layer.register_forward_pre_hook(lambda m, a, i=i: current.__setitem__(0, i)))
        hooks.append(layer.register_forward_hook(lambda m, a, o: current.__setitem__(0, -1)))

    def pack(t: Any) -> Any:
        storage = t.untyped_storage()
        if current[0] >= 0 and storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            saved[current[0]] += storage.nbytes()
        return t

    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast:
            model(**batch).loss.detach()
    finally:
        for h in hooks:
            h.remove()
    return saved


class _NoHandle:
    def remove(self) -> None:
        pass


__all__ = ["CATEGORIES", "TraceResult", "real_step_peak", "saved_per_block", "step_peak", "trace_memory"]
