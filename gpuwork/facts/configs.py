"""Read the training configs people already have and turn them into TrainPlan fields, with the mapping shown.

Formats, told apart by their keys (not the file name):

- ``hf``: Hugging Face ``TrainingArguments`` / TRL ``SFTConfig`` (+ TRL's ``ModelConfig`` keys a TRL recipe
  YAML holds), as JSON or YAML, including ``TrainingArguments.to_json_string()`` / ``to_dict()`` output;
- ``axolotl``: an axolotl YAML (``base_model``, ``sequence_len``, ``micro_batch_size``, ``adapter``, ...);
- ``llamafactory``: a LLaMA-Factory YAML (``finetuning_type``, ``cutoff_len``, ``stage``, ``template``, ...);
- ``deepspeed``: a DeepSpeed config JSON (``zero_optimization``, ``train_micro_batch_size_per_gpu``, ...);
- ``accelerate``: an accelerate config YAML (``distributed_type``, ``num_processes``, ``fsdp_config``, ...);
- ``peft``: a peft adapter's ``adapter_config.json`` (``peft_type``, ``r``, ``lora_alpha``, ``target_modules``,
  ``base_model_name_or_path``), as ``PeftModel.save_pretrained`` writes it.

Several files combine (a TrainingArguments JSON + a DeepSpeed JSON + an accelerate YAML). Each file makes
*claims* (plan field, value, file, key, rule); two files that claim different values for one field are an
error naming both (HF's DeepSpeed integration refuses such mismatches too), except *weak* claims (accelerate's
``mixed_precision`` and ``MULTI_GPU``), which yield to the training config, as Trainer's own arguments do.
DeepSpeed ``"auto"`` values claim nothing: they defer to the TrainingArguments file.

Rules worth knowing (each is also printed next to the field it decides):

- Precision. Trainer's ``bf16=True`` autocasts over the weights the model was loaded with (transformers
  ``TrainingArguments.bf16``: "Whether to use bf16 (mixed) precision training"). Weights loaded in fp32 (the
  ``from_pretrained`` default when no dtype is given) are fp32 masters: ``bf16-mixed``. Full fine-tuning of a
  model loaded in bf16 (``torch_dtype``/``dtype: bfloat16`` in the file; axolotl always loads in bf16 when
  ``bf16`` is on, ``normalize_config`` sets ``cfg.torch_dtype``) trains bf16 weights: ``bf16``. LLaMA-Factory
  upcasts trainable weights to fp32 unless ``pure_bf16``. DeepSpeed's ``bf16.enabled`` keeps fp32 master weights
  in its optimizer: ``bf16-mixed``. Adapters (LoRA/QLoRA) always run under autocast: ``bf16-mixed``.
- GPUs. accelerate's ``num_processes`` is the total over all machines (``accelerate launch`` starts
  ``num_processes // num_machines`` per machine); a DeepSpeed numeric ``train_batch_size`` gives the world size
  as ``train_batch_size / (micro-batch x accumulation)``.
- ``max_steps`` fixes the run's length: the plan's data becomes ``max_steps`` x tokens per step, one epoch.

Example:
    >>> imported = import_configs(["training_args.json", "ds_config.json"])   # doctest: +SKIP
    >>> imported.fields["sharding"], imported.fields["batch_size"]              # doctest: +SKIP
    ('zero3', 4)
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.facts import reading
from gpuwork.facts.paths import models_dir
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan, field_names

FORMATS = ("hf", "axolotl", "llamafactory", "deepspeed", "accelerate", "peft")
# When sharding is stated but no file says how many GPUs: one 8-GPU node, the common rental unit.
DEFAULT_SHARDED_GPUS = 8

# -- optimizer names ------------------------------------------------------------------------------------------
# Every transformers OptimizerNames value (4.x and 5.x), axolotl's extra names and DeepSpeed's optimizer types
# -> (plan optimizer, optimizer_impl or None, why it is only the nearest modelled choice or None).
# "Nearest" names an optimizer whose states gpuwork models; the reason says which way the estimate errs.
_EXACT = None
OPTIMIZER_NAMES: dict[str, tuple[str, str | None, str | None]] = {
    "adamw_torch": ("adamw", "foreach", _EXACT),
    "adamw_torch_fused": ("adamw", "fused", _EXACT),
    "adamw_hf": ("adamw", "for-loop", _EXACT),  # transformers' own AdamW: a Python loop over parameters
    "adamw_torch_xla": ("adamw", "foreach", "xla"),
    "adamw_torch_npu_fused": ("adamw", "fused", "npu"),
    "adamw_apex_fused": ("adamw", "fused", _EXACT),  # apex FusedAdam: fp32 states, one fused kernel
    "adamw_anyprecision": ("adamw", "foreach", "anyprecision"),
    "adamw_torch_4bit": ("adamw-8bit", None, "states_4bit"),
    "adamw_torch_8bit": ("adamw-8bit", None, "torchao_8bit"),
    "adamw_bnb_8bit": ("adamw-8bit", None, _EXACT),
    "adamw_8bit": ("adamw-8bit", None, _EXACT),
    "paged_adamw_8bit": ("paged-adamw-8bit", None, _EXACT),
    "paged_adamw_32bit": ("adamw", "foreach", "paged_32bit"),
    "paged_adamw": ("adamw", "foreach", "paged_32bit"),  # axolotl's spelling
    "ademamix": ("adamw", "foreach", "ademamix"),
    "ademamix_8bit": ("adamw-8bit", None, "ademamix"),
    "paged_ademamix_32bit": ("adamw", "foreach", "ademamix"),
    "paged_ademamix_8bit": ("paged-adamw-8bit", None, "ademamix"),
    "adafactor": ("adafactor", None, _EXACT),
    "sgd": ("sgd", "foreach", _EXACT),
    "adagrad": ("sgd", "foreach", "one_state"),
    "rmsprop": ("sgd", "foreach", "one_state"),
    "rmsprop_bnb": ("sgd", "foreach", "one_state"),
    "rmsprop_bnb_32bit": ("sgd", "foreach", "one_state"),
    "rmsprop_bnb_8bit": ("sgd", "foreach", "one_state_8bit"),
    "lion_32bit": ("lion", None, _EXACT),
    "lion_8bit": ("lion", None, "lion_8bit"),
    "paged_lion_32bit": ("lion", None, "paged_32bit"),
    "paged_lion_8bit": ("lion", None, "lion_8bit"),
    "galore_adamw": ("adamw", "foreach", "low_rank"),
    "galore_adamw_8bit": ("adamw-8bit", None, "low_rank"),
    "galore_adafactor": ("adafactor", None, "low_rank"),
    "galore_adamw_layerwise": ("adamw", "foreach", "low_rank"),
    "galore_adamw_8bit_layerwise": ("adamw-8bit", None, "low_rank"),
    "galore_adafactor_layerwise": ("adafactor", None, "low_rank"),
    "apollo_adamw": ("adamw", "foreach", "low_rank"),
    "apollo_adamw_layerwise": ("adamw", "foreach", "low_rank"),
    "lomo": ("sgd", "foreach", "lomo"),
    "adalomo": ("sgd", "foreach", "lomo"),
    "grokadamw": ("adamw", "foreach", "extra_state"),
    "schedule_free_adamw": ("adamw", "foreach", "schedule_free"),
    "schedule_free_radam": ("adamw", "foreach", "schedule_free"),
    "schedule_free_sgd": ("sgd", "foreach", "schedule_free"),
    "stable_adamw": ("adamw", "foreach", "other_impl"),
    # axolotl's own names (its `optimizer:` also takes every Trainer name above)
    "optimi_adamw": ("adamw", "foreach", "other_impl"),
    "ao_adamw_4bit": ("adamw-8bit", None, "states_4bit"),
    "ao_adamw_8bit": ("adamw-8bit", None, "torchao_8bit"),
    "ao_adamw_fp8": ("adamw-8bit", None, "torchao_8bit"),
    "adopt_adamw": ("adamw", "foreach", "other_impl"),
    "came_pytorch": ("adafactor", None, "other_impl"),
    "muon": ("sgd", "foreach", "one_state"),
}
# DeepSpeed's "optimizer": {"type": ...} (deepspeed/runtime/config.py names; compared lower-case)
DEEPSPEED_OPTIMIZERS: dict[str, tuple[str, str | None, str | None]] = {
    "adam": ("adamw", "fused", _EXACT),  # DeepSpeed FusedAdam (CPUAdam when offloaded): fp32 m and v
    "adamw": ("adamw", "fused", _EXACT),
    "fusedadam": ("adamw", "fused", _EXACT),
    "cpuadam": ("adamw", "fused", _EXACT),
    "lion": ("lion", None, _EXACT),
    "fusedlion": ("lion", None, _EXACT),
    "adagrad": ("sgd", "foreach", "one_state"),
    "lamb": ("adamw", "fused", "other_impl"),
    "onebitadam": ("adamw", "fused", "other_impl"),
    "zerooneadam": ("adamw", "fused", "other_impl"),
    "onebitlamb": ("adamw", "fused", "other_impl"),
    "muadam": ("adamw", "fused", "other_impl"),
    "muadamw": ("adamw", "fused", "other_impl"),
    "musgd": ("sgd", "foreach", _EXACT),
}


def optimizer_choice(name: str, *, file: str = "", key: str = "optim",
                     table: dict[str, tuple[str, str | None, str | None]] | None = None
                     ) -> tuple[str, str | None, Msg | None]:
    """A tool's optimizer name -> (plan optimizer, optimizer_impl or None, note when only the nearest choice).

    Raises PlanError naming the name, the file and the closest known names for a name no tool uses.
    """
    table = OPTIMIZER_NAMES if table is None else table
    key_name = str(name).strip().lower()
    if table is DEEPSPEED_OPTIMIZERS:
        key_name = key_name.replace("_", "")
    found = table.get(key_name)
    if found is None:
        close = difflib.get_close_matches(key_name, list(table), n=3, cutoff=0.6)
        if close:
            raise PlanError("optimizer", msg("error.config.optimizer_close", name=str(name), file=file, key=key,
                                             close=", ".join(close)))
        raise PlanError("optimizer", msg("error.config.optimizer_unknown", name=str(name), file=file, key=key))
    optimizer, impl, why = found
    note = None if why is None else msg("config.optimizer.nearest", name=str(name), optimizer=optimizer,
                                        why=msg(f"config.optimizer.why.{why}"))
    return optimizer, impl, note


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
            skip |= {"quant_type", "double_quant"}
        if method != "freeze":
            skip.add("trainable_layers")
        return [name for name in field_names() if name not in skip]

    def report(self, overridden: Iterable[str] = ()) -> list[Msg]:
        """The mapping as messages, one a line: files, field <- file: key, flags that win, defaults, ignored, notes."""
        overridden = set(overridden)
        lines = [msg("config.header", count=len(self.files))]
        lines += [msg("config.file", file=path, format=fmt) for path, fmt in self.files]
        lines.append(msg("config.understood"))
        for c in self.claims:
            if c.field in overridden:
                lines.append(msg("config.mapped_overridden", field=c.field, value=_show(c.value), file=c.file,
                                 key=c.key, flag="--" + _FLAG_NAMES.get(c.field, c.field).replace("_", "-")))
            elif c.rule is not None:
                lines.append(msg("config.mapped_rule", field=c.field, value=_show(c.value), file=c.file, key=c.key,
                                 rule=c.rule))
            else:
                lines.append(msg("config.mapped", field=c.field, value=_show(c.value), file=c.file, key=c.key))
        defaulted = self.defaulted(overridden)
        if defaulted:
            lines.append(msg("config.defaulted_title"))
            lines += [msg("config.defaulted", field=name, value=_show(getattr(TrainPlan, name)))
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
            return "--" + _FLAG_NAMES.get(name, name).replace("_", "-") if name in overridden else None

        return {
            "files": [{"path": path, "format": fmt} for path, fmt in self.files],
            "fields": [{"field": c.field, "value": _plain(c.value), "file": c.file, "key": c.key,
                        "rule": c.rule.as_dict() if c.rule is not None else None, "overridden_by": flag(c.field)}
                       for c in self.claims],
            "defaulted": [{"field": name, "value": _plain(getattr(TrainPlan, name))}
                          for name in self.defaulted(overridden)],
            "ignored": [{"file": file, "keys": list(keys)} for file, keys in self.ignored],
            "notes": [n.as_dict() for n in self.notes],
        }

    def plan(self, **overrides: Any) -> TrainPlan:
        """The TrainPlan the files describe, with ``overrides`` (e.g. flags) on top."""
        return TrainPlan.from_dict({**self.fields, **overrides})


# flags whose name is not the field's (gpuwork.cli.args)
_FLAG_NAMES = {"grad_checkpointing": "grad_checkpointing", "checkpoint_every_steps": "checkpoint_every"}


def _plain(value: Any) -> Any:
    """A plan value as JSON holds it (enums by their value, tuples as lists)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return value
    return str(value)


