"""Catalog entries (code -> (English, Russian)) for the validation layer: numbers and sizes people type, files
that cannot be read, incomplete or impossible model configs, and bounds on plans and flags.

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Sections: typed values (``error.input.*``: ``gpuwork.units.parse_*``), command-line
flags (``error.flag.*``), files (``error.file.*``: the CLI's one handler), model configs (``error.config.*``),
plan bounds (``error.plan.too_large``, ``warning.*``).
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
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

    # -- plan bounds (gpuwork.plan.TrainPlan) -----------------------------------------------------------------------
    "error.plan.too_large": (
        "{field:raw}={value:raw} is beyond any real run: use a whole number <= {maximum:int} ({why:@bound})",
        "{field:raw}={value:raw} — за пределами любого реального запуска: укажите целое число <= {maximum:int} "
        "({why:@bound})"),
    "error.plan.number_too_large": (
        "{field:raw}={value:raw} is beyond any real run: use a number <= {maximum:g} ({why:@bound})",
        "{field:raw}={value:raw} — за пределами любого реального запуска: укажите число <= {maximum:g} "
        "({why:@bound})"),
    "bound.seq_len": ("16 M tokens, longer than any model's context", "16 млн токенов, длиннее контекста любой модели"),
    "bound.batch_size": ("sequences per GPU per step", "последовательностей на GPU за шаг"),
    "bound.grad_accum": ("micro-batches per optimizer step", "микробатчей на шаг оптимизатора"),
    "bound.gpus": ("the largest clusters", "самые большие кластеры"),
    "bound.layers": ("blocks in one model", "блоков в одной модели"),
    "bound.lora_r": ("adapter rank", "ранг адаптера"),
    "bound.lora_alpha": ("LoRA scale numerator", "числитель масштаба LoRA"),
    "bound.dataset_tokens": ("a quadrillion tokens", "квадриллион токенов"),
    "bound.dataset_bytes": ("an exabyte", "эксабайт"),
    "bound.epochs": ("passes over the data", "проходов по данным"),
    "bound.checkpoint_every_steps": ("optimizer steps", "шагов оптимизатора"),
    "bound.checkpoints_kept": ("checkpoints on one disk", "контрольных точек на одном диске"),

    # -- command-line flags (gpuwork.cli.args: one check per flag, where it is parsed) -----------------------------
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
    "cli.accuracy.wrote": ("wrote {path:raw}", "записано: {path:raw}"),

    # -- model configs (gpuwork.facts.model) ----------------------------------------------------------------------
    "error.config.missing_fields": (
        "{name:raw} is an incomplete config.json: it lacks {fields:raw}; copy the model's full config.json "
        "(every field the architecture needs)",
        "{name:raw} — неполный config.json: в нём нет {fields:raw}; скопируйте полный config.json модели "
        "(все поля, нужные архитектуре)"),
    "error.config.not_positive_int": (
        "{name:raw}: {field:raw}={value:raw} must be a whole number >= 1",
        "{name:raw}: {field:raw}={value:raw} — нужно целое число >= 1"),
    "error.config.field_type": (
        "{name:raw}: {field:raw}={value:raw} is not {expected}: fix the config.json",
        "{name:raw}: {field:raw}={value:raw} — нужно {expected}: исправьте config.json"),
    "config.expected.model_type": ("a family name such as \"llama\"", "имя семейства, например \"llama\""),
    "config.expected.architectures": ("a list of class names such as [\"LlamaForCausalLM\"]",
                                      "список имён классов, например [\"LlamaForCausalLM\"]"),
    "error.config.not_count": (
        "{name:raw}: {field:raw}={value:raw} must be a whole number >= 0",
        "{name:raw}: {field:raw}={value:raw} — нужно целое число >= 0"),
    "error.config.experts_per_token": (
        "{name:raw}: {per_token:int} experts per token, but only {experts:int} experts: a token cannot use more "
        "experts than the layer has; fix num_experts_per_tok",
        "{name:raw}: {per_token:int} экспертов на токен, но всего {experts:int} экспертов: токен не может "
        "использовать больше экспертов, чем есть в слое; исправьте num_experts_per_tok"),
    "error.model.hub_not_cached": (
        "'{hub_id:raw}' is not in the local Hugging Face cache and the Hub cannot be reached (offline, or no "
        "connection): download its config.json and pass its path",
        "'{hub_id:raw}' нет в локальном кэше Hugging Face, а Hub недоступен (офлайн или нет соединения): скачайте "
        "её config.json и укажите путь к нему"),
    "error.catalog.too_small": ("{value:raw} is below any real value: use at least {minimum:g} {unit}",
                                "{value:raw} — меньше любого реального значения: укажите не меньше {minimum:g} {unit}"),
    "error.catalog.not_csv": ("not a CSV row ({reason:raw}): check that this is the CSV table itself",
                              "не строка CSV ({reason:raw}): проверьте, что это сама CSV-таблица"),
    "error.catalog.date_range": (
        "{value:raw} is not a day a price can be quoted as of: use a date from {first:raw} to {last:raw}",
        "{value:raw} — не дата, на которую может быть указана цена: укажите дату от {first:raw} до {last:raw}"),
    "error.catalog.no_offers": (
        "{path:raw} has a header but no offers: add rows to {file:raw}, or leave out --catalog to use the bundled "
        "offers",
        "в {path:raw} есть заголовок, но нет предложений: добавьте строки в {file:raw} или уберите --catalog, чтобы "
        "использовать встроенные предложения"),
    "error.trace.too_many_layers": (
        "{model:raw} has {layers:int} layers; trace runs every layer under fake tensors (about a second each) and "
        "takes at most {limit:int}: use `gpuwork estimate` for this model",
        "в {model:raw} {layers:int} слоёв; trace прогоняет каждый слой на фиктивных тензорах (около секунды на слой) "
        "и принимает не больше {limit:int}: для этой модели используйте `gpuwork estimate`"),
    "error.config.too_large": (
        "{name:raw}: {field:raw}={value:raw} is beyond any real model: use at most {maximum:int}",
        "{name:raw}: {field:raw}={value:raw} — больше, чем у любой реальной модели: не больше {maximum:int}"),
    "error.config.heads_by_kv": (
        "{name:raw}: num_attention_heads={heads:int} is not divisible by num_key_value_heads={kv_heads:int}: "
        "key/value heads must divide the attention heads",
        "{name:raw}: num_attention_heads={heads:int} не делится на num_key_value_heads={kv_heads:int}: число "
        "голов ключей/значений должно делить число голов внимания"),
    "error.config.hidden_by_heads": (
        "{name:raw}: hidden_size={hidden:int} is not divisible by num_attention_heads={heads:int}: set head_dim "
        "or fix one of the two",
        "{name:raw}: hidden_size={hidden:int} не делится на num_attention_heads={heads:int}: задайте head_dim "
        "или исправьте одно из двух"),

    # -- catalog rows (gpuwork.facts.catalog) -------------------------------------------------------------------
    "error.catalog.too_large": (
        "{value:raw} is larger than any real value: use at most {maximum:g} {unit}",
        "{value:raw} больше любого реального значения: не больше {maximum:g} {unit}"),
}
