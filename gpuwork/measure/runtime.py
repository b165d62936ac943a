"""What a trial runs: the plan resolved into a setup, the model built with its method, one optimizer step.

Shared by the one-process trial (``gpuwork.measure.trial``), each rank of a torchrun trial
(``gpuwork.measure.distributed``) and the checkpoint round-trip (``gpuwork.measure.checkpoint``):

- ``prepare(plan, options)`` resolves the device, model config, task, precision, attention, learning
  rate and data into a ``Setup`` (every substitution it makes is listed in ``Setup.substitutions``);
- ``build_run(setup)`` builds the model with the plan's method applied (full / freeze / LoRA /
  QLoRA), wrapped by the ``Parallel`` hooks, plus its optimizer, scheduler and gradient scaler;
- ``train_step(run, setup, ...)`` runs one optimizer step of ``grad_accum`` micro-batches;
- ``rng_state`` / ``set_rng_state`` capture and restore every RNG a step reads;
- ``release_memory`` frees what a dropped model held (CUDA cache, glibc heap);
- ``Parallel`` is the set of hooks a multi-process trial overrides (the defaults are one process).

Limitations: one device per process; the model is a Hugging Face ``AutoModelFor*`` class (or what
a ``ModelFactory`` returns).
"""

from __future__ import annotations

import contextlib
import gc
import random
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gpuwork.errors import ModelError
from gpuwork.facts.model import HEAD_MODULES, auto_class, hook_input_grads
from gpuwork.facts.model import find_blocks as _find_model_blocks
from gpuwork.facts.rates import with_stack_input_grads
from gpuwork.measure.checkpoint_policy import checkpoint_kwargs, checkpoint_one_in
from gpuwork.measure.clipping import MAX_GRAD_NORM, clip_norm
from gpuwork.measure.errors import TrialError
from gpuwork.message import Msg, msg
from gpuwork.plan import ALL_LINEAR, Attention, Method, Optimizer, Precision, Task, TrainPlan

if TYPE_CHECKING:
    import torch

    from gpuwork.measure.textdata import TextData

# Learning rates: common fine-tuning defaults (transformers/peft examples); the trial measures speed,
# the rate only has to keep losses finite and moving. Lion wants ~3-10x less than AdamW (Chen et al. 2023).
DEFAULT_LR_FULL = 3e-4
DEFAULT_LR_ADAPTERS = 1e-3
LR_FACTOR = {Optimizer.SGD: 10.0, Optimizer.LION: 0.3}

ModelFactory = Callable[[Any, TrainPlan], Any]  # (transformers config, plan) -> nn.Module on CPU, fp32


# -- one process or several: the hooks a multi-process trial plugs in ----------------------------------