def _show(value: Any) -> str:
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


# Keys that only one format uses: the first format whose markers appear wins (most specific first).
_MARKERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("peft", frozenset({"peft_type"})),  # every PeftConfig.to_dict() holds it
    ("accelerate", frozenset({"distributed_type", "compute_environment"})),
    ("deepspeed", frozenset({"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size",
                             "zero_allow_untested_optimizer", "gradient_clipping", "steps_per_print",
                             "wall_clock_breakdown", "zero_force_ds_cpu_optimizer"})),
    ("llamafactory", frozenset({"finetuning_type", "cutoff_len", "stage", "template", "lora_rank", "lora_target",
                                "quantization_bit", "pure_bf16", "freeze_trainable_layers", "flash_attn",
                                "enable_liger_kernel", "use_unsloth"})),
    ("axolotl", frozenset({"base_model", "sequence_len", "micro_batch_size", "adapter", "lora_target_linear",
                           "num_epochs", "flash_attention", "sdp_attention", "datasets", "sample_packing",
                           "saves_per_epoch", "val_set_size"})),
    ("hf", frozenset({"per_device_train_batch_size", "gradient_accumulation_steps", "optim", "num_train_epochs",
                      "output_dir", "learning_rate", "max_seq_length", "max_length", "packing",
                      "dataset_text_field", "model_name_or_path", "use_peft", "save_steps", "bf16", "fp16",
                      "gradient_checkpointing", "model_init_kwargs", "lr_scheduler_type", "max_steps"})),
)


def detect_format(data: dict[str, Any], file: str = "") -> str:
    """Which tool wrote ``data`` ("hf", "axolotl", "llamafactory", "deepspeed", "accelerate"), from its keys.

    A DeepSpeed-only key set (``fp16``/``bf16`` as ``{"enabled": ...}`` objects) counts as DeepSpeed.
    Raises PlanError naming the file when no format's keys are there.
    """
    keys = set(data)
    # TrainingArguments and axolotl hold bf16/fp16 as booleans; DeepSpeed as {"enabled": ...} sections
    if any(isinstance(data.get(k), dict) for k in ("bf16", "fp16", "zero_optimization")):
        return "deepspeed"
    for name, markers in _MARKERS:
        if keys & markers:
            return name
    sample = ", ".join(sorted(keys)[:6]) or "none"
    raise PlanError("from", msg("error.config.unrecognised", file=file, keys=sample))


# -- one file's claims -------------------------------------------------------------------------------------------


@dataclass
class _Reader:
    """Collects the claims, used keys and notes of one file."""

    file: str
    data: dict[str, Any]
    claims: list[Claim] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    notes: list[Msg] = field(default_factory=list)
    follow: list[tuple[Path, str, str]] = field(default_factory=list)  # referenced configs: (path, key, guess)

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


