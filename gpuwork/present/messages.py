"""The one message catalog: every code a decision returns, and every label shown, in English and Russian.

Decision code (``gpuwork.estimate``) returns ``gpuwork.message.Msg`` objects: a code and its numbers.
``render(msg, lang)`` looks the code up in ``CATALOG`` and fills the template. Each placeholder says how
its value is shown after a colon, so numbers take the language's form (``8,294`` / ``8 294``,
``1.5 GiB`` / ``1,5 ГиБ``) through the formatters of ``gpuwork.units``:

    {need_bytes:gib}   bytes as GiB               {run_s:dur}    seconds as a run's length
    {size_bytes:size}  bytes as decimal GB/TB     {size_bytes:gb}  the same, whole when round (200 GB)
    {each_bytes:gb2}   bytes as GB, 2 decimals    {bytes_s:rate} bytes per second
    {x:usd}            dollars
    {n:int}            a whole number, grouped    {x:n0} {x:n1} {x:n2} {x:n3}  that many decimals
    {x:g}              a number, no trailing zeros {x:sci}       scientific (4.825e+10)
    {share:pct}        a fraction as a percentage {params:bn}    a count in billions, 2 decimals
    {params:count}     6.8 M / 70.55 B (6,8 млн)  {tokens:tokens}  100 M tokens (100 млн токенов)
    {day:date}         an ISO date in words       {n:pl:день|дня|дней}  the noun form for n
    {mode:@mode}       another entry: mode.<value> {x:raw}      str(x), untouched (ids, years)
    {x}                text as is; a nested Msg rendered; a tuple of them joined with "; "
    {x:list}           a tuple of Msgs joined with ", "

A plain ``{x}`` shows whole numbers grouped and refuses other floats: a number must say its kind.
English plurals take two forms (``{n:pl:GPU|GPUs}``), Russian three (one, few, many; see
``gpuwork.units.plural_ru``). Templates are plain strings; both languages use the same placeholders
(tests/test_messages.py checks it, and that every code the decision modules emit is here).

    >>> render(msg("fit.as_planned", need_bytes=3 * 2**29, usable_bytes=20 * 2**30), "ru")
    'помещается как запланировано: 1,5 ГиБ из 20,0 ГиБ'
"""

from __future__ import annotations

import functools
import math
import string
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from typing import Any

from gpuwork import errors
from gpuwork.estimate.memory import TERM_LABELS
from gpuwork.message import Msg, msg
from gpuwork.present import (
    messages_advisor,
    messages_app,
    messages_configs,
    messages_decision,
    messages_errors,
    messages_help,
    messages_hf,
    messages_inputs,
    messages_measure,
    messages_reading,
    messages_records,
    messages_report,
    messages_resume,
    messages_trial_faults,
    messages_ui_advice,
    messages_validation,
)
from gpuwork.units import (
    GB,
    LANGS,
    MISSING,
    SP,
    check_lang,
    fmt_duration,
    fmt_gib,
    fmt_int,
    fmt_number,
    fmt_rate,
    fmt_size,
    fmt_size_short,
    fmt_usd,
    plural_ru,
    unit,
)