class Parallel:
    """Hooks that let ``iter_trial`` run as one of several processes; these defaults are one process.

    ``gpuwork.measure.distributed`` subclasses it (DDP / FSDP2 wrapping, a data shard per rank, a
    distributed checkpoint). Every method is called at the same point on every rank.
    """

    rank = 0
    world_size = 1
    writes_record = True  # False: the caller merges the ranks' records and writes the result

    def agree(self, value: Any) -> Any:
        """Rank 0's value on every rank (timestamps, file names)."""
        return value

    def barrier(self) -> None:
        """Wait for every rank."""

    def substitutions(self, plan: TrainPlan, device: torch.device) -> list[Msg]:
        """Where this way of running differs from the plan."""
        if plan.gpus > 1:
            return [msg("trial.sub.one_process", gpus=plan.gpus, sharding=plan.sharding)]
        return []

    def scratch_dir(self, stack: contextlib.ExitStack, out_path: Path | None, stem: str) -> Path:
        """A folder for temporary files, removed when the trial ends (same path on every rank)."""
        return _scratch_dir(stack, out_path, stem)

    def wrap(self, model: Any, setup: Setup) -> Any:
        """The model as it trains (DDP / fully_shard); called before the optimizer is built."""
        return model

    def shard(self, dataset: Any) -> Any:
        """This rank's part of the dataset."""
        return dataset

    def sync_gradients(self, model: Any, sync: bool) -> contextlib.AbstractContextManager:
        """Context for one micro-batch's backward; ``sync`` is False for all but the last of a step."""
        return contextlib.nullcontext()

    def grad_norm(self, norm: Any) -> float:
        """The total gradient norm as a float (a sharded norm is reduced first)."""
        return float(norm.item())

    def after_steps(self, run: Run) -> None:
        """Called once the measured steps are done, before the checkpoint round-trip."""

    def checkpoint_store(self) -> Any:
        """Where the checkpoint round-trip writes: a ``gpuwork.measure.checkpoint.CheckpointStore``, or
        None for one process's files (``FileCheckpoint``, Hugging Face Trainer's layout)."""
        return None

    # -- at each step boundary: every rank stops at the same step, judges ``until_stable`` on the same
    # (slowest-rank) times, and rank 0 writes one merged record as the steps are taken

    def stop_signal(self, requested: str | None) -> str | None:
        """The signal that stops the group before the next step (None: go on); ``requested``: this process's."""
        return requested

    def share_step(self, m: Any) -> None:
        """Tell the group what this process measured (a ``StepMeasurement``) in the step just taken."""

    def group_step_times(self, own: list[Any]) -> list[float]:
        """The measured steps' times as the record reports them (one process: its own)."""
        return [s.step_time_s for s in own if not s.is_warmup]

    def running_record(self, record: Any) -> Any:
        """The ``TrialRecord`` to write while the trial runs, from this process's own (None: another process
        writes)."""
        return record

    def record_row(self, m: Any) -> tuple[Any, Any]:
        """The step just shared as the record holds it, and each rank's (loss, step time, data wait) for its
        steps file (one process: the step itself, None)."""
        return m, None

    def resumed_rows(self, steps: list[Any]) -> list[tuple[Any, Any]]:
        """``record_row`` for each step a resumed trial keeps (``steps``: this process's own)."""
        return [(m, None) for m in steps]


ONE_PROCESS = Parallel()


# -- memory, errors ------------------------------------------------------------------------------------


def is_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is running out of memory (CUDA's error, or the CPU allocator's failure)."""
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("can't allocate memory" in text or "not enough memory" in text)


def release_memory(device: torch.device | None) -> None:
    """Free what dropped objects held: collect garbage, empty the CUDA cache, trim the C heap."""
    import torch

    gc.collect()
    if device is not None and device.type == "cuda":
        torch.cuda.empty_cache()
    _malloc_trim()


def _malloc_trim() -> None:
    """Return freed heap pages to the OS (glibc), so the next trial's RSS baseline is honest."""
    if sys.platform != "linux":
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


# -- the run: model, optimizer, scheduler ------------------------------------------------------------------


@dataclass
class Setup:
    """Everything resolved once per trial and needed to (re)build the model."""

    plan: TrainPlan
    config_dict: dict[str, Any]
    model_name: str
    task: Task
    device: torch.device
    compute_dtype: torch.dtype  # the dtype the model computes in
    param_dtype: torch.dtype  # the dtype trainable weights are kept in
    autocast_dtype: torch.dtype | None  # mixed precision: the autocast dtype
    precision_used: str
    attention: str  # attn_implementation asked of transformers
    lr: float
    seed: int
    warmup: int
    max_grad_norm: float | None  # clip_grad_norm_'s max_norm; None: the plan never clips, no call
    weights_dir: Path | None  # local pretrained weights, or None for random init
    factory: ModelFactory | None
    pad_id: int
    substitutions: list[Msg]  # every place the trial does not run exactly what the plan says
    qlora_base_dir: Path | None = None  # random-init model saved for 4-bit loading
    parallel: Parallel = field(default_factory=Parallel)  # one process unless torchrun
    switches: list[str] = field(default_factory=list)  # the plan's execution switches the trial runs under
    sdpa_used: str = ""  # the SDPA backend torch gives the model's attention (gpuwork.measure.sdpa.check; "" not SDPA)


@dataclass
class Run:
    """A built model (method applied, wrapped) with its optimizer, scheduler and gradient scaler."""

    model: Any
    optimizer: Any
    scheduler: Any
    scaler: Any  # torch.amp.GradScaler for fp16-mixed, else None
    trainable: list[Any]
    params_total: int
    params_trainable: int


