"""Catalog entries (code -> (English, Russian)) for trial record files: the steps file beside a record and the
ranges every number of a record is checked against when it is read (``gpuwork.measure.record``).

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there. Each line names the file or field, what is wrong and the fix.
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
    "error.trial.record_value": (
        "{field:raw} = {value:raw} is not a figure a trial can measure (it must lie between {low:raw} and "
        "{high:raw}, in {unit:@recordunit}): the record is damaged or was edited; run the trial again or correct "
        "this field",
        "{field:raw} = {value:raw} — такого значения пробный запуск дать не может (допустимо от {low:raw} до "
        "{high:raw}, единицы: {unit:@recordunit}): запись повреждена или изменена вручную; повторите пробный "
        "запуск или исправьте это поле"),
    "error.trial.record_whole": (
        "{field:raw} = {value:raw} must be a whole number from {low:raw} to {high:raw} ({unit:@recordunit}): "
        "the record is damaged or was edited; run the trial again or correct this field",
        "{field:raw} = {value:raw}: нужно целое число от {low:raw} до {high:raw} (единицы: {unit:@recordunit}); "
        "запись повреждена или изменена вручную; повторите пробный запуск или исправьте это поле"),
    "error.trial.record_steps_elsewhere": (
        "this record keeps its steps in the file {file:raw} beside it: read the record from its file "
        "(TrialRecord.from_json(Path(...))), not from its text alone",
        "шаги этой записи лежат рядом с ней в файле {file:raw}: читайте запись из её файла "
        "(TrialRecord.from_json(Path(...))), а не только её текст"),
    "error.trial.record_steps_name": (
        "{path:raw} names its steps file {name:raw}, which is not a file name in the record's own folder: "
        "the record is damaged or was edited; run the trial again",
        "{path:raw} называет файлом шагов {name:raw} — это не имя файла в папке самой записи: запись повреждена "
        "или изменена вручную; повторите пробный запуск"),
    "error.trial.record_steps_missing": (
        "{path:raw} keeps its steps in {steps:raw}, which does not exist: copy the record together with its "
        ".steps.jsonl file",
        "шаги записи {path:raw} лежат в {steps:raw}, а этого файла нет: копируйте запись вместе с её файлом "
        ".steps.jsonl"),
    "error.trial.record_steps_line": (
        "{path:raw}, line {line:int}, is not a step of a trial record ({detail:raw}): the file is damaged; "
        "run the trial again",
        "{path:raw}, строка {line:int}, — не шаг записи пробного запуска ({detail:raw}): файл повреждён; "
        "повторите пробный запуск"),
    "error.trial.record_steps_short": (
        "{path:raw} holds {found:int} steps, fewer than the {counted:int} its record counts: the file was cut "
        "short or swapped; copy the record together with its own .steps.jsonl file",
        "в {path:raw} шагов: {found:int}, меньше, чем {counted:int} по счёту записи: файл обрезан или подменён; "
        "копируйте запись вместе с её собственным файлом .steps.jsonl"),
    "error.trial.record_steps_ranks": (
        "{path:raw}: not every step has the figures of rank {rank:int}: the file is damaged; run the trial again",
        "{path:raw}: не у каждого шага есть значения процесса {rank:int}: файл повреждён; повторите пробный "
        "запуск"),
    "recordunit.s": ("seconds", "секунды"),
    "recordunit.bytes": ("bytes", "байты"),
    "recordunit.tokens": ("tokens", "токены"),
    "recordunit.tokens_s": ("tokens per second", "токены в секунду"),
    "recordunit.share": ("a fraction of 1", "доля единицы"),
    "recordunit.loss": ("loss units (NaN and infinity allowed)", "единицы потерь (NaN и бесконечность допустимы)"),
    "recordunit.count": ("a count", "штуки"),
    "recordunit.number": ("a plain number", "просто число"),
}
