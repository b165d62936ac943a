"""Catalog entries (code -> (English, Russian)) for errors: what is wrong with an input and how to fix it.

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there.
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the command line: the error line, argparse's own phrases, flag values ------------------------------------
    "error.cli.line": ("gpuwork: error: {message}", "gpuwork: ошибка: {message}"),
    "error.args.see_help": ("{message} (see `{prog:raw} --help`)", "{message} (см. `{prog:raw} --help`)"),
    "error.args.argument": ("argument {arg:raw}: {message}", "аргумент {arg:raw}: {message}"),
    "error.args.invalid_value": ("invalid {kind:@argkind} value: {value:raw}",
                                 "недопустимое значение {value:raw} (ожидается {kind:@argkind})"),
    "argkind.int": ("int", "целое число"),  # argparse names the flag's type as Python does
    "argkind.float": ("float", "число"),
    "error.args.invalid_choice": ("invalid choice: {value:raw} (choose from {choices:raw})",
                                  "нет такого варианта: {value:raw} (выберите из {choices:raw})"),
    "error.args.expected_one": ("expected one argument", "нужно одно значение"),
    "error.args.unrecognized": ("unrecognized arguments: {value:raw}", "неизвестные аргументы: {value:raw}"),
    "error.args.required": ("the following arguments are required: {value:raw}",
                            "не хватает обязательных аргументов: {value:raw}"),
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
    # -- invalid plans (TrainPlan validation); values are shown as the user typed them -------------------------
    "error.plan.model": (
        "model must be a preset name, a config.json path or a hub id; got {value:raw}. Run `gpuwork models` to "
        "list presets.",
        "model — это имя пресета, путь к config.json или id на Hugging Face Hub; получено {value:raw}. Список "
        "пресетов: `gpuwork models`."),
    "error.plan.bool": ("{field:raw} must be true or false; got {value:raw}",
                        "{field:raw} — да или нет (true/false); получено {value:raw}"),
    "error.plan.lora_r": (
        "lora_r={value:raw} is not a valid LoRA rank: use a whole number >= 1 (8, 16, 32 and 64 are common)",
        "lora_r={value:raw} — не ранг LoRA: нужно целое число ≥ 1 (обычно 8, 16, 32 или 64)"),
    "error.plan.lora_dropout": ("lora_dropout={value:raw} must be below 1 (0.05 is common)",
                                "lora_dropout={value:raw} должен быть меньше 1 (обычно 0,05)"),
    "error.plan.lengths": (
        "lengths={value:raw} is not understood: use fixed, packed, or a histogram such as 128:40,512:50,2048:10 "
        "(length:count)",
        "lengths={value:raw} не распознано: укажите fixed, packed или гистограмму, например 128:40,512:50,2048:10 "
        "(длина:количество)"),
    "error.plan.lengths_bin": (
        "lengths: {length:raw}:{weight:raw} is not a length:count pair (a whole length of at least 1, a count above 0)",
        "lengths: {length:raw}:{weight:raw} — не пара длина:количество (целая длина не меньше 1, количество больше 0)"),
    "error.plan.eval_fraction": (
        "eval_fraction={value:raw} is a share of training time: use a value in [0, 1), e.g. 0.05",
        "eval_fraction={value:raw} — доля времени обучения: нужно значение из [0, 1), например 0,05"),
    "error.plan.sharding_needs_gpus": (
        "sharding='{sharding:raw}' needs gpus >= 2: set gpus or use sharding='ddp'",
        "sharding='{sharding:raw}' требует gpus ≥ 2: укажите число GPU или выберите sharding='ddp'"),
    "error.plan.offload_params": (
        "offload_params needs parameter sharding: use sharding='zero3' or 'fsdp' (with gpus >= 2), or turn "
        "offload_params off",
        "offload_params требует шардирования параметров: выберите sharding='zero3' или 'fsdp' (при gpus ≥ 2) "
        "или выключите offload_params"),
    "error.plan.offload_optimizer": (
        "offload_optimizer needs ZeRO or FSDP: use sharding='zero1', 'zero2', 'zero3' or 'fsdp' (with gpus >= 2), "
        "or turn offload_optimizer off",
        "offload_optimizer требует ZeRO или FSDP: выберите sharding='zero1', 'zero2', 'zero3' или 'fsdp' "
        "(при gpus ≥ 2) или выключите offload_optimizer"),
    "error.plan.qlora_offload": ("method='qlora' keeps 4-bit weights on the GPU: turn offload_params off",
                                 "method='qlora' держит 4-битные веса на GPU: выключите offload_params"),
    "error.plan.not_object": ("a plan must be a JSON object of fields; got {kind:raw}",
                              "план — это JSON-объект с полями; получено {kind:raw}"),
    "error.plan.unknown_field_close": ("unknown plan field '{field:raw}'. Did you mean '{close:raw}'?",
                                       "неизвестное поле плана '{field:raw}'. Может быть, '{close:raw}'?"),
    "error.plan.unknown_field": ("unknown plan field '{field:raw}'. Known fields: {known:raw}.",
                                 "неизвестное поле плана '{field:raw}'. Известные поля: {known:raw}."),
    "error.plan.unknown_choice_close": (
        "{field:raw}={value:raw} is not known; allowed: {allowed:raw} (did you mean '{close:raw}'?)",
        "{field:raw}={value:raw} — неизвестное значение; допустимы: {allowed:raw} (может быть, '{close:raw}'?)"),
    "error.plan.unknown_choice": (
        "{field:raw}={value:raw} is not known; allowed: {allowed:raw} (use one of: {allowed:raw})",
        "{field:raw}={value:raw} — неизвестное значение; выберите одно из: {allowed:raw}"),
    "error.plan.choice": ("{field:raw}={value:raw} must be one of: {allowed:raw}",
                          "{field:raw}={value:raw}: нужно одно из значений {allowed:raw}"),
    "error.plan.targets_type": (
        "lora_targets={value:raw} must be module names like ['q_proj', 'v_proj'] or 'all-linear'",
        "lora_targets={value:raw}: нужны имена модулей, например ['q_proj', 'v_proj'], или 'all-linear'"),
    "error.plan.targets_empty": (
        "lora_targets is empty: name modules like q_proj,v_proj or use 'all-linear'",
        "lora_targets пуст: перечислите модули, например q_proj,v_proj, или укажите 'all-linear'"),
    "error.plan.whole_number": ("{field:raw}={value:raw} must be a whole number >= {minimum:raw}",
                                "{field:raw}={value:raw}: нужно целое число ≥ {minimum:raw}"),
    "error.plan.too_small": ("{field:raw}={value:raw} is too small: use a whole number >= {minimum:raw}",
                             "{field:raw}={value:raw} — слишком мало: нужно целое число ≥ {minimum:raw}"),
    "error.plan.number": ("{field:raw}={value:raw} must be a number", "{field:raw}={value:raw}: нужно число"),
    "error.plan.not_finite": ("{field:raw}={value:raw} must be a finite number",
                              "{field:raw}={value:raw}: нужно конечное число"),
    "error.plan.above": ("{field:raw}={value:raw} is out of range: use a number > {minimum:raw}",
                         "{field:raw}={value:raw} вне допустимого диапазона: нужно число > {minimum:raw}"),
    "error.plan.at_least": ("{field:raw}={value:raw} is out of range: use a number >= {minimum:raw}",
                            "{field:raw}={value:raw} вне допустимого диапазона: нужно число ≥ {minimum:raw}"),

    # -- data files (gpus.csv, catalog.csv, rates.csv): file, line and field as they are, then the problem -------
    "error.catalog.row": ("{file:raw} line {line:raw}, field '{field:raw}': {problem}",
                          "{file:raw}, строка {line:raw}, поле '{field:raw}': {problem}"),
    "error.catalog.line": ("{file:raw} line {line:raw}: {problem}", "{file:raw}, строка {line:raw}: {problem}"),
    "error.catalog.file_missing": (
        "{file:raw}: file not found at {path:raw} (pass the path of an existing CSV file)",
        "{file:raw}: файл не найден по пути {path:raw} (укажите путь к существующему CSV-файлу)"),
    "error.catalog.file_missing_env": (
        "{file:raw}: file not found at {path:raw} (pass the path of an existing CSV file, or unset {env:raw} "
        "to use the bundled data)",
        "{file:raw}: файл не найден по пути {path:raw} (укажите путь к существующему CSV-файлу или уберите "
        "переменную {env:raw}, чтобы взять встроенные данные)"),
    "error.catalog.not_utf8": (
        "{file:raw}: not UTF-8 text ({reason:raw} at byte {byte:raw}); save the file as UTF-8 CSV",
        "{file:raw}: текст не в кодировке UTF-8 ({reason:raw}, байт {byte:raw}); сохраните файл как CSV "
        "в UTF-8"),
    "error.catalog.unreadable": ("{file:raw}: cannot read {path:raw}: {reason:raw}",
                                 "{file:raw}: не удаётся прочитать {path:raw}: {reason:raw}"),
    "error.catalog.no_header": (
        "the header row is missing (the first line must name the columns: {expected:raw})",
        "нет строки заголовка (в первой строке должны быть названия столбцов: {expected:raw})"),
    "error.catalog.column_twice": ("the column appears twice in the header (keep one)",
                                   "столбец встречается в заголовке дважды (оставьте один)"),
    "error.catalog.column_misnamed": (
        "column is missing from the header (rename column '{close:raw}' to '{column:raw}'); expected columns: "
        "{expected:raw}",
        "столбца нет в заголовке (переименуйте столбец '{close:raw}' в '{column:raw}'); ожидаемые столбцы: "
        "{expected:raw}"),
    "error.catalog.column_missing": (
        "column is missing from the header (add a '{column:raw}' column); expected columns: {expected:raw}",
        "столбца нет в заголовке (добавьте столбец '{column:raw}'); ожидаемые столбцы: {expected:raw}"),
    "error.catalog.row_length": (
        "has {values} values but the header has {columns} columns (quote values that contain commas, and leave "
        "optional values empty rather than dropping them)",
        "в ней {values} {values:pl:значение|значения|значений}, а в заголовке {columns} "
        "{columns:pl:столбец|столбца|столбцов} (значения с запятыми возьмите в кавычки, а необязательные "
        "оставьте пустыми, но не пропускайте)"),
    "error.catalog.empty": ("is empty (give a value, e.g. {example})",
                            "пусто (укажите значение, например {example})"),
    "error.catalog.example.compute_capability": ("'9.0' or 'gfx942'", "'9.0' или 'gfx942'"),
    "error.catalog.number_empty": ("is empty (give a number above 0 {unit})",
                                   "пусто (укажите число больше 0 {unit})"),
    "error.catalog.not_number": (
        "{value:raw} is not a number (give a number above 0 {unit}, without units or currency signs)",
        "{value:raw} — не число (укажите число больше 0 {unit}, без единиц измерения и знаков валют)"),
    "error.catalog.not_positive": ("{value:raw} must be a number above 0 {unit}",
                                   "{value:raw}: нужно число больше 0 {unit}"),
    "error.catalog.integer_empty": ("is empty (give a whole number above 0 {unit})",
                                    "пусто (укажите целое число больше 0 {unit})"),
    "error.catalog.not_integer": (
        "{value:raw} is not a whole number (give a whole number above 0 {unit})",
        "{value:raw} — не целое число (укажите целое число больше 0 {unit})"),
    "error.catalog.integer_not_positive": ("{value:raw} must be a whole number above 0 {unit}",
                                           "{value:raw}: нужно целое число больше 0 {unit}"),
    # what a number column holds ({unit} above); examples are written as the CSV wants them (2.49, not 2,49)
    "error.catalog.unit.memory_gb": ("in vendor GB, e.g. 80", "в ГБ производителя, например 80"),
    "error.catalog.unit.mem_bw_gbs": ("in GB/s, e.g. 3350", "в ГБ/с, например 3350"),
    "error.catalog.unit.bf16_dense_tflops": ("in dense TFLOPS, e.g. 989",
                                             "в TFLOPS без разреженности (dense), например 989"),
    "error.catalog.unit.fp16_dense_tflops": (
        "in dense TFLOPS with FP32 accumulate, e.g. 989",
        "в TFLOPS без разреженности (dense) с накоплением в FP32, например 989"),
    "error.catalog.unit.fp8_dense_tflops": (
        "in dense TFLOPS (leave empty when the GPU has no FP8)",
        "в TFLOPS без разреженности (dense; оставьте пустым, если у GPU нет FP8)"),
    "error.catalog.unit.fp32_tflops": ("in TFLOPS, e.g. 67", "в TFLOPS, например 67"),
    "error.catalog.unit.link_bw_gbs_unidir": ("in GB/s per direction, e.g. 450",
                                              "в ГБ/с в одну сторону, например 450"),
    "error.catalog.unit.memory_total_mib": ("in MiB as nvidia-smi prints it, e.g. 81559",
                                            "в МиБ, как их выводит nvidia-smi, например 81559"),
    "error.catalog.unit.price_per_gpu_hour_usd": ("in USD per GPU-hour, e.g. 2.49",
                                                  "в USD за GPU-час, например 2.49"),
    "error.catalog.unit.min_rental_hours": ("in hours, e.g. 1 for on-demand, 720 for a month",
                                            "в часах, например 1 для почасовой аренды, 720 для месяца"),
    "error.catalog.unit.pcie_gen": ("(PCIe generation, e.g. 5)", "(поколение PCIe, например 5)"),
    "error.catalog.unit.tdp_w": ("in watts, e.g. 700 (one figure, not a range)",
                                 "в ваттах, например 700 (одно число, не диапазон)"),
    "error.catalog.unit.gpus_per_node": ("(GPUs in one node, e.g. 8)", "(GPU в одном узле, например 8)"),
    "error.catalog.not_one_of": ("{value:raw} is not one of {choices:raw}",
                                 "{value:raw} — не из списка: {choices:raw}"),
    "error.catalog.choice": ("{value:raw} is not one of {choices:raw} ({advice})",
                             "{value:raw} — не из списка: {choices:raw} ({advice})"),
    "error.catalog.choice_empty": ("is empty (use one of {choices:raw})",
                                   "пусто (укажите одно из значений: {choices:raw})"),
    "error.catalog.choice_empty_hint": ("is empty (use one of {choices:raw}; {hint})",
                                        "пусто (укажите одно из значений: {choices:raw}; {hint})"),
    # advice after a value that is not one of the choices: a fix for a common spelling, else the closest value
    "error.catalog.advice.did_you_mean": ("did you mean '{close:raw}'?", "может быть, '{close:raw}'?"),
    "error.catalog.advice.spell_exactly": (
        "use one of the values listed, spelled exactly",
        "выберите одно из перечисленных значений и напишите его точно так же"),
    "error.catalog.hint.interruptible": ("use 'interruptible' for spot/preemptible offers",
                                         "для предложений spot/preemptible укажите 'interruptible'"),
    "error.catalog.hint.on_demand": ("write it 'on-demand'", "пишется 'on-demand'"),
    "error.catalog.hint.reserved": ("use 'reserved' and put the commitment in min_rental_hours",
                                    "укажите 'reserved', а срок обязательства — в min_rental_hours"),
    "error.catalog.hint.datacenter_class": ("map datacenter_* classes to 'server'",
                                            "классы datacenter_* записываются как 'server'"),
    "error.catalog.hint.server": ("use 'server' for data-centre parts", "для серверных GPU укажите 'server'"),
    "error.catalog.hint.nvlink": (
        "say which: nvlink_bridge (bridged cards), nvlink_switch (NVSwitch baseboard) or nvlink_switch_rack "
        "(NVL72 rack)",
        "уточните, какой: nvlink_bridge (карты с мостом), nvlink_switch (плата с NVSwitch) или "
        "nvlink_switch_rack (стойка NVL72)"),
    "error.catalog.hint.pcie_or_bridge": (
        "record the link the GPU can have (nvlink_bridge); offers without a bridge say 'pcie'",
        "запишите связь, которая у GPU может быть (nvlink_bridge); у предложений без моста указывается 'pcie'"),
    "error.catalog.hint.nvswitch": ("use 'nvlink_switch'", "укажите 'nvlink_switch'"),
    "error.catalog.hint.xgmi": ("use 'xgmi'", "укажите 'xgmi'"),
    "error.catalog.hint.infiniband": ("give the generation: 'ib-hdr-200g' or 'ib-ndr-400g'",
                                      "укажите поколение: 'ib-hdr-200g' или 'ib-ndr-400g'"),
    "error.catalog.hint.ethernet": ("give the speed: 'ethernet-25g' or 'ethernet-100g'",
                                    "укажите скорость: 'ethernet-25g' или 'ethernet-100g'"),
    "error.catalog.hint.no_network": ("use 'none' for single-node offers",
                                      "для предложений из одного узла укажите 'none'"),
    "error.catalog.date_empty": (
        "is empty (give the date the price was read as YYYY-MM-DD, e.g. 2026-09-20)",
        "пусто (укажите дату, когда была взята цена, в виде ГГГГ-ММ-ДД, например 2026-09-20)"),
    "error.catalog.not_date": ("{value:raw} is not a date written YYYY-MM-DD (e.g. 2026-09-20)",
                               "{value:raw} — не дата в виде ГГГГ-ММ-ДД (например 2026-09-20)"),
    "error.catalog.gpu_id_format": (
        "{value:raw} must use only lower-case letters, digits and underscores (e.g. 'h100_sxm')",
        "{value:raw}: допустимы только строчные латинские буквы, цифры и подчёркивания (например 'h100_sxm')"),
    "error.catalog.kernel_family_format": (
        "{value:raw} must be a kernel family id of lower-case letters, digits and underscores (e.g. 'h100', 'a100')",
        "{value:raw}: семейство ядер задаётся строчными латинскими буквами, цифрами и подчёркиваниями "
        "(например 'h100', 'a100')"),
    "error.catalog.compute_capability": (
        "{value:raw} is neither a CUDA compute capability like '8.9' nor an AMD target like 'gfx942'",
        "{value:raw} — ни compute capability CUDA вида '8.9', ни целевая архитектура AMD вида 'gfx942'"),
    "error.catalog.status": ("{value:raw} is not one of {choices:list}",
                             "{value:raw} — не из списка: {choices:list}"),
    "error.catalog.status_choice": ("{status:raw} ({status:@error.catalog.status_meaning})",
                                    "{status:raw} ({status:@error.catalog.status_meaning})"),
    "error.catalog.status_meaning.V": ("vendor-confirmed", "подтверждено производителем"),
    "error.catalog.status_meaning.D": ("derived from a vendor figure", "выведено из данных производителя"),
    "error.catalog.status_meaning.S": ("secondary source only", "только вторичный источник"),
    "error.catalog.no_source": ("names no source (list source ids separated by ';', e.g. 'S5;S4')",
                                "источник не указан (перечислите id источников через ';', например 'S5;S4')"),
    "error.catalog.total_source": (
        "{value:raw} is not one of {choices:raw} (say which tool printed memory_total_mib, or 'estimated' for "
        "memory_gb x 1024)",
        "{value:raw} — не из списка: {choices:raw} (укажите, какая утилита вывела memory_total_mib, или "
        "'estimated' для memory_gb × 1024)"),
    "error.catalog.total_mib": (
        "{mib:raw} MiB does not fit memory_gb={memory_gb:raw} (expected {low:n0}-{high:n0} MiB; give MiB as "
        "nvidia-smi prints them, not GB)",
        "{mib:raw} МиБ не сходится с memory_gb={memory_gb:raw} (ожидается {low:n0}–{high:n0} МиБ; укажите МиБ "
        "так, как их выводит nvidia-smi, а не ГБ)"),
    "error.catalog.gpu_duplicate": (
        "{value:raw} is a duplicate of line {line:raw} (each GPU model appears once; rename or delete one row)",
        "{value:raw} повторяет строку {line:raw} (каждая модель GPU записывается один раз; переименуйте или "
        "удалите одну из строк)"),
    "error.catalog.gpu_near_duplicate": (
        "{value:raw} differs from {other:raw} (line {line:raw}) only in punctuation, so names would be "
        "ambiguous; rename one",
        "{value:raw} отличается от {other:raw} (строка {line:raw}) только знаками препинания, и имена были бы "
        "неоднозначны; переименуйте один из них"),
    "error.catalog.no_gpus": ("{file:raw}: has a header but no GPU rows",
                              "{file:raw}: есть заголовок, но нет ни одной строки с GPU"),
    "error.catalog.offer_gpu_close": (
        "unknown GPU {value:raw}: did you mean {ids:raw}? (use a gpu_id from gpus.csv)",
        "неизвестный GPU {value:raw}: может быть, {ids:raw}? (укажите gpu_id из gpus.csv)"),
    "error.catalog.offer_gpu_unknown": (
        "unknown GPU {value:raw}: known GPUs are {known:raw} (use a gpu_id from gpus.csv)",
        "неизвестный GPU {value:raw}; известные GPU: {known:raw} (укажите gpu_id из gpus.csv)"),
    "error.catalog.link_unavailable": (
        "{value:raw} is not available on {gpu_id:raw} (it has '{has:raw}'); use '{has:raw}' or 'pcie'",
        "связь {value:raw} недоступна на {gpu_id:raw} (у него есть '{has:raw}'); укажите '{has:raw}' "
        "или 'pcie'"),
    "error.catalog.offer_duplicate": (
        "{value:raw} is a duplicate of line {line:raw} (offer ids must be unique)",
        "{value:raw} повторяет строку {line:raw} (id предложений должны быть разными)"),
    "error.catalog.offer_gpu": ("offer {offer:raw}: gpu_id {gpu_id:raw} does not match gpu {gpu:raw}",
                                "предложение {offer:raw}: gpu_id {gpu_id:raw} не совпадает с gpu {gpu:raw}"),
    "error.catalog.gpu_type": ("GPU must be given as an id or name string; got {value:raw}",
                               "GPU задаётся строкой с id или именем; получено {value:raw}"),
    "error.catalog.gpu_ambiguous": ("GPU {value:raw} is ambiguous: it matches {ids:raw} (use the gpu_id)",
                                    "GPU {value:raw} неоднозначен: подходят {ids:raw} (укажите gpu_id)"),
    "error.catalog.gpu_close": (
        "unknown GPU {value:raw}: did you mean {ids:raw}? (use a gpu_id or display name from gpus.csv)",
        "неизвестный GPU {value:raw}: может быть, {ids:raw}? (укажите gpu_id или display_name из gpus.csv)"),
    "error.catalog.gpu_unknown": (
        "unknown GPU {value:raw}: known GPUs are {known:raw} (use a gpu_id or display name from gpus.csv)",
        "неизвестный GPU {value:raw}; известные GPU: {known:raw} (укажите gpu_id или display_name "
        "из gpus.csv)"),
    "error.catalog.filter_choice": (
        "filter_offers: {field:raw} {value:raw} is not one of {choices:raw} ({advice})",
        "filter_offers: {field:raw} {value:raw} — не из списка: {choices:raw} ({advice})"),
    "error.catalog.filter_limit": (
        "filter_offers: {field:raw} must be a number of at least 0; got {value:raw}",
        "filter_offers: {field:raw} — нужно число не меньше 0; получено {value:raw}"),
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
    "error.time.mfu": ("mfu={value:raw} must be a number in (0, 1], e.g. 0.35",
                       "mfu={value:raw}: нужно число из (0, 1], например 0,35"),
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
    # --check (plan, offers, advise) on stderr, after the report: why the exit status is 1
    "cli.check.no_fit": ("gpuwork: --check: nothing fits (exit status 1)",
                         "gpuwork: --check: ничего не подходит (код завершения 1)"),
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
}
