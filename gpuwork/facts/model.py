"""ModelSpec: exact parameter counts and per-layer shapes of a Hugging Face architecture.

A spec is built by instantiating the real transformers model class on the ``meta`` device
(shapes only, no memory, no weights), so counts are exact for whatever the config describes.
Bundled presets have their specs precomputed in ``data/model_specs.json`` so that estimates
start without importing torch; ``gpuwork models --rebuild`` regenerates that file and a test
checks it against a fresh meta build.

Example:
    >>> spec = get_spec("llama-3.2-1b")
    >>> spec.params_total
    1235814400
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

from gpuwork.errors import ModelError
from gpuwork.facts import reading
from gpuwork.facts.paths import data_dir, models_dir
from gpuwork.facts.spec import (
    CONFIG_KEYS,
    IMPLS,
    Linear,
    ModelSpec,
    ParamCounts,
    count_params,
    lora_target_linears,
    quantized_linears,
)
from gpuwork.message import msg
from gpuwork.plan import Task, TrainPlan
from gpuwork.units import is_whole

# Top-level modules that are a task head (counted as params_head; trained in full next to adapters).
HEAD_MODULES = ("lm_head", "cls", "classifier", "score", "qa_outputs")
SPEC_CACHE_FILE = "model_specs.json"
SPEC_VERSION = 1  # bump when ModelSpec fields change; stale caches are rebuilt


# -- resolving a model reference -------------------------------------------------------------


def list_presets() -> list[str]:
    return sorted(p.stem for p in models_dir().glob("*.json"))


def load_config(ref: str) -> tuple[dict[str, Any], str]:
    """Config dict and a display name for a preset name, local path, or hub id.

    Raises ModelError with the closest preset names, or with the parse error of a bad file.
    """
    if not isinstance(ref, str) or not ref.strip() or "\0" in ref or len(ref) > MAX_REF_CHARS:
        raise ModelError(msg("error.model.unknown", ref=_shown(ref)))
    path = Path(ref).expanduser()
    preset = models_dir() / f"{ref}.json"
    if "/" not in ref and "\\" not in ref and os.path.isfile(preset):  # os.path: a name too long is no file
        return _read_json(preset), ref
    if os.path.isdir(path):
        path = path / "config.json"
        if not os.path.lexists(path):
            raise ModelError(msg("error.model.folder_without_config", ref=_shown(ref)))
    if os.path.lexists(path):  # a file, a FIFO, a device, a dangling or looping link: the reader judges it
        return _read_json(path), str(ref)
    # the shape decides before any network call: only "org/name" as the Hub spells ids is looked up there; a path
    # (./x, ../x, /x, ~/x, C:\x, x/y/z, x.json, a folder that exists here) is a missing file, said at once
    first = ref.split("/", 1)[0]
    if (ref.endswith((".json", "/")) or ref.startswith((".", "/", "~")) or "\\" in ref or ":" in ref
            or (ref.count("/") == 1 and os.path.isdir(first))):
        raise ModelError(msg("error.model.file_missing", ref=_shown(ref)))
    if ref.count("/") == 1 and _HUB_ID.fullmatch(ref):
        return _hub_config(ref), ref
    close = difflib.get_close_matches(ref.lower(), list_presets(), n=3, cutoff=0.4)
    if close:
        raise ModelError(msg("error.model.unknown_close", ref=_shown(ref), close=", ".join(close)))
    raise ModelError(msg("error.model.unknown", ref=_shown(ref)))


# A Hugging Face Hub repo id: "org/name", letters, digits, "-", "_", "." (no "--" or ".." and not at either end),
# at most 96 characters each side (huggingface_hub.utils.validate_repo_id)
_HUB_ID = re.compile(r"(?!.*(?:--|\.\.))[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?/"
                     r"[A-Za-z0-9_](?:[\w.-]{0,94}[A-Za-z0-9_])?")
MAX_REF_CHARS = 4096  # a path longer than any file system takes is a paste gone wrong


def _shown(ref: Any) -> str:
    """A model reference as an error shows it: at most 200 characters (never an unbounded value)."""
    text = ref if isinstance(ref, str) else repr(ref)
    return text if len(text) <= 200 else text[:200] + f"... ({len(text):,} characters)"


def _load_json(path: Path, kind: reading.FileKind) -> Any:
    """JSON read through the bounded reader; any refusal or syntax error is one ModelError naming the file."""
    try:
        return reading.load_json(path, kind)
    except reading.ReadError as exc:
        raise ModelError(exc.msg) from None
    except json.JSONDecodeError as exc:
        raise ModelError(msg("error.model.bad_json", path=str(path), line=exc.lineno, column=exc.colno,
                             reason=exc.msg)) from None


def _read_json(path: Path) -> dict[str, Any]:
    # a regular file within reading.MODEL_CONFIG bytes, JSON within bounds; not UTF-8: a binary file given
    data = _load_json(path, reading.MODEL_CONFIG)
    if not isinstance(data, dict) or "model_type" not in data:
        raise ModelError(msg("error.model.not_hf_config", path=str(path)))
    if not isinstance(data["model_type"], str):
        raise ModelError(msg("error.config.field_type", name=str(path), field="model_type",
                             value=_shown(repr(data["model_type"])), expected=msg("config.expected.model_type")))
    arch = data.get("architectures")
    if isinstance(arch, str):  # one class name written without its list
        data = {**data, "architectures": [arch]}
    elif arch is not None and not (isinstance(arch, list) and all(isinstance(a, str) for a in arch)):
        raise ModelError(msg("error.config.field_type", name=str(path), field="architectures",
                             value=_shown(repr(arch)), expected=msg("config.expected.architectures")))
    return data


def _hub_config(hub_id: str) -> dict[str, Any]:
    # read the offline switches here: huggingface_hub reads them only once, at import
    offline = any(os.environ.get(k, "").lower() in ("1", "true", "yes") for k in ("HF_HUB_OFFLINE",
                                                                                  "TRANSFORMERS_OFFLINE"))
    if importlib.util.find_spec("transformers") is None:  # the core install: the missing package, not the network
        raise ModelError(msg("error.model.hub_needs_transformers", hub_id=hub_id))
    if not _hub_cached(hub_id) and (offline or not _hub_reachable()):  # said in seconds, before transformers loads
        raise ModelError(msg("error.model.hub_not_cached", hub_id=hub_id))
    try:
        from transformers import AutoConfig, PretrainedConfig
    except ModuleNotFoundError:  # the core install: the missing package, not the network, is the reason
        raise ModelError(msg("error.model.hub_needs_transformers", hub_id=hub_id)) from None
    try:  # the local Hugging Face cache first: no network needed for a model used before
        cached: PretrainedConfig = AutoConfig.from_pretrained(hub_id, local_files_only=True)
        return cached.to_dict()
    except Exception as exc:  # noqa: BLE001 - not cached (or broken): the Hub below, unless offline
        if offline:
            raise ModelError(msg("error.model.hub_unreachable", hub_id=hub_id, error=type(exc).__name__)) from None
    try:
        config: PretrainedConfig = AutoConfig.from_pretrained(hub_id)
    except Exception as exc:  # noqa: BLE001 - any failure means: no config reachable
        raise ModelError(msg("error.model.hub_unreachable", hub_id=hub_id, error=type(exc).__name__)) from None
    return config.to_dict()


HUB_CONNECT_TIMEOUT_S = 5.0


def _hub_cached(hub_id: str) -> bool:
    """Whether the local Hugging Face cache holds anything of ``hub_id`` (huggingface_hub's folder layout)."""
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    folders = {os.environ.get("HF_HUB_CACHE"), os.environ.get("HUGGINGFACE_HUB_CACHE"), os.path.join(home, "hub")}
    name = "models--" + hub_id.replace("/", "--")
    return any(os.path.isdir(os.path.join(os.path.expanduser(f), name)) for f in folders if f)


def _hub_reachable() -> bool:
    """Whether the Hub's host ($HF_ENDPOINT) accepts a TCP connection within HUB_CONNECT_TIMEOUT_S."""
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=HUB_CONNECT_TIMEOUT_S):
            return True
    except OSError:
        return False


