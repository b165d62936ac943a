"""Hostile inputs to the Python API (issue 21): TrainPlan, gpuwork.sizing, the facts loaders and the measure
readers raise gpuwork's own errors (GpuworkError) with the CLI's messages, never another exception."""

from __future__ import annotations

import pytest

from gpuwork import sizing
from gpuwork.errors import CatalogError, GpuworkError, ModelError, PlanError
from gpuwork.facts.catalog import load_offers
from gpuwork.facts.model import get_spec
from gpuwork.facts.planfile import load_plan
from gpuwork.measure.calibration import CalibrationError, load_calibration
from gpuwork.measure.heldout import load_document
from gpuwork.measure.lengths import length_histogram
from gpuwork.measure.textdata import DataError, load_texts, load_tokenizer
from gpuwork.plan import TrainPlan

from .helpers import BAD_WORDS, LLAMA, model_folder


@pytest.mark.parametrize(("field", "value"), [("epochs", 1e-300), ("epochs", 1e308), ("lora_alpha", 1e-300),
                                              ("lora_alpha", 1e308), ("seq_len", 10**30), ("gpus", 10**30),
                                              ("dataset_tokens", 10**30), ("lora_dropout", float("nan")),
                                              ("eval_fraction", float("inf")), ("checkpoints_kept", 10**30)])
def test_a_plan_field_beyond_either_end_is_a_plan_error(field, value) -> None:
    with pytest.raises(PlanError) as info:
        TrainPlan(**{field: value})
    assert info.value.field == field and field in str(info.value)


@pytest.mark.parametrize(("field", "value"), [("epochs", 1e-4), ("epochs", 10_000), ("lora_alpha", 1e-3),
                                              ("lora_alpha", 1e6)])
def test_a_plan_field_at_either_end_is_taken(field, value) -> None:
    assert getattr(TrainPlan(**{field: value}), field) == value


@pytest.mark.parametrize("ref", ["./modles/llama", "/no/such/model", "C:\\models\\x", "a" * 5000, "\x1b[31m"])
def test_a_mistyped_model_is_a_model_error(ref) -> None:
    with pytest.raises(ModelError):
        sizing.estimate_memory(TrainPlan(model=ref))


def test_a_typed_escape_sequence_comes_back_escaped_in_the_error() -> None:
    """The API's message showed the user's ESC raw (hostile-probe residual): a terminal would act on it."""
    with pytest.raises(ModelError) as info:
        sizing.estimate_memory(TrainPlan(model="\x1b[31m\u202eabc"))
    for lang in ("en", "ru"):
        shown = info.value.text(lang)
        assert "\x1b" not in shown and "\u202e" not in shown
        assert "'\\x1b[31m\\u202eabc'" in shown


@pytest.mark.parametrize("value", [5, 2.0, ["1xrtx4090"], b"1xrtx4090"])
def test_owned_cards_that_are_not_text_are_a_plan_error(value) -> None:
    """parse_have(5) raised AttributeError (hostile-probe residual)."""
    with pytest.raises(PlanError, match="not a count and a card") as info:
        sizing.parse_have(value)
    assert info.value.field == "have"


def test_an_ambiguous_card_name_lists_the_cards_it_could_mean() -> None:
    """'H100' is three cards of different speed and memory: refused, naming each."""
    with pytest.raises(CatalogError, match="h100_sxm, h100_nvl, h100_pcie"):
        sizing.parse_have("2xH100")
    count, gpu = sizing.parse_have("2 x h100_sxm")
    assert (count, gpu.gpu_id) == (2, "h100_sxm")


@pytest.mark.parametrize("architectures", [7, {"a": 1}, [1, 2]])
def test_a_config_with_bad_architectures_is_a_model_error(tmp_path, architectures) -> None:
    with pytest.raises(ModelError, match="architectures"):
        get_spec(str(model_folder(tmp_path, "m", {**LLAMA, "architectures": architectures})))


def test_a_million_experts_is_a_model_error(tmp_path) -> None:
    config = {**LLAMA, "model_type": "mixtral", "num_local_experts": 1_000_000, "num_experts_per_tok": 2}
    with pytest.raises(ModelError, match="num_local_experts"):
        get_spec(str(model_folder(tmp_path, "moe", config)))


