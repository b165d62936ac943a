"""The trial panel without a browser: a real tiny trial on the CPU, its curves, record, Stop, ramp and demo guard."""

from __future__ import annotations

import dataclasses
import html
import math
import re
import threading
import time
from pathlib import Path

import plotly.graph_objects as go
import pytest

from gpuwork.measure.extrapolation import extrapolate as whole_run
from gpuwork.measure.trial import StepMeasurement
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory
from gpuwork.ui.queue import ActionQueue
from gpuwork.ui.trial import (
    DEMO_LIMITS,
    LiveCurves,
    TrialPanel,
    beside_html,
    beside_rows,
    estimate_vs_measured_rows,
    extrapolate,
    ramp_limits,
)
from gpuwork.units import fmt_int, fmt_memory, fmt_number, fmt_seconds


@pytest.fixture(scope="module")
def finished_trial(one_thread, tmp_path_factory: pytest.TempPathFactory) -> TrialPanel:
    panel = TrialPanel(steps=2, warmup=1, out_dir=tmp_path_factory.mktemp("trials"))
    record = panel.run()
    assert record is not None, panel.error
    return panel


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_trial_runs_with_live_curves_progress_and_a_saved_record(finished_trial: TrialPanel) -> None:
    panel = finished_trial
    record = panel.record
    assert record.fits and record.checkpoint.verified and len(record.measured) == 2
    assert panel.progress.value == panel.progress.max == 3
    curves = panel.curves.figure
    assert len(curves.data) == 8 and list(curves.data[0].x) == [2, 3] and list(curves.data[1].x) == [1]
    assert list(curves.data[0].y) == pytest.approx([s.loss for s in record.measured])
    text = html.unescape(panel.results.value)
    assert "Checkpoint round-trip: verified" in text and "Median step" in text
    assert "proves the pipeline, not the speed" in text  # CPU: no extrapolation
    # the default plan's attention (sdpa, sdpa_backend flash) ran torch's FlashAttention CPU kernel
    assert "Attention: SDPA, kernel flash (the plan's sdpa_backend: flash)" in text
    assert Path(record.saved_to).is_file() and record.saved_to in text
    evm = panel.comparison.figure
    assert [t.name for t in evm.data] == ["estimate", "measured"]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_stop_is_checked_between_steps(one_thread, monkeypatch: pytest.MonkeyPatch) -> None:
    panel = TrialPanel(steps=5, warmup=0)
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
    panel = TrialPanel({"model": "tiny-llama", "method": "lora", "precision": "fp32", "seq_len": 32,
                           "batch_size": 1}, steps=1, warmup=0, ramp=True)
    record = panel.run()
    assert record is not None, panel.error
    result = panel.ramp_result
    assert result is not None and result.max_batch_size == 4 and result.max_seq_len == 64  # 4 x batch, 2 x seq
    assert "Ramp: largest micro-batch 4" in html.unescape(panel.results.value)


def test_trial_input_errors_are_one_line() -> None:
    panel = TrialPanel(steps=2)
    panel.steps.value = 0
    assert "steps" in panel.error and panel.run_button.disabled
    assert panel.run() is None and "gpuwork-error" in panel.status.value
    panel.steps.value = 2
    panel.controls["batch_size"].value = -1
    assert panel.error.startswith("Micro-batch: -1") and "batch_size" not in panel.error
    panel.controls["batch_size"].value = 2
    assert panel.error is None and not panel.run_button.disabled


