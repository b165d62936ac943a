"""Widget logic without a browser: set ``.value`` on controls, assert on the plan, the results and fig.data."""

from __future__ import annotations

import base64
import datetime as dt
import html
import json
from pathlib import Path

import plotly.graph_objects as go
import pytest

from gpuwork.estimate.memory import GIB
from gpuwork.facts.model import load_config
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory
from gpuwork.ui import widgets as gw

PLAN = {"model": "llama-3.2-1b", "method": "lora", "seq_len": 2048, "batch_size": 2}


def _upload(content: bytes, name: str = "config.json") -> tuple[dict, ...]:
    return ({"name": name, "type": "application/json", "size": len(content), "content": memoryview(content),
             "last_modified": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)},)


def _device_total_y(form: gw.SizingForm) -> float:
    fig = form.breakdown.widget
    return next(t.y[0] for t in fig.data if t.name == "Device total")


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list:
    """What ``show()`` displays (instead of IPython's display)."""
    seen: list = []
    monkeypatch.setattr(gw, "_display", lambda *objs: seen.extend(o for o in objs if o is not None))
    return seen


# -- sizing ---------------------------------------------------------------------------------------------


def test_form_starts_from_the_plan_and_shows_everything() -> None:
    form = gw.SizingForm(PLAN)
    assert form.error is None and form.plan == TrainPlan.from_dict(PLAN)
    est = estimate_memory(form.plan)
    assert form.memory.device_total_bytes == est.device_total_bytes
    for text in ("Peak allocated", "Peak reserved", "Device total", "nvidia-smi", "max_memory_allocated"):
        assert text in form.totals.value
    assert f"{est.device_total_bytes / GIB:,.2f}" in form.totals.value
    assert _device_total_y(form) == pytest.approx(est.device_total_bytes / GIB)
    whatif = form.whatif.widget
    assert [t.name for t in whatif.data] == [*gw.WHATIF_METHODS, "runs out"]
    lora = next(t for t in whatif.data if t.name == "lora")
    assert lora.y[list(lora.x).index(2048)] == pytest.approx(est.device_total_bytes / GIB)
    details = html.unescape(form.details.value)
    assert "Profile 01" in details and "Recommended disk" in details and "GPU-hours" in details
    assert {s.name for s in form.breakdown.widget.layout.shapes} == set(gw.DEFAULT_GPUS)


def test_changes_update_plan_totals_and_figures() -> None:
    form = gw.SizingForm(PLAN)
    first = form.memory.device_total_bytes
    form.controls["seq_len"].value = 8192
    assert form.plan.seq_len == 8192 and form.memory.device_total_bytes > first
    assert _device_total_y(form) == pytest.approx(form.memory.device_total_bytes / GIB)
    assert f"{form.memory.device_total_bytes / GIB:,.2f}" in form.totals.value

    form.controls["method"].value = "full"
    assert form.plan.method.value == "full"
    bars = {t.name: t.y[0] for t in form.breakdown.widget.data if t.type == "bar"}
    assert bars["optimizer states"] == pytest.approx(form.memory.breakdown["optimizer_states"] / GIB)
    assert form.controls["lora_r"].layout.display == "none"  # LoRA fields hide for full fine-tuning

    for name, value in (("precision", "bf16-mixed"), ("optimizer", "adamw-8bit"), ("grad_accum", 4),
                        ("grad_checkpointing", True), ("attention", "eager"), ("gpus", 4), ("sharding", "zero3"),
                        ("dataset_tokens", 10**9), ("epochs", 2.0)):
        form.controls[name].value = value
        assert form.error is None, (name, form.error)
    plan = form.plan
    assert (plan.gpus, plan.sharding.value, plan.grad_checkpointing, plan.epochs) == (4, "zero3", True, 2)

    form.axis.value = "batch_size"
    assert form.result.axis == "batch_size"
    assert list(form.whatif.widget.data[0].x) == list(form.result.whatif_values)
    assert 1 in form.result.whatif_values and 64 in form.result.whatif_values

    form.gpu_select.value = ("l4",)
    assert [s.name for s in form.breakdown.widget.layout.shapes] == ["l4"]


