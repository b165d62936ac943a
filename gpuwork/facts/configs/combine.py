"""Reading every file with its format's reader and combining their claims into plan fields."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.facts.configs.base import (
    AUTOCAST,
    DEFAULT_SHARDED_GPUS,
    FSDP,
    Claim,
    ConfigImport,
    Reader,
    read_config,
    show,
)
from gpuwork.facts.configs.registry import FORMAT_BY_NAME, detect_format
from gpuwork.facts.configs.wrap_size import size_wrap
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan, field_names


def _unused_keys(fmt: str, data: dict[str, Any], used: set[str], file: str) -> tuple[list[str], list[Msg]]:
    known = FORMAT_BY_NAME[fmt].ignored
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



def import_configs(paths: Sequence[str | Path], overridden: Iterable[str] | None = None) -> ConfigImport:
    """Read each config file, tell its format from its keys, and combine what they say into plan fields.

    ``overridden``: plan fields the caller sets itself (flags); files may disagree about those. Given (the CLI
    always gives its flags), files that name no model and no ``model`` among them are an error that says to add
    ``--model``; None leaves the model to the caller (the app's form has its own model field).
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
        reader = Reader(name, data)
        FORMAT_BY_NAME[fmt].read(reader, path.parent)
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
    given = None if overridden is None else set(overridden)
    decided, more_notes = _combine(claims, given or set())
    if given is not None and "model" not in given and not any(c.field == "model" for c in decided):
        raise PlanError("model", msg("error.config.no_model", files=", ".join(name for name, _ in files)))
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
        if name.startswith("__"):  # facts about the run, read below, not plan fields
            continue
        stated = [c for c in group if not c.default] or group  # a framework default yields to a stated value
        strong = [c for c in stated if not c.weak] or stated
        first = strong[0]
        for other in strong[1:]:
            if _same(name, first.value, other.value) or name in overridden:
                continue
            if name == "precision" and _family(first.value) == _family(other.value):
                # same 16-bit format, pure vs mixed: DeepSpeed's optimizer keeps fp32 masters whatever was loaded
                ds = next((c for c in (first, other) if c.rule is not None and c.rule.code == "config.rule.ds_master"), None)
                if ds is not None:
                    first = ds
                    continue
            raise PlanError(name, msg("error.config.conflict", field=name, value=show(first.value),
                                      file=first.file, key=first.key, other_value=show(other.value),
                                      other_file=other.file, other_key=other.key))
        for weak in group:
            if weak.weak and not weak.default and weak not in strong and not _same(name, weak.value, first.value):
                notes.append(msg("config.weak_overridden", field=name, value=show(weak.value), file=weak.file,
                                 key=weak.key, chosen=show(first.value), chosen_file=first.file))
        chosen[name] = first
    _fsdp_upcast(chosen, by_field, notes)
    size_wrap(chosen, by_field, notes)
    _derive(chosen, notes)
    for auto in by_field.get("__auto__", ()):
        target = _AUTO_FIELDS.get(auto.value)
        holder = chosen.get(target) if target else None
        if holder is not None:
            notes.append(msg("config.auto_deferred", file=auto.file, key=auto.key, field=target,
                             value=show(holder.value), source=holder.file))
        else:
            notes.append(msg("config.auto_unset", file=auto.file, key=auto.key))
    order = {n: i for i, n in enumerate(field_names())}
    return sorted(chosen.values(), key=lambda c: order.get(c.field, len(order))), notes


_AUTO_FIELDS = {"zero_optimization.stage": "sharding", "bf16.enabled": "precision", "fp16.enabled": "precision",
                "train_micro_batch_size_per_gpu": "batch_size", "gradient_accumulation_steps": "grad_accum",
                "train_batch_size": "gpus", "gradient_clipping": "grad_clip"}


def _fsdp_upcast(chosen: dict[str, Claim], by_field: dict[str, list[Claim]], notes: list[Msg]) -> None:
    """16-bit weights under accelerate's FSDP with mixed precision on train as fp32 masters.

    ``Accelerator.prepare`` (accelerate 0.30 and later, FSDP1 and FSDP2) upcasts every trainable parameter held in
    16 bits to fp32 when ``mixed_precision`` is not "no": fp32 weights, gradients and optimizer states under
    bf16/fp16 compute. axolotl's FSDP2 path replaces that preparation and keeps the loaded dtype.
    """
    precision, fsdp = chosen.get("precision"), by_field.get(FSDP, [])
    method = chosen.get("method")
    if (precision is None or precision.value not in ("bf16", "fp16") or not fsdp
            or (method is not None and method.value in ("lora", "qlora"))):
        return
    said = [c for c in by_field.get(AUTOCAST, []) if not c.weak] or by_field.get(AUTOCAST, [])
    if not said or said[0].value not in ("bf16", "fp16"):
        return
    mixed, source = said[0], fsdp[0]
    kept = next((c for c in fsdp if c.value == "axolotl-fsdp2"), None)
    if kept is not None:
        chosen["precision"] = dataclasses.replace(precision, rule=msg(
            "config.rule.both", first=precision.rule or msg("config.rule.as_stated"),
            second=msg("config.rule.axolotl_fsdp2_no_upcast", file=kept.file)))
        return
    value = f"{mixed.value}-mixed"
    chosen["precision"] = Claim("precision", value, precision.file, precision.key, msg(
        "config.rule.fsdp_upcast", dtype=precision.value, mixed=mixed.value, source=f"{source.file}: {source.key}",
        mixed_source=f"{mixed.file}: {mixed.key}"))
    # accelerate's bf16-mixed yielded to the 16-bit claim above; the upcast makes it right after all
    notes[:] = [n for n in notes if not (n.code == "config.weak_overridden" and n["field"] == "precision"
                                         and n["value"] == value)]


def _same(name: str, a: Any, b: Any) -> bool:
    if name == "lora_targets":
        return bool(tuple(a) == tuple(b) if not isinstance(a, str) and not isinstance(b, str) else a == b)
    return bool(a == b)


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
            raise PlanError("gpus", msg("error.config.conflict", field="gpus", value=show(gpus), file=total.file,
                                        key=total.key, other_value=show(other.value), other_file=other.file,
                                        other_key=other.key))
        chosen["gpus"] = Claim("gpus", gpus, total.file, total.key,
                               msg("config.rule.world_size", total=total.value, micro=value("batch_size"),
                                   accum=value("grad_accum")))
    sharding = chosen.get("sharding")
    precision = chosen.get("precision")
    if (sharding is not None and sharding.value in ("zero1", "zero2", "zero3") and precision is not None
            and str(precision.value).endswith("-mixed") and not precision.weak
            and (sharding.rule is None or sharding.rule.code != "config.rule.shard_grad_op")):  # FSDP's zero2
        # under DeepSpeed the training config's bf16/fp16 fills the DeepSpeed config ("auto"): DeepSpeed casts the
        # model to 16 bits and its optimizer keeps the fp32 masters (HF's DeepSpeed integration, engine.py)
        chosen["precision"] = Claim("precision", str(precision.value).removesuffix("-mixed"), precision.file,
                                    precision.key, msg("config.rule.both", first=precision.rule or msg(
                                        "config.rule.as_stated"), second=msg("config.rule.ds_master")))
    method = chosen.get("method")
    if method is not None and method.value == "qlora" and "kbit_upcast" not in chosen:
        # no file says whether the framework keeps prepare_model_for_kbit_training's fp32 upcast: peft's
        # documented QLoRA recipe does
        chosen["kbit_upcast"] = Claim("kbit_upcast", True, method.file, method.key,
                                      msg("config.rule.kbit_upcast_unknown"))
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