def test_demo_trial_is_guarded(tmp_path: Path) -> None:
    line = ActionQueue(tmp_path, places=1, poll_s=0.02)
    panel = TrialPanel(demo=True, queue=line)
    assert all(m.startswith("tiny-") for m in panel.controls["model"].options)
    assert panel.device == "cpu" and "one trial at a time" in panel.note.value
    panel.controls["seq_len"].value = 4096
    assert "demo" in panel.error and panel.error.startswith("Sequence length: 4096")
    panel.controls["seq_len"].value = 64
    panel.steps.value = 500
    assert "at most" in panel.error
    panel.steps.value = 2
    assert panel.error is None
    # another page's action runs and one more waits: the line is full, this run is refused at once
    release, waiting = threading.Event(), threading.Event()
    others = [threading.Thread(target=line.run, args=(lambda: release.wait(10),)),
              threading.Thread(target=line.run, args=(lambda: None,), kwargs={"on_wait": lambda n: waiting.set()})]
    others[0].start()
    while not line.state()[0]:
        time.sleep(0.01)
    others[1].start()
    assert waiting.wait(10)
    assert panel.run() is None
    assert "The server is busy (1 actions already waiting)" in html.unescape(panel.status.value)
    release.set()
    for t in others:
        t.join(10)


def test_a_demo_trial_waits_visibly_in_the_line_and_stop_leaves_it(tmp_path: Path) -> None:
    line = ActionQueue(tmp_path, places=2, poll_s=0.02)
    panel = TrialPanel(demo=True, queue=line, steps=2)
    release = threading.Event()
    busy = threading.Thread(target=line.run, args=(lambda: release.wait(10),))
    busy.start()
    while not line.state()[0]:
        time.sleep(0.01)
    runner = panel.start()
    deadline = time.monotonic() + 10
    while "gpuwork-waiting" not in panel.status.value and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "Waiting (1 ahead)" in panel.status.value and line.state() == (True, 1)
    assert panel.run_button.disabled and not panel.stop_button.disabled  # Stop works while waiting
    panel.stop()
    runner.join(10)
    assert "Cancelled while waiting" in panel.status.value and panel.record is None and panel.steps_seen == []
    assert not panel.run_button.disabled and line.state() == (True, 0)
    release.set()
    busy.join(10)


@pytest.mark.parametrize(("field", "typed", "expected"), [
    ("seq_len", "4096.5", "not a whole number"), ("seq_len", "1e4.", "not a count"),
    ("batch_size", "200 MB", "not a count"), ("grad_accum", "0x10", "not a count"),
    ("seq_len", "nan", "Sequence length: 'nan'"), ("batch_size", "-3", "Micro-batch: -3"),
    ("seq_len", "", "Sequence length: ''"),
    ("steps", "2.5", "not a whole number"), ("steps", "1e9", "above 10,000"), ("warmup", "inf", "warmup"),
    ("warmup", "5000", "above 1,000"), ("steps", "-1", "at least one step"),
])
def test_every_number_field_is_read_as_typed_and_bounded(field: str, typed: str, expected: str) -> None:
    """The browser's number inputs turned "4096.5" into 40965 and "1e4" into 14: these fields take text."""
    panel = TrialPanel(steps=2)
    control = panel.steps if field == "steps" else panel.warmup if field == "warmup" else panel.controls[field]
    control.value = typed
    assert panel.error is not None and expected in panel.error, panel.error
    assert panel.run_button.disabled and panel.run() is None and "gpuwork-error" in panel.status.value


def test_typed_counts_with_suffixes_are_read_exactly() -> None:
    panel = TrialPanel(steps=2)
    panel.controls["seq_len"].value = "1k"
    panel.steps.value = "1e1"
    assert panel.error is None and panel.trial_plan().seq_len == 1000 and panel._counts() == (10, 1)


def test_the_ramp_stays_within_the_demo_limits() -> None:
    assert ramp_limits(TrainPlan(model="tiny-llama", seq_len=32, batch_size=1), demo=False) == (4, 64)
    assert ramp_limits(TrainPlan(model="tiny-llama", seq_len=256, batch_size=8), demo=False) == (32, 512)
    demo = ramp_limits(TrainPlan(model="tiny-llama", seq_len=256, batch_size=8), demo=True)
    assert demo == (DEMO_LIMITS["batch_size"], DEMO_LIMITS["seq_len"])
    assert ramp_limits(TrainPlan(model="tiny-llama", seq_len=64, batch_size=4), demo=True) == (8, 128)


