"""Widgets: forms bound to a TrainPlan and the panels that show what the estimators say.

Solara's rule, three layers per panel: *state* (the plan and the results, plain attributes),
a *pure update* (``size_plan``, ``offer_rows``, ``estimate_vs_measured_rows``, ... call the estimators
and return data, no widgets), and a *thin view* (ipywidgets controls that rebuild the state on every
change and re-render HTML and plotly ``FigureWidget``s inside ``batch_update()``). Nothing here
computes a formula: numbers come from gpuwork's estimators and are only converted for display.

Panels:
    ``SizingForm``   model (preset, uploaded config.json or manual architecture), method, precision,
                     optimizer, batch shape, checkpointing, attention, LoRA, GPUs, sharding, data
                     -> memory breakdown and what-if charts, totals with their meanings, profile,
                     time and disk, and a "Verify exactly" button (fake-tensor trace of one step).
    ``TrialPanel``   a measured trial (tiny model on the CPU by default) with live curves, progress,
                     Stop, checkpoint round-trip, ramp, extrapolation and estimate vs measured.
    ``OffersPanel``  rental offers with filters and sorting, cost vs time, interruptible offers,
                     trial records side by side, and the rental request (``RequestPanel``).

Every panel runs in two modes: interactive (widgets, live ``FigureWidget``s) and report
(``report=True``: plain ``go.Figure``s and HTML that survive offline HTML export). ``show(part)``
displays one part in either mode, which is what the notebooks call. Invalid input anywhere shows one
friendly line (class ``gpuwork-error``), never a traceback, and the panel keeps working.

Example:
    >>> form = SizingForm({"model": "llama-3.2-1b", "method": "lora"})
    >>> form.controls["seq_len"].value = 4096
    >>> form.plan.seq_len, form.memory.device_total_bytes > 0
    (4096, True)

Limitations: labels exist in English and Russian; estimator explanations (profile reasons aside) are
in English. The manual architecture builds a Llama-style decoder. Button actions (trace, trial) run in
a background thread; several at once are refused rather than queued.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import html
import json
import logging
import math
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go

from gpuwork import sizing
from gpuwork.errors import CatalogError, GpuworkError, ModelError, PlanError
from gpuwork.estimate.memory import GIB, MIB, MemoryEstimate
from gpuwork.estimate.offers import DEFAULT_PREEMPTION_RATE_PER_HOUR
from gpuwork.facts.catalog import GpuClass, GpuSpec, Mode, Region, get_gpu, load_gpus
from gpuwork.facts.model import list_presets, spec_for_plan
from gpuwork.measure import calibration
from gpuwork.plan import Attention, Method, Optimizer, Precision, Sharding, TrainPlan
from gpuwork.present import charts
from gpuwork.present import request as rental
from gpuwork.sizing import estimate_memory

_log = logging.getLogger(__name__)

LANGS = ("en", "ru")
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
# Trial defaults: a tiny real model on the CPU, a few steps (seconds).
DEFAULT_TRIAL_PLAN = {"model": "tiny-llama", "method": "lora", "precision": "fp32", "seq_len": 128,
                      "batch_size": 4}
# The app's demo trial: tiny presets only, short, one at a time on this machine.
DEMO_LIMITS = {"steps": 20, "warmup": 3, "seq_len": 256, "batch_size": 8, "grad_accum": 4}
DEMO_LOCK_FILE = "gpuwork-demo-trial.lock"

_ERROR_COLOR = "#c62828"
_NOTE_COLOR = "#9a6700"
_MUTED = "#555"
_WIDE = {"description_width": "170px"}
_CONTROL_LAYOUT = {"width": "380px"}
_CHECKBOX_LAYOUT = {"width": "auto"}

# -- labels -----------------------------------------------------------------------------------------

_UI: dict[str, dict[str, str]] = {
    "en": {
        "title": "gpuwork — GPU sizing for fine-tuning",
        "intro": ("Will a fine-tuning run fit, on which card, for how long and for how much? <b>Sizing</b>: pick a "
                  "model (a preset, your config.json, or the architecture by hand) and the training setup; the "
                  "charts show the memory <b>per GPU</b> term by term and what happens as the sequence or the batch "
                  "grows. <b>Offers</b>: rental offers ranked for the plan. <b>Request</b>: the text to send a "
                  "provider. <b>Demo trial</b>: a tiny real fine-tune on this server's CPU."),
        "model_source": "Model from", "src_preset": "preset", "src_upload": "config.json", "src_manual": "manual",
        "model": "Model", "upload": "Upload config.json",
        "hidden_size": "Hidden size", "num_hidden_layers": "Layers", "num_attention_heads": "Heads",
        "num_key_value_heads": "KV heads", "intermediate_size": "MLP intermediate", "vocab_size": "Vocabulary",
        "method": "Method", "precision": "Precision", "optimizer": "Optimizer", "seq_len": "Sequence length",
        "batch_size": "Micro-batch", "grad_accum": "Grad accumulation", "grad_checkpointing": "Gradient checkpointing",
        "attention": "Attention", "lora_r": "LoRA rank r", "lora_targets": "LoRA targets", "gpus": "GPUs",
        "sharding": "Sharding", "dataset_tokens": "Dataset, tokens", "epochs": "Epochs",
        "candidates": "Compare with cards", "axis": "What if", "axis_seq_len": "sequence length",
        "axis_batch_size": "micro-batch",
        "verify": "Verify exactly (trace one step)",
        "h_model": "Model", "h_training": "Training", "h_gpus": "GPUs and data",
        "h_totals": "Totals per GPU", "h_profile": "Rental profile", "h_time": "Time", "h_disk": "Disk",
        "h_verify": "Exact check", "h_results": "Results", "h_compare": "Trial records side by side",
        "h_interruptible": "Interruptible offers: preemptions and checkpoints", "h_offers": "Offers",
        "h_request": "Rental request",
        "total": "Total", "gib": "GiB", "meaning": "What it counts", "term": "Term", "source": "Source",
        "peak_at": "The peak comes during the <b>{phase}</b>.",
        "params": "Parameters: {total} total, {trainable} trainable.",
        "host": "Offloaded to CPU RAM (not on the GPU): {gib} GiB",
        "gib_note": "GiB = 2<sup>30</sup> bytes; GB = 10<sup>9</sup> bytes.",
        "no_profile": "No profile fits this plan.",
        "profile": "Profile {id} “{name}”: {gpus} × {gpu} ({mode}).",
        "not_profile": "not {id}: {why}", "check": "check: {what}", "changes": "changes to the plan: {what}",
        "time_line": ("On {gpus} × {gpu}: step {step} s, {tps} tokens/s, {steps} steps; training {train} + "
                      "eval {eval} + checkpoints {ckpt} + margin {margin} = <b>{total}</b> ({gpu_hours} GPU-hours)."),
        "mfu": "Efficiency (MFU) {mfu:.2f}: {basis}.",
        "disk_total": "Recommended disk: <b>{total}</b> (lines below + {margin} margin).",
        "verify_hint": "Runs one real training step of this model under fake tensors (no GPU, no weights): "
                       "seconds to a minute.",
        "tracing": "Tracing one step under fake tensors… (seconds to a minute)",
        "traced": "Traced peak allocated", "analytic": "Analytic estimate (same quantity, no cuBLAS workspace)",
        "difference": "Difference", "traced_phase": "traced peak in {traced}; estimate's peak in {analytic}",
        "trace_plan": "Plan traced: {plan}", "stand_in": "stand-in: {what}", "category": "Category",
        "invalid": "Fix the input above to see the estimate.",
        "building": "Building {name} on the meta device…",
        "busy": "Another action is still running: wait for it to finish.",
        "upload_first": "upload a config.json first (the file from the model's Hugging Face page)",
        # trial
        "steps": "Measured steps", "warmup": "Warm-up steps", "ramp": "Also ramp (largest batch / seq that fits)",
        "run": "Run trial", "stop": "Stop", "progress": "Progress",
        "trial_ready": "Ready: {plan}. Press “Run trial”.",
        "trial_building": "Building the model and the data…",
        "trial_step": "Step {step}/{total}: loss {loss:.3f}, {time:.3f} s, {tps:,.0f} tokens/s",
        "trial_stopped": "Stopped after {n} step(s): no record (a stopped trial proves nothing).",
        "trial_done": "Done: {n} measured step(s) in {s:.1f} s.",
        "trial_busy": "A demo trial is already running on this machine: try again in a minute.",
        "trial_oom": "Out of memory: {error}. Peak reached {mib} MiB.",
        "summary": ("Median step {median:.3f} s (p90 {p90:.3f} s), {tps:,.0f} tokens/s, peak trial memory "
                    "{mib:,.0f} MiB on {device}; loss {first:.3f} → {last:.3f}."),
        "data_verdict": "Data: {verdict}.",
        "checkpoint": "Checkpoint round-trip: {verdict} — {message} ({size} on disk, save {save:.2f} s, "
                      "restore {restore:.2f} s).",
        "verified": "verified", "not_verified": "NOT verified",
        "ramp_line": "Ramp: largest micro-batch {batch} at seq {seq0} ({why_b}); longest seq {seq} at that "
                     "batch ({why_s}); {n} probes.",
        "ramp_none": "Ramp: nothing fit.",
        "extrapolation": "Whole run on {gpus} × {gpu} at the measured speed: {total} ({steps} steps).",
        "no_extrapolation": ("Extrapolation to the whole run needs a trial on a GPU listed in data/gpus.csv; "
                             "this trial ran on {device}: it proves the pipeline, not the speed."),
        "saved": "Record saved: <code>{path}</code>", "not_saved": "Record not saved (no output folder set).",
        "substitutions": "Substitutions: {what}",
        "demo_note": ("Demo: tiny models on this machine's CPU, at most {steps} steps, sequence {seq}, "
                      "batch {batch}; one trial at a time."),
        # offers
        "modes": "Rental mode", "classes": "GPU class", "regions": "Region", "max_price": "Max $/GPU-hour",
        "min_vram": "Min GB per GPU", "budget": "Budget, USD", "sort": "Sort by", "include_unfit": "Show offers "
        "that do not fit", "preemption_rate": "Preemptions per hour", "limit": "Rows",
        "sort_cost": "expected cost", "sort_time": "expected time", "sort_price": "price per GPU-hour",
        "sort_vram": "GPU memory", "zero_any": "0 = any",
        "col_offer": "Offer", "col_gpu": "GPU", "col_mode": "Mode", "col_region": "Region",
        "col_price": "$/GPU-h", "col_gpus": "GPUs used / billed", "col_sharding": "Sharding",
        "col_time": "Expected time", "col_cost": "Expected cost", "col_notes": "Notes",
        "col_uninterrupted": "Without preemptions", "col_preemptions": "Expected preemptions",
        "col_rework": "Rework", "col_interval": "Checkpoint every (now)", "col_recommended": "Recommended",
        "no_offers": "No offer passes the filters.", "none_interruptible": "No fitting interruptible offer.",
        "offers_note": "Prices are illustrative dated snapshots from data/catalog.csv, not quotes.",
        "records": "Trial records (.json)", "record_price": "Price, $/hour (0 = none)",
        "no_records": "No trial records yet: run a trial or upload its JSON record.",
        "pick_one": "pick at least one {what}",
        # request
        "req_lang": "Language", "start_date": "Start date", "date_hint": "YYYY-MM-DD (optional)",
        "rent_days": "Rent period, days", "days_hint": "0 = from the estimate",
        "trial_required": "Ask for a step-time trial", "explicit_context": "State seq length and batch",
        "dataset_gb": "Dataset size, GB", "gb_hint": "0 = from tokens",
        "download_txt": "Download the request (.txt)", "download_json": "Download as JSON",
        "copy_hint": "Select the text and copy it, or download it.",
        # app
        "tab_sizing": "Sizing", "tab_offers": "Offers", "tab_request": "Request", "tab_trial": "Demo trial",
        "language": "Language",
    },
    "ru": {
        "title": "gpuwork — подбор GPU для дообучения",
        "intro": ("Поместится ли дообучение, на какую карту, надолго ли и за сколько? <b>Расчёт</b>: выберите "
                  "модель (пресет, свой config.json или архитектуру вручную) и параметры обучения; графики "
                  "показывают память <b>на один GPU</b> по слагаемым и её рост с длиной последовательности и "
                  "батчем. <b>Предложения</b>: предложения аренды для плана. <b>Заявка</b>: текст для провайдера. "
                  "<b>Пробный запуск</b>: маленькое настоящее дообучение на CPU этого сервера."),
        "model_source": "Модель из", "src_preset": "пресет", "src_upload": "config.json", "src_manual": "вручную",
        "model": "Модель", "upload": "Загрузить config.json",
        "hidden_size": "Скрытый размер", "num_hidden_layers": "Слои", "num_attention_heads": "Головы внимания",
        "num_key_value_heads": "KV-головы", "intermediate_size": "Промежуточный MLP", "vocab_size": "Словарь",
        "method": "Метод", "precision": "Точность", "optimizer": "Оптимизатор", "seq_len": "Длина последов.",
        "batch_size": "Микробатч", "grad_accum": "Накопление град.", "grad_checkpointing": "Gradient checkpointing",
        "attention": "Внимание", "lora_r": "Ранг LoRA r", "lora_targets": "Модули LoRA", "gpus": "Число GPU",
        "sharding": "Шардирование", "dataset_tokens": "Датасет, токенов", "epochs": "Эпохи",
        "candidates": "Сравнить с картами", "axis": "Что если", "axis_seq_len": "длина последовательности",
        "axis_batch_size": "микробатч",
        "verify": "Проверить точно (трассировка шага)",
        "h_model": "Модель", "h_training": "Обучение", "h_gpus": "GPU и данные",
        "h_totals": "Итоги на один GPU", "h_profile": "Профиль аренды", "h_time": "Время", "h_disk": "Диск",
        "h_verify": "Точная проверка", "h_results": "Результаты", "h_compare": "Записи пробных запусков рядом",
        "h_interruptible": "Прерываемые предложения: прерывания и чекпойнты", "h_offers": "Предложения",
        "h_request": "Заявка на аренду",
        "total": "Итог", "gib": "ГиБ", "meaning": "Что считает", "term": "Слагаемое", "source": "Источник",
        "peak_at": "Пик приходится на этап <b>{phase}</b>.",
        "params": "Параметры: всего {total}, обучаемых {trainable}.",
        "host": "Выгружено в ОЗУ CPU (не на GPU): {gib} ГиБ",
        "gib_note": "ГиБ = 2<sup>30</sup> байт; ГБ = 10<sup>9</sup> байт.",
        "no_profile": "Ни один профиль не подходит этому плану.",
        "profile": "Профиль {id} «{name}»: {gpus} × {gpu} ({mode}).",
        "not_profile": "не {id}: {why}", "check": "проверить: {what}", "changes": "изменения плана: {what}",
        "time_line": ("На {gpus} × {gpu}: шаг {step} с, {tps} токенов/с, {steps} шагов; обучение {train} + "
                      "валидация {eval} + чекпойнты {ckpt} + запас {margin} = <b>{total}</b> ({gpu_hours} GPU-часов)."),
        "mfu": "Эффективность (MFU) {mfu:.2f}: {basis}.",
        "disk_total": "Рекомендуемый диск: <b>{total}</b> (строки ниже + запас {margin}).",
        "verify_hint": "Один настоящий шаг обучения этой модели на фейковых тензорах (без GPU и весов): "
                       "от секунд до минуты.",
        "tracing": "Трассировка шага на фейковых тензорах… (от секунд до минуты)",
        "traced": "Пик выделенной по трассировке", "analytic": "Аналитическая оценка (та же величина, без cuBLAS)",
        "difference": "Разница", "traced_phase": "пик трассировки: {traced}; пик оценки: {analytic}",
        "trace_plan": "Трассированный план: {plan}", "stand_in": "замена: {what}", "category": "Категория",
        "invalid": "Исправьте ввод выше, чтобы увидеть оценку.",
        "building": "Строим {name} на meta-устройстве…",
        "busy": "Предыдущее действие ещё выполняется: дождитесь его окончания.",
        "upload_first": "сначала загрузите config.json (файл со страницы модели на Hugging Face)",
        "steps": "Шагов замера", "warmup": "Шагов прогрева", "ramp": "Ещё и рампа (наибольший батч / длина)",
        "run": "Запустить", "stop": "Стоп", "progress": "Ход",
        "trial_ready": "Готово к запуску: {plan}. Нажмите «Запустить».",
        "trial_building": "Строим модель и данные…",
        "trial_step": "Шаг {step}/{total}: loss {loss:.3f}, {time:.3f} с, {tps:,.0f} токенов/с",
        "trial_stopped": "Остановлено после {n} шаг(ов): записи нет (остановленный запуск ничего не доказывает).",
        "trial_done": "Готово: {n} шаг(ов) замера за {s:.1f} с.",
        "trial_busy": "На этой машине уже идёт демонстрационный запуск: попробуйте через минуту.",
        "trial_oom": "Не хватило памяти: {error}. Достигнутый пик {mib} МиБ.",
        "summary": ("Медиана шага {median:.3f} с (p90 {p90:.3f} с), {tps:,.0f} токенов/с, пик памяти запуска "
                    "{mib:,.0f} МиБ на {device}; loss {first:.3f} → {last:.3f}."),
        "data_verdict": "Данные: {verdict}.",
        "checkpoint": "Чекпойнт: {verdict} — {message} ({size} на диске, сохранение {save:.2f} с, "
                      "восстановление {restore:.2f} с).",
        "verified": "проверен", "not_verified": "НЕ проверен",
        "ramp_line": "Рампа: наибольший микробатч {batch} при длине {seq0} ({why_b}); наибольшая длина {seq} "
                     "при этом батче ({why_s}); проб: {n}.",
        "ramp_none": "Рампа: ничего не поместилось.",
        "extrapolation": "Весь запуск на {gpus} × {gpu} при замеренной скорости: {total} ({steps} шагов).",
        "no_extrapolation": ("Экстраполяция на весь запуск требует пробного запуска на GPU из data/gpus.csv; "
                             "этот запуск шёл на {device}: он проверяет конвейер, а не скорость."),
        "saved": "Запись сохранена: <code>{path}</code>", "not_saved": "Запись не сохранена (папка не задана).",
        "substitutions": "Замены: {what}",
        "demo_note": ("Демонстрация: маленькие модели на CPU этой машины, не больше {steps} шагов, длина {seq}, "
                      "батч {batch}; по одному запуску."),
        "modes": "Режим аренды", "classes": "Класс GPU", "regions": "Регион", "max_price": "Макс. $/GPU-час",
        "min_vram": "Мин. ГБ на GPU", "budget": "Бюджет, USD", "sort": "Сортировать",
        "include_unfit": "Показывать неподходящие", "preemption_rate": "Прерываний в час", "limit": "Строк",
        "sort_cost": "ожидаемая стоимость", "sort_time": "ожидаемое время", "sort_price": "цена GPU-часа",
        "sort_vram": "память GPU", "zero_any": "0 = любой",
        "col_offer": "Предложение", "col_gpu": "GPU", "col_mode": "Режим", "col_region": "Регион",
        "col_price": "$/GPU-ч", "col_gpus": "GPU: занято / оплачено", "col_sharding": "Шардирование",
        "col_time": "Ожидаемое время", "col_cost": "Ожидаемая стоимость", "col_notes": "Примечания",
        "col_uninterrupted": "Без прерываний", "col_preemptions": "Ожидаемых прерываний",
        "col_rework": "Переделка", "col_interval": "Чекпойнт каждые (сейчас)", "col_recommended": "Рекомендуется",
        "no_offers": "Ни одно предложение не проходит фильтры.",
        "none_interruptible": "Нет подходящих прерываемых предложений.",
        "offers_note": "Цены — ориентировочные датированные снимки из data/catalog.csv, не оферта.",
        "records": "Записи запусков (.json)", "record_price": "Цена, $/час (0 = нет)",
        "no_records": "Записей пока нет: запустите пробный запуск или загрузите его JSON.",
        "pick_one": "выберите хотя бы один вариант: {what}",
        "req_lang": "Язык", "start_date": "Дата начала", "date_hint": "ГГГГ-ММ-ДД (необязательно)",
        "rent_days": "Срок аренды, дней", "days_hint": "0 = по оценке",
        "trial_required": "Просить тест времени шага", "explicit_context": "Указать длину и батч",
        "dataset_gb": "Размер датасета, ГБ", "gb_hint": "0 = по токенам",
        "download_txt": "Скачать заявку (.txt)", "download_json": "Скачать как JSON",
        "copy_hint": "Выделите текст и скопируйте его или скачайте.",
        "tab_sizing": "Расчёт", "tab_offers": "Предложения", "tab_request": "Заявка", "tab_trial": "Пробный запуск",
        "language": "Язык",
    },
}


def ui(key: str, lang: str = "en") -> str:
    """A UI label in ``lang``; English when the key has no translation."""
    return _UI.get(lang, _UI["en"]).get(key, _UI["en"][key])


# -- small display helpers (conversion for display only) ---------------------------------------------


def one_line(message: Any) -> str:
    """A message on one line (the app shows errors as a single line)."""
    return " ".join(str(message).split())


def error_html(message: str) -> str:
    """A friendly one-line error in red, HTML-escaped."""
    return (f'<div class="gpuwork-error" style="color:{_ERROR_COLOR};font-weight:600">'
            f"{html.escape(one_line(message))}</div>")


def note_html(message: str, color: str = _MUTED, cls: str = "gpuwork-note") -> str:
    return f'<div class="{cls}" style="color:{color}">{message}</div>'


def friendly(exc: BaseException) -> str:
    """One line for the user: the message of a GpuworkError, or a short 'unexpected error' line."""
    if isinstance(exc, GpuworkError):
        return one_line(exc)
    _log.error("unexpected error in a gpuwork widget", exc_info=exc)
    return one_line(f"unexpected error ({type(exc).__name__}: {exc}); this is a bug in gpuwork, please report it "
                    "with the values you entered")


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:,.2f}"


def _gb(n_bytes: float) -> str:
    return f"{n_bytes / 1e12:,.2f} TB" if n_bytes >= 1e12 else f"{n_bytes / 1e9:,.1f} GB"


def _duration(seconds: float | None, lang: str = "en") -> str:
    if seconds is None:
        return "–"
    if not math.isfinite(seconds):
        return "∞"
    h, m, d = ("ч", "мин", "дн.") if lang == "ru" else ("h", "min", "days")
    hours = seconds / 3600
    if hours < 1:
        return f"{seconds / 60:.0f} {m}"
    out = f"{hours:,.1f} {h}" if hours < 10 else f"{hours:,.0f} {h}"
    return out + (f" ({hours / 24:.0f} {d})" if hours > 72 else "")


def _usd(x: float | None) -> str:
    if x is None:
        return "–"
    if not math.isfinite(x):
        return "∞"
    return f"${x:,.0f}" if x >= 100 else f"${x:,.2f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], cls: str, right: Sequence[int] = ()) -> str:
    """An HTML table; cells are already-escaped HTML strings; ``right`` aligns those columns right."""
    def cell(tag: str, i: int, value: Any) -> str:
        style = "text-align:right;white-space:nowrap" if i in right else "text-align:left"
        return f'<{tag} style="{style};padding:2px 8px">{value}</{tag}>'

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>" for row in rows)
    return (f'<table class="{cls}" style="border-collapse:collapse;margin:4px 0">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _h(level: int, text: str) -> str:
    return f'<h{level} style="margin:10px 0 4px 0">{html.escape(text)}</h{level}>'


def _plan_caption(plan: TrainPlan, model_label: str | None = None) -> str:
    return (f"{model_label or plan.model}, {plan.method.value}, {plan.precision.value}, {plan.optimizer.value}, "
            f"seq {plan.seq_len:,} × batch {plan.batch_size} (×{plan.grad_accum}), {plan.gpus} GPU(s) "
            f"{plan.sharding.value}")


def setup_notebook(report: bool = False) -> None:
    """Call once at the top of a notebook. Report mode embeds plotly.js in the output (offline HTML).

    With ``report=True`` plotly's renderer becomes ``plotly_mimetype+notebook``: the first figure's cell
    carries the plotly.js library itself, so exported HTML works without a network. Interactive mode
    keeps the default renderer (FigureWidgets render through their widget).
    """
    if report:
        import plotly.io as pio

        pio.renderers.default = "plotly_mimetype+notebook"


def plan_from(value: TrainPlan | Mapping[str, Any] | None, default: Mapping[str, Any] | None = None) -> TrainPlan:
    """A TrainPlan from a plan, a dict of fields (``{"plan": {...}}`` accepted) or None (the default)."""
    if isinstance(value, TrainPlan):
        return value
    data = dict(default or {})
    if value:
        inner = value.get("plan") if isinstance(value.get("plan"), Mapping) else value
        data.update(inner)
    return TrainPlan.from_dict(data)


def _display(*objects: Any) -> None:
    from IPython.display import display

    for obj in objects:
        if obj is not None:
            display(obj)


def _html_obj(value: str) -> Any:
    from IPython.display import HTML

    return HTML(value)


# -- FigureWidget updates -----------------------------------------------------------------------------


def sync_figure(target: go.FigureWidget, fig: go.Figure) -> None:
    """Make a live FigureWidget show ``fig``: in place, in one ``batch_update()`` message carrying only the
    properties that changed, when the traces match in number and type (the charts keep them fixed);
    else by replacing the traces. The widget keeps the template it was created with."""
    new_layout = fig.layout.to_plotly_json()
    new_layout.pop("template", None)
    same = len(target.data) == len(fig.data) and all(a.type == b.type for a, b in zip(target.data, fig.data,
                                                                                        strict=False))
    if not same:
        target.data = ()
        target.add_traces(list(fig.data))
    old_layout = target.layout.to_plotly_json()
    with target.batch_update():
        if same:
            for old, new in zip(target.data, fig.data, strict=True):
                before, after = old.to_plotly_json(), new.to_plotly_json()
                changed = {k: v for k, v in after.items() if k not in ("type", "uid") and before.get(k) != v}
                if changed:
                    old.update(changed, overwrite=True)
        changed_layout = {k: v for k, v in new_layout.items() if old_layout.get(k) != v}
        if changed_layout:
            target.layout.update(changed_layout, overwrite=True)


class _LiveFigure:
    """A chart slot: a FigureWidget created on first use (each one ships plotly.js to the browser).

    ``after`` (another slot) defers this one until that slot's chart has rendered in a browser (its
    first trace report comes back): two FigureWidgets loading at once on a small machine can exceed
    anywidget's 2 s initialisation limit. Until then the latest figure waits in ``pending``.
    """

    def __init__(self, css_class: str, after: _LiveFigure | None = None):
        self.box = widgets.VBox(layout={"width": "100%"})  # a column stretches the chart to the full width
        self.box.add_class(css_class)
        self.widget: go.FigureWidget | None = None
        self.pending: go.Figure | None = None
        self._waiting = after is not None
        self._followers: list[_LiveFigure] = []
        self._lock = threading.Lock()
        if after is not None:
            after._followers.append(self)

    def show(self, fig: go.Figure) -> None:
        with self._lock:
            if self._waiting:
                self.pending = fig
                return
            if self.widget is None:
                self.widget = go.FigureWidget(fig)
                if self._followers:
                    self.widget.observe(self._rendered, names="_js2py_traceDeltas")
                self.box.children = (self.widget,)
            else:
                sync_figure(self.widget, fig)

    def release(self) -> None:
        """Stop waiting: create the chart now with the latest figure."""
        with self._lock:
            self._waiting = False
            fig, self.pending = self.pending, None
        if fig is not None:
            self.show(fig)

    def _rendered(self, change: Any) -> None:
        if change["new"] is None or self.widget is None:
            return
        self.widget.unobserve(self._rendered, names="_js2py_traceDeltas")
        for follower in self._followers:
            follower.release()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Library warnings (FutureWarning from transformers, ...) must not reach the page."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _run_in_thread(name: str, target: Callable[[], Any]) -> threading.Thread:
    def guarded() -> None:
        try:
            target()
        except Exception:  # noqa: BLE001 - the target shows its own errors; never kill the kernel
            _log.exception("%s failed", name)

    thread = threading.Thread(target=guarded, name=f"gpuwork-{name}", daemon=True)
    thread.start()
    return thread


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
            raise ModelError(f"{name}={value!r}: use a whole number >= 1")
        out[name] = value
    if out["hidden_size"] % out["num_attention_heads"]:
        raise ModelError(f"hidden_size={out['hidden_size']} must be divisible by num_attention_heads="
                         f"{out['num_attention_heads']} (each head gets an equal slice)")
    if out["num_attention_heads"] % out["num_key_value_heads"]:
        raise ModelError(f"num_attention_heads={out['num_attention_heads']} must be divisible by "
                         f"num_key_value_heads={out['num_key_value_heads']} (grouped-query attention)")
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **out,
            "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "hidden_act": "silu",
            "tie_word_embeddings": False, "rope_theta": 500000.0}


def parse_config(content: bytes, name: str = "config.json") -> dict[str, Any]:
    """The dict in an uploaded config.json; ModelError when it is not a Hugging Face config."""
    try:
        data = json.loads(bytes(content).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelError(f"{name} is not valid JSON ({exc}): upload the model's config.json") from None
    if not isinstance(data, dict) or "model_type" not in data:
        raise ModelError(f"{name} is not a Hugging Face config.json: it has no 'model_type' key")
    return data


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
    notes: tuple[str, ...] = field(default_factory=tuple)  # parts that could not be estimated, one line each


def whatif_series(plan: TrainPlan, axis: str, values: Sequence[int], methods: Sequence[str] = WHATIF_METHODS
                  ) -> dict[str, list[int | None]]:
    """Device total per GPU (bytes) of ``plan`` with ``axis`` set to each value, for each method."""
    if axis not in WHATIF_VALUES:
        raise PlanError(axis, f"what-if axis {axis!r} must be one of {', '.join(WHATIF_VALUES)}")
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


def size_plan(plan: TrainPlan, *, axis: str = "seq_len") -> SizingResult:
    """Memory, what-if curves, profile (with its time estimate) and disk for one plan.

    Raises GpuworkError when the memory estimate itself cannot be made; profile and disk failures
    become one-line ``notes`` so that the memory answer is still shown.
    """
    memory = estimate_memory(plan)
    values = tuple(sorted(set(WHATIF_VALUES[axis]) | {getattr(plan, axis)}))
    series = whatif_series(plan, axis, values)
    notes: list[str] = []
    profile = disk = None
    try:
        profile = sizing.match_profile(plan)
    except GpuworkError as exc:
        notes.append(f"profile: {one_line(exc)}")
    try:
        disk = sizing.estimate_disk(plan)
    except GpuworkError as exc:
        notes.append(f"disk: {one_line(exc)}")
    return SizingResult(plan, memory, axis, values, series, profile, disk, tuple(notes))


def totals_html(plan: TrainPlan, est: MemoryEstimate, lang: str = "en", model_label: str | None = None) -> str:
    """The three totals with what each one counts, the peak's phase, warnings and offloaded RAM."""
    rows = []
    for attr, _en, _ru in charts.TOTALS:
        label, meaning = charts.total_label(attr, lang)
        rows.append((f"<b>{html.escape(label)}</b>", f"<b>{_gib(getattr(est, attr))}</b>", html.escape(meaning)))
    table = _table((ui("total", lang), ui("gib", lang), ui("meaning", lang)), rows, "gpuwork-totals", right=(1,))
    notes = [ui("peak_at", lang).format(phase=html.escape(est.peak_phase)),
             ui("params", lang).format(total=f"{est.params.total:,}", trainable=f"{est.params.trainable:,}")]
    if est.host_bytes:
        notes.append(ui("host", lang).format(gib=_gib(est.host_bytes)))
    warn = "".join(note_html("⚠ " + html.escape(one_line(w)), _NOTE_COLOR, "gpuwork-warning") for w in est.warnings)
    return (f'<div class="gpuwork-summary"><p style="margin:2px 0">{html.escape(_plan_caption(plan, model_label))}'
            f"</p>{table}<p style='margin:2px 0;color:{_MUTED}'>{' '.join(notes)} {ui('gib_note', lang)}</p>"
            f"{warn}</div>")