def _whole(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _model(r: _Reader, key: str, base: Path) -> None:
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
    hub = _hub_presets()
    preset = hub.get(ref.lower())
    if preset is not None:
        r.claim("model", preset, key, msg("config.rule.model_preset", hub_id=ref, preset=preset))
        return
    stem = re.sub(r"-(instruct|chat|it|hf)$", "", ref.lower())
    preset = hub.get(stem)
    if preset is not None:
        r.claim("model", preset, key, msg("config.rule.model_variant", hub_id=ref, preset=preset))
        return
    r.claim("model", ref, key, msg("config.rule.model_hub", hub_id=ref))


def _hub_presets() -> dict[str, str]:
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


def _precision(r: _Reader, bf16: Any, fp16: Any, *, keys: tuple[str, str], pure: bool, pure_rule: Msg | None,
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


def _attention(r: _Reader, value: Any, key: str) -> None:
    name = str(value).strip().lower()
    if name in ("eager",):
        r.claim("attention", "eager", key)
    elif name in ("sdpa", "sdp", "sdp_attention"):
        r.claim("attention", "sdpa", key)
    elif name in ("flash_attention_2", "fa2", "flash", "flash_attention", "true"):
        r.claim("attention", "flash", key)
    elif name in ("flash_attention_3", "fa3") or name.startswith(("kernels-community/", "flash_attention")):
        r.claim("attention", "flash", key, msg("config.rule.flash_like", value=str(value)))
    elif name in ("auto",):
        r.note(msg("config.attention_auto", file=r.file, key=key))
    elif name in ("disabled", "false", "none"):
        r.claim("attention", "eager", key)
    else:
        r.claim("attention", "sdpa", key, msg("config.rule.attention_other", value=str(value)))


def _targets(value: Any) -> tuple[str, ...] | str | None:
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


def _lora(r: _Reader, *, r_key: str, alpha_key: str, dropout_key: str) -> None:
    rank = r.int_(r_key)
    if rank is not None:
        r.claim("lora_r", rank, r_key)
    alpha = r.number(alpha_key)
    if alpha is not None:
        r.claim("lora_alpha", _whole(alpha), alpha_key)
    dropout = r.number(dropout_key)
    if dropout is not None:
        r.claim("lora_dropout", dropout, dropout_key)


def _schedule(r: _Reader, *, epochs_key: str) -> None:
    epochs = r.number(epochs_key)
    if epochs is not None:
        r.claim("epochs", _whole(epochs), epochs_key)
    max_steps = r.int_("max_steps")
    if max_steps is not None and max_steps > 0:
        r.claim("max_steps", max_steps, "max_steps")  # turned into data size once tokens per step are known
    save_strategy = str(r.get("save_strategy", "steps")).lower()
    if save_strategy == "no":
        r.claim("checkpoints_kept", 0, "save_strategy", msg("config.rule.no_saves"))
    elif save_strategy == "epoch":
        r.note(msg("config.save_per_epoch", file=r.file, key="save_strategy"))
    else:
        steps = r.number("save_steps")
        if steps is not None and steps >= 1:
            r.claim("checkpoint_every_steps", int(steps), "save_steps")
        elif steps is not None and steps > 0:
            r.note(msg("config.save_ratio", file=r.file, value=float(steps)))
    kept = r.int_("save_total_limit")
    if kept is not None:
        r.claim("checkpoints_kept", kept, "save_total_limit")


def _stack(r: _Reader, liger: bool, compile_: bool, unsloth: bool, keys: dict[str, str]) -> None:
    chosen = [name for name, on in (("unsloth", unsloth), ("hf-liger", liger), ("torch-compile", compile_)) if on]
    if not chosen:
        return
    r.claim("stack", chosen[0], keys[chosen[0]])
    for other in chosen[1:]:
        r.note(msg("config.stack_also", file=r.file, key=keys[other], stack=chosen[0]))


def _fsdp_options(r: _Reader, value: Any, key: str) -> None:
    """Trainer's ``fsdp`` option list ("full_shard auto_wrap offload") -> sharding and offload."""
    options = value.split() if isinstance(value, str) else [str(v) for v in value or ()]
    options = [o.lower() for o in options]
    if not options:
        return
    if "shard_grad_op" in options or "hybrid_shard_zero2" in options:
        r.claim("sharding", "zero2", key, msg("config.rule.shard_grad_op"))
    elif "no_shard" in options:
        r.claim("sharding", "ddp", key)
    elif "full_shard" in options or "hybrid_shard" in options:
        r.claim("sharding", "fsdp", key)
    if "offload" in options:
        r.claim("offload_optimizer", True, key, msg("config.rule.fsdp_offload"))
        if "shard_grad_op" not in options:
            r.claim("offload_params", True, key, msg("config.rule.fsdp_offload"))


def _deepspeed_reference(r: _Reader, key: str, base: Path) -> None:
    """A training config's ``deepspeed:`` entry: a path (followed when it exists) or an inline dict."""
    value = r.get(key)
    if not value:
        return
    if isinstance(value, dict):
        r.follow.append((Path(r.file), key, "inline"))
        r.data = {**r.data, "__inline_deepspeed__": value}
        return
    ref = str(value)
    for candidate in (Path(ref).expanduser(), base / ref):
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


def _read_hf(r: _Reader, base: Path) -> None:
    """TrainingArguments / SFTConfig (+ TRL ModelConfig / ScriptArguments keys in a TRL recipe)."""
    for key in ("model_name_or_path", "model_name"):
        if r.has(key):
            _model(r, key, base)
            break
    init = r.get("model_init_kwargs") or {}
    dtype = str(r.get("torch_dtype") or r.get("dtype") or init.get("torch_dtype") or init.get("dtype") or "")
    method = None
    use_peft = r.flag("use_peft")
    if r.flag("load_in_4bit"):
        method = "qlora"
        r.claim("method", "qlora", "load_in_4bit")
    elif use_peft:
        method = "lora"
        r.claim("method", "lora", "use_peft")
    elif use_peft is False:
        method = "full"
        r.claim("method", "full", "use_peft")
    elif r.has("model_name_or_path"):  # a TRL recipe: ModelConfig.use_peft defaults to False
        method = "full"
        r.claim("method", "full", "use_peft", msg("config.rule.trl_full"))
    if r.flag("load_in_8bit"):
        r.note(msg("config.eight_bit_base", file=r.file, key="load_in_8bit"))
    if r.flag("use_dora"):
        r.note(msg("config.dora", file=r.file))
    _lora(r, r_key="lora_r", alpha_key="lora_alpha", dropout_key="lora_dropout")
    targets = _targets(r.get("lora_target_modules"))
    if targets:
        r.claim("lora_targets", targets, "lora_target_modules")
    if r.has("bnb_4bit_quant_type"):
        r.claim("quant_type", str(r.get("bnb_4bit_quant_type")).lower(), "bnb_4bit_quant_type")
    nested = r.flag("use_bnb_nested_quant")
    if nested is not None:
        r.claim("double_quant", nested, "use_bnb_nested_quant")
    for key in ("max_seq_length", "max_length", "block_size", "model_max_length"):
        seq = r.int_(key)
        if seq is not None:
            r.claim("seq_len", seq, key)
            break
    r.used.update({"max_seq_length", "max_length", "block_size", "model_max_length"})  # the first one set decides
    if r.flag("packing"):
        r.note(msg("config.packing", file=r.file, key="packing"))
    r.used.update({"per_device_train_batch_size", "per_gpu_train_batch_size", "gradient_checkpointing",
                   "activation_checkpointing", "use_liger_kernel", "use_liger"})
    for key in ("per_device_train_batch_size", "per_gpu_train_batch_size"):
        batch = r.int_(key)
        if batch is not None:
            r.claim("batch_size", batch, key)
            break
    accum = r.int_("gradient_accumulation_steps")
    if accum is not None:
        r.claim("grad_accum", accum, "gradient_accumulation_steps")
    for key in ("gradient_checkpointing", "activation_checkpointing"):
        on = r.flag(key)
        if on is not None:
            r.claim("grad_checkpointing", on, key)
            break
    if r.flag("activation_offloading"):
        r.note(msg("config.activation_offloading", file=r.file))
    attn = r.get("attn_implementation") or init.get("attn_implementation")
    if attn:
        _attention(r, attn, "attn_implementation" if r.has("attn_implementation") else
                   "model_init_kwargs.attn_implementation")
    if r.has("optim") or r.flag("adafactor"):
        key = "optim" if r.has("optim") else "adafactor"
        name = r.get("optim") if key == "optim" else "adafactor"
        _optimizer(r, str(name), key)
    loaded = {"bfloat16": "bf16", "torch.bfloat16": "bf16", "float16": "fp16", "torch.float16": "fp16"}.get(dtype)
    pure = loaded is not None and method == "full"  # adapters run under autocast whatever the base is stored in
    bf16, fp16 = r.flag("bf16"), r.flag("fp16")
    if pure and not bf16 and not fp16:
        r.claim("precision", loaded, "torch_dtype" if r.has("torch_dtype") else "dtype",
                msg("config.rule.pure_loaded", dtype=dtype))
    else:
        _precision(r, bf16, fp16, keys=("bf16", "fp16"), pure=pure,
                   pure_rule=msg("config.rule.pure_loaded", dtype=dtype),
                   mixed_rule=msg("config.rule.trainer_mixed"), tf32=r.flag("tf32"))
    if dtype and dtype != "auto":
        r.used.update({"torch_dtype", "dtype"})
    elif dtype == "auto":
        r.note(msg("config.dtype_auto", file=r.file))
    _schedule(r, epochs_key="num_train_epochs")
    liger = bool(r.flag("use_liger_kernel") or r.flag("use_liger"))
    compile_ = bool(r.flag("torch_compile"))
    _stack(r, liger, compile_, False, {"hf-liger": "use_liger_kernel" if r.has("use_liger_kernel") else "use_liger",
                                       "torch-compile": "torch_compile"})
    _fsdp_options(r, r.get("fsdp"), "fsdp")
    _deepspeed_reference(r, "deepspeed", base)


# peft task types with a plan task (peft.utils.peft_types.TaskType); the others leave the task to the model
_PEFT_TASKS = {"CAUSAL_LM": "causal-lm", "SEQ_CLS": "seq-cls"}


def _read_peft(r: _Reader, base: Path) -> None:
    """A peft adapter_config.json: LoRA's rank, alpha, dropout and targets, and the base model it was made for.

    The base model counts only when it is a preset (or a hub id of one) or a folder that exists here: adapters
    trained elsewhere record a path on that machine. The method is a weak ``lora`` (a TrainingArguments file
    that loads the base in 4 bits makes it ``qlora``); the file cannot tell how the base was loaded.
    """
    kind = str(r.get("peft_type") or "LORA").upper()
    if kind != "LORA":
        raise PlanError("method", msg("error.config.peft_type", file=r.file, value=kind))
    r.claim("method", "lora", "peft_type", msg("config.rule.peft_lora"), weak=True)
    if r.has("base_model_name_or_path"):
        _model(r, "base_model_name_or_path", base)
        if r.claims[-1].rule is not None and r.claims[-1].rule.code == "config.rule.model_hub":
            r.claims.pop()  # neither a preset nor a folder here: the user says which with --model
            r.note(msg("config.peft_base_unknown", file=r.file, value=str(r.get("base_model_name_or_path"))))
    _lora(r, r_key="r", alpha_key="lora_alpha", dropout_key="lora_dropout")
    targets = r.get("target_modules")
    if isinstance(targets, str) and _targets(targets) != "all-linear":
        r.note(msg("config.peft_regex", file=r.file, value=targets))  # peft matches a string as a regex
    elif _targets(targets):
        r.claim("lora_targets", _targets(targets), "target_modules")
    task = _PEFT_TASKS.get(str(r.get("task_type") or "").upper())
    if task is not None:
        r.claim("task", task, "task_type")
    if r.flag("use_dora"):
        r.note(msg("config.dora", file=r.file))
    saved = r.get("modules_to_save")
    if saved:
        names = ", ".join(str(m) for m in saved) if isinstance(saved, (list, tuple)) else str(saved)
        r.note(msg("config.peft_modules_to_save", file=r.file, modules=names))
    if r.get("layers_to_transform") is not None:
        r.note(msg("config.peft_layers", file=r.file))


def _optimizer(r: _Reader, name: str, key: str, table: dict | None = None) -> None:
    optimizer, impl, note = optimizer_choice(name, file=r.file, key=key, table=table)
    r.claim("optimizer", optimizer, key, note)
    if impl is not None:
        r.claim("optimizer_impl", impl, key)


def _read_axolotl(r: _Reader, base: Path) -> None:
    key = "base_model_config" if r.has("base_model_config") else "base_model"
    if r.has(key):
        _model(r, key, base)
    r.used.add("base_model")
    adapter = str(r.get("adapter") or "").lower()
    four_bit, eight_bit = r.flag("load_in_4bit"), r.flag("load_in_8bit")
    if adapter == "qlora" or (adapter == "lora" and four_bit):
        r.claim("method", "qlora", "adapter" if adapter == "qlora" else "adapter, load_in_4bit")
    elif adapter == "lora":
        r.claim("method", "lora", "adapter")
    elif adapter:
        r.note(msg("config.adapter_other", file=r.file, value=adapter))
    else:
        r.claim("method", "full", "adapter", msg("config.rule.no_adapter"))
    if eight_bit:
        r.note(msg("config.eight_bit_base", file=r.file, key="load_in_8bit"))
    if adapter in ("lora", "qlora"):
        _lora(r, r_key="lora_r", alpha_key="lora_alpha", dropout_key="lora_dropout")
        if r.flag("lora_target_linear"):
            r.claim("lora_targets", "all-linear", "lora_target_linear")
        else:
            targets = _targets(r.get("lora_target_modules"))
            if targets:
                r.claim("lora_targets", targets, "lora_target_modules")
    seq = r.int_("sequence_len")
    if seq is not None:
        r.claim("seq_len", seq, "sequence_len")
    if r.flag("sample_packing"):
        r.note(msg("config.packing", file=r.file, key="sample_packing"))
    micro = r.int_("micro_batch_size")
    if micro is not None:
        r.claim("batch_size", micro, "micro_batch_size")
    accum = r.int_("gradient_accumulation_steps")
    total = r.int_("batch_size")
    if accum is not None:
        r.claim("grad_accum", accum, "gradient_accumulation_steps")
    elif total is not None and micro:
        r.claim("grad_accum", max(1, total // micro), "batch_size, micro_batch_size",
                msg("config.rule.accum_from_batch", total=total, micro=micro))
    checkpointing = r.get("gradient_checkpointing")
    if checkpointing is not None:
        if isinstance(checkpointing, str) and checkpointing.lower() in ("unsloth", "offload"):
            r.claim("grad_checkpointing", True, "gradient_checkpointing",
                    msg("config.rule.offloaded_checkpointing", value=checkpointing))
        else:
            r.claim("grad_checkpointing", r.flag("gradient_checkpointing"), "gradient_checkpointing")
    for key, attention in (("flash_attention", "flash"), ("sdp_attention", "sdpa"), ("xformers_attention", "sdpa"),
                           ("eager_attention", "eager")):
        if r.flag(key):
            r.claim("attention", attention, key,
                    msg("config.rule.xformers") if key == "xformers_attention" else None)
            break
    if r.has("optimizer"):
        _optimizer(r, str(r.get("optimizer")), "optimizer")
    bf16, fp16 = r.get("bf16"), r.flag("fp16")
    if isinstance(bf16, str) and bf16.lower() == "auto":
        bf16_on = True
        auto_rule = True
    else:
        bf16_on, auto_rule = r.flag("bf16"), False
    pure_bf16, pure_fp16 = r.flag("bfloat16"), r.flag("float16")
    full = adapter not in ("lora", "qlora")
    if pure_bf16 or pure_fp16:
        _precision(r, pure_bf16, pure_fp16, keys=("bfloat16", "float16"), pure=True,
                   pure_rule=msg("config.rule.axolotl_pure"), mixed_rule=msg("config.rule.trainer_mixed"))
    else:
        pure_rule, mixed_rule = msg("config.rule.axolotl_bf16"), msg("config.rule.adapter_mixed")
        if auto_rule:
            pure_rule, mixed_rule = msg("config.rule.bf16_auto", rule=pure_rule), msg("config.rule.bf16_auto",
                                                                                        rule=mixed_rule)
        _precision(r, bf16_on, fp16, keys=("bf16", "fp16"), pure=full, pure_rule=pure_rule, mixed_rule=mixed_rule,
                   tf32=r.flag("tf32"))
    _schedule(r, epochs_key="num_epochs")
    if r.has("saves_per_epoch"):
        r.note(msg("config.save_per_epoch", file=r.file, key="saves_per_epoch"))
    plugins = [str(p) for p in r.get("plugins") or ()]
    liger = any("liger" in p.lower() for p in plugins) or any(
        r.flag(k) for k in ("liger_rms_norm", "liger_glu_activation", "liger_fused_linear_cross_entropy",
                            "liger_rope", "liger_cross_entropy"))
    unsloth_keys = [k for k in ("unsloth_lora_mlp", "unsloth_lora_qkv", "unsloth_lora_o",
                                "unsloth_cross_entropy_loss", "unsloth_rms_norm", "unsloth_rope") if r.flag(k)]
    _stack(r, liger, bool(r.flag("torch_compile")), bool(unsloth_keys),
           {"hf-liger": "plugins" if any("liger" in p.lower() for p in plugins) else "liger_*",
            "torch-compile": "torch_compile", "unsloth": ", ".join(unsloth_keys)})
    fsdp = r.get("fsdp")
    fsdp_config = r.get("fsdp_config") or {}
    if fsdp or (fsdp_config and r.has("fsdp_version")):
        _fsdp_options(r, fsdp or ["full_shard"], "fsdp")
        reshard = fsdp_config.get("reshard_after_forward", fsdp_config.get("fsdp_reshard_after_forward"))
        if reshard is False:
            r.claim("sharding", "zero2", "fsdp_config.reshard_after_forward", msg("config.rule.shard_grad_op"))
        if fsdp_config.get("fsdp_offload_params") or fsdp_config.get("offload_params"):
            r.claim("offload_params", True, "fsdp_config.offload_params")
            r.claim("offload_optimizer", True, "fsdp_config.offload_params", msg("config.rule.fsdp_offload"))
    _deepspeed_reference(r, "deepspeed", base)


_LF_DEFAULTS = msg("config.rule.lf_default")


def _read_llamafactory(r: _Reader, base: Path) -> None:
    if r.has("model_name_or_path"):
        _model(r, "model_name_or_path", base)
    stage = str(r.get("stage", "sft")).lower()
    if stage not in ("sft", "pt"):
        r.note(msg("config.stage_other", file=r.file, stage=stage))
    finetuning = str(r.get("finetuning_type", "lora")).lower()
    bits = r.int_("quantization_bit")
    if finetuning == "lora":
        if bits == 4:
            r.claim("method", "qlora", "finetuning_type, quantization_bit")
        else:
            r.claim("method", "lora", "finetuning_type", None if r.has("finetuning_type") else _LF_DEFAULTS)
        if bits is not None and bits != 4:
            r.note(msg("config.eight_bit_base", file=r.file, key="quantization_bit"))
        rank = r.int_("lora_rank")
        r.claim("lora_r", rank if rank is not None else 8, "lora_rank", None if rank is not None else _LF_DEFAULTS)
        alpha = r.number("lora_alpha")
        if alpha is not None:
            r.claim("lora_alpha", _whole(alpha), "lora_alpha")
        else:
            r.claim("lora_alpha", 2 * (rank or 8), "lora_alpha", msg("config.rule.lf_alpha"))
        dropout = r.number("lora_dropout")
        if dropout is not None:
            r.claim("lora_dropout", dropout, "lora_dropout")
        targets = _targets(r.get("lora_target", "all"))
        r.claim("lora_targets", targets, "lora_target", None if r.has("lora_target") else _LF_DEFAULTS)
    elif finetuning == "freeze":
        r.claim("method", "freeze", "finetuning_type")
        layers = r.int_("freeze_trainable_layers")
        r.claim("trainable_layers", layers if layers is not None else 2, "freeze_trainable_layers",
                None if layers is not None else _LF_DEFAULTS)
    elif finetuning == "full":
        r.claim("method", "full", "finetuning_type")
    else:
        raise PlanError("method", msg("error.config.finetuning_type", file=r.file, value=finetuning))
    if r.has("quantization_type"):
        r.claim("quant_type", str(r.get("quantization_type")).lower(), "quantization_type")
    double = r.flag("double_quantization")
    if double is not None:
        r.claim("double_quant", double, "double_quantization")
    seq = r.int_("cutoff_len")
    r.claim("seq_len", seq if seq is not None else 2048, "cutoff_len", None if seq is not None else _LF_DEFAULTS)
    if r.flag("packing") or r.flag("neat_packing"):
        r.note(msg("config.packing", file=r.file, key="packing"))
    batch = r.int_("per_device_train_batch_size")
    if batch is not None:
        r.claim("batch_size", batch, "per_device_train_batch_size")
    accum = r.int_("gradient_accumulation_steps")
    if accum is not None:
        r.claim("grad_accum", accum, "gradient_accumulation_steps")
    disabled = r.flag("disable_gradient_checkpointing")
    r.claim("grad_checkpointing", not disabled, "disable_gradient_checkpointing",
            None if disabled is not None else _LF_DEFAULTS)
    if r.has("flash_attn"):
        _attention(r, r.get("flash_attn"), "flash_attn")
    if r.has("optim"):
        _optimizer(r, str(r.get("optim")), "optim")
    pure = bool(r.flag("pure_bf16"))
    _precision(r, r.flag("bf16") or pure, r.flag("fp16"), keys=("pure_bf16" if pure else "bf16", "fp16"), pure=pure,
               pure_rule=msg("config.rule.lf_pure"), mixed_rule=msg("config.rule.lf_mixed"), tf32=r.flag("tf32"))
    _schedule(r, epochs_key="num_train_epochs")
    samples = r.int_("max_samples")
    if samples is not None:
        r.claim("max_samples", samples, "max_samples")  # tokens once seq_len is known
    _stack(r, bool(r.flag("enable_liger_kernel")), False, bool(r.flag("use_unsloth")),
           {"hf-liger": "enable_liger_kernel", "unsloth": "use_unsloth", "torch-compile": ""})
    _deepspeed_reference(r, "deepspeed", base)


def _ds_value(r: _Reader, section: dict[str, Any], key: str, path: str) -> Any:
    """A DeepSpeed value; "auto" is noted as deferred and returned as None."""
    value = section.get(key)
    if isinstance(value, str) and value.strip().lower() == "auto":
        r.claims.append(Claim("__auto__", path, r.file, path))
        return None
    return value


def _read_deepspeed(r: _Reader, base: Path) -> None:
    data = r.data
    r.used.update({"zero_optimization", "bf16", "fp16", "train_micro_batch_size_per_gpu",
                   "gradient_accumulation_steps", "train_batch_size", "optimizer", "activation_checkpointing"})
    zero = data.get("zero_optimization") or {}
    if not isinstance(zero, dict):
        raise PlanError("sharding", msg("error.config.not_mapping_key", file=r.file, key="zero_optimization"))
    stage = _ds_value(r, zero, "stage", "zero_optimization.stage")
    if stage is not None:
        if stage not in (0, 1, 2, 3):
            raise PlanError("sharding", msg("error.config.zero_stage", file=r.file, value=repr(stage)))
        r.claim("sharding", "ddp" if stage == 0 else f"zero{stage}", "zero_optimization.stage")
    for section, name in (("offload_optimizer", "offload_optimizer"), ("offload_param", "offload_params")):
        offload = zero.get(section) or {}
        device = str(offload.get("device", "none")).lower() if isinstance(offload, dict) else "none"
        if device in ("cpu", "nvme"):
            if name == "offload_params" and stage is not None and stage < 3:
                r.note(msg("config.offload_param_stage", file=r.file, stage=stage))
                continue
            r.claim(name, True, f"zero_optimization.{section}.device",
                    msg("config.rule.nvme") if device == "nvme" else None)
    for family in ("bf16", "fp16"):
        section = data.get(family)
        if isinstance(section, dict):
            _ds_value(r, section, "enabled", f"{family}.enabled")
    bf16 = data.get("bf16", {}).get("enabled") if isinstance(data.get("bf16"), dict) else None
    fp16 = data.get("fp16", {}).get("enabled") if isinstance(data.get("fp16"), dict) else None
    bf16 = None if isinstance(bf16, str) else bf16
    fp16 = None if isinstance(fp16, str) else fp16
    if bf16 or fp16 or (bf16 is False and fp16 is False):
        _precision(r, bf16, fp16, keys=("bf16.enabled", "fp16.enabled"), pure=False, pure_rule=None,
                   mixed_rule=msg("config.rule.ds_mixed"))
    micro = _ds_value(r, data, "train_micro_batch_size_per_gpu", "train_micro_batch_size_per_gpu")
    if micro is not None:
        r.claim("batch_size", int(micro), "train_micro_batch_size_per_gpu")
    accum = _ds_value(r, data, "gradient_accumulation_steps", "gradient_accumulation_steps")
    if accum is not None:
        r.claim("grad_accum", int(accum), "gradient_accumulation_steps")
    total = _ds_value(r, data, "train_batch_size", "train_batch_size")
    if total is not None:
        r.claim("train_batch_size", int(total), "train_batch_size")  # world size once micro and accum are known
    optimizer = data.get("optimizer")
    if isinstance(optimizer, dict) and optimizer.get("type"):
        _optimizer(r, str(optimizer["type"]), "optimizer.type", DEEPSPEED_OPTIMIZERS)
    checkpointing = data.get("activation_checkpointing")
    if isinstance(checkpointing, dict) and (checkpointing.get("partition_activations")
                                            or checkpointing.get("cpu_checkpointing")):
        r.note(msg("config.ds_activation_checkpointing", file=r.file))


_ACCELERATE_TYPES = {"NO": "single", "MULTI_GPU": "ddp", "DEEPSPEED": "deepspeed", "FSDP": "fsdp",
                     "MULTI_CPU": "cpu", "MULTI_NPU": "ddp", "MULTI_XPU": "ddp", "MULTI_MLU": "ddp",
                     "MULTI_MUSA": "ddp", "MULTI_HPU": "ddp", "MULTI_SDAA": "ddp", "XLA": "xla", "TPU": "xla",
                     "MEGATRON_LM": "megatron"}


def _read_accelerate(r: _Reader, base: Path) -> None:
    kind_raw = str(r.get("distributed_type", "NO")).upper()
    kind = _ACCELERATE_TYPES.get(kind_raw)
    if kind is None:
        raise PlanError("sharding", msg("error.config.distributed_type", file=r.file, value=kind_raw))
    processes = r.int_("num_processes")
    machines = r.int_("num_machines")
    if processes is not None:
        rule = msg("config.rule.num_processes", machines=machines or 1)
        r.claim("gpus", processes, "num_processes", rule)
    elif kind == "single":
        r.claim("gpus", 1, "distributed_type")
    if kind in ("cpu", "xla", "megatron"):
        r.note(msg("config.accelerate_other", file=r.file, value=kind_raw))
    elif kind == "ddp":
        r.claim("sharding", "ddp", "distributed_type", weak=True)
    elif kind == "deepspeed":
        config = r.get("deepspeed_config") or {}
        ds_file = config.get("deepspeed_config_file")
        if ds_file:
            for candidate in (Path(str(ds_file)).expanduser(), base / str(ds_file)):
                if candidate.is_file():
                    r.follow.append((candidate, "deepspeed_config.deepspeed_config_file", ""))
                    break
            else:
                r.note(msg("config.deepspeed_missing", file=r.file, key="deepspeed_config.deepspeed_config_file",
                           path=str(ds_file)))
        stage = config.get("zero_stage")
        if stage is not None:
            r.claim("sharding", "ddp" if int(stage) == 0 else f"zero{int(stage)}", "deepspeed_config.zero_stage")
        for key, name in (("offload_optimizer_device", "offload_optimizer"), ("offload_param_device", "offload_params")):
            if str(config.get(key, "none")).lower() in ("cpu", "nvme"):
                if name == "offload_params" and stage is not None and int(stage) < 3:
                    r.note(msg("config.offload_param_stage", file=r.file, stage=int(stage)))
                    continue
                r.claim(name, True, f"deepspeed_config.{key}")
        if config.get("gradient_accumulation_steps") not in (None, "auto"):
            r.claim("grad_accum", int(config["gradient_accumulation_steps"]), "deepspeed_config.gradient_accumulation_steps")
    elif kind == "fsdp":
        config = r.get("fsdp_config") or {}
        strategy = str(config.get("fsdp_sharding_strategy", "FULL_SHARD")).upper()
        version = config.get("fsdp_version")
        reshard = config.get("fsdp_reshard_after_forward")
        if str(version) == "2" and reshard is not None:
            sharding = "fsdp" if reshard in (True, "true", "FULL_SHARD") else "zero2"
            key = "fsdp_config.fsdp_reshard_after_forward"
        else:
            sharding = {"FULL_SHARD": "fsdp", "1": "fsdp", "SHARD_GRAD_OP": "zero2", "2": "zero2", "NO_SHARD": "ddp",
                        "3": "ddp", "HYBRID_SHARD": "fsdp", "4": "fsdp", "HYBRID_SHARD_ZERO2": "zero2",
                        "5": "zero2"}.get(strategy)
            key = "fsdp_config.fsdp_sharding_strategy"
            if sharding is None:
                raise PlanError("sharding", msg("error.config.fsdp_strategy", file=r.file, value=strategy))
        r.claim("sharding", sharding, key, msg("config.rule.shard_grad_op") if sharding == "zero2" else None)
        if config.get("fsdp_offload_params") in (True, "true"):
            r.claim("offload_params", sharding == "fsdp", "fsdp_config.fsdp_offload_params")
            r.claim("offload_optimizer", True, "fsdp_config.fsdp_offload_params", msg("config.rule.fsdp_offload"))
    mixed = str(r.get("mixed_precision", "no")).lower()
    if mixed in ("bf16", "fp16"):
        r.claim("precision", f"{mixed}-mixed", "mixed_precision", weak=True)
    elif mixed == "fp8":
        r.note(msg("config.fp8", file=r.file))
    dynamo = r.get("dynamo_config") or {}
    backend = str(dynamo.get("dynamo_backend", "NO")).upper() if isinstance(dynamo, dict) else "NO"
    if backend not in ("NO", "NONE"):
        r.claim("stack", "torch-compile", "dynamo_config.dynamo_backend", weak=True)


_READERS = {"hf": _read_hf, "axolotl": _read_axolotl, "llamafactory": _read_llamafactory,
            "deepspeed": _read_deepspeed, "accelerate": _read_accelerate, "peft": _read_peft}

# Keys each format is known to hold that do not change memory, time, disk or cost (printed as "ignored").
# Anything else that is not read is an unknown key: noted, with the closest known key when there is one.
_KNOWN_IGNORED: dict[str, frozenset[str]] = {
    "hf": frozenset("""
        output_dir overwrite_output_dir do_train do_eval do_predict eval_strategy evaluation_strategy
        prediction_loss_only per_device_eval_batch_size per_gpu_eval_batch_size eval_accumulation_steps eval_delay
        torch_empty_cache_steps learning_rate weight_decay adam_beta1 adam_beta2 adam_epsilon max_grad_norm
        lr_scheduler_type lr_scheduler_kwargs warmup_ratio warmup_steps log_level log_level_replica log_on_each_node
        logging_dir logging_strategy logging_first_step logging_steps logging_nan_inf_filter save_safetensors
        save_on_each_node save_only_model restore_callback_states_from_checkpoint no_cuda use_cpu use_mps_device
        seed data_seed jit_mode_eval use_ipex fp16_opt_level half_precision_backend bf16_full_eval fp16_full_eval
        tf32 local_rank ddp_backend tpu_num_cores tpu_metrics_debug debug dataloader_drop_last eval_steps
        dataloader_num_workers dataloader_prefetch_factor past_index run_name disable_tqdm remove_unused_columns
        label_names load_best_model_at_end metric_for_best_model greater_is_better ignore_data_skip
        fsdp_min_num_params fsdp_config fsdp_transformer_layer_cls_to_wrap accelerator_config parallelism_config
        label_smoothing_factor optim_args group_by_length length_column_name report_to ddp_find_unused_parameters
        ddp_bucket_cap_mb ddp_broadcast_buffers ddp_static_graph dataloader_pin_memory
        dataloader_persistent_workers dataloader_multiprocessing_context dataloader_in_order skip_memory_metrics
        use_legacy_prediction_loop push_to_hub resume_from_checkpoint hub_model_id hub_strategy hub_token
        hub_private_repo hub_always_push hub_revision gradient_checkpointing_kwargs activation_checkpointing_kwargs
        include_inputs_for_metrics include_for_metrics eval_do_concat_batches fp16_backend push_to_hub_model_id
        push_to_hub_organization push_to_hub_token mp_parameters auto_find_batch_size full_determinism torchdynamo
        ray_scope ddp_timeout torch_compile_backend torch_compile_mode dispatch_batches split_batches
        include_tokens_per_second include_num_input_tokens_seen neftune_noise_alpha optim_target_modules
        batch_eval_metrics eval_on_start eval_use_gather_object average_tokens_across_devices liger_kernel_config
        use_cache project trackio_space_id trackio_bucket_id trackio_static_space_id enable_jit_checkpoint
        train_sampling_strategy save_strategy adafactor use_liger_kernel use_liger
        sortish_sampler predict_with_generate generation_max_length generation_num_beams generation_config
        chat_template_path dataset_text_field dataset_kwargs dataset_num_proc dataset_batch_size eos_token
        pad_token shuffle_dataset packing_strategy padding_free pad_to_multiple_of eval_packing
        completion_only_loss assistant_only_loss loss_type activation_offloading num_of_sequences chars_per_token
        use_flash_attention dataset_name dataset_config dataset_train_split dataset_test_split dataset_streaming
        gradient_checkpointing_use_reentrant ignore_bias_buffers model_revision trust_remote_code
        lora_target_parameters lora_modules_to_save lora_task_type use_rslora use_dora bnb_4bit_quant_storage
        bnb_4bit_compute_dtype load_in_8bit model_name dataset_mixture tokenizer_name_or_path
        torch_dtype dtype model_init_kwargs attn_implementation
        """.split()),
    "axolotl": frozenset("""
        base_model model_type tokenizer_type tokenizer_config trust_remote_code strict datasets test_datasets
        dataset_prepared_path val_set_size output_dir eval_sample_packing pad_to_sequence_len lora_model_dir
        lora_target_modules lora_fan_in_fan_out lora_modules_to_save wandb_project wandb_entity wandb_watch
        wandb_name wandb_log_model lr_scheduler learning_rate train_on_inputs group_by_length tf32
        early_stopping_patience resume_from_checkpoint local_rank logging_steps warmup_ratio warmup_steps
        evals_per_epoch eval_steps eval_table_size weight_decay special_tokens tokens chat_template debug
        hub_model_id hub_strategy seed max_grad_norm adam_beta1 adam_beta2 adam_epsilon loss_watchdog_threshold
        loss_watchdog_patience dataset_processes shuffle_merged_datasets eval_max_new_tokens save_first_step
        save_safetensors saves_per_epoch gptq xformers_attention eager_attention s2_attention low_cpu_mem_usage
        gradient_checkpointing_kwargs plugins liger_rms_norm liger_glu_activation liger_fused_linear_cross_entropy
        liger_rope liger_cross_entropy liger_layer_norm torch_compile_backend fsdp_version fsdp_config
        bfloat16 float16 batch_size max_steps save_strategy lora_target_linear peft_use_dora peft_use_rslora
        unfrozen_parameters dataset_exact_deduplication default_system_message remove_unused_columns
        """.split()),
    "llamafactory": frozenset("""
        trust_remote_code do_train dataset eval_dataset template overwrite_cache preprocessing_num_workers
        dataloader_num_workers output_dir logging_steps plot_loss overwrite_output_dir save_only_model report_to
        learning_rate lr_scheduler_type warmup_ratio warmup_steps ddp_timeout resume_from_checkpoint val_size
        per_device_eval_batch_size eval_strategy eval_steps weight_decay max_grad_norm adapter_name_or_path
        export_dir export_size export_device export_legacy_format create_new_adapter use_dora use_rslora
        additional_target pissa_init pissa_iter pissa_convert loraplus_lr_ratio quantization_method
        flash_attn max_samples stage finetuning_type quantization_bit lora_rank lora_target cutoff_len
        freeze_trainable_layers freeze_trainable_modules freeze_extra_modules pure_bf16 enable_liger_kernel
        use_unsloth rope_scaling shift_attn mixture_of_depths use_unsloth_gc upcast_layernorm upcast_lmhead_output
        train_from_scratch image_max_pixels video_max_pixels media_dir tokenized_path streaming buffer_size
        mix_strategy interleave_probs mask_history train_on_prompt neat_packing packing tool_format
        default_system ignore_pad_token_for_loss seed run_name push_to_hub hub_model_id logging_dir save_strategy
        predict_with_generate do_eval do_predict include_num_input_tokens_seen
        """.split()),
    "accelerate": frozenset("""
        compute_environment debug distributed_type downcast_bf16 machine_rank main_training_function
        mixed_precision num_machines num_processes rdzv_backend same_network tpu_env tpu_use_cluster tpu_use_sudo
        use_cpu gpu_ids main_process_ip main_process_port enable_cpu_affinity dynamo_config deepspeed_config
        fsdp_config megatron_lm_config ipex_config mpirun_config parallelism_config fp8_config
        """.split()),
    "deepspeed": frozenset(),
    # peft 0.21 LoraConfig fields without effect on memory, time or disk (or only noted, like rank_pattern)
    "peft": frozenset("""
        auto_mapping revision inference_mode fan_in_fan_out bias use_rslora init_lora_weights layers_pattern
        rank_pattern alpha_pattern megatron_config megatron_core trainable_token_indices loftq_config eva_config
        corda_config use_qalora qalora_group_size layer_replication runtime_config lora_bias target_parameters
        exclude_modules alora_invocation_tokens arrow_config ensure_weight_tying peft_version kasa_config
        lora_ga_config monteclora_config use_bdlora velora_config
        """.split()),
}


def _unused_keys(fmt: str, data: dict[str, Any], used: set[str], file: str) -> tuple[list[str], list[Msg]]:
    known = _KNOWN_IGNORED[fmt]
    ignored, notes = [], []
    vocabulary = sorted(known | used)
    for key in data:
        if key in used or key.startswith("__"):
            continue
        if key in known or fmt == "deepspeed":
            ignored.append(key)
            continue
        close = difflib.get_close_matches(key, vocabulary, n=1, cutoff=0.8)
        if close:
            notes.append(msg("config.unknown_key_close", file=file, key=key, close=close[0]))
        else:
            notes.append(msg("config.unknown_key", file=file, key=key, format=fmt))
    return ignored, notes


# -- combining files ------------------------------------------------------------------------------------------


def import_configs(paths: Sequence[str | Path], overridden: Iterable[str] = ()) -> ConfigImport:
    """Read each config file, tell its format from its keys, and combine what they say into plan fields.

    ``overridden``: plan fields the caller sets itself (flags); files may disagree about those.
    Raises PlanError naming the file (and key) for a missing, unreadable or unrecognised file, an optimizer name
    no tool uses, bf16 and fp16 both on, or two files that say different things about one field.
    """
    files: list[tuple[str, str]] = []
    claims: list[Claim] = []
    ignored: list[tuple[str, tuple[str, ...]]] = []
    notes: list[Msg] = []
    queue: list[tuple[Path, str | None, dict[str, Any] | None]] = [(Path(p), None, None) for p in paths]
    seen: set[str] = set()
    while queue:
        path, referenced_by, inline = queue.pop(0)
        name = str(path) if inline is None else f"{path}:deepspeed"
        if name in seen:
            continue
        seen.add(name)
        data = inline if inline is not None else read_config(path)
        fmt = "deepspeed" if inline is not None else detect_format(data, str(path))
        if referenced_by is not None and fmt != "deepspeed":
            raise PlanError("from", msg("error.config.not_deepspeed", file=name, key=referenced_by))
        reader = _Reader(name, data)
        _READERS[fmt](reader, path.parent)
        files.append((name, fmt))
        claims += reader.claims
        notes += reader.notes
        for target, key, how in reader.follow:
            if how == "inline":
                queue.append((target, key, reader.data["__inline_deepspeed__"]))
            else:
                queue.append((target, f"{name}: {key}", None))
        keys, unknown = _unused_keys(fmt, data, reader.used, name)
        if keys:
            ignored.append((name, tuple(keys)))
        notes += unknown
    decided, more_notes = _combine(claims, set(overridden))
    notes += more_notes
    return ConfigImport(tuple(files), tuple(decided), tuple(ignored), tuple(notes))


def _family(precision: str) -> str:
    return precision.split("-")[0]


def _combine(claims: list[Claim], overridden: set[str]) -> tuple[list[Claim], list[Msg]]:
    notes: list[Msg] = []
    by_field: dict[str, list[Claim]] = {}
    for c in claims:
        by_field.setdefault(c.field, []).append(c)
    chosen: dict[str, Claim] = {}
    for name, group in by_field.items():
        if name == "__auto__":
            continue
        strong = [c for c in group if not c.weak] or group
        first = strong[0]
        for other in strong[1:]:
            if _same(name, first.value, other.value) or name in overridden:
                continue
            if name == "precision" and _family(first.value) == _family(other.value):
                # same 16-bit format, pure vs mixed: DeepSpeed's optimizer keeps fp32 masters whatever was loaded
                ds = next((c for c in (first, other) if c.rule == msg("config.rule.ds_mixed")), None)
                if ds is not None:
                    first = ds
                    continue
            raise PlanError(name, msg("error.config.conflict", field=name, value=_show(first.value),
                                      file=first.file, key=first.key, other_value=_show(other.value),
                                      other_file=other.file, other_key=other.key))
        for weak in group:
            if weak.weak and weak not in strong and not _same(name, weak.value, first.value):
                notes.append(msg("config.weak_overridden", field=name, value=_show(weak.value), file=weak.file,
                                 key=weak.key, chosen=_show(first.value), chosen_file=first.file))
        chosen[name] = first
    _derive(chosen, notes)
    for auto in by_field.get("__auto__", ()):
        target = _AUTO_FIELDS.get(auto.value)
        holder = chosen.get(target) if target else None
        if holder is not None:
            notes.append(msg("config.auto_deferred", file=auto.file, key=auto.key, field=target,
                             value=_show(holder.value), source=holder.file))
        else:
            notes.append(msg("config.auto_unset", file=auto.file, key=auto.key))
    order = {n: i for i, n in enumerate(field_names())}
    return sorted(chosen.values(), key=lambda c: order.get(c.field, len(order))), notes


_AUTO_FIELDS = {"zero_optimization.stage": "sharding", "bf16.enabled": "precision", "fp16.enabled": "precision",
                "train_micro_batch_size_per_gpu": "batch_size", "gradient_accumulation_steps": "grad_accum",
                "train_batch_size": "gpus"}


def _same(name: str, a: Any, b: Any) -> bool:
    if name == "lora_targets":
        return tuple(a) == tuple(b) if not isinstance(a, str) and not isinstance(b, str) else a == b
    return a == b


def _derive(chosen: dict[str, Claim], notes: list[Msg]) -> None:
    """Fields that need others first: world size from DeepSpeed's total batch, run length from max_steps."""
    def value(name: str) -> Any:
        c = chosen.get(name)
        return c.value if c is not None else getattr(TrainPlan, name)

    total = chosen.pop("train_batch_size", None)
    if total is not None:
        per_gpu = value("batch_size") * value("grad_accum")
        if total.value % per_gpu:
            raise PlanError("gpus", msg("error.config.train_batch_size", file=total.file, total=total.value,
                                        micro=value("batch_size"), accum=value("grad_accum")))
        gpus = total.value // per_gpu
        if "gpus" in chosen and chosen["gpus"].value != gpus:
            other = chosen["gpus"]
            raise PlanError("gpus", msg("error.config.conflict", field="gpus", value=_show(gpus), file=total.file,
                                        key=total.key, other_value=_show(other.value), other_file=other.file,
                                        other_key=other.key))
        chosen["gpus"] = Claim("gpus", gpus, total.file, total.key,
                               msg("config.rule.world_size", total=total.value, micro=value("batch_size"),
                                   accum=value("grad_accum")))
    sharding = chosen.get("sharding")
    if sharding is not None and sharding.value != "ddp" and "gpus" not in chosen:
        chosen["gpus"] = Claim("gpus", DEFAULT_SHARDED_GPUS, sharding.file, sharding.key,
                               msg("config.rule.gpus_assumed", gpus=DEFAULT_SHARDED_GPUS))
    tokens_per_step = value("seq_len") * value("batch_size") * value("grad_accum") * value("gpus")
    steps = chosen.pop("max_steps", None)
    samples = chosen.pop("max_samples", None)
    if steps is not None:
        chosen["dataset_tokens"] = Claim("dataset_tokens", steps.value * tokens_per_step, steps.file, steps.key,
                                         msg("config.rule.max_steps", steps=steps.value,
                                             tokens_per_step=tokens_per_step))
        if "epochs" in chosen:
            notes.append(msg("config.max_steps_wins", file=steps.file, epochs_key=chosen["epochs"].key))
        chosen["epochs"] = Claim("epochs", 1, steps.file, steps.key, msg("config.rule.max_steps_epoch"))
    elif samples is not None:
        chosen["dataset_tokens"] = Claim("dataset_tokens", samples.value * value("seq_len"), samples.file,
                                         samples.key, msg("config.rule.max_samples", samples=samples.value,
                                                          seq_len=value("seq_len")))


__all__ = ["DEEPSPEED_OPTIMIZERS", "FORMATS", "OPTIMIZER_NAMES", "Claim", "ConfigImport", "detect_format",
           "import_configs", "optimizer_choice", "read_config"]