def test_report_mode_trial_shows_plain_figures(finished_trial: TrialPanel, shown: list) -> None:
    panel = TrialPanel(report=True)
    panel.record, panel.steps_seen = finished_trial.record, list(finished_trial.record.steps)
    panel._render_record()
    for part in ("controls", "curves", "results", "estimate_vs_measured"):
        panel.show(part)
    assert sum(isinstance(o, go.Figure) and not isinstance(o, go.FigureWidget) for o in shown) == 2
    assert panel.curves.figure is None


def test_estimate_vs_measured_rows_use_the_precision_that_ran(finished_trial: TrialPanel) -> None:
    rows = estimate_vs_measured_rows(finished_trial.record)
    plan = finished_trial.record.plan.replace(precision="fp32")
    assert rows[0]["estimated_bytes"] == estimate_memory(plan).peak_allocated_bytes
    assert rows[0]["measured_bytes"] == finished_trial.record.peak_trial_memory_bytes
    time, why = extrapolate(finished_trial.record)
    assert time is None and why


def test_a_gpu_record_extrapolates_and_compares_allocator_peaks(finished_trial: TrialPanel) -> None:
    """The CUDA path without a GPU: the CPU record relabelled as measured on an H100."""
    import dataclasses

    cpu = finished_trial.record
    env = dataclasses.replace(cpu.environment, device="cuda:0", device_name="NVIDIA H100 80GB HBM3",
                              device_total_bytes=85_045_755_904)
    summary = dataclasses.replace(cpu.summary, cuda_peak_allocated_bytes=300 * 2**20,
                                  cuda_peak_reserved_bytes=400 * 2**20)
    gpu = dataclasses.replace(cpu, environment=env, summary=summary)
    ext, why = extrapolate(gpu)
    assert why is None and ext.catalog_gpu_id == "h100_sxm"
    assert ext.total_s > ext.train_s > 0  # the whole run, with eval, checkpoints and margin
    assert ext == whole_run(gpu)  # the one model `gpuwork trial` prints: same steps, margins and billed offers
    assert ext.offers and all(o.gpu_id == "h100_sxm" for o in ext.offers)
    unknown = dataclasses.replace(gpu, environment=dataclasses.replace(env, device_name="NVIDIA Mystery 9000"))
    none, why = extrapolate(unknown)
    assert none is None and "NVIDIA Mystery 9000" in why and "matches no GPU" in why
    rows = estimate_vs_measured_rows(gpu)
    assert [r["label"] for r in rows] == ["peak allocated", "peak reserved"]
    assert rows[0]["measured_bytes"] == 300 * 2**20 and rows[1]["measured_bytes"] == 400 * 2**20
    panel = TrialPanel(report=True)
    panel.record = gpu
    panel._render_record()
    assert "Whole run on 1 × H100 SXM" in html.unescape(panel.results.value)


