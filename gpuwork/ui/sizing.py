"""The sizing form: controls bound to a TrainPlan, and what the estimators say about it.

``SizingForm``: model (preset, uploaded config.json or manual architecture), method, precision,
optimizer, batch shape, checkpointing, attention, LoRA, GPUs, sharding, data -> memory breakdown and
what-if charts, totals with their meanings, profile, time and disk, and a "Verify exactly" button
(fake-tensor trace of one step). Its pure update is ``size_plan`` (a ``SizingResult``) with
``whatif_series``; ``totals_html``, ``details_html`` and ``trace_html`` render results as HTML.
The shared pieces (labels, modes, friendly errors) are in ``gpuwork.ui.common``.

Example:
    >>> form = SizingForm({"model": "llama-3.2-1b", "method": "lora"})
    >>> form.controls["seq_len"].value = 4096
    >>> form.plan.seq_len, form.memory.device_total_bytes > 0
    (4096, True)

Every explanation (reasons, verdicts, disk rules, warnings) is a catalog message rendered in the form's
language (gpuwork.present.messages). Limitations: error messages of invalid plans are in English. The manual
architecture
builds a Llama-style decoder. The exact check runs in a background thread; a second press while it
runs is refused rather than queued.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import logging
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

from gpuwork.errors import CatalogError, GpuworkError, ModelError, PlanError
from gpuwork.estimate.memory import GIB, MemoryEstimate
from gpuwork.facts.block_profiles import block_profile_note
from gpuwork.facts.catalog import GpuSpec, get_gpu, load_gpus
from gpuwork.facts.model import CONFIG_BOUNDS, list_presets, spec_for_plan
from gpuwork.message import Msg, msg
from gpuwork.plan import Attention, Method, Optimizer, Precision, Sharding, Stack, TrainPlan, lengths_text
from gpuwork.present import charts
from gpuwork.present.messages import render, render_all, text, time_kind_code
from gpuwork.sizing import decide, estimate_disk, estimate_memory, match_profile, resolve, scaling
from gpuwork.ui import common
from gpuwork.ui.choices import CheckboxGroup
from gpuwork.ui.common import (
    CHECKBOX_LAYOUT,
    LANGS,
    MUTED,
    NOTE_COLOR,
    WIDE,
    LiveFigure,
    NumberText,
    describe,
    error_html,
    friendly,
    heading_html,
    html_output,
    note_html,
    one_line,
    plan_caption,
    plan_from,
    quiet,
    run_in_thread,
    table_html,
    ui,
)
from gpuwork.ui.share import plan_from_query, plan_query, share_html
from gpuwork.units import GB, fmt_number, fmt_seconds, fmt_size, unit

_log = logging.getLogger(__name__)

DEFAULT_GPUS = ("rtx4090", "l40s", "h100_sxm")  # the profiles' reference cards (gpuwork.estimate.profiles)
WHATIF_VALUES = {
    "seq_len": (256, 512, 1024, 2048, 4096, 8192, 16384, 32768),
    "batch_size": (1, 2, 4, 8, 16, 32, 64),
}
WHATIF_METHODS = tuple(m.value for m in Method)
# A Llama-3.2-1B-shaped decoder as the starting point of the manual architecture fields.
MANUAL_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                 "intermediate_size", "vocab_size")
MANUAL_DEFAULTS = {"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
                   "num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256}
_CONTROL_LAYOUT = {"width": "380px"}


def _gib(n_bytes: float, lang: str = "en") -> str:
    """GiB with two decimals, no unit (the column says GiB)."""
    return fmt_number(n_bytes / GIB, lang, 2)


# -- model configs written by the form ---------------------------------------------------------------


def manual_config(values: Mapping[str, Any]) -> dict[str, Any]:
    """A Llama-style Hugging Face config dict from the six manual architecture fields.

    Raises ModelError with the field and the fix when a value is not a positive whole number or the
    heads do not divide the hidden size / each other (transformers' attention needs both).
    """
    out: dict[str, int] = {}
    for name in MANUAL_FIELDS:
        value = values.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
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


# -- the dataset: tokens, a size, or a file of documents ----------------------------------------------


DOCUMENTS_ACCEPT = ".txt,.md,.jsonl,.json,.csv"
# what one upload through the page's websocket can carry (Tornado's default message cap is 10 MiB); a larger
# dataset is typed as its size
DOCUMENTS_LIMIT_BYTES = 8_000_000


def data_size(n_bytes: float, lang: str = "en") -> str:
    """A dataset's size as people read it: GB from 1 GB up, MB below (two decimals under 1 MB)."""
    if n_bytes >= GB:
        return fmt_size(n_bytes, lang)
    return f"{fmt_number(n_bytes / 1e6, lang, 2 if n_bytes < 1e6 else 1)}\u00a0{unit('MB', lang)}"


Note = Callable[[str], Msg]  # a note whose numbers are formatted in the language it is shown in


def dataset_input(text: str, tokens_before: int | None = None,
                  bytes_before: int | None = None) -> tuple[int, int | None, Note | None]:
    """The dataset field as typed -> (tokens, bytes or None, a note saying how the tokens were found).

    A count ("50M", "5e9", "2M tokens") is tokens; a size with its unit ("200 MB", "1.5 GB", "500MiB") is the
    raw text on disk, its tokens at ``BYTES_PER_TOKEN_TEXT`` (said in the note). An unchanged count keeps the size
    known before (from a link or a counted file). PlanError when the text is neither."""
    from gpuwork.estimate.disk import BYTES_PER_TOKEN_TEXT
    from gpuwork.plan import UPPER_BOUNDS
    from gpuwork.units import parse_count, parse_size

    try:
        tokens = parse_count(text, "dataset_tokens", minimum=None)
    except PlanError as not_count:
        try:
            size = parse_size(text, "dataset_bytes", maximum=UPPER_BOUNDS["dataset_bytes"])
        except PlanError:
            raise not_count from None
        if isinstance(text, str) and not any(c.isalpha() for c in text):
            raise not_count from None
        tokens = max(1, round(size / BYTES_PER_TOKEN_TEXT))
        return tokens, size, lambda lang: msg("ui.dataset_from_size", size=data_size(size, lang), tokens=tokens,
                                              ratio=BYTES_PER_TOKEN_TEXT)
    return tokens, (bytes_before if tokens_before is not None and tokens == tokens_before else None), None


@dataclass(frozen=True)
class DocumentCount:
    """The tokens of an uploaded file of documents: counted with the model's tokenizer when one is on this machine,
    else estimated at ``BYTES_PER_TOKEN_TEXT`` (``tokenizer`` None)."""

    name: str
    documents: int
    size_bytes: int  # the file as uploaded: the raw dataset on disk
    tokens: int
    model: str
    tokenizer: str | None  # where the tokenizer came from (a hub id in the local cache, a folder), or None
    ratio: float  # bytes per token used when there is no tokenizer

    def note(self, lang: str = "en") -> Msg:
        size = data_size(self.size_bytes, lang)
        if self.tokenizer is not None:
            return msg("ui.documents_counted", name=self.name, documents=self.documents, size=size,
                       tokens=self.tokens, model=self.model)
        return msg("ui.documents_ratio", name=self.name, documents=self.documents, size=size,
                   tokens=self.tokens, ratio=self.ratio, model=self.model)


def _document_texts(name: str, raw: bytes) -> list[str]:
    """The documents of a file: .txt/.md one document; .jsonl one per line (its "text" field, or the line); .json a
    list of strings or of objects with "text"; .csv one per row."""
    import csv
    import io

    from gpuwork.facts import reading

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanError("dataset_tokens", msg("error.config.unreadable", file=name)) from None
    lower = name.lower()
    if lower.endswith(".jsonl"):
        docs = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = line
            docs.append(obj["text"] if isinstance(obj, dict) and isinstance(obj.get("text"), str) else
                        obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False))
        return docs
    if lower.endswith(".json"):
        data = reading.parse_json(text, name)  # bounded: depth and digits checked
        items = data if isinstance(data, list) else [data]
        return [i["text"] if isinstance(i, dict) and isinstance(i.get("text"), str) else
                i if isinstance(i, str) else json.dumps(i, ensure_ascii=False) for i in items]
    if lower.endswith(".csv"):
        return [" ".join(row) for row in csv.reader(io.StringIO(text, newline="")) if any(c.strip() for c in row)]
    return [text] if text.strip() else []


