"""Traced profiles of one transformer block: what the real model class runs per token, forward and backward.

A ``BlockProfile`` is the record that ``gpuwork.measure.block_profile`` takes by tracing one block of the
real transformers class under fake tensors (FLOPs from PyTorch's ``FlopCounterMode``, bytes of every aten
op's inputs and outputs, one launch per kernel op, the bytes saved for backward). It is plain data: every
figure is per token of one micro-batch and affine in the sequence length ``s`` — ``a + b * s`` — so a
profile traced at two short lengths rescales to any plan (attention is the only part with ``b != 0``).

Profiles live in three places, looked up in this order: this process (memory), the bundled
``data/block_profiles/*.json`` (presets and a few families without a hand-written block model), and a
folder the user names (``BlockProfileCache(user_dir=...)``); nothing is written anywhere else, and without
a user folder nothing is written at all.

Pure data and JSON I/O: no torch here. The tracer lives in ``gpuwork.measure.block_profile``, which registers
itself here (``register_tracer``) so that the gather step (``facts.resolve``) can trace a block no profile at
hand matches without this layer importing the one above.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gpuwork.facts import reading
from gpuwork.facts.paths import bundled_data_dir
from gpuwork.message import Msg

PROFILE_VERSION = 1  # bump when the fields or the tracing rules change; older files are ignored
KINDS = ("matmul", "attention", "memory")
PHASES = ("forward", "backward")

# Config keys that do not change what one block computes (head, vocabulary, depth, file metadata):
# left out of the key so that one profile serves every depth and vocabulary of an architecture.
_KEY_IGNORED = frozenset({
    "_name_or_path", "architectures", "transformers_version", "torch_dtype", "dtype", "use_cache",
    "num_hidden_layers", "n_layer", "num_layers", "vocab_size", "tie_word_embeddings", "bos_token_id",
    "eos_token_id", "pad_token_id", "task_specific_params", "id2label", "label2id",
})


@dataclass(frozen=True)
class Affine:
    """A per-token figure ``a + b * s`` at sequence length ``s``."""

    a: float = 0.0
    b: float = 0.0

    def at(self, seq_len: int) -> float:
        return self.a + self.b * seq_len

    def __add__(self, other: Affine) -> Affine:
        return Affine(self.a + other.a, self.b + other.b)

    def scaled(self, factor: float) -> Affine:
        return Affine(self.a * factor, self.b * factor)

    @classmethod
    def through(cls, s1: int, v1: float, s2: int, v2: float) -> Affine:
        """The line through (s1, v1) and (s2, v2)."""
        b = (v2 - v1) / (s2 - s1)
        return cls(v1 - b * s1, b)


@dataclass(frozen=True)
class ProfileOp:
    """One kernel of the block (identical kernels merged: ``count`` of them per block call).

    FLOPs and bytes are per token and per kernel, plus the bytes of token-independent tensors per
    kernel call. For a GEMM, its output rows are ``m_per_token`` x tokens (projections) or a fixed
    ``m_fixed`` (weight gradients, [out, in]); ``n`` its columns.
    """

    name: str  # aten op (``mm``, ``_scaled_dot_product_flash_attention_for_cpu``, ``mul``, ...)
    kind: str  # "matmul" | "attention" | "memory"
    phase: str  # "forward" | "backward"
    dtype: str  # "bf16" | "fp16" | "fp32": the first input's dtype
    count: int  # kernels of this signature per block call
    flops: Affine  # per token, one kernel (FlopCounterMode's count)
    bytes: Affine  # per token, one kernel: the token-sized inputs read + outputs written
    bytes_fixed: int = 0  # per kernel call: tensors whose size does not depend on tokens (weights, their grads)
    launches: int = 1  # views and metadata ops launch nothing and are left out of ``ops``
    m_per_token: float = 0.0
    m_fixed: int = 0
    n: int = 0  # 0 with m_per_token set and n growing with the context: eager attention scores (n = s)

    def bytes_per_call(self, tokens: int, seq_len: int) -> float:
        return self.bytes.at(seq_len) * tokens + self.bytes_fixed


@dataclass(frozen=True)
class BlockProfile:
    """One block's forward and backward, traced from the real model class (see the module docstring).

    Example: ``profile.flops_per_token("forward", "matmul", 2048)`` is the forward GEMM FLOPs of one
    block per token at sequence length 2048; x tokens x layers gives the model's.
    """

    key: str
    model_type: str
    architecture: str  # the block's class (``LlamaDecoderLayer``)
    method: str  # "full" | "lora" | "qlora": trained block weights, or frozen ones with adapters
    weights_trained: bool
    precision: str  # TrainPlan.precision value
    attention: str  # TrainPlan.attention value
    lora_r: int
    lora_targets: tuple[str, ...]
    lora_dropout: float
    hidden_size: int
    causal: bool  # the attention kernel ran with a causal mask (is_causal)
    seq_lens: tuple[int, int]  # the two traced lengths the affine figures come through
    batch_size: int
    ops: tuple[ProfileOp, ...]
    saved_bytes: Affine  # bytes per token saved for backward by one block (parameters excluded)
    input_bytes: float  # bytes per token of the block's input hidden states (what checkpointing keeps)
    versions: dict[str, str] = field(default_factory=dict, compare=False)  # torch, transformers, peft
    source: str = ""  # the config it was traced from (preset name or file)
    version: int = PROFILE_VERSION

    def matches(self, plan: Any) -> bool:
        """Whether this block was traced as ``plan`` runs it (method class, precision, attention, adapters; a trace
        runs the linears in their own dtype, never in FP8)."""
        if plan.fp8_linear or self.method != profile_method(plan.method.value):
            return False
        if (self.precision, self.attention) != (plan.precision.value, plan.attention.value):
            return False
        return self.method == "full" or (self.lora_r, tuple(sorted(self.lora_targets)), self.lora_dropout > 0) == (
            plan.lora_r, tuple(sorted(plan.lora_targets)), plan.lora_dropout > 0)

    # -- totals --------------------------------------------------------------------------------

    def flops_per_token(self, phase: str, kind: str, seq_len: int) -> float:
        return sum(op.flops.at(seq_len) * op.count for op in self.ops if op.phase == phase and op.kind == kind)

    def bytes_per_call(self, phase: str, kind: str, tokens: int, seq_len: int) -> float:
        """Bytes one block call moves for ``tokens`` tokens of sequences of ``seq_len``."""
        return sum(op.bytes_per_call(tokens, seq_len) * op.count for op in self.ops
                   if op.phase == phase and op.kind == kind)

    def bytes_per_token(self, phase: str, kind: str, seq_len: int, tokens: int | None = None) -> float:
        """Bytes per token at ``seq_len``; weights' bytes spread over ``tokens`` (default: one sequence)."""
        tokens = tokens or seq_len
        return self.bytes_per_call(phase, kind, tokens, seq_len) / tokens

    def launches(self, phase: str, kind: str | None = None) -> int:
        return sum(op.launches * op.count for op in self.ops
                   if op.phase == phase and (kind is None or op.kind == kind))

    def saved_bytes_per_token(self, seq_len: int) -> float:
        return self.saved_bytes.at(seq_len)

    def table(self, seq_len: int) -> dict[str, dict[str, dict[str, float]]]:
        """{phase: {kind: {"flops", "bytes", "launches"}}} per token at ``seq_len`` (launches per block call)."""
        return {p: {k: {"flops": self.flops_per_token(p, k, seq_len), "bytes": self.bytes_per_token(p, k, seq_len),
                        "launches": float(self.launches(p, k))} for k in KINDS} for p in PHASES}

    # -- JSON ----------------------------------------------------------------------------------

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["lora_targets"] = list(self.lora_targets)
        out["seq_lens"] = list(self.seq_lens)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BlockProfile:
        data = dict(data)
        data["ops"] = tuple(ProfileOp(**{**op, "flops": Affine(**op["flops"]), "bytes": Affine(**op["bytes"])})
                            for op in data["ops"])
        data["saved_bytes"] = Affine(**data["saved_bytes"])
        data["lora_targets"] = tuple(data["lora_targets"])
        data["seq_lens"] = tuple(data["seq_lens"])
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> BlockProfile:
        return cls.from_dict(json.loads(text))


