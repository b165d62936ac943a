"""Text data for measured trials: a shipped corpus or the user's files, a tokenizer, packed sequences.

The trial needs real tokens at the plan's sequence length, from a pipeline whose speed can be
measured on its own. This module provides, in order of the flow:

- ``load_texts(paths)`` reads .txt files (one document each) and .jsonl files (one document per
  line, field ``"text"``); with no paths it reads the corpus shipped in ``data/text/``.
  The returned ``TextSource`` names the files with their sizes and SHA-256 digests.
- ``train_tokenizer(texts, vocab_size)`` trains a byte-level BPE tokenizer with the ``tokenizers``
  library (about a second for the shipped corpus); ``load_tokenizer(folder)`` wraps a local
  Hugging Face tokenizer folder. Both return a ``TextTokenizer``.
- ``pack(token_lists, seq_len, eos_id)`` concatenates documents (EOS after each) into rows of
  exactly ``seq_len`` tokens; ``PackedTextDataset`` turns rows into model inputs for the task
  (causal LM, masked LM, sequence classification); ``make_loader`` wraps it in a DataLoader.
- ``measure_loader(loader, batches)`` measures batches/s and tokens/s of the loader alone.
- ``prepare_text_data(...)`` does all of the above in one call (what ``gpuwork.measure.trial`` uses).

Nothing is written to disk unless a ``cache_dir`` is given; trained tokenizers and tokenized
corpora are cached in process memory only.

Example:
    >>> data = prepare_text_data(seq_len=64, vocab_size=4096)
    >>> loader = make_loader(data.dataset(), batch_size=2)
    >>> measure_loader(loader, batches=20).tokens_per_s > 0
    True

Limitations: packing ignores document boundaries inside a row (no attention mask between
documents), as most pre-training pipelines do; when the corpus holds fewer rows than a batch needs,
the token stream is repeated (``TextData.repeats`` says how often).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuwork.errors import GpuworkError
from gpuwork.facts import reading
from gpuwork.facts.paths import data_dir
from gpuwork.facts.reading import MAX_DOCUMENT_BYTES
from gpuwork.message import msg

if TYPE_CHECKING:  # torch is imported lazily: estimators must start without it
    import torch

BUILTIN_DATASET = "gpuwork-text"  # display name of the corpus shipped in data/text/
TEXT_SUFFIXES = (".txt", ".jsonl")
VOCAB_CAP = 8192  # largest vocabulary trained locally: the shipped corpus (~250 KB) yields no more useful merges
MIN_VOCAB = 320  # 256 byte symbols + special tokens + a few merges; smaller vocabularies cannot be trained
MASK_PROBABILITY = 0.15  # BERT's masked-LM rate (Devlin et al. 2019, section 3.1)
EOS_TOKEN, PAD_TOKEN, MASK_TOKEN = "<|endoftext|>", "<pad>", "<mask>"
SPECIAL_TOKENS = (EOS_TOKEN, PAD_TOKEN, MASK_TOKEN)  # ids 0, 1, 2 of a trained tokenizer


class DataError(GpuworkError, ValueError):
    """A text file, tokenizer folder or data setting cannot be used; the message says how to fix it."""


# -- sources -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextFile:
    """One input file: where it is, its size and its SHA-256 digest."""

    path: str
    size_bytes: int
    sha256: str


@dataclass(frozen=True)
class TextSource:
    """What a trial trained on: named, sized and fingerprinted so a record can be reproduced."""

    name: str  # BUILTIN_DATASET, or the file name / folder the user gave
    files: tuple[TextFile, ...]
    documents: int  # .txt files count one each; .jsonl files one per line with a "text" field
    characters: int

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)

    @property
    def sha256(self) -> str:
        """One digest for the whole source: SHA-256 over the per-file digests in order."""
        return hashlib.sha256("".join(f.sha256 for f in self.files).encode()).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "documents": self.documents,
            "characters": self.characters,
            "files": [{"path": f.path, "size_bytes": f.size_bytes, "sha256": f.sha256} for f in self.files],
        }


def builtin_text_files() -> list[Path]:
    """The corpus shipped in data/text/ (every .txt file, sorted by name)."""
    folder = data_dir() / "text"
    files = sorted(folder.glob("*.txt"))
    if not files:
        raise DataError(msg("error.data.no_shipped_text", folder=str(folder)))
    return files


def load_texts(paths: str | Path | Sequence[str | Path] | None = None) -> tuple[list[str], TextSource]:
    """Documents and their source description from .txt / .jsonl files (or a folder of them).

    Args:
        paths: a file, a folder (its .txt and .jsonl files, sorted), a list of those, or None for
            the shipped corpus.
    Raises DataError for a missing file, an unknown suffix, bad JSON or a line without "text".
    """
    if paths is None:
        files, name = builtin_text_files(), BUILTIN_DATASET
    else:
        items = [paths] if isinstance(paths, (str, Path)) else list(paths)
        if not items:
            raise DataError(msg("error.data.no_files"))
        files = []
        for item in items:
            path = Path(item).expanduser()
            if path.is_dir():
                found = sorted(p for p in path.iterdir() if p.suffix in TEXT_SUFFIXES)
                if not found:
                    raise DataError(msg("error.data.empty_folder", path=str(path)))
                files.extend(found)
            elif os.path.lexists(path) and not path.is_symlink() and not path.is_file():
                files.append(path)  # a FIFO or device: the reader names what it is
            elif path.suffix not in TEXT_SUFFIXES and path.is_file():
                raise DataError(msg("error.data.suffix", path=str(path)))
            elif os.path.lexists(path):
                files.append(path)  # a file, or a link: the reader follows it and names a dangling one or a loop
            else:
                raise DataError(msg("error.data.missing", path=str(path)))
        name = Path(items[0]).name if len(items) == 1 else f"{Path(items[0]).name} (+{len(items) - 1} more)"
    texts: list[str] = []
    described = []
    for path in files:
        try:  # a regular file within reading.TEXT_DATA bytes: no FIFO, device, dangling link or loop
            raw = reading.read_bytes(path, reading.TEXT_DATA)
        except reading.ReadError as exc:
            raise DataError(exc.msg) from None
        if path.suffix not in TEXT_SUFFIXES:
            raise DataError(msg("error.data.suffix", path=str(path)))
        described.append(TextFile(str(path), len(raw), hashlib.sha256(raw).hexdigest()))
        texts.extend(_documents(path, raw))
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise DataError(msg("error.data.no_text", name=name))
    return texts, TextSource(name, tuple(described), len(texts), sum(len(t) for t in texts))


def _documents(path: Path, raw: bytes) -> list[str]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(msg("error.data.not_utf8", path=str(path), byte=exc.start)) from None
    if path.suffix == ".txt":
        _check_document(path, 1, len(raw))
        return [text]
    docs = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        _check_document(path, number, len(line.encode("utf-8")) if len(line) * 4 > MAX_DOCUMENT_BYTES else len(line))
        try:
            obj = reading.parse_json(line, path)  # nesting and integer digits bounded
        except reading.ReadError as exc:
            raise DataError(exc.msg) from None
        except json.JSONDecodeError as exc:
            raise DataError(msg("error.data.json", path=str(path), line=number, detail=exc.msg)) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
            raise DataError(msg("error.data.no_text_field", path=str(path), line=number))
        docs.append(obj["text"])
    return docs


def _check_document(path: Path, line: int, size: int) -> None:
    """One document (a .txt file, a .jsonl line) within what the tokenizer takes at once (a 100 MB line aborts
    it): a clear line instead."""
    if size > MAX_DOCUMENT_BYTES:
        raise DataError(msg("error.data.document_too_long", path=str(path), line=line,
                            size_mib=math.ceil(size * 10 / reading.MiB) / 10, limit_mib=MAX_DOCUMENT_BYTES // reading.MiB))


# -- tokenizers ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TextTokenizer:
    """A tokenizer as the trial needs it: batch encoding, its vocabulary size and special ids."""

    kind: str  # "bpe-trained" (byte-level BPE trained here) or "pretrained" (a local folder)
    source: str  # what it was trained on, or the folder it was loaded from
    vocab_size: int  # ids are in [0, vocab_size)
    eos_id: int
    pad_id: int
    mask_id: int | None  # None when the tokenizer has no mask token (masked-LM then impossible)
    backend: Any = field(repr=False)  # tokenizers.Tokenizer or a transformers tokenizer

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        if self.kind == "bpe-trained":
            return [enc.ids for enc in self.backend.encode_batch(list(texts))]
        return [list(ids) for ids in self.backend(list(texts), add_special_tokens=False)["input_ids"]]

    def decode(self, ids: Sequence[int]) -> str:
        return self.backend.decode(list(ids))

    def save(self, folder: str | Path) -> Path:
        """Write tokenizer.json (a trained one) into a folder the user chose; returns the file."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if self.kind == "bpe-trained":
            path = folder / "tokenizer.json"
            self.backend.save(str(path))
            return path
        self.backend.save_pretrained(str(folder))
        return folder

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "vocab_size": self.vocab_size, "eos_id": self.eos_id,
                "pad_id": self.pad_id, "mask_id": self.mask_id}


