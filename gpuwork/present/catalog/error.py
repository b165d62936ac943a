"""Catalog entries "error.*" except error.catalog.*, error.config.*, error.data.*, error.plan.*, error.resume.*, error.trial.* (their own files): code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "error"

ENTRIES: dict[str, tuple[str, str]] = {
    "error.advice.limit": ("limit must be a whole number of at least 1, not {value:raw}",
                           "limit должен быть целым числом не меньше 1, а не {value:raw}"),
    "error.fitmatrix.counts": ("counts must be GPU counts of at least 1, e.g. (1, 2, 4, 8), not {value:raw}",
                               "counts должны быть числами GPU не меньше 1, например (1, 2, 4, 8), а не {value:raw}"),
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
    "error.args.pages_per_visitor": ("--pages-per-visitor {value:raw} must be a whole number from 1 to 1000",
                                     "--pages-per-visitor {value:raw}: нужно целое число от 1 до 1000"),
    "error.args.pool": ("--pool {value:raw} must be a whole number from 0 to 100",
                        "--pool {value:raw}: нужно целое число от 0 до 100"),
    "error.args.max_pages": ("--max-pages {value:raw} must be a whole number from 1 to 1000",
                             "--max-pages {value:raw}: нужно целое число от 1 до 1000"),
    "error.model.hub_needs_transformers": (
        "{hub_id:raw} is a hub id, and reading one needs transformers: pip install 'gpuwork[trial]', or give a preset "
        "or a config.json",
        "{hub_id:raw} — имя на Hugging Face Hub, а для его чтения нужен transformers: pip install 'gpuwork[trial]' "
        "или укажите заготовку или config.json"),
    "error.decision.have_count": (
        "the number of your cards must be a whole number of at least 1, not {value:raw}",
        "число ваших карт должно быть целым, не меньше 1, а не {value:raw}"),
    "error.args.have": (
        "not a count and a card: {value:raw} (write it as 1xrtx4090)",
        "это не число и карта: {value:raw} (пишите как 1xrtx4090)"),
    # -- the command line: the error line, argparse's own phrases, flag values ------------------------------------
    "error.cli.line": ("gpuwork: error: {message}", "gpuwork: ошибка: {message}"),
    "error.args.see_help": ("{message} (see `{prog:raw} --help`)", "{message} (см. `{prog:raw} --help`)"),
    "error.args.argument": ("argument {arg:raw}: {message}", "аргумент {arg:raw}: {message}"),
    "error.args.invalid_value": ("invalid {kind:@argkind} value: {value:raw}",
                                 "недопустимое значение {value:raw} (ожидается {kind:@argkind})"),
    "error.args.invalid_choice": ("invalid choice: {value:raw} (choose from {choices:raw})",
                                  "нет такого варианта: {value:raw} (выберите из {choices:raw})"),
    "error.args.expected_one": ("expected one argument", "нужно одно значение"),
    "error.args.unrecognized": ("unrecognized arguments: {value:raw}", "неизвестные аргументы: {value:raw}"),
    "error.args.required": ("the following arguments are required: {value:raw}",
                            "не хватает обязательных аргументов: {value:raw}"),
    "error.api.plan_type": (
        "the plan must be a gpuwork TrainPlan, not {kind:raw}: build one with TrainPlan(model=..., ...) or "
        "TrainPlan.from_dict({{...}})",
        "план должен быть объектом gpuwork TrainPlan, а не {kind:raw}: создайте его через TrainPlan(model=..., ...) "
        "или TrainPlan.from_dict({{...}})"),
    "error.api.offers_type": (
        "offers must be a list of gpuwork Offer objects (from gpuwork.facts.catalog.load_offers), not {kind:raw}",
        "offers — это список объектов gpuwork Offer (из gpuwork.facts.catalog.load_offers), а не {kind:raw}"),
    "error.args.host": (
        "--host {value:raw} is not a host name or address: give one, e.g. 127.0.0.1 (this machine only, the default) "
        "or 0.0.0.0 (every interface)",
        "--host {value:raw} — не имя хоста и не адрес: укажите его, например 127.0.0.1 (только эта машина, по "
        "умолчанию) или 0.0.0.0 (все интерфейсы)"),
    "error.args.port": ("{value:raw} is not a TCP port: give a number from 1 to 65535, e.g. 8866",
                        "{value:raw} — не TCP-порт: укажите число от 1 до 65535, например 8866"),
    "error.args.size": ("{value:raw} is not a size: write e.g. 200GB, 1.5TB or 500MiB",
                        "{value:raw} — не размер: пишите, например, 200GB, 1.5TB или 500MiB"),
    "error.args.tokens": ("{value:raw} is not a token count: write e.g. 50B, 100M or 5e9",
                          "{value:raw} — не число токенов: пишите, например, 50B, 100M или 5e9"),
    "error.args.date": ("{value:raw} is not a date written YYYY-MM-DD", "{value:raw} — не дата вида ГГГГ-ММ-ДД"),
    "error.args.notebooks": ("{value:raw}: choose from {choices:raw} (comma-separated)",
                             "{value:raw}: выберите из {choices:raw} (через запятую)"),
    "error.cli.missing_extra": (
        "`gpuwork {command:raw}` needs {module:raw}, which is not installed: pip install 'gpuwork[{extra:raw}]'",
        "`gpuwork {command:raw}` требует {module:raw}, а он не установлен: pip install 'gpuwork[{extra:raw}]'"),
    "error.rates.columns": ("{file:raw}: column(s) {missing:raw} missing; restore the header of the bundled file",
                            "{file:raw}: нет столбцов {missing:raw}; восстановите заголовок из поставляемого файла"),
    "error.rates.unreadable": ("cannot read {file:raw}: {reason:raw}", "не удаётся прочитать {file:raw}: {reason:raw}"),
    "error.rates.value": ("{file:raw} line {line:raw}, column '{column:raw}': '{value:raw}' is not a valid value (a positive "
                          "number, or one of the listed choices)",
                          "{file:raw}, строка {line:raw}, столбец '{column:raw}': '{value:raw}' — недопустимое значение "
                          "(нужно положительное число или один из перечисленных вариантов)"),
    "error.rates.missing_key": ("{file:raw} has no row '{key:raw}'; restore it from the bundled file",
                                "в {file:raw} нет строки '{key:raw}'; восстановите её из поставляемого файла"),
    "error.rates.no_kernel_family": (
        "GPU '{gpu_id:raw}' names no kernel family, so no measured attention rate applies to it; set its "
        "kernel_family in gpus.csv to one of {families:raw} (docs/architecture.md, 'Adding a GPU')",
        "у GPU '{gpu_id:raw}' не задано семейство ядер, и к нему не относится ни одна измеренная скорость внимания; "
        "укажите kernel_family в gpus.csv: одно из {families:raw} (docs/architecture.md, «Добавление GPU»)"),
    "error.rates.kernel_family": (
        "GPU '{gpu_id:raw}': kernel family '{family:raw}' has no rates in kernels.csv (flash_attn_fwd_fraction_"
        "{family:raw}) or attention_curves.csv; use one of {families:raw} or add the family's measured rows",
        "GPU '{gpu_id:raw}': для семейства ядер '{family:raw}' нет скоростей ни в kernels.csv (flash_attn_fwd_"
        "fraction_{family:raw}), ни в attention_curves.csv; укажите одно из {families:raw} или добавьте "
        "измеренные строки семейства"),
    "error.rates.stack_missing": ("{file:raw} does not describe the stack(s) {stacks:raw}; add a row for each",
                                  "в {file:raw} не описаны стеки {stacks:raw}; добавьте строку для каждого"),
    "error.rates.no_device": ("no achievable rates for GPU '{gpu_id:raw}' in rates.csv; add its rows (bf16, fp16, "
                              "fp32) with sources, or pass mfu=… to use the peak-fraction model",
                              "для GPU '{gpu_id:raw}' нет достижимых скоростей в rates.csv; добавьте его строки "
                              "(bf16, fp16, fp32) с источниками или передайте mfu=…, чтобы считать по доле пика"),
    # -- models: presets, config.json files, hub ids ----------------------------------------------------------
    "error.model.folder_without_config": (
        "model folder '{ref:raw}' has no config.json: pass the folder that holds it or the file itself",
        "в папке модели '{ref:raw}' нет config.json: укажите папку, где он лежит, или сам файл"),
    "error.model.file_missing": ("model file '{ref:raw}' does not exist: check the path",
                                 "файла модели '{ref:raw}' нет: проверьте путь"),
    "error.model.unknown_close": (
        "unknown model '{ref:raw}': not a preset, a config.json path or a hub id (org/name). Did you mean: "
        "{close:raw}? Run `gpuwork models` to list presets.",
        "неизвестная модель '{ref:raw}': это не пресет, не путь к config.json и не id на Hugging Face Hub "
        "(org/name). Может быть, {close:raw}? Список пресетов: `gpuwork models`."),
    "error.model.unknown": (
        "unknown model '{ref:raw}': not a preset, a config.json path or a hub id (org/name). Run "
        "`gpuwork models` to list presets.",
        "неизвестная модель '{ref:raw}': это не пресет, не путь к config.json и не id на Hugging Face Hub "
        "(org/name). Список пресетов: `gpuwork models`."),
    "error.model.bad_json": (
        "{path:raw} is not valid JSON (line {line:raw}, column {column:raw}: {reason:raw}): fix the file or "
        "download config.json again",
        "{path:raw} — некорректный JSON (строка {line:raw}, столбец {column:raw}: {reason:raw}): исправьте "
        "файл или скачайте config.json заново"),
    "error.model.unreadable": ("cannot read {path:raw}: {reason:raw}",
                               "не удаётся прочитать {path:raw}: {reason:raw}"),
    "error.model.not_hf_config": ("{path:raw} is not a Hugging Face config.json: it has no 'model_type' key",
                                  "{path:raw} — не config.json от Hugging Face: в нём нет ключа 'model_type'"),
    "error.model.hub_unreachable": (
        "cannot fetch the config of '{hub_id:raw}' from the Hugging Face Hub ({error:raw}): without network "
        "access, download its config.json and pass its path",
        "не удаётся получить конфигурацию '{hub_id:raw}' с Hugging Face Hub ({error:raw}): без доступа к сети "
        "скачайте её config.json и укажите путь к нему"),
    "error.model.unknown_type": (
        "model_type '{model_type:raw}' of {name:raw} is not known to transformers {version:raw}: upgrade "
        "transformers or pick another model",
        "model_type '{model_type:raw}' модели {name:raw} не знаком transformers {version:raw}: обновите "
        "transformers или выберите другую модель"),
    "error.model.build_failed": (
        "cannot build {name:raw} ({model_type:raw}) as {task:raw}: {error:raw}: {detail:raw}",
        "не удаётся построить {name:raw} ({model_type:raw}) как {task:raw}: {error:raw}: {detail:raw}"),
    "error.model.no_blocks": ("cannot find the {layers:raw} transformer blocks of {model:raw}",
                              "не удаётся найти {layers:raw} {layers:pl:блок|блока|блоков} трансформера в "
                              "{model:raw}"),
    "error.model.target_is_output": (
        "lora_targets: '{target:raw}' is the output layer of {model:raw}, which gpuwork does not price as a LoRA "
        "target (its adapters' logits-sized outputs are not modelled): leave it out; the linear modules it can "
        "target are: {names:raw} (or use 'all-linear')",
        "lora_targets: '{target:raw}' — выходной слой {model:raw}, а gpuwork не оценивает LoRA на нём (выходы его "
        "адаптеров размером с логиты не моделируются): уберите его; доступные линейные модули: {names:raw} (или "
        "укажите 'all-linear')"),
    "error.model.target_not_found": (
        "lora_targets: '{target:raw}' matches no linear module of {model:raw}; its linear modules are: "
        "{names:raw} (or use 'all-linear')",
        "lora_targets: '{target:raw}' не совпадает ни с одним линейным модулем {model:raw}; его линейные "
        "модули: {names:raw} (или укажите 'all-linear')"),
    "error.planfile.missing": ("plan file '{file:raw}' does not exist", "файла плана '{file:raw}' нет"),
    "error.planfile.bad_json": ("{file:raw} is not valid JSON (line {line:raw}: {reason:raw})",
                                "{file:raw} — некорректный JSON (строка {line:raw}: {reason:raw})"),
    "error.planfile.not_object": ("{file:raw} must hold a JSON object of TrainPlan fields",
                                  "в {file:raw} должен быть JSON-объект с полями TrainPlan"),
    # -- estimator arguments (time, offers, disk, the rental request) ----------------------------------------
    "error.time.link_choice": ("link {value:raw} is not one of {choices:raw}",
                               "link {value:raw} — не из списка: {choices:raw}"),
    "error.time.link_unavailable": (
        "link '{link:raw}' is not available on {gpu_id:raw} (it has '{has:raw}'); use '{has:raw}' or 'pcie'",
        "связь '{link:raw}' недоступна на {gpu_id:raw} (у него есть '{has:raw}'); укажите '{has:raw}' или "
        "'pcie'"),
    "error.time.mfu": ("mfu={value:raw} must be a share of the dense peak from 0.001 to 1, e.g. 0.35",
                       "mfu={value:raw}: нужна доля пиковой производительности от 0,001 до 1, например 0,35"),
    "error.time.calibration_gpu": (
        "calibration was measured on {measured:raw}, not {gpu_id:raw}: run a trial on this GPU or pass mfu= "
        "explicitly",
        "калибровка измерена на {measured:raw}, а не на {gpu_id:raw}: запустите пробный прогон на этом GPU или "
        "задайте mfu= явно"),
    "error.time.calibration_tokens": ("calibration tokens_per_s must be above 0",
                                      "tokens_per_s в калибровке должен быть больше 0"),
    "error.time.calibration_empty": (
        "calibration needs 'mfu' or 'tokens_per_s' (per GPU, measured on this GPU with this plan)",
        "в калибровке нужен 'mfu' или 'tokens_per_s' (на один GPU, измеренный на этом GPU с этим планом)"),
    "error.time.calibration_range": (
        "calibration implies MFU {mfu:n2}, outside (0, 1]: check the measurement's units (per-GPU tokens/s) "
        "and the plan",
        "из калибровки следует MFU {mfu:n2}, вне (0, 1]: проверьте единицы измерения (токены/с на один GPU) и "
        "план"),
    "error.time.nodes": ("nodes={value:raw} must be a whole number from 1 to gpus={gpus:raw}",
                         "nodes={value:raw}: нужно целое число от 1 до gpus={gpus:raw}"),
    "error.time.network_choice": ("network {value:raw} is not one of {choices:raw}",
                                  "network {value:raw} — не из списка: {choices:raw}"),
    "error.time.network_needed": (
        "nodes={nodes:raw} needs an inter-node network: pass network='ib-ndr-400g', 'ib-hdr-200g', "
        "'roce-400g', 'ethernet-100g' or 'ethernet-25g'",
        "при nodes={nodes:raw} нужна сеть между узлами: укажите network='ib-ndr-400g', 'ib-hdr-200g', "
        "'roce-400g', 'ethernet-100g' или 'ethernet-25g'"),
    "error.time.disk_write": ("disk_write_bytes_s must be above 0 (e.g. 0.5e9)",
                              "disk_write_bytes_s должен быть больше 0 (например 0.5e9)"),
    "error.time.loader": ("loader_tokens_per_s must be above 0", "loader_tokens_per_s должен быть больше 0"),
    "error.offers.safety_margin": ("safety_margin={value:raw} must be a fraction in [0, 1), e.g. 0.05",
                                   "safety_margin={value:raw}: нужна доля из [0, 1), например 0,05"),
    "error.offers.sort": ("sort={value:raw} is not one of {choices:raw}",
                          "sort={value:raw} — не из списка: {choices:raw}"),
    "error.offers.deadline_needed": ("sort='deadline' needs deadline_s (e.g. 48 hours = 172800)",
                                     "для sort='deadline' нужен deadline_s (например, 48 часов = 172800)"),
    "error.offers.not_negative": ("{field:raw}={value:raw} must be a number >= 0",
                                  "{field:raw}={value:raw}: нужно число ≥ 0"),
    "error.disk.compression_ratio": (
        "compression_ratio={value:raw} must be a number >= 1 (unpacked size / downloaded size; 1 when the "
        "dataset is not compressed)",
        "compression_ratio={value:raw}: нужно число ≥ 1 (размер после распаковки / скачанный размер; 1, если "
        "датасет не сжат)"),
    "error.request.lang": ("lang={value:raw} is not one of {choices:raw}",
                           "lang={value:raw} — не из списка: {choices:raw}"),
    "error.request.start_date": ("start_date={value:raw} is not a date written YYYY-MM-DD",
                                 "start_date={value:raw} — не дата в виде ГГГГ-ММ-ДД"),
    "error.request.budget": ("budget_usd={value:raw} must be a number above 0 (USD)",
                             "budget_usd={value:raw}: нужно число больше 0 (USD)"),
    "error.request.rent_period": ("rent_period_days={value:raw} must be a whole number >= 1",
                                  "rent_period_days={value:raw}: нужно целое число ≥ 1"),
    "error.tables.pandas": (
        "gpuwork's tables need pandas, which is not installed: pip install 'gpuwork[workbook]' (or pip install "
        "pandas)",
        "для таблиц gpuwork нужен pandas, а он не установлен: pip install 'gpuwork[workbook]' (или pip install "
        "pandas)"),
    # -- the workbook's forms and the command line ------------------------------------------------------------
    "error.ui.manual_whole": ("{field:raw}={value:raw}: use a whole number >= 1",
                              "{field:raw}={value:raw}: нужно целое число ≥ 1"),
    "error.ui.hidden_by_heads": (
        "hidden_size={hidden:raw} must be divisible by num_attention_heads={heads:raw} (each head gets an "
        "equal slice)",
        "hidden_size={hidden:raw} должен делиться на num_attention_heads={heads:raw} (каждой голове достаётся "
        "равная часть)"),
    "error.ui.heads_by_kv": (
        "num_attention_heads={heads:raw} must be divisible by num_key_value_heads={kv_heads:raw} "
        "(grouped-query attention)",
        "num_attention_heads={heads:raw} должен делиться на num_key_value_heads={kv_heads:raw} (головы "
        "ключей и значений делятся между группами запросов)"),
    "error.ui.upload_json": ("{name:raw} is not valid JSON ({reason:raw}): upload the model's config.json",
                             "{name:raw} — некорректный JSON ({reason:raw}): загрузите config.json модели"),
    "error.ui.whatif_axis": ("what-if axis {value:raw} must be one of {choices:raw}",
                             "ось «что если» {value:raw}: нужно одно из значений {choices:raw}"),
    "error.ui.report_no_view": ("a report-mode form has no live view: use show(part)",
                                "у формы в режиме отчёта нет живого вида: используйте show(part)"),
    "error.ui.offers_sort": ("sort={value:raw} must be one of {choices:raw}",
                             "sort={value:raw}: нужно одно из значений {choices:raw}"),
    "error.ui.dataset_size": ("dataset size {gb:g} GB must be above 0 (0 = from tokens)",
                              "размер датасета {gb:g} ГБ должен быть больше 0 (0 — считать по токенам)"),
    "error.cli.optimizer_unknown": (
        "--optimizer {name:raw}: neither a gpuwork optimizer ({allowed:raw}) nor a name Trainer, TRL, axolotl or "
        "DeepSpeed uses; closest: {close:raw}",
        "--optimizer {name:raw}: это не оптимизатор gpuwork ({allowed:raw}) и не имя из Trainer, TRL, axolotl или "
        "DeepSpeed; ближайшие: {close:raw}"),
    "error.cli.deadline_hours": ("--sort deadline needs --deadline-hours (e.g. --deadline-hours 48)",
                                 "для --sort deadline нужен --deadline-hours (например, --deadline-hours 48)"),
    "error.cli.not_installed": (
        "{module:raw} is not installed: install gpuwork[{extra:raw}] (pip install 'gpuwork[{extra:raw}]')",
        "{module:raw} не установлен: установите gpuwork[{extra:raw}] (pip install 'gpuwork[{extra:raw}]')"),
    "error.cli.app_notebook": (
        "the app notebook is missing from this installation ({path:raw}): reinstall gpuwork",
        "в этой установке нет блокнота приложения ({path:raw}): переустановите gpuwork"),
    # -- errors ------------------------------------------------------------------------------------------------
    "error.hf.plan_type": (
        "plan must be a gpuwork TrainPlan or None (None infers it from the run), not {kind:raw}",
        "plan должен быть TrainPlan из gpuwork или None (тогда он выводится из запуска), а не {kind:raw}"),
    "error.hf.no_model": (
        "the Trainer passed no model to GpuworkCallback: add the callback to a Trainer built with a model",
        "Trainer не передал модель в GpuworkCallback: добавьте обратный вызов к Trainer, созданному с моделью"),
    "error.hf.no_config": (
        "{model_class:raw} has no Hugging Face config to infer the plan from: pass plan=TrainPlan(...)",
        "у {model_class:raw} нет конфигурации Hugging Face, из которой можно вывести план: передайте "
        "plan=TrainPlan(...)"),
    "error.hf.no_plan": (
        "measure() needs plan=TrainPlan(...) or model=... to know what ran",
        "measure() нужен plan=TrainPlan(...) или model=..., чтобы знать, что запускалось"),
    "error.hf.plan_invalid": (
        "the plan inferred from the run is not valid ({detail:raw}): pass plan=TrainPlan(...)",
        "план, выведенный из запуска, некорректен ({detail:raw}): передайте plan=TrainPlan(...)"),
    "error.trace.deepspeed": (
        "sharding='{sharding:raw}' (DeepSpeed) is not traced; trace sharding='fsdp' or 'zero3' (FSDP2 full shard), or "
        "use the analytic estimate",
        "sharding='{sharding:raw}' (DeepSpeed) не трассируется; трассируйте sharding='fsdp' или 'zero3' (полное "
        "шардирование FSDP2) либо используйте аналитическую оценку"),
    "error.trace.mlm_predictions": (
        "mlm_predictions={count:raw} is not traced: the trace runs transformers' masked-LM head on every position, "
        "while the estimate puts it on the gathered masked positions only; clear mlm_predictions to trace, or use "
        "the analytic estimate",
        "mlm_predictions={count:raw} не трассируется: трассировка запускает голову маскированной языковой модели "
        "transformers на всех позициях, а оценка — только на выбранных замаскированных; уберите mlm_predictions, "
        "чтобы трассировать, или используйте аналитическую оценку"),
    "error.trace.data_dependent": (
        "fake tensors cannot run a data-dependent op ({op:raw}) in {architecture:raw}: use the analytic estimate "
        "instead",
        "на фиктивных тензорах нельзя выполнить операцию, зависящую от данных ({op:raw}), в {architecture:raw}: "
        "используйте аналитическую оценку"),
    "error.trace.method": (
        "cannot trace {architecture:raw} with method '{method:raw}': {detail:raw}; use the analytic estimate instead",
        "не удаётся трассировать {architecture:raw} с методом '{method:raw}': {detail:raw}; используйте "
        "аналитическую оценку"),
    "error.trace.process_group": (
        "a process group is already initialised in this process: run the sharded trace in a fresh process "
        "(`gpuwork trace ...`)",
        "в этом процессе уже создана группа процессов: запустите трассировку с шардированием в новом процессе "
        "(`gpuwork trace ...`)"),
    "error.trace.sharded_qlora": (
        "sharded QLoRA (FSDP over 4-bit weights) is not traced; use the analytic estimate",
        "QLoRA с шардированием (FSDP поверх 4-битных весов) не трассируется; используйте аналитическую оценку"),
    "error.trace.sharding": (
        "cannot trace {architecture:raw} with sharding '{sharding:raw}': {detail:raw}; use the analytic estimate "
        "instead",
        "не удаётся трассировать {architecture:raw} с шардированием '{sharding:raw}': {detail:raw}; используйте "
        "аналитическую оценку"),
    "error.trace.real_qlora": ("real_step_peak does not build 4-bit models: use method lora/full/freeze",
                               "real_step_peak не строит 4-битные модели: выберите method='lora', 'full' или "
                               "'freeze'"),
    "error.calibration.no_steps": (
        "trial '{trial:raw}' did not complete its steps: nothing to calibrate with (run a trial that fits)",
        "запуск '{trial:raw}' не выполнил свои шаги: калибровать нечем (запустите пробу, которая помещается)"),
    "error.calibration.json": ("{path:raw} is not valid JSON (line {line:raw}: {detail:raw}): fix or delete it",
                               "{path:raw} — некорректный JSON (строка {line:raw}: {detail:raw}): исправьте или "
                               "удалите его"),
    "error.calibration.read": ("cannot read {path:raw}: {detail:raw}", "не удалось прочитать {path:raw}: {detail:raw}"),
    "error.calibration.not_a_file": (
        "{path:raw} is not a gpuwork calibration file (no 'devices' object): fix or delete it",
        "{path:raw} — не файл калибровки gpuwork (нет объекта `devices`): исправьте или удалите его"),
    "error.calibration.schema": (
        "{path:raw} has schema {found:raw}, this gpuwork reads {expected}: delete it and calibrate again",
        "у {path:raw} схема {found:raw}, а эта версия gpuwork читает {expected}: удалите файл и откалибруйте заново"),
    "error.calibration.write": (
        "cannot write {path:raw}: {detail:raw} (set {env:raw} to a writable file)",
        "не удалось записать {path:raw}: {detail:raw} (укажите в {env:raw} файл, доступный для записи)"),
    "error.calibration.malformed": (
        "{path:raw}: an entry of '{device:raw}' is malformed ({detail:raw}): delete it",
        "{path:raw}: запись для '{device:raw}' повреждена ({detail:raw}): удалите её"),
    "error.calibration.factor": ("memory factor '{name:raw}'={value:raw} must be a number above 0",
                                 "поправка памяти '{name:raw}'={value:raw}: нужно число больше 0"),
    "error.calibration.none_stored": (
        "no memory calibration stored for '{device:raw}': run `gpuwork trial --calibrate` on that GPU first",
        "для '{device:raw}' нет сохранённой калибровки памяти: сначала запустите `gpuwork trial --calibrate` на "
        "этом GPU"),
    "error.report.notebook_missing": (
        "notebook {path:raw} is missing: the report needs the workbook's notebooks/",
        "блокнота {path:raw} нет: отчёту нужна папка `notebooks/` рабочей книги"),
    "error.report.cell_failed": ("{name:raw}: cell {cell:raw} failed: {kind:raw}: {detail:raw}",
                                 "{name:raw}: ошибка в ячейке {cell:raw}: {kind:raw}: {detail:raw}"),
    "error.report.failed": ("{name:raw}: {kind:raw}: {detail:raw}", "{name:raw}: {kind:raw}: {detail:raw}"),
    "error.report.unknown_notebooks": ("unknown notebook(s) {names:raw}: choose from {choices:raw}",
                                       "неизвестные блокноты {names:raw}: выберите из {choices:raw}"),
    "error.report.steps": ("steps={steps:raw}: the trial needs at least one measured step",
                           "steps={steps:raw}: пробному запуску нужен хотя бы один шаг замера"),
    "error.report.no_lang": ("lang={lang:raw}: choose en or ru", "lang={lang:raw}: выберите `en` или `ru`"),
    "error.read.dangling": (
        "{path:raw} is a symbolic link to {target:raw}, which does not exist: fix the link or pass the file itself",
        "{path:raw} — символическая ссылка на {target:raw}, которого нет: исправьте ссылку или укажите сам файл"),
    "error.read.loop": (
        "{path:raw} is a loop of symbolic links that never reaches a file: point the link at a real file",
        "{path:raw} — цикл символических ссылок, который не ведёт к файлу: направьте ссылку на настоящий файл"),
    "error.read.not_dir_in_path": (
        "{path:raw}: a part of the path before the file name is a file, not a folder: check the path",
        "{path:raw}: часть пути перед именем файла — файл, а не папка: проверьте путь"),
    "error.read.nul_in_name": (
        "{path:raw} is not a usable file name: it holds a NUL character (shown as \\0): check the path",
        "{path:raw} — недопустимое имя файла: в нём есть символ NUL (показан как \\0): проверьте путь"),
    "error.read.not_regular": (
        "{path:raw} is {what:@filetype}, not a regular file: pass the path of the {kind:@filekind} saved on disk",
        "{path:raw} — {what:@filetype}, а не обычный файл: укажите путь к сохранённому на диске файлу "
        "({kind:@filekind})"),
    "error.read.too_large": (
        "{path:raw} is {size_mib:n1} MiB, more than the {limit_mib:n0} MiB gpuwork reads of a {kind:@filekind}: "
        "check that this is the right file",
        "{path:raw} занимает {size_mib:n1} МиБ, больше {limit_mib:n0} МиБ, которые gpuwork читает для файла "
        "такого вида ({kind:@filekind}): проверьте, тот ли это файл"),
    "error.read.too_deep": (
        "{path:raw} nests values {depth:int} levels deep, more than the {limit:int} gpuwork reads: "
        "flatten the file",
        "в {path:raw} значения вложены на {depth:int} уровней, больше {limit:int}, которые читает gpuwork: "
        "упростите структуру файла"),
    "error.read.long_integer": (
        "{path:raw} holds an integer of {digits:int} digits, more than the {limit:int} gpuwork reads: "
        "write the number you mean",
        "в {path:raw} есть целое число из {digits:int} цифр, больше {limit:int}, которые читает gpuwork: "
        "запишите нужное число"),
    "error.read.yaml_expansion": (
        "{path:raw} holds more than {limit:int} values, counting each YAML alias (*name) as the values it stands "
        "for: check that this is the right file, or write out fewer aliases",
        "в {path:raw} больше {limit:int} значений, если считать каждый YAML-псевдоним (*имя) за значения, которые "
        "он заменяет: проверьте, тот ли это файл, или используйте меньше псевдонимов"),
    "error.read.yaml_aliases": (
        "{path:raw} uses YAML aliases (*name) more than {limit:int} times: write the values out",
        "в {path:raw} YAML-псевдонимы (*имя) использованы больше {limit:int} раз: выпишите значения явно"),
    "error.read.yaml_recursive": (
        "{path:raw} has a YAML alias inside the value it names (a value that contains itself): remove that alias",
        "в {path:raw} YAML-псевдоним стоит внутри значения, на которое ссылается (значение содержит само себя): "
        "уберите этот псевдоним"),
    # output paths (gpuwork.facts.reading.output_folder / output_file / inside_folder)
    "error.write.empty": ("the output path is empty ({path:raw}): name a file or folder",
                          "путь для вывода пуст ({path:raw}): укажите файл или папку"),
    "error.write.dangling": (
        "{path:raw} is a symbolic link to {target:raw}, which does not exist: gpuwork does not create what a "
        "stale link points to; fix the link or choose another path",
        "{path:raw} — символическая ссылка на {target:raw}, которого нет: gpuwork не создаёт то, на что "
        "указывает устаревшая ссылка; исправьте ссылку или выберите другой путь"),
    "error.write.loop": (
        "{path:raw} is a loop of symbolic links: point the link at a real folder or choose another path",
        "{path:raw} — цикл символических ссылок: направьте ссылку на настоящую папку или выберите другой путь"),
    "error.write.not_folder": (
        "{path:raw} exists and is not a folder: choose a folder (new or existing) for the output",
        "{path:raw} существует и не является папкой: выберите папку (новую или существующую) для вывода"),
    "error.write.is_folder": (
        "{path:raw} is a folder: name the file to write, for example {path:raw}/out.md",
        "{path:raw} — папка: укажите имя файла для записи, например {path:raw}/out.md"),
    "error.write.not_regular": (
        "{path:raw} is {what:@filetype}, not a regular file: choose a file path for the output",
        "{path:raw} — {what:@filetype}, а не обычный файл: выберите путь к файлу для вывода"),
    "error.write.no_folder": (
        "cannot write {path:raw}: the folder {folder:raw} does not exist; create it first or choose another path",
        "нельзя записать {path:raw}: папки {folder:raw} нет; создайте её или выберите другой путь"),
    "error.write.leaves_folder": (
        "{path:raw} is a link to {target:raw}, outside the output folder {folder:raw}: gpuwork writes only inside "
        "the folder you chose; remove the link",
        "{path:raw} — ссылка на {target:raw}, вне папки вывода {folder:raw}: gpuwork пишет только внутри "
        "выбранной папки; удалите ссылку"),
    "error.heldout.not_a_document": (
        "{path:raw} holds {kind:raw}, not a held-out document (an object with a list \"sets\"): pass the "
        "held-out file itself",
        "в {path:raw} — {kind:raw}, а не документ отложенной выборки (объект со списком \"sets\"): укажите "
        "сам файл отложенной выборки"),
    "error.heldout.reread_not_object": (
        "held-out case {case:raw}: the re-reading's {field:raw} is not an object: write it as {{\"field\": value, ...}}",
        "отложенный случай {case:raw}: {field:raw} в перепрочтении — не объект: запишите его как "
        "{{\"поле\": значение, ...}}"),
    "error.heldout.reread_unknown_field": (
        "held-out case {case:raw}: a re-reading cannot set {field:raw}: use one of {allowed:raw}",
        "отложенный случай {case:raw}: перепрочтение не может задавать {field:raw}: используйте одно из "
        "{allowed:raw}"),
    "error.heldout.reread_bad_value": (
        "held-out case {case:raw}: the re-read {field:raw} is not valid: {problem}",
        "отложенный случай {case:raw}: перепрочтённое {field:raw} недопустимо: {problem}"),
    "error.heldout.reread_why": (
        "held-out case {case:raw}: the re-reading has no \"why\": say in one or two sentences what the source ran "
        "and how the record misread it",
        "отложенный случай {case:raw}: у перепрочтения нет \"why\": одним-двумя предложениями скажите, что "
        "запускал источник и как запись его неверно прочла"),
    "error.heldout.reread_evidence": (
        "held-out case {case:raw}: the re-reading's evidence must be a non-empty list of {{\"url\": \"https://...\", "
        "\"quote\": \"...\"}}: give the source's address and the line it quotes",
        "отложенный случай {case:raw}: evidence перепрочтения должно быть непустым списком {{\"url\": "
        "\"https://...\", \"quote\": \"...\"}}: укажите адрес источника и цитируемую строку"),
    "error.heldout.reread_choice": (
        "held-out case {case:raw}: the re-read {field:raw} {value:raw} is not one of {allowed:raw}: choose one of them",
        "отложенный случай {case:raw}: перепрочтённое {field:raw} {value:raw} — не одно из {allowed:raw}: "
        "выберите одно из них"),
    "error.heldout.reread_gpu": (
        "held-out case {case:raw}: the re-read gpu_id {value:raw} is not a known GPU: use an id from gpus.csv",
        "отложенный случай {case:raw}: перепрочтённый gpu_id {value:raw} — неизвестный GPU: используйте id из "
        "gpus.csv"),
    "error.heldout.reread_nodes": (
        "held-out case {case:raw}: the re-read nodes {value:raw} is not a whole number from 1: give the nodes the "
        "run used",
        "отложенный случай {case:raw}: перепрочтённое nodes {value:raw} — не целое число от 1: укажите число "
        "узлов запуска"),
    "error.heldout.reread_text": (
        "held-out case {case:raw}: the re-read {field:raw} {value:raw} is not a non-empty text: write a name or null",
        "отложенный случай {case:raw}: перепрочтённое {field:raw} {value:raw} — не непустой текст: напишите "
        "имя или null"),
    "error.heldout.cache_emptied": (
        "held-out case {case:raw}: cache_emptied {value:raw} is not true or false: write true where the harness "
        "calls torch.cuda.empty_cache() between its warm-up and the measured step, else false",
        "отложенный случай {case:raw}: cache_emptied {value:raw} — не true и не false: напишите true, если "
        "обвязка вызывает torch.cuda.empty_cache() между прогревом и измеряемым шагом, иначе false"),
    "error.heldout.cache_emptied_time": (
        "held-out case {case:raw}: cache_emptied says how a memory peak was measured; a time case cannot carry it",
        "отложенный случай {case:raw}: cache_emptied говорит, как измерен пик памяти; у случая времени его быть "
        "не может"),
    "error.heldout.reread_covers": (
        "held-out case {case:raw}: the re-read covers {value:raw} is not a list of words starting with \"steps\": "
        "add any of first_steps, start_up, final_save_full, eval_every:N, save_every:N (N: optimizer steps)",
        "отложенный случай {case:raw}: перепрочтённое covers {value:raw} — не список слов, начинающийся со "
        "\"steps\": добавьте любые из first_steps, start_up, final_save_full, eval_every:N, save_every:N "
        "(N — шаги оптимизатора)"),
    "error.heldout.reread_model_config": (
        "held-out case {case:raw}: the re-read model_config must be an object of config.json keys, and the case "
        "must carry its own model_config: a preset model is named by plan.model",
        "отложенный случай {case:raw}: перепрочтённый model_config должен быть объектом ключей config.json, а у "
        "случая должен быть свой model_config: модель из пресетов задаётся полем plan.model"),
    "error.heldout.reread_nothing": (
        "held-out case {case:raw}: the re-reading changes nothing in the configuration as recorded: remove it or "
        "give the fields that differ",
        "отложенный случай {case:raw}: перепрочтение ничего не меняет в записанной конфигурации: удалите его или "
        "укажите поля, которые отличаются"),
    "error.share.bool": (
        "{field:raw}={value:raw} in the link is not true or false: write {field:raw}=true or {field:raw}=false",
        "{field:raw}={value:raw} в ссылке — не true и не false: напишите {field:raw}=true или {field:raw}=false"),
    # -- the ranges of gpuwork trial's numeric flags (gpuwork.cli.trial) -------------------------------------
    "error.trial_flags.whole": (
        "{flag:raw} {value:raw}: give a whole number from {low:int} to {high:int} ({what})",
        "{flag:raw} {value:raw}: укажите целое число от {low:int} до {high:int} ({what})"),
    "error.trial_flags.number": (
        "{flag:raw} {value:raw}: give a number above {low:g} and at most {high:g} ({what})",
        "{flag:raw} {value:raw}: укажите число больше {low:g} и не больше {high:g} ({what})"),
    "error.trial_flags.number_from": (
        "{flag:raw} {value:raw}: give a number from {low:g} to {high:g} ({what})",
        "{flag:raw} {value:raw}: укажите число от {low:g} до {high:g} ({what})"),
    # -- typed values: counts, sizes, numbers (gpuwork.units.parse_count / parse_size / parse_number) -----------
    "error.input.not_finite": (
        "{field:raw}={value:raw} must be a finite number: write an ordinary number such as 2 or 0.5",
        "{field:raw}={value:raw}: нужно конечное число, например 2 или 0.5"),
    "error.input.not_number": (
        "{field:raw}={value:raw} is not a number: write digits with a decimal point, e.g. 0.5 or 1e4",
        "{field:raw}={value:raw} — не число: пишите цифры с десятичной точкой, например 0.5 или 1e4"),
    "error.input.not_whole": (
        "{field:raw}={value:raw} is not a whole number: use an integer such as 4096",
        "{field:raw}={value:raw} — не целое число: укажите целое, например 4096"),
    "error.input.not_whole_text": (
        "{field:raw}={value:raw} is not a whole number: write digits only, e.g. 4096 or 1e4",
        "{field:raw}={value:raw} — не целое число: пишите только цифры, например 4096 или 1e4"),
    "error.input.not_count": (
        "{field:raw}={value:raw} is not a count: write a whole number with an optional k, M, B or T, e.g. 4096, "
        "4k, 1.5B or 2M tokens",
        "{field:raw}={value:raw} — не количество: пишите целое число, можно с k, M, B или T, например 4096, 4k, "
        "1.5B или 2M"),
    "error.input.not_size": (
        "{field:raw}={value:raw} is not a size: write a number with a unit (B, kB, MB, GB, TB, KiB, MiB, GiB, "
        "TiB), e.g. 200MB, 1.5 GB or 500MiB",
        "{field:raw}={value:raw} — не размер: пишите число с единицей (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB), "
        "например 200MB, 1.5 GB или 500MiB"),
    "error.input.at_least": (
        "{field:raw}={value:raw} is out of range: use a value >= {minimum:g}",
        "{field:raw}={value:raw} вне допустимого диапазона: укажите значение >= {minimum:g}"),
    "error.input.above": (
        "{field:raw}={value:raw} is out of range: use a value > {minimum:g}",
        "{field:raw}={value:raw} вне допустимого диапазона: укажите значение > {minimum:g}"),
    "error.input.at_most": (
        "{field:raw}={value:raw} is beyond what any run can use: use a value <= {maximum:g}",
        "{field:raw}={value:raw} больше, чем может понадобиться любому запуску: укажите значение <= {maximum:g}"),
    # -- command-line flags (gpuwork.cli.args: one check per flag, where it is parsed) -----------------------------
    "error.flag.not_seq_len": (
        "{value:raw} is not a sequence length: write a whole number of tokens, k counting 1,024 (4096, 4k, 32k)",
        "{value:raw} — не длина последовательности: укажите целое число токенов, k — это 1 024 (4096, 4k, 32k)"),
    "error.flag.not_finite": (
        "{value:raw} is not a finite number: write an ordinary number such as 2 or 0.5",
        "{value:raw} — не конечное число: укажите обычное число, например 2 или 0.5"),
    "error.flag.at_least": ("{value:raw} is out of range: use a value >= {minimum:g}",
                            "{value:raw} вне допустимого диапазона: укажите значение >= {minimum:g}"),
    "error.flag.above": ("{value:raw} is out of range: use a value > {minimum:g}",
                         "{value:raw} вне допустимого диапазона: укажите значение > {minimum:g}"),
    "error.flag.at_most": ("{value:raw} is out of range: use a value <= {maximum:g}",
                           "{value:raw} вне допустимого диапазона: укажите значение <= {maximum:g}"),
    "error.args.date_range": (
        "{value:raw} is outside the dates a rental can start: use a date from {first:raw} (today) to {last:raw}",
        "{value:raw} — вне дат, с которых может начаться аренда: укажите дату от {first:raw} (сегодня) до "
        "{last:raw}"),
    "error.flag.range": ("{value:raw} is out of range: use a value from {minimum:g} to {maximum:g}",
                         "{value:raw} вне допустимого диапазона: укажите значение от {minimum:g} до {maximum:g}"),
    "error.flag.range_above": (
        "{value:raw} is out of range: use a value above {minimum:g}, at most {maximum:g}",
        "{value:raw} вне допустимого диапазона: укажите значение больше {minimum:g}, но не больше {maximum:g}"),
    "error.flag.range_below": (
        "{value:raw} is out of range: use a value from {minimum:g}, below {maximum:g}",
        "{value:raw} вне допустимого диапазона: укажите значение от {minimum:g}, но меньше {maximum:g}"),
    "error.flag.range_above_below": (
        "{value:raw} is out of range: use a value above {minimum:g} and below {maximum:g}",
        "{value:raw} вне допустимого диапазона: укажите значение больше {minimum:g} и меньше {maximum:g}"),
    "error.flag.below": ("{value:raw} is out of range: use a value < {maximum:g}",
                         "{value:raw} вне допустимого диапазона: укажите значение < {maximum:g}"),
    # -- files the CLI reads or writes (gpuwork.cli.main's one handler) -------------------------------------------
    "error.file.is_directory": (
        "{path:raw} is a folder, not a file: pass the path of the file itself",
        "{path:raw} — папка, а не файл: укажите путь к самому файлу"),
    "error.file.not_found": (
        "{path:raw} does not exist: check the path (and create the folder first when writing into it)",
        "{path:raw} не существует: проверьте путь (и создайте папку, если записываете в неё)"),
    "error.file.permission": (
        "no permission to use {path:raw}: change its permissions or choose another path",
        "нет прав на {path:raw}: измените права доступа или выберите другой путь"),
    "error.file.not_utf8": (
        "{path:raw} is not a UTF-8 text file (byte {byte:raw}: {reason:raw}): pass the JSON/text file itself, "
        "saved as UTF-8",
        "{path:raw} — не текстовый файл в UTF-8 (байт {byte:raw}: {reason:raw}): укажите сам JSON/текстовый "
        "файл, сохранённый в UTF-8"),
    "error.file.not_utf8_unnamed": (
        "a file is not UTF-8 text (byte {byte:raw}: {reason:raw}): pass JSON/text files saved as UTF-8",
        "файл — не текст в UTF-8 (байт {byte:raw}: {reason:raw}): указывайте JSON/текстовые файлы в UTF-8"),
    "error.file.bad_json": (
        "{path:raw} is not valid JSON (line {line:raw}, column {column:raw}: {reason:raw}): fix the file",
        "{path:raw} — некорректный JSON (строка {line:raw}, столбец {column:raw}: {reason:raw}): исправьте файл"),
    "error.file.bad_json_unnamed": (
        "a file is not valid JSON (line {line:raw}, column {column:raw}: {reason:raw}): fix the file",
        "файл — некорректный JSON (строка {line:raw}, столбец {column:raw}: {reason:raw}): исправьте файл"),
    "error.file.bad_yaml": ("{path:raw} is not valid YAML ({reason:raw}): fix the file",
                            "{path:raw} — некорректный YAML ({reason:raw}): исправьте файл"),
    "error.file.no_space": (
        "no space left on the device to write {path:raw}: free disk space or choose another folder",
        "на устройстве нет места для записи {path:raw}: освободите место или выберите другую папку"),
    "error.file.read_only": (
        "{path:raw} is on a read-only file system: choose a writable folder",
        "{path:raw} находится в файловой системе только для чтения: выберите папку, доступную для записи"),
    "error.file.os": ("cannot use {path:raw}: {reason:raw}: check the path and its permissions",
                      "не удаётся использовать {path:raw}: {reason:raw}: проверьте путь и права доступа"),
    "error.file.os_unnamed": ("a file operation failed: {reason:raw}: check the paths given and their permissions",
                              "файловая операция не удалась: {reason:raw}: проверьте указанные пути и права доступа"),
    "error.file.out_folder_missing": (
        "the folder of {path:raw} does not exist: create it first (mkdir -p {folder:raw}) or choose another path",
        "папки для {path:raw} нет: создайте её (mkdir -p {folder:raw}) или выберите другой путь"),
    "error.cli.internal": (
        "internal error ({error:raw}): this is a bug in gpuwork, not in your input; rerun with "
        "GPUWORK_TRACEBACK=1 to see where, and report it",
        "внутренняя ошибка ({error:raw}): это ошибка в gpuwork, а не в ваших данных; запустите снова с "
        "GPUWORK_TRACEBACK=1, чтобы увидеть место, и сообщите о ней"),
    "error.model.hub_not_cached": (
        "'{hub_id:raw}' is not in the local Hugging Face cache and the Hub cannot be reached (offline, or no "
        "connection): download its config.json and pass its path",
        "'{hub_id:raw}' нет в локальном кэше Hugging Face, а Hub недоступен (офлайн или нет соединения): скачайте "
        "её config.json и укажите путь к нему"),
    "error.trace.too_many_layers": (
        "{model:raw} has {layers:int} layers; trace runs every layer under fake tensors (about a second each) and "
        "takes at most {limit:int}: use `gpuwork estimate` for this model",
        "в {model:raw} {layers:int} слоёв; trace прогоняет каждый слой на фиктивных тензорах (около секунды на слой) "
        "и принимает не больше {limit:int}: для этой модели используйте `gpuwork estimate`"),
}
