"""ModelSpec: the shapes and exact parameter counts of one architecture, and the counts a plan derives.

Pure types and arithmetic; ``gpuwork.facts.model`` builds specs from configs (meta device, presets).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, NamedTuple

from gpuwork.errors import ModelError
from gpuwork.message import msg
from gpuwork.plan import ALL_LINEAR, Method, Task, TrainPlan


@dataclass(frozen=True)
class Linear:
    """One linear (or fused expert) weight of the model.

    ``name`` is the module path inside a decoder block (``self_attn.q_proj``) or inside the
    model for modules outside blocks (``lm_head``); ``count`` is how many blocks hold it.
    ``experts`` > 1 marks a fused MoE expert tensor holding that many [out, in] matrices.
    """

    name: str
    in_features: int
    out_features: int
    bias: bool
    count: int
    in_block: bool
    experts: int = 1

    @property
    def params(self) -> int:
        return self.experts * (self.in_features * self.out_features + (self.out_features if self.bias else 0))

    @property
    def short_name(self) -> str:
        return self.name.rsplit(".", 1)[-1]


def _frozen(value: Any) -> Any:
    """A hashable form of an extras value, equal for equal values: mappings as frozensets of their items,
    lists as tuples."""
    if isinstance(value, Mapping):
        return frozenset((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, set):
        return frozenset(value)
    return value


@dataclass(frozen=True)
class ModelSpec:
    """Shapes and exact parameter counts of one architecture with one head.

    Counts are numbers of parameters (not bytes). Tied input/output embeddings count once.
    """

    name: str  # preset name, file path or hub id it came from
    model_type: str  # config.model_type ("llama", "bert", ...)
    architecture: str  # the transformers class that was built ("LlamaForCausalLM", ...)
    task: Task
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int  # per expert for MoE
    vocab_size: int
    max_position: int  # longest sequence the config supports (warned about, not enforced)
    tie_embeddings: bool
    mlp_gated: bool  # SwiGLU/GeGLU-style gate (three MLP matrices) vs two-matrix MLP
    norm: str  # "rms" or "layer"
    activation: str  # hidden_act from the config
    attention_dropout: float
    hidden_dropout: float
    num_experts: int  # 1 for dense models
    experts_per_token: int  # 1 for dense models
    is_encoder: bool  # bidirectional encoder (BERT-style)
    num_labels: int  # classes of a seq-cls head (0 otherwise)
    params_total: int
    params_embedding: int  # token (+ position, token-type) embeddings
    params_head: int  # output layer(s) not tied to the embeddings (lm_head, MLM/cls head)
    params_block: int  # one decoder/encoder block
    params_other: int  # final norms, poolers, anything outside blocks, embeddings and head
    params_largest_module: int  # largest of: one block, the embeddings, the head
    linears: tuple[Linear, ...] = field(default_factory=tuple)
    # family-specific switches (softcapping, output layers, stacks, traced blocks), compared and hashed like the
    # other fields: a cache keyed by the spec gives specs that differ only here each its own answer
    extras: dict[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:
        """Computed once: a spec keys the estimators' caches several times per estimate."""
        try:
            return int(self.__dict__["_hash"])
        except KeyError:
            value = self.__dict__["_hash"] = hash((_hashed_fields(self), _frozen(self.extras)))
            return value

    def __getstate__(self) -> dict[str, Any]:
        # without the hash: string hashes differ from process to process
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    # -- derived counts -----------------------------------------------------------------------

    @property
    def params_blocks(self) -> int:
        return self.params_block * self.num_layers

    @property
    def params_active(self) -> int:
        """Parameters used per token (MoE: only the routed experts count)."""
        if self.num_experts <= 1:
            return self.params_total
        expert = sum(lin.params for lin in self.linears if lin.experts > 1) // self.num_experts
        unused = (self.num_experts - self.experts_per_token) * expert * self.num_layers
        return self.params_total - unused

    @property
    def norms_per_sublayer(self) -> int:
        """RMSNorms around each of a block's two sub-layers: Gemma 2/3 normalise before and after attention and
        the MLP (sandwich norms), the others before only."""
        return 2 if self.model_type in ("gemma2", "gemma3") else 1

    @property
    def block_linears(self) -> tuple[Linear, ...]:
        return tuple(lin for lin in self.linears if lin.in_block)

    def linear_names(self) -> list[str]:
        """Short names of the linear modules that LoRA can target (as peft matches them)."""
        names = []
        for lin in self.linears:
            if lin.experts == 1 and lin.short_name not in names:
                names.append(lin.short_name)
        return names

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["task"] = self.task.value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelSpec:
        data = dict(data)
        data["task"] = Task(data["task"])
        data["linears"] = tuple(Linear(**lin) for lin in data.get("linears", ()))
        return cls(**data)


_hashed_fields = operator.attrgetter(*(f.name for f in fields(ModelSpec) if f.name != "extras"))


