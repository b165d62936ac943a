"""Tests for gpuwork.present.request: the product brief's own example in both languages, JSON fields, Russian
wording (plurals, dates, numbers) and errors."""

from __future__ import annotations

import json
from datetime import date

import pytest

from gpuwork.errors import PlanError
from gpuwork.estimate.offers import offer_name
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
from gpuwork.present.request import model_display_name, plural_ru, rental_request
from gpuwork.units import fmt_size_short as format_size

# The brief: "Fine-tuning, LoRA adapters, context and batch size in the config; dataset 200 GB, need room
# for checkpoints; one month; step-time test required" - a LoRA plan with a 200 GB dataset (50 B tokens
# at 4 B/token), 30 days of rent, context and batch left to the config, the trial required.
BRIEF_PLAN = TrainPlan(model="llama-3.1-8b", method="lora", dataset_bytes=200 * 10**9,
                       dataset_tokens=50 * 10**9)
BRIEF_EN = ("Fine-tuning, LoRA adapters, context and batch size in the config; dataset 200 GB, need room for "
            "checkpoints; one month; step-time test required")
BRIEF_RU = ("Дообучение, LoRA-адаптеры, контекст и батч в конфиге; датасет 200 ГБ, нужно место под чекпойнты; "
            "срок — месяц; требуется тест времени шага")


def test_the_briefs_example_in_english_and_russian():
    en = rental_request(BRIEF_PLAN, lang="en", rent_period_days=30)
    ru = rental_request(BRIEF_PLAN, lang="ru", rent_period_days=30)
    assert en.summary == BRIEF_EN
    assert ru.summary == BRIEF_RU
    assert en.text.startswith(BRIEF_EN + "\n") and ru.text.startswith(BRIEF_RU + "\n")
    for phrase in ("LoRA adapters", "context and batch size in the config", "dataset 200 GB",
                   "need room for checkpoints", "one month", "step-time test required"):
        assert phrase in en.text
    for phrase in ("Дообучение", "LoRA-адаптеры", "контекст и батч в конфиге", "датасет 200 ГБ",
                   "нужно место под чекпойнты", "срок — месяц", "требуется тест времени шага"):
        assert phrase in ru.text
    # natural Russian: no English leftovers from the English template
    for english in ("Fine-tuning", "dataset", "checkpoints", " h ", "->", "Suggested"):
        assert english not in ru.text
    # JSON
    data = json.loads(json.dumps(ru.as_dict(), ensure_ascii=False))
    assert data["lang"] == "ru" and data["summary"] == BRIEF_RU
    assert data["method"] == "lora" and data["model"] == "meta-llama/Llama-3.1-8B"
    assert data["dataset_bytes"] == 200 * 10**9 and data["dataset_tokens"] == 50 * 10**9
    assert data["context_in_config"] is True and data["seq_len"] == 2048
    assert data["rent_period_days"] == 30 and data["rent_period_from_estimate"] is False
    assert data["trial_required"] is True
    assert data["checkpoints_kept"] == 2 and data["checkpoint_bytes"] == 81_788_928  # 6,815,744 x 12 B
    # disk: 200 GB raw + 200 GB token ids + 16 GB base + checkpoints + export + 20 GB software, +20 %
    assert data["disk_recommended_bytes"] == pytest.approx(523.6e9, rel=1e-3)
    assert data["profile"]["id"] == "02" and data["suggested"]["gpus"] == 1
    assert data["suggested"]["reference_gpu"] == "h100_sxm"
    assert data["estimates"]["total_s"] > 30 * 86400  # 50 B tokens on one H100: more than the month
    assert "Внимание" in ru.text and "Note: the estimated training time" in en.text
    assert data["suggested"]["offer"]["illustrative"] is True
    # reasons: rendered text for the reader of the request, codes for a program
    assert data["reasons"][0].startswith("помещается на одну серверную карту 80 ГБ: ")
    assert [r["code"] for r in data["reason_codes"]] == ["profile.fits_server_card", "profile.regular_run",
                                                        "profile.long_run"]  # 50 B tokens: months on one GPU
    assert data["profile"]["name"] == "регулярное дообучение" and en.as_dict()["profile"]["name"] == "regular fine-tuning"