def _hf_config(setup: Setup) -> Any:
    import transformers

    model_type = setup.config_dict.get("model_type")
    if not isinstance(model_type, str) or model_type not in transformers.CONFIG_MAPPING:
        raise ModelError(msg("error.trial.model_type_unknown", model_type=str(model_type), model=setup.model_name,
                             version=transformers.__version__))
    config = transformers.CONFIG_MAPPING[model_type].from_dict(dict(setup.config_dict))
    if setup.task is Task.SEQ_CLS:
        config.num_labels = 2
        if getattr(config, "pad_token_id", None) is None:
            config.pad_token_id = setup.pad_id  # needed to find the last token of each row (batch > 1)
    config.use_cache = False  # training: no KV cache
    return config


def _base_model(setup: Setup, config: Any, dtype: torch.dtype, device: torch.device | None = None) -> Any:
    """The plan's base model on ``device`` (default: the trial's) in ``dtype``, seeded.

    Random weights are initialised directly on the device (no CPU copy of a large model); local
    weights are loaded with ``from_pretrained``; a factory's model is moved and cast.
    """
    import torch

    device = device or setup.device
    torch.manual_seed(setup.seed)
    auto = auto_class(setup.task)
    if setup.factory is not None:
        return setup.factory(config, setup.plan).to(dtype).to(device)
    kwargs = {"attn_implementation": setup.attention, "dtype": dtype}
    try:
        if setup.weights_dir is not None:
            return auto.from_pretrained(str(setup.weights_dir), config=config, **kwargs).to(device)
        with torch.device(device):
            return auto.from_config(config, **kwargs)
    except (ValueError, ImportError) as exc:
        message = str(exc).lower()
        if setup.attention == "eager" or ("attn" not in message and "attention" not in message):
            raise
        setup.substitutions.append(msg("trial.sub.attention_eager", attention=setup.attention,
                                       config=type(config).__name__))
        setup.attention = "eager"
        return _base_model(setup, config, dtype, device)


def build_run(setup: Setup) -> Run:
    """Model with the method applied, on the device, plus optimizer, scheduler and scaler."""
    import torch

    plan = setup.plan
    config = _hf_config(setup)
    if plan.method is Method.QLORA:
        model = _qlora_model(setup, config)
    else:
        model = _base_model(setup, config, setup.param_dtype)
        if plan.grad_checkpointing:
            _enable_checkpointing(model, plan)
        if plan.method is Method.FREEZE:
            _freeze_all_but_last(model, plan.trainable_layers, setup.task)
            # whether the backward crosses the frozen blocks is the plan's (input_require_grads, unset: its
            # stack's, as the estimate decides it): transformers 5.x hooks the embeddings' output to require grad
            # whenever checkpointing is turned on; non-reentrant checkpointing gives the trained blocks their
            # gradient without it
            hook_input_grads(model, bool(with_stack_input_grads(plan).input_require_grads))
        elif plan.method is Method.LORA:
            model = _with_lora(model, setup)
    model.train()
    model = setup.parallel.wrap(model, setup)  # DDP / fully_shard before the optimizer sees parameters
    trainable = [p for p in model.parameters() if p.requires_grad]
    if not trainable:
        raise TrialError(msg("error.trial.nothing_trainable", method=plan.method, model=setup.model_name))
    optimizer = _make_optimizer(plan, trainable, setup)
    warmup = setup.warmup

    def schedule(done: int) -> float:  # linear warm-up over the trial's warm-up steps, then constant
        return min(1.0, (done + 1) / (warmup + 1))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    scaler = None
    if setup.autocast_dtype == torch.float16:
        scaler = torch.amp.GradScaler(setup.device.type)
    params_total = sum(p.numel() for p in model.parameters())
    if plan.method is Method.QLORA:  # Params4bit packs two 4-bit values per uint8 element
        params_total = sum(p.numel() * (2 if p.dtype == torch.uint8 else 1) for p in model.parameters())
    return Run(model=model, optimizer=optimizer, scheduler=scheduler, scaler=scaler, trainable=trainable,
                params_total=params_total, params_trainable=sum(p.numel() for p in trainable))


def preload(setup: Setup) -> None:
    """Import what building the model imports, so that library code is not counted as trial memory."""
    import safetensors.torch  # noqa: F401
    import transformers  # noqa: F401

    with contextlib.suppress(Exception):  # resolving the class imports its modeling module
        auto_class(setup.task)._model_mapping[type(_hf_config(setup))]
    if setup.plan.uses_adapters:
        import peft  # noqa: F401
    if setup.plan.method is Method.QLORA or setup.plan.optimizer in (
            Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT, Optimizer.LION):
        import bitsandbytes  # noqa: F401