# -- keys ------------------------------------------------------------------------------------------


def config_fingerprint(config: dict[str, Any]) -> str:
    """12 hex digits of the config fields that shape one block (``_KEY_IGNORED`` left out)."""
    kept = {k: v for k, v in config.items() if k not in _KEY_IGNORED}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()[:12]


def profile_key(config: dict[str, Any], *, method: str, precision: str, attention: str, lora_r: int = 0,
                lora_targets: tuple[str, ...] = (), lora_dropout: float = 0.0) -> str:
    """The cache key of a block profile: architecture, config fingerprint and the plan fields the block reads.

    ``method`` is the profile's method class: "full" (weights train: full, scratch, freeze's trained
    blocks), "lora" or "qlora" (frozen base with adapters); adapters only enter the key for those.
    """
    model_type = str(config.get("model_type", "model"))
    parts = [model_type, config_fingerprint(config), method, precision, attention]
    if method in ("lora", "qlora"):
        parts += [f"r{lora_r}", "+".join(sorted(lora_targets)) or "default", f"d{lora_dropout:g}"]
    return "-".join(p.replace("/", "_").replace(" ", "") for p in parts)


def profile_method(method: str) -> str:
    """The profile method class of a TrainPlan method (see ``profile_key``)."""
    return {"full": "full", "scratch": "full", "freeze": "full", "lora": "lora", "qlora": "qlora"}[method]