def test_numbers_follow_the_language() -> None:
    """Sizes, memory, durations, prices and counts: "8 294 токенов/с", "31,8 ГиБ" in Russian, "8,294" in English."""
    en = rental_request(BRIEF_PLAN, lang="en", rent_period_days=30, budget_usd=12_500)
    ru = rental_request(BRIEF_PLAN, lang="ru", rent_period_days=30, budget_usd=12_500)
    assert "Budget: up to $12,500." in en.text and "Бюджет: до 12 500 USD." in ru.text
    assert "(8.03 B parameters, 6.8 M trainable)" in en.text and "(8,03 млрд параметров, обучаемых — 6,8 млн)" in ru.text
    assert "(about 50.0 B tokens)" in en.text and "(около 50,0 млрд токенов)" in ru.text
    gib = f"{ru.fields['estimates']['memory_per_gpu_bytes'] / 2**30:.1f}"
    assert f"Estimates: {gib} GiB of GPU memory" in en.text
    assert f"Оценки: память {gib.replace('.', ',')} ГиБ на GPU" in ru.text
    tokens_s = round(ru.fields["estimates"]["tokens_per_s"])
    assert f"{tokens_s:,} tokens/s" in en.text and f"{tokens_s:,} токенов/с".replace(",", " ") in ru.text


def test_explicit_context_date_budget_and_period():
    plan = TrainPlan(model="qwen2.5-0.5b", method="full", seq_len=2048, batch_size=4, grad_accum=8)
    en = rental_request(plan, lang="en", context_in_config=False, start_date="2026-12-01", budget_usd=5000,
                        rent_period_days=14, trial_required=False)
    ru = rental_request(plan, lang="ru", context_in_config=False, start_date=date(2026, 12, 1), budget_usd=5000,
                        rent_period_days=21, trial_required=False)
    assert "context 2,048 tokens, batch 4 (gradient accumulation x8)" in en.summary
    assert "контекст 2 048 токенов, батч 4 (накопление градиента ×8)" in ru.summary
    assert "two weeks" in en.summary and "срок — 21 день" in ru.summary
    assert en.summary.endswith("no step-time test needed") and ru.summary.endswith("тест времени шага не нужен")
    assert "Fine-tuning, full weight update" in en.summary and "полное обновление весов" in ru.summary
    assert "desired start: 1 December 2026" in en.text and "желаемая дата начала — 1 декабря 2026 года" in ru.text
    assert "Budget: up to $5,000." in en.text and "Бюджет: до 5 000 USD." in ru.text
    assert "Step-time test" not in en.text
    assert en.as_dict()["start_date"] == "2026-12-01" and en.as_dict()["budget_usd"] == 5000
    # the profile (01: a 0.5 B model fits a 24 GB card) drives the suggestion
    assert en.as_dict()["profile"]["id"] == "01" and "profile 01" in en.text and "профиль 01" in ru.text


def test_rent_period_from_the_estimate():
    plan = TrainPlan(model="qwen2.5-0.5b", method="lora", seq_len=2048)
    req = rental_request(plan, lang="ru")
    assert req.fields["rent_period_from_estimate"] is True
    assert req.fields["rent_period_days"] == 1  # a couple of hours of training round up to a day
    assert "срок — один день" in req.summary and "по оценке времени обучения" in req.text


def test_russian_plurals_sizes_and_names():
    forms = ("день", "дня", "дней")
    assert [plural_ru(n, *forms) for n in (1, 2, 4, 5, 11, 12, 14, 21, 22, 25, 101, 111, 112)] == [
        "день", "дня", "дня", "дней", "дней", "дней", "дней", "день", "дня", "дней", "день", "дней", "дней"]
    assert format_size(200e9) == "200 GB" and format_size(200e9, "ru") == "200 ГБ"
    assert format_size(1.5e12) == "1.5 TB" and format_size(1.5e12, "ru") == "1,5 ТБ"
    assert format_size(2.5e9, "ru") == "2,5 ГБ"
    assert model_display_name("llama-3.1-8b") == "meta-llama/Llama-3.1-8B"
    assert model_display_name("/some/config.json") == "/some/config.json"


def test_methods_in_both_languages():
    cases = {
        "qlora": ("QLoRA adapters on a 4-bit base model", "QLoRA-адаптеры на 4-битной базовой модели"),
        "freeze": ("last 2 layers, the rest frozen", "последних 2 слоёв, остальные заморожены"),
        "scratch": ("Training from scratch", "Обучение с нуля"),
    }
    for method, (en, ru) in cases.items():
        plan = TrainPlan(model="qwen2.5-0.5b", method=method, seq_len=1024)
        assert en in rental_request(plan, include_offer=False).summary
        assert ru in rental_request(plan, lang="ru", include_offer=False).summary


