"""The rental request: what to ask a GPU provider for, in Russian or English, plus JSON.

``rental_request(plan) -> RentalRequest`` gathers the estimates (profile, memory, time, disk, an
illustrative offer) and writes the request the product brief asks for: method, model and size,
context and batch (or "in the config"), dataset size, disk with room for checkpoints, rental
period, the step-time trial, start date, budget, and the GPU class and count with the estimates
behind them. The first line is the one-sentence summary, e.g.

    Fine-tuning, LoRA adapters, context and batch size in the config; dataset 200 GB, need room for
    checkpoints; one month; step-time test required

Example:
    >>> req = rental_request(TrainPlan(model="llama-3.1-8b", method="lora"), lang="ru")
    >>> req.summary.startswith("Дообучение, LoRA-адаптеры")
    True

Limitations: prices in the suggestion come from the bundled, illustrative catalog; estimates are
estimates until the trial run measures step time, memory and data speed.
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.estimate.disk import GB, DiskPlan
from gpuwork.estimate.offers import OfferResult
from gpuwork.estimate.profiles import ProfileMatch
from gpuwork.estimate.timing import HOUR_S
from gpuwork.facts.model import count_params, spec_for_plan
from gpuwork.facts.paths import models_dir
from gpuwork.plan import Method, TrainPlan
from gpuwork.sizing import estimate_disk, evaluate_offers, match_profile
from gpuwork.units import SP, plural_ru

LANGS = ("en", "ru")
DAY_S = 24 * HOUR_S

_MONTHS_RU = ("января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября", "октября",
              "ноября", "декабря")
_MONTHS_EN = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December")
# Periods said in words (days -> (English, Russian after «срок — »)).
_PERIOD_WORDS = {
    1: ("one day", "один день"),
    7: ("one week", "неделя"),
    14: ("two weeks", "две недели"),
    30: ("one month", "месяц"),
    31: ("one month", "месяц"),
    60: ("two months", "два месяца"),
    90: ("three months", "три месяца"),
    180: ("six months", "полгода"),
    365: ("one year", "год"),
}


@dataclass(frozen=True)
class RentalRequest:
    """The request text and the facts behind it (``as_dict`` is the JSON form)."""

    lang: str
    summary: str  # the one-sentence request
    text: str  # summary + details, ready to send
    fields: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"lang": self.lang, "summary": self.summary, "text": self.text, **self.fields}


# -- wording helpers ---------------------------------------------------------------------------------


def _group(n: float, lang: str, decimals: int = 0) -> str:
    text = f"{n:,.{decimals}f}"
    if lang == "ru":
        return text.replace(",", SP).replace(".", ",")
    return text


def format_size(n_bytes: float, lang: str = "en") -> str:
    """Decimal GB/TB as disks and datasets are sold: 200 GB, 1.5 TB / 200 ГБ, 1,5 ТБ."""
    units = ("GB", "TB") if lang == "en" else ("ГБ", "ТБ")
    if n_bytes >= 1000 * GB:
        value, unit = n_bytes / (1000 * GB), units[1]
    else:
        value, unit = n_bytes / GB, units[0]
    if value >= 100 or float(value).is_integer():
        number = _group(round(value), lang)
    elif value >= 10:
        number = _group(value, lang, 0)
    else:
        number = _group(value, lang, 1)
    sep = SP if lang == "ru" else " "
    return f"{number}{sep}{unit}"


def _format_date(day: date, lang: str) -> str:
    if lang == "ru":
        return f"{day.day} {_MONTHS_RU[day.month - 1]} {day.year}{SP}года"
    return f"{day.day} {_MONTHS_EN[day.month - 1]} {day.year}"


def _period(days: int, lang: str) -> str:
    words = _PERIOD_WORDS.get(days)
    if lang == "ru":
        return f"срок — {words[1]}" if words else f"срок — {days}{SP}{plural_ru(days, 'день', 'дня', 'дней')}"
    return words[0] if words else f"{days} days"


def _method(plan: TrainPlan, lang: str) -> str:
    k = plan.trainable_layers
    if lang == "ru":
        return {
            Method.SCRATCH: "Обучение с нуля",
            Method.FULL: "Дообучение, полное обновление весов",
            Method.FREEZE: f"Дообучение последних {k} {plural_ru(k, 'слоя', 'слоёв', 'слоёв')}, остальные заморожены",
            Method.LORA: "Дообучение, LoRA-адаптеры",
            Method.QLORA: "Дообучение, QLoRA-адаптеры на 4-битной базовой модели",
        }[plan.method]
    return {
        Method.SCRATCH: "Training from scratch",
        Method.FULL: "Fine-tuning, full weight update",
        Method.FREEZE: f"Fine-tuning of the last {k} layer{'s' if k != 1 else ''}, the rest frozen",
        Method.LORA: "Fine-tuning, LoRA adapters",
        Method.QLORA: "Fine-tuning, QLoRA adapters on a 4-bit base model",
    }[plan.method]


def _context(plan: TrainPlan, lang: str, in_config: bool) -> str:
    if in_config:
        return "контекст и батч в конфиге" if lang == "ru" else "context and batch size in the config"
    s, b, ga = plan.seq_len, plan.batch_size, plan.grad_accum
    if lang == "ru":
        text = f"контекст {_group(s, lang)}{SP}{plural_ru(s, 'токен', 'токена', 'токенов')}, батч {b}"
        return text + (f" (накопление градиента ×{ga})" if ga > 1 else "")
    return f"context {s:,} tokens, batch {b}" + (f" (gradient accumulation x{ga})" if ga > 1 else "")


def _money(usd: float, lang: str) -> str:
    if lang == "ru":
        return f"{_group(usd, lang)}{SP}USD"
    return f"${usd:,.0f}"


def _hours(s: float, lang: str) -> str:
    h = s / HOUR_S
    value = _group(h, lang, 0 if h >= 10 else 1)
    text = f"{value}{SP}ч" if lang == "ru" else f"{value} h"
    if h > 72:
        days = round(h / 24)
        text += (f" ({days}{SP}{plural_ru(days, 'день', 'дня', 'дней')})" if lang == "ru" else f" ({days} days)")
    return text


def _gib(n: int, lang: str) -> str:
    value = _group(n / 2**30, lang, 1)
    return f"{value}{SP}ГиБ" if lang == "ru" else f"{value} GiB"


def _gpu_class(match: ProfileMatch, lang: str) -> str:
    if match.profile is None:
        return "—"
    pid = match.profile.profile_id
    if pid == "01":
        size = "24 GB" if match.gpu_id == "rtx4090" else "48 GB"
        return (f"GPU на {size.replace(' GB', SP + 'ГБ')}" if lang == "ru" else f"GPU with {size}")
    if pid == "02":
        return "серверный GPU на 80" + SP + "ГБ" if lang == "ru" else "server GPU with 80 GB"
    return ("одинаковых серверных GPU по 80" + SP + "ГБ и больше" if lang == "ru"
            else "identical server GPUs with 80 GB or more each")


# -- the request ---------------------------------------------------------------------------------------


def rental_request(
    plan: TrainPlan,
    *,
    lang: str = "en",
    start_date: date | str | None = None,
    budget_usd: float | None = None,
    rent_period_days: int | None = None,
    trial_required: bool = True,
    context_in_config: bool = True,
    compression_ratio: float = 1.0,
    include_offer: bool = True,
    match: ProfileMatch | None = None,
    disk: DiskPlan | None = None,
) -> RentalRequest:
    """The rental request for ``plan`` in ``lang`` ("en" or "ru").

    Args:
        plan: the run; dataset_bytes (or dataset_tokens) sizes the dataset and disk.
        start_date: desired start (a date or "YYYY-MM-DD"); None = not stated.
        budget_usd: the budget; None = not stated.
        rent_period_days: rental period; None = the estimated run time rounded up to whole days.
        trial_required: ask for the step-time trial before the rental.
        context_in_config: say "context and batch in the config" instead of the numbers (the
            estimates still use the plan's seq_len and batch).
        compression_ratio: passed to ``estimate_disk`` (1 = dataset_bytes is the unpacked size).
        include_offer: add the cheapest fitting offer of the profile's rental mode from the bundled
            catalog (illustrative prices).
        match, disk: precomputed profile match / disk plan (computed when omitted).

    Raises:
        PlanError: unknown language, bad date, budget or period.
    """
    if lang not in LANGS:
        raise PlanError("lang", f"lang={lang!r} is not one of {', '.join(LANGS)}")
    if isinstance(start_date, str):
        try:
            start_date = date.fromisoformat(start_date)
        except ValueError:
            raise PlanError("start_date", f"start_date={start_date!r} is not a date written YYYY-MM-DD") from None
    if budget_usd is not None and (isinstance(budget_usd, bool) or not isinstance(budget_usd, int | float)
                                   or budget_usd <= 0):
        raise PlanError("budget_usd", f"budget_usd={budget_usd!r} must be a number above 0 (USD)")
    if rent_period_days is not None and (isinstance(rent_period_days, bool) or not isinstance(rent_period_days, int)
                                         or rent_period_days < 1):
        raise PlanError("rent_period_days", f"rent_period_days={rent_period_days!r} must be a whole number >= 1")

    spec = spec_for_plan(plan)
    counts = count_params(spec, plan)
    match = match or match_profile(plan, spec=spec)
    disk = disk or estimate_disk(plan, spec, compression_ratio=compression_ratio)
    time = match.time
    period_from_estimate = rent_period_days is None
    if rent_period_days is None:
        rent_period_days = max(1, math.ceil(time.total_s / DAY_S)) if time else 30
    offer = _best_offer(match, rent_period_days) if include_offer else None
    ru = lang == "ru"

    # -- the one-sentence summary ------------------------------------------------------------------
    dataset_bytes = plan.dataset_bytes if plan.dataset_bytes is not None else disk.line("dataset_raw").bytes
    dataset = f"датасет {format_size(dataset_bytes, lang)}" if ru else f"dataset {format_size(dataset_bytes, lang)}"
    if plan.checkpoints_kept > 0:
        dataset += ", нужно место под чекпойнты" if ru else ", need room for checkpoints"
    if trial_required:
        trial = "требуется тест времени шага" if ru else "step-time test required"
    else:
        trial = "тест времени шага не нужен" if ru else "no step-time test needed"
    summary = (f"{_method(plan, lang)}, {_context(plan, lang, context_in_config)}; {dataset}; "
               f"{_period(rent_period_days, lang)}; {trial}")

    # -- details ------------------------------------------------------------------------------------
    lines = [summary, ""]
    params_b = spec.params_total / 1e9
    if ru:
        lines.append(f"Модель: {model_display_name(spec.name)} ({_group(params_b, lang, 2)}{SP}млрд параметров, "
                     f"обучаемых — {_count(counts.trainable, lang)}), точность {plan.precision.value}, оптимизатор "
                     f"{plan.optimizer.value}.")
        shape = (f"{_group(plan.seq_len, lang)}{SP}токенов × батч {plan.batch_size}"
                 + (f", накопление ×{plan.grad_accum}" if plan.grad_accum > 1 else ""))
        lines.append("Контекст и батч: заданы в конфиге обучения (оценки ниже — для " + shape + ")."
                     if context_in_config else f"Контекст и батч: {shape}.")
        lines.append(f"Датасет: {format_size(dataset_bytes, lang)} (около {_tokens(plan.dataset_tokens, lang)}), "
                     f"эпох: {_group(plan.epochs, lang, 0 if float(plan.epochs).is_integer() else 1)}.")
        lines.append(f"Диск: не меньше {format_size(disk.recommended_bytes, lang)} — с учётом "
                     f"{disk.checkpoints_on_disk} чекпойнтов по {format_size(disk.checkpoint.total_bytes, lang)} и "
                     f"запаса {round(disk.margin_bytes / max(disk.subtotal_bytes, 1) * 100)}{SP}%.")
        period_words = _period(rent_period_days, lang).removeprefix("срок — ")
        how = " (по оценке времени обучения)" if period_from_estimate else ""
        lines.append(f"Срок аренды: {period_words}{how}"
                     + (f"; желаемая дата начала — {_format_date(start_date, lang)}" if start_date else "") + ".")
        if budget_usd is not None:
            lines.append(f"Бюджет: до {_money(budget_usd, lang)}.")
    else:
        lines.append(f"Model: {model_display_name(spec.name)} ({params_b:.2f} B parameters, "
                     f"{_count(counts.trainable, lang)} trainable), precision {plan.precision.value}, optimizer "
                     f"{plan.optimizer.value}.")
        shape = (f"{plan.seq_len:,} tokens x batch {plan.batch_size}"
                 + (f", gradient accumulation x{plan.grad_accum}" if plan.grad_accum > 1 else ""))
        lines.append("Context and batch: set in the training config (the estimates below assume " + shape + ")."
                     if context_in_config else f"Context and batch: {shape}.")
        lines.append(f"Dataset: {format_size(dataset_bytes, lang)} (about {_tokens(plan.dataset_tokens, lang)}), "
                     f"{plan.epochs:g} epoch{'s' if plan.epochs != 1 else ''}.")
        lines.append(f"Disk: at least {format_size(disk.recommended_bytes, lang)}, including "
                     f"{disk.checkpoints_on_disk} checkpoints of {format_size(disk.checkpoint.total_bytes, lang)} "
                     f"each and a {disk.margin_bytes / max(disk.subtotal_bytes, 1):.0%} margin.")
        how = " (from the estimated training time)" if period_from_estimate else ""
        lines.append(f"Rental period: {_period(rent_period_days, lang)}{how}"
                     + (f"; desired start: {_format_date(start_date, lang)}." if start_date else "."))
        if budget_usd is not None:
            lines.append(f"Budget: up to {_money(budget_usd, lang)}.")
    lines.extend(_suggestion_lines(match, offer, budget_usd, lang))
    if time is not None and time.total_s > rent_period_days * DAY_S:
        days = math.ceil(time.total_s / DAY_S)
        lines.append(f"Внимание: по оценке обучение займёт около {days}{SP}{plural_ru(days, 'дня', 'дней', 'дней')} "
                     f"— дольше срока аренды; нужно больше GPU, меньше данных или более длинный срок." if ru else
                     f"Note: the estimated training time (about {days} days) is longer than the rental period; "
                     "more GPUs, less data or a longer period are needed.")
    if trial_required:
        lines.append(
            "Тест времени шага до аренды: короткий запуск с этим батчем и контекстом — фиксированное число шагов; "
            "после прогрева замеряем время шага, пиковую память и скорость загрузки данных, а также сохранение "
            "и восстановление чекпойнта." if ru else
            "Step-time test before the rental: a short run with this batch and context — a fixed number of steps; "
            "after warm-up we measure step time, peak memory and data-loading speed, and save and restore a "
            "checkpoint.")
    if match.checks:
        checks = match.checks_ru if ru else match.checks
        lines.append(("Проверить: " if ru else "Please check: ") + "; ".join(checks) + ".")
    text = "\n".join(lines)

    fields = {
        "method": plan.method.value,
        "model": model_display_name(spec.name),
        "model_ref": plan.model,
        "params_total": spec.params_total,
        "params_trainable": counts.trainable,
        "precision": plan.precision.value,
        "optimizer": plan.optimizer.value,
        "context_in_config": context_in_config,
        "seq_len": plan.seq_len,
        "batch_size": plan.batch_size,
        "grad_accum": plan.grad_accum,
        "dataset_bytes": dataset_bytes,
        "dataset_tokens": plan.dataset_tokens,
        "epochs": plan.epochs,
        "disk_recommended_bytes": disk.recommended_bytes,
        "disk": disk.as_dict(),
        "checkpoints_kept": plan.checkpoints_kept,
        "checkpoint_bytes": disk.checkpoint.total_bytes,
        "rent_period_days": rent_period_days,
        "rent_period_from_estimate": period_from_estimate,
        "trial_required": trial_required,
        "start_date": start_date.isoformat() if start_date else None,
        "budget_usd": budget_usd,
        "profile": ({"id": match.profile.profile_id, "name": match.profile.name_ru if ru else match.profile.name_en,
                     "mode": match.profile.mode.value} if match.profile else None),
        "suggested": {
            "gpu_class": _gpu_class(match, lang),
            "reference_gpu": match.gpu_id,
            "gpus": match.gpus,
            "nodes": match.nodes,
            "sharding": match.sharding.value,
            "mode": match.profile.mode.value if match.profile else None,
            "changes": list(match.changes),
            "offer": _offer_dict(offer),
        },
        "estimates": {
            "memory_per_gpu_bytes": match.memory_per_gpu_bytes,
            "usable_per_gpu_bytes": match.usable_per_gpu_bytes,
            "step_time_s": time.step_time_s if time else None,
            "tokens_per_s": time.tokens_per_s if time else None,
            "total_s": time.total_s if time else None,
            "gpu_hours": time.gpu_hours if time else None,
            "mfu": time.mfu.value if time else None,
            "mfu_source": time.mfu.source if time else None,
        },
        "reasons": list(match.reasons_ru if ru else match.reasons),
    }
    return RentalRequest(lang=lang, summary=summary, text=text, fields=fields)


def _count(n: int, lang: str) -> str:
    """A parameter count in words: 6.8 M / 70.55 B (6,8 млн / 70,55 млрд)."""
    if n >= 1e9:
        return f"{_group(n / 1e9, lang, 2)}{SP}млрд" if lang == "ru" else f"{n / 1e9:.2f} B"
    return f"{_group(n / 1e6, lang, 1)}{SP}млн" if lang == "ru" else f"{n / 1e6:,.1f} M"


@functools.lru_cache(maxsize=1)
def _hub_ids() -> dict[str, str]:
    path = models_dir() / "index.csv"
    if not path.is_file():
        return {}
    with open(path, encoding="utf-8", newline="") as fh:
        return {row["name"]: row["hf_id"] for row in csv.DictReader(fh) if row.get("hf_id")}


def model_display_name(name: str) -> str:
    """The Hugging Face id of a bundled preset (meta-llama/Llama-3.1-8B), else the name as given."""
    return _hub_ids().get(name, name)


def _tokens(n: int, lang: str) -> str:
    if lang == "ru":
        if n >= 1e9:
            return f"{_group(n / 1e9, lang, 1)}{SP}млрд токенов"
        return f"{_group(n / 1e6, lang, 0)}{SP}млн токенов"
    return f"{n / 1e9:,.1f} B tokens" if n >= 1e9 else f"{n / 1e6:,.0f} M tokens"


def _best_offer(match: ProfileMatch, period_days: int) -> OfferResult | None:
    """Cheapest fitting offer of the profile's rental mode whose minimum rental is not longer than
    the rental period (or the run); on-demand offers when no such offer fits."""
    if match.profile is None:
        return None
    plan = match.fitted_plan or match.plan
    horizon_h = max(period_days * 24, (match.time.total_s / HOUR_S) if match.time else 0)
    for mode in dict.fromkeys((match.profile.mode.value, "on-demand")):
        results = [r for r in evaluate_offers(plan, mode=mode, include_unfit=False)
                   if r.offer.min_rental_hours <= horizon_h]
        if match.profile.profile_id != "01":  # server GPUs of the profile's memory class
            results = [r for r in results if r.offer.gpu.memory_total_bytes >= match.usable_per_gpu_bytes]
        if results:
            return results[0]
    return None


def _offer_dict(offer: OfferResult | None) -> dict[str, Any] | None:
    if offer is None:
        return None
    return {"offer_id": offer.offer.offer_id, "gpu": offer.offer.gpu.display_name, "gpus": offer.fit.plan.gpus,
            "billed_gpus": offer.billed_gpus, "mode": offer.offer.mode.value,
            "price_per_gpu_hour_usd": offer.offer.price_per_gpu_hour, "expected_cost_usd": offer.expected_cost_usd,
            "total_s": offer.time.total_s if offer.time else None, "illustrative": True}


def _change_ru(change: str) -> str:
    """A plan change ("gpus 1 -> 16") said in Russian."""
    name, _, values = change.partition(" ")
    old, _, new = values.partition(" -> ")
    if name == "grad_checkpointing":
        return "включить gradient checkpointing" if new == "on" else "выключить gradient checkpointing"
    label = {"gpus": "число GPU", "sharding": "шардирование"}.get(name, name)
    return f"{label} {old} → {new}"


def _suggestion_lines(match: ProfileMatch, offer: OfferResult | None, budget_usd: float | None,
                      lang: str) -> list[str]:
    ru = lang == "ru"
    if match.profile is None:
        reason = "; ".join(match.reasons_ru if ru else match.reasons)
        return [("Подходящей конфигурации не найдено: " if ru else "No configuration found: ") + reason + "."]
    p = match.profile
    count = f"{match.gpus} ×" if ru else f"{match.gpus} x"
    if ru:
        mode = {"on-demand": "почасовая аренда", "reserved": "резервирование", "interruptible": "прерываемая"}[
            p.mode.value]
        nodes_word = plural_ru(match.nodes, "узел", "узла", "узлов")
        where = f", {match.nodes} {nodes_word}" if match.nodes > 1 else ""
        line = (f"Предлагаемая конфигурация: {count} {_gpu_class(match, lang)} (класс {match.gpu_name}{where}), "
                f"{mode} — профиль {p.profile_id} «{p.name_ru}»")
        if match.gpus > 1:
            line += f", шардирование {match.sharding.value}"
    else:
        where = f", {match.nodes} nodes" if match.nodes > 1 else ""
        line = (f"Suggested configuration: {count} {_gpu_class(match, lang)} ({match.gpu_name} class{where}), "
                f"{p.mode.value} — profile {p.profile_id} \"{p.name_en}\"")
        if match.gpus > 1:
            line += f", {match.sharding.value} sharding"
    out = [line + "."]
    if match.changes:
        changes = ", ".join(_change_ru(c) for c in match.changes) if ru else ", ".join(match.changes)
        out.append(f"Изменения к плану: {changes}." if ru else f"Changes to the plan: {changes}.")
    t = match.time
    if t is not None:
        if ru:
            out.append(f"Оценки: память {_gib(match.memory_per_gpu_bytes, lang)} на GPU из "
                       f"{_gib(match.usable_per_gpu_bytes, lang)} доступных; обучение около {_hours(t.total_s, lang)} "
                       f"на {match.gpu_name} (шаг {_group(t.step_time_s, lang, 2)}{SP}с, "
                       f"{_group(t.tokens_per_s, lang)}{SP}токенов/с) — до пробного запуска это оценка.")
        else:
            out.append(f"Estimates: {_gib(match.memory_per_gpu_bytes, lang)} of GPU memory per GPU of "
                       f"{_gib(match.usable_per_gpu_bytes, lang)} usable; about {_hours(t.total_s, lang)} of training "
                       f"on {match.gpu_name} (step {t.step_time_s:.2f} s, {t.tokens_per_s:,.0f} tokens/s) — "
                       "estimates until the trial run measures them.")
    if offer is not None and offer.expected_cost_usd is not None:
        cost = _money(offer.expected_cost_usd, lang)
        verdict = ""
        if budget_usd is not None:
            within = offer.expected_cost_usd <= budget_usd
            verdict = ((" — в рамках бюджета" if within else " — больше бюджета") if ru else
                       (" — within the budget" if within else " — over the budget"))
        if ru:
            out.append(f"Пример по каталогу (цены ориентировочные): {offer.offer.offer_id}, "
                       f"{_group(offer.offer.price_per_gpu_hour, lang, 2)}{SP}USD за GPU-час, около {cost}"
                       f"{verdict}.")
        else:
            out.append(f"Catalog example (illustrative prices): {offer.offer.offer_id}, "
                       f"${offer.offer.price_per_gpu_hour:.2f} per GPU-hour, about {cost}{verdict}.")
    return out


__all__ = ["LANGS", "RentalRequest", "format_size", "model_display_name", "plural_ru", "rental_request"]