@pytest.mark.parametrize("mfu", [float("nan"), 2, -1, 0, "x", 1e-300, 0.0009, True])
def test_a_bad_mfu_is_a_plan_error(mfu) -> None:
    """The API refuses what the CLI's --mfu refuses (1e-300 was taken by the API: hostile-probe residual)."""
    with pytest.raises(PlanError, match="from 0.001 to 1"):
        sizing.estimate_time(TrainPlan(), "h100_sxm", mfu=mfu)


@pytest.mark.parametrize("mfu", [0.001, 0.35, 1])
def test_an_mfu_at_or_inside_the_ends_is_taken(mfu) -> None:
    assert sizing.estimate_time(TrainPlan(), "h100_sxm", mfu=mfu).mfu.value == mfu


def test_an_empty_catalog_is_a_catalog_error(tmp_path) -> None:
    path = tmp_path / "catalog.csv"
    path.write_text("offer_id,provider,gpu_id,gpus_per_node,link,network,mode,region,price_per_gpu_hour_usd,"
                    "min_rental_hours,as_of,note\n")
    with pytest.raises(CatalogError, match="no offers"):
        load_offers(path)


LOADERS = {
    "load_offers": (load_offers, CatalogError),
    "get_spec": (lambda p: get_spec(str(p)), ModelError),
    "load_plan": (load_plan, PlanError),
    "load_texts": (load_texts, DataError),
    "length_histogram": (lambda p: length_histogram(p, seq_len=128), DataError),
    "load_tokenizer": (load_tokenizer, DataError),
    "heldout.load_document": (load_document, GpuworkError),
    "load_calibration": (lambda p: load_calibration("NVIDIA H100", p), CalibrationError),
}


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop", "dangling", "huge"])
@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_every_loader_names_a_special_or_huge_file_in_its_own_error(bad, loader, kind) -> None:
    load, error = LOADERS[loader]
    if loader in ("load_texts", "length_histogram") and kind == "huge":
        pytest.skip("a 100 MB text file is within the text cap; its one document is refused below")
    with pytest.raises(error) as info:
        load(bad[kind])
    assert BAD_WORDS[kind] in str(info.value), str(info.value)


@pytest.mark.parametrize("loader", ["heldout.load_document", "load_calibration", "get_spec", "load_plan"])
@pytest.mark.parametrize("kind", ["deep", "bigint"])
def test_json_loaders_bound_depth_and_digits(bad, loader, kind) -> None:
    load, error = LOADERS[loader]
    with pytest.raises(error) as info:
        load(bad[kind])
    assert BAD_WORDS[kind] in str(info.value)


def test_a_100_mb_line_is_a_data_error(tmp_path) -> None:
    path = tmp_path / "long.jsonl"
    with open(path, "wb") as out:
        out.write(b'{"text": "')
        out.write(b"a" * (100 << 20))
        out.write(b'"}\n')
    with pytest.raises(DataError, match="8 MiB"):
        load_texts(path)


@pytest.mark.parametrize("plan", [None, {"model": "llama-3.1-8b"}, "llama-3.1-8b", 3])
@pytest.mark.parametrize("call", ["estimate_memory", "estimate_time", "evaluate_offers", "advise", "decide",
                                  "match_profile", "estimate_disk", "flops_per_token", "fit_matrix"])
def test_a_plan_of_the_wrong_type_is_a_plan_error_naming_what_to_pass(plan, call) -> None:
    """A None or a dict of fields raised AttributeError deep in an estimator (hostile-probe residual)."""
    args = (plan, "h100_sxm") if call == "estimate_time" else (plan,)
    with pytest.raises(PlanError, match=f"not {type(plan).__name__}: build one with TrainPlan"):
        getattr(sizing, call)(*args)


@pytest.mark.parametrize("offers", [["not an offer"], 3, "offers.csv", [None]])
def test_offers_that_are_not_offers_are_a_catalog_error(offers) -> None:
    for call in (sizing.evaluate_offers, sizing.advise, sizing.decide, sizing.fit_matrix):
        with pytest.raises(CatalogError, match="list of gpuwork Offer objects"):
            call(TrainPlan(), offers)


def test_offers_given_as_any_iterable_of_offers_are_used() -> None:
    two = load_offers()[:2]
    results = sizing.evaluate_offers(TrainPlan(), iter(two))
    assert {r.offer.offer_id for r in results} == {o.offer_id for o in two}