def test_invalid_input_is_one_red_line_and_the_form_recovers() -> None:
    form = gw.SizingForm(PLAN)
    form.controls["seq_len"].value = 0  # must not raise
    assert form.plan is None and form.result is None
    assert form.error and "seq_len" in form.error and "\n" not in form.error
    assert 'class="gpuwork-error"' in form.message.value and "Traceback" not in form.message.value
    assert "Peak allocated" not in form.totals.value
    form.controls["sharding"].value = "zero3"  # still invalid: one GPU
    assert "seq_len" in form.error or "sharding" in form.error
    form.controls["seq_len"].value = 1024
    assert "sharding" in form.error and "gpus" in form.error
    form.controls["sharding"].value = "ddp"
    assert form.error is None and form.plan.seq_len == 1024 and form.message.value == ""
    assert "Peak allocated" in form.totals.value


def test_lora_targets_follow_the_architecture() -> None:
    form = gw.SizingForm(PLAN)
    form.controls["model"].value = "gpt2"
    assert form.plan is None and "c_attn" in form.error and "all-linear" in form.error
    form.controls["lora_targets"].value = "c_attn"
    assert form.error is None and form.plan.lora_targets == ("c_attn",)


def test_unknown_model_and_a_bug_are_friendly(monkeypatch: pytest.MonkeyPatch) -> None:
    form = gw.SizingForm({"model": "no-such-model-xyz"})
    assert form.plan is None and "no-such-model-xyz" in form.error

    def broken(plan: TrainPlan, axis: str = "seq_len") -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(gw, "size_plan", broken)
    form = gw.SizingForm(PLAN)
    assert "unexpected error" in form.error and "boom" in form.error
    assert "Traceback" not in form.message.value


def test_uploaded_config_is_used_from_a_temporary_folder_owned_by_the_form() -> None:
    config, _ = load_config("tiny-llama")
    form = gw.SizingForm(PLAN)
    form.upload.value = _upload(json.dumps(config).encode())
    assert form.model_source.value == "upload" and form.error is None, form.error
    folder = Path(form.store.folder)
    assert Path(form.plan.model).parent.parent == folder and Path(form.plan.model).name == "config.json"
    assert form.memory.params.total == estimate_memory(TrainPlan(**{**PLAN, "model": "tiny-llama"})).params.total
    assert form.model_label() == "config.json" and "config.json" in form.breakdown.widget.data[0].x[0]

    form.upload.value = _upload(b"{not json", "broken.json")
    assert "broken.json is not valid JSON" in form.error
    form.upload.value = _upload(b'{"hidden_size": 8}', "other.json")
    assert "model_type" in form.error
    form.model_source.value = "preset"
    assert form.error is None and form.plan.model == "llama-3.2-1b"
    form.close()
    assert not folder.exists()


def test_upload_source_without_a_file_asks_for_one() -> None:
    form = gw.SizingForm(PLAN)
    form.model_source.value = "upload"
    assert "config.json" in form.error
    assert form.upload.layout.display is None and form.controls["model"].layout.display == "none"
    form.close()


def test_manual_architecture_builds_a_config() -> None:
    form = gw.SizingForm(PLAN)
    form.model_source.value = "manual"
    for name, value in {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8,
                        "num_key_value_heads": 4, "intermediate_size": 688, "vocab_size": 4096}.items():
        form.manual[name].value = value
    assert form.error is None, form.error
    tiny = estimate_memory(TrainPlan(**{**PLAN, "model": "tiny-llama"}))
    assert form.memory.params.total == tiny.params.total
    assert form.model_label().startswith("manual 4×256")
    form.manual["num_attention_heads"].value = 7
    assert "divisible" in form.error and "num_attention_heads" in form.error
    form.manual["num_attention_heads"].value = 8
    form.manual["vocab_size"].value = 0
    assert "vocab_size" in form.error
    form.close()


def test_manual_config_and_parse_config() -> None:
    config = gw.manual_config(gw.MANUAL_DEFAULTS)
    assert config["model_type"] == "llama" and config["hidden_size"] == 2048
    with pytest.raises(gw.ModelError, match="num_key_value_heads"):
        gw.manual_config({**gw.MANUAL_DEFAULTS, "num_key_value_heads": 5})
    assert gw.parse_config(b'{"model_type": "llama"}') == {"model_type": "llama"}