def _enable_checkpointing(model: Any, plan: TrainPlan) -> None:
    kwargs = checkpoint_kwargs(plan)  # non-reentrant: works with frozen inputs (LoRA, freeze) without input grads
    if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.x name
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    elif hasattr(model, "gradient_checkpointing_enable"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    else:
        raise TrialError(msg("error.trial.no_checkpointing", model_class=type(model).__name__))
    checkpoint_one_in(model, plan)


def find_blocks(model: Any) -> tuple[str, Any]:
    """(name, ModuleList) of the model's transformer blocks (freeze and FSDP wrapping need them)."""
    layers = getattr(model.config, "num_hidden_layers", None)
    if isinstance(layers, int):
        try:
            return _find_model_blocks(model, layers)
        except ModelError:
            pass
    raise TrialError(msg("error.trial.no_blocks", layers=str(layers), model_class=type(model).__name__))


def _freeze_all_but_last(model: Any, layers: int, task: Task) -> None:
    """Train the last ``layers`` blocks, the final norm and the head (less any weight tied to the
    embeddings), as gpuwork.facts.model counts them."""
    import torch

    prefix, blocks = find_blocks(model)
    for p in model.parameters():
        p.requires_grad_(False)
    for block in list(blocks)[-layers:]:
        for p in block.parameters():
            p.requires_grad_(True)
    for name, module in model.named_modules():
        if name and not name.startswith(prefix) and "norm" in type(module).__name__.lower() and name.count(".") <= 1:
            for p in module.parameters(recurse=False):
                p.requires_grad_(True)
    # the head trains except a weight tied to the input embeddings (those stay frozen)
    embedding_ids = {id(m.weight) for n, m in model.named_modules()
                     if isinstance(m, torch.nn.Embedding) and not n.startswith(prefix + ".")}
    for name, module in model.named_children():
        if name in HEAD_MODULES:
            for p in module.parameters():
                if id(p) not in embedding_ids:
                    p.requires_grad_(True)


def _lora_config(setup: Setup) -> Any:
    from peft import LoraConfig

    plan = setup.plan
    targets: Any = ALL_LINEAR if plan.lora_targets == (ALL_LINEAR,) else list(plan.lora_targets)
    task_type = {Task.CAUSAL_LM: "CAUSAL_LM", Task.SEQ_CLS: "SEQ_CLS"}.get(setup.task)
    return LoraConfig(r=plan.lora_r, lora_alpha=plan.lora_alpha, lora_dropout=plan.lora_dropout,
                      target_modules=targets, task_type=task_type, bias="none")


def _with_lora(model: Any, setup: Setup) -> Any:
    from peft import get_peft_model

    try:
        return get_peft_model(model, _lora_config(setup))
    except ValueError as exc:
        if "target" in str(exc).lower():
            raise ModelError(msg("error.trial.lora_targets", targets=", ".join(setup.plan.lora_targets),
                                 model=setup.model_name, detail=str(exc).splitlines()[0])) from None
        raise


def _qlora_model(setup: Setup, config: Any) -> Any:
    """Save the random-init model, reload it 4-bit, prepare for k-bit training, add LoRA (docs/sources.md#s-cpu-qlora)."""
    import torch
    from peft import prepare_model_for_kbit_training
    from transformers import BitsAndBytesConfig

    source = setup.weights_dir
    if source is None:
        if setup.qlora_base_dir is None:
            raise TrialError(msg("error.trial.no_qlora_folder"))
        if setup.parallel.rank == 0 and not (setup.qlora_base_dir / "config.json").is_file():
            # once per trial (the restore reuses it), by rank 0 only; built on the CPU: the 16-bit
            # base never occupies the GPU, only its 4-bit reload does
            base = _base_model(setup, config, setup.compute_dtype, torch.device("cpu"))
            base.save_pretrained(str(setup.qlora_base_dir))
            del base
            release_memory(setup.device)
        setup.parallel.barrier()  # the other ranks load what rank 0 wrote
        source = setup.qlora_base_dir
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=setup.plan.quant_type.value,
                               bnb_4bit_use_double_quant=setup.plan.double_quant,
                               bnb_4bit_compute_dtype=setup.compute_dtype)
    device_map = {"": setup.device.index or 0} if setup.device.type == "cuda" else {"": "cpu"}
    torch.manual_seed(setup.seed)
    model = auto_class(setup.task).from_pretrained(
        str(source), config=config, quantization_config=quant, device_map=device_map,
        dtype=setup.compute_dtype, attn_implementation=setup.attention)
    if setup.plan.kbit_upcast:
        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=setup.plan.grad_checkpointing,
            gradient_checkpointing_kwargs=checkpoint_kwargs(setup.plan))
    elif setup.plan.grad_checkpointing:  # the framework skips the preparation: the model stays 16-bit
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=checkpoint_kwargs(setup.plan))
    if setup.plan.grad_checkpointing:
        checkpoint_one_in(model, setup.plan)
    return _with_lora(model, setup)