# -- building specs -----------------------------------------------------------------------------


def get_spec(ref: str, task: Task | str = Task.AUTO) -> ModelSpec:
    """ModelSpec for a model reference; presets come from the shipped cache, others are built."""
    task = Task(task)
    cached = _preset_cache().get(_cache_key(ref, task))
    if cached is not None:
        return cached
    return _build_cached(ref, task)


def spec_for_plan(plan: TrainPlan) -> ModelSpec:
    return get_spec(plan.model, plan.task)


@functools.lru_cache(maxsize=256)
def _build_cached(ref: str, task: Task) -> ModelSpec:
    config, name = load_config(ref)
    return build_spec(config, name=name, task=task)


def _cache_key(ref: str, task: Task) -> str:
    return f"{ref}|{task.value}"


@functools.lru_cache(maxsize=1)
def _preset_cache() -> dict[str, ModelSpec]:
    path = data_dir() / SPEC_CACHE_FILE
    if not path.is_file():
        return {}
    raw = _load_json(path, reading.TABLE)
    if not isinstance(raw, dict) or raw.get("version") != SPEC_VERSION:
        return {}
    return {key: ModelSpec.from_dict(value) for key, value in raw["specs"].items()}


def rebuild_preset_cache(progress: bool = True) -> Path:
    """Build every preset on the meta device and write data/model_specs.json."""
    specs = {}
    names = list_presets()
    iterator = names
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(names, desc="building presets on meta")
    for name in iterator:
        config, _ = load_config(name)
        for task in _tasks_for(config):
            spec = build_spec(config, name=name, task=task)
            specs[_cache_key(name, task)] = spec.as_dict()
            if task is resolve_task(config, Task.AUTO):
                specs[_cache_key(name, Task.AUTO)] = spec.as_dict()
    path = data_dir() / SPEC_CACHE_FILE
    path.write_text(json.dumps({"version": SPEC_VERSION, "specs": specs}, indent=1, sort_keys=True) + "\n")
    _preset_cache.cache_clear()
    return path