_TOKENIZER_CACHE: dict[tuple[str, int], TextTokenizer] = {}
_CACHE_LOCK = threading.Lock()


def train_tokenizer(texts: Sequence[str], vocab_size: int, *, source: str = "texts",
                    cache_key: str | None = None) -> TextTokenizer:
    """Train a byte-level BPE tokenizer (GPT-2 style) on the texts.

    Args:
        texts: the training documents.
        vocab_size: the wanted vocabulary, capped at VOCAB_CAP; a small corpus may give fewer
            tokens (the result's ``vocab_size`` is the real one). Special tokens take ids 0-2.
        source: a description recorded with the tokenizer.
        cache_key: when given (e.g. the data's SHA-256), the result is kept in process memory.
    """
    vocab_size = min(int(vocab_size), VOCAB_CAP)
    if vocab_size < MIN_VOCAB:
        raise DataError(msg("error.data.vocab_too_small", vocab_size=vocab_size, minimum=MIN_VOCAB))
    key = (cache_key, vocab_size) if cache_key else None
    if key is not None:
        with _CACHE_LOCK:
            if key in _TOKENIZER_CACHE:
                return _TOKENIZER_CACHE[key]
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    result = _wrap_trained(tok, source)
    if key is not None:
        with _CACHE_LOCK:
            _TOKENIZER_CACHE[key] = result
    return result