def test_language_switch_relabels_the_form() -> None:
    form = gw.SizingForm(PLAN)
    form.set_lang("ru")
    assert form.controls["method"].description == "Метод"
    assert "Всего на устройстве" in form.totals.value
    assert form.breakdown.widget.data[0].name == "веса"
    assert form.model_source.value == "preset"
    form.set_lang("en")
    assert form.controls["method"].description == "Method"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_verify_exactly_traces_one_step_and_compares() -> None:
    form = gw.SizingForm({"model": "tiny-llama", "method": "lora", "precision": "fp32", "seq_len": 128})
    traced = form.verify()
    assert traced is not None and traced.peak_allocated_bytes > 0
    text = html.unescape(form.verify_out.value)
    assert "Traced peak allocated" in text and "Analytic estimate" in text and "Difference" in text
    assert not form.verify_button.disabled


def test_verify_with_invalid_plan_is_a_message() -> None:
    form = gw.SizingForm(PLAN)
    form.controls["batch_size"].value = 0
    assert form.verify() is None and "gpuwork-error" in form.verify_out.value


def test_report_mode_shows_plain_figures(shown: list) -> None:
    form = gw.SizingForm(PLAN, report=True)
    assert form.breakdown.widget is None and form.whatif.widget is None  # no FigureWidget in reports
    for part in ("controls", "totals", "breakdown", "whatif", "details", "verify"):
        form.show(part)
    figures = [o for o in shown if isinstance(o, go.Figure)]
    assert len(figures) == 3 and not any(isinstance(o, go.FigureWidget) for o in shown)
    assert figures[1].layout.xaxis.title.text.startswith("sequence length")
    assert figures[2].layout.xaxis.title.text.startswith("micro-batch")
    with pytest.raises(KeyError):
        form.show("nope")


def test_interactive_show_gives_widgets(shown: list) -> None:
    form = gw.SizingForm(PLAN)
    form.show("breakdown")
    assert shown[-1] is form.breakdown.box and form.breakdown.box.children[0] is form.breakdown.widget


def test_staggered_whatif_waits_for_the_breakdown_to_render() -> None:
    form = gw.SizingForm(PLAN, stagger=True)
    assert form.whatif.widget is None and form.whatif.pending is not None
    form.controls["seq_len"].value = 4096  # keeps the latest figure
    form.breakdown.widget._js2py_traceDeltas = {"trace_deltas": [], "trace_edit_id": 0}  # what the browser sends
    assert form.whatif.widget is not None and form.whatif.pending is None
    assert form.whatif.widget.layout.shapes[-1].x0 == 4096


# -- trial ----------------------------------------------------------------------------------------------




@pytest.fixture(scope="module")
def finished_trial(one_thread, tmp_path_factory: pytest.TempPathFactory) -> gw.TrialPanel:
    panel = gw.TrialPanel(steps=2, warmup=1, out_dir=tmp_path_factory.mktemp("trials"))
    record = panel.run()
    assert record is not None, panel.error
    return panel


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_trial_runs_with_live_curves_progress_and_a_saved_record(finished_trial: gw.TrialPanel) -> None:
    panel = finished_trial
    record = panel.record
    assert record.fits and record.checkpoint.verified and len(record.measured) == 2
    assert panel.progress.value == panel.progress.max == 3
    curves = panel.curves.widget
    assert len(curves.data) == 8 and list(curves.data[0].x) == [2, 3] and list(curves.data[1].x) == [1]
    assert list(curves.data[0].y) == pytest.approx([s.loss for s in record.measured])
    text = html.unescape(panel.results.value)
    assert "Checkpoint round-trip: verified" in text and "Median step" in text
    assert "proves the pipeline, not the speed" in text  # CPU: no extrapolation
    assert Path(record.saved_to).is_file() and record.saved_to in text
    evm = panel.comparison.widget
    assert [t.name for t in evm.data] == ["estimate", "measured"]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_stop_is_checked_between_steps(one_thread, monkeypatch: pytest.MonkeyPatch) -> None:
    panel = gw.TrialPanel(steps=5, warmup=0)
    seen = panel._on_step

    def step_then_stop(m, total):  # the user presses Stop during the first step
        seen(m, total)
        panel.stop()

    monkeypatch.setattr(panel, "_on_step", step_then_stop)
    assert panel.run() is None
    assert panel.stopped and len(panel.steps_seen) == 1 and panel.record is None
    assert "Stopped after 1 step" in panel.status.value
    assert not panel.run_button.disabled and panel.stop_button.disabled


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_trial_with_ramp_reports_what_fits(one_thread) -> None:
    panel = gw.TrialPanel({"model": "tiny-llama", "method": "lora", "precision": "fp32", "seq_len": 32,
                           "batch_size": 1}, steps=1, warmup=0, ramp=True)
    record = panel.run()
    assert record is not None, panel.error
    result = panel.ramp_result
    assert result is not None and result.max_batch_size == 4 and result.max_seq_len == 64  # 4 x batch, 2 x seq
    assert "Ramp: largest micro-batch 4" in html.unescape(panel.results.value)