def _local_tokenizer(model_ref: str) -> tuple[Any, str] | None:
    """The model's tokenizer if it is on this machine (the Hugging Face cache, or files next to a config.json);
    never downloaded."""
    candidates: list[str] = []
    path = Path(model_ref).expanduser()
    if path.suffix == ".json" and path.parent.is_dir():
        candidates.append(str(path.parent))
    elif model_ref in list_presets():
        from gpuwork.facts.configs.base import hub_presets

        candidates += [hub for hub, preset in hub_presets().items() if preset == model_ref]
    else:
        candidates.append(model_ref)
    try:
        from transformers import AutoTokenizer
    except ImportError:
        return None
    for ref in candidates:
        with contextlib.suppress(Exception):  # not cached, not a tokenizer folder: the stated ratio instead
            return AutoTokenizer.from_pretrained(ref, local_files_only=True), ref
    return None


def count_documents(name: str, content: bytes, model_ref: str, model_label: str | None = None) -> DocumentCount:
    """The tokens of an uploaded file of documents (its bytes, never a path): see ``DocumentCount``."""
    from gpuwork.estimate.disk import BYTES_PER_TOKEN_TEXT

    if len(content) > DOCUMENTS_LIMIT_BYTES:
        raise PlanError("dataset_tokens", msg("ui.documents_too_large", name=name,
                                              limit=data_size(DOCUMENTS_LIMIT_BYTES)))
    docs = [d for d in _document_texts(name, content) if d.strip()]
    if not docs:
        raise PlanError("dataset_tokens", msg("ui.documents_empty", name=name))
    found = _local_tokenizer(model_ref)
    label = model_label or model_ref
    if found is not None:
        tok, source = found
        tokens = sum(len(ids) for ids in tok(docs, add_special_tokens=False)["input_ids"])
        return DocumentCount(name, len(docs), len(content), max(tokens, 1), label, source, BYTES_PER_TOKEN_TEXT)
    text_bytes = sum(len(d.encode("utf-8")) for d in docs)
    return DocumentCount(name, len(docs), len(content), max(1, round(text_bytes / BYTES_PER_TOKEN_TEXT)), label, None,
                         BYTES_PER_TOKEN_TEXT)


# -- sizing: pure update -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SizingResult:
    """What the estimators say about one plan (no widgets)."""

    plan: TrainPlan
    memory: MemoryEstimate
    axis: str  # the what-if field: "seq_len" or "batch_size"
    whatif_values: tuple[int, ...]
    whatif: dict[str, list[int | None]]  # method -> device total bytes per value (None: invalid there)
    profile: Any = None  # gpuwork.estimate.profiles.ProfileMatch when that module is present
    disk: Any = None  # gpuwork.estimate.disk.DiskPlan
    notes: tuple[Msg, ...] = field(default_factory=tuple)  # parts that could not be estimated, one each
    scaling: tuple = ()  # gpuwork.estimate.timing.ScalingPoint on 1..64 of the profile's GPU
    decision: Any = None  # gpuwork.estimate.decision.Decision: the one answer the profile shows


def whatif_series(plan: TrainPlan, axis: str, values: Sequence[int], methods: Sequence[str] = WHATIF_METHODS
                  ) -> dict[str, list[int | None]]:
    """Device total per GPU (bytes) of ``plan`` with ``axis`` set to each value, for each method."""
    if axis not in WHATIF_VALUES:
        raise PlanError(axis, msg("error.ui.whatif_axis", value=repr(axis), choices=", ".join(WHATIF_VALUES)))
    spec = spec_for_plan(plan)
    out: dict[str, list[int | None]] = {}
    for method in methods:
        row: list[int | None] = []
        for value in values:
            try:
                row.append(estimate_memory(plan.replace(method=method, **{axis: value}), spec).device_total_bytes)
            except GpuworkError:
                row.append(None)
        out[method] = row
    return out


def size_plan(plan: TrainPlan, *, axis: str = "seq_len", constraints: Any = None) -> SizingResult:
    """Memory, what-if curves, profile (with its time estimate) and disk for one plan.

    The profile is the one answer's (``gpuwork.estimate.decision.decide`` under ``constraints``, the Offers tab's
    filters in the app): the card, count, nodes and mode the Advice, Offers and Request tabs show; the reference-card
    profile (``match_profile``) only when no offer fits.

    Raises GpuworkError when the memory estimate itself cannot be made; profile and disk failures
    become one-line ``notes`` so that the memory answer is still shown. The first note, for a family without a
    hand-written block model, is what the gather step's tracing said (as the CLI says it on stderr).
    """
    memory = estimate_memory(plan)
    values = tuple(sorted(set(WHATIF_VALUES[axis]) | {getattr(plan, axis)}))
    series = whatif_series(plan, axis, values)
    traced = block_profile_note(resolve(plan).spec)
    notes: list[Msg] = [] if traced is None else [traced]
    profile = disk = decision = None
    try:
        decision = decide(plan, constraints=constraints)
        profile = decision.match if decision.fits else match_profile(plan)
    except GpuworkError as exc:
        notes.append(msg("ui.not_estimated", what="profile", error=one_line(exc)))
    try:
        disk = estimate_disk(plan)
    except GpuworkError as exc:
        notes.append(msg("ui.not_estimated", what="disk", error=one_line(exc)))
    curve: tuple = ()
    if profile is not None and profile.time is not None:
        with contextlib.suppress(GpuworkError):  # the time line above already says what failed
            curve = scaling(profile.time.plan, profile.time.gpu_id)
    return SizingResult(plan, memory, axis, values, series, profile, disk, tuple(notes), curve, decision)