def _wrap_trained(tok: Any, source: str) -> TextTokenizer:
    ids = [tok.token_to_id(t) for t in SPECIAL_TOKENS]
    return TextTokenizer(kind="bpe-trained", source=source, vocab_size=tok.get_vocab_size(), eos_id=ids[0],
                         pad_id=ids[1], mask_id=ids[2], backend=tok)


def load_tokenizer(folder: str | Path) -> TextTokenizer:
    """A local tokenizer: a Hugging Face tokenizer folder, or a tokenizer.json trained here.

    Nothing is downloaded (``local_files_only``). EOS falls back to SEP (BERT), PAD to EOS.
    """
    path = Path(folder).expanduser()
    if os.path.lexists(path) and not path.is_dir():  # a file (or a FIFO, device, dangling link): the reader judges it
        try:
            data = reading.read_text(path, reading.TOKENIZER)
        except reading.ReadError as exc:
            raise DataError(exc.msg) from None
        if path.suffix != ".json":
            raise DataError(msg("error.data.tokenizer_not_json", path=str(path)))
        from tokenizers import Tokenizer

        try:
            tok = Tokenizer.from_str(data)
        except Exception as exc:  # noqa: BLE001 - the library's parser: any failure means not a tokenizer.json
            raise DataError(msg("error.data.tokenizer_load", path=str(path), kind=type(exc).__name__,
                                detail=str(exc).splitlines()[0][:200] if str(exc) else "")) from None
        if any(tok.token_to_id(t) is None for t in SPECIAL_TOKENS):
            raise DataError(msg("error.data.special_tokens", path=str(path), tokens=", ".join(SPECIAL_TOKENS)))
        return _wrap_trained(tok, str(path))
    if not path.is_dir():
        raise DataError(msg("error.data.tokenizer_missing", path=str(path)))
    if (path / "tokenizer.json").is_file() and not (path / "tokenizer_config.json").is_file():
        return load_tokenizer(path / "tokenizer.json")
    try:
        from transformers import AutoTokenizer

        pretrained = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # noqa: BLE001 - any loader failure means: not a usable folder
        raise DataError(msg("error.data.tokenizer_load", path=str(path), kind=type(exc).__name__,
                            detail=str(exc).splitlines()[0][:200] if str(exc) else "")) from None
    eos = pretrained.eos_token_id if pretrained.eos_token_id is not None else pretrained.sep_token_id
    if eos is None:
        raise DataError(msg("error.data.no_eos", path=str(path)))
    pad = pretrained.pad_token_id if pretrained.pad_token_id is not None else eos
    return TextTokenizer(kind="pretrained", source=str(path), vocab_size=len(pretrained), eos_id=eos, pad_id=pad,
                         mask_id=pretrained.mask_token_id, backend=pretrained)


# -- packing -------------------------------------------------------------------------------------