def test_errors():
    with pytest.raises(PlanError, match="lang"):
        rental_request(BRIEF_PLAN, lang="de")
    with pytest.raises(PlanError, match="YYYY-MM-DD") as info:
        rental_request(BRIEF_PLAN, start_date="01.12.2026")
    assert info.value.msg.code == "error.request.start_date"
    assert info.value.text("ru") == "start_date='01.12.2026' — не дата в виде ГГГГ-ММ-ДД"
    with pytest.raises(PlanError, match="budget_usd"):
        rental_request(BRIEF_PLAN, budget_usd=-1)
    with pytest.raises(PlanError, match="rent_period_days"):
        rental_request(BRIEF_PLAN, rent_period_days=0)


# -- part 8: class, vendor and example agree; the protocol the provider can reproduce ------------------------------


def test_class_vendor_and_example_agree() -> None:
    """The example offer is of the class the request names: the reference card's vendor and memory class (an
    MI300X node next to "H100 class", or an H100 next to "L40S class", used to be the cheapest example)."""
    from gpuwork.facts.catalog import get_gpu

    cases = [TrainPlan(model="llama-3.1-8b", method="full", precision="bf16", seq_len=2048),  # 03, was MI300X
             TrainPlan(model="llama-3.1-8b", method="qlora", seq_len=2048),  # 01 on 48 GB, was an H100
             TrainPlan(model="llama-3.1-8b", method="lora", seq_len=8192, batch_size=2, grad_checkpointing=True)]
    for plan in cases:
        req = rental_request(plan, lang="en")
        s = req.fields["suggested"]
        example = get_gpu(s["offer"]["gpu"])
        reference = get_gpu(s["reference_gpu"])
        assert example.vendor == reference.vendor == s["vendor"] == "NVIDIA", plan
        assert s["backend"] in (None, "NCCL")
        if req.fields["profile"]["id"] == "01":
            assert 48 <= example.memory_gb < 80 and "(L40S class" in req.text
        else:
            assert example.memory_gb >= 80 and example.gpu_class.value == "server"


def test_the_request_names_framework_links_validation_and_mode() -> None:
    plan = TrainPlan(model="llama-3.1-8b", method="full", precision="bf16", seq_len=2048)
    en = rental_request(plan, lang="en")
    ru = rental_request(plan, lang="ru")
    s = en.fields["suggested"]
    # ZeRO-2 with DeepSpeed's fp32 masters (16 B/param, 14 of them sharded) fits 80 GB cards from 3 GPUs
    assert s["gpus"] == 3 and s["sharding"] == "zero2"
    assert "Software: PyTorch, Hugging Face Trainer (transformers), ZeRO-2; 3 processes via deepspeed/accelerate, " \
           "NCCL between GPUs." in en.text
    assert "3 процесса через deepspeed/accelerate, обмен между GPU — NCCL" in ru.text
    # bandwidth per GPU = bytes each GPU sends per step / step time; ZeRO-2 on 3 GPUs: (n-1)/n x (grads + bf16 params)
    # = 2/3 x 8,030,261,248 x (2 + 2) B = 21.41 GB per step
    assert s["comm_bytes_per_step"] == pytest.approx(8_030_261_248 * 4 * 2 / 3)
    step_s = en.fields["estimates"]["step_time_s"]
    assert s["comm_bytes_per_s_per_gpu"] == pytest.approx(s["comm_bytes_per_step"] / step_s)
    assert "each GPU sends 21.4 GB per optimizer step" in en.text and "NVLink needed" in en.text
    # validation share of the run
    assert en.fields["estimates"]["eval_fraction"] == 0.05
    assert "Validation: 5% of the training time" in en.text and "Валидация: 5 % времени обучения" in ru.text
    # a 3.6-hour run is rented by the hour, and the request says where reserving would start to pay
    assert s["mode"] == "on-demand" and en.fields["profile"]["mode"] == "on-demand"
    assert "Rental mode: on demand:" in en.text and s["rental_break_even_s"] > 0
    one = rental_request(TrainPlan(model="llama-3.1-8b", method="qlora", seq_len=2048), lang="en")
    assert "one GPU, one process" in one.text and "Links: one GPU, no exchange between GPUs." in one.text
    assert "bitsandbytes" in one.fields["suggested"]["framework"]
    fsdp = rental_request(TrainPlan(model="llama-3.2-1b", method="full", gpus=2, sharding="fsdp"), lang="en")
    assert "PyTorch FSDP; 2 processes via accelerate/torchrun, NCCL between GPUs" in fsdp.text