def details_html(result: SizingResult, lang: str = "en") -> str:
    """Profile (with reasons), time on the profile's card and the disk plan, as HTML."""
    parts: list[str] = []
    match = result.profile
    if match is not None:
        parts.append(_h(4, ui("h_profile", lang)))
        if match.profile is None:
            parts.append(f"<p>{ui('no_profile', lang)}</p>")
        else:
            name = match.profile.name_ru if lang == "ru" else match.profile.name_en
            parts.append("<p>" + ui("profile", lang).format(id=match.profile.profile_id, name=html.escape(name),
                                                           gpus=match.gpus, gpu=html.escape(match.gpu_name or "?"),
                                                           mode=match.profile.mode.value) + "</p>")
        reasons = match.reasons_ru if lang == "ru" else match.reasons
        rejected = match.rejected_ru if lang == "ru" else match.rejected
        checks = match.checks_ru if lang == "ru" else match.checks
        items = [f"<li>+ {html.escape(r)}</li>" for r in reasons]
        items += [f"<li style='color:{_MUTED}'>– " + html.escape(ui("not_profile", lang).format(id=k, why=v))
                  + "</li>" for k, v in sorted(rejected.items())]
        if match.changes:
            items.append("<li>" + html.escape(ui("changes", lang).format(what=", ".join(match.changes))) + "</li>")
        items += [f"<li>{html.escape(ui('check', lang).format(what=c))}</li>" for c in checks]
        parts.append(f'<ul class="gpuwork-profile" style="margin:2px 0">{"".join(items)}</ul>')
        t = match.time
        if t is not None:
            parts.append(_h(4, ui("h_time", lang)))
            parts.append('<p class="gpuwork-time">' + ui("time_line", lang).format(
                gpus=t.plan.gpus, gpu=html.escape(t.gpu_name), step=f"{t.step_time_s:.3f}",
                tps=f"{t.tokens_per_s:,.0f}", steps=f"{t.steps:,}", train=_duration(t.train_s, lang),
                eval=_duration(t.eval_s, lang), ckpt=_duration(t.checkpoint_s, lang),
                margin=_duration(t.margin_s, lang), total=_duration(t.total_s, lang),
                gpu_hours=f"{t.gpu_hours:,.0f}") + "</p>")
            parts.append(note_html(html.escape(ui("mfu", lang).format(mfu=t.mfu.value, basis=t.mfu.basis))))
            for line in (t.comm.verdict, t.data.verdict):
                parts.append(note_html(html.escape(line)))
    disk = result.disk
    if disk is not None:
        parts.append(_h(4, ui("h_disk", lang)))
        parts.append("<p>" + ui("disk_total", lang).format(total=_gb(disk.recommended_bytes),
                                                           margin=_gb(disk.margin_bytes)) + "</p>")
        rows = [(html.escape(item.label), _gb(item.bytes), f"<span style='color:{_MUTED}'>{html.escape(item.rule)}"
                 "</span>") for item in disk.lines]
        parts.append(_table(("", "", ""), rows, "gpuwork-disk", right=(1,)))
        parts += [note_html(html.escape(n), _NOTE_COLOR) for n in disk.notes]
    parts += [note_html(html.escape(n), _NOTE_COLOR) for n in result.notes]
    return '<div class="gpuwork-details">' + "".join(parts) + "</div>"