def test_trial_input_errors_are_one_line() -> None:
    panel = gw.TrialPanel(steps=2)
    panel.steps.value = 0
    assert "steps" in panel.error and panel.run_button.disabled
    assert panel.run() is None and "gpuwork-error" in panel.status.value
    panel.steps.value = 2
    panel.controls["batch_size"].value = -1
    assert "batch_size" in panel.error
    panel.controls["batch_size"].value = 2
    assert panel.error is None and not panel.run_button.disabled


def test_demo_trial_is_guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    panel = gw.TrialPanel(demo=True)
    assert all(m.startswith("tiny-") for m in panel.controls["model"].options)
    assert panel.device == "cpu" and "one trial at a time" in panel.note.value
    panel.controls["seq_len"].value = 4096
    assert "demo" in panel.error and "seq_len" in panel.error
    panel.controls["seq_len"].value = 64
    panel.steps.value = 500
    assert "at most" in panel.error
    panel.steps.value = 2
    assert panel.error is None
    monkeypatch.setattr(gw.tempfile, "tempdir", str(tmp_path))
    with gw._machine_lock(tmp_path / gw.DEMO_LOCK_FILE) as held:  # another page's trial is running
        assert held
        assert panel.run() is None
    assert "already running" in panel.status.value


def test_report_mode_trial_shows_plain_figures(finished_trial: gw.TrialPanel, shown: list) -> None:
    panel = gw.TrialPanel(report=True)
    panel.record, panel.steps_seen = finished_trial.record, list(finished_trial.record.steps)
    panel._render_record()
    for part in ("controls", "curves", "results", "estimate_vs_measured"):
        panel.show(part)
    assert sum(isinstance(o, go.Figure) and not isinstance(o, go.FigureWidget) for o in shown) == 2
    assert panel.curves.widget is None


def test_estimate_vs_measured_rows_use_the_precision_that_ran(finished_trial: gw.TrialPanel) -> None:
    rows = gw.estimate_vs_measured_rows(finished_trial.record)
    plan = finished_trial.record.plan.replace(precision="fp32")
    assert rows[0]["estimated_bytes"] == estimate_memory(plan).peak_allocated_bytes
    assert rows[0]["measured_bytes"] == finished_trial.record.peak_trial_memory_bytes
    time, why = gw.extrapolate(finished_trial.record)
    assert time is None and why


def test_a_gpu_record_extrapolates_and_compares_allocator_peaks(finished_trial: gw.TrialPanel) -> None:
    """The CUDA path without a GPU: the CPU record relabelled as measured on an H100."""
    import dataclasses

    cpu = finished_trial.record
    env = dataclasses.replace(cpu.environment, device="cuda:0", device_name="NVIDIA H100 80GB HBM3",
                              device_total_bytes=85_045_755_904)
    summary = dataclasses.replace(cpu.summary, cuda_peak_allocated_bytes=300 * 2**20,
                                  cuda_peak_reserved_bytes=400 * 2**20)
    gpu = dataclasses.replace(cpu, environment=env, summary=summary)
    time, why = gw.extrapolate(gpu)
    assert why is None and time.gpu_id == "h100_sxm" and time.mfu.source == "calibration"
    assert time.total_s > time.train_s > 0  # the whole run, with eval, checkpoints and margin
    rows = gw.estimate_vs_measured_rows(gpu)
    assert [r["label"] for r in rows] == ["peak allocated", "peak reserved"]
    assert rows[0]["measured_bytes"] == 300 * 2**20 and rows[1]["measured_bytes"] == 400 * 2**20
    panel = gw.TrialPanel(report=True)
    panel.record = gpu
    panel._render_record()
    assert "Whole run on 1 × H100 SXM" in html.unescape(panel.results.value)


# -- offers and request -----------------------------------------------------------------------------------------


OFFER_PLAN = {"model": "llama-3.1-8b", "method": "qlora", "seq_len": 2048, "batch_size": 4}