def _tasks_for(config: dict[str, Any]) -> list[Task]:
    if _is_encoder(config):
        return [Task.MASKED_LM, Task.SEQ_CLS]
    return [Task.CAUSAL_LM]


_ENCODER_TYPES = {"bert", "roberta", "distilbert", "deberta", "deberta-v2", "electra", "xlm-roberta", "modernbert"}


def _is_encoder(config: dict[str, Any]) -> bool:
    model_type = config.get("model_type")  # a config's value may be of any JSON type, a list among them
    return isinstance(model_type, str) and model_type in _ENCODER_TYPES


def resolve_task(config: dict[str, Any], task: Task) -> Task:
    """The head a plan trains: ``task`` itself, or for "auto" what the config's architectures say."""
    if task is not Task.AUTO:
        return task
    archs = config.get("architectures")
    arch = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""
    if arch.endswith("ForSequenceClassification"):
        return Task.SEQ_CLS
    if arch.endswith(("ForMaskedLM", "ForPreTraining")) or _is_encoder(config):
        return Task.MASKED_LM
    return Task.CAUSAL_LM


def build_spec(config_dict: dict[str, Any], name: str, task: Task | str = Task.AUTO) -> ModelSpec:
    """Instantiate the transformers class on the meta device and read its exact shapes.

    Imports torch and transformers (seconds). Raises ModelError when the config cannot be built.
    """
    check_config(config_dict, name, complete=False)  # values under their standard names: said before imports
    import torch
    import transformers

    task = resolve_task(config_dict, Task(task))
    model_type = config_dict.get("model_type")
    if not isinstance(model_type, str) or model_type not in transformers.CONFIG_MAPPING:
        raise ModelError(msg("error.model.unknown_type", model_type=str(model_type), name=name,
                             version=transformers.__version__))
    check_config(config_dict, name, transformers.CONFIG_MAPPING[model_type].attribute_map)
    transformers.logging.set_verbosity(transformers.logging.ERROR)  # config sanity warnings are noise for sizing
    try:
        config = transformers.CONFIG_MAPPING[model_type].from_dict(dict(config_dict))
        if task is Task.SEQ_CLS:
            config.num_labels = 2
        auto = auto_class(task)
        with torch.device("meta"):
            model = auto.from_config(config)
    except Exception as exc:  # noqa: BLE001 - report any construction failure in one line
        detail = str(exc).splitlines()[0] if str(exc) else ""
        raise ModelError(msg("error.model.build_failed", name=name, model_type=model_type, task=task.value,
                             error=type(exc).__name__, detail=detail)) from None
    return _read_spec(model, config, name, task)


