"""Catalog entries (code -> (English, Russian)) for the served app and the stack's own effects on an estimate.

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Sections: the waiting line of expensive actions (``ui.queue_*``,
``gpuwork.ui.queue``), uploads (``error.upload.*``), what the app shows instead of a server's internals
(``ui.app_*``), the app server (``error.app.*``) and warnings for what the software stack does to memory
(``memory.moe_experts_unquantized``).
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the waiting line of expensive actions (gpuwork.ui.queue) ---------------------------------------------
    "ui.queue_waiting": (
        "Waiting ({n} ahead): this server runs one heavy action at a time; it starts by itself.",
        "Ожидание (впереди: {n}): сервер выполняет тяжёлые действия по одному; запуск начнётся сам."),
    "ui.queue_full": (
        "The server is busy ({places} actions already waiting): try again in a few minutes.",
        "Сервер занят (уже ждут действий: {places}): попробуйте через несколько минут."),
    "ui.queue_cancelled": ("Cancelled while waiting for its turn.", "Отменено во время ожидания очереди."),

    "error.trial.count_limit": (
        "{field:raw}={value:int} is above {limit:int}: a trial measures a few steps, it is not the training run",
        "{field:raw}={value:int} больше {limit:int}: пробный запуск замеряет несколько шагов, это не само обучение"),

    # -- uploads (gpuwork.ui.common.read_upload) --------------------------------------------------------------
    "error.upload.too_large": (
        "{name:raw} is larger than the {limit_mb:g} MB limit for uploads ({size_bytes:int} bytes): upload the "
        "{what:@upload.what} itself",
        "{name:raw} больше предела загрузки {limit_mb:g} МБ ({size_bytes:int} байт): загрузите сам "
        "{what:@upload.what}"),
    "error.upload.empty": ("{name:raw} is empty: upload the {what:@upload.what}",
                           "{name:raw} пуст: загрузите {what:@upload.what}"),
    "error.upload.not_json": (
        "{name:raw} is not JSON text ({reason:raw}): upload the {what:@upload.what} file itself, not its name or "
        "path",
        "{name:raw} — не текст JSON ({reason:raw}): загрузите сам файл ({what:@upload.what}), а не его имя или "
        "путь"),
    "error.upload.not_record": (
        "{name:raw} is not a gpuwork trial record ({reason:raw}): upload a record written by gpuwork trial",
        "{name:raw} — не запись пробного запуска gpuwork ({reason:raw}): загрузите запись, сделанную gpuwork trial"),
    "upload.what.config": ("config.json", "config.json"),
    "upload.what.record": ("trial record", "запись пробного запуска"),

    # -- what the served app says instead of a server's internals (gpuwork.ui.common.friendly) -----------------
    "ui.app_unexpected": (
        "unexpected error (reference {ref:raw}): this is a bug in gpuwork; the server's log has the details under "
        "that reference",
        "непредвиденная ошибка (код {ref:raw}): это ошибка в gpuwork; подробности — в журнале сервера под этим "
        "кодом"),

    # -- the app server (gpuwork app) ----------------------------------------------------------------------------
    "error.app.no_private_dir": (
        "cannot make a private folder for the app's waiting line (tried {folder:raw}): set XDG_RUNTIME_DIR or "
        "XDG_CACHE_HOME to a folder only you can write",
        "не удалось создать личную папку для очереди приложения (пробовали {folder:raw}): задайте XDG_RUNTIME_DIR "
        "или XDG_CACHE_HOME — папку, в которую можете писать только вы"),
    "error.app.too_many_pages": (
        "the app already serves {n} pages, its limit: try again in a few minutes",
        "приложение уже обслуживает страниц: {n}, это предел; попробуйте через несколько минут"),
    "error.app.too_many_tabs": (
        "You already have {n} pages of this app open, the most one visitor may: close one of them (or use one you "
        "have open), then reload this page.",
        "У вас уже открыто страниц этого приложения: {n}, больше одному посетителю нельзя: закройте одну из них "
        "(или вернитесь к уже открытой) и обновите эту страницу."),
    "app.refused_title": ("page not opened", "страница не открыта"),
    "app.kernel_lost": (
        "This page has lost its session on the server (the server was restarted, or the page was away too long): "
        "it no longer answers changes. Reload the page to continue.",
        "Эта страница потеряла свой сеанс на сервере (сервер перезапущен или страница слишком долго была без "
        "связи): она больше не отвечает на изменения. Обновите страницу, чтобы продолжить."),
    "app.reload": ("Reload", "Обновить"),
    "cli.help.app.pages_per_visitor": (
        "at most this many open pages (tabs) per visitor, told apart by a cookie; the next tab is asked to close one, "
        "so one visitor cannot take every page (default {n})",
        "не больше стольких открытых страниц (вкладок) у одного посетителя (различаются по cookie); следующую "
        "вкладку попросят закрыть одну из открытых, чтобы один посетитель не занял все страницы (по умолчанию {n})"),
    "error.args.pages_per_visitor": ("--pages-per-visitor {value:raw} must be a whole number from 1 to 1000",
                                     "--pages-per-visitor {value:raw}: нужно целое число от 1 до 1000"),
    "cli.help.app.max_pages": (
        "at most this many kernels (~135 MB each: pages and the --pool) at once; the next visitor is asked to "
        "come back (default {n})",
        "не больше стольких ядер (~135 МБ каждое: страницы и --pool) одновременно; следующего посетителя "
        "попросят зайти позже (по умолчанию {n})"),
    "cli.help.app.pool": (
        "kernels that run the app before a visitor comes, so the page opens at once (0: one starts per visitor; "
        "default {n})",
        "ядра, которые заранее выполняют приложение, чтобы страница открывалась сразу (0 — ядро запускается "
        "для каждого посетителя; по умолчанию {n})"),
    "error.args.pool": ("--pool {value:raw} must be a whole number from 0 to 100",
                        "--pool {value:raw}: нужно целое число от 0 до 100"),
    "error.args.max_pages": ("--max-pages {value:raw} must be a whole number from 1 to 1000",
                             "--max-pages {value:raw}: нужно целое число от 1 до 1000"),

    # -- the software stack's effect on an estimate (gpuwork.estimate.memory) ------------------------------------
    "memory.moe_experts_unquantized": (
        "bitsandbytes leaves {model}'s fused MoE expert tensors unquantised ({params:count} parameters: transformers "
        "5 stores each layer's experts as one tensor, not as nn.Linear), and peft's k-bit preparation upcasts them "
        "to fp32: {expert_bytes:gib} of weights where 4-bit would take {nf4_bytes:gib}; the estimate counts them so",
        "bitsandbytes не квантует объединённые тензоры экспертов MoE у {model} ({params:count} параметров: "
        "transformers 5 хранит экспертов слоя одним тензором, а не nn.Linear), а подготовка peft к k-bit обучению "
        "переводит их в fp32: {expert_bytes:gib} весов вместо {nf4_bytes:gib} в 4 битах; оценка учитывает это"),
}