def pack(token_lists: Iterable[Sequence[int]], seq_len: int, eos_id: int,
         min_sequences: int = 1) -> tuple[torch.Tensor, int]:
    """Rows of exactly ``seq_len`` tokens from documents joined with ``eos_id`` after each.

    Returns (int64 tensor [rows, seq_len], repeats): the tail shorter than a row is dropped;
    when fewer than ``min_sequences`` rows result, the token stream is repeated ``repeats`` times.
    """
    import torch

    if seq_len < 2:
        raise DataError(msg("error.data.seq_len", seq_len=seq_len))
    stream: list[int] = []
    for ids in token_lists:
        stream.extend(ids)
        stream.append(eos_id)
    if not stream:
        raise DataError(msg("error.data.no_tokens"))
    needed = max(1, min_sequences) * seq_len
    repeats = max(1, -(-needed // len(stream)))
    flat = torch.tensor(stream, dtype=torch.int64)
    if repeats > 1:
        flat = flat.repeat(repeats)
    rows = flat.numel() // seq_len
    return flat[: rows * seq_len].view(rows, seq_len).clone(), repeats


# -- datasets and loaders --------------------------------------------------------------------------


class PackedTextDataset:
    """Packed rows as model inputs for a task; deterministic per (seed, index).

    - ``causal-lm``: ``input_ids`` and ``labels`` = ``input_ids`` (the model shifts them).
    - ``masked-lm``: MASK_PROBABILITY of positions replaced by ``mask_id`` (at least one per row),
      ``labels`` = the original token there and -100 elsewhere (simplified BERT: no 80/10/10 split).
    - ``seq-cls``: ``labels`` = one of two classes drawn per row (the trial measures speed, not accuracy).

    A torch ``Dataset`` by duck typing (``__len__`` / ``__getitem__``), so workers can pickle it.
    """

    def __init__(self, sequences: torch.Tensor, task: str = "causal-lm", *, seed: int = 0,
                 mask_id: int | None = None):
        if task not in ("causal-lm", "masked-lm", "seq-cls"):
            raise DataError(msg("error.data.task", task=str(task)))
        if task == "masked-lm" and mask_id is None:
            raise DataError(msg("error.data.no_mask"))
        self.sequences = sequences
        self.task = task
        self.seed = seed
        self.mask_id = mask_id

    def __len__(self) -> int:
        return int(self.sequences.shape[0])

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        import torch

        ids = self.sequences[index]
        if self.task == "causal-lm":
            return {"input_ids": ids, "labels": ids}
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + int(index))
        if self.task == "seq-cls":
            return {"input_ids": ids, "labels": torch.randint(0, 2, (), generator=gen)}
        assert self.mask_id is not None  # __init__ refuses masked-lm without a mask token
        chosen = torch.rand(ids.shape, generator=gen) < MASK_PROBABILITY
        chosen[torch.randint(0, ids.numel(), (), generator=gen)] = True
        labels = torch.where(chosen, ids, torch.full_like(ids, -100))
        inputs = torch.where(chosen, torch.full_like(ids, self.mask_id), ids)
        return {"input_ids": inputs, "labels": labels}


def make_loader(dataset: Any, batch_size: int, *, workers: int = 0, seed: int = 0, shuffle: bool = True,
                pin_memory: bool = False) -> Any:
    """A torch DataLoader over the dataset: seeded shuffle, full batches only, N worker processes."""
    import torch

    if batch_size < 1 or workers < 0:
        raise DataError(msg("error.data.loader_args", batch_size=batch_size, workers=workers))
    if len(dataset) < batch_size:
        raise DataError(msg("error.data.too_few_rows", rows=len(dataset), batch_size=batch_size))
    return torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, shuffle=shuffle, drop_last=True, num_workers=workers,
        generator=torch.Generator().manual_seed(seed), pin_memory=pin_memory,
        persistent_workers=workers > 0,
    )


