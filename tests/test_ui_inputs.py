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
