"""The sizing form: controls bound to a TrainPlan, and what the estimators say about it.

``SizingForm``: model (preset, uploaded config.json or manual architecture), method, precision,
optimizer, batch shape, checkpointing, attention, LoRA, GPUs, sharding, data -> memory breakdown and
what-if charts, totals with their meanings, profile, time and disk, and a "Verify exactly" button
(fake-tensor trace of one step). Its pure update is ``size_plan`` (a ``SizingResult``) with
``whatif_series``; ``totals_html``, ``details_html`` and ``trace_html`` render results as HTML.
The shared pieces (labels, modes, friendly errors) are in ``gpuwork.ui.common``; the pure update and its HTML in
``gpuwork.ui.sizing_results``, the model and training files in ``gpuwork.ui.uploads``, the dataset field and
its documents in ``gpuwork.ui.documents`` (their public names are importable from here too).

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
import html
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

from gpuwork.errors import CatalogError, GpuworkError, ModelError
from gpuwork.estimate.memory import MemoryEstimate
from gpuwork.facts.catalog import GpuSpec, get_gpu, load_gpus
from gpuwork.facts.model import get_spec, list_presets
from gpuwork.message import Msg, msg
from gpuwork.plan import (
    TORCH_FSDP_SHARDINGS,
    Attention,
    CommOverlap,
    EvalKeep,
    FsdpWrap,
    Method,
    Optimizer,
    Precision,
    Recompute,
    SdpaBackend,
    Sharding,
    Stack,
    Task,
    TrainPlan,
    follow_method,
    is_packed,
    lengths_text,
)
from gpuwork.present import charts
from gpuwork.present.messages import render
from gpuwork.ui import common
from gpuwork.ui.choices import CheckboxGroup
from gpuwork.ui.common import (
    CHECKBOX_LAYOUT,
    LANGS,
    MUTED,
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
    plan_from,
    quiet,
    run_in_thread,
    table_html,
    ui,
)
from gpuwork.ui.documents import DOCUMENTS_ACCEPT, Note, count_documents, dataset_input
from gpuwork.ui.share import plan_from_query, plan_query, share_html
from gpuwork.ui.sizing_results import (
    WHATIF_METHODS,
    WHATIF_VALUES,
    SizingResult,
    details_html,
    memory_units_html,
    size_plan,
    totals_html,
    trace_html,
    whatif_series,
)
from gpuwork.ui.uploads import (
    MANUAL_DEFAULTS,
    MANUAL_FIELDS,
    UPLOAD_ACCEPT,
    ConfigStore,
    TrainingUpload,
    _plan_file,
    manual_config,
    parse_config,
    parse_upload,
)
from gpuwork.units import fmt_number, unit

_log = logging.getLogger(__name__)

DEFAULT_GPUS = ("rtx4090", "l40s", "h100_sxm")  # the profiles' reference cards (gpuwork.estimate.profiles)
_CONTROL_LAYOUT = {"width": "380px"}


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
            **self._checkpointing_controls(base, lay),
            **self._freeze_controls(base, lay),
            **self._switch_controls(base),
            **self._attention_controls(base, lay),
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
            # qlora only: whether the framework keeps peft's fp32 upcast of embeddings, norms and lm_head
            "kbit_upcast": widgets.Checkbox(value=base.kbit_upcast, indent=True, style=WIDE, layout=CHECKBOX_LAYOUT),
            **self._eval_controls(base, lay),
            **self._head_controls(base, lay),
            "gpus": NumberText(value=base.gpus, style=WIDE, layout=lay),
            **self._sharding_controls(base, lay),
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

    def _freeze_controls(self, base: TrainPlan, lay: Any) -> dict[str, widgets.ValueWidget]:
        """Freeze only: whether the backward runs through the frozen blocks too (TrainPlan.input_require_grads;
        "stack": unset, the stack's behaviour)."""
        return {"input_require_grads": widgets.Dropdown(options=self._input_grads_options(), style=WIDE, layout=lay,
                                                        value=_input_grads_choice(base.input_require_grads))}

    def _input_grads_options(self) -> list[tuple[str, str]]:
        return [(ui(f"input_require_grads_{v}", self.lang), v) for v in _INPUT_GRADS]

    def _switch_controls(self, base: TrainPlan) -> dict[str, widgets.ValueWidget]:
        """The step's switches: gradient clipping (off: the run never clips, torchtune without clip_grad_norm; no
        clipping pass priced), torch's deterministic mode, blocking launches (CUDA_LAUNCH_BLOCKING=1), TF32 matmuls,
        FP8 linear layers."""
        return {name: widgets.Checkbox(value=getattr(base, name), indent=True, style=WIDE, layout=CHECKBOX_LAYOUT)
                for name in ("grad_clip", "deterministic", "launch_blocking", "tf32", "fp8_linear")}

    def _eval_controls(self, base: TrainPlan, lay: Any) -> dict[str, widgets.ValueWidget]:
        """An in-run evaluation (blank batch: none priced): its batch, samples, what it keeps, accumulation."""
        return {"eval_batch_size": NumberText(value=_blank(base.eval_batch_size), style=WIDE, layout=lay),
                "eval_samples": NumberText(value=_blank(base.eval_samples), style=WIDE, layout=lay),
                "eval_keep": widgets.Dropdown(options=self._eval_keep_options(), value=base.eval_keep.value,
                                              style=WIDE, layout=lay),
                "eval_accum": NumberText(value=_blank(base.eval_accum), style=WIDE, layout=lay)}

    def _head_controls(self, base: TrainPlan, lay: Any) -> dict[str, widgets.ValueWidget]:
        """Masked LM only: the positions per sequence BERT's pre-training scripts gather before the head (blank:
        every position). Packed rows only: the documents' tokens when attention stays inside each (blank: the
        whole row)."""
        return {"mlm_predictions": NumberText(value=_blank(base.mlm_predictions), style=WIDE, layout=lay),
                "packed_document_tokens": NumberText(value=_blank(base.packed_document_tokens), style=WIDE,
                                                     layout=lay)}

    def _eval_keep_options(self) -> list[tuple[str, str]]:
        return [(ui(f"eval_keep_{k.value}", self.lang), k.value) for k in EvalKeep]

    def _sharding_controls(self, base: TrainPlan, lay: Any) -> dict[str, widgets.ValueWidget]:
        """The sharding; hsdp / hsdp-zero2 only: the GPUs that share one copy of the model states; ddp / zero1 /
        zero2 only: when gradients are reduced (Megatron-LM's overlap switches)."""
        return {"sharding": widgets.Dropdown(options=[s.value for s in Sharding], value=base.sharding.value,
                                             style=WIDE, layout=lay),
                "shard_group_gpus": NumberText(value=base.shard_group_gpus, style=WIDE, layout=lay),
                "comm_overlap": widgets.Dropdown(options=self._overlap_options(), value=base.comm_overlap.value,
                                                 style=WIDE, layout=lay),
                # torch FSDP only: one unit per block or the whole model as one
                "fsdp_wrap": widgets.Dropdown(options=self._wrap_options(), value=base.fsdp_wrap.value,
                                              style=WIDE, layout=lay)}

    def _overlap_options(self) -> list[tuple[str, str]]:
        return [(ui(f"comm_overlap_{o.value}", self.lang), o.value) for o in CommOverlap]

    def _attention_controls(self, base: TrainPlan, lay: Any) -> dict[str, widgets.ValueWidget]:
        """The attention kernel; attention sdpa only: which kernel torch's SDPA runs (docs/attention_backends.md)."""
        return {"attention": widgets.Dropdown(options=[a.value for a in Attention], value=base.attention.value,
                                              style=WIDE, layout=lay),
                "sdpa_backend": widgets.Dropdown(options=self._sdpa_options(), value=base.sdpa_backend.value,
                                                 style=WIDE, layout=lay)}

    def _sdpa_options(self) -> list[tuple[str, str]]:
        return [(ui(f"sdpa_backend_{b.value}", self.lang), b.value) for b in SdpaBackend]

    def _checkpointing_controls(self, base: TrainPlan, lay: Any) -> dict[str, widgets.ValueWidget]:
        """Gradient checkpointing; with it on, what it recomputes: the whole block again, or torchtitan's op-level
        policy (docs/recompute.md)."""
        return {"grad_checkpointing": widgets.Checkbox(value=base.grad_checkpointing, indent=True, style=WIDE,
                                                       layout=CHECKBOX_LAYOUT),
                # one block in n checkpointed (transformers 5's every_n_layers); 1: every block
                "recompute_every": NumberText(value=base.recompute_every, style=WIDE, layout=lay),
                "recompute": widgets.Dropdown(options=self._recompute_options(), value=base.recompute.value,
                                              style=WIDE, layout=lay)}

    def _recompute_options(self) -> list[tuple[str, str]]:
        return [(ui(f"recompute_{r.value}", self.lang), r.value) for r in Recompute]

    def _wrap_options(self) -> list[tuple[str, str]]:
        return [(ui(f"fsdp_wrap_{w.value}", self.lang), w.value) for w in FsdpWrap]

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
        self.controls["kbit_upcast"].tooltip = ui("kbit_upcast_hint", lang)
        self.controls["comm_overlap"].tooltip = ui("comm_overlap_hint", lang)
        self.controls["fsdp_wrap"].tooltip = ui("fsdp_wrap_hint", lang)
        self.controls["recompute"].tooltip = ui("recompute_hint", lang)
        self.controls["recompute_every"].tooltip = ui("recompute_every_hint", lang)
        self.controls["grad_clip"].tooltip = ui("grad_clip_hint", lang)
        self.controls["deterministic"].tooltip = ui("deterministic_hint", lang)
        self.controls["launch_blocking"].tooltip = ui("launch_blocking_hint", lang)
        self.controls["tf32"].tooltip = ui("tf32_hint", lang)
        self.controls["fp8_linear"].tooltip = ui("fp8_linear_hint", lang)
        self.controls["sdpa_backend"].tooltip = ui("sdpa_backend_hint", lang)
        self.controls["input_require_grads"].tooltip = ui("input_require_grads_hint", lang)
        self.controls["lengths"].placeholder = ui("lengths_hint", lang)
        for name in _BLANK_IS_NONE:  # each optional count's hint says what a blank field means
            self.controls[name].placeholder = ui(f"{name}_hint", lang)
        for key, heading in self.headings.items():
            heading.value = heading_html(4, ui(key, lang))
        with self._mute():
            for control, options in ((self.model_source, self._source_options()), (self.axis, self._axis_options()),
                                     (self.controls["method"], self._method_options()),
                                     (self.controls["eval_keep"], self._eval_keep_options()),
                                     (self.controls["comm_overlap"], self._overlap_options()),
                                     (self.controls["fsdp_wrap"], self._wrap_options()),
                                     (self.controls["recompute"], self._recompute_options()),
                                     (self.controls["sdpa_backend"], self._sdpa_options()),
                                     (self.controls["input_require_grads"], self._input_grads_options()),
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
        out = {name: None if name in _BLANK_IS_NONE and not str(control.value).strip()
               else control.number(name) if isinstance(control, NumberText) else control.value
               for name, control in self.controls.items() if name != "dataset_tokens"}
        known_tokens, known_bytes, known_note = self._dataset_known
        tokens, size, note = dataset_input(self.controls["dataset_tokens"].value, known_tokens, known_bytes)
        if note is None and tokens == known_tokens:
            note = known_note
        out["dataset_tokens"], out["dataset_bytes"] = tokens, size
        self._dataset_said = note
        out["model"] = self.model_ref()
        if not _hybrid(str(out["sharding"])):  # the group is read for hybrid sharding only; hidden otherwise
            del out["shard_group_gpus"]
        if Sharding(str(out["sharding"])).per_unit:  # read for ddp / zero1 / zero2 only; hidden otherwise
            del out["comm_overlap"]
        if Sharding(str(out["sharding"])) not in TORCH_FSDP_SHARDINGS:  # read for torch FSDP only; hidden otherwise
            del out["fsdp_wrap"]
        if not out["grad_checkpointing"]:  # read with checkpointing only; hidden otherwise
            del out["recompute"], out["recompute_every"]
        if out["attention"] != Attention.SDPA.value:  # read for SDPA only; hidden otherwise
            del out["sdpa_backend"]
        if out["method"] != Method.FREEZE.value:  # read for freeze only; hidden otherwise
            del out["input_require_grads"]
        else:  # "stack" / "on" / "off" -> None / True / False
            out["input_require_grads"] = _INPUT_GRADS[str(out["input_require_grads"])]
        if out["method"] != "qlora":  # read for QLoRA only; hidden otherwise
            del out["kbit_upcast"]
        if out["method"] in ("lora", "qlora") or out["precision"] == Precision.FP32.value:  # FP8 needs neither
            del out["fp8_linear"]
        if not self._masked_lm(str(out["model"])):  # read for a masked-LM head only; hidden otherwise
            out["mlm_predictions"] = None
        if not is_packed(out["lengths"]):  # read for packed rows only; hidden otherwise
            out["packed_document_tokens"] = None
        return out

    def _masked_lm(self, model: str) -> bool:
        """Whether ``model`` (under the form's task) trains a masked-LM head; False for one that does not load."""
        try:
            return get_spec(model, self.base_plan.task).task is Task.MASKED_LM
        except Exception:  # noqa: BLE001 - the estimate reports a model that does not load
            return False

    # -- update -----------------------------------------------------------------------------------

    def _on_change(self, change: Any = None) -> None:
        if change is not None and change.get("owner") is self.controls["method"] and not self._muted:
            # the precision follows the method while nobody chose it (QLoRA's is bf16-mixed: gpuwork.plan)
            precision = self.controls["precision"]
            with self._mute():
                precision.value = follow_method(precision.value, change["old"], change["new"]).value
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
                elif name == "input_require_grads":
                    value = _input_grads_choice(value)
                elif hasattr(value, "value"):  # a str enum
                    value = value.value
                control.value = _blank(value)
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
        self.controls["kbit_upcast"].layout.display = None if self.controls["method"].value == "qlora" else "none"
        self.controls["fp8_linear"].layout.display = "none" if adapters \
            or self.controls["precision"].value == Precision.FP32.value else None
        self.controls["shard_group_gpus"].layout.display = None if _hybrid(self.controls["sharding"].value) \
            else "none"
        self.controls["comm_overlap"].layout.display = "none" if Sharding(self.controls["sharding"].value).per_unit \
            else None
        self.controls["fsdp_wrap"].layout.display = None \
            if Sharding(self.controls["sharding"].value) in TORCH_FSDP_SHARDINGS else "none"
        for name in ("recompute", "recompute_every"):
            self.controls[name].layout.display = None if self.controls["grad_checkpointing"].value else "none"
        self.controls["sdpa_backend"].layout.display = None \
            if self.controls["attention"].value == Attention.SDPA.value else "none"
        self.controls["input_require_grads"].layout.display = None \
            if self.controls["method"].value == Method.FREEZE.value else "none"
        masked = self.plan is not None and self._masked_lm(self.plan.model)  # the last valid plan's model
        self.controls["mlm_predictions"].layout.display = None if masked else "none"
        self.controls["packed_document_tokens"].layout.display = None if is_packed(self.controls["lengths"].value) \
            else "none"

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
        self._update_visibility()  # the masked positions field follows the model just sized
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
                                 c["recompute"], c["recompute_every"],
                                 c["input_require_grads"],
                                 c["grad_clip"], c["deterministic"], c["launch_blocking"], c["tf32"], c["fp8_linear"], c["attention"], c["sdpa_backend"], c["stack"], c["lengths"], c["packed_document_tokens"], c["lora_r"],
                                 c["lora_targets"], c["kbit_upcast"], c["eval_batch_size"], c["eval_samples"], c["eval_keep"],
                                 c["eval_accum"], c["mlm_predictions"]])
        gpus = widgets.VBox([self.headings["h_gpus"], c["gpus"], c["sharding"], c["shard_group_gpus"], c["comm_overlap"], c["fsdp_wrap"], c["dataset_tokens"], self.documents,
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


# optional counts: a blank field is None
_BLANK_IS_NONE = ("eval_batch_size", "eval_samples", "eval_accum", "mlm_predictions", "packed_document_tokens")


# the backward through freeze's frozen blocks (TrainPlan.input_require_grads): the dropdown's value -> the plan's
_INPUT_GRADS: dict[str, bool | None] = {"stack": None, "on": True, "off": False}


def _input_grads_choice(value: bool | None) -> str:
    """The dropdown's value for a plan's input_require_grads (None: "stack", as the stack does)."""
    return "stack" if value is None else "on" if value else "off"


def _blank(value: Any) -> Any:
    """A control's value for a plan field: None (an optional field left unset) shows as a blank field."""
    return "" if value is None else value


def _hybrid(sharding: str) -> bool:
    """The form's sharding value is one of the hybrid shardings (hsdp, hsdp-zero2), which read the group size."""
    return sharding in {s.value for s in Sharding if s.hybrid}


__all__ = [
    "DEFAULT_GPUS",
    "MANUAL_DEFAULTS",
    "MANUAL_FIELDS",
    "WHATIF_METHODS",
    "WHATIF_VALUES",
    "ConfigStore",
    "SizingForm",
    "SizingResult",
    "count_documents",
    "details_html",
    "manual_config",
    "memory_units_html",
    "parse_config",
    "parse_upload",
    "size_plan",
    "totals_html",
    "trace_html",
    "whatif_series",
]
