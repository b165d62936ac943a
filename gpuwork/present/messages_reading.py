"""Catalog entries (code -> (English, Russian)) for files gpuwork will not read (``gpuwork.facts.reading``).

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Each line names the file, what is wrong and the fix.
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
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
    "error.data.document_too_long": (
        "{path:raw}: document {line:int} is {size_mib:n1} MiB, more than the {limit_mib:n0} MiB gpuwork tokenizes "
        "as one document: split it into several lines (.jsonl) or files (.txt)",
        "{path:raw}: документ {line:int} занимает {size_mib:n1} МиБ, больше {limit_mib:n0} МиБ, которые gpuwork "
        "токенизирует как один документ: разбейте его на несколько строк (.jsonl) или файлов (.txt)"),
    "error.heldout.not_a_document": (
        "{path:raw} holds {kind:raw}, not a held-out document (an object with a list \"sets\"): pass the "
        "held-out file itself",
        "в {path:raw} — {kind:raw}, а не документ отложенной выборки (объект со списком \"sets\"): укажите "
        "сам файл отложенной выборки"),
    "error.data.tokenizer_not_json": (
        "{path:raw} is a file, not a tokenizer: pass a tokenizer folder or its tokenizer.json",
        "{path:raw} — файл, но не токенизатор: укажите папку токенизатора или её tokenizer.json"),
    # what a path turned out to be (error.read.not_regular)
    "filetype.fifo": ("a named pipe (FIFO)", "именованный канал (FIFO)"),
    "filetype.char_device": ("a character device", "символьное устройство"),
    "filetype.block_device": ("a block device (a disk)", "блочное устройство (диск)"),
    "filetype.socket": ("a socket", "сокет"),
    "filetype.special": ("a special file", "специальный файл"),
    # the kinds of file gpuwork reads, each with its own size cap (gpuwork.facts.reading.FileKind)
    "filekind.config": ("training config", "конфиг обучения"),
    "filekind.plan": ("plan file", "файл плана"),
    "filekind.model_config": ("model config.json", "config.json модели"),
    "filekind.table": ("data table (CSV)", "таблица данных (CSV)"),
    "filekind.record": ("trial record", "запись пробного запуска"),
    "filekind.text_data": ("text data (.txt, .jsonl)", "текстовые данные (.txt, .jsonl)"),
    "filekind.tokenizer": ("tokenizer.json", "tokenizer.json"),
}