# -- trainable parameters ----------------------------------------------------------------------


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts of a plan: how many exist, how many train, how the base is stored."""

    total: int  # every parameter of the model (adapters included for LoRA/QLoRA)
    trainable: int  # parameters that get gradients and optimizer states
    base: int  # parameters of the base model (no adapters)
    adapter: int  # LoRA A and B matrices (0 without adapters)
    quantized: int  # base parameters stored in 4 bits (QLoRA); the rest stay 16/32-bit
    head_trainable: int  # a task head trained in full next to adapters (seq-cls)

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def lora_target_linears(spec: ModelSpec, targets: tuple[str, ...]) -> list[Linear]:
    """Linears that peft's LoRA would wrap for these targets.

    peft matches a target key against the end of the module path; "all-linear" takes every
    nn.Linear except the output layer (peft `_maybe_include_all_linear_layers`).
    Raises ModelError when a target matches nothing, listing the real names.
    """
    return list(_target_linears(spec, targets))


@functools.lru_cache(maxsize=4096)
def _target_linears(spec: ModelSpec, targets: tuple[str, ...]) -> tuple[Linear, ...]:
    """``lora_target_linears`` cached on the whole spec (its linears and output layers included) and the targets."""
    return tuple(_lora_target_linears(spec, targets))


def _lora_target_linears(spec: ModelSpec, targets: tuple[str, ...]) -> list[Linear]:
    skip = _output_layer_names(spec)
    candidates = [lin for lin in spec.linears if lin.experts == 1 and lin.name not in skip]
    if targets == (ALL_LINEAR,):
        return candidates
    chosen: list[Linear] = []
    for target in targets:
        hits = [lin for lin in candidates if lin.name == target or lin.name.endswith("." + target)]
        if not hits:
            names = [n for n in spec.linear_names() if n not in skip]
            code = "error.model.target_is_output" if target in skip else "error.model.target_not_found"
            raise ModelError(msg(code, target=target, model=spec.name, names=", ".join(names)))
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def _output_layer_names(spec: ModelSpec) -> set[str]:
    return set(spec.extras.get("output_layers", []))


class _Counted(NamedTuple):
    """What ``count_params`` reads of a plan (a field it does not hold is an AttributeError, not a stale answer):
    the key of its cache with the spec."""

    method: Method
    uses_adapters: bool
    lora_targets: tuple[str, ...]
    lora_r: int
    trainable_layers: int


def count_params(spec: ModelSpec, plan: TrainPlan, expert_linears: bool = False) -> ParamCounts:
    """Exact parameter counts for a plan's method. Pure; reads method, LoRA and freeze fields. Cached by those
    and the spec: an estimate asks for them several times, a sweep over shapes for the same ones throughout.
    ``expert_linears``: a MoE model's experts are ``nn.Linear`` modules (transformers 4.x), which QLoRA quantises
    (see ``quantized_linears``)."""
    return _count_params(spec, _Counted(plan.method, plan.uses_adapters, plan.lora_targets, plan.lora_r,
                                         plan.trainable_layers), expert_linears)


@functools.lru_cache(maxsize=4096)
def _count_params(spec: ModelSpec, plan: _Counted, expert_linears: bool = False) -> ParamCounts:
    base = spec.params_total
    head_trainable = 0
    adapter = 0
    quantized = 0
    if plan.uses_adapters:
        for lin in lora_target_linears(spec, plan.lora_targets):
            adapter += plan.lora_r * (lin.in_features + lin.out_features) * lin.count
        if spec.task is Task.SEQ_CLS:
            head_trainable = spec.params_head  # peft SEQ_CLS keeps the classifier trainable
        trainable = adapter + head_trainable
        if plan.method is Method.QLORA:
            quantized = sum(lin.count * lin.experts * lin.in_features * lin.out_features
                            for lin in quantized_linears(spec, expert_linears))
    elif plan.method is Method.FREEZE:
        layers = min(plan.trainable_layers, spec.num_layers)
        # params_head already leaves out a weight tied to the (frozen) input embeddings
        trainable = layers * spec.params_block + spec.extras.get("params_final_norm", 0) + spec.params_head
    else:
        trainable = base
    return ParamCounts(total=base + adapter, trainable=trainable, base=base, adapter=adapter,
                       quantized=quantized, head_trainable=head_trainable)


def quantized_linears(spec: ModelSpec, expert_linears: bool = False) -> list[Linear]:
    """Linears bitsandbytes stores in 4 bits: every nn.Linear except the output layer.

    transformers' bnb integration skips `lm_head` (get_keys_to_not_convert) and classifier
    heads; fused MoE expert tensors (transformers 5) are not nn.Linear, so bitsandbytes leaves them
    unquantised: they load in the 16-bit dtype and peft's prepare_model_for_kbit_training upcasts them
    to fp32 (gpuwork.estimate.memory counts them so and warns ``memory.moe_experts_unquantized``).
    ``expert_linears``: the experts are one ``nn.Linear`` per expert and projection (transformers 4.x, the
    "loop" layout of stacks.csv ``moe_experts``), which bitsandbytes replaces like any other linear
    (docs/memory_misses.md "Held-out memory 12: fms-acceleration").
    """
    skip = _output_layer_names(spec)
    return [lin for lin in spec.linears if (lin.experts == 1 or expert_linears) and lin.name not in skip]



# config.json keys for a model's own element-wise ops (estimate.composite_ops): "fused" (the torch op, the default)
# or "composite" (written op by op, e.g. the Stanford CS336 staff softmax and SiLU, a from-scratch LayerNorm)
COMPOSITE = "composite"
IMPLS = ("fused", COMPOSITE)
CONFIG_KEYS = ("softmax_impl", "hidden_act_impl", "norm_impl")


__all__ = ["COMPOSITE", "CONFIG_KEYS", "IMPLS", "Linear", "ModelSpec", "ParamCounts", "count_params", "lora_target_linears", "quantized_linears"]