def test_the_trials_measured_figures_are_quoted() -> None:
    from pathlib import Path

    from gpuwork.measure.trial import TrialRecord

    record = TrialRecord.from_dict(json.loads(
        (Path(__file__).parent / "data" / "trial_record_own_run.json").read_text(encoding="utf-8")))
    req = rental_request(record.plan, lang="en", trial_record=record)
    s = record.summary
    line = next(x for x in req.text.splitlines() if x.startswith("Measured in the trial"))
    assert f"{s.measured_steps} measured steps" in line and f"step {s.median_step_time_s:.3f} s" in line
    assert f"{round(s.tokens_per_s)} tokens/s" in line
    assert req.fields["trial"]["median_step_time_s"] == s.median_step_time_s
    ru = rental_request(record.plan, lang="ru", trial_record=record)
    assert "Замерено в пробном запуске" in ru.text
    assert rental_request(record.plan, lang="en").fields["trial"] is None


@pytest.mark.parametrize("plan, filters", [
    (TrainPlan(model="llama-3.1-70b", method="full"), {}),  # an AMD node is the cheapest
    (TrainPlan(model="mistral-7b", method="qlora"), {"gpu_class": ["consumer"]}),  # several consumer cards
])
def test_a_chosen_offer_is_what_the_request_asks_for(plan: TrainPlan, filters: dict) -> None:
    from gpuwork.facts.catalog import get_gpu
    from gpuwork.sizing import evaluate_offers

    chosen = next(r for r in evaluate_offers(plan, include_unfit=False, **filters) if r.expected_cost_usd)
    for lang in ("en", "ru"):
        req = rental_request(plan, lang=lang, offer=chosen)
        s = req.fields["suggested"]
        gpu = get_gpu(chosen.offer.gpu_id)
        assert (s["reference_gpu"], s["gpus"], s["vendor"]) == (chosen.offer.gpu_id, chosen.fit.plan.gpus, gpu.vendor)
        assert s["offer"]["offer_id"] == chosen.offer.offer_id and s["mode"] == chosen.offer.mode.value
        assert s["sharding"] == chosen.fit.plan.sharding.value
        assert req.fields["estimates"]["total_s"] == chosen.time.total_s
        assert req.fields["estimates"]["memory_per_gpu_bytes"] == chosen.fit.device_total_bytes
        assert gpu.display_name in req.text and chosen.offer.offer_id not in req.text
        # the example names the offer as the offers table does, in the request's language
        assert render(offer_name(chosen.offer), lang) in req.text
        assert ("RCCL" in req.text) == (gpu.vendor == "AMD")
    # without a chosen offer the request names the profile's reference card, as before
    assert rental_request(plan).fields["suggested"]["reference_gpu"] in ("rtx4090", "l40s", "h100_sxm")


@pytest.mark.parametrize(("precision", "sharding"), [("bf16", "fsdp"), ("bf16-mixed", "zero3")])
def test_the_requests_sharding_and_memory_come_from_the_answers_plan(precision: str, sharding: str) -> None:
    """A 70B full fine-tune on 8 GPUs (issue 23, item 2): the sharding the request names, the bytes per parameter it
    says that sharding keeps and the memory per GPU it states all come from the one plan the answer runs."""
    from gpuwork.estimate.advisor import state_bytes_per_param
    from gpuwork.sizing import decide, estimate_memory

    plan = TrainPlan(model="llama-3.1-70b", method="full", precision=precision, gpus=8, sharding=sharding,
                     dataset_tokens=10**8)
    d = decide(plan)
    assert d.fits and d.gpus >= 8
    run = d.run_plan
    for lang, words in (("en", "bytes per trained parameter"), ("ru", "байт на обучаемый параметр")):
        r = rental_request(plan, lang=lang, match=d.match, offer=d.offer)
        s, est = r.fields["suggested"], r.fields["estimates"]
        assert s["sharding"] == run.sharding.value
        assert s["state_bytes_per_param"] == state_bytes_per_param(run) is not None
        assert est["memory_per_gpu_bytes"] == estimate_memory(run).device_total_bytes == d.offer.fit.device_total_bytes
        said = f"{run.sharding.value} ({run.precision.value}: {s['state_bytes_per_param']} {words}"
        assert said in r.text
        data = json.loads(json.dumps(r.as_dict(), ensure_ascii=False))
        assert data["suggested"]["state_bytes_per_param"] == s["state_bytes_per_param"]
    # the plan as written on its own cheapest offer (no change): the request names the plan's sharding and its bytes
    from gpuwork.sizing import evaluate_offers

    top = next(o for o in evaluate_offers(plan, include_unfit=False) if o.expected_cost_usd is not None)
    r = rental_request(plan, lang="en", offer=top)
    assert r.fields["suggested"]["sharding"] == top.fit.plan.sharding.value
    assert r.fields["suggested"]["state_bytes_per_param"] == state_bytes_per_param(top.fit.plan)
    assert r.fields["estimates"]["memory_per_gpu_bytes"] == estimate_memory(top.fit.plan).device_total_bytes
    # the same plan under the other sharding keeps other bytes: the figure is not a constant of the precision
    other = run.replace(sharding="zero3" if run.sharding.value == "fsdp" else "fsdp")
    if precision == "bf16":
        assert state_bytes_per_param(other) != state_bytes_per_param(run)
    else:  # bf16-mixed keeps fp32 weights and states under both
        assert state_bytes_per_param(other) == state_bytes_per_param(run)