def memory_units_html(gpu: GpuSpec, lang: str = "en") -> str:
    """One card's memory the three ways people meet it (as sold in GB, nvidia-smi's GiB total, the GiB a plan
    may use) and why they differ: 80 GB, 79.6 GiB total, 75.7 GiB usable for an H100 SXM."""
    from gpuwork.estimate.offers import DEFAULT_SAFETY_MARGIN, usable_memory_bytes

    return ui("memory_units", lang, gpu=html.escape(gpu.display_name), card_gb=round(gpu.memory_bytes / GB),
              total_bytes=gpu.memory_total_bytes, usable_bytes=usable_memory_bytes(gpu), margin=DEFAULT_SAFETY_MARGIN)


def stack_html(plan: TrainPlan, lang: str = "en") -> str:
    """The software stack the plan's estimates are priced with ("stack: HF Trainer (eager)"), one line."""
    return (f'<p class="gpuwork-stack" style="margin:2px 0">'
            f'{html.escape(text("stack.label", lang, stack=plan.stack.value))}</p>')


def totals_html(plan: TrainPlan, est: MemoryEstimate, lang: str = "en", model_label: str | None = None,
                gpu: GpuSpec | None = None) -> str:
    """The three totals with what each one counts, the peak's phase, warnings and offloaded RAM."""
    rows = []
    for attr in charts.TOTALS:
        label, meaning = charts.total_label(attr, lang)
        rows.append((f"<b>{html.escape(label)}</b>", f"<b>{_gib(getattr(est, attr), lang)}</b>", html.escape(meaning)))
    table = table_html((ui("total", lang), ui("gib", lang), ui("meaning", lang)), rows, "gpuwork-totals", right=(1,))
    notes = [ui("peak_at", lang, phase=est.peak_phase),
             ui("params", lang, total=est.params.total, trainable=est.params.trainable)]
    if est.host_bytes:
        notes.append(html.escape(ui("host", lang, host_bytes=est.host_bytes)))
    warn = "".join(note_html("⚠ " + html.escape(one_line(render(w, lang))), NOTE_COLOR, "gpuwork-warning")
                   for w in est.warnings)
    return (f'<div class="gpuwork-summary"><p style="margin:2px 0">{html.escape(plan_caption(plan, model_label, lang))}'
            f"</p>{stack_html(plan, lang)}{table}<p style='margin:2px 0;color:{MUTED}'>{' '.join(notes)} {memory_units_html(gpu, lang) if gpu else ui('gib_note', lang)}</p>"
            f"{warn}</div>")


def details_html(result: SizingResult, lang: str = "en") -> str:
    """Profile (with reasons), time on the profile's card and the disk plan, as HTML."""
    parts: list[str] = []
    match = result.profile
    if match is not None:
        parts.append(heading_html(4, ui("h_profile", lang)))
        if match.profile is None:
            parts.append(f"<p>{ui('no_profile', lang)}</p>")
        elif result.decision is not None and result.decision.own:  # the user's cards: no rental mode to name
            parts.append("<p>" + html.escape(ui("profile_own", lang, id=match.profile.profile_id,
                                                name=match.profile.name, gpus=match.gpus,
                                                gpu=match.gpu_name or "?")) + "</p>")
        else:
            parts.append("<p>" + html.escape(ui("profile", lang, id=match.profile.profile_id, name=match.profile.name,
                                                gpus=match.gpus, gpu=match.gpu_name or "?",
                                                mode=match.profile.mode)) + "</p>")
        if result.decision is not None:  # the one answer, as the other tabs say it
            parts.append('<p class="gpuwork-decision" style="margin:2px 0"><b>'
                         + html.escape(render(result.decision.summary, lang)) + "</b></p>")
        items = [f"<li>+ {html.escape(r)}</li>" for r in render_all(match.reasons, lang)]
        items += [f"<li style='color:{MUTED}'>– " + html.escape(ui("not_profile", lang, id=k, why=v))
                  + "</li>" for k, v in sorted(match.rejected.items())]
        if match.changes:
            items.append("<li>" + html.escape(ui("changes", lang, what=match.changes)) + "</li>")
        items += [f"<li>{html.escape(ui('check', lang, what=c))}</li>" for c in match.checks]
        parts.append(f'<ul class="gpuwork-profile" style="margin:2px 0">{"".join(items)}</ul>')
        t = match.time
        if t is not None:
            parts.append(heading_html(4, ui("h_time", lang)))
            parts.append(stack_html(t.plan, lang))
            parts.append('<p class="gpuwork-time">' + ui(  # the template's own <b>; the GPU name escaped
                "time_line", lang, gpus=t.plan.gpus, gpu=html.escape(t.gpu_name), step_s=t.step_time_s,
                tokens_s=t.tokens_per_s, steps=t.steps, train_s=t.train_s, eval_s=t.eval_s,
                checkpoint_s=t.checkpoint_s, margin_s=t.margin_s, total_s=t.total_s, gpu_hours=t.gpu_hours) + "</p>")
            parts.append(note_html(html.escape(ui("peak", lang, peak=t.peak, tflops=t.peak_flops_per_gpu / 1e12))))
            parts.append(note_html(html.escape(ui("mfu", lang, mfu=t.mfu.value, note=t.mfu.note))))
            parts.append(step_parts_html(t, lang))
            if result.scaling:
                points = tuple(msg("cli.plan.scaling_point", gpus=pt.gpus, tokens_s=pt.tokens_per_s_per_gpu)
                               for pt in result.scaling)
                parts.append(note_html(html.escape(ui("scaling_line", lang, gpu=t.gpu_name, points=points))))
            for line in (*t.comm.verdict, t.data.verdict, *t.warnings):
                parts.append(note_html(html.escape(render(line, lang))))
    disk = result.disk
    if disk is not None:
        parts.append(heading_html(4, ui("h_disk", lang)))
        parts.append("<p>" + ui("disk_total", lang, total_bytes=disk.recommended_bytes,
                                margin_bytes=disk.margin_bytes) + "</p>")
        rows = [(html.escape(render(item.label, lang)), fmt_size(item.bytes, lang),
                 f"<span style='color:{MUTED}'>{html.escape(render(item.rule, lang))}</span>") for item in disk.lines]
        parts.append(table_html(("", "", ""), rows, "gpuwork-disk", right=(1,)))
        parts += [note_html(html.escape(n), NOTE_COLOR) for n in render_all(disk.notes, lang)]
    parts += [note_html(html.escape(n), NOTE_COLOR) for n in render_all(result.notes, lang)]
    return '<div class="gpuwork-details">' + "".join(parts) + "</div>"