def test_the_demo_guard_speaks_the_panels_language() -> None:
    panel = TrialPanel(demo=True, lang="ru")
    panel.controls["seq_len"].value = 4096
    assert panel.error == "Длина последовательности: 4096 больше предела демонстрации (256): этот запуск идёт на общем CPU"
    panel.controls["seq_len"].value = 64
    panel.steps.value = 500
    assert panel.error == "демонстрация выполняет не больше 20 шагов замера и 3 шагов прогрева"
    panel.steps.value = 0
    assert panel.error == "steps=0: нужен хотя бы один шаг замера"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_russian_panel_shows_the_record_in_russian(finished_trial: TrialPanel) -> None:
    """Everything the measure layer said (verdict, checkpoint check, ramp limits, no extrapolation on a CPU, an
    out-of-memory failure) rendered in the panel's language, numbers in the Russian form."""
    from test_messages_measure import english_leftovers

    from gpuwork.measure.trial import RampResult, cpu_model
    from gpuwork.message import msg

    record = finished_trial.record
    panel = TrialPanel(lang="ru", report=True)
    assert "План пробного запуска: tiny-llama" in panel.status.value  # a static page asks no one to press "Run"
    panel.record, panel.ramp_result = record, RampResult((), 8, 256, "out of memory", "max_seq_len")
    panel._render_record()
    text = re.sub(r"<[^>]+>", " ", html.unescape(panel.results.value))
    assert "Чекпойнт: проверен — восстановлено точно" in text and "Медиана шага" in text
    assert "Данные: загрузка данных успевает" in text and "проверяет конвейер, а не скорость" in text
    assert "Внимание: SDPA, ядро flash (sdpa_backend в плане: flash)" in text
    assert "Рампа: наибольший микробатч 8 при длине 128 (нехватка памяти)" in text
    assert "(предел max_seq_len)" in text
    device = set(cpu_model().replace("(", " ").replace(")", " ").split())
    assert not english_leftovers(text, *device), english_leftovers(text, *device)
    rows = estimate_vs_measured_rows(record, "ru")
    assert rows[0]["label"] == "пик памяти" and rows[0]["measured_what"].startswith("запуск на CPU: RSS процесса")
    panel.record = dataclasses.replace(record, fits=False, error=msg("trial.memory_cap_exceeded", phase="forward",
                                                                     used_mib=60.5, cap_mib=50.0))
    panel._render_record()
    assert "Не хватило памяти: превышен предел памяти после прямого прохода: запуск занял 60,5 МиБ" in (
        html.unescape(panel.results.value))


# -- live curves of the user's own run (gpuwork.hf) -------------------------------------------------------------


def _step(step: int, *, warm: bool = False, loss: float = 2.0) -> StepMeasurement:
    """One measured step as the callback reports it (values chosen, the dataclass real)."""
    return StepMeasurement(step=step, is_warmup=warm, loss=loss, step_time_s=0.1 * step, data_wait_s=0.01,
                           tokens=256, tokens_per_s=256 / (0.1 * step), grad_norm=1.0, learning_rate=1e-3,
                           trial_memory_bytes=step * 2**20)


@pytest.mark.timeout(240)
def test_live_curves_follow_a_real_trainer_run(one_thread, tmp_path: Path) -> None:
    """A real transformers Trainer on tiny-llama (CPU) with the callback feeding LiveCurves: the figure's traces
    hold exactly what the record measured."""
    transformers = pytest.importorskip("transformers")
    from test_hf import tiny_llama, trainer_args

    from gpuwork.facts.model import load_config
    from gpuwork.hf import GpuworkCallback
    from gpuwork.hf import LiveCurves as FromHf
    from gpuwork.measure.textdata import prepare_text_data

    assert FromHf is LiveCurves  # the import path users type
    config, _ = load_config("tiny-llama")
    rows = [{"input_ids": seq, "labels": seq.clone()} for seq in prepare_text_data(32, config["vocab_size"]).sequences[:24]]
    curves = LiveCurves(min_interval_s=0)  # every step redrawn: the test reads the figure after each
    callback = GpuworkCallback(steps=3, warmup=1, checkpoint=False, on_measure=curves.update)
    trainer = transformers.Trainer(model=tiny_llama(), train_dataset=rows, callbacks=[callback],
                                   args=trainer_args(tmp_path, gradient_accumulation_steps=1, eval_strategy="no"))
    trainer.train()

    record = callback.record
    assert [s.step for s in curves.steps] == [1, 2, 3, 4] and curves.steps == list(record.steps)
    assert curves.drawn == 4 and curves.redraws == 4
    data = curves.shown.data
    loss, loss_warm, step_time, _, tps, _, memory, memory_warm = data
    assert list(loss.x) == [2, 3, 4] and list(loss_warm.x) == [1]
    assert list(loss.y) == pytest.approx([s.loss for s in record.measured])  # the Trainer's logged loss
    assert all(math.isfinite(y) and y > 0 for y in loss.y)
    assert list(step_time.y) == pytest.approx([s.step_time_s for s in record.measured])
    assert list(tps.y) == pytest.approx([s.tokens_per_s for s in record.measured])
    assert list(memory.y) == pytest.approx([s.trial_memory_bytes / 2**20 for s in record.measured])
    assert list(memory_warm.y) == pytest.approx([record.steps[0].trial_memory_bytes / 2**20])
    assert all(y > 0 for y in memory.y)
    last = record.steps[-1]
    assert f"Step 4: loss {last.loss:.3f}, {last.step_time_s:.3f} s" in curves.status.value