def _make_optimizer(plan: TrainPlan, params: list[Any], setup: Setup) -> Any:
    import torch

    lr = setup.lr
    opt = plan.optimizer
    wd = plan.weight_decay_in_effect  # the plan's, else its stack's default (TrainPlan.weight_decay_in_effect)
    impl: dict[str, Any] = plan.optimizer_impl.torch_kwargs  # keywords only (fused / foreach)
    if opt is Optimizer.ADAMW:
        return torch.optim.AdamW(params, lr=lr, weight_decay=wd, **impl)
    if opt is Optimizer.SGD:
        return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=wd, **impl)
    if opt is Optimizer.ADAFACTOR:
        from transformers.optimization import Adafactor

        return Adafactor(params, lr=lr, scale_parameter=False, relative_step=False, warmup_init=False,
                         weight_decay=wd)
    import bitsandbytes as bnb

    if opt is Optimizer.ADAMW_8BIT:
        return bnb.optim.AdamW8bit(params, lr=lr, weight_decay=wd)
    if opt is Optimizer.PAGED_ADAMW_8BIT:
        return bnb.optim.PagedAdamW8bit(params, lr=lr, weight_decay=wd)
    if opt is Optimizer.LION:
        return bnb.optim.Lion(params, lr=lr, weight_decay=wd)
    raise TrialError(msg("error.trial.optimizer", optimizer=opt))


# -- one training step ----------------------------------------------------------------------------------------


def _to_device(batch: dict[str, Any], device: torch.device) -> dict[str, Any]:
    if device.type == "cpu":
        return batch
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def train_step(run: Run, setup: Setup, next_batch: Callable[[], dict[str, Any]], clock: Callable[[], float],
               memory: Any = None) -> tuple[float, float | None, float, float]:
    """One optimizer step of grad_accum micro-batches. Returns (loss, grad_norm, data_wait_s, lr); grad_norm is
    None when the plan never clips (``setup.max_grad_norm`` None: no ``clip_grad_norm_`` call, as in its run).

    ``memory``: the trial's memory monitor, whose ``check(phase)`` raises out-of-memory past its cap
    (after forward, backward and the optimizer step); None checks nothing.
    """
    import torch

    accum = setup.plan.grad_accum
    device = setup.device
    wait = 0.0
    losses = []
    autocast = (torch.autocast(device.type, dtype=setup.autocast_dtype) if setup.autocast_dtype is not None
                else contextlib.nullcontext())
    lr = float(run.optimizer.param_groups[0]["lr"])
    for index in range(accum):
        start = clock()
        batch = _to_device(next_batch(), device)
        wait += clock() - start
        with setup.parallel.sync_gradients(run.model, index == accum - 1):
            with autocast:
                loss = run.model(**batch).loss / accum
            if memory is not None:
                memory.check("forward")
            if run.scaler is not None:
                run.scaler.scale(loss).backward()
            else:
                loss.backward()
        if memory is not None:
            memory.check("backward")
        losses.append(loss.detach())
        del loss
    if run.scaler is not None:
        run.scaler.unscale_(run.optimizer)
    grad_norm = None
    if setup.max_grad_norm is not None:  # the norm comes from the clipping itself: none measured without it
        grad_norm = torch.nn.utils.clip_grad_norm_(run.trainable, setup.max_grad_norm)
    if run.scaler is not None:
        run.scaler.step(run.optimizer)
        run.scaler.update()
    else:
        run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    loss_value = float(torch.stack(losses).sum().item())
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    if memory is not None:
        memory.check("optimizer step")
    return loss_value, None if grad_norm is None else setup.parallel.grad_norm(grad_norm), wait, lr