class MessageError(LookupError):
    """A message the catalog cannot render: unknown code or language, missing parameter, bad kind."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


# -- the catalog: code -> (English, Russian) ---------------------------------------------------------------------
# Technical names stay as they are in both languages (GPU and model names, LoRA, QLoRA, ZeRO, FSDP, DDP,
# NVLink, PCIe, InfiniBand, bf16, AdamW, USD, config keys such as gradient_checkpointing): they are what the
# user types into a training config or reads on a provider's page. "Gradient checkpointing" is said in
# Russian ("пересчёт активаций") with the config key next to it, so the user knows which switch it is.

_ENTRIES: dict[str, tuple[str, str]] = {
    # -- names looked up by value ({x:@prefix}) -----------------------------------------------------------------
    "mode.on-demand": ("on-demand", "почасовая аренда"),
    "mode.reserved": ("reserved", "резервирование"),
    "mode.interruptible": ("interruptible", "прерываемая"),
    "method.scratch": ("training from scratch", "обучение с нуля"),
    "method.full": ("full weight update", "полное обновление весов"),
    "method.freeze": ("last layers trained, the rest frozen", "обучаются последние слои, остальные заморожены"),
    "method.lora": ("LoRA adapters", "LoRA-адаптеры"),
    "method.qlora": ("QLoRA adapters on a 4-bit base", "QLoRA-адаптеры на 4-битной базе"),
    # the software stack a plan is priced with (TrainPlan.stack; stacks.csv), named on every surface ("stack.label")
    "stack.hf-trainer": ("HF Trainer (eager)", "HF Trainer (PyTorch без компиляции)"),
    "stack.hf-liger": ("HF Trainer + Liger kernels", "HF Trainer с объединёнными ядрами (hf-liger)"),
    "stack.torch-compile": ("HF Trainer + torch.compile", "HF Trainer + torch.compile"),
    "stack.unsloth": ("Unsloth", "библиотека unsloth"),
    "stack.framework": ("tuned framework (torchtitan, Megatron, NeMo)",
                        "настроенный фреймворк для предобучения (framework)"),
    "stack.torchtune": ("torchtune (compiled)", "torchtune (с компиляцией)"),
    "stack.label": ("stack: {stack:@stack}", "стек: {stack:@stack}"),
    "network.none": ("no inter-node network", "без сети между узлами"),
    "network.ethernet-25g": ("25 Gb/s Ethernet", "Ethernet 25 Гбит/с"),
    "network.ethernet-100g": ("100 Gb/s Ethernet", "Ethernet 100 Гбит/с"),
    "network.roce-400g": ("RoCE 400 Gb/s", "RoCE 400 Гбит/с"),
    "network.ib-hdr-200g": ("InfiniBand HDR", "InfiniBand HDR"),
    "network.ib-ndr-400g": ("InfiniBand NDR", "InfiniBand NDR"),
    "network.dgx-h100": ("DGX H100, 8 x 400 Gb/s InfiniBand", "DGX H100, InfiniBand 8 x 400 Гбит/с"),
    "network.dgx-a100": ("DGX A100, 8 x 200 Gb/s InfiniBand", "DGX A100, InfiniBand 8 x 200 Гбит/с"),
    "network.meta-roce-400g": ("RoCE, 400 Gb/s per GPU", "RoCE, 400 Гбит/с на GPU"),
    "network.aws-p5": ("AWS p5, 32 x 100 Gb/s EFA", "AWS p5, EFA 32 x 100 Гбит/с"),
    "network.aws-p5en": ("AWS p5en, 16 x 200 Gb/s EFA", "AWS p5en, EFA 16 x 200 Гбит/с"),
    "network.aws-p4d": ("AWS p4d, 4 x 100 Gb/s EFA", "AWS p4d, EFA 4 x 100 Гбит/с"),
    "network.aws-p6-b200": ("AWS p6-b200, 8 x 400 Gb/s EFA", "AWS p6-b200, EFA 8 x 400 Гбит/с"),
    "network.gcp-a3-mega": ("GCP A3 Mega, 8 x 200 Gb/s GPUDirect-TCPXO", "GCP A3 Mega, GPUDirect-TCPXO 8 x 200 Гбит/с"),
    "network.gcp-a3-high": ("GCP A3 High, 4 x 200 Gb/s GPUDirect-TCPX", "GCP A3 High, GPUDirect-TCPX 4 x 200 Гбит/с"),
    "network.one-ndr-400g": ("one 400 Gb/s InfiniBand port per node", "один порт InfiniBand 400 Гбит/с на узел"),
    "link.pcie": ("PCIe", "PCIe"),
    "link.nvlink_bridge": ("an NVLink bridge", "мост NVLink"),
    "link.nvlink_switch": ("NVLink/NVSwitch", "NVLink/NVSwitch"),
    "link.nvlink_switch_rack": ("a rack-scale NVLink domain", "NVLink на всю стойку"),
    "link.xgmi": ("Infinity Fabric (xGMI)", "Infinity Fabric (xGMI)"),
    "phase.forward": ("forward", "прямом проходе"),
    "phase.loss_backward": ("loss backward", "обратном проходе через loss"),
    "phase.block_backward": ("block backward", "обратном проходе через блоки"),
    "phase.backward_end": ("backward end", "конце обратного прохода"),
    "phase.optimizer_step": ("optimizer step", "шаге оптимизатора"),
    # the traced step's phases (gpuwork.measure.trace)
    "phase.backward": ("backward", "обратном проходе"),
    "phase.optimizer": ("optimizer", "шаге оптимизатора"),
    "phase.after-step": ("after-step", "после шага"),
    "phase.step": ("step", "шаге"),
    "sort.cost": ("cost", "по стоимости"),
    "sort.time": ("time", "по времени"),
    "sort.deadline": ("deadline", "по сроку"),
    "sort.price": ("price", "по цене"),
    "sort.vram": ("vram", "по памяти"),
    "month.1": ("January", "января"), "month.2": ("February", "февраля"), "month.3": ("March", "марта"),
    "month.4": ("April", "апреля"), "month.5": ("May", "мая"), "month.6": ("June", "июня"),
    "month.7": ("July", "июля"), "month.8": ("August", "августа"), "month.9": ("September", "сентября"),
    "month.10": ("October", "октября"), "month.11": ("November", "ноября"), "month.12": ("December", "декабря"),
    "date": ("{day:raw} {month:@month} {year:raw}", "{day:raw} {month:@month} {year:raw} года"),
    "unit.millions": ("{n:n1} M", "{n:n1} млн"),
    "unit.billions": ("{n:n2} B", "{n:n2} млрд"),
    "unit.million_tokens": ("{n:n0} M tokens", "{n:n0} млн токенов"),
    "unit.billion_tokens": ("{n:n1} B tokens", "{n:n1} млрд токенов"),

    # -- rental profiles (gpuwork.estimate.profiles) -------------------------------------------------------------
    "profile.name.01": ("LoRA/QLoRA and a short check", "LoRA/QLoRA и короткая проверка"),
    "profile.name.02": ("regular fine-tuning", "регулярное дообучение"),
    "profile.name.03": ("full weight update", "полное обновление весов"),
    "profile.gpus.01": ("1 GPU with 24-48 GB", "1 GPU на 24–48 ГБ"),
    "profile.gpus.02": ("1 server GPU with 80 GB", "1 серверный GPU на 80 ГБ"),
    "profile.gpus.03": ("2+ identical GPUs with 80 GB+ each", "2+ одинаковых GPU по 80 ГБ и больше"),
    "profile.check.trial": (
        "measure step time and peak memory in a short trial before renting for longer",
        "замерить время шага и пиковую память в коротком пробном запуске до долгой аренды"),
    "profile.check.checkpoints": (
        "checkpoint save and restore: time and size on the rented disk",
        "сохранение и восстановление чекпойнта: время и размер на арендованном диске"),
    "profile.check.data_feed": (
        "data feed speed: the loader must keep up with the GPU",
        "скорость подачи данных: загрузчик должен успевать за GPU"),
    "profile.check.sharding": (
        "sharding strategy (ZeRO-2/ZeRO-3/FSDP) and memory per GPU",
        "стратегию шардирования (ZeRO-2/ZeRO-3/FSDP) и память на каждом GPU"),
    "profile.check.interconnect": (
        "exchange between GPUs (NVLink/NVSwitch) and between nodes (InfiniBand/RoCE)",
        "обмен между GPU (NVLink/NVSwitch) и между узлами (InfiniBand/RoCE)"),
    "profile.small_model": (
        " ({method:@method}, but the model is small: {params:bn} B parameters)",
        " ({method:@method}, но модель небольшая: {params:bn} млрд параметров)"),
    "profile.fits_small_card": (
        "fits one {card_gb} GB card{note}: {need_bytes:gib} of {usable_bytes:gib} on {gpu}",
        "помещается на одну карту {card_gb} ГБ{note}: {need_bytes:gib} из {usable_bytes:gib} на {gpu}"),
    "profile.short_run": (
        "short run: ~{run_s:dur} on {gpu} (a short check is up to {max_s:dur}), so on-demand rental suits it",
        "короткий запуск: около {run_s:dur} на {gpu} (короткая проверка — до {max_s:dur}), поэтому подходит "
        "почасовая аренда"),
    "profile.fits_server_card": (
        "fits one {card_gb} GB server card: {need_bytes:gib} of {usable_bytes:gib} on {gpu}",
        "помещается на одну серверную карту {card_gb} ГБ: {need_bytes:gib} из {usable_bytes:gib} на {gpu}"),
    "profile.regular_run": (
        "estimated {run_s:dur}: a regular run for a reserved GPU",
        "оценка времени — {run_s:dur}: обычный запуск для зарезервированного GPU"),
    "profile.long_run": (
        "longer than a month on one GPU: consider several GPUs (profile 03) to finish sooner",
        "на одном GPU дольше месяца: чтобы закончить быстрее, стоит взять несколько GPU (профиль 03)"),
    "profile.too_big_for_one": (
        "one {card_gb} GB card is not enough: {need_bytes:gib} needed, {usable_bytes:gib} usable on {gpu}",
        "одной карты на {card_gb} ГБ не хватает: нужно {need_bytes:gib}, на {gpu} доступно {usable_bytes:gib}"),
    "profile.plan_uses_gpus": (
        "the plan uses {gpus} GPUs{one_card}",
        "план рассчитан на {gpus} GPU{one_card}"),
    "profile.one_card_would_do": (
        " (one {card_gb} GB card would hold it: {need_bytes:gib})",
        " (хватило бы и одной карты на {card_gb} ГБ: {need_bytes:gib})"),
    "profile.fits_one_with_checkpointing": (
        "{too_big} with the plan as it is; it fits only with gradient checkpointing on (the plan has it off; it "
        "costs about a third more compute): activations are what does not fit",
        "{too_big} в плане как есть; помещается только с пересчётом активаций (gradient_checkpointing; в плане "
        "он выключен, это примерно на треть больше вычислений): не помещаются активации"),
    "profile.fits_several_with_checkpointing": (
        "it fits several GPUs only with gradient checkpointing on (the plan has it off; it costs about a third "
        "more compute): activations are what does not fit",
        "на нескольких GPU помещается только с пересчётом активаций (gradient_checkpointing; в плане он "
        "выключен, это примерно на треть больше вычислений): не помещаются активации"),
    "profile.none_fits": (
        "even {gpus} x {gpu} with ZeRO-3 do not fit ({best_bytes:gib} per GPU at best): reduce the batch or "
        "sequence, enable gradient checkpointing or offloading, or use adapters",
        "не помещается даже на {gpus} × {gpu} с ZeRO-3 (в лучшем случае {best_bytes:gib} на GPU): уменьшите "
        "батч или длину последовательности, включите пересчёт активаций (gradient_checkpointing) или выгрузку "
        "на CPU, либо используйте адаптеры"),
    "profile.where.one_node": ("one node", "один узел"),
    "profile.where.nodes": (
        "{nodes} nodes of {per_node} over {network:@network}",
        "{nodes} {nodes:pl:узел|узла|узлов} по {per_node} через {network:@network}"),
    "profile.fits_several": (
        "fits on {gpus} x {gpu} ({where}) with {sharding:raw}: {need_bytes:gib} of {usable_bytes:gib} per GPU",
        "помещается на {gpus} × {gpu} ({where}) с {sharding:raw}: {need_bytes:gib} из {usable_bytes:gib} на GPU"),
    "profile.several_time": (
        "estimated {run_s:dur}, scaling efficiency {efficiency:pct}; {verdict}",
        "оценка времени — {run_s:dur}, эффективность масштабирования {efficiency:pct}; {verdict}"),
    "profile.reject01.several_gpus": ("the plan asks for several GPUs", "план рассчитан на несколько GPU"),
    "profile.reject01.too_long": (
        "fits a {card_gb} GB card but runs ~{run_s:dur} on {gpu}: longer than a short check ({max_s:dur})",
        "помещается на карту {card_gb} ГБ, но на {gpu} займёт около {run_s:dur} — дольше короткой проверки "
        "({max_s:dur})"),
    "profile.reject01.too_big_for_card": (
        "needs {need_bytes:gib}, more than the {usable_bytes:gib} usable on a {card_gb} GB {gpu}",
        "нужно {need_bytes:gib} — больше, чем доступно на карте {card_gb} ГБ {gpu} ({usable_bytes:gib})"),
    "profile.reject01.too_big": (
        "needs {need_bytes:gib} on one GPU, more than a 24-48 GB card holds",
        "на одном GPU нужно {need_bytes:gib} — больше, чем есть у карты на 24–48 ГБ"),
    "profile.reject02.oversized": (
        "a reserved {card_gb} GB card is more than this run needs",
        "резервировать карту на {card_gb} ГБ для такого запуска избыточно"),
    "profile.reject03.one_gpu_enough": (
        "one GPU is enough: {need_bytes:gib} fits one {card_gb} GB card, so several GPUs are not needed for memory",
        "хватает одного GPU: {need_bytes:gib} помещаются на карту {card_gb} ГБ, несколько GPU по памяти не нужны"),
    "profile.reject03.checkpointing_enough": (
        "several GPUs are not needed once gradient checkpointing is on",
        "с пересчётом активаций (gradient_checkpointing) несколько GPU не нужны"),

    # -- changes a fit or a profile makes to the plan ------------------------------------------------------------
    "change.gpus": ("gpus {old} -> {new}", "число GPU {old} → {new}"),
    "change.sharding": ("sharding {old:raw} -> {new:raw}", "шардирование {old:raw} → {new:raw}"),
    "change.grad_checkpointing_on": (
        "grad_checkpointing off -> on", "включить пересчёт активаций (gradient_checkpointing)"),

    # -- fitting and offers (gpuwork.estimate.offers) ---------------------------------------------------------------
    "fit.as_planned": (
        "fits as planned: {need_bytes:gib} of {usable_bytes:gib}",
        "помещается как запланировано: {need_bytes:gib} из {usable_bytes:gib}"),
    "fit.with_gpus": (
        "fits with {gpus} {gpus:pl:GPU|GPUs} and {sharding:raw}: {need_bytes:gib} of {usable_bytes:gib} per GPU",
        "помещается на {gpus} GPU с {sharding:raw}: {need_bytes:gib} из {usable_bytes:gib} на GPU"),
    "fit.does_not_fit": (
        "does not fit: needs {need_bytes:gib} per GPU with {gpus} {gpus:pl:GPU|GPUs} and {sharding:raw}; "
        "{usable_bytes:gib} usable",
        "не помещается: нужно {need_bytes:gib} на GPU при {gpus} GPU и {sharding:raw}; доступно "
        "{usable_bytes:gib}"),
    "offer.no_network": (
        "needs {gpus} GPUs; a node has {per_node} and the offer has no inter-node network",
        "нужно {gpus} GPU; в узле их {per_node}, а сети между узлами у предложения нет"),
    "offer.whole_node_used": (
        "the node's {billed_gpus} GPUs are rented whole, so all are used ({needed_gpus} would be enough for memory)",
        "узел с {billed_gpus} GPU арендуется целиком, поэтому заняты все ({needed_gpus} хватило бы по памяти)"),
    "offer.whole_node_idle": (
        "the node has {per_node} GPUs and is rented whole; the plan uses {used_gpus}",
        "в узле {per_node} GPU, он арендуется целиком; план использует {used_gpus}"),
    "offer.interruptible": (
        "interruptible: ~{preemptions:n1} expected preemptions at {rate_per_hour:g}/h cost {lost_s:dur} of rework; "
        "checkpoint every ~{recommended_s:dur} (~{recommended_steps} {recommended_steps:pl:step|steps}; now every "
        "{interval_s:dur})",
        "прерываемое: около {preemptions:n1} прерываний при {rate_per_hour:g} в час — это {lost_s:dur} "
        "повторной работы; сохраняйте чекпойнт каждые ~{recommended_s:dur} (~{recommended_steps} "
        "{recommended_steps:pl:шаг|шага|шагов}; сейчас каждые {interval_s:dur})"),
    "offer.preemptions_outpace_checkpoints": (
        "preemptions come faster than checkpoints save work: checkpoint more often",
        "прерывания случаются чаще, чем чекпойнты сохраняют работу: сохраняйте чекпойнты чаще"),
    "offer.reserved_minimum": (
        "reserved for {min_rental_s:dur}; the run needs {run_s:dur}",
        "резервирование минимум на {min_rental_s:dur}; обучению нужно {run_s:dur}"),

    # -- disk (gpuwork.estimate.disk) --------------------------------------------------------------------------------
    "disk.label.dataset_compressed": ("dataset as downloaded (compressed)", "датасет в скачанном виде (сжатый)"),
    "disk.label.dataset_unpacked": ("dataset unpacked", "датасет в распакованном виде"),
    "disk.label.dataset_raw": ("dataset (raw text)", "датасет (исходный текст)"),
    "disk.label.tokenized": ("tokenized dataset (token ids)", "токенизированный датасет (номера токенов)"),
    "disk.label.base_model": ("base model download", "скачанная базовая модель"),
    "disk.label.checkpoints": (
        "checkpoints ({kept} kept + 1 being written)",
        "чекпойнты ({kept} {kept:pl:хранится|хранятся|хранятся} + 1 записывается)"),
    "disk.label.export": ("final model export", "итоговая модель"),
    "disk.label.environment": (
        "software (container image or venv, caches)",
        "программы (образ контейнера или виртуальное окружение Python, кэши)"),
    "disk.label.margin": ("margin", "запас"),
    "disk.rule.given_compressed": ("dataset_bytes as given (compressed download)", "dataset_bytes как задано "
                                   "(сжатый архив)"),
    "disk.rule.given": ("dataset_bytes as given", "dataset_bytes как задано"),
    "disk.rule.tokens_compressed": (
        "{tokens:int} tokens x {bytes_per_token:g} B/token (English BPE) / compression {ratio:g}",
        "{tokens:int} {tokens:pl:токен|токена|токенов} × {bytes_per_token:g} Б на токен (английский BPE) / сжатие "
        "{ratio:g}"),
    "disk.rule.tokens_text": (
        "{tokens:int} tokens x {bytes_per_token:g} B/token (English BPE: ~4 characters per token)",
        "{tokens:int} {tokens:pl:токен|токена|токенов} × {bytes_per_token:g} Б на токен (английский BPE: ~4 "
        "символа на токен)"),
    "disk.rule.unpacked": (
        "downloaded size x compression ratio {ratio:g} (both kept)",
        "скачанный размер × степень сжатия {ratio:g} (хранятся оба)"),
    "disk.rule.tokenized_uint16": (
        "{tokens:int} tokens x {id_bytes} B (uint16: vocab {vocab:int} < {limit:int})",
        "{tokens:int} {tokens:pl:токен|токена|токенов} × {id_bytes} Б (uint16: словарь {vocab:int} < {limit:int})"),
    "disk.rule.tokenized_uint32": (
        "{tokens:int} tokens x {id_bytes} B (uint32: vocab {vocab:int} >= {limit:int})",
        "{tokens:int} {tokens:pl:токен|токена|токенов} × {id_bytes} Б (uint32: словарь {vocab:int} ≥ {limit:int})"),
    "disk.rule.scratch": (
        "training from scratch: no base weights to download", "обучение с нуля: базовые веса скачивать не нужно"),
    "disk.rule.base_prequantized": (
        "pre-quantized 4-bit: {quantized:int} linear weights x 4.127 bits (NF4 + double quant, Dettmers et al. "
        "2023, QLoRA) + "
        "{others:int} others x 2 B",
        "заранее квантованная 4-битная: {quantized:int} весов линейных слоёв × 4,127 бита (NF4 + двойная "
        "квантизация, Деттмерс и др. 2023, QLoRA) + {others:int} остальных × 2 Б"),
    "disk.rule.base_bf16": (
        "{params:int} params x 2 B (bf16 safetensors: 2 bytes per weight)",
        "{params:int} {params:pl:параметр|параметра|параметров} × 2 Б (bf16 safetensors: 2 байта на вес)"),
    "disk.what.adapter": ("adapter x 4 B + optimizer states", "адаптер × 4 Б + состояния оптимизатора"),
    "disk.what.weights": (
        "weights in the saved dtype + optimizer states", "веса в сохраняемом типе + состояния оптимизатора"),
    "disk.what.weights_masters": (
        "weights in the saved dtype + optimizer states + fp32 masters",
        "веса в сохраняемом типе + состояния оптимизатора + fp32-копии весов"),
    "disk.rule.checkpoints": (
        "{count} x {each_bytes:gb2} ({what}); transformers Trainer writes a new checkpoint before deleting the "
        "oldest (save_total_limit rotation)",
        "{count} × {each_bytes:gb2} ({what}); Trainer из transformers записывает новый чекпойнт, прежде чем "
        "удалить самый старый (ротация save_total_limit)"),
    "disk.rule.export_adapter": (
        "{trainable:int} trainable params x 4 B (PEFT adapter, fp32)",
        "{trainable:int} обучаемых {trainable:pl:параметр|параметра|параметров} × 4 Б (адаптер PEFT, fp32)"),
    "disk.rule.export_adapter_merged": (
        "{trainable:int} trainable params x 4 B (PEFT adapter, fp32) + merged model {params:int} x 2 B (bf16)",
        "{trainable:int} обучаемых {trainable:pl:параметр|параметра|параметров} × 4 Б (адаптер PEFT, fp32) + "
        "объединённая модель {params:int} × 2 Б (bf16)"),
    "disk.rule.export_full": (
        "{params:int} params x {param_bytes} B ({dtype:raw} safetensors)",
        "{params:int} {params:pl:параметр|параметра|параметров} × {param_bytes} Б ({dtype:raw} safetensors)"),
    "disk.rule.environment": (
        "assumption: a CUDA PyTorch container unpacks to ~{size_bytes:gb}",
        "допущение: контейнер PyTorch с CUDA в распакованном виде занимает ~{size_bytes:gb}"),
    "disk.note.bytes_per_token": (
        "dataset_bytes / dataset_tokens = {bytes_per_token:n1} B per token, far from the ~{expected:g} B of English "
        "text: check dataset_tokens (time and the tokenized files use it)",
        "dataset_bytes / dataset_tokens = {bytes_per_token:n1} Б на токен — далеко от ~{expected:g} Б "
        "английского текста: проверьте dataset_tokens (по нему считаются время и токенизированные файлы)"),
    "disk.note.multi_node": (
        "multi-node runs need the dataset and base model on every node or on a shared volume",
        "при обучении на нескольких узлах датасет и базовая модель нужны на каждом узле или на общем томе"),

    # -- time (gpuwork.estimate.timing) ------------------------------------------------------------------------------
    "flops.convention": ("{method} + attention 12·L·H·Q·T{recompute}", "{method} + внимание 12·L·H·Q·T{recompute}"),
    "flops.full": ("6N (full update)", "6N (полное обновление)"),
    "flops.adapters": ("4N + 6 x adapter params (frozen base)", "4N + 6 × параметры адаптеров (база заморожена)"),
    "flops.freeze": ("2N + 2 x (trained blocks + head) + 2 x trainable",
                     "2N + 2 × (обучаемые блоки + голова) + 2 × обучаемые"),
    "flops.recompute": (" + recompute (gradient checkpointing)", " + пересчёт активаций"),
    "peak.bf16": ("BF16 tensor, dense, FP32 accumulate", "BF16 на тензорных ядрах, плотные, накопление в FP32"),
    "peak.fp16": ("FP16 tensor, dense, FP32 accumulate", "FP16 на тензорных ядрах, плотные, накопление в FP32"),
    "peak.fp32": ("FP32 (non-tensor; TF32 off, the PyTorch default for matmuls)",
                  "FP32 без тензорных ядер (TF32 выключен, как по умолчанию в PyTorch)"),
    "mfu.source.default": ("per-operation model", "пооперационная модель"),
    "mfu.source.argument": ("argument", "задано"),
    "mfu.source.calibration": ("calibration", "по замеру"),
    "mfu.argument": ("given by the caller", "задано вручную"),
    "mfu.calibrated": ("measured: {label}; every operation's speed x {scale:n2}",
                       "по замеру: {label}; скорость каждой операции × {scale:n2}"),
    "mfu.a_trial": ("a measured trial", "пробный запуск"),
    "mfu.op_model": (
        "what the per-operation model of the step comes to ({stack:raw} on {gpu}: measured matmul, attention and "
        "memory rates, kernel launches)",
        "к чему приходит пооперационная модель шага ({stack:raw} на {gpu}: измеренные скорости умножения матриц, "
        "внимания и памяти, запуски ядер)"),
    "time.derived_rates": (
        "no measured kernel rates for {gpu} in rates.csv: its datasheet figures are scaled by the typical "
        "achieved share of measured GPUs",
        "для {gpu} в rates.csv нет измеренных скоростей ядер: паспортные значения умножены на типичную "
        "достижимую долю измеренных GPU"),
    "comm.single_gpu": ("single GPU: no inter-GPU communication", "один GPU: обмена между GPU нет"),
    "comm.no_nvlink": (
        "{gpu} has no NVLink: communication takes {share:pct} of each step over PCIe",
        "у {gpu} нет NVLink: обмен занимает {share:pct} каждого шага через PCIe"),
    "comm.consider_less_traffic": (
        "consider more gradient accumulation, fewer GPUs, or a GPU with NVLink",
        "стоит увеличить накопление градиента, взять меньше GPU или GPU с NVLink"),
    "comm.geforce_no_p2p": (
        "GeForce drivers disable peer-to-peer, so traffic goes through host memory",
        "драйверы GeForce отключают прямой обмен между картами, поэтому данные идут через память хоста"),
    "comm.nvlink_needed": (
        "NVLink needed: PCIe would spend {pcie_share:pct} of each step communicating ({link_share:pct} over "
        "{link:@link})",
        "нужен NVLink: через PCIe обмен занял бы {pcie_share:pct} каждого шага ({link_share:pct} через "
        "{link:@link})"),
    "comm.setup_uses_pcie": (
        "this setup uses PCIe: rent nodes with NVLink/NVSwitch",
        "в этой конфигурации обмен идёт через PCIe: арендуйте узлы с NVLink/NVSwitch"),
    "comm.pcie_enough": (
        "PCIe is enough: communication would take {share:pct} of each step over PCIe",
        "PCIe достаточно: обмен занял бы {share:pct} каждого шага через PCIe"),
    "comm.network": (
        "{nodes} nodes over {network:@network} at ~{bytes_s:rate} per GPU: communication takes {share:pct} of "
        "each step",
        "{nodes} {nodes:pl:узел|узла|узлов} через {network:@network}, ~{bytes_s:rate} на GPU: обмен занимает "
        "{share:pct} каждого шага"),
    "comm.network_bottleneck": (
        "{nodes} nodes over {network:@network} at ~{bytes_s:rate} per GPU: communication takes {share:pct} of "
        "each step (the network is the bottleneck)",
        "{nodes} {nodes:pl:узел|узла|узлов} через {network:@network}, ~{bytes_s:rate} на GPU: обмен занимает "
        "{share:pct} каждого шага (узкое место — сеть)"),
    "data.gpus_wait": (
        "GPUs will wait for data: the loader gives {loader_tokens_s:int} tokens/s, the GPUs consume "
        "{needed_tokens_s:int} (idle {wait_share:pct} of each step); use ~{workers} loader workers or pre-tokenize",
        "GPU будут ждать данные: загрузчик даёт {loader_tokens_s:int} токенов/с, GPU потребляют "
        "{needed_tokens_s:int} (простой {wait_share:pct} каждого шага); нужно ~{workers} "
        "{workers:pl:процесс|процесса|процессов} загрузки или заранее токенизированные данные"),
    "data.keeps_up": (
        "the loader keeps up: {loader_tokens_s:int} tokens/s available, {needed_tokens_s:int} needed",
        "загрузчик успевает: доступно {loader_tokens_s:int} токенов/с, нужно {needed_tokens_s:int}"),
    "data.needed": (
        "GPUs consume {needed_tokens_s:int} tokens/s ({ids_bytes_s:rate} of token ids, {text_bytes_s:rate} of "
        "text if tokenized on the fly): about {workers} loader {workers:pl:worker|workers} at "
        "{worker_tokens_s:int} tokens/s each",
        "GPU потребляют {needed_tokens_s:int} токенов/с ({ids_bytes_s:rate} номеров токенов, {text_bytes_s:rate} "
        "текста при токенизации на лету): нужно около {workers} {workers:pl:процесса|процессов|процессов} "
        "загрузки по {worker_tokens_s:int} токенов/с"),
    "time.no_bf16": ("{gpu} has no BF16 tensor cores: use fp16-mixed",
                     "у {gpu} нет тензорных ядер BF16: используйте fp16-mixed"),
    "time.adapters_sharded": (
        "LoRA with ZeRO-3/FSDP gathers the whole frozen base every micro-batch",
        "LoRA с ZeRO-3/FSDP собирает всю замороженную базу на каждом микробатче"),

    # -- memory warnings (gpuwork.estimate.memory) ----------------------------------------------------------------
    "memory.seq_len_above_max": (
        "seq_len={seq_len:raw} is above {model}'s max_position_embeddings={max_position_embeddings:raw}: quality "
        "may suffer unless RoPE scaling is configured",
        "seq_len={seq_len:raw} больше, чем max_position_embeddings={max_position_embeddings:raw} у {model}: "
        "качество может пострадать, если не настроено масштабирование RoPE"),
    "memory.no_sdpa_path": (
        "transformers has no SDPA path for {architecture} (attention soft-capping): training runs with "
        "attention='eager' or 'flash'; set one of those",
        "в transformers нет пути SDPA для {architecture} (из-за ограничения логитов внимания): обучение идёт с "
        "attention='eager' или 'flash' — задайте одно из них"),
    "memory.offload_host": (
        "offloaded states use {host_bytes:gib} of CPU RAM per GPU",
        "выгруженные состояния занимают {host_bytes:gib} оперативной памяти CPU на каждый GPU"),
    "memory.activation_offload": (
        "checkpointed activations are offloaded: {host_bytes:gib} of CPU RAM per GPU, {transfer_bytes:gib} copied "
        "over the host link per step",
        "сохранённые активации выгружаются: {host_bytes:gib} оперативной памяти CPU на каждый GPU, "
        "{transfer_bytes:gib} пересылается по шине за шаг"),

    # -- the rental request (gpuwork.present.request) -----------------------------------------------------------
    "request.summary": ("{method}, {context}; {dataset}; {period}; {trial}",
                        "{method}, {context}; {dataset}; {period}; {trial}"),
    "request.method.scratch": ("Training from scratch", "Обучение с нуля"),
    "request.method.full": ("Fine-tuning, full weight update", "Дообучение, полное обновление весов"),
    "request.method.freeze": (
        "Fine-tuning of the last {k} {k:pl:layer|layers}, the rest frozen",
        "Дообучение последних {k} {k:pl:слоя|слоёв|слоёв}, остальные заморожены"),
    "request.method.lora": ("Fine-tuning, LoRA adapters", "Дообучение, LoRA-адаптеры"),
    "request.method.qlora": ("Fine-tuning, QLoRA adapters on a 4-bit base model",
                             "Дообучение, QLoRA-адаптеры на 4-битной базовой модели"),
    "request.context.in_config": ("context and batch size in the config", "контекст и батч в конфиге"),
    "request.context": (
        "context {seq_len:int} tokens, batch {batch}{accum}",
        "контекст {seq_len:int} {seq_len:pl:токен|токена|токенов}, батч {batch}{accum}"),
    "request.context.accum": (" (gradient accumulation x{grad_accum})", " (накопление градиента ×{grad_accum})"),
    "request.dataset": ("dataset {size_bytes:gb}{room}", "датасет {size_bytes:gb}{room}"),
    "request.dataset.room": (", need room for checkpoints", ", нужно место под чекпойнты"),
    "request.period": ("{period}", "срок — {period}"),
    "request.period.1": ("one day", "один день"),
    "request.period.7": ("one week", "неделя"),
    "request.period.14": ("two weeks", "две недели"),
    "request.period.30": ("one month", "месяц"),
    "request.period.60": ("two months", "два месяца"),
    "request.period.90": ("three months", "три месяца"),
    "request.period.180": ("six months", "полгода"),
    "request.period.365": ("one year", "год"),
    "request.period.days": ("{days} days", "{days} {days:pl:день|дня|дней}"),
    "request.trial.required": ("step-time test required", "требуется тест времени шага"),
    "request.trial.none": ("no step-time test needed", "тест времени шага не нужен"),
    "request.model": (
        "Model: {model} ({params:bn} B parameters, {trainable:count} trainable), precision {precision:raw}, "
        "optimizer {optimizer:raw}.",
        "Модель: {model} ({params:bn} млрд параметров, обучаемых — {trainable:count}), точность {precision:raw}, "
        "оптимизатор {optimizer:raw}."),
    "request.shape": ("{seq_len:int} tokens x batch {batch}{accum}",
                      "{seq_len:int} {seq_len:pl:токен|токена|токенов} × батч {batch}{accum}"),
    "request.shape.accum": (", gradient accumulation x{grad_accum}", ", накопление ×{grad_accum}"),
    "request.shape.in_config": (
        "Context and batch: set in the training config (the estimates below assume {shape}).",
        "Контекст и батч: заданы в конфиге обучения (оценки ниже — для {shape})."),
    "request.shape.explicit": ("Context and batch: {shape}.", "Контекст и батч: {shape}."),
    "request.dataset_line": (
        "Dataset: {size_bytes:gb} (about {tokens:tokens}), {epochs:g} {epochs:pl:epoch|epochs}.",
        "Датасет: {size_bytes:gb} (около {tokens:tokens}), эпох: {epochs:g}."),
    "request.disk": (
        "Disk: at least {total_bytes:gb}, including {count} {count:pl:checkpoint|checkpoints} of {each_bytes:gb} "
        "each and a {margin:pct} margin.",
        "Диск: не меньше {total_bytes:gb} — с учётом {count} {count:pl:чекпойнта|чекпойнтов|чекпойнтов} по "
        "{each_bytes:gb} и запаса {margin:pct}."),
    "request.rental": ("Rental period: {period}{how}{start}.", "Срок аренды: {period}{how}{start}."),
    "request.rental.estimated": (" (from the estimated training time)", " (по оценке времени обучения)"),
    "request.rental.start": ("; desired start: {day:date}", "; желаемая дата начала — {day:date}"),
    "request.budget": ("Budget: up to {budget_usd:usd}.", "Бюджет: до {budget_usd:usd}."),
    "request.too_long": (
        "Note: the estimated training time (about {days} days) is longer than the rental period; more GPUs, less "
        "data or a longer period are needed.",
        "Внимание: по оценке обучение займёт около {days} {days:pl:дня|дней|дней} — дольше срока аренды; нужно "
        "больше GPU, меньше данных или более длинный срок."),
    "request.trial": (
        "Step-time test before the rental: a short run with this batch and context — a fixed number of steps; "
        "after warm-up we measure step time, peak memory and data-loading speed, and save and restore a "
        "checkpoint.",
        "Тест времени шага до аренды: короткий запуск с этим батчем и контекстом — фиксированное число шагов; "
        "после прогрева замеряем время шага, пиковую память и скорость загрузки данных, а также сохранение и "
        "восстановление чекпойнта."),
    "request.checks": ("Please check: {checks}.", "Проверить: {checks}."),
    "request.no_configuration": ("No configuration found: {reasons}.",
                                 "Подходящей конфигурации не найдено: {reasons}."),
    "request.gpu_class.01": ("GPU with {card_gb} GB", "GPU на {card_gb} ГБ"),
    "request.gpu_class.02": ("server GPU with 80 GB", "серверный GPU на 80 ГБ"),
    "request.gpu_class.server": ("server GPU with {card_gb} GB", "серверный GPU на {card_gb} ГБ"),
    "request.gpu_class.03": ("identical server GPUs with 80 GB or more each",
                             "одинаковых серверных GPU по 80 ГБ и больше"),
    "request.gpu_class.none": ("—", "—"),
    "request.suggested": (
        "Suggested configuration: {gpus} x {gpu_class} ({gpu} class{where}), {mode:@mode} — profile {profile_id:raw} "
        "\"{name}\"{sharding}.",
        "Предлагаемая конфигурация: {gpus} × {gpu_class} (класс {gpu}{where}), {mode:@mode} — профиль "
        "{profile_id:raw} «{name}»{sharding}."),
    "request.suggested.nodes": (", {nodes} nodes", ", {nodes} {nodes:pl:узел|узла|узлов}"),
    "request.suggested.sharding": (", {sharding:raw} sharding", ", шардирование {sharding:raw}"),
    "request.changes": ("Changes to the plan: {changes:list}.", "Изменения к плану: {changes:list}."),
    "request.estimates": (
        "Estimates: {memory_bytes:gib} of GPU memory per GPU of {usable_bytes:gib} usable; about {run_s:dur} of "
        "training on {gpu} (step {step_s:n2} s, {tokens_s:int} tokens/s) — estimates until the trial run "
        "measures them.",
        "Оценки: память {memory_bytes:gib} на GPU из {usable_bytes:gib} доступных; обучение около {run_s:dur} на "
        "{gpu} (шаг {step_s:n2} с, {tokens_s:int} токенов/с) — до пробного запуска это оценка."),
    "request.example": (
        "Catalog example (illustrative prices): {offer_id:raw}, {price_usd:usd} per GPU-hour, about "
        "{cost_usd:usd}{verdict}.",
        "Пример по каталогу (цены ориентировочные): {offer_id:raw}, {price_usd:usd} за GPU-час, около "
        "{cost_usd:usd}{verdict}."),
    "request.within_budget": (" — within the budget", " — в рамках бюджета"),
    "request.over_budget": (" — over the budget", " — больше бюджета"),

    # -- the command line (gpuwork.cli.plan) ------------------------------------------------------------------------
    "cli.warning": ("gpuwork: warning: {text}", "gpuwork: предупреждение: {text}"),
    "cli.estimate.header": (
        "gpuwork estimate: {model}, {method:raw}, {precision:raw}, {optimizer:raw}, seq {seq_len:int} x batch "
        "{batch} (x{grad_accum} accumulation), {gpus} {gpus:pl:GPU|GPUs}, {sharding:raw}",
        "gpuwork estimate: {model}, {method:raw}, {precision:raw}, {optimizer:raw}, контекст {seq_len:int} × батч "
        "{batch} (накопление ×{grad_accum}), {gpus} GPU, {sharding:raw}"),
    "cli.estimate.params": ("parameters: {total:int} total, {trainable:int} trainable",
                            "параметры: всего {total:int}, обучаемых {trainable:int}"),
    "cli.estimate.breakdown": ("per-GPU memory at the peak ({phase:@phase}), GiB:",
                               "память на GPU в пике (на {phase:@phase}), ГиБ:"),
    "cli.estimate.allocated": ("peak allocated (torch max_memory_allocated)",
                               "пик занятой памяти (torch max_memory_allocated)"),
    "cli.estimate.reserved": ("peak reserved (torch max_memory_reserved)",
                              "пик зарезервированной (torch max_memory_reserved)"),
    "cli.estimate.device": ("device total (what nvidia-smi shows)", "всего на устройстве (как в nvidia-smi)"),
    "cli.estimate.host": ("CPU RAM for offloaded states", "ОЗУ CPU под выгруженные состояния"),
    "cli.dataset_tokens_note": (
        "gpuwork: note: dataset_tokens = {tokens:int} from --dataset-bytes at {bytes_per_token:g} B/token (give "
        "--dataset-tokens to override)",
        "gpuwork: примечание: dataset_tokens = {tokens:int} из --dataset-bytes по {bytes_per_token:g} Б на токен "
        "(задайте --dataset-tokens, чтобы указать точно)"),
    "cli.plan.header": (
        "gpuwork plan: {model}, {method:raw}, {precision:raw}, {optimizer:raw}, seq {seq_len:raw} x batch {batch} "
        "(x{grad_accum}), {gpus} {gpus:pl:GPU|GPUs}, {sharding:raw}",
        "gpuwork, план: {model}, {method:raw}, {precision:raw}, {optimizer:raw}, контекст {seq_len:raw} × батч "
        "{batch} (×{grad_accum}), {gpus} GPU, {sharding:raw}"),
    "cli.plan.data": (
        "data: {tokens:int} tokens x {epochs:g} epoch(s); checkpoint every {every} steps, {kept} kept",
        "данные: {tokens:int} {tokens:pl:токен|токена|токенов} × {epochs:g} эп.; чекпойнт каждые {every} "
        "{every:pl:шаг|шага|шагов}, хранится {kept}"),
    "cli.plan.memory": ("memory per GPU (as planned):", "память на GPU (по плану):"),
    "cli.plan.device_total": ("device total (nvidia-smi)", "всего на устройстве (nvidia-smi)"),
    "cli.plan.peak_at": ("(peak at {phase:@phase})", "(пик — на {phase:@phase})"),
    "cli.plan.profile": ("profile {profile_id:raw} \"{name}\": {gpus} x {gpu} ({mode:@mode})",
                         "профиль {profile_id:raw} «{name}»: {gpus} × {gpu} ({mode:@mode})"),
    "cli.plan.no_profile": ("profile: none fits", "профиль: ни один не подходит"),
    "cli.plan.rejected": ("not {profile_id:raw}: {why}", "не {profile_id:raw}: {why}"),
    "cli.plan.changes": ("changes to the plan: {changes:list}", "изменения к плану: {changes:list}"),
    "cli.plan.check": ("check: {what}", "проверить: {what}"),
    "cli.plan.time": (
        "time on {gpus} x {gpu} ({peak}, {tflops:g} TFLOPS, MFU {mfu:n2} {source:@mfu.source}):",
        "время на {gpus} × {gpu} ({peak}, {tflops:g} TFLOPS, MFU {mfu:n2}, {source:@mfu.source}):"),
    "cli.plan.flops": ("FLOPs per token", "FLOPs на токен"),
    "cli.plan.flops_value": ("{flops:sci}  ({note})", "{flops:sci}  ({note})"),
    "cli.plan.mfu": ("MFU: {note}", "MFU: {note}"),
    "cli.block_profile.traced": (
        "gpuwork has no hand-written block model for '{model_type:raw}': traced one block of the real class in "
        "{seconds:n1} s; memory and time follow it",
        "для '{model_type:raw}' в gpuwork нет ручной модели блока: один блок настоящего класса трассирован за "
        "{seconds:n1} с; память и время считаются по нему"),
    "cli.block_profile.failed": (
        "'{model_type:raw}' has no hand-written block model and its block could not be traced ({error}): the "
        "nearest family's block stands in",
        "для '{model_type:raw}' нет ручной модели блока, и трассировать его не удалось ({error}): вместо него "
        "взят блок ближайшего семейства"),
    "cli.block_profile.no_torch": (
        "'{model_type:raw}' has no hand-written block model; install gpuwork[trial] (torch) to trace the real "
        "block: the nearest family's block stands in",
        "для '{model_type:raw}' нет ручной модели блока; установите gpuwork[trial] (torch), чтобы трассировать "
        "настоящий блок: вместо него взят блок ближайшего семейства"),
    "cli.plan.breakdown": ("where a step goes (one GPU, {stack:@stack}): {parts:list}",
                           "из чего состоит шаг (один GPU, {stack:@stack}): {parts:list}"),
    "cli.plan.breakdown_part": ("{kind} {seconds:n3} s ({share:pct})", "{kind} {seconds:n3} с ({share:pct})"),
    "cli.plan.scaling": ("tokens/s per GPU on 1–64 x {gpu} (8 per node, InfiniBand NDR 400G between nodes): "
                         "{points:list}",
                         "токенов/с на GPU для 1–64 × {gpu} (по 8 в узле, между узлами InfiniBand NDR 400G): "
                         "{points:list}"),
    "cli.plan.scaling_point": ("{gpus}: {tokens_s:int}", "{gpus}: {tokens_s:int}"),
    "time.kind.matmul": ("matrix multiplications", "умножения матриц"),
    "time.kind.attention": ("attention", "внимание"),
    "time.kind.memory": ("memory-bound ops (norms, activations, casts, loss)",
                         "операции, ограниченные памятью (нормировки, активации, приведения типов, потери)"),
    "time.kind.optimizer": ("optimizer (clipping, update)", "оптимизатор (ограничение градиента, обновление)"),
    "time.kind.launch_overhead": ("kernel launches (waiting on the CPU)", "запуски ядер (ожидание CPU)"),
    "time.kind.communication_exposed": ("communication not hidden by compute", "обмен, не скрытый вычислениями"),
    "time.kind.data_wait": ("waiting for data", "ожидание данных"),
    "time.kind.optimizer_on_cpu": ("optimizer step on the CPU", "шаг оптимизатора на CPU"),
    "time.kind.parameter_offload_pcie": ("parameters over PCIe (offload)", "параметры по PCIe (выгрузка)"),
    "time.kind.checkpoint_offload_pcie": ("checkpointed activations over PCIe, not hidden by compute",
                                          "сохранённые активации по PCIe, не скрытые вычислениями"),
    "time.kind.compute_given_mfu": ("compute at the given MFU", "вычисления при заданном MFU"),
    "cli.plan.step": (
        "step: compute {compute_s:n3} s + optimizer {optimizer_s:n3} s + exposed communication {exposed_s:n3} s = "
        "{step_s:n3} s",
        "шаг: вычисления {compute_s:n3} с + оптимизатор {optimizer_s:n3} с + открытый обмен {exposed_s:n3} с = "
        "{step_s:n3} с"),
    "cli.plan.throughput": ("throughput", "скорость"),
    "cli.plan.throughput_value": ("{tokens_s:int} tokens/s ({steps:int} steps)",
                                  "{tokens_s:int} токенов/с ({steps:int} {steps:pl:шаг|шага|шагов})"),
    "cli.plan.total": (
        "training {train_s:dur} + eval {eval_s:dur} + {checkpoints:int} checkpoints {checkpoint_s:dur} + margin "
        "{margin_s:dur} = {total_s:dur} ({gpu_hours:int} GPU-hours)",
        "обучение {train_s:dur} + валидация {eval_s:dur} + {checkpoints:int} "
        "{checkpoints:pl:чекпойнт|чекпойнта|чекпойнтов} {checkpoint_s:dur} + запас {margin_s:dur} = "
        "{total_s:dur} ({gpu_hours:int} GPU-часов)"),
    "cli.plan.communication": ("communication: {verdict}", "обмен между GPU: {verdict}"),
    "cli.plan.data_feed": ("data: {verdict}", "данные: {verdict}"),
    "cli.plan.disk": ("disk: {total_bytes:size} recommended", "диск: рекомендуется {total_bytes:size}"),
    "cli.plan.note": ("note: {note}", "примечание: {note}"),
    "cli.plan.offers": ("cheapest fitting offers (illustrative prices):",
                        "самые дешёвые подходящие предложения (цены ориентировочные):"),
    "cli.plan.warning": ("warning: {warning}", "предупреждение: {warning}"),
    "cli.plan.gpu_too_small": (
        "the plan needs {need_bytes:gib} per GPU; {gpu} has {usable_bytes:gib} usable: it will not fit as planned",
        "плану нужно {need_bytes:gib} на GPU, у {gpu} доступно {usable_bytes:gib}: как запланировано, не "
        "поместится"),
    "cli.offers.header": (
        "gpuwork offers: {model}, {method:raw}, seq {seq_len:raw} x batch {batch}, {tokens:int} tokens x "
        "{epochs:g} epoch(s); {stack}; sorted by {sort:@sort}; prices illustrative",
        "gpuwork, предложения: {model}, {method:raw}, контекст {seq_len:raw} × батч {batch}, {tokens:int} "
        "{tokens:pl:токен|токена|токенов} × {epochs:g} эп.; {stack}; сортировка {sort:@sort}; цены ориентировочные"),
    "cli.offers.mode": ("{mode:@mode}", "{mode:@mode}"),
    "cli.offers.none": ("no offer passes the filters", "ни одно предложение не проходит фильтры"),
    "cli.offers.col.offer": ("offer", "предложение"),
    "cli.offers.col.gpu": ("GPU", "GPU"),
    "cli.offers.col.mode": ("mode", "аренда"),
    "cli.offers.col.price": ("$/GPU-h", "$/GPU-ч"),
    "cli.offers.col.gpus": ("GPUs", "GPU"),
    "cli.offers.col.sharding": ("sharding", "шардинг"),
    "cli.offers.col.time": ("time", "время"),
    "cli.offers.col.cost": ("cost", "стоимость"),
    "cli.offers.col.notes": ("notes", "примечания"),
    "cli.offers.preemptions": (
        "~{preemptions:n1} preemptions; checkpoint every ~{steps} steps",
        "~{preemptions:n1} прерываний; чекпойнт каждые ~{steps} {steps:pl:шаг|шага|шагов}"),
    "cli.offers.misses_deadline": ("misses the deadline", "не успевает к сроку"),

    # -- charts (gpuwork.present.charts) -------------------------------------------------------------------------------
    "chart.breakdown_y": ("memory per GPU, GiB (stack = device total, nvidia-smi)",
                          "память на GPU, ГиБ (столбец = всего на устройстве, nvidia-smi)"),
    "chart.breakdown_x": ("plan", "план"),
    "chart.breakdown_title": ("Memory per GPU at the step's peak, term by term",
                              "Память на GPU в пике шага, по слагаемым"),
    "chart.gpu_line": ("{name}: {total_bytes:gib} total (nvidia-smi)", "{name}: всего {total_bytes:gib} (nvidia-smi)"),
    "chart.whatif_y": ("device total per GPU (nvidia-smi), GiB", "всего на устройстве на один GPU (nvidia-smi), ГиБ"),
    "chart.whatif_x_seq_len": ("sequence length, tokens per sequence (log scale)",
                               "длина последовательности, токенов (логарифмическая шкала)"),
    "chart.whatif_x_batch_size": ("micro-batch, sequences per GPU per step (log scale)",
                                  "микробатч, последовательностей на GPU за шаг (логарифмическая шкала)"),
    "chart.whatif_title_seq_len": ("What if: memory vs sequence length, per method",
                                   "Что если: память в зависимости от длины последовательности, по методам"),
    "chart.whatif_title_batch_size": ("What if: memory vs micro-batch, per method",
                                      "Что если: память в зависимости от микробатча, по методам"),
    "chart.runs_out": ("runs out", "не помещается"),
    "chart.runs_out_hover": ("{series} no longer fits {gpu} ({total_bytes:gib}) at {field:raw} {x:int}",
                             "{series} перестаёт помещаться в {gpu} ({total_bytes:gib}) при {field:raw} {x:int}"),
    "chart.current": ("this plan", "этот план"),
    "chart.trial_title": ("Trial, step by step", "Пробный запуск по шагам"),
    "chart.loss": ("loss, nats per token (cross-entropy)", "loss, нат на токен (кросс-энтропия)"),
    "chart.step_time": ("step time, s (data + fwd + bwd + optimizer)", "время шага, с (данные + fwd + bwd + оптим.)"),
    "chart.tokens_s": ("throughput, tokens/s", "скорость, токенов/с"),
    "chart.memory": ("trial memory, MiB (CUDA allocated / CPU RSS)", "память запуска, МиБ (CUDA выделенная / RSS CPU)"),
    "chart.step_x": ("optimizer step", "шаг оптимизатора"),
    "chart.measured": ("measured", "замер"),
    "chart.warmup": ("warm-up (excluded)", "прогрев (не учитывается)"),
    "chart.evm_title": ("Estimate vs measured", "Оценка и замер"),
    "chart.evm_y": ("memory, {unit}", "память, {unit}"),
    "chart.estimate": ("estimate", "оценка"),
    "chart.step_parts_title": ("Where one step goes (one GPU)", "Из чего состоит шаг (один GPU)"),
    "chart.step_seconds": ("seconds per optimizer step", "секунд на шаг оптимизатора"),
    "chart.scaling_title": ("Throughput per GPU by number of {gpu} (8 per node)",
                            "Скорость на GPU в зависимости от числа {gpu} (по 8 в узле)"),
    "chart.scaling_x": ("GPUs", "число GPU"),
    "chart.scaling_tokens": ("tokens/s per GPU", "токенов/с на GPU"),
    "chart.scaling_efficiency": ("scaling efficiency, %", "эффективность масштабирования, %"),
    "chart.offers_title": ("Offers: expected cost vs time (illustrative prices)",
                           "Предложения: ожидаемая стоимость и время (цены ориентировочные)"),
    "chart.offers_x": ("expected wall time incl. preemptions, hours (log scale)",
                       "ожидаемое время с учётом прерываний, часы (лог. шкала)"),
    "chart.offers_y": ("expected cost as billed, USD (log scale)", "ожидаемая стоимость по счёту, USD (лог. шкала)"),
    "chart.mode": ("{mode:@mode}", "{mode:@mode}"),
    "chart.no_offers": ("no fitting offer to plot", "нет подходящих предложений"),
    "chart.offer_hover": (
        "{gpus} x {gpu}, {sharding:raw}, {region:raw}<br>{price_usd:usd} per GPU-hour, {billed} {billed:pl:GPU|GPUs} billed",
        "{gpus} × {gpu}, {sharding:raw}, {region:raw}<br>{price_usd:usd} за GPU-час, в счёте GPU: {billed}"),
    "chart.offer_preemptions": ("~{preemptions:n1} expected preemptions", "~{preemptions:n1} ожидаемых прерываний"),
    "total.peak_allocated_bytes": ("Peak allocated", "Пик выделенной"),
    "total.peak_allocated_bytes.meaning": (
        "tensors alive at the worst moment of a step: what torch.cuda.max_memory_allocated() reports",
        "тензоры, живые в самый тяжёлый момент шага: то, что показывает torch.cuda.max_memory_allocated()"),
    "total.peak_reserved_bytes": ("Peak reserved", "Пик зарезервированной"),
    "total.peak_reserved_bytes.meaning": (
        "allocated peak plus the PyTorch caching allocator's cache: torch.cuda.max_memory_reserved()",
        "пик выделенной плюс кэш аллокатора PyTorch: torch.cuda.max_memory_reserved()"),
    "total.device_total_bytes": ("Device total", "Всего на устройстве"),
    "total.device_total_bytes.meaning": (
        "reserved plus the CUDA context and library workspaces: what nvidia-smi shows; compare this with the "
        "card's memory",
        "зарезервированная плюс контекст CUDA и рабочие области библиотек: то, что показывает nvidia-smi; "
        "сравнивайте это с памятью карты"),
}

# -- the workbook's labels (gpuwork.ui: ui(key, lang) renders "ui.<key>") ----------------------------------------
_UI_ENTRIES: dict[str, tuple[str, str]] = {
    "title": ("GPU sizing for fine-tuning", "Подбор GPU для дообучения"),
    "intro": (
        "Will a fine-tuning run fit, on which card, for how long and for how much? <b>Sizing</b>: pick a model (a "
        "preset, your config.json, or the architecture by hand) and the training setup; the charts show the memory "
        "<b>per GPU</b> term by term and what happens as the sequence or the batch grows. <b>Offers</b>: rental "
        "offers ranked for the plan. <b>Request</b>: the text to send a provider. <b>Demo trial</b>: a tiny real "
        "fine-tune on this server's CPU.",
        "Поместится ли дообучение, на какую карту, надолго ли и за сколько? <b>Расчёт</b>: выберите модель "
        "(пресет, свой config.json или архитектуру вручную) и параметры обучения; графики показывают память "
        "<b>на один GPU</b> по слагаемым и её рост с длиной последовательности и батчем. <b>Предложения</b>: "
        "предложения аренды для плана. <b>Заявка</b>: текст для провайдера. <b>Пробный запуск</b>: маленькое "
        "настоящее дообучение на CPU этого сервера."),
    "model_source": ("Model from", "Модель из"), "src_preset": ("preset", "пресет"),
    "src_upload": ("upload", "загрузка"), "src_manual": ("manual", "вручную"),
    "model": ("Model", "Модель"),
    "upload": ("Upload config.json or training configs", "Загрузить config.json или конфиги обучения"),
    "hidden_size": ("Hidden size", "Скрытый размер"), "num_hidden_layers": ("Layers", "Слои"),
    "num_attention_heads": ("Heads", "Головы внимания"), "num_key_value_heads": ("KV heads", "KV-головы"),
    "intermediate_size": ("MLP intermediate", "Промежуточный MLP"), "vocab_size": ("Vocabulary", "Словарь"),
    "method": ("Method", "Метод"), "precision": ("Precision", "Точность"), "optimizer": ("Optimizer", "Оптимизатор"),
    "seq_len": ("Sequence length", "Длина последов."), "batch_size": ("Micro-batch", "Микробатч"),
    "grad_accum": ("Grad accumulation", "Накопление град."),
    "grad_checkpointing": ("Gradient checkpointing", "Пересчёт активаций"),
    "attention": ("Attention", "Внимание"), "lora_r": ("LoRA rank r", "Ранг LoRA"),
    "stack": ("Software stack", "Программный стек"),
    "lengths": ("Sequence lengths", "Длины последов."),
    "lora_targets": ("LoRA targets", "Модули LoRA"), "gpus": ("GPUs", "Число GPU"),
    "sharding": ("Sharding", "Шардирование"), "dataset_tokens": ("Dataset, tokens", "Датасет, токенов"),
    "epochs": ("Epochs", "Эпохи"), "candidates": ("Compare with cards", "Сравнить с картами"),
    "axis": ("What if", "Что если"), "axis_seq_len": ("sequence length", "длина последовательности"),
    "axis_batch_size": ("micro-batch", "микробатч"),
    "verify": ("Verify exactly (trace one step)", "Проверить точно (трассировка шага)"),
    "h_model": ("Model", "Модель"), "h_training": ("Training", "Обучение"), "h_gpus": ("GPUs and data", "GPU и данные"),
    "h_totals": ("Totals per GPU", "Итоги на один GPU"), "h_profile": ("Rental profile", "Профиль аренды"),
    "h_time": ("Time", "Время"), "h_disk": ("Disk", "Диск"), "h_verify": ("Exact check", "Точная проверка"),
    "h_results": ("Results", "Результаты"),
    "h_compare": ("Trial records side by side", "Записи пробных запусков рядом"),
    "h_interruptible": ("Interruptible offers: preemptions and checkpoints",
                        "Прерываемые предложения: прерывания и чекпойнты"),
    "h_offers": ("Offers", "Предложения"), "h_request": ("Rental request", "Заявка на аренду"),
    "total": ("Total", "Итог"), "gib": ("GiB", "ГиБ"), "meaning": ("What it counts", "Что считает"),
    "term": ("Term", "Слагаемое"), "source": ("Source", "Источник"),
    "peak_at": ("The peak comes during the <b>{phase:@phase}</b>.", "Пик памяти — на <b>{phase:@phase}</b>."),
    "params": ("Parameters: {total:int} total, {trainable:int} trainable.",
               "Параметры: всего {total:int}, обучаемых {trainable:int}."),
    "host": ("Offloaded to CPU RAM (not on the GPU): {host_bytes:gib}",
             "Выгружено в оперативную память CPU (не на GPU): {host_bytes:gib}"),
    "gib_note": ("GiB = 2<sup>30</sup> bytes; GB = 10<sup>9</sup> bytes.",
                 "ГиБ = 2<sup>30</sup> байт; ГБ = 10<sup>9</sup> байт."),
    "no_profile": ("No profile fits this plan.", "Ни один профиль не подходит этому плану."),
    "profile": ("Profile {id:raw} “{name}”: {gpus} × {gpu} ({mode:@mode}).",
                "Профиль {id:raw} «{name}»: {gpus} × {gpu} ({mode:@mode})."),
    "not_profile": ("not {id:raw}: {why}", "не {id:raw}: {why}"), "check": ("check: {what}", "проверить: {what}"),
    "changes": ("changes to the plan: {what:list}", "изменения плана: {what:list}"),
    "time_line": (
        "On {gpus} × {gpu}: step {step_s:n3} s, {tokens_s:int} tokens/s, {steps:int} steps; training {train_s:dur} + "
        "eval {eval_s:dur} + checkpoints {checkpoint_s:dur} + margin {margin_s:dur} = <b>{total_s:dur}</b> "
        "({gpu_hours:int} GPU-hours).",
        "На {gpus} × {gpu}: шаг {step_s:n3} с, {tokens_s:int} токенов/с, {steps:int} {steps:pl:шаг|шага|шагов}; "
        "обучение {train_s:dur} + валидация {eval_s:dur} + чекпойнты {checkpoint_s:dur} + запас {margin_s:dur} = "
        "<b>{total_s:dur}</b> ({gpu_hours:int} GPU-часов)."),
    "peak": ("Peak: {peak}, {tflops:g} TFLOPS per GPU.", "Пик: {peak}, {tflops:g} TFLOPS на GPU."),
    "mfu": ("Efficiency (MFU) {mfu:n2}: {note}.", "Эффективность (MFU) {mfu:n2}: {note}."),
    "step_parts": ("Where one step goes on one GPU ({stack:@stack}, {gpu}; seconds and share of the step):",
                   "Из чего состоит шаг на одном GPU ({stack:@stack}, {gpu}; секунды и доля шага):"),
    "step_part": ("{seconds:n3} s", "{seconds:n3} с"),
    "scaling_line": ("Tokens/s per GPU on 1, 2, … 64 × {gpu} (8 per node, InfiniBand NDR 400G between nodes): "
                     "{points:list}.",
                     "Токенов/с на GPU для 1, 2, … 64 × {gpu} (по 8 в узле, между узлами InfiniBand NDR 400G): "
                     "{points:list}."),
    "disk_total": ("Recommended disk: <b>{total_bytes:size}</b> (lines below + {margin_bytes:size} margin).",
                   "Рекомендуемый диск: <b>{total_bytes:size}</b> (строки ниже + запас {margin_bytes:size})."),
    "verify_hint": (
        "Runs one real training step of this model under fake tensors (no GPU, no weights): seconds to a minute.",
        "Один настоящий шаг обучения этой модели на фиктивных тензорах (без GPU и весов): от секунд до минуты."),
    "tracing": ("Tracing one step under fake tensors… (seconds to a minute)",
                "Трассировка шага на фиктивных тензорах… (от секунд до минуты)"),
    "traced": ("Traced peak allocated", "Пик выделенной по трассировке"),
    "analytic": ("Analytic estimate (same quantity, no cuBLAS workspace)",
                 "Аналитическая оценка (та же величина, без рабочей области cuBLAS)"),
    "difference": ("Difference", "Разница"),
    "traced_phase": ("traced peak in {traced:@phase}; estimate's peak in {analytic:@phase}",
                     "пик трассировки — на {traced:@phase}; пик оценки — на {analytic:@phase}"),
    "trace_plan": ("Plan traced: {plan}", "Трассированный план: {plan}"),
    "stand_in": ("stand-in: {what}", "замена: {what}"), "category": ("Category", "Категория"),
    "invalid": ("Fix the input above to see the estimate.", "Исправьте ввод выше, чтобы увидеть оценку."),
    "building": ("Building {name} on the meta device…", "Строим {name} без весов (устройство meta)…"),
    "busy": ("Another action is still running: wait for it to finish.",
             "Предыдущее действие ещё выполняется: дождитесь его окончания."),
    "upload_first": ("upload a config.json first (the file from the model's Hugging Face page)",
                     "сначала загрузите config.json (файл со страницы модели на Hugging Face)"),
    "not_estimated": ("{what:@ui.part} could not be estimated: {error}", "{what:@ui.part}: оценка не удалась: {error}"),
    "part.profile": ("profile", "профиль"), "part.disk": ("disk", "диск"),
    "error": ("Error: {error}", "Ошибка: {error}"),
    "unexpected": (
        "unexpected error ({error}); this is a bug in gpuwork, please report it with the values you entered",
        "непредвиденная ошибка ({error}); это ошибка в gpuwork, сообщите о ней вместе с введёнными значениями"),
    "must_be_positive": ("{what}: {value} must be a number >= 0", "{what}: {value} — нужно число не меньше 0"),
    "must_be_one": ("{what}: {value} must be at least 1", "{what}: {value} — нужно не меньше 1"),
    "bad_record": ("{name} is not a gpuwork trial record ({error})",
                   "{name} — не запись пробного запуска gpuwork ({error})"),
    "cannot_read_record": ("cannot read trial record {name}: {error}",
                           "не удалось прочитать запись пробного запуска {name}: {error}"),
    # trial
    "steps": ("Measured steps", "Шагов замера"), "warmup": ("Warm-up steps", "Шагов прогрева"),
    "ramp": ("Also ramp (largest batch / seq that fits)", "Ещё и рампа (наибольший батч / длина)"),
    "run": ("Run trial", "Запустить"), "stop": ("Stop", "Стоп"), "progress": ("Progress", "Ход"),
    "trial_ready": ("Ready: {plan}. Press “Run trial”.", "Готово к запуску: {plan}. Нажмите «Запустить»."),
    "trial_building": ("Building the model and the data…", "Строим модель и данные…"),
    "trial_step": ("Step {step}/{total}: loss {loss:n3}, {time:n3} s, {tps:int} tokens/s",
                   "Шаг {step}/{total}: loss {loss:n3}, {time:n3} с, {tps:int} токенов/с"),
    "trial_stopped": ("Stopped after {n} {n:pl:step|steps}: no record (a stopped trial proves nothing).",
                      "Остановлено после {n} {n:pl:шага|шагов|шагов}: записи нет (остановленный запуск ничего не "
                      "доказывает)."),
    "trial_done": ("Done: {n} measured {n:pl:step|steps} in {s:n1} s.",
                   "Готово: {n} {n:pl:шаг|шага|шагов} замера за {s:n1} с."),
    "trial_busy": ("A demo trial is already running on this machine: try again in a minute.",
                   "На этой машине уже идёт демонстрационный запуск: попробуйте через минуту."),
    "trial_oom": ("Out of memory: {error}. Peak reached {mib} MiB.", "Не хватило памяти: {error}. Достигнутый пик {mib} МиБ."),
    "summary": (
        "Median step {median:n3} s (p90 {p90:n3} s), {tps:int} tokens/s, peak trial memory {mib:int} MiB on "
        "{device}; loss {first:n3} → {last:n3}.",
        "Медиана шага {median:n3} с (p90 {p90:n3} с), {tps:int} токенов/с, пик памяти запуска {mib:int} МиБ на "
        "{device}; loss {first:n3} → {last:n3}."),
    "data_verdict": ("Data: {verdict}.", "Данные: {verdict}."),
    "checkpoint": (
        "Checkpoint round-trip: {verdict} — {message} ({size} on disk, save {save:n2} s, restore {restore:n2} s).",
        "Чекпойнт: {verdict} — {message} ({size} на диске, сохранение {save:n2} с, восстановление {restore:n2} с)."),
    "verified": ("verified", "проверен"), "not_verified": ("NOT verified", "НЕ проверен"),
    "ramp_line": (
        "Ramp: largest micro-batch {batch} at seq {seq0} ({why_b}); longest seq {seq} at that batch ({why_s}); "
        "{n} probes.",
        "Рампа: наибольший микробатч {batch} при длине {seq0} ({why_b}); наибольшая длина {seq} при этом батче "
        "({why_s}); проб: {n}."),
    "ramp_none": ("Ramp: nothing fit.", "Рампа: ничего не поместилось."),
    "extrapolation": ("Whole run on {gpus} × {gpu} at the measured speed: {total} ({steps} steps).",
                      "Весь запуск на {gpus} × {gpu} при замеренной скорости: {total} (шагов: {steps})."),
    "no_extrapolation": (
        "Extrapolation to the whole run needs a trial on a GPU listed in data/gpus.csv; this trial ran on {device}: "
        "it proves the pipeline, not the speed.",
        "Экстраполяция на весь запуск требует пробного запуска на GPU из data/gpus.csv; этот запуск шёл на "
        "{device}: он проверяет конвейер, а не скорость."),
    "saved": ("Record saved: <code>{path}</code>", "Запись сохранена: <code>{path}</code>"),
    "not_saved": ("Record not saved (no output folder set).", "Запись не сохранена (папка не задана)."),
    "substitutions": ("Substitutions: {what}", "Замены: {what}"),
    "demo_note": (
        "Demo: tiny models on this machine's CPU, at most {steps} steps, sequence {seq}, batch {batch}; one trial "
        "at a time.",
        "Демонстрация: маленькие модели на CPU этой машины, не больше {steps} шагов, длина {seq}, батч {batch}; "
        "по одному запуску."),
    # offers
    "modes": ("Rental mode", "Режим аренды"), "classes": ("GPU class", "Класс GPU"), "regions": ("Region", "Регион"),
    "max_price": ("Max $/GPU-hour", "Макс. $/GPU-час"), "min_vram": ("Min GB per GPU", "Мин. ГБ на GPU"),
    "budget": ("Budget, USD", "Бюджет, USD"), "sort": ("Sort by", "Сортировать"),
    "include_unfit": ("Show offers that do not fit", "Показывать неподходящие"),
    "preemption_rate": ("Preemptions per hour", "Прерываний в час"), "limit": ("Rows", "Строк"),
    "sort_cost": ("expected cost", "ожидаемая стоимость"), "sort_time": ("expected time", "ожидаемое время"),
    "sort_price": ("price per GPU-hour", "цена GPU-часа"), "sort_vram": ("GPU memory", "память GPU"),
    "zero_any": ("0 = any", "0 = любой"),
    "gpu_class.consumer": ("consumer", "потребительский"), "gpu_class.workstation": ("workstation", "рабочая станция"),
    "gpu_class.server": ("server", "серверный"),
    "region.eu": ("eu", "Европа"), "region.us": ("us", "США"), "region.asia": ("asia", "Азия"),
    "mode_option": ("{value:@mode}", "{value:@mode}"),
    "method_option": ("{value:@ui.method}", "{value:@ui.method}"),
    "method.scratch": ("scratch", "обучение с нуля"), "method.full": ("full", "полное обновление"),
    "method.freeze": ("freeze", "заморозка слоёв"), "method.lora": ("lora", "LoRA"), "method.qlora": ("qlora", "QLoRA"),
    "lora_targets_hint": ("q_proj,v_proj or all-linear", "q_proj,v_proj или all-linear"),
    "lengths_hint": ("fixed, packed or 128:40,512:50 (length:count)", "fixed, packed или 128:40,512:50 (длина:число)"),
    "class_option": ("{value:@ui.gpu_class}", "{value:@ui.gpu_class}"),
    "region_option": ("{value:@ui.region}", "{value:@ui.region}"),
    "col_offer": ("Offer", "Предложение"), "col_gpu": ("GPU", "GPU"), "col_mode": ("Mode", "Режим"),
    "col_region": ("Region", "Регион"), "col_price": ("$/GPU-h", "$/GPU-ч"),
    "col_gpus": ("GPUs used / billed", "GPU: занято / оплачено"), "col_sharding": ("Sharding", "Шардирование"),
    "col_time": ("Expected time", "Ожидаемое время"), "col_cost": ("Expected cost", "Ожидаемая стоимость"),
    "col_notes": ("Notes", "Примечания"), "col_uninterrupted": ("Without preemptions", "Без прерываний"),
    "col_preemptions": ("Expected preemptions", "Ожидаемых прерываний"), "col_rework": ("Rework", "Переделка"),
    "col_interval": ("Checkpoint every (now)", "Чекпойнт каждые (сейчас)"),
    "col_recommended": ("Recommended", "Рекомендуется"),
    "recommended": ("{interval_s:dur} (~{steps:int} {steps:pl:step|steps})",
                    "{interval_s:dur} (~{steps:int} {steps:pl:шаг|шага|шагов})"),
    "preemptions": ("~{preemptions:n1} preemptions", "~{preemptions:n1} прерываний"),
    "misses_deadline": ("misses the deadline", "не успевает к сроку"),
    "no_offers": ("No offer passes the filters.", "Ни одно предложение не проходит фильтры."),
    "none_interruptible": ("No fitting interruptible offer.", "Нет подходящих прерываемых предложений."),
    "offers_note": ("Prices are illustrative dated snapshots from data/catalog.csv, not quotes.",
                    "Цены — ориентировочные датированные снимки из data/catalog.csv, не оферта."),
    "compare.trial": ("trial", "запуск"), "compare.model": ("model", "модель"), "compare.method": ("method", "метод"),
    "compare.precision": ("precision", "точность"), "compare.optimizer": ("optimizer", "оптимизатор"),
    "compare.micro_batch": ("micro batch", "микробатч"), "compare.seq_len": ("seq len", "длина"),
    "compare.grad_accum": ("grad accum", "накопление"), "compare.device": ("device", "устройство"),
    "compare.gpus": ("gpus", "GPU"), "compare.fits": ("fits", "помещается"),
    "compare.median_step_time_s": ("median step time s", "медиана шага"),
    "compare.p90_step_time_s": ("p90 step time s", "шаг p90"), "compare.tokens_per_s": ("tokens per s", "токенов/с"),
    "compare.peak_memory_bytes": ("peak memory bytes", "пик памяти"),
    "compare.data_wait_fraction": ("data wait fraction", "ожидание данных"),
    "compare.checkpoint_verified": ("checkpoint verified", "чекпойнт проверен"),
    "compare.price_per_hour": ("price per hour", "цена в час"),
    "compare.cost_per_1m_tokens": ("cost per 1m tokens", "стоимость 1 млн токенов"),
    "yes": ("yes", "да"), "no": ("no", "нет"),
    "records": ("Trial records (.json)", "Записи запусков (.json)"),
    "record_price": ("Price, $/hour (0 = none)", "Цена, $/час (0 = нет)"),
    "no_records": ("No trial records yet: run a trial or upload its JSON record.",
                   "Записей пока нет: запустите пробный запуск или загрузите его JSON."),
    "pick_one": ("pick at least one {what}", "выберите хотя бы один вариант: {what}"),
    # request
    "req_lang": ("Language", "Язык"), "start_date": ("Start date", "Дата начала"),
    "date_hint": ("YYYY-MM-DD (optional)", "ГГГГ-ММ-ДД (необязательно)"),
    "rent_days": ("Rent period, days", "Срок аренды, дней"), "days_hint": ("0 = from the estimate", "0 = по оценке"),
    "trial_required": ("Ask for a step-time trial", "Просить тест времени шага"),
    "explicit_context": ("State seq length and batch", "Указать длину и батч"),
    "dataset_gb": ("Dataset size, GB", "Размер датасета, ГБ"), "gb_hint": ("0 = from tokens", "0 = по токенам"),
    "download_txt": ("Download the request (.txt)", "Скачать заявку (.txt)"),
    "download_json": ("Download as JSON", "Скачать как JSON"),
    "copy_hint": ("Select the text and copy it, or download it.", "Выделите текст и скопируйте его или скачайте."),
    # app
    "plan_caption": (
        "{model}, {method:raw}, {precision:raw}, {optimizer:raw}, seq {seq_len:int} × batch {batch} (×{grad_accum}), "
        "{gpus} {gpus:pl:GPU|GPUs}, {sharding:raw}",
        "{model}, {method:raw}, {precision:raw}, {optimizer:raw}, контекст {seq_len:int} × батч {batch} "
        "(×{grad_accum}), {gpus} GPU, {sharding:raw}"),
    "tab_sizing": ("Sizing", "Расчёт"), "tab_offers": ("Offers", "Предложения"), "tab_request": ("Request", "Заявка"),
    "tab_trial": ("Demo trial", "Пробный запуск"), "language": ("Language", "Язык"),
    "plan_field": ("field", "поле"), "plan_value": ("value", "значение"),  # the report's plan table
    # each language is named in itself, in both modes: that is how a reader finds their own
    "lang_name.en": ("English", "English"), "lang_name.ru": ("Русский", "Русский"),
}
_ENTRIES.update({f"ui.{key}": value for key, value in _UI_ENTRIES.items()})

# Russian names of the memory breakdown terms; the English ones are gpuwork.estimate.memory.TERM_LABELS.
_TERMS_RU = {
    "weights": "веса",
    "gradients": "градиенты",
    "optimizer_states": "состояния оптимизатора",
    "activations": "активации (сохранённые для обратного прохода)",
    "logits_and_loss": "логиты и loss",
    "temporaries": "временные буферы (обратный проход / шаг оптимизатора)",
    "sharding_buffers": "буферы шардирования / DDP",
    "cublas_workspace": "рабочая область cuBLAS",
    "allocator_cache": "кэш аллокатора (зарезервировано, не занято)",
    "allocator_fragmentation": "кэш аллокатора от разной длины батчей",
    "paged_optimizer_states": "paged-состояния оптимизатора (unified memory)",
    "autocast_weight_copies": "16-битные копии весов (autocast)",
    "cuda_context": "контекст CUDA и ядра",
}

_ENTRIES.update({f"term.{key}": (label, _TERMS_RU[key]) for key, label in TERM_LABELS.items()})

for _part in (messages_errors.ENTRIES, messages_measure.ENTRIES, messages_help.ENTRIES, messages_hf.ENTRIES,
              messages_trial_faults.ENTRIES, messages_configs.ENTRIES,
              messages_validation.ENTRIES, messages_app.ENTRIES, messages_report.ENTRIES,
              messages_advisor.ENTRIES, messages_ui_advice.ENTRIES, messages_reading.ENTRIES,
              messages_inputs.ENTRIES,
              messages_decision.ENTRIES, messages_resume.ENTRIES, messages_records.ENTRIES):  # own files
    _clash = _ENTRIES.keys() & _part.keys()
    assert not _clash, f"catalog codes defined twice: {sorted(_clash)}"
    _ENTRIES.update(_part)

CATALOG: dict[str, dict[str, str]] = {code: {"en": en, "ru": ru} for code, (en, ru) in _ENTRIES.items()}


# -- rendering ------------------------------------------------------------------------------------------------


def _g(x: float, lang: str) -> str:
    """A number without trailing zeros (up to 3 decimals): 4, 0.05, 989.5."""
    if not math.isfinite(x) or float(x).is_integer():
        return fmt_number(x, lang, 0)
    text = fmt_number(x, lang, 3)
    mark = "," if lang == "ru" else "."
    return text.rstrip("0").rstrip(mark) if mark in text else text


def _pct(x: float | None, lang: str) -> str:
    if x is None:
        return MISSING
    return f"{fmt_number(x * 100, lang, 0)}{SP}%" if lang == "ru" else f"{fmt_number(x * 100, lang, 0)}%"


def _sci(x: float, lang: str) -> str:
    text = f"{x:.3e}"
    return text.replace(".", ",") if lang == "ru" else text


def _count(n: float, lang: str) -> str:
    """A parameter count in words: 6.8 M / 70.55 B (6,8 млн / 70,55 млрд)."""
    if n >= 1e9:
        return render(msg("unit.billions", n=n / 1e9), lang)
    return render(msg("unit.millions", n=n / 1e6), lang)


def _tokens(n: float, lang: str) -> str:
    if n >= 1e9:
        return render(msg("unit.billion_tokens", n=n / 1e9), lang)
    return render(msg("unit.million_tokens", n=n / 1e6), lang)


def _date(value: str | date, lang: str) -> str:
    day = date.fromisoformat(value) if isinstance(value, str) else value
    return render(msg("date", day=day.day, month=day.month, year=day.year), lang)


# placeholder kind -> (value, lang) -> text
_KINDS: dict[str, Callable[[Any, str], str]] = {
    "raw": lambda v, lang: str(v),
    "int": fmt_int,
    "n0": lambda v, lang: fmt_number(v, lang, 0),
    "n1": lambda v, lang: fmt_number(v, lang, 1),
    "n2": lambda v, lang: fmt_number(v, lang, 2),
    "n3": lambda v, lang: fmt_number(v, lang, 3),
    "g": _g,
    "sci": _sci,
    "pct": _pct,
    "gib": fmt_gib,
    "size": fmt_size,
    "gb": fmt_size_short,
    "gb2": lambda v, lang: f"{fmt_number(v / GB, lang, 2)}{SP}{unit('GB', lang)}",
    "rate": fmt_rate,
    "dur": fmt_duration,
    "usd": fmt_usd,
    "bn": lambda v, lang: fmt_number(v / 1e9, lang, 2),
    "count": _count,
    "tokens": _tokens,
    "date": _date,
    "list": lambda v, lang: ", ".join(_plain(item, lang, "list") for item in v),
}
_NUMERIC = {"int", "n0", "n1", "n2", "n3", "g", "sci", "count", "tokens", "bn"}


@functools.lru_cache(maxsize=4096)
def _parsed(template: str) -> tuple[tuple[str, str | None, str], ...]:
    return tuple((literal, name, spec or "") for literal, name, spec, _conv in string.Formatter().parse(template))


def placeholders(template: str) -> dict[str, set[str]]:
    """Placeholder name -> the kinds it is shown with, in one template."""
    out: dict[str, set[str]] = {}
    for _literal, name, spec in _parsed(template):
        if name is not None:
            out.setdefault(name, set()).add(spec)
    return out


def _plain(value: Any, lang: str, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, Msg):
        return render(value, lang)
    if isinstance(value, tuple):
        return "; ".join(_plain(item, lang, where) for item in value)
    if isinstance(value, bool):
        raise MessageError(f"{where} holds a bool: say it with its own code, not as text")
    if isinstance(value, int):
        return fmt_int(value, lang)
    if isinstance(value, float):
        if value.is_integer():
            return fmt_int(value, lang)
        raise MessageError(f"{where} holds {value!r}: declare how it is shown (e.g. {{x:n2}}, {{x:gib}})")
    return str(value)


def _show(value: Any, spec: str, lang: str, where: str) -> str:
    if spec.startswith("pl:"):
        forms = spec[3:].split("|")
        if value is None:
            return ""
        if lang == "ru":
            return plural_ru(int(value), *forms)
        return forms[0] if value == 1 else forms[1]
    if spec.startswith("@"):
        return render(Msg(f"{spec[1:]}.{str(value).replace(' ', '_')}"), lang)
    if not spec:
        return _plain(value, lang, where)
    kind = _KINDS.get(spec)
    if kind is None:
        raise MessageError(f"{where}: unknown placeholder kind {spec!r} (kinds: {', '.join(sorted(_KINDS))}, "
                           "pl:..., @...)")
    if value is None and spec in _NUMERIC:
        return MISSING
    return kind(value, lang)


def time_kind_code(kind: str) -> str:
    """Catalog code of a step-time part (``TimeEstimate.breakdown`` key): "launch overhead" ->
    "time.kind.launch_overhead"."""
    return "time.kind." + "".join(c if c.isalnum() else "_" for c in kind.lower()).strip("_").replace("__", "_")


def render(message: Msg, lang: str = "en") -> str:
    """The message in ``lang`` ("en" or "ru"), numbers in that language's form.

    Raises MessageError for a code the catalog does not hold or a parameter the template needs and the
    message lacks; ValueError for an unknown language.
    """
    check_lang(lang)
    entry = CATALOG.get(message.code)
    if entry is None:
        raise MessageError(f"no message {message.code!r} in the catalog (gpuwork.present.messages.CATALOG): add "
                           "it with its English and Russian text")
    params = message.kwargs
    out = []
    for literal, name, spec in _parsed(entry[lang]):
        out.append(literal)
        if name is None:
            continue
        if name not in params:
            raise MessageError(f"message {message.code!r} needs the parameter {name!r}; it has "
                               f"{', '.join(sorted(params)) or 'none'}")
        out.append(_show(params[name], spec, lang, f"message {message.code!r}, placeholder {name!r}"))
    return "".join(out)


def render_all(messages: Iterable[Msg], lang: str = "en") -> list[str]:
    """Each message rendered in ``lang``."""
    return [render(m, lang) for m in messages]


def text(code: str, lang: str = "en", **params: Any) -> str:
    """Render a catalog entry straight from its code: ``text("chart.runs_out", "ru")``."""
    return render(msg(code, **params), lang)


def render_dict(messages: Mapping[str, Msg], lang: str = "en") -> dict[str, str]:
    """Each value rendered in ``lang`` (e.g. a profile match's rejected profiles)."""
    return {key: render(m, lang) for key, m in messages.items()}


__all__ = ["CATALOG", "LANGS", "MessageError", "placeholders", "render", "render_all",
           "render_dict", "text"]


errors.set_renderer(render)  # coded errors (PlanError(..., msg(...))) render through this catalog