def cycle(loader: Iterable[Any]) -> Iterator[Any]:
    """Batches of a loader, epoch after epoch, without end."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise DataError(msg("error.data.no_batches"))


@dataclass(frozen=True)
class LoaderThroughput:
    """Speed of a data loader measured alone (no model): what it can feed at most."""

    batches: int  # batches timed (after the first one)
    seconds: float  # wall time of those batches
    first_batch_s: float  # time to the first batch (worker start-up, first file reads)
    batches_per_s: float
    samples_per_s: float
    tokens_per_s: float  # input_ids elements per second

    def as_dict(self) -> dict[str, float | int]:
        return dict(self.__dict__)


def measure_loader(loader: Iterable[Any], batches: int = 50, *,
                   clock: Callable[[], float] = time.perf_counter) -> LoaderThroughput:
    """Batches/s and tokens/s of a loader on its own, cycling epochs if it is short.

    The first batch is timed separately (``first_batch_s``) and excluded from the rates.
    """
    if batches < 1:
        raise DataError(msg("error.data.batches", batches=batches))
    source = cycle(loader)
    start = clock()
    next(source)
    first = clock() - start
    samples = tokens = 0
    start = clock()
    for _ in range(batches):
        batch = next(source)
        ids = batch["input_ids"]
        samples += int(ids.shape[0])
        tokens += int(ids.numel())
    seconds = max(clock() - start, 1e-9)
    return LoaderThroughput(batches=batches, seconds=seconds, first_batch_s=first,
                            batches_per_s=batches / seconds, samples_per_s=samples / seconds,
                            tokens_per_s=tokens / seconds)


# -- all in one --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TextData:
    """Tokenized, packed text ready for a trial."""

    source: TextSource
    tokenizer: TextTokenizer
    sequences: torch.Tensor = field(repr=False)  # int64 [rows, seq_len]
    tokens: int  # tokens in the corpus once tokenized (with one EOS per document), before repeating
    repeats: int  # how often the token stream was repeated to fill min_sequences rows

    @property
    def seq_len(self) -> int:
        return int(self.sequences.shape[1])

    def dataset(self, task: str = "causal-lm", seed: int = 0) -> PackedTextDataset:
        return PackedTextDataset(self.sequences, task, seed=seed, mask_id=self.tokenizer.mask_id)

    def as_dict(self) -> dict[str, Any]:
        return {**self.source.as_dict(), "tokens": self.tokens, "rows": int(self.sequences.shape[0]),
                "seq_len": self.seq_len, "repeats": self.repeats}


_ENCODED_CACHE: dict[tuple[str, int, str], list[list[int]]] = {}


def prepare_text_data(seq_len: int, vocab_size: int, *, files: str | Path | Sequence[str | Path] | None = None,
                      tokenizer: str | Path | TextTokenizer | None = None, cache_dir: str | Path | None = None,
                      min_sequences: int = 1) -> TextData:
    """Read, tokenize and pack text for a model with ``vocab_size`` ids.

    Args:
        seq_len: tokens per row.
        vocab_size: the model's vocabulary; a trained tokenizer gets min(vocab_size, VOCAB_CAP)
            tokens, a given tokenizer must not exceed it.
        files: .txt / .jsonl files or folders; None = the shipped corpus.
        tokenizer: a local tokenizer folder / tokenizer.json, a TextTokenizer, or None to train one.
        cache_dir: a folder where a trained tokenizer is kept and reused (nothing is written without it).
        min_sequences: rows needed at least (a batch); the stream is repeated to reach it.
    """
    texts, source = load_texts(files)
    if isinstance(tokenizer, TextTokenizer):
        tok = tokenizer
    elif tokenizer is not None:
        tok = load_tokenizer(tokenizer)
    else:
        tok = _trained_tokenizer(texts, source, vocab_size, cache_dir)
    if tok.vocab_size > vocab_size:
        raise DataError(msg("error.data.vocab_too_large", tokens=tok.vocab_size, embeddings=vocab_size))
    key = (source.sha256, id(tok.backend), tok.source)
    encoded = _ENCODED_CACHE.get(key)
    if encoded is None:
        encoded = tok.encode_batch(texts)
        if len(_ENCODED_CACHE) > 16:
            _ENCODED_CACHE.clear()
        _ENCODED_CACHE[key] = encoded
    sequences, repeats = pack(encoded, seq_len, tok.eos_id, min_sequences=min_sequences)
    tokens = sum(len(ids) + 1 for ids in encoded)
    return TextData(source=source, tokenizer=tok, sequences=sequences, tokens=tokens, repeats=repeats)


def _trained_tokenizer(texts: list[str], source: TextSource, vocab_size: int,
                       cache_dir: str | Path | None) -> TextTokenizer:
    wanted = min(vocab_size, VOCAB_CAP)
    if cache_dir is not None:
        path = Path(cache_dir).expanduser() / f"tokenizer-{source.sha256[:12]}-{wanted}.json"
        if path.is_file():
            return load_tokenizer(path)
    tok = train_tokenizer(texts, wanted, source=f"byte-level BPE trained on {source.name}",
                          cache_key=source.sha256)
    if cache_dir is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tok.backend.save(str(path))
    return tok


__all__ = [
    "BUILTIN_DATASET",
    "DataError",
    "LoaderThroughput",
    "PackedTextDataset",
    "TextData",
    "TextFile",
    "TextSource",
    "TextTokenizer",
    "builtin_text_files",
    "cycle",
    "load_texts",
    "load_tokenizer",
    "make_loader",
    "measure_loader",
    "pack",
    "prepare_text_data",
    "train_tokenizer",
]