def trace_html(plan: TrainPlan, traced: Any, est: MemoryEstimate | None, lang: str = "en") -> str:
    """Traced peak (fake-tensor step) next to the analytic estimate of the same quantity."""
    rows = [(html.escape(k.replace("_", " ")), _gib(v)) for k, v in traced.breakdown.items() if v]
    parts = [note_html(html.escape(ui("trace_plan", lang).format(plan=_plan_caption(plan)))),
             _table((ui("category", lang), ui("gib", lang)), rows, "gpuwork-trace-breakdown", right=(1,))]
    total_rows = [(f"<b>{ui('traced', lang)}</b>", f"<b>{_gib(traced.peak_allocated_bytes)}</b>")]
    if est is not None and est.plan == plan:
        analytic = est.peak_allocated_bytes - est.breakdown.get("cublas_workspace", 0)  # as `gpuwork trace` shows
        diff = analytic / traced.peak_allocated_bytes - 1 if traced.peak_allocated_bytes else float("nan")
        total_rows += [(ui("analytic", lang), _gib(analytic)), (ui("difference", lang), f"{diff:+.1%}")]
        parts.append(_table(("", ui("gib", lang)), total_rows, "gpuwork-trace-totals", right=(1,)))
        parts.append(note_html(html.escape(ui("traced_phase", lang).format(traced=traced.peak_phase,
                                                                            analytic=est.peak_phase))))
    else:
        parts.append(_table(("", ui("gib", lang)), total_rows, "gpuwork-trace-totals", right=(1,)))
    parts += [note_html(html.escape(ui("stand_in", lang).format(what=s)), _NOTE_COLOR) for s in traced.stand_ins]
    parts.append(note_html(f"{traced.elapsed_s:.1f} s"))
    return '<div class="gpuwork-trace">' + "".join(parts) + "</div>"