def test_offers_filters_sorting_scatter_and_interruptible() -> None:
    panel = gw.OffersPanel(OFFER_PLAN)
    assert panel.error is None and panel.results and all(r.fits for r in panel.results)
    assert "gpuwork-offers" in panel.table.value
    scatter = panel.scatter.widget
    assert [t.name for t in scatter.data] == ["on-demand", "reserved", "interruptible"]
    assert "Expected preemptions" in panel.interruptible.value

    panel.modes.value = ("interruptible",)
    assert {r.offer.mode.value for r in panel.results} == {"interruptible"}
    assert len(scatter.data[2].x) == len(panel.results) and len(scatter.data[0].x or ()) == 0
    panel.modes.value = ()
    assert "pick at least one" in panel.error and "gpuwork-error" in panel.message.value
    panel.modes.value = ("on-demand", "reserved", "interruptible")
    panel.sort.value = "price"
    prices = [r.offer.price_per_gpu_hour for r in panel.results]
    assert prices == sorted(prices)
    panel.max_price.value = 1.0
    assert all(r.offer.price_per_gpu_hour <= 1.0 for r in panel.results)
    panel.max_price.value = -1
    assert "must be a number >= 0" in panel.error
    panel.max_price.value = 0
    panel.include_unfit.value = True
    assert any(not r.fits for r in panel.results) or panel.results
    panel.preemption_rate.value = 0.5
    assert panel.error is None


def test_offers_with_a_plan_that_fits_nowhere_keep_working() -> None:
    panel = gw.OffersPanel({"model": "llama-3.1-70b", "method": "full", "seq_len": 8192})
    panel.classes.value = ("consumer",)
    assert panel.error is None and "No offer passes" in panel.table.value
    panel.include_unfit.value = True
    assert panel.results and not any(r.fits for r in panel.results)


def test_compare_trial_records(finished_trial: gw.TrialPanel) -> None:
    panel = gw.OffersPanel(OFFER_PLAN, with_request=False)
    assert "No trial records" in panel.compare.value
    panel.add_record(finished_trial.record)
    assert "tiny-llama" in panel.compare.value and "tokens per s" in panel.compare.value
    panel.record_price.value = 2.0
    assert "$" in panel.compare.value
    text = Path(finished_trial.record.saved_to).read_bytes()
    panel.record_upload.value = _upload(text, "trial.json")
    assert len(panel.records) == 2
    panel.record_upload.value = _upload(b"{}", "bad.json")
    assert "bad.json is not a gpuwork trial record" in panel.error
    from_file = gw.OffersPanel(OFFER_PLAN, records=[finished_trial.record.saved_to], with_request=False)
    assert len(from_file.records) == 1


def test_request_text_in_both_languages_with_download_links() -> None:
    panel = gw.RequestPanel(OFFER_PLAN)
    assert panel.request.summary.startswith("Fine-tuning, QLoRA")
    assert panel.text.value == panel.request.text
    href = panel.links.value.split('href="data:text/plain;charset=utf-8;base64,', 1)[1].split('"', 1)[0]
    assert base64.b64decode(href).decode("utf-8") == panel.request.text
    assert 'download="gpu-request-en.txt"' in panel.links.value and "application/json" in panel.links.value
    panel.req_lang.value = "ru"
    assert panel.text.value.startswith("Дообучение, QLoRA")
    panel.set_lang("en")
    assert panel.text.value.startswith("Fine-tuning")
    panel.budget.value = 500
    panel.rent_days.value = 30
    panel.start_date.value = "2026-12-01"
    assert panel.error is None and "December" in panel.text.value and "one month" in panel.text.value
    assert "$500" in panel.text.value
    panel.start_date.value = "tomorrow"
    assert "start_date" in panel.error and "gpuwork-error" in panel.message.value
    panel.start_date.value = ""
    panel.dataset_gb.value = 200
    assert panel.error is None and "200 GB" in panel.text.value
    panel.dataset_gb.value = -5
    assert "dataset" in panel.error


def test_offers_panel_report_mode(shown: list) -> None:
    panel = gw.OffersPanel(OFFER_PLAN, report=True)
    for part in ("filters", "table", "scatter", "interruptible", "compare", "request"):
        panel.show(part)
    assert sum(isinstance(o, go.Figure) for o in shown) == 1
    assert panel.scatter.widget is None
    assert any("gpuwork-request-text" in getattr(o, "data", "") for o in shown)
