"""Hostile inputs to ``gpuwork estimate`` (issue 21): model references, config.json files, length files, numbers."""

from __future__ import annotations

import pytest

from gpuwork.facts import model as model_module

from .helpers import BAD_WORDS, LLAMA, model_folder, one_error


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Hub lookup fails the test: a mistyped path must be refused from its shape, before any network call."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)

    def hub(*_: object) -> None:
        raise AssertionError("the Hub was asked")

    monkeypatch.setattr(model_module, "_hub_config", hub)
    monkeypatch.setattr(model_module, "_hub_reachable", hub)


@pytest.mark.parametrize("ref", ["./modles/llama", "../no-such-model/", "/nonexistent/model/config.json",
                                 "~/no/such/model", "models/llama-3.2-1b/config.json", "C:\\models\\llama",
                                 "org/name/extra"])
def test_a_mistyped_model_path_is_refused_without_asking_the_hub(cli, no_hub, ref) -> None:
    rc, _, err = cli("estimate", "--model", ref)
    one_error(rc, err, "model")


def test_a_relative_path_under_an_existing_folder_is_a_missing_file_not_a_hub_id(cli, no_hub, tmp_path,
                                                                                    monkeypatch) -> None:
    (tmp_path / "models").mkdir()
    monkeypatch.chdir(tmp_path)
    rc, _, err = cli("estimate", "--model", "models/llama-typo")
    one_error(rc, err, "does not exist")


def test_a_5000_character_model_name_is_shown_cut(cli, no_hub) -> None:
    rc, _, err = cli("estimate", "--model", "a" * 5000)
    line = one_error(rc, err, "5,000 characters")
    assert len(line) < 600


@pytest.mark.parametrize(("architectures", "words"), [
    (7, "architectures=7"), ({"a": 1}, "architectures={'a': 1}"), ([1, 2], "architectures=[1, 2]")])
def test_architectures_of_the_wrong_type_is_one_line(cli, tmp_path, architectures, words) -> None:
    folder = model_folder(tmp_path, "m", {**LLAMA, "architectures": architectures})
    rc, _, err = cli("estimate", "--model", str(folder))
    one_error(rc, err, words, "LlamaForCausalLM")


def test_architectures_as_one_string_is_read_as_a_list(cli, tmp_path) -> None:
    folder = model_folder(tmp_path, "m", {**LLAMA, "architectures": "LlamaForCausalLM"})
    rc, out, err = cli("estimate", "--model", str(folder), "--json")
    assert rc == 0, err


def test_a_model_type_that_is_not_a_string_is_one_line(cli, tmp_path) -> None:
    folder = model_folder(tmp_path, "m", {**LLAMA, "model_type": 5})
    rc, _, err = cli("estimate", "--model", str(folder))
    one_error(rc, err, "model_type=5")


@pytest.mark.parametrize(("experts", "words"), [
    ({"num_local_experts": 1_000_000, "num_experts_per_tok": 2}, "num_local_experts=1000000"),
    ({"num_local_experts": 4, "num_experts_per_tok": 8}, "8 experts per token"),
    ({"num_local_experts": -1, "num_experts_per_tok": 2}, "num_local_experts=-1"),
    ({"num_local_experts": 0, "num_experts_per_tok": 2}, "only 0 experts")])
def test_an_impossible_expert_count_is_refused(cli, tmp_path, experts, words) -> None:
    config = {**LLAMA, "model_type": "mixtral", "architectures": ["MixtralForCausalLM"], **experts}
    rc, _, err = cli("estimate", "--model", str(model_folder(tmp_path, "moe", config)))
    one_error(rc, err, words)


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop", "dangling", "deep", "bigint", "huge", "junk"])
def test_a_bad_file_as_the_model_config_is_named(cli, bad, kind) -> None:
    rc, _, err = cli("estimate", "--model", str(bad[kind]))
    one_error(rc, err, BAD_WORDS[kind])


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop", "dangling", "folder", "huge", "deep", "bigint", "junk"])
def test_a_bad_plan_file_is_named(cli, bad, kind) -> None:
    rc, _, err = cli("estimate", "--plan", str(bad[kind]))
    one_error(rc, err, BAD_WORDS[kind])


@pytest.mark.parametrize(("flag", "value"), [("--lora-alpha", "1e-300"), ("--lora-alpha", "1e308"),
                                             ("--lora-dropout", "1e308"), ("--seq-len", "1" + "0" * 30),
                                             ("--gpus", "1" + "0" * 30), ("--lora-r", "-1")])
def test_a_number_outside_its_range_is_one_line(cli, flag, value) -> None:
    rc, _, err = cli("estimate", "--method", "lora", flag, value)
    one_error(rc, err)


def test_escape_bytes_in_a_name_never_reach_the_terminal(cli) -> None:
    rc, out, err = cli("estimate", "--method", "\x1b[2Jlora")
    line = one_error(rc, err, "\\x1b[2J")
    assert "\x1b" not in line + out


class TestLengthFiles:
    """--lengths-from reads the user's texts through the one reader; one document is at most 8 MiB."""

    def test_a_line_longer_than_a_document_may_be_is_one_line(self, cli, tmp_path) -> None:
        path = tmp_path / "long.jsonl"
        path.write_bytes(b'{"text": "' + b"a" * (9 << 20) + b'"}\n')
        rc, _, err = cli("estimate", "--lengths-from", str(path))
        one_error(rc, err, "document 1", "8 MiB", "split")

    def test_a_txt_file_larger_than_a_document_is_one_line(self, cli, tmp_path) -> None:
        path = tmp_path / "book.txt"
        path.write_bytes(b"word " * (2 << 20))  # 10 MiB
        rc, _, err = cli("estimate", "--lengths-from", str(path))
        one_error(rc, err, "10.0 MiB", "8 MiB")

    @pytest.mark.parametrize("kind", ["fifo", "zero", "loop", "dangling"])
    def test_a_special_file_is_named(self, cli, bad, kind) -> None:
        rc, _, err = cli("estimate", "--lengths-from", str(bad[kind]))
        one_error(rc, err, BAD_WORDS[kind])

    def test_a_fifo_as_the_tokenizer_is_named(self, cli, bad, tmp_path) -> None:
        text = tmp_path / "a.txt"
        text.write_text("hello world")
        rc, _, err = cli("estimate", "--lengths-from", str(text), "--lengths-tokenizer", str(bad["fifo"]))
        one_error(rc, err, "FIFO")

    def test_a_file_that_is_not_a_tokenizer_says_so(self, cli, tmp_path) -> None:
        text = tmp_path / "a.txt"
        text.write_text("hello world")
        rc, _, err = cli("estimate", "--lengths-from", str(text), "--lengths-tokenizer", str(text))
        one_error(rc, err, "not a tokenizer")


@pytest.mark.parametrize(("layers", "words"), [(-2, "num_hidden_layers=-2"), (2.5, "num_hidden_layers=2.5")])
def test_a_bad_layer_count_is_refused_before_transformers_is_needed(cli, tmp_path, monkeypatch, layers,
                                                                     words) -> None:
    """The first look at a config needs no torch or transformers: with both made unimportable, still one line."""
    import sys

    monkeypatch.setitem(sys.modules, "transformers", None)
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(model_module, "_build_cached", model_module._build_cached.__wrapped__)
    rc, _, err = cli("estimate", "--model", str(model_folder(tmp_path, "m", {**LLAMA, "num_hidden_layers": layers})))
    one_error(rc, err, words)