# -- the sizing form ---------------------------------------------------------------------------------


class SizingForm:
    """Controls bound to a TrainPlan, and what the estimators say about it.

    State (after every change): ``plan`` and ``result`` (a SizingResult; None while the input is
    invalid), ``error`` (the one-line message shown, or None), ``traced`` (the last exact check).
    ``controls`` maps TrainPlan field -> widget; ``manual`` the architecture fields; ``upload`` the
    config.json upload; ``model_source`` chooses between preset, upload and manual.

    Args:
        plan: the starting plan (a TrainPlan or a dict of its fields).
        gpus: gpu_ids (or names) of the cards drawn as memory lines.
        lang: "en" or "ru".
        report: build plain figures and HTML for ``show`` (no FigureWidgets).
        stagger: create the what-if chart only once the breakdown chart has rendered in a browser (the
            Voila app: one plotly.js bundle loads at a time).
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, gpus: Sequence[str] = DEFAULT_GPUS,
                 lang: str = "en", report: bool = False, stagger: bool = False):
        self.lang = lang if lang in LANGS else "en"
        self.report = report
        self.store = ConfigStore()
        self.plan: TrainPlan | None = None
        self.result: SizingResult | None = None
        self.error: str | None = None
        self.traced: Any = None
        self._listeners: list[Callable[[TrainPlan], Any]] = []
        self._muted = False
        self._busy = threading.Lock()
        self._uploaded: tuple[str, dict[str, Any]] | None = None
        self._catalog = load_gpus()
        try:
            base = plan_from(plan)
            start_error = None
        except GpuworkError as exc:
            base, start_error = TrainPlan(), friendly(exc)
        self.base_plan = base
        self._build_controls(base, gpus)
        self.breakdown = _LiveFigure("gpuwork-breakdown")
        self.whatif = _LiveFigure("gpuwork-whatif", after=self.breakdown if stagger else None)
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
        self.upload = widgets.FileUpload(accept=".json", multiple=False)
        self.upload_name = widgets.HTML()
        self.manual = {name: widgets.IntText(value=MANUAL_DEFAULTS[name], style=_WIDE, layout=lay)
                       for name in MANUAL_FIELDS}
        c: dict[str, widgets.ValueWidget] = {
            "model": widgets.Dropdown(options=presets, value=model_value, style=_WIDE, layout=lay),
            "method": widgets.Dropdown(options=[m.value for m in Method], value=base.method.value, style=_WIDE,
                                       layout=lay),
            "precision": widgets.Dropdown(options=[p.value for p in Precision], value=base.precision.value,
                                          style=_WIDE, layout=lay),
            "optimizer": widgets.Dropdown(options=[o.value for o in Optimizer], value=base.optimizer.value,
                                          style=_WIDE, layout=lay),
            "seq_len": widgets.IntText(value=base.seq_len, style=_WIDE, layout=lay),
            "batch_size": widgets.IntText(value=base.batch_size, style=_WIDE, layout=lay),
            "grad_accum": widgets.IntText(value=base.grad_accum, style=_WIDE, layout=lay),
            "grad_checkpointing": widgets.Checkbox(value=base.grad_checkpointing, indent=True, style=_WIDE,
                                                   layout=_CHECKBOX_LAYOUT),
            "attention": widgets.Dropdown(options=[a.value for a in Attention], value=base.attention.value,
                                          style=_WIDE, layout=lay),
            "lora_r": widgets.IntText(value=base.lora_r, style=_WIDE, layout=lay),
            # module names differ between architectures (q_proj / c_attn / query): free text, checked by
            # the estimator, whose message lists the model's linear modules
            "lora_targets": widgets.Text(value=",".join(base.lora_targets), placeholder="q_proj,v_proj or all-linear",
                                         continuous_update=False, style=_WIDE, layout=lay),
            "gpus": widgets.IntText(value=base.gpus, style=_WIDE, layout=lay),
            "sharding": widgets.Dropdown(options=[s.value for s in Sharding], value=base.sharding.value,
                                         style=_WIDE, layout=lay),
            "dataset_tokens": widgets.IntText(value=base.dataset_tokens, style=_WIDE, layout=lay),
            "epochs": widgets.FloatText(value=base.epochs, style=_WIDE, layout=lay),
        }
        self.controls = c
        ids = []
        for g in gpus:
            with contextlib.suppress(CatalogError):
                ids.append(get_gpu(g, self._catalog).gpu_id)
        self.gpu_select = widgets.SelectMultiple(
            options=[(f"{g.display_name} ({g.memory_gb:g} GB)", g.gpu_id) for g in self._catalog.values()],
            value=tuple(ids), rows=7, style=_WIDE, layout={"width": "380px"})
        self.axis = widgets.ToggleButtons(options=self._axis_options(), value="seq_len",
                                          style={"description_width": "initial", "button_width": "170px"})
        self.verify_button = widgets.Button(icon="search", layout={"width": "300px"})
        self.verify_button.add_class("gpuwork-verify")
        self.verify_out = widgets.HTML()
        self.message = widgets.HTML()
        self.message.add_class("gpuwork-message")
        self.totals = widgets.HTML()
        self.totals.add_class("gpuwork-result")
        self.details = widgets.HTML()
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

    def _apply_labels(self) -> None:
        lang = self.lang
        for name, control in self.controls.items():
            control.description = ui(name, lang)
        for name, control in self.manual.items():
            control.description = ui(name, lang)
        self.model_source.description = ui("model_source", lang)
        self.upload.description = ui("upload", lang)
        self.gpu_select.description = ui("candidates", lang)
        self.axis.description = ui("axis", lang)
        self.verify_button.description = ui("verify", lang)
        self.verify_button.tooltip = ui("verify_hint", lang)
        for key, heading in self.headings.items():
            heading.value = _h(4, ui(key, lang))
        with self._mute():
            for control, options in ((self.model_source, self._source_options()), (self.axis, self._axis_options())):
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

    def candidate_gpus(self) -> list[GpuSpec]:
        return [self._catalog[g] for g in self.gpu_select.value if g in self._catalog]

    def model_label(self) -> str:
        source = self.model_source.value
        if source == "upload":
            return self._uploaded[0] if self._uploaded else "config.json"
        if source == "manual":
            m = {k: w.value for k, w in self.manual.items()}
            return (f"manual {m['num_hidden_layers']}×{m['hidden_size']} "
                    f"({m['num_attention_heads']}/{m['num_key_value_heads']} heads)")
        return str(self.controls["model"].value)

    def model_ref(self) -> str:
        """What TrainPlan.model gets: the preset name, or the path of a config written by the store."""
        source = self.model_source.value
        if source == "upload":
            if self._uploaded is None:
                raise ModelError(ui("upload_first", self.lang))
            return self.store.path_for(self._uploaded[1])
        if source == "manual":
            return self.store.path_for(manual_config({k: w.value for k, w in self.manual.items()}))
        return str(self.controls["model"].value)

    def values(self) -> dict[str, Any]:
        """The TrainPlan fields the form sets (model resolved by ``model_ref``)."""
        out = {name: control.value for name, control in self.controls.items()}
        out["model"] = self.model_ref()
        if isinstance(out["epochs"], float) and out["epochs"].is_integer():
            out["epochs"] = int(out["epochs"])
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
        item = files[0]
        try:
            config = parse_config(item["content"], item.get("name", "config.json"))
        except GpuworkError as exc:
            self._show_error(friendly(exc))
            return
        self._uploaded = (item.get("name", "config.json"), config)
        self.upload_name.value = note_html(html.escape(self._uploaded[0]))
        if self.model_source.value != "upload":
            self.model_source.value = "upload"  # refreshes
        else:
            self.refresh()

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

    def refresh(self) -> None:
        """Rebuild the plan from the controls, estimate it and re-render; errors show one red line."""
        if self._muted:
            return
        self._update_visibility()
        try:
            with _quiet():
                plan = self.base_plan.replace(**self.values())
                if self.model_source.value != "preset" and plan.model not in _SPEC_SEEN:
                    self.message.value = note_html(html.escape(ui("building", self.lang).format(
                        name=self.model_label())))
                result = size_plan(plan, axis=self.axis.value)
                _SPEC_SEEN.add(plan.model)
        except Exception as exc:  # noqa: BLE001 - the page must never show a traceback
            self._show_error(friendly(exc))
            return
        self.plan, self.result, self.error = plan, result, None
        self._render()
        for callback in self._listeners:
            try:
                callback(plan)
            except Exception as exc:  # noqa: BLE001
                _log.error("plan listener failed", exc_info=exc)

    def _show_error(self, message: str) -> None:
        self.plan, self.result, self.error = None, None, one_line(message)
        self.message.value = error_html(message)
        self.totals.value = note_html(html.escape(ui("invalid", self.lang)))

    def _render(self) -> None:
        assert self.result is not None and self.plan is not None
        self.message.value = ""
        self.totals.value = totals_html(self.plan, self.result.memory, self.lang, self.model_label())
        self.details.value = details_html(self.result, self.lang)
        if not self.report:  # a live chart keeps its template: updates skip resolving it again
            self.breakdown.show(self.breakdown_figure(None if self.breakdown.widget else charts.TEMPLATE))
            self.whatif.show(self.whatif_figure(template=None if self.whatif.widget else charts.TEMPLATE))

    def set_lang(self, lang: str) -> None:
        self.lang = lang if lang in LANGS else "en"
        self._apply_labels()
        if self.result is not None:
            self._render()
        elif self.error:
            self.totals.value = note_html(html.escape(ui("invalid", self.lang)))
        if self.traced is not None and self.plan is not None:
            self.verify_out.value = trace_html(self.traced.plan, self.traced, self.memory, self.lang)

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
            result = size_plan(result.plan, axis=axis)
        return charts.whatif_figure(result.whatif_values, result.whatif, self.candidate_gpus(), field=result.axis,
                                    current=getattr(result.plan, result.axis), lang=self.lang, template=template)

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

            with _quiet():
                traced = trace_memory(plan)
        except Exception as exc:  # noqa: BLE001
            self.verify_out.value = error_html(friendly(exc))
            return None
        finally:
            self.verify_button.disabled = False
            self._busy.release()
        self.traced = traced
        self.verify_out.value = trace_html(plan, traced, self.memory if self.plan == plan else None, self.lang)
        return traced

    def _start(self, action: Callable[[], Any]) -> None:
        _run_in_thread(action.__name__, action)

    # -- views ------------------------------------------------------------------------------------

    def controls_box(self) -> widgets.Widget:
        c = self.controls
        model = widgets.VBox([self.headings["h_model"], self.model_source, c["model"], self.upload, self.upload_name,
                              *self.manual.values()])
        training = widgets.VBox([self.headings["h_training"], c["method"], c["precision"], c["optimizer"],
                                 c["seq_len"], c["batch_size"], c["grad_accum"], c["grad_checkpointing"],
                                 c["attention"], c["lora_r"], c["lora_targets"]])
        gpus = widgets.VBox([self.headings["h_gpus"], c["gpus"], c["sharding"], c["dataset_tokens"], c["epochs"],
                             self.gpu_select])
        box = widgets.VBox([model, training, gpus], layout={"min_width": "400px"})
        box.add_class("gpuwork-controls")
        return box

    def results_box(self) -> widgets.Widget:
        verify = widgets.VBox([self.headings["h_verify"], self.verify_button, self.verify_out])
        box = widgets.VBox([self.message, self.headings["h_totals"], self.totals, self.breakdown.box, self.axis,
                            self.whatif.box, self.details, verify], layout={"flex": "1 1 auto", "min_width": "0"})
        box.add_class("gpuwork-results")
        return box

    def view(self) -> widgets.Widget:
        """The whole form: controls on the left, results on the right."""
        if self.report:
            raise GpuworkError("a report-mode form has no live view: use show(part)")
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
        if not self.report:
            live = {"controls": lambda: widgets.VBox([self.message, self.controls_box()]),
                    "totals": lambda: widgets.VBox([self.message, self.totals]),
                    "breakdown": lambda: self.breakdown.box,
                    "whatif": lambda: widgets.VBox([self.axis, self.whatif.box]),
                    "details": lambda: self.details,
                    "verify": lambda: widgets.VBox([self.verify_button, self.verify_out])}
            if part not in live:
                raise KeyError(part)
            _display(live[part]())
            return
        if self.result is None:
            _display(_html_obj(error_html(self.error or ui("invalid", self.lang))))
            return
        static = {
            "controls": lambda: [_html_obj(self._plan_table())],
            "totals": lambda: [_html_obj(self.totals.value)],
            "breakdown": lambda: [self.breakdown_figure()],
            "whatif": lambda: [self.whatif_figure("seq_len"), self.whatif_figure("batch_size")],
            "details": lambda: [_html_obj(self.details.value)],
            "verify": lambda: [_html_obj(self.verify_out.value or note_html(html.escape(ui("verify_hint",
                                                                                             self.lang))))],
        }
        if part not in static:
            raise KeyError(part)
        _display(*static[part]())

    def _plan_table(self) -> str:
        assert self.plan is not None
        rows = [(html.escape(k), html.escape(str(v))) for k, v in self.plan.as_dict().items()]
        rows[0] = ("model", html.escape(self.model_label()))
        return _table(("field", "value"), rows, "gpuwork-plan")

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.view()._repr_mimebundle_(**kwargs)

    def close(self) -> None:
        """Remove the temporary config files."""
        self.store.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.store.close()


_SPEC_SEEN: set[str] = set()


# -- trial: pure update --------------------------------------------------------------------------------


def estimate_vs_measured_rows(record: Any) -> list[dict[str, Any]]:
    """Rows for ``charts.estimate_vs_measured_figure``: the estimate of the trial's own plan (as it ran:
    its precision, device count and attention) next to what the trial measured, each with what it counts.

    On CUDA the numbers come from ``gpuwork.measure.calibration.calibrate`` (the
    same comparison the calibration file keeps); on a CPU the measured number is the process RSS.
    """
    s = record.summary
    if s is not None and s.cuda_peak_allocated_bytes and record.fits:
        try:
            memory = calibration.calibrate(record).memory
        except GpuworkError:
            memory = None
        if memory is not None:
            return [
                {"label": "peak allocated", "estimated_bytes": memory.estimated_allocated_bytes,
                 "measured_bytes": memory.measured_allocated_bytes,
                 "estimated_what": "estimate: live tensors at the peak",
                 "measured_what": "torch.cuda.max_memory_allocated() over the measured steps"},
                {"label": "peak reserved", "estimated_bytes": memory.estimated_reserved_bytes,
                 "measured_bytes": memory.measured_reserved_bytes,
                 "estimated_what": "estimate: allocated + allocator cache",
                 "measured_what": "torch.cuda.max_memory_reserved() over the measured steps"},
            ]
    plan = record.plan
    with contextlib.suppress(GpuworkError, ValueError):
        plan = plan.replace(precision=record.protocol.precision_used)
    with contextlib.suppress(GpuworkError, ValueError):
        plan = plan.single_gpu()
    try:
        est = estimate_memory(plan)
    except GpuworkError:
        return []
    if s is not None and s.cuda_peak_allocated_bytes:
        return [
            {"label": "peak allocated", "estimated_bytes": est.peak_allocated_bytes,
             "measured_bytes": s.cuda_peak_allocated_bytes, "estimated_what": "estimate: live tensors at the peak",
             "measured_what": "torch.cuda.max_memory_allocated() over the measured steps"},
            {"label": "peak reserved", "estimated_bytes": est.peak_reserved_bytes,
             "measured_bytes": s.cuda_peak_reserved_bytes, "estimated_what": "estimate: allocated + allocator cache",
             "measured_what": "torch.cuda.max_memory_reserved() over the measured steps"},
        ]
    return [{"label": "peak memory", "estimated_bytes": est.peak_allocated_bytes,
             "measured_bytes": record.peak_trial_memory_bytes,
             "estimated_what": "estimate: tensors alive at the peak (what a GPU's allocator would hold)",
             "measured_what": "CPU trial: process RSS above its value before the trial (includes the "
                              "runtime's, libraries' and allocator's overhead: not a GPU quantity)"}]


def extrapolate(record: Any, plan: TrainPlan | None = None) -> tuple[Any, str | None]:
    """Whole-run time at the trial's measured speed: (TimeEstimate, None), or (None, why not).

    ``gpuwork.estimate.timing.estimate_time`` for the trial's plan (dataset, epochs, eval and checkpoint margins)
    with its efficiency calibrated by the trial (``gpuwork.measure.calibration``); possible only when the trial ran on a GPU listed in data/gpus.csv.
    """
    env = record.environment
    if record.summary is None or not record.fits or not env.device.startswith("cuda"):
        return None, env.device_name
    try:
        cal = calibration.calibrate(record, plan)
        mapping = cal.time_calibration()
        if mapping is None or cal.gpu_id is None:
            return None, f"{env.device_name} ({'; '.join(cal.notes) or 'no time calibration'})"
        time = sizing.estimate_time(TrainPlan.from_dict(cal.plan), cal.gpu_id, calibration=mapping)
    except GpuworkError as exc:
        return None, f"{env.device_name} ({one_line(exc)})"
    return time, None


@contextlib.contextmanager
def _machine_lock(path: Path) -> Iterator[bool]:
    """An exclusive, non-blocking lock on a file: yields False when someone else holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class TrialPanel:
    """A measured trial with live curves: tiny model on the CPU by default (gpuwork.measure.trial).

    State: ``steps_seen`` (StepMeasurement so far), ``record`` (TrialRecord of the last finished run),
    ``ramp_result``, ``stopped``, ``error``. ``run()`` runs synchronously (notebooks, tests); the Run
    button runs it in a thread so that Stop, checked between steps, can be pressed.

    Args:
        plan: the trial plan (default: tiny-llama, LoRA, fp32, seq 128, batch 4).
        steps / warmup: measured and warm-up optimizer steps.
        ramp: after the trial, find the largest micro-batch and sequence that fit (short probes).
        out_dir: where the TrialRecord JSON (and checkpoint) is written; None writes nothing.
        demo: the app's guarded mode: tiny presets only, DEMO_LIMITS, CPU, one trial per machine.
        device: "cpu", "cuda", ... (None: CUDA when present, else CPU; demo: always CPU).
        note: a line shown above the controls (e.g. "a CPU stand-in for ...").
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, steps: int = 5, warmup: int = 1,
                 ramp: bool = False, out_dir: str | os.PathLike[str] | None = None, demo: bool = False,
                 device: str | None = None, note: str | None = None, lang: str = "en", report: bool = False):
        self.lang = lang if lang in LANGS else "en"
        self.report = report
        self.demo = demo
        self.extra_note = note
        self.device = "cpu" if demo else device
        self.out_dir = str(out_dir) if out_dir is not None else None
        self.steps_seen: list[Any] = []
        self.record: Any = None
        self.ramp_result: Any = None
        self.stopped = False
        self.error: str | None = None
        self.listeners: list[Callable[[Any], Any]] = []
        self._stop = threading.Event()
        self._running = threading.Lock()
        try:
            base = plan_from(plan, DEFAULT_TRIAL_PLAN if plan is None else None)
            start_error = None
        except GpuworkError as exc:
            base, start_error = plan_from(DEFAULT_TRIAL_PLAN), friendly(exc)
        self.base_plan = base
        lay = {"width": "340px"}
        presets = [p for p in list_presets() if p.startswith("tiny-")] if demo else list_presets()
        model = base.model if base.model in presets or demo is False else presets[0]
        if model not in presets:
            presets = [model, *presets]
        self.controls: dict[str, widgets.ValueWidget] = {
            "model": widgets.Dropdown(options=presets, value=model, style=_WIDE, layout=lay),
            "method": widgets.Dropdown(options=[m.value for m in Method], value=base.method.value, style=_WIDE,
                                       layout=lay),
            "precision": widgets.Dropdown(options=[p.value for p in Precision], value=base.precision.value,
                                          style=_WIDE, layout=lay),
            "seq_len": widgets.IntText(value=base.seq_len, style=_WIDE, layout=lay),
            "batch_size": widgets.IntText(value=base.batch_size, style=_WIDE, layout=lay),
            "grad_accum": widgets.IntText(value=base.grad_accum, style=_WIDE, layout=lay),
        }
        self.steps = widgets.IntText(value=steps, style=_WIDE, layout=lay)
        self.warmup = widgets.IntText(value=warmup, style=_WIDE, layout=lay)
        self.ramp = widgets.Checkbox(value=ramp, style=_WIDE, indent=True, layout=_CHECKBOX_LAYOUT)
        self.run_button = widgets.Button(button_style="primary", icon="play")
        self.stop_button = widgets.Button(button_style="warning", icon="stop", disabled=True)
        self.progress = widgets.IntProgress(value=0, min=0, max=steps + warmup, style=_WIDE, layout=lay)
        self.status = widgets.HTML()
        self.status.add_class("gpuwork-trial-status")
        self.results = widgets.HTML()
        self.results.add_class("gpuwork-trial-results")
        self.note = widgets.HTML()
        for name, control in {**self.controls, "steps": self.steps, "warmup": self.warmup}.items():
            control.add_class(f"gpuwork-trial-{name.replace('_', '-')}")
        self.run_button.add_class("gpuwork-trial-run")
        self.stop_button.add_class("gpuwork-trial-stop")
        self.run_button.on_click(lambda _b: self.start())
        self.stop_button.on_click(lambda _b: self.stop())
        for control in [*self.controls.values(), self.steps, self.warmup]:
            control.observe(lambda _c: self._ready(), names="value")
        self.curves = _LiveFigure("gpuwork-trial-curves")
        self.comparison = _LiveFigure("gpuwork-trial-evm")
        self._apply_labels()
        if start_error:
            self.error = start_error
            self.status.value = error_html(start_error)
        else:
            self._ready()

    def _apply_labels(self) -> None:
        lang = self.lang
        for name, control in self.controls.items():
            control.description = ui(name, lang)
        self.steps.description = ui("steps", lang)
        self.warmup.description = ui("warmup", lang)
        self.ramp.description = ui("ramp", lang)
        self.run_button.description = ui("run", lang)
        self.stop_button.description = ui("stop", lang)
        self.progress.description = ui("progress", lang)
        notes = [ui("demo_note", lang).format(steps=DEMO_LIMITS["steps"], seq=DEMO_LIMITS["seq_len"],
                                              batch=DEMO_LIMITS["batch_size"])] if self.demo else []
        if self.extra_note:
            notes.append(self.extra_note)
        self.note.value = "".join(note_html(html.escape(n), _NOTE_COLOR) for n in notes)

    def set_lang(self, lang: str) -> None:
        self.lang = lang if lang in LANGS else "en"
        self._apply_labels()
        if self.record is not None:
            self._render_record()
        elif not self._running.locked():
            self._ready()

    def trial_plan(self) -> TrainPlan:
        """The plan the controls describe (validated; demo limits enforced)."""
        values = {name: control.value for name, control in self.controls.items()}
        plan = self.base_plan.replace(**values)
        if self.demo:
            if not plan.model.startswith("tiny-"):
                raise PlanError("model", f"the demo trial runs tiny models only (tiny-llama, tiny-gpt2, ...); got "
                                f"{plan.model!r}")
            for name in ("seq_len", "batch_size", "grad_accum"):
                if getattr(plan, name) > DEMO_LIMITS[name]:
                    raise PlanError(name, f"{name}={getattr(plan, name)} is above the demo's limit of "
                                    f"{DEMO_LIMITS[name]}: this trial runs on a shared CPU")
        return plan

    def _counts(self) -> tuple[int, int]:
        steps, warmup = self.steps.value, self.warmup.value
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise PlanError("steps", f"steps={steps!r}: measure at least one step")
        if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
            raise PlanError("warmup", f"warmup={warmup!r}: use a whole number >= 0 (1-2 is typical)")
        if self.demo and (steps > DEMO_LIMITS["steps"] or warmup > DEMO_LIMITS["warmup"]):
            raise PlanError("steps", f"the demo runs at most {DEMO_LIMITS['steps']} steps and "
                            f"{DEMO_LIMITS['warmup']} warm-up steps")
        return steps, warmup

    def _ready(self) -> None:
        if self._running.locked():
            return
        try:
            plan = self.trial_plan()
            self._counts()
        except GpuworkError as exc:
            self.error = friendly(exc)
            self.status.value = error_html(self.error)
            self.run_button.disabled = True
            return
        self.error = None
        self.run_button.disabled = False
        self.status.value = note_html(html.escape(ui("trial_ready", self.lang).format(plan=_plan_caption(plan))))

    # -- running ----------------------------------------------------------------------------------

    def start(self) -> threading.Thread:
        """Run in a background thread (the Run button): Stop stays clickable."""
        return _run_in_thread("trial", self.run)

    def stop(self) -> None:
        """Ask the running trial to stop; it stops after the current step."""
        self._stop.set()

    def run(self) -> Any:
        """Run the trial to the end (or until Stop); returns the TrialRecord, or None."""
        if not self._running.acquire(blocking=False):
            self.status.value = error_html(ui("busy", self.lang))
            return None
        try:
            try:
                plan = self.trial_plan()
                steps, warmup = self._counts()
            except GpuworkError as exc:
                self.error = friendly(exc)
                self.status.value = error_html(self.error)
                return None
            lock = (_machine_lock(Path(tempfile.gettempdir()) / DEMO_LOCK_FILE) if self.demo
                    else contextlib.nullcontext(True))
            with lock as acquired:
                if not acquired:
                    self.status.value = error_html(ui("trial_busy", self.lang))
                    return None
                return self._run(plan, steps, warmup)
        finally:
            self._running.release()
            self.run_button.disabled = False
            self.stop_button.disabled = True

    def _run(self, plan: TrainPlan, steps: int, warmup: int) -> Any:
        from gpuwork.measure.trial import iter_trial

        self._stop.clear()
        self.stopped, self.error, self.record, self.ramp_result = False, None, None, None
        self.steps_seen = []
        self.results.value = ""
        self.progress.max, self.progress.value = steps + warmup, 0
        self.run_button.disabled, self.stop_button.disabled = True, False
        self.status.value = note_html(html.escape(ui("trial_building", self.lang)))
        if not self.report:
            self.curves.show(charts.trial_figure([], lang=self.lang))
        gen = None
        try:
            with _quiet():
                gen = iter_trial(plan, steps=steps, warmup=warmup, out_dir=self.out_dir, device=self.device)
                while True:
                    if self._stop.is_set():
                        gen.close()
                        self.stopped = True
                        self.status.value = note_html(html.escape(ui("trial_stopped", self.lang).format(
                            n=len(self.steps_seen))), _NOTE_COLOR)
                        return None
                    try:
                        m = next(gen)
                    except StopIteration as done:
                        record = done.value
                        break
                    self._on_step(m, steps + warmup)
                if self.ramp.value:
                    from gpuwork.measure.trial import ramp

                    self.ramp_result = ramp(plan, max_batch_size=plan.batch_size * 4, max_seq_len=plan.seq_len * 2,
                                            steps=1, warmup=0, device=self.device)
        except Exception as exc:  # noqa: BLE001 - one line, the panel keeps working
            if gen is not None:
                with contextlib.suppress(Exception):
                    gen.close()
            self.error = friendly(exc)
            self.status.value = error_html(self.error)
            return None
        self.record = record
        self._render_record()
        for callback in self.listeners:
            try:
                callback(record)
            except Exception as exc:  # noqa: BLE001
                _log.error("trial listener failed", exc_info=exc)
        return record

    def _on_step(self, m: Any, total: int) -> None:
        self.steps_seen.append(m)
        self.progress.value = m.step
        self.status.value = note_html(html.escape(ui("trial_step", self.lang).format(
            step=m.step, total=total, loss=m.loss, time=m.step_time_s, tps=m.tokens_per_s)))
        if not self.report:
            self.curves.show(charts.trial_figure(self.steps_seen, lang=self.lang))

    def _render_record(self) -> None:
        record, lang = self.record, self.lang
        s = record.summary
        lines = []
        if not record.fits:
            lines.append(error_html(ui("trial_oom", lang).format(error=record.error,
                                                                 mib=f"{record.peak_trial_memory_bytes / MIB:,.0f}")))
        if s is not None:
            lines.append("<p>" + html.escape(ui("summary", lang).format(
                median=s.median_step_time_s, p90=s.p90_step_time_s, tps=s.tokens_per_s,
                mib=s.peak_trial_memory_bytes / MIB, device=record.environment.device_name,
                first=s.first_loss, last=s.last_loss)) + "</p>")
            lines.append(note_html(html.escape(ui("data_verdict", lang).format(verdict=s.verdict))))
        c = record.checkpoint
        if c is not None:
            verdict = ui("verified" if c.verified else "not_verified", lang)
            lines.append('<p class="gpuwork-checkpoint">' + html.escape(ui("checkpoint", lang).format(
                verdict=verdict, message=c.message, size=_gb(c.bytes_on_disk) if c.bytes_on_disk >= 1e8 else
                f"{c.bytes_on_disk / MIB:,.1f} MiB", save=c.save_s, restore=c.restore_s)) + "</p>")
        r = self.ramp_result
        if r is not None:
            if r.max_batch_size is None:
                lines.append(f"<p>{html.escape(ui('ramp_none', lang))}</p>")
            else:
                lines.append('<p class="gpuwork-ramp">' + html.escape(ui("ramp_line", lang).format(
                    batch=r.max_batch_size, seq0=record.protocol.seq_len, why_b=r.batch_limited_by,
                    seq=r.max_seq_len, why_s=r.seq_limited_by, n=len(r.probes))) + "</p>")
        time, why = extrapolate(record)
        if time is not None:
            lines.append("<p>" + html.escape(ui("extrapolation", lang).format(
                gpus=time.plan.gpus, gpu=time.gpu_name, total=_duration(time.total_s, lang),
                steps=f"{time.steps:,}")) + "</p>")
        else:
            lines.append(note_html(html.escape(ui("no_extrapolation", lang).format(device=why))))
        if record.protocol.substitutions:
            lines.append(note_html(html.escape(ui("substitutions", lang).format(
                what="; ".join(record.protocol.substitutions))), _NOTE_COLOR))
        lines.append(note_html(ui("saved", lang).format(path=html.escape(record.saved_to)) if record.saved_to
                               else html.escape(ui("not_saved", lang))))
        self.results.value = '<div class="gpuwork-trial-record">' + "".join(lines) + "</div>"
        self.progress.value = self.progress.max
        self.status.value = note_html(html.escape(ui("trial_done", lang).format(
            n=len(record.measured), s=record.duration_s)))
        if not self.report:
            self.curves.show(charts.trial_figure(record.steps, lang=lang))
            rows = estimate_vs_measured_rows(record)
            if rows:
                self.comparison.show(charts.estimate_vs_measured_figure(rows, lang=lang))

    # -- views ------------------------------------------------------------------------------------

    def controls_box(self) -> widgets.Widget:
        box = widgets.VBox([self.note, *self.controls.values(), self.steps, self.warmup, self.ramp,
                            widgets.HBox([self.run_button, self.stop_button]), self.progress, self.status])
        box.add_class("gpuwork-trial-controls")
        return box

    def view(self) -> widgets.Widget:
        box = widgets.VBox([self.controls_box(), self.curves.box, self.results, self.comparison.box])
        box.add_class("gpuwork-trial")
        return box

    def show(self, part: str) -> None:
        """Display "controls" (with the live curves), "curves", "results" or "estimate_vs_measured"."""
        if not self.report:
            live = {"controls": lambda: widgets.VBox([self.controls_box(), self.curves.box]),
                    "curves": lambda: None,  # live above, under the controls
                    "results": lambda: self.results,
                    "estimate_vs_measured": lambda: self.comparison.box}
            if part not in live:
                raise KeyError(part)
            _display(live[part]())
            return
        record = self.record
        static: dict[str, Callable[[], list[Any]]] = {
            "controls": lambda: [_html_obj(self.note.value + self.status.value)],
            "curves": lambda: [charts.trial_figure(record.steps if record else self.steps_seen, lang=self.lang)],
            "results": lambda: [_html_obj(self.results.value or self.status.value)],
            "estimate_vs_measured": lambda: (
                [charts.estimate_vs_measured_figure(estimate_vs_measured_rows(record), lang=self.lang)]
                if record is not None and estimate_vs_measured_rows(record) else []),
        }
        if part not in static:
            raise KeyError(part)
        _display(*static[part]())

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.view()._repr_mimebundle_(**kwargs)


# -- offers: pure update --------------------------------------------------------------------------------

SORTS = ("cost", "time", "price", "vram")  # the rankings of estimate.offers.sort_offers the panel offers


def offer_results(plan: TrainPlan, *, modes: Sequence[str] | None = None, classes: Sequence[str] | None = None,
                  regions: Sequence[str] | None = None, max_price: float | None = None, min_vram_gb: float | None = None,
                  budget_usd: float | None = None, sort: str = "cost", include_unfit: bool = False,
                  preemption_rate_per_hour: float | None = None) -> list[Any]:
    """Offers evaluated for ``plan`` (gpuwork.estimate.offers.evaluate_offers), filtered and sorted.

    ``sort``: "cost" / "time" (the evaluator's rankings), "price" (per GPU-hour) or "vram" (most memory
    first); offers that do not fit always come last.
    """
    if sort not in SORTS:
        raise PlanError("sort", f"sort={sort!r} must be one of {', '.join(SORTS)}")
    kwargs: dict[str, Any] = {}
    if preemption_rate_per_hour is not None:
        kwargs["preemption_rate_per_hour"] = preemption_rate_per_hour
    return sizing.evaluate_offers(
        plan, sort=sort, mode=list(modes) if modes is not None else None,
        gpu_class=list(classes) if classes is not None else None, region=list(regions) if regions is not None else None,
        max_price_per_gpu_hour=max_price, min_vram_gb=min_vram_gb, budget_usd=budget_usd,
        include_unfit=include_unfit, **kwargs)


def offers_table_html(results: Sequence[Any], lang: str = "en", limit: int | None = None) -> str:
    if not results:
        return note_html(html.escape(ui("no_offers", lang)), _NOTE_COLOR, "gpuwork-offers-empty")
    rows = []
    for r in results[:limit] if limit else results:
        o = r.offer
        if r.fits:
            notes = list(r.fit.changes)
            if r.expected_preemptions:
                notes.append(f"~{r.expected_preemptions:.1f} preemptions")
            if r.meets_deadline is False:
                notes.append("misses the deadline")
            used = f"{r.fit.plan.gpus} / {r.billed_gpus}"
            cells = (used, r.fit.plan.sharding.value, _duration(r.expected_total_s, lang), _usd(r.expected_cost_usd),
                     html.escape("; ".join(notes)))
        else:
            cells = ("–", "–", "–", "–", f"<span style='color:{_MUTED}'>{html.escape(r.fit.reason)}</span>")
        rows.append((f"<code>{html.escape(o.offer_id)}</code>", html.escape(o.gpu.display_name), o.mode.value,
                     o.region.value, f"{o.price_per_gpu_hour:,.2f}", *cells))
    header = [ui(k, lang) for k in ("col_offer", "col_gpu", "col_mode", "col_region", "col_price", "col_gpus",
                                    "col_sharding", "col_time", "col_cost", "col_notes")]
    return (_table(header, rows, "gpuwork-offers", right=(4, 5, 7, 8))
            + note_html(html.escape(ui("offers_note", lang))))


def interruptible_html(results: Sequence[Any], lang: str = "en") -> str:
    """Interruptible offers that fit: expected preemptions, rework, checkpoint interval now vs recommended."""
    rows = []
    for r in results:
        if not r.fits or r.offer.mode is not Mode.INTERRUPTIBLE or r.time is None:
            continue
        recommended = (f"{_duration(r.recommended_checkpoint_interval_s, lang)} (~{r.recommended_checkpoint_every_steps:,}"
                       " steps)" if r.recommended_checkpoint_interval_s is not None else "–")
        rows.append((f"<code>{html.escape(r.offer.offer_id)}</code>", _duration(r.time.total_s, lang),
                     _duration(r.expected_total_s, lang), f"{r.expected_preemptions:.1f}",
                     _duration(r.expected_lost_s, lang), _duration(r.checkpoint_interval_s, lang), recommended,
                     _usd(r.expected_cost_usd)))
    if not rows:
        return note_html(html.escape(ui("none_interruptible", lang)))
    header = [ui(k, lang) for k in ("col_offer", "col_uninterrupted", "col_time", "col_preemptions", "col_rework",
                                    "col_interval", "col_recommended", "col_cost")]
    return _table(header, rows, "gpuwork-interruptible", right=(1, 2, 3, 4, 5, 7))


def compare_html(records: Sequence[Any], price_per_hour: float | None, lang: str = "en") -> str:
    """Trial records side by side (gpuwork.measure.trial.compare)."""
    if not records:
        return note_html(html.escape(ui("no_records", lang)))
    from gpuwork.measure.trial import compare

    rows = compare(records, price_per_hour)

    def fmt(value: Any, key: str) -> str:
        if value is None:
            return "–"
        if key == "tokens_per_s":
            return f"{value:,.0f}"
        if key.endswith("_bytes"):
            return f"{value / MIB:,.0f} MiB"
        if key.endswith("_s"):
            return f"{value:,.3f} s"
        if key == "data_wait_fraction":
            return f"{value:.1%}"
        if key == "cost_per_1m_tokens":
            return _usd(value)
        return html.escape(str(value))

    keys = list(rows[0])
    table = _table([html.escape(k.replace("_", " ")) for k in keys], [[fmt(row[k], k) for k in keys] for row in rows],
                   "gpuwork-compare")
    return f'<div style="overflow-x:auto">{table}</div>'



class RequestPanel:
    """The rental request (gpuwork.present.request) for the current plan, in Russian or English, ready to copy.

    State: ``request`` (the RentalRequest), ``error``. Output: a text area with the request and download
    links (data: URIs, .txt and .json).
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, lang: str = "en", report: bool = False,
                 show_lang: bool = True, options: Mapping[str, Any] | None = None):
        self.lang = lang if lang in LANGS else "en"
        self.report = report
        self.request: Any = None
        self.error: str | None = None
        self.plan: TrainPlan | None = None
        opts = dict(options or {})
        lay = {"width": "380px"}
        self.req_lang = widgets.ToggleButtons(options=[("English", "en"), ("Русский", "ru")], value=self.lang,
                                              style=_WIDE)
        self.req_lang.layout.display = None if show_lang else "none"
        self.start_date = widgets.Text(value=str(opts.get("start_date") or ""), continuous_update=False, style=_WIDE,
                                       layout=lay)
        self.budget = widgets.FloatText(value=float(opts.get("budget_usd") or 0), style=_WIDE, layout=lay)
        self.rent_days = widgets.IntText(value=int(opts.get("rent_period_days") or 0), style=_WIDE, layout=lay)
        self.dataset_gb = widgets.FloatText(value=float(opts.get("dataset_gb") or 0), style=_WIDE, layout=lay)
        self.trial_required = widgets.Checkbox(value=bool(opts.get("trial_required", True)), style=_WIDE,
                                               layout=_CHECKBOX_LAYOUT)
        self.explicit_context = widgets.Checkbox(value=not opts.get("context_in_config", True), style=_WIDE,
                                                 layout=_CHECKBOX_LAYOUT)
        self.message = widgets.HTML()
        self.text = widgets.Textarea(layout={"width": "100%", "height": "280px"})
        self.text.add_class("gpuwork-request-text")
        self.links = widgets.HTML()
        self.links.add_class("gpuwork-request-links")
        self.heading = widgets.HTML()
        self._inputs = [self.req_lang, self.start_date, self.budget, self.rent_days, self.dataset_gb,
                        self.trial_required, self.explicit_context]
        for control in self._inputs:
            control.observe(lambda _c: self.refresh(), names="value")
        self._apply_labels()
        if plan is not None:
            try:
                self.set_plan(plan_from(plan))
            except GpuworkError as exc:
                self._show_error(friendly(exc))

    def _apply_labels(self) -> None:
        lang = self.lang
        self.req_lang.description = ui("req_lang", lang)
        self.start_date.description = ui("start_date", lang)
        self.start_date.placeholder = ui("date_hint", lang)
        self.budget.description = ui("budget", lang)
        self.rent_days.description = ui("rent_days", lang)
        self.dataset_gb.description = ui("dataset_gb", lang)
        self.trial_required.description = ui("trial_required", lang)
        self.explicit_context.description = ui("explicit_context", lang)
        self.heading.value = _h(4, ui("h_request", lang)) + note_html(html.escape(
            f"{ui('rent_days', lang)}: {ui('days_hint', lang)}; {ui('dataset_gb', lang)}: {ui('gb_hint', lang)}; "
            f"{ui('budget', lang)}: 0 = –. {ui('copy_hint', lang)}"))

    def set_lang(self, lang: str) -> None:
        """Switch the labels and the request's language."""
        self.lang = lang if lang in LANGS else "en"
        self._apply_labels()
        if self.req_lang.value != self.lang:
            self.req_lang.value = self.lang  # refreshes
        else:
            self.refresh()

    def set_plan(self, plan: TrainPlan) -> None:
        self.plan = plan
        self.refresh()

    def options(self) -> dict[str, Any]:
        """rental_request keyword arguments from the controls (0 / empty = not stated)."""
        date_text = self.start_date.value.strip()
        return {
            "lang": self.req_lang.value,
            "start_date": date_text or None,
            "budget_usd": self.budget.value or None,
            "rent_period_days": self.rent_days.value or None,
            "trial_required": self.trial_required.value,
            "context_in_config": not self.explicit_context.value,
        }

    def refresh(self) -> None:
        if self.plan is None:
            return
        try:
            plan = self.plan
            gb = self.dataset_gb.value
            if gb:
                if gb < 0:
                    raise PlanError("dataset_bytes", f"dataset size {gb:g} GB must be above 0 (0 = from tokens)")
                plan = plan.replace(dataset_bytes=round(gb * 1e9))
            with _quiet():
                req = rental.rental_request(plan, **self.options())
        except Exception as exc:  # noqa: BLE001
            self._show_error(friendly(exc))
            return
        self.request, self.error = req, None
        self.message.value = ""
        self.text.value = req.text
        self.links.value = request_links_html(req, self.lang)

    def _show_error(self, message: str) -> None:
        self.request, self.error = None, one_line(message)
        self.message.value = error_html(message)

    def view(self) -> widgets.Widget:
        box = widgets.VBox([self.heading, *self._inputs, self.message, self.text, self.links])
        box.add_class("gpuwork-request")
        return box

    def static_html(self) -> str:
        if self.request is None:
            return error_html(self.error or "no request")
        return (f'<pre class="gpuwork-request-text" style="white-space:pre-wrap">{html.escape(self.request.text)}'
                f"</pre>{request_links_html(self.request, self.lang)}")


