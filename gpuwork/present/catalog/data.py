"""Catalog entries "data.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "data"

ENTRIES: dict[str, tuple[str, str]] = {
    "data.gpus_wait": (
        "GPUs will wait for data: the loader gives {loader_tokens_s:int} tokens/s, the GPUs consume "
        "{needed_tokens_s:int} (idle {wait_share:pct} of each step); use ~{workers} loader workers or pre-tokenize",
        "GPU будут ждать данные: загрузчик даёт {loader_tokens_s:int} токенов/с, GPU потребляют "
        "{needed_tokens_s:int} (простой {wait_share:pct} каждого шага); нужно ~{workers} "
        "{workers:pl:процесс|процесса|процессов} загрузки или заранее токенизированные данные"),
    "data.keeps_up": (
        "the loader keeps up: {loader_tokens_s:int} tokens/s available, {needed_tokens_s:int} needed",
        "загрузчик успевает: доступно {loader_tokens_s:int} токенов/с, нужно {needed_tokens_s:int}"),
    "data.needed": (
        "GPUs consume {needed_tokens_s:int} tokens/s ({ids_bytes_s:rate} of token ids, {text_bytes_s:rate} of "
        "text if tokenized on the fly): about {workers} loader {workers:pl:worker|workers} at "
        "{worker_tokens_s:int} tokens/s each",
        "GPU потребляют {needed_tokens_s:int} токенов/с ({ids_bytes_s:rate} номеров токенов, {text_bytes_s:rate} "
        "текста при токенизации на лету): нужно около {workers} {workers:pl:процесса|процессов|процессов} "
        "загрузки по {worker_tokens_s:int} токенов/с"),
}