# The fields every architecture needs, and the largest value a real model has (with room): beyond it a config is a
# typo, and building it on the meta device would take minutes (a 100,000-layer model) for a meaningless answer.
REQUIRED_CONFIG_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
CONFIG_BOUNDS = {
    "num_hidden_layers": 1_024,  # the deepest released decoders have ~200 blocks
    "hidden_size": 131_072,  # the widest have ~25,000
    "num_attention_heads": 4_096,
    "num_key_value_heads": 4_096,
    "intermediate_size": 1_048_576,
    "vocab_size": 16_777_216,  # the largest vocabularies have ~260,000 entries
    "head_dim": 65_536,
}
# Mixture-of-experts sizes under their names in the configs of the families transformers knows; the largest
# released models route among 384 experts (up to 8-16 per token), so 4,096 leaves room and refuses a typo.
EXPERT_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "num_experts_per_tok",
                 "moe_k", "n_shared_experts", "num_shared_experts")
_EXPERTS_PER_TOKEN = ("num_experts_per_tok", "moe_k", "n_shared_experts", "num_shared_experts")
MAX_EXPERTS = 4_096


def check_config(config: dict[str, Any], name: str, attribute_map: dict[str, str] | None = None, *,
                 complete: bool = True) -> None:
    """Refuse a config that would be filled with library defaults or could not be a model.

    ``attribute_map`` is the config class's map from standard names to its own (GPT-2's ``n_embd`` for
    ``hidden_size``). A missing required field, a count that is not a whole number >= 1 or beyond
    CONFIG_BOUNDS, key/value heads that do not divide the heads, or a hidden size the heads do not divide
    (without ``head_dim``) raise ModelError naming the fields. ``complete=False``: only the values present under
    their standard names (a first look before transformers is imported; a missing field is not judged).
    """
    aliases = attribute_map or {}
    text_config = config.get("text_config")
    source: dict[str, Any] = text_config if isinstance(text_config, dict) else {}

    def get(field: str) -> Any:
        for key in (field, aliases.get(field)):
            if key and key in config:
                return config[key]
            if key and key in source:
                return source[key]
        return None

    missing = [f for f in REQUIRED_CONFIG_FIELDS if get(f) is None]
    if missing and complete:  # not complete: a first look without the class's own names (n_embd for hidden_size)
        raise ModelError(msg("error.config.missing_fields", name=name, fields=", ".join(missing)))
    values: dict[str, int] = {}
    for field, maximum in CONFIG_BOUNDS.items():
        value = get(field)
        if value is None:
            continue
        if not is_whole(value, 1):
            raise ModelError(msg("error.config.not_positive_int", name=name, field=aliases.get(field, field)
                                 if field not in config else field, value=repr(value)))
        if value > maximum:
            raise ModelError(msg("error.config.too_large", name=name, field=field, value=repr(value),
                                 maximum=maximum))
        values[field] = value
    experts = {}
    for field in EXPERT_FIELDS:  # MoE sizes: 0 is a dense model in some configs
        value = get(field)
        if value is None:
            continue
        if not is_whole(value, 0):
            raise ModelError(msg("error.config.not_count", name=name, field=field, value=repr(value)))
        if value > MAX_EXPERTS:
            raise ModelError(msg("error.config.too_large", name=name, field=field, value=repr(value),
                                 maximum=MAX_EXPERTS))
        experts[field] = value
    routed = max((v for f, v in experts.items() if f not in _EXPERTS_PER_TOKEN), default=None)
    per_token = max((v for f, v in experts.items() if f in _EXPERTS_PER_TOKEN), default=None)
    if per_token and routed is not None and per_token > routed:  # 0 experts with 2 per token is no model
        raise ModelError(msg("error.config.experts_per_token", name=name, per_token=per_token, experts=routed))
    if "num_attention_heads" not in values or "hidden_size" not in values:
        return
    heads, kv_heads = values["num_attention_heads"], values.get("num_key_value_heads")
    if kv_heads is not None and heads % kv_heads:
        raise ModelError(msg("error.config.heads_by_kv", name=name, heads=heads, kv_heads=kv_heads))
    if "head_dim" not in values and values["hidden_size"] % heads:
        raise ModelError(msg("error.config.hidden_by_heads", name=name, hidden=values["hidden_size"], heads=heads))


