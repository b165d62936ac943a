"""The sizing form's model and training files: a config written from the manual fields, uploaded configs.

``manual_config`` builds a Llama-style config from six numbers; ``parse_config`` reads an uploaded config.json;
``parse_upload`` sorts uploaded files into a model config, training configs (read by gpuwork.facts.configs) or a
saved plan; ``ConfigStore`` keeps config dicts as files, as gpuwork.facts.model reads a path.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.errors import GpuworkError, ModelError, PlanError
from gpuwork.facts.model import CONFIG_BOUNDS, list_presets
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
from gpuwork.ui import common
from gpuwork.ui.common import one_line
from gpuwork.units import is_whole

# A Llama-3.2-1B-shaped decoder as the starting point of the manual architecture fields.
MANUAL_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                 "intermediate_size", "vocab_size")
MANUAL_DEFAULTS = {"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
                   "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256}


# -- model configs written by the form ---------------------------------------------------------------


def manual_config(values: Mapping[str, Any]) -> dict[str, Any]:
    """A Llama-style Hugging Face config dict from the six manual architecture fields.

    Raises ModelError with the field and the fix when a value is not a positive whole number or the
    heads do not divide the hidden size / each other (transformers' attention needs both).
    """
    out: dict[str, int] = {}
    for name in MANUAL_FIELDS:
        value = values.get(name)
        if not is_whole(value, 1):
            raise ModelError(msg("error.ui.manual_whole", field=name, value=repr(value)))
        if value > CONFIG_BOUNDS[name]:  # a 100,000-layer model would take minutes to build, for nothing
            raise ModelError(msg("error.config.too_large", name="manual", field=name, value=repr(value),
                                 maximum=CONFIG_BOUNDS[name]))
        out[name] = value
    if out["hidden_size"] % out["num_attention_heads"]:
        raise ModelError(msg("error.ui.hidden_by_heads", hidden=out["hidden_size"],
                             heads=out["num_attention_heads"]))
    if out["num_attention_heads"] % out["num_key_value_heads"]:
        raise ModelError(msg("error.ui.heads_by_kv", heads=out["num_attention_heads"],
                             kv_heads=out["num_key_value_heads"]))
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **out,
            "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "hidden_act": "silu",
            "tie_word_embeddings": False, "rope_theta": 500000.0}


def parse_config(content: bytes, name: str = "config.json") -> dict[str, Any]:
    """The dict in an uploaded config.json: its bytes (at most common.UPLOAD_LIMIT_BYTES), never a path to
    open; ModelError when it is not a Hugging Face config."""
    from gpuwork.facts import reading

    content = common.upload_content({"name": name, "content": content}, "config")
    try:
        data = reading.parse_json(content.decode("utf-8"), name)  # bounded: depth and digits
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise ModelError(msg("error.ui.upload_json", name=name, reason=one_line(exc)[:120])) from None
    if not isinstance(data, dict) or "model_type" not in data:
        raise ModelError(msg("error.model.not_hf_config", path=name))
    return data


UPLOAD_ACCEPT = ".json,.yaml,.yml"  # a model's config.json, or the training configs gpuwork.facts.configs reads
_NOT_UPLOADED = "not-uploaded"  # a folder that never exists: references to files left behind point there


def _upload_mapping(content: bytes, name: str) -> dict[str, Any]:
    """The mapping in an uploaded JSON or YAML file (its bytes, checked against the upload limit), read by the
    bounded parsers of ``gpuwork.facts.reading`` (JSON depth and digits; YAML values with aliases expanded)."""
    from gpuwork.facts import reading

    content = common.upload_content({"name": name, "content": content}, "config")
    try:
        raw = content.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanError("from", msg("error.config.unreadable", file=name)) from None
    if name.lower().endswith(".json") or raw.lstrip().startswith("{"):
        try:
            data = reading.parse_json(raw, name)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ModelError(msg("error.ui.upload_json", name=name, reason=one_line(exc)[:120])) from None
    else:
        try:
            import yaml
        except ModuleNotFoundError:
            raise PlanError("from", msg("error.config.needs_yaml", file=name)) from None
        try:
            data = reading.parse_yaml(raw, name)  # safe types only, values counted while composed
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise PlanError("from", msg("error.config.bad_yaml", file=name, line=(mark.line + 1) if mark else 0,
                                        reason=str(getattr(exc, "problem", None) or type(exc).__name__))) from None
    if not isinstance(data, dict):
        raise PlanError("from", msg("error.config.not_mapping", file=name, kind=type(data).__name__))
    if not _within(data, _UPLOAD_MAX_VALUES):  # YAML aliases can make 1 MB expand to billions of values
        raise PlanError("from", msg("ui.upload_too_complex", name=name, limit=_UPLOAD_MAX_VALUES))
    return data


_UPLOAD_MAX_VALUES = 200_000  # values in one uploaded config, aliases expanded (a real one holds hundreds)


def _within(data: Any, budget: int) -> bool:
    """Whether ``data`` holds at most ``budget`` values, counting a shared (aliased) value each time it is used."""
    stack, seen = [data], 0
    while stack:
        item = stack.pop()
        seen += 1
        if seen > budget:
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


def _is_model_config(data: Mapping[str, Any]) -> bool:
    """A Hugging Face model config (config.json), not a training config; axolotl YAMLs hold model_type too."""
    from gpuwork.facts.configs import detect_format

    if not isinstance(data.get("model_type"), str):
        return False
    if "architectures" in data:
        return True
    try:
        detect_format(dict(data))
    except PlanError:
        return True
    return False


def _is_training_config(data: Mapping[str, Any]) -> bool:
    from gpuwork.facts.configs import detect_format

    try:
        detect_format(dict(data))
    except PlanError:
        return False
    return True


_MODEL_KEYS = ("model_name_or_path", "model_name", "base_model", "base_model_config")


def _keep_on_upload(data: dict[str, Any], uploaded: Mapping[str, Path], folder: Path) -> tuple[dict[str, Any],
                                                                                               list[Msg]]:
    """``data`` with its references to other files pointed inside ``folder``: never at the server's files.

    A DeepSpeed file named by ``deepspeed:`` (or accelerate's ``deepspeed_config_file``) is followed when it was
    uploaded together (matched by file name); else the reference points at a folder that does not exist, so
    the import reads the stage from the file name as it does for a missing file. A model given as a local path
    becomes that path's last part (a hub id or nothing): the server's folders are never looked at.
    """
    out, notes = dict(data), []

    def redirect(value: Any, key: str) -> Any:
        if not isinstance(value, str) or not value.strip():
            return value
        base = value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        if base in uploaded:
            return str(uploaded[base])
        notes.append(msg("ui.upload_reference", key=key, path=value))
        return str(folder / _NOT_UPLOADED / base)

    if "deepspeed" in out and not isinstance(out["deepspeed"], dict):
        out["deepspeed"] = redirect(out["deepspeed"], "deepspeed")
    ds = out.get("deepspeed_config")
    if isinstance(ds, dict) and "deepspeed_config_file" in ds:
        out["deepspeed_config"] = {**ds, "deepspeed_config_file": redirect(ds["deepspeed_config_file"],
                                                                           "deepspeed_config.deepspeed_config_file")}
    for key in _MODEL_KEYS:
        value = out.get(key)
        if isinstance(value, str) and value.strip().startswith(("/", "~", ".", "\\")):
            out[key] = str(folder / _NOT_UPLOADED / value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1])
    return out, notes


@dataclass(frozen=True)
class TrainingUpload:
    """Training configs uploaded to the form, imported (gpuwork.facts.configs) from their bytes."""

    names: tuple[str, ...]
    imported: Any  # gpuwork.facts.configs.ConfigImport
    notes: tuple[Msg, ...]  # references to files that were not uploaded
    folder: str  # where the bytes were written for the import (removed after); hidden from the report

    @property
    def model(self) -> str | None:
        """The bundled preset the configs name, or None (a hub id or a local path: not sized from here)."""
        model = self.imported.fields.get("model")
        return model if isinstance(model, str) and model in list_presets() else None

    def report_lines(self, lang: str = "en") -> list[str]:
        """What was understood, defaulted and ignored, one line each, in ``lang`` (file names as uploaded).

        The model is left out of the defaults when no file names one: the form sizes its own (said apart)."""
        named = "model" in self.imported.fields
        lines = [render(m, lang) for m in (*self.imported.report(() if named else ("model",)), *self.notes)]
        prefix = self.folder.rstrip("/") + "/"
        return [line.replace(prefix + _NOT_UPLOADED + "/", "").replace(prefix, "") for line in lines]


_PLAN_FIELDS = frozenset(TrainPlan().as_dict())


def _plan_file(files: Sequence[tuple[str, bytes]]) -> TrainPlan | None:
    """The plan in an uploaded plan file (``gpuwork.ui.share.plan_file_bytes``: TrainPlan fields as JSON, a
    "model" among them), or None when the upload is something else (a model's or a training config)."""
    if len(files) != 1 or not files[0][0].lower().endswith(".json"):
        return None
    name, content = files[0]
    from gpuwork.facts import reading

    try:
        data = reading.parse_json(common.upload_content({"name": name, "content": content}, "config")
                                  .decode("utf-8"), name)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, GpuworkError):
        return None  # parse_upload says what is wrong with it
    if not isinstance(data, dict) or "model" not in data or not set(data) <= _PLAN_FIELDS:
        return None
    return TrainPlan.from_dict(data)


def parse_upload(files: Sequence[tuple[str, bytes]]) -> tuple[tuple[str, dict[str, Any]] | None,
                                                               TrainingUpload | None]:
    """Uploaded files (name, bytes: never a path) -> (the model config.json, the training configs imported).

    Each file is at most ``common.UPLOAD_LIMIT_BYTES``. A file with ``model_type`` and ``architectures`` is a
    model's config.json (at most one); every other file is a training config (TrainingArguments / SFTConfig,
    axolotl, LLaMA-Factory, DeepSpeed, accelerate), imported together as ``gpuwork plan --from`` does.
    Raises GpuworkError naming the file for a file that is neither, or that cannot be read.
    """
    from gpuwork.facts.configs import import_configs

    model: tuple[str, dict[str, Any]] | None = None
    training: list[tuple[str, dict[str, Any]]] = []
    for name, content in files:
        data = _upload_mapping(content, name)
        if not _is_model_config(data) and not _is_training_config(data):
            keys = ", ".join(sorted(map(str, data))[:6]) or "-"
            raise ModelError(msg("ui.upload_unrecognised", name=name, keys=keys))
        if _is_model_config(data):
            if model is not None:
                raise ModelError(msg("ui.upload_two_models", first=model[0], second=name))
            model = (name, data)
        else:
            training.append((name, data))
    if not training:
        return model, None
    with tempfile.TemporaryDirectory(prefix="gpuwork-upload-") as tmp:
        folder = Path(tmp)
        paths: dict[str, Path] = {}
        for i, (name, _data) in enumerate(training):  # the name as uploaded; a numbered folder keeps twins apart
            safe = name.replace("/", "_").replace("\\", "_").lstrip(".") or "config.json"
            paths[name] = folder / (safe if safe not in {p.name for p in paths.values()} else f"{i}-{safe}")
        notes: list[Msg] = []
        for name, data in training:
            kept, more = _keep_on_upload(data, {p.name: p for p in paths.values()}, folder)
            notes += more
            paths[name].write_text(json.dumps(kept), encoding="utf-8")  # JSON is YAML too: one reader
        imported = import_configs([paths[name] for name, _ in training])
        return model, TrainingUpload(tuple(n for n, _ in training), imported, tuple(notes), str(folder))


class ConfigStore:
    """Config dicts as files (gpuwork.facts.model reads a path), in a TemporaryDirectory this object owns.

    Each distinct config gets its own folder named by a hash of its content, so a changed config never
    hits gpuwork.facts.model's cache of an earlier one. ``close()`` removes everything.
    """

    def __init__(self) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def path_for(self, config: Mapping[str, Any]) -> str:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="gpuwork-configs-")
        text = json.dumps(config, sort_keys=True, indent=1)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        folder = Path(self._tmp.name) / digest
        path = folder / "config.json"
        if not path.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return str(path)

    @property
    def folder(self) -> str | None:
        return self._tmp.name if self._tmp is not None else None

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