def test_the_requests_options_read_the_same_as_an_object_or_as_keywords() -> None:
    """rental_request takes what the request states as one frozen RequestOptions or as keywords (issue 22, item 6);
    the object checks its values as the keywords were checked."""
    from gpuwork.present.request import RequestOptions

    plan = TrainPlan(model="llama-3.1-8b", method="lora", dataset_bytes=2 * 10**9)
    options = RequestOptions(start_date="2030-01-15", budget_usd=250.0, rent_period_days=14, trial_required=False,
                             context_in_config=False)
    for lang in ("en", "ru"):
        by_object = rental_request(plan, lang=lang, options=options)
        by_name = rental_request(plan, lang=lang, start_date="2030-01-15", budget_usd=250.0, rent_period_days=14,
                                 trial_required=False, context_in_config=False)
        assert by_object.as_dict() == by_name.as_dict()
        assert by_object.fields["start_date"] == "2030-01-15" and by_object.fields["rent_period_days"] == 14
        assert by_object.fields["trial_required"] is False and by_object.fields["budget_usd"] == 250.0
    assert options.start_date == date(2030, 1, 15)
    for bad in ({"start_date": "15.01.2030"}, {"budget_usd": 0}, {"rent_period_days": 0}):
        with pytest.raises(PlanError):
            RequestOptions(**bad)
        with pytest.raises(PlanError):
            rental_request(plan, **bad)


def test_the_request_names_the_network_the_estimate_priced() -> None:
    """CommEstimate.network carries the networks.csv id priced between nodes; the request names it (here an offer on
    RoCE, not the InfiniBand NDR of most H100 nodes) and names none for one node."""
    from gpuwork.facts.catalog import load_offers
    from gpuwork.sizing import evaluate_offers

    plan = TrainPlan(model="llama-3.1-70b", method="full", gpus=16, sharding="fsdp", grad_checkpointing=True)
    roce = [o for o in load_offers() if o.gpu_id == "h100_sxm" and o.network.value == "roce-400g"]
    chosen = next(r for r in evaluate_offers(plan, roce, include_unfit=False) if r.expected_cost_usd)
    assert chosen.nodes > 1 and chosen.time.comm.network == "roce-400g"
    en, ru = rental_request(plan, lang="en", offer=chosen), rental_request(plan, lang="ru", offer=chosen)
    assert en.fields["suggested"]["network"] == "roce-400g" and en.fields["suggested"]["nodes"] == chosen.nodes
    assert "; between nodes RoCE 400 Gb/s, at least" in en.text and "InfiniBand NDR" not in en.text
    assert "; между узлами RoCE 400 Гбит/с, не меньше" in ru.text
    one = rental_request(TrainPlan(model="llama-3.1-8b", method="full", precision="bf16", seq_len=2048), lang="en")
    assert one.fields["suggested"]["nodes"] == 1 and one.fields["suggested"]["network"] is None
    assert "; between nodes" not in one.text and "Links:" in one.text


