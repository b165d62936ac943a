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
}