def _embeddings(model: Any, blocks_prefix: str) -> tuple[int, set[int]]:
    """Parameters of the embedding tables outside the blocks, and the ids of their weights."""
    import torch

    params, ids = 0, set()
    for module_name, module in model.named_modules():
        if isinstance(module, torch.nn.Embedding) and not module_name.startswith(blocks_prefix + "."):
            params += module.weight.numel()
            ids.add(id(module.weight))
    return params, ids


def _head(model: Any, embedding_ids: set[int]) -> tuple[int, list[str]]:
    """Parameters of the head modules (tied embedding weights not counted again) and the output layers' names."""
    import torch

    head_params = 0
    seen: set[int] = set()
    for module_name, module in model.named_children():
        if module_name not in HEAD_MODULES:
            continue
        for p in module.parameters():
            if id(p) not in embedding_ids and id(p) not in seen:
                seen.add(id(p))
                head_params += p.numel()
    output_layers: list[str] = []
    out_emb = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if out_emb is not None:
        output_layers += [module_name for module_name, module in model.named_modules() if module is out_emb]
    output_layers += [module_name for module_name, module in model.named_modules()
                      if module_name.split(".")[-1] in ("classifier", "score") and isinstance(module, torch.nn.Linear)]
    return head_params, output_layers


def _linears(model: Any, blocks_prefix: str, layers: int) -> dict[str, Linear]:
    """The model's linear layers by name: the first block's (counted ``layers`` times) and those outside the blocks;
    GPT-2's Conv1D and fused MoE expert tensors count as linears."""
    import torch

    linears: dict[str, Linear] = {}
    for module_name, module in model.named_modules():
        in_block = module_name.startswith(blocks_prefix + ".")
        if in_block:
            parts = module_name[len(blocks_prefix) + 1:].split(".", 1)
            if parts[0] != "0" or len(parts) == 1:
                continue
            key = parts[1]
        else:
            key = module_name
        count = layers if in_block else 1
        if isinstance(module, torch.nn.Linear):
            linears[key] = Linear(key, module.in_features, module.out_features, module.bias is not None,
                                  count, in_block)
        elif type(module).__name__ == "Conv1D":  # GPT-2's transposed linear: weight is [in, out]
            linears[key] = Linear(key, module.weight.shape[0], module.weight.shape[1], module.bias is not None,
                                  count, in_block)
        elif in_block:
            for pname, p in module.named_parameters(recurse=False):
                if p.dim() == 3:  # fused MoE experts: [experts, out, in]
                    linears[f"{key}.{pname}"] = Linear(f"{key}.{pname}", p.shape[2], p.shape[1], False,
                                                      layers, True, experts=p.shape[0])
    return linears


