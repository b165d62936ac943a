"""Catalog entries "error.data.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "error.data"

ENTRIES: dict[str, tuple[str, str]] = {
    "error.data.no_shipped_text": (
        "no shipped text found in {folder:raw}: reinstall gpuwork or pass your own .txt/.jsonl files",
        "в {folder:raw} нет поставляемого текста: переустановите gpuwork или укажите свои файлы .txt/.jsonl"),
    "error.data.no_files": (
        "no data files given: pass .txt or .jsonl files, a folder of them, or None for the shipped corpus",
        "файлы данных не заданы: укажите файлы .txt или .jsonl, папку с ними или None для встроенного корпуса"),
    "error.data.empty_folder": ("folder '{path:raw}' holds no .txt or .jsonl files",
                                "в папке '{path:raw}' нет файлов .txt или .jsonl"),
    "error.data.suffix": (
        "'{path:raw}' is not a .txt or .jsonl file: convert it to plain text or to JSON lines with a \"text\" field",
        "'{path:raw}' — не файл .txt или .jsonl: преобразуйте его в простой текст или в строки JSON с полем `text`"),
    "error.data.missing": ("data file '{path:raw}' does not exist: check the path",
                           "файла данных '{path:raw}' нет: проверьте путь"),
    "error.data.no_text": ("the data files of '{name:raw}' hold no text", "в файлах данных '{name:raw}' нет текста"),
    "error.data.not_utf8": ("'{path:raw}' is not UTF-8 text (byte {byte:raw}): re-save it as UTF-8",
                            "'{path:raw}' — не текст в UTF-8 (байт {byte:raw}): пересохраните его в UTF-8"),
    "error.data.json": ("{path:raw}, line {line:raw}: not valid JSON ({detail:raw})",
                        "{path:raw}, строка {line:raw}: некорректный JSON ({detail:raw})"),
    "error.data.no_text_field": ("{path:raw}, line {line:raw}: expected an object with a string field \"text\"",
                                 "{path:raw}, строка {line:raw}: нужен объект со строковым полем `text`"),
    "error.data.vocab_too_small": (
        "vocab_size={vocab_size:raw} is too small for a byte-level BPE tokenizer: use at least {minimum:raw}, or "
        "pass a tokenizer folder",
        "vocab_size={vocab_size:raw} слишком мал для побайтового BPE-токенизатора: нужно не меньше {minimum:raw}, "
        "или укажите папку токенизатора"),
    "error.data.special_tokens": (
        "'{path:raw}' lacks the special tokens {tokens:raw}: pass the folder of a Hugging Face tokenizer instead",
        "в '{path:raw}' нет специальных токенов {tokens:raw}: укажите вместо него папку токенизатора Hugging Face"),
    "error.data.tokenizer_missing": (
        "tokenizer folder '{path:raw}' does not exist: pass a folder with tokenizer files",
        "папки токенизатора '{path:raw}' нет: укажите папку с файлами токенизатора"),
    "error.data.tokenizer_load": (
        "cannot load a tokenizer from '{path:raw}' ({kind:raw}: {detail:raw}): it needs tokenizer.json or the files "
        "of a Hugging Face tokenizer",
        "не удалось загрузить токенизатор из '{path:raw}' ({kind:raw}: {detail:raw}): нужен tokenizer.json или "
        "файлы токенизатора Hugging Face"),
    "error.data.no_eos": (
        "the tokenizer in '{path:raw}' has neither an EOS nor a SEP token: packing needs one",
        "у токенизатора в '{path:raw}' нет ни токена EOS, ни SEP: для упаковки нужен один из них"),
    "error.data.seq_len": ("seq_len={seq_len:raw} is too short to train on: use at least 2 tokens",
                           "seq_len={seq_len:raw} — слишком мало для обучения: нужно хотя бы 2 токена"),
    "error.data.no_tokens": ("no tokens to pack: the texts are empty", "упаковывать нечего: тексты пустые"),
    "error.data.task": ("task '{task:raw}' is not supported: use causal-lm, masked-lm or seq-cls",
                        "задача '{task:raw}' не поддерживается: укажите causal-lm, masked-lm или seq-cls"),
    "error.data.no_mask": (
        "masked-lm needs a tokenizer with a mask token: use the trained tokenizer or one that defines mask_token",
        "для masked-lm нужен токенизатор с токеном маски: используйте обученный здесь токенизатор или тот, где задан "
        "mask_token"),
    "error.data.loader_args": (
        "batch_size={batch_size:raw} and workers={workers:raw}: use batch_size >= 1 and workers >= 0",
        "batch_size={batch_size:raw} и workers={workers:raw}: нужно `batch_size` ≥ 1 и `workers` ≥ 0"),
    "error.data.too_few_rows": (
        "the dataset has {rows} rows, fewer than batch_size={batch_size:raw}: pack with min_sequences=batch_size or "
        "use more text",
        "в датасете {rows} {rows:pl:строка|строки|строк} — меньше, чем batch_size={batch_size:raw}: упакуйте с "
        "min_sequences=batch_size или возьмите больше текста"),
    "error.data.no_batches": ("the loader yields no batches: the dataset is smaller than one batch",
                              "загрузчик не выдаёт батчей: датасет меньше одного батча"),
    "error.data.batches": ("batches={batches:raw}: measure at least one batch",
                           "batches={batches:raw}: нужно замерить хотя бы один батч"),
    "error.data.vocab_too_large": (
        "the tokenizer has {tokens} tokens but the model only {embeddings} embeddings: use the model's own tokenizer "
        "or let gpuwork train one (tokenizer=None)",
        "в токенизаторе {tokens} {tokens:pl:токен|токена|токенов}, а у модели только {embeddings} "
        "{embeddings:pl:эмбеддинг|эмбеддинга|эмбеддингов}: используйте токенизатор самой модели или дайте gpuwork "
        "обучить свой (tokenizer=None)"),
    "error.data.document_too_long": (
        "{path:raw}: document {line:int} is {size_mib:n1} MiB, more than the {limit_mib:n0} MiB gpuwork tokenizes "
        "as one document: split it into several lines (.jsonl) or files (.txt)",
        "{path:raw}: документ {line:int} занимает {size_mib:n1} МиБ, больше {limit_mib:n0} МиБ, которые gpuwork "
        "токенизирует как один документ: разбейте его на несколько строк (.jsonl) или файлов (.txt)"),
    "error.data.tokenizer_not_json": (
        "{path:raw} is a file, not a tokenizer: pass a tokenizer folder or its tokenizer.json",
        "{path:raw} — файл, но не токенизатор: укажите папку токенизатора или её tokenizer.json"),
}