_PART_COLORS = {"matmul": "#4c78a8", "attention": "#72b7b2", "memory": "#f58518", "optimizer": "#e45756",
                "launch overhead": "#bab0ac", "communication (exposed)": "#b279a2", "data wait": "#9d755d",
                "checkpoint offload (PCIe)": "#d67195"}


def step_parts_html(time: Any, lang: str = "en") -> str:
    """Where one step goes: a stacked bar (segments sized by their share) and a table of seconds and shares."""
    total = sum(time.breakdown.values()) or 1.0
    parts = sorted(((k, v) for k, v in time.breakdown.items() if v > 0), key=lambda kv: -kv[1])
    bar = "".join(
        f'<div title="{html.escape(text(time_kind_code(k), lang))}" style="width:{100 * v / total:.2f}%;'
        f'background:{_PART_COLORS.get(k, "#888")};height:14px"></div>' for k, v in parts)
    rows = [(html.escape(text(time_kind_code(k), lang)), ui("step_part", lang, seconds=v),
             fmt_number(100 * v / total, lang, 0) + " %") for k, v in parts]
    return ("<div class='gpuwork-step-parts'>" + note_html(html.escape(ui("step_parts", lang, stack=time.stack,
                                                                          gpu=time.gpu_name)))
            + f"<div style='display:flex;width:100%;max-width:520px;margin:2px 0'>{bar}</div>"
            + table_html(("", "", ""), rows, "gpuwork-step-table", right=(1, 2)) + "</div>")


def trace_html(plan: TrainPlan, traced: Any, est: MemoryEstimate | None, lang: str = "en") -> str:
    """Traced peak (fake-tensor step) next to the analytic estimate of the same quantity."""
    rows = [(html.escape(charts.term_label(k, lang)), _gib(v, lang)) for k, v in traced.breakdown.items() if v]
    parts = [note_html(html.escape(ui("trace_plan", lang, plan=plan_caption(plan, lang=lang)))),
             table_html((ui("category", lang), ui("gib", lang)), rows, "gpuwork-trace-breakdown", right=(1,))]
    total_rows = [(f"<b>{ui('traced', lang)}</b>", f"<b>{_gib(traced.peak_allocated_bytes, lang)}</b>")]
    if est is not None and est.plan == plan:
        analytic = est.traceable_bytes  # as `gpuwork trace` shows
        diff = analytic / traced.peak_allocated_bytes - 1 if traced.peak_allocated_bytes else float("nan")
        total_rows += [(ui("analytic", lang), _gib(analytic, lang)),
                       (ui("difference", lang), fmt_number(diff * 100, lang, 1) + "%")]
        parts.append(table_html(("", ui("gib", lang)), total_rows, "gpuwork-trace-totals", right=(1,)))
        parts.append(note_html(html.escape(ui("traced_phase", lang, traced=traced.peak_phase,
                                              analytic=est.peak_phase))))
    else:
        parts.append(table_html(("", ui("gib", lang)), total_rows, "gpuwork-trace-totals", right=(1,)))
    parts += [note_html(html.escape(ui("stand_in", lang, what=s)), NOTE_COLOR) for s in traced.stand_ins]
    parts.append(note_html(fmt_seconds(traced.elapsed_s, lang)))
    return '<div class="gpuwork-trace">' + "".join(parts) + "</div>"


# -- the sizing form ---------------------------------------------------------------------------------


