"""Tests for gpuwork.measure.textdata: text sources, tokenizers, packing, datasets and loader throughput."""

from __future__ import annotations

import json

import pytest
import torch

from gpuwork.measure.textdata import (
    BUILTIN_DATASET,
    MIN_VOCAB,
    VOCAB_CAP,
    DataError,
    PackedTextDataset,
    builtin_text_files,
    load_texts,
    load_tokenizer,
    make_loader,
    measure_loader,
    pack,
    prepare_text_data,
    train_tokenizer,
)

SAMPLE = ["The tide comes in twice a day.", "Checkpoints are saved every five hundred steps.",
          "A kettle sits on the stove in the net shed."] * 20


def test_builtin_corpus_is_described_with_sizes_and_digests():
    texts, source = load_texts()
    files = builtin_text_files()
    assert source.name == BUILTIN_DATASET
    assert len(texts) == len(files) == len(source.files) == source.documents
    assert source.size_bytes == sum(p.stat().st_size for p in files)
    assert all(len(f.sha256) == 64 for f in source.files)
    assert len(source.sha256) == 64
    assert source.size_bytes > 200_000  # real text, not a stub


def test_jsonl_and_txt_files_load_as_documents(tmp_path):
    lines = [json.dumps({"text": f"document number {i}", "id": i}) for i in range(5)]
    (tmp_path / "a.jsonl").write_text("\n".join(lines) + "\n\n")
    (tmp_path / "b.txt").write_text("one plain text file is one document\n")
    texts, source = load_texts(tmp_path)
    assert texts[:5] == [f"document number {i}" for i in range(5)]
    assert texts[5].startswith("one plain")
    assert source.documents == 6 and len(source.files) == 2
    texts, source = load_texts([tmp_path / "a.jsonl"])
    assert len(texts) == 5 and source.name == "a.jsonl"


def test_bad_files_are_named_in_the_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"body": "no text field"}\n')
    with pytest.raises(DataError, match="line 2"):
        load_texts(bad)
    with pytest.raises(DataError, match="does not exist"):
        load_texts(tmp_path / "missing.txt")
    (tmp_path / "table.csv").write_text("a,b\n")
    with pytest.raises(DataError, match=".txt or .jsonl"):
        load_texts(tmp_path / "table.csv")


def test_trained_tokenizer_round_trips_text_and_is_deterministic():
    a = train_tokenizer(SAMPLE, 400)
    b = train_tokenizer(SAMPLE, 400)
    assert a.kind == "bpe-trained"
    assert (a.eos_id, a.pad_id, a.mask_id) == (0, 1, 2)
    assert MIN_VOCAB <= a.vocab_size <= 400
    assert a.backend.get_vocab() == b.backend.get_vocab()
    ids = a.encode_batch(["The tide comes in, ünïcode too."])[0]
    assert a.decode(ids) == "The tide comes in, ünïcode too."
    assert max(ids) < a.vocab_size


def test_tokenizer_vocab_is_capped_and_minimum_enforced():
    texts, _ = load_texts()
    tok = train_tokenizer(texts, 1_000_000)
    assert tok.vocab_size <= VOCAB_CAP
    with pytest.raises(DataError, match="too small"):
        train_tokenizer(SAMPLE, 100)


def test_tokenizer_loads_from_a_saved_file_and_a_hugging_face_folder(tmp_path):
    from transformers import PreTrainedTokenizerFast

    tok = train_tokenizer(SAMPLE, 400)
    path = tok.save(tmp_path / "plain")
    again = load_tokenizer(path)
    assert again.encode_batch(SAMPLE[:2]) == tok.encode_batch(SAMPLE[:2])
    hf = PreTrainedTokenizerFast(tokenizer_object=tok.backend, eos_token="<|endoftext|>", pad_token="<pad>",
                                 mask_token="<mask>")
    hf.save_pretrained(str(tmp_path / "hf"))
    loaded = load_tokenizer(tmp_path / "hf")
    assert loaded.kind == "pretrained"
    assert (loaded.eos_id, loaded.pad_id, loaded.mask_id) == (0, 1, 2)
    assert loaded.encode_batch(SAMPLE[:2]) == tok.encode_batch(SAMPLE[:2])
    with pytest.raises(DataError, match="does not exist"):
        load_tokenizer(tmp_path / "nowhere")


