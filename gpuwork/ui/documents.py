"""The sizing form's dataset: tokens typed, a size typed, or a file of documents counted with the model's
tokenizer.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.errors import PlanError
from gpuwork.facts.model import list_presets
from gpuwork.message import Msg, msg
from gpuwork.units import GB, fmt_number, fmt_size, unit

# -- the dataset: tokens, a size, or a file of documents ----------------------------------------------


DOCUMENTS_ACCEPT = ".txt,.md,.jsonl,.json,.csv"
# what one upload through the page's websocket can carry (Tornado's default message cap is 10 MiB); a larger
# dataset is typed as its size
DOCUMENTS_LIMIT_BYTES = 8_000_000


def data_size(n_bytes: float, lang: str = "en") -> str:
    """A dataset's size as people read it: GB from 1 GB up, MB below (two decimals under 1 MB)."""
    if n_bytes >= GB:
        return fmt_size(n_bytes, lang)
    return f"{fmt_number(n_bytes / 1e6, lang, 2 if n_bytes < 1e6 else 1)}\u00a0{unit('MB', lang)}"


Note = Callable[[str], Msg]  # a note whose numbers are formatted in the language it is shown in


def dataset_input(text: str, tokens_before: int | None = None,
                  bytes_before: int | None = None) -> tuple[int, int | None, Note | None]:
    """The dataset field as typed -> (tokens, bytes or None, a note saying how the tokens were found).

    A count ("50M", "5e9", "2M tokens") is tokens; a size with its unit ("200 MB", "1.5 GB", "500MiB") is the
    raw text on disk, its tokens at ``BYTES_PER_TOKEN_TEXT`` (said in the note). An unchanged count keeps the size
    known before (from a link or a counted file). PlanError when the text is neither."""
    from gpuwork.estimate.disk import BYTES_PER_TOKEN_TEXT
    from gpuwork.plan import UPPER_BOUNDS
    from gpuwork.units import parse_count, parse_size

    try:
        tokens = parse_count(text, "dataset_tokens", minimum=None)
    except PlanError as not_count:
        try:
            size = parse_size(text, "dataset_bytes", maximum=UPPER_BOUNDS["dataset_bytes"])
        except PlanError:
            raise not_count from None
        if isinstance(text, str) and not any(c.isalpha() for c in text):
            raise not_count from None
        tokens = max(1, round(size / BYTES_PER_TOKEN_TEXT))
        return tokens, size, lambda lang: msg("ui.dataset_from_size", size=data_size(size, lang), tokens=tokens,
                                              ratio=BYTES_PER_TOKEN_TEXT)
    return tokens, (bytes_before if tokens_before is not None and tokens == tokens_before else None), None


@dataclass(frozen=True)
class DocumentCount:
    """The tokens of an uploaded file of documents: counted with the model's tokenizer when one is on this machine,
    else estimated at ``BYTES_PER_TOKEN_TEXT`` (``tokenizer`` None)."""

    name: str
    documents: int
    size_bytes: int  # the file as uploaded: the raw dataset on disk
    tokens: int
    model: str
    tokenizer: str | None  # where the tokenizer came from (a hub id in the local cache, a folder), or None
    ratio: float  # bytes per token used when there is no tokenizer

    def note(self, lang: str = "en") -> Msg:
        size = data_size(self.size_bytes, lang)
        if self.tokenizer is not None:
            return msg("ui.documents_counted", name=self.name, documents=self.documents, size=size,
                       tokens=self.tokens, model=self.model)
        return msg("ui.documents_ratio", name=self.name, documents=self.documents, size=size,
                   tokens=self.tokens, ratio=self.ratio, model=self.model)


def _document_texts(name: str, raw: bytes) -> list[str]:
    """The documents of a file: .txt/.md one document; .jsonl one per line (its "text" field, or the line); .json a
    list of strings or of objects with "text"; .csv one per row."""
    import csv
    import io

    from gpuwork.facts import reading

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PlanError("dataset_tokens", msg("error.config.unreadable", file=name)) from None
    lower = name.lower()
    if lower.endswith(".jsonl"):
        docs = []
        for line in text.splitlines():
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                obj = line
            docs.append(obj["text"] if isinstance(obj, dict) and isinstance(obj.get("text"), str) else
                        obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False))
        return docs
    if lower.endswith(".json"):
        data = reading.parse_json(text, name)  # bounded: depth and digits checked
        items = data if isinstance(data, list) else [data]
        return [i["text"] if isinstance(i, dict) and isinstance(i.get("text"), str) else
                i if isinstance(i, str) else json.dumps(i, ensure_ascii=False) for i in items]
    if lower.endswith(".csv"):
        return [" ".join(row) for row in csv.reader(io.StringIO(text, newline="")) if any(c.strip() for c in row)]
    return [text] if text.strip() else []


def _local_tokenizer(model_ref: str) -> tuple[Any, str] | None:
    """The model's tokenizer if it is on this machine (the Hugging Face cache, or files next to a config.json);
    never downloaded."""
    candidates: list[str] = []
    path = Path(model_ref).expanduser()
    if path.suffix == ".json" and path.parent.is_dir():
        candidates.append(str(path.parent))
    elif model_ref in list_presets():
        from gpuwork.facts.configs.base import hub_presets

        candidates += [hub for hub, preset in hub_presets().items() if preset == model_ref]
    else:
        candidates.append(model_ref)
    try:
        from transformers import AutoTokenizer
    except ImportError:
        return None
    for ref in candidates:
        with contextlib.suppress(Exception):  # not cached, not a tokenizer folder: the stated ratio instead
            return AutoTokenizer.from_pretrained(ref, local_files_only=True), ref
    return None


def count_documents(name: str, content: bytes, model_ref: str, model_label: str | None = None) -> DocumentCount:
    """The tokens of an uploaded file of documents (its bytes, never a path): see ``DocumentCount``."""
    from gpuwork.estimate.disk import BYTES_PER_TOKEN_TEXT

    if len(content) > DOCUMENTS_LIMIT_BYTES:
        raise PlanError("dataset_tokens", msg("ui.documents_too_large", name=name,
                                              limit=data_size(DOCUMENTS_LIMIT_BYTES)))
    docs = [d for d in _document_texts(name, content) if d.strip()]
    if not docs:
        raise PlanError("dataset_tokens", msg("ui.documents_empty", name=name))
    found = _local_tokenizer(model_ref)
    label = model_label or model_ref
    if found is not None:
        tok, source = found
        tokens = sum(len(ids) for ids in tok(docs, add_special_tokens=False)["input_ids"])
        return DocumentCount(name, len(docs), len(content), max(tokens, 1), label, source, BYTES_PER_TOKEN_TEXT)
    text_bytes = sum(len(d.encode("utf-8")) for d in docs)
    return DocumentCount(name, len(docs), len(content), max(1, round(text_bytes / BYTES_PER_TOKEN_TEXT)), label, None,
                         BYTES_PER_TOKEN_TEXT)


