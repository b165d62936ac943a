"""The length histogram of the user's data, for ``TrainPlan.lengths``: their texts through a tokenizer.

Reuses the trial's text pipeline (``gpuwork.measure.textdata``): .txt files (one document each) or .jsonl files
(one document per line, field "text"), and a local Hugging Face tokenizer folder or tokenizer.json; without one a
byte-level BPE tokenizer is trained on the texts (a rough stand-in: name the model's tokenizer for real lengths).

    >>> length_histogram(["data/train.jsonl"], "path/to/tokenizer", seq_len=2048)
    ((128, 310), (256, 544), ...)
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from gpuwork.measure.textdata import VOCAB_CAP, load_texts, load_tokenizer, train_tokenizer

DEFAULT_BINS = 32  # histogram bins up to seq_len: enough for the allocator replay, small enough for a plan file


def length_histogram(files: str | Path | Sequence[str | Path], tokenizer: str | Path | None = None, *,
                     seq_len: int, bins: int = DEFAULT_BINS) -> tuple[tuple[int, int], ...]:
    """((length, documents), ...): each document's token count plus its EOS, cut to ``seq_len`` (what truncation
    does) and rounded up to the next of ``bins`` equal steps up to ``seq_len`` (rounding up keeps the longest
    batch, where the peak is)."""
    texts, source = load_texts(files)
    if tokenizer is not None:
        tok = load_tokenizer(tokenizer)
    else:
        tok = train_tokenizer(texts, VOCAB_CAP, source=source.name, cache_key=source.sha256)
    step = max(math.ceil(seq_len / max(bins, 1)), 1)
    counts: Counter[int] = Counter()
    for ids in tok.encode_batch(texts):
        length = min(len(ids) + 1, seq_len)
        counts[min(step * math.ceil(length / step), seq_len)] += 1
    return tuple(sorted(counts.items()))


__all__ = ["DEFAULT_BINS", "length_histogram"]