def test_pack_makes_full_rows_with_eos_between_documents():
    rows, repeats = pack([[5, 6, 7], [8, 9]], seq_len=3, eos_id=0)
    assert repeats == 1
    assert rows.tolist() == [[5, 6, 7], [0, 8, 9]]  # the trailing EOS is the dropped tail
    rows, repeats = pack([[5, 6, 7], [8, 9]], seq_len=4, eos_id=0, min_sequences=5)
    assert rows.shape == (5, 4) and repeats == 3  # 7 tokens a copy, 20 needed
    assert rows.dtype == torch.int64
    with pytest.raises(DataError):
        pack([[1, 2]], seq_len=1, eos_id=0)


def test_datasets_give_inputs_and_labels_per_task():
    rows = torch.arange(3, 3 + 4 * 32).view(4, 32)
    causal = PackedTextDataset(rows, "causal-lm")
    item = causal[1]
    assert torch.equal(item["input_ids"], rows[1]) and torch.equal(item["labels"], rows[1])

    masked = PackedTextDataset(rows, "masked-lm", seed=3, mask_id=2)
    item = masked[2]
    chosen = item["labels"] != -100
    assert chosen.any()
    assert torch.equal(item["input_ids"][chosen], torch.full((int(chosen.sum()),), 2))
    assert torch.equal(item["labels"][chosen], rows[2][chosen])
    assert torch.equal(item["input_ids"][~chosen], rows[2][~chosen])
    assert torch.equal(masked[2]["input_ids"], item["input_ids"])  # deterministic per (seed, index)

    cls = PackedTextDataset(rows, "seq-cls")
    assert cls[0]["labels"].shape == () and int(cls[0]["labels"]) in (0, 1)
    with pytest.raises(DataError, match="mask token"):
        PackedTextDataset(rows, "masked-lm", mask_id=None)


def test_prepare_packs_to_seq_len_and_fills_a_batch():
    data = prepare_text_data(seq_len=64, vocab_size=4096)
    assert data.sequences.shape[1] == 64 and data.seq_len == 64
    assert int(data.sequences.max()) < data.tokenizer.vocab_size <= 4096
    assert data.tokens > data.sequences.numel() // 2
    huge = prepare_text_data(seq_len=4096, vocab_size=4096, min_sequences=64)
    assert huge.sequences.shape == (huge.sequences.shape[0], 4096)
    assert huge.sequences.shape[0] >= 64 and huge.repeats > 1
    info = data.as_dict()
    assert info["name"] == BUILTIN_DATASET and info["rows"] == data.sequences.shape[0]


def test_prepare_rejects_a_tokenizer_larger_than_the_model_vocab():
    texts, _ = load_texts()
    tok = train_tokenizer(texts, 1000)
    assert tok.vocab_size == 1000
    with pytest.raises(DataError, match="embeddings"):
        prepare_text_data(seq_len=32, vocab_size=999, tokenizer=tok)


def test_cache_dir_is_the_only_place_a_tokenizer_is_written(tmp_path):
    data = prepare_text_data(seq_len=32, vocab_size=512, cache_dir=tmp_path)
    written = list(tmp_path.iterdir())
    assert len(written) == 1 and written[0].name.startswith("tokenizer-")
    again = prepare_text_data(seq_len=32, vocab_size=512, cache_dir=tmp_path)
    assert again.tokenizer.source == str(written[0])
    assert torch.equal(again.sequences, data.sequences)


def test_loader_batches_and_throughput():
    data = prepare_text_data(seq_len=64, vocab_size=4096)
    loader = make_loader(data.dataset(), batch_size=4, seed=1)
    batch = next(iter(loader))
    assert batch["input_ids"].shape == (4, 64) and batch["labels"].shape == (4, 64)
    result = measure_loader(loader, batches=len(loader) + 5)  # cycles past one epoch
    assert result.batches == len(loader) + 5
    assert result.batches_per_s > 0 and result.tokens_per_s == pytest.approx(result.batches_per_s * 256)
    assert result.first_batch_s >= 0
    with pytest.raises(DataError, match="fewer than batch_size"):
        make_loader(data.dataset(), batch_size=10_000)


@pytest.mark.slow
def test_loader_with_a_worker_process():
    data = prepare_text_data(seq_len=64, vocab_size=4096)
    loader = make_loader(data.dataset("masked-lm"), batch_size=2, workers=1)
    result = measure_loader(loader, batches=10)
    assert result.tokens_per_s > 0 and result.samples_per_s == pytest.approx(result.batches_per_s * 2)
