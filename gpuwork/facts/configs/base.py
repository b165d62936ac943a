"""What every config format shares: the claims a file makes, the import result, reading a file, and the
helpers the format modules use to turn keys into claims (model references, precision, LoRA, schedule, ...)."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.facts import reading
from gpuwork.facts.configs.optimizers import optimizer_choice
from gpuwork.facts.paths import models_dir
from gpuwork.message import Msg, msg
from gpuwork.plan import HSDP_GROUP_GPUS, TORCH_FSDP_SHARDINGS, TrainPlan, field_names

# When sharding is stated but no file says how many GPUs: one 8-GPU node, the common rental unit.
DEFAULT_SHARDED_GPUS = 8
# Claims on these names are facts about the run, not plan fields: combine reads them to decide precision.
FSDP = "__fsdp__"  # the run wraps the model in FSDP; value: whose preparation ("accelerate", "axolotl-fsdp2")
AUTOCAST = "__autocast__"  # accelerate's mixed_precision the run gets: "bf16", "fp16" or "no"

# -- results ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """One plan field as one config file states it."""

    field: str  # TrainPlan field
    value: Any  # plan value (enum fields as their string value)
    file: str
    key: str  # the config key(s) it comes from, e.g. "zero_optimization.stage"
    rule: Msg | None = None  # how the value was derived, when it is not a plain copy
    weak: bool = False  # yields to a non-weak claim from another file (accelerate's defaults)
    default: bool = False  # the framework's default for a key the file leaves out: yields to any file's value


@dataclass(frozen=True)
class ConfigImport:
    """What the files say: the plan fields they set, where each came from, what was ignored or defaulted."""

    files: tuple[tuple[str, str], ...]  # (path, format)
    claims: tuple[Claim, ...]  # the claim that decided each field, in field order
    ignored: tuple[tuple[str, tuple[str, ...]], ...]  # (file, keys without effect on the plan)
    notes: tuple[Msg, ...]  # approximations, deferrals, unknown keys, overridden weak claims

    @property
    def fields(self) -> dict[str, Any]:
        """TrainPlan fields set by the files (not yet validated: flags may still override some)."""
        return {c.field: c.value for c in self.claims}

    def defaulted(self, overridden: Iterable[str] = ()) -> list[str]:
        """Plan fields no file and no flag sets, that matter for this plan (they take TrainPlan's default)."""
        fields = self.fields
        skip = set(fields) | set(overridden) | {"dataset_bytes", "eval_fraction"}
        method = fields.get("method", TrainPlan.method)
        if method not in ("lora", "qlora"):
            skip |= {"lora_r", "lora_alpha", "lora_dropout", "lora_targets"}
        if method != "qlora":
            skip |= {"quant_type", "double_quant", "kbit_upcast"}
        if method != "freeze":
            skip.add("trainable_layers")
        if "eval_batch_size" not in fields:  # no evaluation: its other fields are not read
            skip |= {"eval_batch_size", "eval_samples", "eval_keep", "eval_accum"}
        if fields.get("sharding") not in ("hsdp", "hsdp-zero2"):
            skip.add("shard_group_gpus")
        return [name for name in field_names() if name not in skip]

    def report(self, overridden: Iterable[str] = ()) -> list[Msg]:
        """The mapping as messages, one a line: files, field <- file: key, flags that win, defaults, ignored, notes."""
        overridden = set(overridden)
        lines = [msg("config.header", count=len(self.files))]
        lines += [msg("config.file", file=path, format=fmt) for path, fmt in self.files]
        lines.append(msg("config.understood"))
        for c in self.claims:
            if c.field in overridden:
                lines.append(msg("config.mapped_overridden", field=c.field, value=show(c.value), file=c.file,
                                 key=c.key, flag="--" + FLAG_NAMES.get(c.field, c.field).replace("_", "-")))
            elif c.rule is not None:
                lines.append(msg("config.mapped_rule", field=c.field, value=show(c.value), file=c.file, key=c.key,
                                 rule=c.rule))
            else:
                lines.append(msg("config.mapped", field=c.field, value=show(c.value), file=c.file, key=c.key))
        defaulted = self.defaulted(overridden)
        if defaulted:
            lines.append(msg("config.defaulted_title"))
            lines += [msg("config.defaulted", field=name, value=show(getattr(TrainPlan, name)))
                      for name in defaulted]
        if self.ignored:
            lines.append(msg("config.ignored_title"))
            lines += [msg("config.ignored", file=file, keys=", ".join(keys)) for file, keys in self.ignored]
        if self.notes:
            lines.append(msg("config.notes_title"))
            lines += [msg("config.note", note=n) for n in self.notes]
        return lines

    def as_dict(self, overridden: Iterable[str] = ()) -> dict[str, Any]:
        """The mapping ``report`` prints, for JSON: codes and values, no rendered text."""
        overridden = set(overridden)

        def flag(name: str) -> str | None:
            return "--" + FLAG_NAMES.get(name, name).replace("_", "-") if name in overridden else None

        return {
            "files": [{"path": path, "format": fmt} for path, fmt in self.files],
            "fields": [{"field": c.field, "value": plain(c.value), "file": c.file, "key": c.key,
                        "rule": c.rule.as_dict() if c.rule is not None else None, "overridden_by": flag(c.field),
                        "framework_default": c.default}
                       for c in self.claims],
            "defaulted": [{"field": name, "value": plain(getattr(TrainPlan, name))}
                          for name in self.defaulted(overridden)],
            "ignored": [{"file": file, "keys": list(keys)} for file, keys in self.ignored],
            "notes": [n.as_dict() for n in self.notes],
        }

    def plan(self, **overrides: Any) -> TrainPlan:
        """The TrainPlan the files describe, with ``overrides`` (e.g. flags) on top."""
        return TrainPlan.from_dict({**self.fields, **overrides})


# flags whose name is not the field's (gpuwork.cli.args)
FLAG_NAMES = {"grad_checkpointing": "grad_checkpointing", "checkpoint_every_steps": "checkpoint_every",
              "shard_group_gpus": "shard_group"}


def plain(value: Any) -> Any:
    """A plan value as JSON holds it (enums by their value, tuples as lists)."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return value
    return str(value)


def show(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- reading and telling formats apart ---------------------------------------------------------------------------


def read_config(path: str | Path) -> dict[str, Any]:
    """The mapping a JSON or YAML config file holds (YAML needs PyYAML: ``pip install gpuwork[configs]``).

    Read through ``gpuwork.facts.reading``: a regular file of at most ``reading.CONFIG`` bytes, JSON and YAML
    parsed within bounds (depth, integer digits, YAML aliases); anything else is one ``PlanError`` line.
    """
    file = Path(path)
    try:
        raw = reading.read_text(file, reading.CONFIG, missing=msg("error.config.missing", file=str(file)))
        if file.suffix.lower() == ".json" or raw.lstrip().startswith("{"):
            try:
                data = reading.parse_json(raw, file)
            except json.JSONDecodeError as exc:
                raise PlanError("from", msg("error.config.bad_json", file=str(file), line=exc.lineno,
                                            reason=exc.msg)) from None
        else:
            try:
                import yaml
            except ModuleNotFoundError:
                raise PlanError("from", msg("error.config.needs_yaml", file=str(file))) from None
            try:
                data = reading.parse_yaml(raw, file)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                raise PlanError("from", msg("error.config.bad_yaml", file=str(file),
                                            line=(mark.line + 1) if mark is not None else 0,
                                            reason=str(getattr(exc, "problem", None)
                                                       or type(exc).__name__)[:200])) from None
    except reading.ReadError as exc:
        raise PlanError("from", exc.msg) from None
    if not isinstance(data, dict):
        raise PlanError("from", msg("error.config.not_mapping", file=str(file), kind=type(data).__name__))
    return data




# -- one file's claims -------------------------------------------------------------------------------------------


@dataclass
class Reader:
    """Collects the claims, used keys and notes of one file."""

    file: str
    data: dict[str, Any]
    claims: list[Claim] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    notes: list[Msg] = field(default_factory=list)
    follow: list[tuple[Path, str, str]] = field(default_factory=list)  # referenced configs: (path, key, guess)
    defaults: tuple[Any, ...] = ()  # facts.configs.defaults.Defaults a missing key falls back to, first wins

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        self.used.add(key)
        value = self.data.get(key)
        return default if value is None else value

    def claim(self, name: str, value: Any, key: str, rule: Msg | None = None, weak: bool = False) -> None:
        self.claims.append(Claim(name, value, self.file, key, rule, weak))

    def note(self, message: Msg) -> None:
        self.notes.append(message)

    def default(self, key: str) -> tuple[Any, Msg | None]:
        """(the framework's default of a key the file leaves out, the rule naming its source), or (None, None)."""
        self.used.add(key)
        for defaults in self.defaults:
            if defaults.has(key):
                value, source = defaults.lookup(key)
                return value, msg("config.rule.framework_default", key=key, value=show(value), source=source)
        return None, None

    def claim_default(self, name: str, value: Any, key: str, rule: Msg | None) -> None:
        """A claim from a framework default (``rule`` from ``default``): any file's own value wins over it."""
        self.claims.append(Claim(name, value, self.file, key, rule, default=True))

    def typed(self, key: str, kind: str) -> tuple[Any, Msg | None]:
        """The file's value of ``key`` read as ``kind`` ("int", "number", "flag", "any"), else its default."""
        if self.has(key):
            read = {"int": self.int_, "number": self.number, "flag": self.flag, "any": self.get}[kind]
            return read(key), None
        return self.default(key)

    # typed reads: a wrong type is an error naming the key and the file
    def int_(self, key: str) -> int | None:
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or float(value) != int(value):
            raise PlanError("from", msg("error.config.not_whole", file=self.file, key=key, value=repr(value)))
        return int(value)

    def number(self, key: str) -> float | None:
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PlanError("from", msg("error.config.not_number", file=self.file, key=key, value=repr(value)))
        return value

    def flag(self, key: str) -> bool | None:
        value = self.get(key)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
            return value.strip().lower() in ("true", "yes")
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        raise PlanError("from", msg("error.config.not_bool", file=self.file, key=key, value=repr(value)))


def whole(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def claim_model(r: Reader, key: str, base: Path) -> None:
    """A model reference: a preset, a local config (relative to cwd or to the config file), or a hub id."""
    ref = str(r.get(key)).strip()
    from gpuwork.facts.model import list_presets

    presets = set(list_presets())
    if ref in presets:
        r.claim("model", ref, key)
        return
    for candidate in (Path(ref).expanduser(), base / ref):
        if candidate.exists() and (candidate.is_file() or (candidate / "config.json").is_file()):
            r.claim("model", str(candidate), key, msg("config.rule.model_local", path=str(candidate)))
            return
    hub = hub_presets()
    preset = hub.get(ref.lower())
    if preset is not None:
        r.claim("model", preset, key, msg("config.rule.model_preset", hub_id=ref, preset=preset))
        return
    stem = re.sub(r"-(instruct|chat|it|hf)(-\d{4})?$", "", ref.lower())  # Qwen3-4B-Instruct-2507
    preset = hub.get(stem)
    if preset is not None:
        r.claim("model", preset, key, msg("config.rule.model_variant", hub_id=ref, preset=preset))
        return
    if importlib.util.find_spec("transformers") is None:  # the core install reads no hub config
        r.claim("model", ref, key, msg("config.rule.model_hub_needs_transformers", hub_id=ref))
        return
    r.claim("model", ref, key, msg("config.rule.model_hub", hub_id=ref))


def model_dtype(r: Reader) -> str | None:
    """The dtype (bf16, fp16, fp32) in the config of the model this file names, when it is a preset or a local
    file (transformers 5 loads a checkpoint in that dtype by default); None for a hub id or no model."""
    model = next((c for c in reversed(r.claims) if c.field == "model"), None)
    if model is None or (model.rule is not None and model.rule.code.startswith("config.rule.model_hub")):
        return None
    from gpuwork.errors import GpuworkError
    from gpuwork.facts.model import load_config

    try:
        config, _ = load_config(str(model.value))
    except GpuworkError:
        return None
    value = str(config.get("dtype") or config.get("torch_dtype") or "")
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(value.removeprefix("torch."))


def hub_presets() -> dict[str, str]:
    """Hub id (lower case) -> bundled preset, from data/models/index.csv."""
    out: dict[str, str] = {}
    index = models_dir() / "index.csv"
    if index.is_file():
        try:
            text = reading.read_text(index, reading.TABLE)
        except reading.ReadError as exc:
            raise PlanError("from", exc.msg) from None
        for row in csv.DictReader(io.StringIO(text, newline="")):
            if row.get("hf_id"):
                out[row["hf_id"].strip().lower()] = row["name"].strip()
    return out


def claim_precision(r: Reader, bf16: Any, fp16: Any, *, keys: tuple[str, str], pure: bool, pure_rule: Msg | None,
               mixed_rule: Msg, tf32: bool | None = None) -> None:
    """bf16 / fp16 switches -> plan precision (pure when ``pure``: the trained weights are 16-bit)."""
    if bf16 and fp16:
        raise PlanError("precision", msg("error.config.bf16_and_fp16", file=r.file, bf16=keys[0], fp16=keys[1]))
    for on, family, key in ((bf16, "bf16", keys[0]), (fp16, "fp16", keys[1])):
        if on:
            if pure:
                r.claim("precision", family, key, pure_rule)
            else:
                r.claim("precision", f"{family}-mixed", key, mixed_rule)
            return
    if bf16 is not None or fp16 is not None:
        r.claim("precision", "fp32", f"{keys[0]}, {keys[1]}", msg("config.rule.fp32_tf32") if tf32 else
                msg("config.rule.fp32"))


def claim_attention(r: Reader, value: Any, key: str) -> None:
    name = str(value).strip().lower()
    if name in ("eager",):
        r.claim("attention", "eager", key)
    elif name in ("sdpa", "sdp", "sdp_attention"):
        r.claim("attention", "sdpa", key)
    elif name in ("flash_attention_2", "fa2", "flash", "flash_attention", "true"):
        r.claim("attention", "flash", key)
    elif name in ("flash_attention_3", "fa3", "flash3"):
        r.claim("attention", "flash3", key)
    elif name in ("flash_attention_4", "fa4", "flash4"):
        r.claim("attention", "flash4", key)
    elif name.startswith(("kernels-community/", "flash_attention")):
        r.claim("attention", "flash", key, msg("config.rule.flash_like", value=str(value)))
    elif name in ("auto",):
        r.note(msg("config.attention_auto", file=r.file, key=key))
    elif name in ("disabled", "false", "none"):
        r.claim("attention", "eager", key)
    else:
        r.claim("attention", "sdpa", key, msg("config.rule.attention_other", value=str(value)))


def lora_targets(value: Any) -> tuple[str, ...] | str | None:
    if value is None:
        return None
    if isinstance(value, str):
        if value.strip().lower() in ("all", "all-linear", "all_linear"):
            return "all-linear"
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, (list, tuple)):
        names = tuple(str(v) for v in value)
        if any(n.lower() in ("all-linear", "all_linear") for n in names):
            return "all-linear"
        return names or None
    return None


def claim_lora(r: Reader, *, r_key: str, alpha_key: str, dropout_key: str) -> None:
    for name, key, kind in (("lora_r", r_key, "int"), ("lora_alpha", alpha_key, "number"),
                            ("lora_dropout", dropout_key, "number")):
        value, rule = r.typed(key, kind)
        if value is not None:
            value = whole(value) if name == "lora_alpha" else value
            (r.claim if rule is None else r.claim_default)(name, value, key, rule)


def claim_schedule(r: Reader, *, epochs_key: str) -> None:
    epochs, rule = r.typed(epochs_key, "number")
    if epochs is not None:
        (r.claim if rule is None else r.claim_default)("epochs", whole(epochs), epochs_key, rule)
    max_steps = r.int_("max_steps")
    if max_steps is not None and max_steps > 0:
        r.claim("max_steps", max_steps, "max_steps")  # turned into data size once tokens per step are known
    save_strategy = str(r.get("save_strategy", "steps")).lower()
    if save_strategy == "no":
        r.claim("checkpoints_kept", 0, "save_strategy", msg("config.rule.no_saves"))
        r.used.update({"save_steps", "save_total_limit"})  # they count only when something is saved
        return
    if save_strategy == "epoch":
        r.note(msg("config.save_per_epoch", file=r.file, key="save_strategy"))
    else:
        steps, rule = r.typed("save_steps", "number")
        if steps is not None and steps >= 1:
            (r.claim if rule is None else r.claim_default)("checkpoint_every_steps", int(steps), "save_steps", rule)
        elif steps is not None and steps > 0:
            r.note(msg("config.save_ratio", file=r.file, value=float(steps)))
    kept, rule = r.typed("save_total_limit", "int")
    if kept is not None:
        r.claim("checkpoints_kept", kept, "save_total_limit")
    elif rule is not None:  # the framework's None: every checkpoint stays on disk
        r.note(msg("config.keeps_every_checkpoint", file=r.file, source=rule))


# accelerate's FSDP_AUTO_WRAP_POLICY names -> TrainPlan.fsdp_wrap; SIZE_BASED_WRAP depends on the model's size
# (facts/configs/wrap_size.py; docs/communication.md 'One unit for the whole model')
_WRAP_POLICIES = {"TRANSFORMER_BASED_WRAP": "blocks", "NO_WRAP": "whole"}


def claim_fsdp_wrap(r: Reader, policy: Any, key: str, sharding: str | None) -> None:
    """TrainPlan.fsdp_wrap from an accelerate / Trainer auto-wrap policy name, for torch FSDP shardings only."""
    wrap = _WRAP_POLICIES.get(str(policy).strip().upper()) if policy is not None else None
    if wrap is not None and sharding in TORCH_FSDP_SHARDINGS:
        r.claim("fsdp_wrap", wrap, key, msg(f"config.rule.fsdp_wrap_{wrap}"))


def claim_deterministic(r: Reader) -> None:
    """TrainPlan.deterministic from TrainingArguments' full_determinism: the Trainer then calls
    enable_full_determinism, i.e. torch.use_deterministic_algorithms(True) (transformers 5.24.0 trainer.py)."""
    value = r.flag("full_determinism")
    if value is not None:
        r.claim("deterministic", value, "full_determinism", msg("config.rule.full_determinism"))


def claim_tf32(r: Reader, compile_key: str = "") -> None:
    """TrainPlan.tf32 from TrainingArguments' tf32: TrainingArguments.__post_init__ sets
    torch.backends.cuda.matmul.allow_tf32 to its value when it is not None; None leaves torch's default (off). With
    ``torch_compile`` (``compile_key``) and tf32 None it turns TF32 on unless fp16 is on without bf16
    (``if self.tf32 is None and not self.fp16 or self.bf16``). docs/configs.md 'TF32'."""
    value = r.flag("tf32")
    if value is not None:
        r.claim("tf32", value, "tf32", msg("config.rule.tf32"))
    elif compile_key and r.flag(compile_key) and (not r.flag("fp16") or r.flag("bf16")):
        r.claim("tf32", True, compile_key, msg("config.rule.tf32_compile"))


def claim_grad_clip(r: Reader, key: str, unset: Any = None) -> None:
    """Whether the run clips gradients, from a max-norm ``key``: a positive norm clips, 0 does not (HF Trainer:
    ``max_grad_norm > 0``). A key the file leaves out takes ``unset`` ((norm, rule)) where the framework passes
    nothing on and another library's default applies, else the framework's own default."""
    norm, rule = r.typed(key, "number")
    if norm is None and unset is not None:
        norm, rule = unset
    if norm is not None:
        (r.claim if rule is None else r.claim_default)("grad_clip", norm > 0, key, rule)


def claim_weight_decay(r: Reader, key: str = "weight_decay") -> None:
    """TrainPlan.weight_decay from ``key``: the Trainer hands TrainingArguments.weight_decay to the optimizer it
    builds (every parameter but biases and norms). Left out, the framework's default where the pinned table has it
    (TrainingArguments: 0.0), else nothing: the plan's stack default (``TrainPlan.weight_decay_in_effect``)."""
    value, rule = r.typed(key, "number")
    if value is not None:
        (r.claim if rule is None else r.claim_default)("weight_decay", value, key, rule)


def claim_stack(r: Reader, liger: bool, compile_: bool, unsloth: bool, keys: dict[str, str]) -> None:
    chosen = [name for name, on in (("unsloth", unsloth), ("hf-liger", liger), ("torch-compile", compile_)) if on]
    if not chosen:
        return
    r.claim("stack", chosen[0], keys[chosen[0]])
    for other in chosen[1:]:
        r.note(msg("config.stack_also", file=r.file, key=keys[other], stack=chosen[0]))


def sharding_rule(sharding: str, group: int = HSDP_GROUP_GPUS) -> Msg | None:
    """The rule a config's sharding follows, said where gpuwork maps a framework's name to its own."""
    if sharding == "zero2":
        return msg("config.rule.shard_grad_op")
    if sharding == "hsdp":
        return msg("config.rule.hybrid_shard", group=group)
    if sharding == "hsdp-zero2":
        return msg("config.rule.hybrid_shard_zero2", group=group)
    return None


# the Trainer's fsdp option -> TrainPlan.sharding, the first present wins ("hybrid_shard" is inside
# "hybrid_shard_zero2")
_FSDP_OPTION_SHARDINGS = (("hybrid_shard_zero2", "hsdp-zero2"), ("shard_grad_op", "zero2"), ("no_shard", "ddp"),
                          ("hybrid_shard", "hsdp"), ("full_shard", "fsdp"))


def claim_fsdp_options(r: Reader, value: Any, key: str, config: Any = None, prepare: str = "accelerate") -> None:
    """Trainer's ``fsdp`` option list ("full_shard auto_wrap offload") -> sharding and offload. transformers 5
    writes ``fsdp: true`` and the strategy in ``fsdp_config.reshard_after_forward``: a strategy name (FSDP1) or a
    bool (FSDP2: true is full_shard, false shard_grad_op). ``prepare``: whose code wraps the model (the FSDP claim)."""
    if isinstance(value, bool):
        if not value:
            return
        config = config if isinstance(config, dict) else {}
        strategy = config.get("reshard_after_forward", True)
        word = str(strategy).lower()
        value = ["full_shard" if word == "true" else "shard_grad_op" if word == "false" else word]
        if config.get("cpu_offload") in (True, "true"):
            value.append("offload")
        key = "fsdp_config.reshard_after_forward" if "reshard_after_forward" in config else key
    options = value.split() if isinstance(value, str) else [str(v) for v in value or ()]
    options = [o.lower() for o in options]
    if not options:
        return
    if not (isinstance(config, dict) and config.get("xla") in (True, "true")):  # XLA FSDP is not accelerate's
        r.claim(FSDP, prepare, key)
    sharding = next((s for option, s in _FSDP_OPTION_SHARDINGS if option in options), None)
    if sharding is not None:  # hybrid: the shard group is one node (torch's default for hybrid sharding)
        r.claim("sharding", sharding, key, sharding_rule(sharding))
    if isinstance(config, dict):  # Trainer's fsdp_config (transformers 5.24.0: TRANSFORMER_BASED_WRAP when unset)
        for name in ("auto_wrap_policy", "fsdp_auto_wrap_policy"):
            if name in config:
                claim_fsdp_wrap(r, config[name], f"fsdp_config.{name}", sharding)
    if "offload" in options:
        r.claim("offload_optimizer", True, key, msg("config.rule.fsdp_offload"))
        if "shard_grad_op" not in options and "hybrid_shard_zero2" not in options:  # weights stay whole
            r.claim("offload_params", True, key, msg("config.rule.fsdp_offload"))


def follow_deepspeed(r: Reader, key: str, base: Path) -> None:
    """A training config's ``deepspeed:`` entry: a path (followed when it exists) or an inline dict."""
    value = r.get(key)
    if not value:
        return
    if isinstance(value, dict):
        r.follow.append((Path(r.file), key, "inline"))
        r.data = {**r.data, "__inline_deepspeed__": value}
        return
    ref = str(value)
    # relative to the working folder, the file, or a folder above it (LLaMA-Factory's examples name paths from
    # the project root, where llamafactory-cli runs)
    for candidate in (Path(ref).expanduser(), base / ref, *(parent / ref for parent in list(base.parents)[:3])):
        if candidate.is_file():
            r.follow.append((candidate, key, ""))
            return
    found = re.search(r"(?:zero|z|stage)[_-]?([0-3])", Path(ref).name.lower())
    if found:
        stage = int(found.group(1))
        r.claim("sharding", "ddp" if stage == 0 else f"zero{stage}", key,
                msg("config.rule.stage_from_name", path=ref, stage=stage))
        if "offload" in Path(ref).name.lower():
            r.claim("offload_optimizer", True, key, msg("config.rule.offload_from_name", path=ref))
    r.note(msg("config.deepspeed_missing", file=r.file, key=key, path=ref))




def claim_optimizer(r: Reader, name: str, key: str,
                    table: dict[str, tuple[str, str | None, str | None]] | None = None) -> None:
    optimizer, impl, note = optimizer_choice(name, file=r.file, key=key, table=table)
    r.claim("optimizer", optimizer, key, note)
    if impl is not None:
        r.claim("optimizer_impl", impl, key)



@dataclass(frozen=True)
class Format:
    """One config format: its name, the keys that only it uses, how its file is read, the keys known to change
    nothing (printed as "ignored"; anything else not read is an unknown key, noted with the closest known one)."""

    name: str
    markers: frozenset[str]
    read: Callable[[Reader, Path], None]
    ignored: frozenset[str]


def claim_optimizer_or_default(r: Reader, key: str) -> None:
    """The optimizer ``key`` names, or the framework's default optimizer when the file names none."""
    name, rule = r.typed(key, "any")
    if name is None:
        return
    if rule is None:
        claim_optimizer(r, str(name), key)
        return
    optimizer, impl, note = optimizer_choice(str(name), file=r.file, key=key)
    r.claim_default("optimizer", optimizer, key, rule if note is None else msg("config.rule.both", first=rule,
                                                                               second=note))
    if impl is not None:
        r.claim_default("optimizer_impl", impl, key, rule)