# -- RNG -------------------------------------------------------------------------------------------------------


def rng_state(device: torch.device) -> dict[str, Any]:
    """Every RNG a training step reads: torch (CPU and, on CUDA, every GPU), Python, numpy."""
    import torch

    state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state_all()
    with contextlib.suppress(ImportError):
        import numpy as np

        state["numpy"] = np.random.get_state()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` captured."""
    import torch

    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    if "cuda" in state:
        torch.cuda.set_rng_state_all(state["cuda"])
    if "numpy" in state:
        import numpy as np

        np.random.set_state(state["numpy"])


def rng_tensors(state: dict[str, Any]) -> dict[str, Any]:
    """What ``rng_state`` captured, as tensors only: saved with ``torch.save`` it loads back with
    ``torch.load(weights_only=True)``, which runs no code from the file (a pickled tuple could)."""
    import torch

    version, internal, gauss = state["python"]
    out: dict[str, Any] = {
        "torch": state["torch"].clone(),
        "python_version": torch.tensor(int(version), dtype=torch.int64),
        "python_state": torch.tensor(list(internal), dtype=torch.int64),
        "python_gauss": torch.tensor([0.0 if gauss is None else float(gauss)], dtype=torch.float64),
        "python_has_gauss": torch.tensor(gauss is not None),
    }
    if "cuda" in state:
        out["cuda"] = torch.stack([t.cpu() for t in state["cuda"]])
    if "numpy" in state:
        name, keys, pos, has_gauss, cached = state["numpy"]
        if name != "MT19937":
            raise TrialError(msg("error.trial.rng_kind", kind=str(name)))
        out["numpy_keys"] = torch.tensor(keys.astype("int64"))
        out["numpy_pos"] = torch.tensor(int(pos), dtype=torch.int64)
        out["numpy_has_gauss"] = torch.tensor(int(has_gauss), dtype=torch.int64)
        out["numpy_gauss"] = torch.tensor(float(cached), dtype=torch.float64)
    return out


def rng_from_tensors(saved: dict[str, Any]) -> dict[str, Any]:
    """The ``rng_state`` form of what ``rng_tensors`` wrote (KeyError / TypeError when it is not that)."""
    import torch

    gauss = float(saved["python_gauss"][0]) if bool(saved["python_has_gauss"]) else None
    state: dict[str, Any] = {
        "torch": saved["torch"].to(torch.uint8),
        "python": (int(saved["python_version"]), tuple(int(v) for v in saved["python_state"].tolist()), gauss),
    }
    if "cuda" in saved:
        state["cuda"] = list(saved["cuda"].to(torch.uint8).unbind(0))
    if "numpy_keys" in saved:
        import numpy as np

        state["numpy"] = ("MT19937", saved["numpy_keys"].numpy().astype(np.uint32), int(saved["numpy_pos"]),
                          int(saved["numpy_has_gauss"]), float(saved["numpy_gauss"]))
    return state


# -- from a plan to a setup ------------------------------------------------------------------------------------


class TrialInputs(Protocol):
    """What ``prepare`` reads of a trial's options (``gpuwork.measure.options.TrialOptions`` has each field)."""

    @property
    def device(self) -> Any: ...
    @property
    def seed(self) -> int: ...
    @property
    def warmup(self) -> int: ...
    @property
    def lr(self) -> float | None: ...
    @property
    def data(self) -> Any: ...
    @property
    def tokenizer(self) -> Any: ...
    @property
    def model_factory(self) -> ModelFactory | None: ...
    @property
    def max_grad_norm(self) -> float | None: ...
    @property
    def parallel(self) -> Parallel | None: ...


def prepare(plan: TrainPlan, options: TrialInputs) -> tuple[Setup, TextData]:
    """Resolve device, model config, task, precision, attention, learning rate and data for a trial (from the
    options' device, seed, warm-up, lr, data, tokenizer, model factory, clipping and parallel hooks)."""
    import torch

    from gpuwork.facts.model import load_config, resolve_task
    from gpuwork.measure.switches import switch_notices

    o = options
    if plan.fp8_linear:  # the trial's model is plain torch: it would time 16-bit linears, not the plan's step
        raise TrialError(msg("error.trial.fp8_linear"))
    cuda_started = torch.cuda.is_initialized()  # before the device is resolved (which starts CUDA)
    dev = _resolve_device(o.device)
    config_dict, model_name = load_config(plan.model)
    task = resolve_task(config_dict, plan.task)
    substitutions: list[Msg] = []
    compute, param_dtype, autocast_dtype, precision_used = _precision(plan.precision, dev, substitutions)
    attention = _attention(plan.attention, dev, compute, substitutions)
    if plan.optimizer is Optimizer.PAGED_ADAMW_8BIT and dev.type == "cpu":
        substitutions.append(msg("trial.sub.paged_cpu"))
    if plan.mlm_predictions is not None and task is Task.MASKED_LM:  # transformers' head has no gather
        substitutions.append(msg("trial.sub.mlm_every_position", n=plan.mlm_predictions, seq_len=plan.seq_len))
    if plan.packed_document_tokens is not None:  # the trial's rows are plain sequences: no cu_seqlens
        substitutions.append(msg("trial.sub.packed_documents", n=plan.packed_document_tokens, seq_len=plan.seq_len))
    switches, notices = switch_notices(plan, dev, cuda_started=cuda_started)
    substitutions.extend(notices)
    parallel = o.parallel if o.parallel is not None else ONE_PROCESS
    substitutions.extend(parallel.substitutions(plan, dev))
    lr = o.lr
    if lr is None:
        lr = (DEFAULT_LR_ADAPTERS if plan.uses_adapters else DEFAULT_LR_FULL) * LR_FACTOR.get(plan.optimizer, 1.0)
    weights_dir = _weights_dir(plan.model) if plan.method is not Method.SCRATCH else None
    text = _text_data(o.data, o.tokenizer, plan.seq_len, _vocab_size(config_dict),
                      min_sequences=plan.batch_size * parallel.world_size)
    setup = Setup(plan=plan, config_dict=config_dict, model_name=model_name, task=task, device=dev,
                  compute_dtype=compute, param_dtype=param_dtype, autocast_dtype=autocast_dtype,
                  precision_used=precision_used, attention=attention, lr=lr, seed=o.seed, warmup=o.warmup,
                  max_grad_norm=clip_norm(plan, o.max_grad_norm), weights_dir=weights_dir, factory=o.model_factory,
                  pad_id=text.tokenizer.pad_id, substitutions=substitutions, parallel=parallel, switches=switches)
    return setup, text


# -- helpers: device, precision, data, files ----------------------------------------------------------------------


def _resolve_device(device: Any) -> torch.device:
    import torch

    if device is None:
        return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise TrialError(msg("error.trial.no_cuda", device=str(device)))
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
    elif dev.type != "cpu":
        raise TrialError(msg("error.trial.device", device=str(device)))
    return dev


def _precision(precision: Precision, device: torch.device, substitutions: list[Msg]
               ) -> tuple[torch.dtype, torch.dtype, torch.dtype | None, str]:
    """(compute dtype, trainable weight dtype, autocast dtype or None, precision used)."""
    import torch

    if precision is Precision.FP32:
        return torch.float32, torch.float32, None, "fp32"
    if device.type == "cpu":
        substitutions.append(msg("trial.sub.precision_cpu", precision=precision))
        return torch.float32, torch.float32, None, "fp32"
    low = torch.bfloat16 if precision in (Precision.BF16, Precision.BF16_MIXED) else torch.float16
    if low == torch.bfloat16 and not torch.cuda.is_bf16_supported():
        substitutions.append(msg("trial.sub.no_bf16", precision=precision))
        low = torch.float16
    name = {torch.bfloat16: "bf16", torch.float16: "fp16"}[low]
    if precision.is_mixed:
        return low, torch.float32, low, f"{name}-mixed"
    return low, low, None, name


def _attention(attention: Attention, device: torch.device, compute: torch.dtype, substitutions: list[Msg]) -> str:
    import torch

    if attention is Attention.EAGER:
        return "eager"
    if attention is Attention.SDPA:
        return "sdpa"
    if attention is Attention.CUDNN:  # transformers has no cuDNN choice: SDPA, whose backend torch picks
        substitutions.append(msg("trial.sub.cudnn"))
        return "sdpa"
    version = {Attention.FLASH3: 3, Attention.FLASH4: 4}.get(attention, 2)
    majors = attention.capability_majors
    reason = None  # why flash-attention cannot run: the last part of trial.flash.<reason>
    if device.type != "cuda":
        reason = "no_cuda"
    elif compute == torch.float32:
        reason = "fp32"
    elif majors is not None and torch.cuda.get_device_capability(device)[0] not in majors:
        reason = "not_hopper" if version == 3 else "not_fa4_gpu"
    else:
        try:
            from transformers import utils

            if not getattr(utils, f"is_flash_attn_{version}_available")():
                reason = {2: "not_installed", 3: "fa3_not_installed", 4: "fa4_not_installed"}[version]
        except (ImportError, AttributeError):  # a transformers without the check
            reason = "cannot_check"
    if reason:
        substitutions.append(msg({3: "trial.sub.flash3", 4: "trial.sub.flash4"}.get(version, "trial.sub.flash"),
                                 reason=reason))
        return "sdpa"
    return f"flash_attention_{version}"


def optimizer_class_name(opt: Optimizer) -> str:
    """The class ``build_run`` instantiates for ``opt``, as the record names it."""
    return {
        Optimizer.ADAMW: "torch.optim.AdamW",
        Optimizer.SGD: "torch.optim.SGD(momentum=0.9)",
        Optimizer.ADAFACTOR: "transformers.optimization.Adafactor",
        Optimizer.ADAMW_8BIT: "bitsandbytes.optim.AdamW8bit",
        Optimizer.PAGED_ADAMW_8BIT: "bitsandbytes.optim.PagedAdamW8bit",
        Optimizer.LION: "bitsandbytes.optim.Lion",
    }[opt]


def _vocab_size(config: dict[str, Any]) -> int:
    value = config.get("vocab_size") or (config.get("text_config") or {}).get("vocab_size")
    if not isinstance(value, int) or value < 1:
        raise ModelError(msg("error.trial.no_vocab_size"))
    return value


def _weights_dir(ref: str) -> Path | None:
    """A local folder with pretrained weights next to the config, if the plan's model is one."""
    from gpuwork.facts.paths import models_dir

    if (models_dir() / f"{ref}.json").is_file():  # a preset name: config only, never a folder
        return None
    path = Path(ref).expanduser()
    folder = path if path.is_dir() else path.parent if path.is_file() else None
    if folder is None:
        return None
    if any(folder.glob("*.safetensors")) or (folder / "pytorch_model.bin").is_file():
        return folder
    return None


def _text_data(data: Any, tokenizer: Any, seq_len: int, vocab_size: int, *, min_sequences: int) -> TextData:
    from gpuwork.measure.textdata import BUILTIN_DATASET, TextData, prepare_text_data

    if isinstance(data, TextData):
        if data.seq_len == seq_len and data.sequences.shape[0] >= min_sequences:
            return data
        files = None if data.source.name == BUILTIN_DATASET else [f.path for f in data.source.files]
        return prepare_text_data(seq_len, vocab_size, files=files, tokenizer=data.tokenizer,
                                 min_sequences=min_sequences)
    return prepare_text_data(seq_len, vocab_size, files=data, tokenizer=tokenizer, min_sequences=min_sequences)


def _scratch_dir(stack: contextlib.ExitStack, out_path: Path | None, stem: str) -> Path:
    """A folder for temporary files, removed when the trial ends: inside out_dir when given."""
    if out_path is None:
        return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gpuwork-trial-")))
    folder = out_path / f".{stem}-tmp"
    folder.mkdir(parents=True, exist_ok=True)
    stack.callback(shutil.rmtree, folder, ignore_errors=True)
    return folder


@contextlib.contextmanager
def quiet_libraries() -> Iterator[None]:
    """Silence transformers' progress bars and info logs during the trial, then restore them."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


__all__ = [
    "DEFAULT_LR_ADAPTERS",
    "DEFAULT_LR_FULL",
    "LR_FACTOR",
    "MAX_GRAD_NORM",
    "ONE_PROCESS",
    "ModelFactory",
    "Parallel",
    "Run",
    "Setup",
    "TrialError",
    "build_run",
    "find_blocks",
    "is_oom",
    "optimizer_class_name",
    "preload",
    "prepare",
    "quiet_libraries",
    "release_memory",
    "rng_from_tensors",
    "rng_state",
    "rng_tensors",
    "set_rng_state",
    "train_step",
]