def _final_norm(model: Any, blocks_prefix: str) -> int:
    """Parameters of the norms outside the blocks (the final norm), at most one level deep."""
    final_norm = 0
    for module_name, module in model.named_modules():
        if module_name.startswith(blocks_prefix) or not module_name:
            continue
        if "norm" in type(module).__name__.lower() and module_name.count(".") <= 1:
            final_norm += sum(p.numel() for p in module.parameters(recurse=False))
    return final_norm


def _kv_heads(block: Any, config: Any, num_heads: int) -> int:
    """Key/value heads as the block's attention module runs them. Multi-query families state them only through
    ``multi_query`` (Falcon's ``num_kv_heads`` is 1 then, GPT-BigCode's ``kv_heads``), which config classes of
    some transformers releases do not map to ``num_key_value_heads`` (Falcon's does from 5.25): the module's own
    count gives one answer under every release."""
    for module in block.modules():
        for attr in ("num_kv_heads", "kv_heads", "num_key_value_heads"):
            value = getattr(module, attr, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        groups = getattr(module, "num_key_value_groups", None)
        if isinstance(groups, int) and not isinstance(groups, bool) and groups > 0 and num_heads % groups == 0:
            return num_heads // groups
    return int(getattr(config, "num_key_value_heads", None) or num_heads)


def _op_impls(config: Any, name: str) -> dict[str, str]:
    """How a model of one's own writes its softmax, SiLU and LayerNorm, where its config.json states it
    (``softmax_impl``, ``hidden_act_impl``, ``norm_impl``: "fused" for the torch op, "composite" for element-wise ops;
    estimate.composite_ops)."""
    impls = {}
    for key in CONFIG_KEYS:
        value = getattr(config, key, None)
        if value is None:
            continue
        if value not in IMPLS:
            raise ModelError(msg("error.config.field_type", name=name, field=key, value=_shown(repr(value)),
                                 expected=msg("config.expected.op_impl")))
        impls[key] = value
    return impls


def _read_spec(model: Any, config: Any, name: str, task: Task) -> ModelSpec:
    blocks_prefix, blocks = find_blocks(model, config.num_hidden_layers)
    block_params = sum(p.numel() for p in blocks[0].parameters())
    total = sum(p.numel() for p in model.parameters())
    embedding_params, embedding_ids = _embeddings(model, blocks_prefix)
    head_params, output_layers = _head(model, embedding_ids)
    linears = _linears(model, blocks_prefix, config.num_hidden_layers)
    final_norm = _final_norm(model, blocks_prefix)
    other = total - embedding_params - head_params - block_params * config.num_hidden_layers

    num_heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // num_heads
    num_experts = int(getattr(config, "num_local_experts", None) or getattr(config, "num_experts", None) or 1)
    mlp_names = {lin.short_name for lin in linears.values()}
    gated = bool({"gate_proj", "gate_up_proj"} & mlp_names) or any(lin.experts > 1 for lin in linears.values())
    norm_kind = "rms" if any("rms" in type(m).__name__.lower() for m in blocks[0].modules()) else "layer"
    intermediate = (getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None)
                    or 4 * config.hidden_size)
    extras = {
        "output_layers": sorted(set(output_layers)),
        "params_final_norm": final_norm,
        "blocks_prefix": blocks_prefix,
        "sliding_window": getattr(config, "sliding_window", None),
        "final_logit_softcapping": getattr(config, "final_logit_softcapping", None),
        "attn_logit_softcapping": getattr(config, "attn_logit_softcapping", None),
        "position_embedding": "absolute" if any(n.endswith(("wpe", "position_embeddings"))
                                                 for n, _ in model.named_modules()) else "rope",
        "qkv_fused": "qkv_proj" in mlp_names or "c_attn" in mlp_names,
    }
    extras.update(_op_impls(config, name))
    largest = max(block_params, embedding_params, head_params)
    max_pos = (getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None) or 0)
    return ModelSpec(
        name=name,
        model_type=config.model_type,
        architecture=type(model).__name__,
        task=task,
        hidden_size=config.hidden_size,
        num_layers=config.num_hidden_layers,
        num_heads=num_heads,
        num_kv_heads=_kv_heads(blocks[0], config, num_heads),
        head_dim=head_dim,
        intermediate_size=int(getattr(config, "moe_intermediate_size", None) or intermediate),
        vocab_size=config.vocab_size,
        max_position=int(max_pos),
        tie_embeddings=bool(getattr(config, "tie_word_embeddings", False)) and task is not Task.SEQ_CLS,
        mlp_gated=gated,
        norm=norm_kind,
        activation=str(getattr(config, "hidden_act", None) or getattr(config, "activation_function", "")),
        attention_dropout=float(getattr(config, "attention_dropout", None)
                                or getattr(config, "attention_probs_dropout_prob", None)
                                or getattr(config, "attn_pdrop", None) or 0.0),
        hidden_dropout=float(getattr(config, "hidden_dropout_prob", None) or getattr(config, "resid_pdrop", None)
                             or getattr(config, "hidden_dropout", None) or 0.0),
        num_experts=num_experts,
        experts_per_token=int(getattr(config, "num_experts_per_tok", None) or 1) if num_experts > 1 else 1,
        is_encoder=_is_encoder(config.to_dict()),
        num_labels=2 if task is Task.SEQ_CLS else 0,
        params_total=total,
        params_embedding=embedding_params,
        params_head=head_params,
        params_block=block_params,
        params_other=other,
        params_largest_module=largest,
        linears=tuple(linears.values()),
        extras=extras,
    )


