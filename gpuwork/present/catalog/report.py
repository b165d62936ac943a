"""Catalog entries "report.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "report"

ENTRIES: dict[str, tuple[str, str]] = {
    # the report's text for 02_trial's last markdown cell (gpuwork.ui.report replaces the notebook's prose)
    "report.md.02_trial.4": (
        "## Your own Trainer run, live\nThe same record from your own `Trainer` / TRL `SFTTrainer` run, with its "
        "curves drawn while it trains: `trainer.add_callback(GpuworkCallback(out=\"trials\", steps=20, "
        "on_measure=curves.update))` with `curves = gpuwork.hf.LiveCurves()` displayed in a notebook.",
        "## Ваш собственный запуск Trainer, вживую\nТа же запись из вашего запуска `Trainer` / TRL `SFTTrainer`, а "
        "его кривые рисуются во время обучения: `trainer.add_callback(GpuworkCallback(out=\"trials\", steps=20, "
        "on_measure=curves.update))`, где `curves = gpuwork.hf.LiveCurves()` показан в блокноте."),
    "report.progress": ("gpuwork report [{i}/{n}] {name:raw}", "gpuwork, отчёт [{i}/{n}] {name:raw}"),
    "report.title": ("gpuwork report", "Отчёт gpuwork"),
    "report.page.01_sizing": ("Sizing: memory, profile, time, disk", "Расчёт: память, профиль, время, диск"),
    "report.page.02_trial": ("Trial: measured steps and checkpoint", "Пробный запуск: замеренные шаги и чекпойнт"),
    "report.page.03_offers": ("Offers and the rental request", "Предложения и заявка на аренду"),
    "report.cpu_stand_in": (
        "no CUDA GPU here: the trial runs {tiny:raw} ({method:raw}) on the CPU as a stand-in for {model}; it proves "
        "the pipeline, not the speed",
        "здесь нет GPU с CUDA: вместо {model} пробный запуск идёт на CPU с {tiny:raw} ({method:raw}); он проверяет "
        "конвейер, а не скорость"),
    # The pages' prose, one entry per markdown cell of each notebook in order (gpuwork.ui.report replaces the
    # notebooks' own cells, written for interactive use, with these). Markdown; no braces.
    "report.md.01_sizing.0": (
        "# 01 · Sizing: does the run fit, on which card, how long, how much disk?\n\n"
        "Memory is **per GPU**, in GiB (2<sup>30</sup> bytes), with three totals that answer different questions: "
        "*peak allocated* (`torch.cuda.max_memory_allocated()`), *peak reserved* (plus the allocator's cache) and "
        "*device total* (plus the CUDA context: what `nvidia-smi` shows — compare this one with a card).",
        "# 01 · Расчёт: поместится ли запуск, на какую карту, надолго ли, сколько нужно диска?\n\n"
        "Память указана **на один GPU**, в ГиБ (2<sup>30</sup> байт), с тремя итогами, которые отвечают на разные "
        "вопросы: *пик выделенной* (`torch.cuda.max_memory_allocated()`), *пик зарезервированной* (плюс кэш "
        "аллокатора) и *всего на устройстве* (плюс контекст CUDA: то, что показывает `nvidia-smi`, — именно это "
        "сравнивайте с памятью карты)."),
    "report.md.01_sizing.1": ("## The plan", "## План"),
    "report.md.01_sizing.2": (
        "## Memory per GPU\nEach bar segment is one term of the estimate (hover for its source); the markers are the "
        "three totals; dashed lines are the candidate cards' memory as `nvidia-smi` reports it.",
        "## Память на один GPU\nКаждый сегмент столбца — одно слагаемое оценки (источник — во всплывающей "
        "подсказке); маркеры — три итога; пунктир — память карт-кандидатов так, как её показывает `nvidia-smi`."),
    "report.md.01_sizing.3": (
        "## What if\nThe device total per GPU for every method as the sequence length or the micro-batch grows; a red "
        "✕ marks where a curve stops fitting a card.",
        "## Что если\nВсего на устройстве на один GPU для каждого метода при росте длины последовательности или "
        "микробатча; красный ✕ отмечает, где кривая перестаёт помещаться в карту."),
    "report.md.01_sizing.4": ("## Profile, time and disk", "## Профиль, время и диск"),
    "report.md.01_sizing.5": (
        "## Exact check\nOne real training step of this architecture under fake tensors (no GPU, no weights), next "
        "to the analytic estimate of the same quantity.",
        "## Точная проверка\nОдин настоящий шаг обучения этой архитектуры на фиктивных тензорах (без GPU и весов) "
        "рядом с аналитической оценкой той же величины."),
    "report.md.02_trial.0": (
        "# 02 · Trial: prove the configuration before renting for a month\n\n"
        "A real fine-tune of the plan's model on real text: warm-up, then a fixed number of measured steps (step "
        "time, tokens/s, peak memory, data wait), then a checkpoint saved, restored into a fresh model, verified "
        "and resumed. The record (JSON) is in the report's `trials/` folder.",
        "# 02 · Пробный запуск: проверить конфигурацию до аренды на месяц\n\n"
        "Настоящее дообучение модели плана на настоящем тексте: прогрев, затем фиксированное число шагов замера "
        "(время шага, токенов/с, пиковая память, ожидание данных), затем чекпойнт сохраняется, восстанавливается в "
        "новую модель, проверяется, и обучение продолжается. Запись (JSON) лежит в папке отчёта `trials/`."),
    "report.md.02_trial.1": ("## The trial\nThe plan the trial ran and its curves, step by step (warm-up steps in grey).",
                             "## Запуск\nПлан пробного запуска и его кривые по шагам (шаги прогрева — серым)."),
    "report.md.02_trial.2": ("## Results: speed, data, checkpoint round-trip, ramp, extrapolation",
                             "## Результаты: скорость, данные, проверка чекпойнта, рампа, экстраполяция"),
    "report.md.02_trial.3": (
        "## Estimate vs measured\nThe analytic estimate for the plan the trial really ran (CPU trials run fp32) next "
        "to what it measured.",
        "## Оценка и замер\nАналитическая оценка для плана, который действительно выполнялся (на CPU — в fp32), "
        "рядом с замером."),
    "report.md.03_offers.0": (
        "# 03 · Offers: where to rent, for how long, for how much — and the request to send\n\n"
        "Every offer of the bundled catalog (`data/catalog.csv`, illustrative dated prices) evaluated for the plan: "
        "does it fit (GPU count and sharding are raised inside a node until it does), how long the run takes, what "
        "it costs as billed, and for interruptible offers the expected preemptions, rework and the checkpoint "
        "interval that minimises lost work. The report's trial records are compared side by side.",
        "# 03 · Предложения: где арендовать, надолго ли и за сколько — и заявка провайдеру\n\n"
        "Каждое предложение встроенного каталога (`data/catalog.csv`, ориентировочные датированные цены) оценено "
        "для плана: помещается ли запуск (число GPU и шардирование растут в пределах узла, пока он не поместится), "
        "сколько он займёт, сколько стоит по счёту, а для прерываемых предложений — ожидаемые прерывания, "
        "повторная работа и интервал чекпойнтов, при котором теряется меньше всего работы. Записи пробных "
        "запусков отчёта сравниваются рядом."),
    "report.md.03_offers.1": ("## Filters and the offers table", "## Фильтры и таблица предложений"),
    "report.md.03_offers.2": ("## Cost against time", "## Стоимость и время"),
    "report.md.03_offers.3": ("## Interruptible offers: preemptions and checkpoints",
                              "## Прерываемые предложения: прерывания и чекпойнты"),
    "report.md.03_offers.4": ("## Trial records side by side", "## Записи пробных запусков рядом"),
    "report.md.03_offers.5": ("## The rental request", "## Заявка на аренду"),
    # -- the answer a report opens with (gpuwork.ui.report.answer_html) -----------------------------------------
    "report.answer.title": ("The answer", "Ответ"),
    "report.answer.fits": ("Fits on: {cards:list}.", "Помещается на: {cards:list}."),
    "report.answer.card": ("{gpus} × {gpu} ({card_gb} GB)", "{gpus} × {gpu} ({card_gb} ГБ)"),
    "report.answer.more": ("{n} more", "ещё {n}"),
    "report.answer.fits_none": (
        "Fits on no card of the catalog, even with sharding inside one node: see the memory terms below for "
        "what to reduce.",
        "Не помещается ни на одну карту каталога, даже с шардированием в пределах узла: что уменьшить — см. "
        "слагаемые памяти ниже."),
    "report.answer.recommended": (
        "Recommended offer: {offer:raw} ({provider:raw}), {gpus} × {gpu}, {mode:@mode}, {price_usd:usd} per "
        "GPU-hour: about {total_s:dur} and {cost_usd:usd}.",
        "Рекомендуемое предложение: {offer:raw} ({provider:raw}), {gpus} × {gpu}, {mode:@mode}, {price_usd:usd} "
        "за GPU-час: около {total_s:dur} и {cost_usd:usd}."),
    "report.answer.range": (
        "Time and cost across the {n} cheapest offers that fit: {low_s:dur} to {high_s:dur}, {low_usd:usd} to "
        "{high_usd:usd}.",
        "Время и стоимость для {n} самых дешёвых подходящих предложений: от {low_s:dur} до {high_s:dur}, от "
        "{low_usd:usd} до {high_usd:usd}."),
    "report.answer.risks": ("Risks:", "Риски:"),
    "report.answer.risk_estimate": (
        "time and cost are estimates until a trial on the rented GPU measures the step time",
        "время и стоимость — оценки, пока пробный запуск на арендованном GPU не измерит время шага"),
    "report.answer.risk_headroom": (
        "little memory to spare on the recommended card: {need_bytes:gib} of {usable_bytes:gib} usable",
        "на рекомендуемой карте мало запаса памяти: {need_bytes:gib} из {usable_bytes:gib} доступных"),
    "report.answer.risk_preemptions": (
        "an interruptible offer: about {preemptions:n1} preemptions expected, each costs the work since the last "
        "checkpoint",
        "прерываемое предложение: ожидается около {preemptions:n1} прерываний, каждое стоит работы с последнего "
        "чекпойнта"),
    "report.answer.risk_changes": ("the offer runs the plan changed: {changes}",
                                   "предложение выполняет изменённый план: {changes}"),
}