def test_live_curves_throttle_redraws_and_flush_the_rest() -> None:
    now = [100.0]
    curves = LiveCurves(min_interval_s=3600, clock=lambda: now[0])  # a fake clock: no redraw is due
    try:
        curves.update(_step(1, warm=True))
        for n in range(2, 11):
            curves.update(_step(n))
        assert curves.redraws == 1 and curves.drawn == 1  # the first step drew; the nine after it wait
        assert list(curves.shown.data[1].x) == [1] and list(curves.shown.data[0].x) == []
        assert len(curves.steps) == 10 and curves._timer is not None  # a trailing redraw is scheduled
        curves.flush()
        assert curves.redraws == 2 and curves._timer is None
        assert list(curves.shown.data[0].x) == list(range(2, 11))
        assert list(curves.shown.data[2].y) == pytest.approx([0.1 * n for n in range(2, 11)])
        assert "Step 10: loss 2.000, 1.000 s, 256 tokens/s" in curves.status.value
        curves.flush()
        assert curves.redraws == 2  # nothing new: no message to the browser
        now[0] += 3600
        curves.update(_step(11, loss=math.nan))  # a loop that gave no loss: "–", not a number
        assert curves.redraws == 3 and "Step 11: loss –" in curves.status.value
    finally:
        curves.flush()  # cancels a pending timer


def test_live_curves_draw_the_last_steps_without_another_call() -> None:
    """The run's final steps arrive inside the interval; the trailing redraw shows them with no further update."""
    curves = LiveCurves(lang="ru", min_interval_s=0.05)
    curves.update(_step(1))
    curves.update(_step(2))
    deadline = time.monotonic() + 30
    while curves.drawn < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert curves.drawn == 2 and list(curves.shown.data[0].x) == [1, 2]
    assert "Шаг 2: loss 2,000, 0,200 с" in curves.status.value


def test_live_curves_display_in_a_notebook() -> None:
    curves = LiveCurves()
    bundle = curves._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert curves.status.value.count("Waiting for the first step") == 1 and len(curves.shown.data) == 8


# -- the estimate for exactly the record's configuration beside what it measured ------------------------------


def test_a_cpu_record_says_there_is_no_gpu_estimate_beside_it(finished_trial: TrialPanel) -> None:
    record = finished_trial.record
    s = record.summary
    rows, notes = beside_rows(record)
    assert rows == [
        {"quantity": "step time (median)", "measured": fmt_seconds(s.median_step_time_s), "estimated": "–",
         "error": "–"},
        {"quantity": "tokens/s", "measured": fmt_int(s.tokens_per_s), "estimated": "–", "error": "–"},
    ]
    assert notes[0].startswith("CPU trial: there is no GPU estimate to compare")
    page = html.unescape(finished_trial.beside.value)  # the panel shows it under the results
    assert "The estimate for exactly this configuration (stack hf-trainer) beside what was measured" in page
    assert "CPU trial: there is no GPU estimate to compare" in page and fmt_seconds(s.median_step_time_s) in page
    ru, ru_notes = beside_rows(record, "ru")
    assert ru[0]["quantity"] == "время шага (медиана)" and ru_notes[0].startswith("запуск на CPU: сравнивать не с чем")