class SizingForm(common.Panel):
    """Controls bound to a TrainPlan, and what the estimators say about it.

    State (after every change): ``plan`` and ``result`` (a SizingResult; None while the input is
    invalid), ``error`` (the one-line message shown, or None), ``traced`` (the last exact check).
    ``controls`` maps TrainPlan field -> widget; ``manual`` the architecture fields; ``upload`` the
    config.json upload; ``model_source`` chooses between preset, upload and manual.

    Args:
        plan: the starting plan (a TrainPlan or a dict of its fields).
        gpus: gpu_ids (or names) of the cards drawn as memory lines.
        lang: "en" or "ru".
        report: build plain figures and HTML for ``show`` (no live charts).
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, gpus: Sequence[str] = DEFAULT_GPUS,
                 lang: str = "en", report: bool = False):
        self.lang = lang if lang in LANGS else "en"
        self.report = report
        # the offer filters the one answer is decided under (the app passes its Offers tab's); None: the whole catalog
        self.filters: Callable[[], Mapping[str, Any]] | None = None
        self.have: Callable[[], Any] | None = None  # the cards the user owns ((count, GpuSpec)) or None: rent
        self.store = ConfigStore()
        self.plan: TrainPlan | None = None
        self.result: SizingResult | None = None
        self.error: str | None = None
        self.traced: Any = None
        self._listeners: list[Callable[[TrainPlan], Any]] = []
        self._error_listeners: list[Callable[[str], Any]] = []
        self._muted = False
        self._busy = threading.Lock()
        self._uploaded: tuple[str, dict[str, Any]] | None = None
        self._catalog = load_gpus()
        try:
            base = plan_from(plan)
            start_error = None
        except GpuworkError as exc:
            base, start_error = TrainPlan(), friendly(exc, self.lang)
        self.model_note = widgets.HTML()  # a link's Hub id sized as a bundled preset, said
        self.model_note.add_class("gpuwork-model-note")
        self._model_note: Msg | None = None
        base = self._hub_to_preset(base)
        self.base_plan = base
        self._build_controls(base, gpus)
        self.breakdown = LiveFigure("gpuwork-breakdown")
        self.whatif = LiveFigure("gpuwork-whatif")
        self.scaling = LiveFigure("gpuwork-scaling")  # tokens/s per GPU on 1..64 of the profile's card
        self.details = widgets.HTML()
        self.share = widgets.HTML()  # a link and a plan file that reproduce this plan (gpuwork.ui.share)
        self.share.add_class("gpuwork-share-box")
        self.refresh()
        if start_error:
            self._show_error(start_error)

    # -- construction ---------------------------------------------------------------------------

    def _build_controls(self, base: TrainPlan, gpus: Sequence[str]) -> None:
        lay = _CONTROL_LAYOUT
        presets = list_presets()
        source = "preset"
        model_value = base.model
        if base.model not in presets:
            if Path(base.model).expanduser().exists() or base.model.endswith(".json"):
                source = "upload"
                with contextlib.suppress(GpuworkError, OSError):
                    from gpuwork.facts.model import load_config

                    config, _name = load_config(base.model)
                    self._uploaded = (Path(base.model).name, config)
            else:
                presets = [base.model, *presets]  # a hub id: kept as given
            model_value = base.model if base.model in presets else presets[0]
        self.model_source = widgets.ToggleButtons(options=self._source_options(), value=source,
                                                  style={"description_width": "170px", "button_width": "96px"})
        # a model's config.json, or training configs (several at once combine, as --from does)
        self.upload = widgets.FileUpload(accept=UPLOAD_ACCEPT, multiple=True)
        self.upload_name = widgets.HTML()
        self.upload_report = widgets.HTML()  # what an uploaded training config set, defaulted and ignored
        self.upload_report.add_class("gpuwork-upload-report")
        self.training_upload: TrainingUpload | None = None
        self.manual = {name: NumberText(value=MANUAL_DEFAULTS[name], style=WIDE, layout=lay)
                       for name in MANUAL_FIELDS}
        c: dict[str, widgets.ValueWidget] = {
            "model": widgets.Dropdown(options=presets, value=model_value, style=WIDE, layout=lay),
            "method": widgets.Dropdown(options=self._method_options(), value=base.method.value, style=WIDE,
                                       layout=lay),
            "precision": widgets.Dropdown(options=[p.value for p in Precision], value=base.precision.value,
                                          style=WIDE, layout=lay),
            "optimizer": widgets.Dropdown(options=[o.value for o in Optimizer], value=base.optimizer.value,
                                          style=WIDE, layout=lay),
            "seq_len": NumberText(value=base.seq_len, kind="length", style=WIDE, layout=lay),  # "4k" = 4,096
            "batch_size": NumberText(value=base.batch_size, style=WIDE, layout=lay),
            "grad_accum": NumberText(value=base.grad_accum, style=WIDE, layout=lay),
            "grad_checkpointing": widgets.Checkbox(value=base.grad_checkpointing, indent=True, style=WIDE,
                                                   layout=CHECKBOX_LAYOUT),
            "attention": widgets.Dropdown(options=[a.value for a in Attention], value=base.attention.value,
                                          style=WIDE, layout=lay),
            "stack": widgets.Dropdown(options=[st.value for st in Stack], value=base.stack.value, style=WIDE,
                                      layout=lay),
            # fixed, packed or a LEN:COUNT histogram: reserved memory follows the batches' lengths
            "lengths": widgets.Text(value=lengths_text(base.lengths), continuous_update=False, style=WIDE,
                                    layout=lay),
            "lora_r": NumberText(value=base.lora_r, style=WIDE, layout=lay),
            # module names differ between architectures (q_proj / c_attn / query): free text, checked by
            # the estimator, whose message lists the model's linear modules
            "lora_targets": widgets.Text(value=",".join(base.lora_targets), continuous_update=False, style=WIDE,
                                         layout=lay),
            "gpus": NumberText(value=base.gpus, style=WIDE, layout=lay),
            "sharding": widgets.Dropdown(options=[s.value for s in Sharding], value=base.sharding.value,
                                         style=WIDE, layout=lay),
            "dataset_tokens": NumberText(value=base.dataset_tokens, style=WIDE, layout=lay),
            "epochs": NumberText(value=base.epochs, kind="number", style=WIDE, layout=lay),
        }
        self.controls = c
        # the dataset as a file of documents: its tokens counted (the model's tokenizer, else the stated ratio)
        self.documents = widgets.FileUpload(accept=DOCUMENTS_ACCEPT, multiple=False)
        self.documents.add_class("gpuwork-documents")
        self.documents.observe(self._on_documents, names="value")
        self.dataset_note = widgets.HTML()
        self.dataset_note.add_class("gpuwork-dataset-note")
        # (tokens, bytes, note) the dataset field stands for while it shows those tokens: a link's or a counted
        # file's size is kept until another number is typed
        self._dataset_known: tuple[int, int | None, Note | None] = (base.dataset_tokens, base.dataset_bytes, None)
        self._dataset_said: Note | None = None
        ids = []
        for g in gpus:
            with contextlib.suppress(CatalogError):
                ids.append(get_gpu(g, self._catalog).gpu_id)
        # a checkbox per card: choosing several needs no Ctrl+click
        self.gpu_select = CheckboxGroup(options=self._gpu_options(), value=tuple(ids), layout={"width": "100%"})
        self.axis = widgets.ToggleButtons(options=self._axis_options(), value="seq_len",
                                          style={"description_width": "initial", "button_width": "170px"})
        self.verify_button = widgets.Button(icon="search", layout={"width": "300px"})
        self.verify_button.add_class("gpuwork-verify")
        self.verify_out = widgets.HTML()
        self.message = widgets.HTML()
        self.message.add_class("gpuwork-message")
        self.totals = widgets.HTML()
        self.totals.add_class("gpuwork-result")
        self.headings = {key: widgets.HTML() for key in ("h_model", "h_training", "h_gpus", "h_totals", "h_verify")}
        for name, control in {**c, **{f"manual-{k}": v for k, v in self.manual.items()}}.items():
            control.add_class(f"gpuwork-{name.replace('_', '-')}")  # stable hooks for browser tests
        self.model_source.add_class("gpuwork-model-source")
        self.upload.add_class("gpuwork-upload")
        for control in [*c.values(), *self.manual.values(), self.gpu_select, self.axis]:
            control.observe(self._on_change, names="value")
        self.model_source.observe(self._on_source, names="value")
        self.upload.observe(self._on_upload, names="value")
        self.verify_button.on_click(lambda _b: self._start(self.verify))
        self._apply_labels()

    def _source_options(self) -> list[tuple[str, str]]:
        return [(ui(f"src_{v}", self.lang), v) for v in ("preset", "upload", "manual")]

    def _axis_options(self) -> list[tuple[str, str]]:
        return [(ui(f"axis_{v}", self.lang), v) for v in ("seq_len", "batch_size")]

    def _method_options(self) -> list[tuple[str, str]]:
        return [(ui("method_option", self.lang, value=m), m.value) for m in Method]

    def _gpu_options(self) -> list[tuple[str, str]]:
        return [(f"{g.display_name} ({fmt_number(g.memory_gb, self.lang, 0)} {unit('GB', self.lang)})", g.gpu_id)
                for g in self._catalog.values()]

    def _apply_labels(self) -> None:
        lang = self.lang
        describe({**self.controls, **self.manual, "model_source": self.model_source, "upload": self.upload,
                  "candidates": self.gpu_select, "axis": self.axis, "verify": self.verify_button}, lang)
        self.verify_button.tooltip = ui("verify_hint", lang)
        self.controls["dataset_tokens"].description = ui("dataset", lang)
        self.controls["dataset_tokens"].placeholder = ui("dataset_hint", lang)
        self.documents.description = ui("documents", lang)
        self.documents.tooltip = ui("documents_hint", lang)
        self.controls["lora_targets"].placeholder = ui("lora_targets_hint", lang)
        self.controls["lengths"].placeholder = ui("lengths_hint", lang)
        for key, heading in self.headings.items():
            heading.value = heading_html(4, ui(key, lang))
        with self._mute():
            for control, options in ((self.model_source, self._source_options()), (self.axis, self._axis_options()),
                                     (self.controls["method"], self._method_options()),
                                     (self.gpu_select, self._gpu_options())):
                value = control.value
                control.options = options
                control.value = value
        self._update_visibility()

    @contextlib.contextmanager
    def _mute(self) -> Iterator[None]:
        before, self._muted = self._muted, True
        try:
            yield
        finally:
            self._muted = before

    # -- state ------------------------------------------------------------------------------------

    @property
    def memory(self) -> MemoryEstimate | None:
        return self.result.memory if self.result else None

    def on_plan(self, callback: Callable[[TrainPlan], Any]) -> None:
        """Call ``callback(plan)`` after every valid change (the app keeps other tabs in step)."""
        self._listeners.append(callback)

    def on_error(self, callback: Callable[[str], Any]) -> None:
        """Call ``callback(message)`` whenever the input becomes invalid (the app clears the other tabs)."""
        self._error_listeners.append(callback)

    def apply_plan(self, plan: TrainPlan | Mapping[str, Any]) -> None:
        """Set every control from ``plan`` (an advisor's suggestion, a plan file, a link) and re-estimate once.

        A preset model switches the form to the preset list; any other model keeps the form's model source."""
        plan = plan_from(plan)
        plan = self._hub_to_preset(plan)
        options = list(self.controls["model"].options)
        if (plan.model not in options and self.model_source.value == "preset"
                and not Path(plan.model).expanduser().exists()):
            # a name the list lacks (a typo in a link, an unknown Hub id): tried as given, so that its own message
            # says what is wrong, instead of the form sizing the preset it showed before
            with self._mute():
                self.controls["model"].options = [plan.model, *list_presets()]
            options = list(self.controls["model"].options)
        self._take_plan(plan, source="preset" if plan.model in options else self.model_source.value)

    def _hub_to_preset(self, plan: TrainPlan) -> TrainPlan:
        """A Hub id of a bundled preset ("meta-llama/Llama-3.1-8B") -> that preset, said under the model."""
        self.model_note.value = ""
        if plan.model in list_presets() or "/" not in plan.model or Path(plan.model).expanduser().exists():
            return plan
        from gpuwork.facts.configs.base import hub_presets

        preset = hub_presets().get(plan.model.strip().lower())
        if preset is None:
            return plan
        self._model_note = msg("ui.link_hub_preset", model=plan.model, preset=preset)
        self.model_note.value = note_html(html.escape(render(self._model_note, self.lang)))
        return plan.replace(model=preset)

    def candidate_gpus(self) -> list[GpuSpec]:
        return [self._catalog[g] for g in self.gpu_select.value if g in self._catalog]

    def model_label(self) -> str:
        source = self.model_source.value
        if source == "upload":
            return self._uploaded[0] if self._uploaded else "config.json"
        if source == "manual":
            m = {k: w.value.strip() for k, w in self.manual.items()}
            return (f"manual {m['num_hidden_layers']}×{m['hidden_size']} "
                    f"({m['num_attention_heads']}/{m['num_key_value_heads']} heads)")
        return str(self.controls["model"].value)

    def model_ref(self) -> str:
        """What TrainPlan.model gets: the preset name, or the path of a config written by the store."""
        source = self.model_source.value
        if source == "upload":
            if self._uploaded is None:
                raise ModelError(msg("ui.upload_first"))
            return self.store.path_for(self._uploaded[1])
        if source == "manual":
            return self.store.path_for(manual_config({k: w.number(k) for k, w in self.manual.items()}))
        return str(self.controls["model"].value)

    def query(self) -> str:
        """The URL query that reproduces the current plan ("" while the input is invalid)."""
        return plan_query(self.plan) if self.plan is not None else ""

    @classmethod
    def from_query(cls, query: str | Mapping[str, Any], **kwargs: Any) -> SizingForm:
        """A form for the plan a URL query describes (``plan_query``); a bad value shows the validation
        layer's message in the form, which starts from the default plan."""
        try:
            plan = plan_from_query(query)
        except GpuworkError as exc:
            form = cls(None, **kwargs)
            form._show_error(friendly(exc, form.lang))
            return form
        return cls(plan, **kwargs)

    def values(self) -> dict[str, Any]:
        """The TrainPlan fields the form sets (model resolved by ``model_ref``)."""
        out = {name: control.number(name) if isinstance(control, NumberText) else control.value
               for name, control in self.controls.items() if name != "dataset_tokens"}
        known_tokens, known_bytes, known_note = self._dataset_known
        tokens, size, note = dataset_input(self.controls["dataset_tokens"].value, known_tokens, known_bytes)
        if note is None and tokens == known_tokens:
            note = known_note
        out["dataset_tokens"], out["dataset_bytes"] = tokens, size
        self._dataset_said = note
        out["model"] = self.model_ref()
        return out

    # -- update -----------------------------------------------------------------------------------

    def _on_change(self, _change: Any = None) -> None:
        self.refresh()

    def _on_source(self, _change: Any = None) -> None:
        self._update_visibility()
        self.refresh()

    def _on_upload(self, change: Any) -> None:
        files = change["new"]
        if not files:
            return
        # a browser's names, shown: no folders, bounded; the content is bytes, never opened as a path
        items = [(common.upload_name(item, "config.json"), item.get("content")) for item in files]
        try:
            plan_file = _plan_file(items)
        except GpuworkError as exc:
            self._show_error(friendly(exc, self.lang))
            return
        if plan_file is not None:  # the plan file this form offers for download: the same plan again
            self.apply_plan(plan_file)
            return
        try:
            with quiet():
                model, training = parse_upload(items)
                plan = self._imported_plan(training, model) if training is not None else None
        except GpuworkError as exc:
            self._show_error(friendly(exc, self.lang))
            return
        except Exception as exc:  # noqa: BLE001 - the page must never show a traceback
            self._show_error(friendly(exc, self.lang))
            return
        if model is not None:
            self._uploaded = model
            self.upload_name.value = note_html(html.escape(model[0]))
        self.training_upload = training
        self._show_upload_report()
        if plan is None or training is None:  # a model config.json alone (no training config, no plan): as before
            if self.model_source.value != "upload":
                self.model_source.value = "upload"  # refreshes
            else:
                self.refresh()
            return
        self._take_plan(plan, source="preset" if training.model is not None or self._uploaded is None else "upload")

    def _on_documents(self, change: Any) -> None:
        files = change["new"]
        if not files:
            return
        item = files[0]
        name = common.upload_name(item, "documents.txt")
        try:
            content = bytes(item.get("content") or b"")
            with quiet():
                counted = count_documents(name, content, self.model_ref(), self.model_label())
        except Exception as exc:  # noqa: BLE001 - the page must never show a traceback
            self._show_error(friendly(exc, self.lang))
            return
        self._dataset_known = (counted.tokens, counted.size_bytes, counted.note)
        with self._mute():
            self.controls["dataset_tokens"].value = counted.tokens
        self.refresh()

    def _imported_plan(self, training: TrainingUpload, model: tuple[str, dict[str, Any]] | None) -> TrainPlan:
        """The imported plan, on the model the form can size: the configs' preset, else an uploaded config.json,
        else the form's current preset (a hub id or a path on the user's machine is not fetched from here)."""
        if model is not None:
            ref = self.store.path_for(model[1])
        elif training.model is not None:
            ref = training.model
        elif self._uploaded is not None:
            ref = self.store.path_for(self._uploaded[1])
        else:
            ref = str(self.controls["model"].value)
        return training.imported.plan(model=ref)

    def _take_plan(self, plan: TrainPlan, *, source: str) -> None:
        """Set every control from ``plan`` (fields without a control ride on ``base_plan``), then refresh once."""
        self.base_plan = plan
        self._dataset_known = (plan.dataset_tokens, plan.dataset_bytes, None)
        with self._mute():
            if source == "preset" and plan.model in self.controls["model"].options:
                self.controls["model"].value = plan.model
            self.model_source.value = source
            for name, control in self.controls.items():
                if name == "model":
                    continue
                value = getattr(plan, name)
                if name == "lora_targets":
                    value = ",".join(value) if isinstance(value, tuple | list) else str(value)
                elif name == "lengths":
                    value = lengths_text(value)
                elif hasattr(value, "value"):  # a str enum
                    value = value.value
                control.value = value
        self.refresh()

    def _show_upload_report(self) -> None:
        t = self.training_upload
        if t is None:
            self.upload_report.value = ""
            return
        lines = t.report_lines(self.lang)
        model = t.imported.fields.get("model")
        if model is None:  # said last: which model the numbers are for
            lines.append(ui("upload_model_none", self.lang, kept=self.model_label_for_upload()))
        elif t.model is None:
            lines.append(ui("upload_model_kept", self.lang, model=str(model), kept=self.model_label_for_upload()))
        body = "<br>".join(html.escape(line).replace("  ", "&nbsp;&nbsp;") for line in lines)
        self.upload_report.value = (f'<div class="gpuwork-note" style="color:{MUTED};font-family:monospace;'
                                    f'font-size:12px;white-space:normal">{body}</div>')

    def model_label_for_upload(self) -> str:
        """The model the form sizes after a training config named one it cannot fetch."""
        if self._uploaded is not None:
            return self._uploaded[0]
        return str(self.controls["model"].value)

    def _update_visibility(self) -> None:
        source = self.model_source.value
        self.controls["model"].layout.display = None if source == "preset" else "none"
        self.upload.layout.display = None if source == "upload" else "none"
        self.upload_name.layout.display = None if source == "upload" else "none"
        for control in self.manual.values():
            control.layout.display = None if source == "manual" else "none"
        adapters = self.controls["method"].value in ("lora", "qlora")
        for name in ("lora_r", "lora_targets"):
            self.controls[name].layout.display = None if adapters else "none"

    def constraints(self) -> dict[str, Any]:
        """``size_plan``'s ``constraints`` keyword: the offer filters (``filters``), unset ones left out; {} when
        the form has no filters (the whole catalog)."""
        from gpuwork.estimate.decision import Constraints

        if self.filters is None and self.have is None:
            return {}
        filters = dict(self.filters()) if self.filters is not None else {}
        return {"constraints": Constraints(filters={k: v for k, v in filters.items() if v is not None},
                                           have=self.have() if self.have is not None else None)}

    def refresh(self) -> None:
        """Rebuild the plan from the controls, estimate it and re-render; errors show one red line."""
        if self._muted:
            return
        self._update_visibility()
        try:
            with quiet():
                plan = self.base_plan.replace(**self.values())
                if self.model_source.value != "preset" and plan.model not in _SPEC_SEEN:
                    self.message.value = note_html(html.escape(ui("building", self.lang, name=self.model_label())))
                result = size_plan(plan, axis=self.axis.value, **self.constraints())
                _SPEC_SEEN.add(plan.model)
        except Exception as exc:  # noqa: BLE001 - the page must never show a traceback
            self._show_error(friendly(exc, self.lang))
            return
        self.plan, self.result, self.error = plan, result, None
        self._render()
        for callback in self._listeners:
            try:
                callback(plan)
            except Exception as exc:  # noqa: BLE001
                _log.error("plan listener failed", exc_info=exc)

    def redecide(self) -> None:
        """The offer filters changed: decide the current plan's answer again and re-render, without telling the
        plan's listeners (the plan is the same; the other tabs refresh themselves on the filters)."""
        if self.plan is None or self.result is None:
            return
        try:
            with quiet():
                self.result = size_plan(self.plan, axis=self.result.axis, **self.constraints())
        except Exception as exc:  # noqa: BLE001 - the page must never show a traceback
            self._show_error(friendly(exc, self.lang))
            return
        self._render()

    def _show_error(self, message: str) -> None:
        self.plan, self.result, self.error = None, None, one_line(message)
        self.message.value = error_html(message)
        self.totals.value = note_html(html.escape(ui("invalid", self.lang)))
        # nothing of the last valid plan stays on screen under the error: its details, link and charts
        self.details.value = ""
        self.share.value = ""
        if hasattr(self, "dataset_note"):
            self.dataset_note.value = ""
        for chart in (self.breakdown, self.whatif, self.scaling):
            chart.box.layout.visibility = "hidden"
        for callback in self._error_listeners:
            try:
                callback(self.error)
            except Exception as exc:  # noqa: BLE001
                _log.error("error listener failed", exc_info=exc)

    def _render(self) -> None:
        assert self.result is not None and self.plan is not None
        self.message.value = ""
        for chart in (self.breakdown, self.whatif, self.scaling):
            chart.box.layout.visibility = "visible"
        cards = self.candidate_gpus()
        self.totals.value = totals_html(self.plan, self.result.memory, self.lang, self.model_label(),
                                        gpu=cards[0] if cards else None)
        self.share.value = share_html(self.plan, self.lang, local_model=self.model_source.value != "preset")
        self.details.value = details_html(self.result, self.lang)
        self._show_dataset_note()
        if not self.report:
            self.breakdown.show(self.breakdown_figure())
            self.whatif.show(self.whatif_figure())
            scaling = self.scaling_figure()
            self.scaling.box.layout.display = "none" if scaling is None else None
            if scaling is not None:
                self.scaling.show(scaling)

    def _show_model_note(self) -> None:
        if self._model_note is not None and self.model_note.value:
            self.model_note.value = note_html(html.escape(render(self._model_note, self.lang)))

    def _show_dataset_note(self) -> None:
        note = self._dataset_said if self.result is not None else None
        self.dataset_note.value = note_html(html.escape(render(note(self.lang), self.lang))) if note is not None else ""

    def set_lang(self, lang: str) -> None:
        self.lang = lang if lang in LANGS else "en"
        self._apply_labels()
        if self.result is not None:
            self._render()
        elif self.error:
            self.refresh()  # the same controls fail again: the error is said in the new language
        if self.traced is not None and self.plan is not None:
            self.verify_out.value = trace_html(self.traced.plan, self.traced, self.memory, self.lang)
        self._show_upload_report()
        self._show_model_note()

    # -- figures (pure given the state) -----------------------------------------------------------

    def breakdown_figure(self, template: str | None = charts.TEMPLATE) -> go.Figure:
        assert self.result is not None
        return charts.memory_breakdown_figure(
            [self.result.memory], self.candidate_gpus(),
            labels=[f"{self.model_label()}, {self.result.plan.method.value}"], lang=self.lang, template=template)

    def whatif_figure(self, axis: str | None = None, template: str | None = charts.TEMPLATE) -> go.Figure:
        assert self.result is not None
        result = self.result
        if axis is not None and axis != result.axis:
            result = size_plan(result.plan, axis=axis, **self.constraints())
        return charts.whatif_figure(result.whatif_values, result.whatif, self.candidate_gpus(), field=result.axis,
                                    current=getattr(result.plan, result.axis), lang=self.lang, template=template)

    def scaling_figure(self, template: str | None = charts.TEMPLATE) -> go.Figure | None:
        """Tokens/s per GPU on 1..64 of the profile's card (None when the time could not be estimated)."""
        assert self.result is not None
        if not self.result.scaling:
            return None
        time = self.result.profile.time
        return charts.scaling_figure(self.result.scaling, gpu_name=time.gpu_name, lang=self.lang, template=template)

    # -- exact check ------------------------------------------------------------------------------

    def verify(self) -> Any:
        """Trace one step of the current plan under fake tensors (gpuwork.measure.trace); show traced vs analytic."""
        plan = self.plan
        if plan is None:
            self.verify_out.value = error_html(self.error or ui("invalid", self.lang))
            return None
        if not self._busy.acquire(blocking=False):
            self.verify_out.value = error_html(ui("busy", self.lang))
            return None
        self.verify_button.disabled = True
        self.verify_out.value = note_html(html.escape(ui("tracing", self.lang)))
        try:
            from gpuwork.measure.trace import trace_memory

            with quiet():
                traced = trace_memory(plan)
        except Exception as exc:  # noqa: BLE001
            self.verify_out.value = error_html(friendly(exc, self.lang))
            return None
        finally:
            self.verify_button.disabled = False
            self._busy.release()
        self.traced = traced
        self.verify_out.value = trace_html(plan, traced, self.memory if self.plan == plan else None, self.lang)
        return traced

    def _start(self, action: Callable[[], Any]) -> None:
        run_in_thread(action.__name__, action)

    # -- views ------------------------------------------------------------------------------------

    def controls_box(self) -> widgets.Widget:
        c = self.controls
        model = widgets.VBox([self.headings["h_model"], self.model_source, c["model"], self.model_note, self.upload,
                              self.upload_name,
                              self.upload_report, *self.manual.values()])
        training = widgets.VBox([self.headings["h_training"], c["method"], c["precision"], c["optimizer"],
                                 c["seq_len"], c["batch_size"], c["grad_accum"], c["grad_checkpointing"],
                                 c["attention"], c["stack"], c["lengths"], c["lora_r"], c["lora_targets"]])
        gpus = widgets.VBox([self.headings["h_gpus"], c["gpus"], c["sharding"], c["dataset_tokens"], self.documents,
                             self.dataset_note, c["epochs"],
                             self.gpu_select])
        box = widgets.VBox([model, training, gpus, self.share], layout={"min_width": "400px"})
        box.add_class("gpuwork-controls")
        return box

    def results_box(self) -> widgets.Widget:
        verify = widgets.VBox([self.headings["h_verify"], self.verify_button, self.verify_out])
        box = widgets.VBox([self.message, self.headings["h_totals"], self.totals, self.breakdown.box, self.axis,
                            self.whatif.box, self.details, self.scaling.box, verify],
                           layout={"flex": "1 1 auto", "min_width": "0"})
        box.add_class("gpuwork-results")
        return box

    def view(self) -> widgets.Widget:
        """The whole form: controls on the left, results on the right."""
        if self.report:
            raise GpuworkError(msg("error.ui.report_no_view"))
        box = widgets.HBox([self.controls_box(), self.results_box()], layout={"width": "100%"})
        box.add_class("gpuwork-sizing")
        return box

    def show(self, part: str, *, run: bool = False) -> None:
        """Display one part: "controls", "totals", "breakdown", "whatif", "details" or "verify".

        Interactive: the live widgets. Report: plain figures and HTML for the plan as it is.
        ``run=True`` with "verify" runs the exact check first.
        """
        if part == "verify" and run:
            self.verify()
        if self.report and self.result is None:
            common.display(html_output(error_html(self.error or ui("invalid", self.lang))))
            return
        super().show(part)

    def live_parts(self) -> dict[str, Callable[[], Any]]:
        return {"controls": lambda: widgets.VBox([self.message, self.controls_box()]),
                "totals": lambda: widgets.VBox([self.message, self.totals]),
                "breakdown": lambda: self.breakdown.box,
                "whatif": lambda: widgets.VBox([self.axis, self.whatif.box]),
                "details": lambda: widgets.VBox([self.details, self.scaling.box]),
                "share": lambda: self.share,
                "verify": lambda: widgets.VBox([self.verify_button, self.verify_out])}

    def static_parts(self) -> dict[str, Callable[[], list[Any]]]:
        return {
            "controls": lambda: [html_output(self._plan_table())],
            "totals": lambda: [html_output(self.totals.value)],
            "breakdown": lambda: [self.breakdown_figure()],
            "whatif": lambda: [self.whatif_figure("seq_len"), self.whatif_figure("batch_size")],
            "details": self._static_details,
            "verify": lambda: [html_output(self.verify_out.value
                                           or note_html(html.escape(ui("verify_hint", self.lang))))],
        }

    def _static_details(self) -> list[Any]:
        scaling = self.scaling_figure()
        return [html_output(self.details.value)] + ([scaling] if scaling is not None else [])

    def _plan_table(self) -> str:
        assert self.plan is not None
        rows = [(html.escape(k), html.escape(str(v))) for k, v in self.plan.as_dict().items()]
        rows[0] = ("model", html.escape(self.model_label()))
        return table_html((ui("plan_field", self.lang), ui("plan_value", self.lang)), rows, "gpuwork-plan")


    def close(self) -> None:
        """Remove the temporary config files."""
        self.store.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.store.close()


_SPEC_SEEN: set[str] = set()


__all__ = [
    "DEFAULT_GPUS",
    "MANUAL_DEFAULTS",
    "MANUAL_FIELDS",
    "WHATIF_METHODS",
    "WHATIF_VALUES",
    "ConfigStore",
    "SizingForm",
    "SizingResult",
    "details_html",
    "manual_config",
    "parse_config",
    "parse_upload",
    "size_plan",
    "totals_html",
    "trace_html",
    "whatif_series",
]
