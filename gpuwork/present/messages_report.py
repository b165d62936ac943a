"""Catalog entries (code -> (English, Russian)) for what the workbook tells a reader in plain words.

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Sections: the answer a report opens with (``report.answer.*``), ``gpuwork report
--help`` (``cli.help.report.description`` / ``epilog``), the card-memory explanation (``ui.memory_units``), the
shareable plan (``ui.share.*``), the offers panel's provider column and record columns, and the trial
notebook's note on Stop.
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
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

    # -- gpuwork report --help -----------------------------------------------------------------------------------
    "cli.help.report.description": (
        "Execute the workbook's notebooks (01_sizing, 02_trial, 03_offers) for one plan and write offline HTML "
        "pages, an index.html and the trial's record into --out. Each page opens with the answer: the cards the "
        "run fits on, the recommended offer, time and cost as a range, and the risks.",
        "Выполнить блокноты рабочей книги (01_sizing, 02_trial, 03_offers) для одного плана и записать в --out "
        "автономные HTML-страницы, index.html и запись пробного запуска. Каждая страница начинается с ответа: на "
        "какие карты помещается запуск, рекомендуемое предложение, время и стоимость диапазоном и риски."),
    "cli.help.report.epilog": (
        "The plan file (--plan) is JSON with TrainPlan fields, e.g. `{{\"model\": \"llama-3.1-8b\", \"method\": "
        "\"lora\", \"seq_len\": 4096}}`; fields left out take their defaults. The app's \"Download plan\" link, "
        "the output of `gpuwork estimate --json` and a file written from TrainPlan.as_dict() all work.\n"
        "--lang chooses the language of the pages and messages (en or ru), and of this help: gpuwork report "
        "--lang ru --help.\n"
        "Without a CUDA GPU the trial runs a tiny model of the same family on the CPU: it proves the pipeline, "
        "not the speed. Charts load plotly.min.js from the report folder: keep the folder together.",
        "Файл плана (--plan) — JSON с полями TrainPlan, например `{{\"model\": \"llama-3.1-8b\", \"method\": "
        "\"lora\", \"seq_len\": 4096}}`; пропущенные поля берут значения по умолчанию. Подходят файл по ссылке "
        "«Скачать план» в приложении, вывод `gpuwork estimate --json` и файл из TrainPlan.as_dict().\n"
        "--lang выбирает язык страниц и сообщений (en или ru), а также этой справки: gpuwork report --lang ru "
        "--help.\n"
        "Без GPU с CUDA пробный запуск идёт на CPU с маленькой моделью того же семейства: он проверяет конвейер, "
        "а не скорость. Графики загружают plotly.min.js из папки отчёта: не разделяйте папку."),

    # -- one card's memory, three numbers (gpuwork.ui.sizing.memory_units_html) ---------------------------------
    "ui.memory_units": (
        "One card, three numbers: {gpu} is sold as <b>{card_gb} GB</b> (10<sup>9</sup> bytes); nvidia-smi shows "
        "<b>{total_bytes:gib} total</b> (GiB = 2<sup>30</sup> bytes, after what the driver keeps); gpuwork plans "
        "with <b>{usable_bytes:gib} usable</b>, the total less {margin:pct} kept free for fragmentation, "
        "communication buffers and other processes. Compare the <i>device total</i> with the usable figure.",
        "Одна карта — три числа: {gpu} продаётся как <b>{card_gb} ГБ</b> (10<sup>9</sup> байт); nvidia-smi "
        "показывает <b>всего {total_bytes:gib}</b> (ГиБ = 2<sup>30</sup> байт, за вычетом того, что держит "
        "драйвер); gpuwork считает доступными <b>{usable_bytes:gib}</b> — всего за вычетом {margin:pct} запаса на "
        "фрагментацию, буферы обмена и другие процессы. Сравнивайте <i>всего на устройстве</i> с доступной "
        "памятью."),

    # -- a shareable plan (gpuwork.ui.share, the sizing form) -------------------------------------------------
    "ui.share.link": ("Link to this plan", "Ссылка на этот план"),
    "ui.share.download": ("Download plan (.json)", "Скачать план (.json)"),
    "ui.share.hint": (
        "The link and the file reproduce this plan: open the link, or pass the file to `gpuwork report --plan`.",
        "Ссылка и файл воспроизводят этот план: откройте ссылку или передайте файл в отчёт gpuwork."),
    "ui.share.local_model": (
        "The model is a local config file: the link works on this machine only.",
        "Модель — локальный файл конфигурации: ссылка работает только на этой машине."),
    "error.share.bool": (
        "{field:raw}={value:raw} in the link is not true or false: write {field:raw}=true or {field:raw}=false",
        "{field:raw}={value:raw} в ссылке — не true и не false: напишите {field:raw}=true или {field:raw}=false"),

    # -- the offers panel --------------------------------------------------------------------------------------
    "ui.col_provider": ("Provider", "Провайдер"),
    "ui.compare.step_time_low_s": ("step time low", "шаг, нижняя граница"),
    "ui.compare.step_time_high_s": ("step time high", "шаг, верхняя граница"),
    "ui.compare.step_time_half_width": ("step time ± (95 %)", "шаг ± (95 %)"),
    "ui.compare.drift_per_100_steps": ("drift per 100 steps", "дрейф на 100 шагов"),
    "ui.compare.measured_steps": ("measured steps", "шагов замерено"),
    "ui.compare.converged": ("step time settled", "время шага устоялось"),
    "ui.compare.source": ("measured by", "чем замерено"),
    "ui.compare.cost_per_1m_tokens_low": ("cost per 1M tokens, low", "стоимость 1 млн токенов, от"),
    "ui.compare.cost_per_1m_tokens_high": ("cost per 1M tokens, high", "стоимость 1 млн токенов, до"),

    # -- the trial notebook ------------------------------------------------------------------------------------
    "ui.trial_background": (
        "The trial runs in the background: the kernel stays free, so Stop works, also after Run All.",
        "Пробный запуск идёт в фоне: ядро свободно, поэтому «Стоп» работает, в том числе после «Run All»."),
}