def plan_profile_key(config: dict[str, Any], plan: Any) -> str:
    """The key of the profile of ``plan``'s block, the model's ``config`` given (``profile_key`` of its fields)."""
    return profile_key(config, method=profile_method(plan.method.value), precision=plan.precision.value,
                       attention=plan.attention.value, lora_r=plan.lora_r, lora_targets=tuple(plan.lora_targets),
                       lora_dropout=plan.lora_dropout)


# -- the cache -------------------------------------------------------------------------------------


def bundled_profiles_dir() -> Path:
    return bundled_data_dir() / "block_profiles"


class BlockProfileCache:
    """Profiles by key: this process, then the bundled folder, then ``user_dir`` (the only place written).

    ``user_dir=None`` (the default) keeps new profiles in memory only.
    """

    def __init__(self, user_dir: str | Path | None = None, *, bundled_dir: str | Path | None = None) -> None:
        self.user_dir = Path(user_dir).expanduser() if user_dir is not None else None
        self.bundled_dir = Path(bundled_dir) if bundled_dir is not None else bundled_profiles_dir()
        self._memory: dict[str, BlockProfile] = {}
        self._notes: dict[str, Msg] = {}  # what tracing a key said in this process (traced, failed, no torch)

    def get(self, key: str) -> BlockProfile | None:
        hit = self._memory.get(key)
        if hit is not None:
            return hit
        for folder in (self.bundled_dir, self.user_dir):
            if folder is None:
                continue
            path = folder / f"{key}.json"
            if path.is_file():
                profile = BlockProfile.from_json(reading.read_text(path, reading.TABLE))  # bounded, regular file
                if profile.version != PROFILE_VERSION:
                    continue  # traced under older rules: trace again
                self._memory[key] = profile
                return profile
        return None

    def put(self, profile: BlockProfile) -> Path | None:
        """Keep ``profile``; write it to the user folder when there is one (returns the file written)."""
        self._memory[profile.key] = profile
        if self.user_dir is None:
            return None
        self.user_dir.mkdir(parents=True, exist_ok=True)
        path = self.user_dir / f"{profile.key}.json"
        path.write_text(profile.to_json(), encoding="utf-8")
        return path

    def keep_trace(self, key: str, profile: BlockProfile | None, note: Msg) -> None:
        """Keep what tracing ``key``'s block gave: the profile (when it could be traced) and the note saying
        so, or why not; a key with a note is not traced again in this process."""
        self._notes[key] = note
        if profile is not None:
            self.put(profile)

    def note(self, key: str) -> Msg | None:
        """The note of ``key``'s tracing in this process, or None (never traced here)."""
        return self._notes.get(key)

    def for_config(self, config: dict[str, Any]) -> tuple[BlockProfile, ...]:
        """Every profile at hand of this model configuration (any method, precision or adapters)."""
        prefix = f"{config.get('model_type', 'model')}-{config_fingerprint(config)}-".replace("/", "_")
        found = {k: p for k, p in self._memory.items() if k.startswith(prefix)}
        for folder in (self.bundled_dir, self.user_dir):
            if folder is None or not folder.is_dir():
                continue
            for path in sorted(folder.glob(f"{prefix}*.json")):
                if path.stem not in found:
                    profile = self.get(path.stem)
                    if profile is not None:
                        found[path.stem] = profile
        return tuple(found.values())

    def bundled_keys(self) -> list[str]:
        if not self.bundled_dir.is_dir():
            return []
        return sorted(p.stem for p in self.bundled_dir.glob("*.json"))