def test_a_cuda_record_shows_the_estimate_beside_each_measurement(finished_trial: TrialPanel, tmp_path: Path) -> None:
    """The CPU record recast as measured on an H100 (3 GiB allocated, 4 GiB reserved, 0.5 s a step): every row
    is the measurement, the estimators' number for the plan as it ran, and measured / estimated - 1."""
    from test_calibration import as_gpu

    from gpuwork.measure.calibration import calibrate
    from gpuwork.sizing import estimate_time

    gpu = as_gpu(finished_trial.record, median_s=0.5, allocated=3 * 2**30, reserved=4 * 2**30)
    plan = TrainPlan.from_dict(calibrate(gpu).plan)  # the plan as run: one process, the attention it used
    memory, timing = estimate_memory(plan), estimate_time(plan, "h100_sxm")
    rows, notes = beside_rows(gpu)

    def error(measured: float, estimated: float) -> str:
        e = measured / estimated - 1
        return f"{'+' if e >= 0 else '-'}{abs(e) * 100:,.1f}%"

    assert rows == [
        {"quantity": "allocated peak (torch.cuda.max_memory_allocated)", "measured": "3.00 GiB",
         "estimated": fmt_memory(memory.peak_allocated_bytes), "error": error(3 * 2**30, memory.peak_allocated_bytes)},
        {"quantity": "reserved peak (torch.cuda.max_memory_reserved)", "measured": "4.00 GiB",
         "estimated": fmt_memory(memory.peak_reserved_bytes), "error": error(4 * 2**30, memory.peak_reserved_bytes)},
        {"quantity": "step time (median)", "measured": "0.500 s", "estimated": fmt_seconds(timing.step_time_s),
         "error": error(0.5, timing.step_time_s)},
        {"quantity": "tokens/s", "measured": fmt_int(gpu.summary.tokens_per_s),
         "estimated": fmt_int(timing.tokens_per_s), "error": error(gpu.summary.tokens_per_s, timing.tokens_per_s)},
    ]
    assert memory.peak_allocated_bytes < 3 * 2**30  # a tiny model: the recast measurement is far above it
    assert rows[0]["error"].startswith("+") and not any("CPU" in n for n in notes)
    # the panel shows it for a record loaded from its file (as gpuwork.hf.GpuworkCallback writes it)
    path = tmp_path / "gpu-record.json"
    gpu.to_json(path)
    panel = TrialPanel(report=True)
    assert panel.load(str(path)) is not None and panel.error is None
    page = html.unescape(panel.beside.value)
    assert "The estimate for exactly this configuration (stack hf-trainer, GPU h100_sxm)" in page
    for row in rows:
        assert f'{row["measured"]}</td>' in page and f'{row["estimated"]}</td>' in page and row["error"] in page
    assert "Whole run on 1 × H100 SXM" in html.unescape(panel.results.value)
    assert "Record " in panel.status.value and "NVIDIA H100" in panel.status.value
    ru = html.unescape(beside_html(gpu, "ru"))
    assert "Оценка ровно для этой конфигурации (стек hf-trainer, GPU h100_sxm)" in ru and "3,00 ГиБ" in ru
    step_error = 0.5 / timing.step_time_s - 1
    assert f"{'+' if step_error >= 0 else '-'}{fmt_number(abs(step_error) * 100, 'ru', 1)} %" in ru


def test_loading_a_record_that_is_not_one_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text("[1, 2]")
    panel = TrialPanel()
    assert panel.load(bad) is None and panel.record is None
    assert panel.error.startswith(f"cannot read trial record {bad}") and "\n" not in panel.error
    assert panel.load(tmp_path / "missing.json") is None and "missing.json" in panel.error