def request_links_html(req: Any, lang: str = "en") -> str:
    """Download links for the request text and JSON as data: URIs (no server round-trip)."""
    txt = base64.b64encode(req.text.encode("utf-8")).decode("ascii")
    js = base64.b64encode(json.dumps(req.as_dict(), ensure_ascii=False, indent=2, default=str).encode("utf-8"))
    name = f"gpu-request-{req.lang}"
    return (f'<a class="gpuwork-download" download="{name}.txt" href="data:text/plain;charset=utf-8;base64,{txt}">'
            f"{html.escape(ui('download_txt', lang))}</a> &nbsp; "
            f'<a class="gpuwork-download-json" download="{name}.json" '
            f'href="data:application/json;charset=utf-8;base64,{js.decode("ascii")}">'
            f"{html.escape(ui('download_json', lang))}</a>")


class OffersPanel:
    """Rental offers for the current plan: filters, sorting, table, cost vs time, interruptible offers,
    trial records side by side and (``with_request``) the rental request.

    State: ``plan``, ``results`` (OfferResult list after filters), ``records`` (TrialRecords to compare),
    ``error``.
    """

    def __init__(self, plan: TrainPlan | Mapping[str, Any] | None = None, *, lang: str = "en",
                 report: bool = False, with_request: bool = True, records: Sequence[Any] = (),
                 request: Mapping[str, Any] | None = None):
        self.lang = lang if lang in LANGS else "en"
        self.report = report
        self.plan: TrainPlan | None = None
        self.results: list[Any] = []
        self.records: list[Any] = []
        self.error: str | None = None
        self._stale = True
        self._muted = False
        default_rate = DEFAULT_PREEMPTION_RATE_PER_HOUR
        lay = {"width": "340px"}
        self.modes = widgets.SelectMultiple(options=[m.value for m in Mode], value=tuple(m.value for m in Mode),
                                            rows=3, style=_WIDE, layout=lay)
        self.classes = widgets.SelectMultiple(options=[c.value for c in GpuClass],
                                              value=tuple(c.value for c in GpuClass), rows=3, style=_WIDE, layout=lay)
        self.regions = widgets.SelectMultiple(options=[r.value for r in Region], value=tuple(r.value for r in Region),
                                              rows=3, style=_WIDE, layout=lay)
        self.max_price = widgets.FloatText(value=0.0, style=_WIDE, layout=lay)
        self.min_vram = widgets.FloatText(value=0.0, style=_WIDE, layout=lay)
        self.budget = widgets.FloatText(value=0.0, style=_WIDE, layout=lay)
        self.sort = widgets.Dropdown(options=self._sort_options(), value="cost", style=_WIDE, layout=lay)
        self.include_unfit = widgets.Checkbox(value=False, style=_WIDE, layout=_CHECKBOX_LAYOUT)
        self.preemption_rate = widgets.FloatText(value=default_rate, step=0.01, style=_WIDE, layout=lay)
        self.limit = widgets.IntText(value=25, style=_WIDE, layout=lay)
        self.message = widgets.HTML()
        self.table = widgets.HTML()
        self.table.add_class("gpuwork-offers-table")
        self.interruptible = widgets.HTML()
        self.record_upload = widgets.FileUpload(accept=".json", multiple=True)
        self.record_price = widgets.FloatText(value=0.0, style=_WIDE, layout=lay)
        self.compare = widgets.HTML()
        self.headings = {k: widgets.HTML() for k in ("h_offers", "h_interruptible", "h_compare")}
        self.scatter = _LiveFigure("gpuwork-offers-scatter")
        self._filters = [self.modes, self.classes, self.regions, self.max_price, self.min_vram, self.budget, self.sort,
                         self.include_unfit, self.preemption_rate, self.limit]
        for control in self._filters:
            control.observe(lambda _c: self.refresh(), names="value")
        self.record_upload.observe(self._on_records, names="value")
        self.record_price.observe(lambda _c: self._render_compare(), names="value")
        self.request = RequestPanel(lang=self.lang, report=report, options=request) if with_request else None
        self._apply_labels()
        for path in records:
            self._load_record_file(path)
        if plan is not None:
            try:
                self.set_plan(plan_from(plan))
            except GpuworkError as exc:
                self._show_error(friendly(exc))
        self._render_compare()

    def _sort_options(self) -> list[tuple[str, str]]:
        return [(ui(f"sort_{s}", self.lang), s) for s in SORTS]

    def _apply_labels(self) -> None:
        lang = self.lang
        for control, key in ((self.modes, "modes"), (self.classes, "classes"), (self.regions, "regions"),
                             (self.max_price, "max_price"), (self.min_vram, "min_vram"), (self.budget, "budget"),
                             (self.sort, "sort"), (self.include_unfit, "include_unfit"),
                             (self.preemption_rate, "preemption_rate"), (self.limit, "limit"),
                             (self.record_upload, "records"), (self.record_price, "record_price")):
            control.description = ui(key, lang)
        for control in (self.max_price, self.min_vram, self.budget):
            control.tooltip = ui("zero_any", lang)
        for key, heading in self.headings.items():
            heading.value = _h(4, ui(key, lang))
        value, self._muted = self.sort.value, True
        try:
            self.sort.options = self._sort_options()
            self.sort.value = value
        finally:
            self._muted = False

    def set_lang(self, lang: str) -> None:
        self.lang = lang if lang in LANGS else "en"
        self._apply_labels()
        if self.request is not None:
            self.request.set_lang(lang)
        self.refresh()
        self._render_compare()

    def set_plan(self, plan: TrainPlan, *, lazy: bool = False) -> None:
        """Evaluate offers for ``plan`` (with ``lazy=True``: on the next ``refresh``)."""
        self.plan = plan
        self._stale = True
        if self.request is not None and not lazy:
            self.request.set_plan(plan)
        if not lazy:
            self.refresh()

    def refresh_if_stale(self) -> None:
        if self._stale:
            self.refresh()
            if self.request is not None and self.plan is not None:
                self.request.set_plan(self.plan)

    def filters(self) -> dict[str, Any]:
        """offer_results keyword arguments from the controls (0 = no limit; all selected = no filter)."""
        def chosen(control: widgets.SelectMultiple, what: str) -> list[str] | None:
            if not control.value:
                raise PlanError(what, ui("pick_one", self.lang).format(what=control.description))
            return None if len(control.value) == len(control.options) else list(control.value)

        for control, name in ((self.max_price, "max_price"), (self.min_vram, "min_vram_gb"), (self.budget, "budget_usd"),
                              (self.preemption_rate, "preemption_rate_per_hour")):
            if control.value is None or control.value < 0:
                raise PlanError(name, f"{control.description}: {control.value!r} must be a number >= 0")
        return {"modes": chosen(self.modes, "mode"), "classes": chosen(self.classes, "gpu_class"),
                "regions": chosen(self.regions, "region"), "max_price": self.max_price.value or None,
                "min_vram_gb": self.min_vram.value or None, "budget_usd": self.budget.value or None,
                "sort": self.sort.value, "include_unfit": self.include_unfit.value,
                "preemption_rate_per_hour": self.preemption_rate.value}

    def refresh(self) -> None:
        if self.plan is None or self._muted:
            return
        try:
            if self.limit.value < 1:
                raise PlanError("limit", f"{self.limit.description}: {self.limit.value} must be at least 1")
            with _quiet():
                results = offer_results(self.plan, **self.filters())
        except Exception as exc:  # noqa: BLE001
            self._show_error(friendly(exc))
            return
        self.results, self.error, self._stale = results, None, False
        self.message.value = ""
        self.table.value = offers_table_html(results, self.lang, self.limit.value)
        self.interruptible.value = interruptible_html(results, self.lang)
        if not self.report:
            self.scatter.show(self.scatter_figure())

    def _show_error(self, message: str) -> None:
        self.error = one_line(message)
        self.message.value = error_html(message)

    def scatter_figure(self) -> go.Figure:
        return charts.offers_figure(self.results, lang=self.lang)

    # -- trial records ----------------------------------------------------------------------------

    def add_record(self, record: Any) -> None:
        self.records.append(record)
        self._render_compare()

    def _load_record_file(self, path: str | os.PathLike[str]) -> None:
        from gpuwork.measure.trial import TrialRecord

        try:
            self.records.append(TrialRecord.from_json(Path(path)))
        except (OSError, ValueError, KeyError, TypeError, GpuworkError) as exc:
            self._show_error(f"cannot read trial record {path}: {friendly(exc) if isinstance(exc, GpuworkError) else exc}")

    def _on_records(self, change: Any) -> None:
        from gpuwork.measure.trial import TrialRecord

        for item in change["new"] or ():
            name = item.get("name", "record.json")
            try:
                self.records.append(TrialRecord.from_json(bytes(item["content"]).decode("utf-8")))
            except (ValueError, KeyError, TypeError, UnicodeDecodeError, GpuworkError) as exc:
                self._show_error(f"{name} is not a gpuwork trial record ({one_line(exc)})")
        self._render_compare()

    def _render_compare(self) -> None:
        price = self.record_price.value
        try:
            if price is not None and price < 0:
                raise PlanError("price", f"{self.record_price.description}: {price:g} must be >= 0")
            self.compare.value = compare_html(self.records, price or None, self.lang)
        except Exception as exc:  # noqa: BLE001
            self.compare.value = error_html(friendly(exc))

    # -- views ------------------------------------------------------------------------------------

    def filters_box(self) -> widgets.Widget:
        left = widgets.VBox([self.modes, self.classes, self.regions])
        right = widgets.VBox([self.max_price, self.min_vram, self.budget, self.sort, self.preemption_rate, self.limit,
                              self.include_unfit])
        box = widgets.HBox([left, right], layout={"flex_flow": "row wrap"})
        box.add_class("gpuwork-offers-filters")
        return box

    def view(self) -> widgets.Widget:
        compare = widgets.VBox([self.headings["h_compare"], widgets.HBox([self.record_upload, self.record_price]),
                                self.compare])
        parts = [self.headings["h_offers"], self.filters_box(), self.message, self.table, self.scatter.box,
                 self.headings["h_interruptible"], self.interruptible, compare]
        if self.request is not None:
            parts.append(self.request.view())
        box = widgets.VBox(parts)
        box.add_class("gpuwork-offers")
        return box

    def show(self, part: str) -> None:
        """Display "filters", "table", "scatter", "interruptible", "compare" or "request"."""
        self.refresh_if_stale()
        if not self.report:
            live = {"filters": lambda: widgets.VBox([self.filters_box(), self.message]),
                    "table": lambda: self.table, "scatter": lambda: self.scatter.box,
                    "interruptible": lambda: self.interruptible,
                    "compare": lambda: widgets.VBox([widgets.HBox([self.record_upload, self.record_price]),
                                                     self.compare]),
                    "request": lambda: self.request.view() if self.request else None}
            if part not in live:
                raise KeyError(part)
            _display(live[part]())
            return
        caption = _plan_caption(self.plan) if self.plan else ""
        static: dict[str, Callable[[], list[Any]]] = {
            "filters": lambda: [_html_obj(note_html(html.escape(caption)) + (self.message.value or ""))],
            "table": lambda: [_html_obj(self.table.value)],
            "scatter": lambda: [self.scatter_figure()],
            "interruptible": lambda: [_html_obj(self.interruptible.value)],
            "compare": lambda: [_html_obj(self.compare.value)],
            "request": lambda: [_html_obj(self.request.static_html())] if self.request else [],
        }
        if part not in static:
            raise KeyError(part)
        _display(*static[part]())

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.view()._repr_mimebundle_(**kwargs)


__all__ = [
    "DEFAULT_GPUS",
    "DEFAULT_TRIAL_PLAN",
    "DEMO_LIMITS",
    "LANGS",
    "ConfigStore",
    "OffersPanel",
    "RequestPanel",
    "SizingForm",
    "SizingResult",
    "TrialPanel",
    "compare_html",
    "error_html",
    "estimate_vs_measured_rows",
    "extrapolate",
    "friendly",
    "manual_config",
    "offer_results",
    "one_line",
    "parse_config",
    "plan_from",
    "setup_notebook",
    "size_plan",
    "sync_figure",
    "totals_html",
    "ui",
    "whatif_series",
]