# Families whose block gpuwork models by hand (estimate.memory / estimate.ops); any other family is
# estimated from a traced profile of its real block when one is at hand.
HAND_MODELLED = frozenset({"llama", "mistral", "qwen2", "mixtral", "phi3", "gemma2", "gpt2", "bert"})

# The process's profiles: the bundled folder, plus a folder named by $GPUWORK_PROFILES (read only here);
# gpuwork.measure.block_profile traces into it (memory) and the estimates read it through facts.resolve.
ENV_PROFILES_DIR = "GPUWORK_PROFILES"
DEFAULT_CACHE = BlockProfileCache(user_dir=os.environ.get(ENV_PROFILES_DIR) or None)


# -- the tracer the gather step calls -----------------------------------------------------------------------------

# plan -> (its block's profile, or None when it cannot be traced; the note that says which, for every surface)
BlockTracer = Callable[[Any], tuple[BlockProfile | None, Msg]]
_TRACER: list[BlockTracer] = []  # one at most


def register_tracer(tracer: BlockTracer) -> None:
    """Let the gather step trace blocks with ``tracer`` (replaces the one registered before)."""
    _TRACER[:] = [tracer]


def unregister_tracer(tracer: BlockTracer | None = None) -> None:
    """Take ``tracer`` (default: whichever is registered) away: the gather step then traces nothing."""
    if tracer is None or tracer in _TRACER:
        _TRACER.clear()


def registered_tracer() -> BlockTracer | None:
    return _TRACER[0] if _TRACER else None


def matching_profile(spec: Any, plan: Any) -> BlockProfile | None:
    """The traced profile ``facts.resolve`` attached to ``spec`` (``extras["block_profiles"]``) that matches
    how ``plan`` runs the block, or None (the hand-written block model then applies)."""
    return next((p for p in spec.extras.get("block_profiles", ()) if p.matches(plan)), None)


def block_profile_note(spec: Any) -> Msg | None:
    """What tracing the block of ``spec``'s plan said in this process (``facts.resolve`` put it in
    ``extras["block_profile_note"]``): traced in so many seconds, could not be traced (why), or no torch."""
    note = spec.extras.get("block_profile_note")
    return note if isinstance(note, Msg) else None


__all__ = [
    "DEFAULT_CACHE",
    "ENV_PROFILES_DIR",
    "HAND_MODELLED",
    "KINDS",
    "PHASES",
    "PROFILE_VERSION",
    "Affine",
    "BlockProfile",
    "BlockProfileCache",
    "BlockTracer",
    "ProfileOp",
    "block_profile_note",
    "matching_profile",
    "plan_profile_key",
    "register_tracer",
    "registered_tracer",
    "unregister_tracer",
    "bundled_profiles_dir",
    "config_fingerprint",
    "profile_key",
    "profile_method",
]
