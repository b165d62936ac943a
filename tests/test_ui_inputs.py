"""The inputs people have (issue 20, items 4-6): "4k" as a sequence length, fields named in plain words, the
combined changes in words. Real parsers, real widgets, real CLI subprocesses."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpuwork.errors import PlanError
from gpuwork.plan import TrainPlan
from gpuwork.sizing import parse_seq_len
from gpuwork.ui.common import NumberText, friendly
from gpuwork.ui.share import plan_from_query


@pytest.mark.parametrize(("typed", "tokens"), [("4k", 4096), ("32k", 32768), ("4K tokens", 4096), ("1.5k", 1536),
                                               ("4096", 4096), ("4 096", 4096), ("1.5M", 1_500_000)])
def test_a_sequence_length_in_k_counts_1024_tokens_per_k(typed: str, tokens: int) -> None:
    assert parse_seq_len(typed) == tokens
    assert NumberText(typed, kind="length").number("seq_len") == tokens
    assert plan_from_query({"seq_len": typed}).seq_len == tokens


def test_other_counts_keep_k_as_a_thousand() -> None:
    assert NumberText("4k").number("dataset_tokens") == 4000
    assert plan_from_query({"dataset_tokens": "4k"}).dataset_tokens == 4000


def test_the_cli_reads_4k_as_4096() -> None:
    out = subprocess.run([sys.executable, "-m", "gpuwork", "plan", "--model", "llama-3.1-8b", "--method", "lora",
                          "--seq-len", "4k", "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    import json

    assert json.loads(out.stdout)["plan"]["seq_len"] == 4096


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_a_bad_value_is_named_by_its_field_label_not_its_attribute(lang: str) -> None:
    label = {"en": ("Sequence length", "Micro-batch"), "ru": ("Длина последовательности", "Микробатч")}[lang]
    with pytest.raises(PlanError) as bad:
        parse_seq_len("abc")
    said = friendly(bad.value, lang)
    assert said.startswith(f"{label[0]}: 'abc'") and "seq_len" not in said
    with pytest.raises(PlanError) as big:
        TrainPlan(batch_size=10**9)
    said = friendly(big.value, lang)
    assert said.startswith(f"{label[1]}: 1000000000") and "batch_size" not in said


# -- the dataset as tokens, a size or a file of documents (issue 20, item 4) ------------------------------------


def _upload(name: str, content: bytes) -> tuple[dict, ...]:
    import datetime

    return ({"name": name, "content": memoryview(content), "type": "", "size": len(content),
             "last_modified": datetime.datetime.now(datetime.UTC)},)


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_dataset_field_takes_a_size_and_says_the_ratio_it_used(lang: str) -> None:
    from gpuwork.estimate.disk import BYTES_PER_TOKEN_TEXT
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm({"model": "llama-3.2-1b", "method": "lora"}, lang=lang)
    form.controls["dataset_tokens"].value = "200 MB"
    assert form.error is None
    assert form.plan.dataset_bytes == 200_000_000
    assert form.plan.dataset_tokens == round(200_000_000 / BYTES_PER_TOKEN_TEXT)
    note = form.dataset_note.value
    assert ("4 bytes per token" if lang == "en" else "4 байта на токен") in note
    assert ("50,000,000" if lang == "en" else "50\u00a0000\u00a0000") in note.replace(" ", "\u00a0")
    form.controls["seq_len"].value = "4k"  # another field: the size stays
    assert form.plan.dataset_bytes == 200_000_000 and form.plan.seq_len == 4096
    form.controls["dataset_tokens"].value = "30M"  # tokens typed: no size is claimed any more
    assert (form.plan.dataset_tokens, form.plan.dataset_bytes, form.dataset_note.value) == (30_000_000, None, "")
    form.controls["dataset_tokens"].value = "200 parsecs"
    assert form.plan is None and "dataset_tokens" not in form.error
    assert form.error.startswith("Dataset:" if lang == "en" else "Датасет:")


def test_a_file_of_documents_is_counted_at_the_stated_ratio_without_a_tokenizer() -> None:
    import json

    from gpuwork.estimate.disk import BYTES_PER_TOKEN_TEXT
    from gpuwork.ui.sizing import SizingForm

    docs = [f"document {i}: " + "gradient " * (i + 1) for i in range(40)]
    content = "\n".join(json.dumps({"text": d}) for d in docs).encode()
    form = SizingForm({"model": "llama-3.2-1b", "method": "lora"}, lang="ru")
    form.documents.value = _upload("train.jsonl", content)
    text_bytes = sum(len(d.encode()) for d in docs)
    assert form.error is None
    assert form.plan.dataset_tokens == round(text_bytes / BYTES_PER_TOKEN_TEXT)
    assert form.plan.dataset_bytes == len(content)
    assert "train.jsonl: документов 40" in form.dataset_note.value and "4 байта на токен" in form.dataset_note.value
    form.documents.value = _upload("empty.txt", b"   \n")
    assert form.plan is None and "empty.txt" in form.error


def test_a_file_of_documents_is_counted_with_the_tokenizer_next_to_the_models_config(tmp_path) -> None:
    from transformers import PreTrainedTokenizerFast

    from gpuwork.measure.textdata import train_tokenizer
    from gpuwork.ui.sizing import count_documents, manual_config

    docs = ["the quick brown fox jumps over the lazy dog"] * 30 + ["pack my box with five dozen liquor jugs"] * 30
    trained = train_tokenizer(docs, 400, source="test")
    PreTrainedTokenizerFast(tokenizer_object=trained.backend).save_pretrained(str(tmp_path))
    config = manual_config({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                            "num_key_value_heads": 4, "intermediate_size": 128, "vocab_size": 400})
    (tmp_path / "config.json").write_text(__import__("json").dumps(config))
    counted = count_documents("docs.txt", "\n".join(docs).encode(), str(tmp_path / "config.json"), "tiny")
    want = len(trained.backend.encode("\n".join(docs)).ids)  # one .txt file is one document
    assert (counted.tokenizer, counted.documents, counted.tokens) == (str(tmp_path), 1, want)
    from gpuwork.present.messages import render

    assert "counted with the tokenizer of tiny" in render(counted.note("en"), "en")


# -- the rental period's bound and the owned cards (issue 20, item 4 and the My-cards gaps) -----------------------


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_a_rental_period_beyond_the_bound_is_one_clear_line_and_the_request_recovers(lang: str) -> None:
    from gpuwork.ui.request import MAX_RENT_DAYS, RequestPanel

    panel = RequestPanel(TrainPlan(model="mistral-7b", method="qlora"), lang=lang)
    panel.rent_days.value = MAX_RENT_DAYS + 1
    assert panel.request is None and panel.text.value == ""
    assert panel.error.startswith("Rent period" if lang == "en" else "Срок аренды")
    assert ("36,500" if lang == "en" else "36\u00a0500") in panel.error.replace(" ", "\u00a0")
    panel.rent_days.value = 30
    assert panel.error is None and panel.request.as_dict()["rent_period_days"] == 30


def test_on_owned_cards_the_request_and_the_profile_line_name_them_and_no_rental() -> None:
    from gpuwork.estimate.decision import Constraints
    from gpuwork.sizing import decide, parse_have
    from gpuwork.ui.request import RequestPanel
    from gpuwork.ui.sizing import details_html, size_plan

    plan = TrainPlan(model="mistral-7b", method="qlora")
    have = parse_have("1xrtx4090")
    want = decide(plan, constraints=Constraints(have=have))
    panel = RequestPanel(plan, have=lambda: have)
    suggested = panel.request.as_dict()["suggested"]
    assert (suggested["reference_gpu"], suggested["gpus"], suggested["offer"]) == (want.gpu_id, want.gpus, None)
    result = size_plan(plan, constraints=Constraints(have=have))
    for lang, own, rented in (("en", "your own cards, no rental", "on-demand"), ("ru", "ваши карты, без аренды",
                                                                                 "по требованию")):
        shown = details_html(result, lang)
        line = shown.split("<p>", 2)[1].split("</p>", 1)[0]
        assert own in line and rented not in line, line


# -- uploads through the bounded reader; a config.json with a training config is used (issue 20, item 5) -----------


def test_uploads_are_read_by_the_bounded_parsers() -> None:
    from gpuwork.ui.common import upload_json
    from gpuwork.ui.sizing import SizingForm

    deep = b"[" * 500 + b"]" * 500  # within the 1 MB upload limit, deeper than any config
    with pytest.raises(Exception) as bad:
        upload_json({"name": "record.json", "content": deep}, "record")
    assert "record.json" in str(bad.value) and "64" in str(bad.value)
    form = SizingForm({"model": "llama-3.2-1b", "method": "lora"})
    form.upload.value = _upload("config.json", b'{"model_type": "llama", "n": ' + b"9" * 400 + b"}")
    assert form.plan is None and "config.json" in form.error and "Traceback" not in form.error
    form.upload.value = _upload("train.yaml", b"a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
                                + b"".join(b"%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n"
                                           % ((chr(98 + i).encode(),) * 2 + (chr(97 + i).encode(),) * 8)
                                           for i in range(8)))
    assert form.plan is None and "train.yaml" in form.error


def test_a_model_config_uploaded_with_a_training_config_is_the_model_sized() -> None:
    import json

    from gpuwork.ui.sizing import SizingForm, manual_config

    config = manual_config({"hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
                            "num_key_value_heads": 8, "intermediate_size": 2048, "vocab_size": 32000})
    args = {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2, "max_seq_length": 1024,
            "bf16": True, "gradient_checkpointing": True}
    form = SizingForm({"model": "llama-3.2-1b", "method": "lora"})
    form.upload.value = (_upload("config.json", json.dumps(config).encode())[0],
                         _upload("training_args.json", json.dumps(args).encode())[0])
    assert form.error is None and form.model_source.value == "upload" and form.model_label() == "config.json"
    assert (form.plan.batch_size, form.plan.grad_accum, form.plan.seq_len, form.plan.grad_checkpointing) == (
        4, 2, 1024, True)
    # the uploaded architecture, not the preset the form showed before: 4 layers of 1024, 32k vocabulary
    assert form.memory.params.total < 200_000_000
