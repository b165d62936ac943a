"""Catalog entries "error.resume.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "error.resume"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- what --resume was given (gpuwork.measure.trial.find_record) ----------------------------------------
    "error.resume.empty": (
        "--resume was given an empty name: give a trial record's path or its run id",
        "--resume получил пустое имя: укажите путь к записи пробного запуска или её идентификатор"),
    "error.resume.is_folder": (
        "{path:raw} is a folder, not a trial record: give the record's .json file in it, or its run id with "
        "--out {path:raw}",
        "{path:raw} — это папка, а не запись пробного запуска: укажите файл .json записи в ней или её "
        "идентификатор вместе с --out {path:raw}"),
    "error.resume.link_loop": (
        "{path:raw} is a symbolic link that leads back to itself: point it at a trial record's .json file",
        "{path:raw} — символическая ссылка, которая ведёт сама на себя: направьте её на файл .json записи "
        "пробного запуска"),
    "error.resume.dangling_link": (
        "{path:raw} is a symbolic link to {target:raw}, which does not exist: point it at a trial record's "
        ".json file",
        "{path:raw} — символическая ссылка на {target:raw}, которого нет: направьте её на файл .json записи "
        "пробного запуска"),
    "error.resume.not_regular": (
        "{path:raw} is not a regular file (a pipe, device or socket): give a trial record's .json file",
        "{path:raw} — не обычный файл (канал, устройство или сокет): укажите файл .json записи пробного "
        "запуска"),
    # -- the checkpoint against its manifest (gpuwork.measure.checkpoint.verify_manifest) --------------------
    "error.resume.no_manifest": (
        "cannot resume from {folder:raw}: it has no manifest.json, so its files cannot be checked against the "
        "digests taken when it was saved (written by an older gpuwork, or removed): start the trial again",
        "продолжить с чекпойнта {folder:raw} нельзя: в нём нет manifest.json, и его файлы не с чем сверить "
        "(записан старой версией gpuwork или файл удалён): запустите пробный запуск заново"),
    "error.resume.manifest_unreadable": (
        "cannot resume from {folder:raw}: manifest.json cannot be read ({detail:raw}): start the trial again",
        "продолжить с чекпойнта {folder:raw} нельзя: manifest.json не читается ({detail:raw}): запустите "
        "пробный запуск заново"),
    "error.resume.manifest_too_big": (
        "cannot resume from {folder:raw}: manifest.json is {size_bytes:int} bytes, over the limit of "
        "{limit_bytes:int} bytes for a manifest: it is not one gpuwork wrote",
        "продолжить с чекпойнта {folder:raw} нельзя: manifest.json занимает {size_bytes:int} байт, больше "
        "предела {limit_bytes:int} байт для манифеста: его записал не gpuwork"),
    "error.resume.manifest_edited": (
        "cannot resume from {folder:raw}: manifest.json was changed after the save (its seal, a SHA-256 of its "
        "content, no longer matches): start the trial again",
        "продолжить с чекпойнта {folder:raw} нельзя: manifest.json изменён после сохранения (его печать, "
        "SHA-256 содержимого, не совпадает): запустите пробный запуск заново"),
    "error.resume.other_run": (
        "cannot resume from {folder:raw}: its manifest belongs to run {found:raw}, not {expected:raw}: the "
        "checkpoint was swapped in from another run",
        "продолжить с чекпойнта {folder:raw} нельзя: его манифест относится к запуску {found:raw}, а не "
        "{expected:raw}: чекпойнт подменён чекпойнтом другого запуска"),
    "error.resume.other_step": (
        "cannot resume from {folder:raw}: its manifest is for step {found:raw}, its trainer_state.json for step "
        "{expected:raw}: the files come from different saves",
        "продолжить с чекпойнта {folder:raw} нельзя: манифест записан для шага {found:raw}, а "
        "trainer_state.json — для шага {expected:raw}: файлы от разных сохранений"),
    "error.resume.file_missing": (
        "cannot resume from {folder:raw}: {file:raw} is missing (the manifest lists it, {size_bytes:int} bytes)",
        "продолжить с чекпойнта {folder:raw} нельзя: нет файла {file:raw} (он есть в манифесте, "
        "{size_bytes:int} байт)"),
    "error.resume.file_extra": (
        "cannot resume from {folder:raw}: {file:raw} is not in its manifest (a file added after the save): "
        "move it out of the checkpoint folder",
        "продолжить с чекпойнта {folder:raw} нельзя: файла {file:raw} нет в манифесте (добавлен после "
        "сохранения): уберите его из папки чекпойнта"),
    "error.resume.file_not_regular": (
        "cannot resume from {folder:raw}: {file:raw} is not a regular file (a link, folder, pipe or device)",
        "продолжить с чекпойнта {folder:raw} нельзя: {file:raw} — не обычный файл (ссылка, папка, канал или "
        "устройство)"),
    "error.resume.file_size": (
        "cannot resume from {folder:raw}: {file:raw} is {size_bytes:int} bytes, the manifest says "
        "{saved_bytes:int} (truncated, extended or replaced)",
        "продолжить с чекпойнта {folder:raw} нельзя: {file:raw} занимает {size_bytes:int} байт, а в манифесте "
        "{saved_bytes:int} (обрезан, дописан или заменён)"),
    "error.resume.file_digest": (
        "cannot resume from {folder:raw}: {file:raw} is not the file saved (SHA-256 {now:raw}… now, "
        "{saved:raw}… at the save): damaged, or swapped in from another run or step",
        "продолжить с чекпойнта {folder:raw} нельзя: {file:raw} — не тот файл, что был сохранён (SHA-256 "
        "{now:raw}… сейчас, {saved:raw}… при сохранении): повреждён или подменён файлом другого запуска или шага"),
    "error.resume.state_differs": (
        "cannot resume from {folder:raw}: after loading, {count} {count:pl:entry differs|entries differ} from "
        "the digests taken at the save (first: {first:raw})",
        "продолжить с чекпойнта {folder:raw} нельзя: после загрузки {count} "
        "{count:pl:запись отличается|записи отличаются|записей отличаются} от отпечатков, снятых при "
        "сохранении (первые: {first:raw})"),
    # -- the data and flags against the record (gpuwork.measure.trial.resume_options, gpuwork.cli.trial) -------
    "error.resume.data_changed": (
        "data file {path:raw} changed since trial {run:raw} (SHA-256 {now:raw}… now, {saved:raw}… in the "
        "record): the resumed steps would train on other text; put the file back, or pass --allow-changed-data "
        "to go on anyway (the new record says so)",
        "файл данных {path:raw} изменился после пробного запуска {run:raw} (SHA-256 {now:raw}… сейчас, "
        "{saved:raw}… в записи): продолженные шаги обучались бы на другом тексте; верните файл или добавьте "
        "--allow-changed-data, чтобы продолжить всё равно (новая запись это отметит)"),
    "error.resume.data_missing": (
        "data file {path:raw} of trial {run:raw} cannot be read ({detail:raw}): put it back where it was",
        "файл данных {path:raw} пробного запуска {run:raw} не читается ({detail:raw}): верните его на место"),
    "error.resume.flag_conflict": (
        "{flag:raw} {given:raw} conflicts with trial {run:raw}, which ran with {recorded:raw}: a resume goes on "
        "exactly as the trial started; drop {flag:raw}, or start a new trial without --resume",
        "{flag:raw} {given:raw} противоречит пробному запуску {run:raw}, который шёл с {recorded:raw}: "
        "продолжение идёт точно так, как запуск начинался; уберите {flag:raw} или начните новый пробный "
        "запуск без --resume"),
    "error.resume.allow_without_resume": (
        "--allow-changed-data applies only with --resume: drop it",
        "--allow-changed-data действует только вместе с --resume: уберите его"),
}
