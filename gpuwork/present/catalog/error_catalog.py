"""Catalog entries "error.catalog.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "error.catalog"

ENTRIES: dict[str, tuple[str, str]] = {
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
    "error.catalog.unit.tf32_dense_tflops": (
        "in dense TFLOPS (leave empty when the GPU has no TF32 tensor cores), e.g. 494.7",
        "в TFLOPS без разреженности (dense; оставьте пустым, если у GPU нет тензорных ядер TF32), например 494.7"),
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
    "error.catalog.bridge_gpus": (
        "{value:raw} for {gpu_id:raw} is not a count of cards from {low:raw} to {high:raw} (write how many cards one "
        "NVLink bridge joins: 2 for a 2-way bridge, 4 for a 4-way one; leave it empty for a card without a bridge)",
        "{value:raw} для {gpu_id:raw} — не число карт от {low:raw} до {high:raw} (укажите, сколько карт соединяет "
        "один мост NVLink: 2 для двухстороннего моста, 4 для четырёхстороннего; для карты без моста оставьте "
        "пустым)"),
    "error.catalog.bridge_without_link": (
        "{value:raw} for {gpu_id:raw}, whose link is {link:raw}: a bridge's card count needs link nvlink_bridge "
        "(set link to nvlink_bridge, or leave nvlink_bridge_gpus empty)",
        "{value:raw} для {gpu_id:raw} со связью {link:raw}: число карт моста задаётся только при связи "
        "nvlink_bridge (укажите link nvlink_bridge или оставьте nvlink_bridge_gpus пустым)"),
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
    "error.catalog.too_small": ("{value:raw} is below any real value: use at least {minimum:g} {unit}",
                                "{value:raw} — меньше любого реального значения: укажите не меньше {minimum:g} {unit}"),
    "error.catalog.not_csv": ("not a CSV row ({reason:raw}): check that this is the CSV table itself",
                              "не строка CSV ({reason:raw}): проверьте, что это сама CSV-таблица"),
    "error.catalog.date_range": (
        "{value:raw} is not a day a price can be quoted as of: use a date from {first:raw} to {last:raw}",
        "{value:raw} — не дата, на которую может быть указана цена: укажите дату от {first:raw} до {last:raw}"),
    "error.catalog.too_many_offers": (
        "{file:raw} line {line:raw}: more than {limit:int} offers, beyond what gpuwork ranks in reasonable time: keep "
        "the offers you would rent (filter by card, region or price) in a smaller file",
        "{file:raw}, строка {line:raw}: больше {limit:int} предложений — столько gpuwork не ранжирует за разумное "
        "время: оставьте в файле поменьше только те предложения, которые готовы арендовать (по карте, региону или "
        "цене)"),
    "error.catalog.no_offers": (
        "{path:raw} has a header but no offers: add rows to {file:raw}, or leave out --catalog to use the bundled "
        "offers",
        "в {path:raw} есть заголовок, но нет предложений: добавьте строки в {file:raw} или уберите --catalog, чтобы "
        "использовать встроенные предложения"),
    # -- catalog rows (gpuwork.facts.catalog) -------------------------------------------------------------------
    "error.catalog.too_large": (
        "{value:raw} is larger than any real value: use at most {maximum:g} {unit}",
        "{value:raw} больше любого реального значения: не больше {maximum:g} {unit}"),
}