# what each time-changing plan field's non-default value makes the request say, in English and Russian
_SETTINGS = {
    "zero_sync": ("ZeRO-1 synced as nanotron does", "ZeRO-1 синхронизируется как в nanotron", "(zero_sync sliced)"),
    "comm_overlap_off": ("gradients reduced after backward, not overlapped", "без наложения на него",
                         "(comm_overlap off"),
    "comm_overlap_on": ("gradients reduced in buckets behind backward", "градиенты сводятся корзинами",
                        "(comm_overlap on"),
    "deterministic": ("PyTorch deterministic mode", "детерминированный режим PyTorch", "(deterministic)"),
    "weight_decay": ("the optimizer's weight decay 0.1;", "затухание весов в оптимизаторе 0.1;", "(weight_decay 0.1)"),
}


@pytest.mark.parametrize(("changes", "said"), [
    ({"sharding": "zero1", "zero_sync": "sliced"}, ("zero_sync",)),
    ({"sharding": "ddp", "comm_overlap": "off"}, ("comm_overlap_off",)),
    ({"sharding": "zero2", "comm_overlap": "on", "deterministic": True}, ("comm_overlap_on", "deterministic")),
    ({"sharding": "ddp", "weight_decay": 0.1}, ("weight_decay",)),
])
def test_the_request_states_the_time_changing_settings_that_are_not_the_default(changes: dict,
                                                                                said: tuple[str, ...]) -> None:
    plan = TrainPlan(model="llama-3.2-1b", method="full", gpus=2, **changes)
    default = TrainPlan(model="llama-3.2-1b", method="full", gpus=2, sharding=changes["sharding"])
    for lang, (head, index) in {"en": ("Run settings the estimates assume: ", 0),
                                "ru": ("Настройки запуска, из которых исходят оценки: ", 1)}.items():
        text = rental_request(plan, lang=lang).text
        plain = rental_request(default, lang=lang).text
        assert head in text and head not in plain, lang
        for key, words in _SETTINGS.items():
            assert (words[index] in text and words[2] in text) == (key in said), (lang, key)
            assert words[index] not in plain and words[2] not in plain, (lang, key)
    fields = rental_request(plan, lang="en").fields["suggested"]
    assert (fields["zero_sync"], fields["comm_overlap"], fields["deterministic"], fields["weight_decay"]) == (
        plan.zero_sync.value, plan.comm_overlap.value, plan.deterministic, plan.weight_decay_in_effect)


def test_a_one_gpu_request_states_deterministic_mode_alone() -> None:
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048)
    for lang, index in (("en", 0), ("ru", 1)):
        on = rental_request(plan.replace(deterministic=True), lang=lang).text
        off = rental_request(plan, lang=lang).text
        assert _SETTINGS["deterministic"][index] in on and _SETTINGS["deterministic"][index] not in off
        assert _SETTINGS["zero_sync"][index] not in on and _SETTINGS["comm_overlap_on"][index] not in on


@pytest.mark.parametrize("stack", ["torch-loop", "torch-loop-compile", "hf-loop-2024"])
def test_a_plain_loop_is_named_in_the_requests_language(stack: str) -> None:
    plan = TrainPlan(model="llama-3.2-1b", method="lora", seq_len=1024, stack=stack)
    en, ru = rental_request(plan, lang="en"), rental_request(plan, lang="ru")
    assert "PyTorch (own training loop" in en.text and "own training loop" in en.fields["suggested"]["framework"]
    assert "PyTorch (собственный цикл обучения" in ru.text
    assert "own training loop" not in ru.text and "собственный цикл" in ru.fields["suggested"]["framework"]


@pytest.mark.parametrize(("stack", "pinned"), [("hf-trainer", False), ("unsloth", False), ("hf-trainer-2023", True),
                                               ("hf-trainer-2024", True), ("hf-loop-2024", True),
                                               ("litgpt-2023", True)])
def test_a_qlora_request_pins_bitsandbytes_where_the_stack_keeps_4bit_inputs(stack: str, pinned: bool) -> None:
    # stacks whose bitsandbytes holds each 4-bit matmul's input (stacks.csv bnb_4bit_input kept) ran <= 0.43.1;
    # the request must ask for such a release, or the memory it quotes does not hold (docs/memory_bnb_releases.md)
    plan = TrainPlan(model="llama-3.2-1b", method="qlora", seq_len=1024, stack=stack)
    framework = rental_request(plan, lang="en").fields["suggested"]["framework"]
    assert ("bitsandbytes<=0.43.1" in framework) is pinned
    assert "bitsandbytes" in framework