def auto_class(task: Task) -> Any:
    """The transformers ``AutoModelFor*`` class that builds a task's model."""
    import transformers

    return {
        Task.CAUSAL_LM: transformers.AutoModelForCausalLM,
        Task.SEQ_CLS: transformers.AutoModelForSequenceClassification,
        Task.MASKED_LM: transformers.AutoModelForMaskedLM,
    }[task]


def find_blocks(model: Any, num_layers: int) -> tuple[str, Any]:
    """(name, ModuleList) of the model's transformer blocks: the module list as long as the layer count."""
    import torch

    for module_name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == num_layers:
            return module_name, module
    raise ModelError(msg("error.model.no_blocks", layers=num_layers, model=type(model).__name__))


def hook_input_grads(model: Any, on: bool) -> None:
    """Make a transformers model's embeddings output require grad or not (its ``enable_input_require_grads`` /
    ``disable_input_require_grads``), whatever its checkpointing already did: transformers 5 hooks the embeddings
    whenever checkpointing is turned on, and a second hook would outlive one ``disable``."""
    hooked = hasattr(model, "_require_grads_hook")
    if on and not hooked:
        model.enable_input_require_grads()
    elif not on and hooked:
        model.disable_input_require_grads()


__all__ = [
    "HEAD_MODULES",
    "Linear",
    "auto_class",
    "find_blocks",
    "hook_input_grads",
    "ModelSpec",
    "ParamCounts",
    "CONFIG_BOUNDS",
    "REQUIRED_CONFIG_FIELDS",
    "build_spec",
    "check_config",
    "count_params",
    "get_spec",
    "list_presets",
    "load_config",
    "lora_target_linears",
    "quantized_linears",
    "rebuild_preset_cache",
    "resolve_task",
    "spec_for_plan",
]
