"""The one decision (gpuwork.estimate.decision): the profile, the advisor's best answer, the offers' top row and the
request name the same card, count, nodes and mode (gpuwork issue 20, item 1)."""

from __future__ import annotations

import html
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuwork.errors import PlanError
from gpuwork.estimate.advisor import Suggestion, state_bytes_per_param
from gpuwork.estimate.decision import Constraints, best_outcome
from gpuwork.estimate.offers import offer_name
from gpuwork.plan import Method, Optimizer, Sharding, TrainPlan
from gpuwork.present.messages import render
from gpuwork.present.request import rental_request
from gpuwork.sizing import decide, evaluate_offers

MODELS = ("tiny-llama", "llama-3.2-1b", "qwen2.5-0.5b", "mistral-7b", "llama-3.1-8b", "llama-3.1-70b")


def _key(offer) -> tuple:
    return (offer.offer.gpu_id, offer.fit.plan.gpus, offer.nodes, offer.offer.mode.value)


def _top_offer(plan: TrainPlan, **filters):
    ranked = evaluate_offers(plan, include_unfit=False, **filters)
    return next((r for r in ranked if r.expected_cost_usd is not None and math.isfinite(r.expected_cost_usd)), None)


def _check_one_answer(plan: TrainPlan, constraints: Constraints | None = None) -> None:
    d = decide(plan, constraints=constraints)
    filters = (constraints or Constraints()).offer_filters()
    if d.offer is None:
        assert d.match.profile is None and d.key == (None, 0, 0, None)
        # never "none fits" above an offer that fits: the plan as written fits nothing either
        assert _top_offer(plan, **filters) is None
        return
    # the profile
    m = d.match
    assert (m.gpu_id, m.gpus, m.nodes, m.profile.mode.value) == d.key
    assert m.profile.profile_id == ("03" if d.gpus > 1 else m.profile.profile_id)
    assert m.profile.profile_id in ("01", "02", "03")
    # the advisor's best answer
    best = best_outcome(d.advice)
    out = best.outcome if isinstance(best, Suggestion) else best
    assert _key(out.offer) == d.key
    # the offers' top row for the plan the answer runs (the plan as written when no change is needed)
    assert _key(_top_offer(d.changed_plan, **filters)) == d.key
    # the request, with the sharding and the bytes per parameter of the plan the answer runs
    r = rental_request(plan, lang="en", match=d.match, offer=d.offer)
    s = r.fields["suggested"]
    assert (s["reference_gpu"], s["gpus"], s["nodes"], s["mode"]) == d.key
    assert s["sharding"] == d.run_plan.sharding.value == out.run_plan.sharding.value
    assert s["state_bytes_per_param"] == state_bytes_per_param(d.run_plan) == d.as_dict()["state_bytes_per_param"]
    assert r.fields["estimates"]["memory_per_gpu_bytes"] == d.offer.fit.device_total_bytes == out.memory_per_gpu_bytes
    # the answer is never dearer than the plan as written on its cheapest offer
    if d.advice.baseline.fits:
        assert d.cost_usd <= d.advice.baseline.cost_usd


@st.composite
def plans(draw: st.DrawFn) -> TrainPlan | None:
    gpus = draw(st.sampled_from([1, 1, 2, 4, 8]))
    try:
        return TrainPlan(model=draw(st.sampled_from(MODELS)),
                         method=draw(st.sampled_from([Method.FULL, Method.LORA, Method.QLORA])),
                         optimizer=draw(st.sampled_from([Optimizer.ADAMW, Optimizer.ADAMW_8BIT])),
                         seq_len=draw(st.sampled_from([512, 2048, 4096])), batch_size=draw(st.sampled_from([1, 2, 4])),
                         precision=draw(st.sampled_from(["bf16", "bf16", "bf16-mixed"])),
                         grad_checkpointing=draw(st.booleans()), gpus=gpus,
                         sharding=(draw(st.sampled_from([Sharding.DDP, Sharding.ZERO3, Sharding.FSDP])) if gpus > 1
                                   else Sharding.DDP),
                         dataset_tokens=draw(st.integers(10**7, 10**9)))
    except PlanError:
        return None


@settings(max_examples=24, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans(), st.sampled_from([None, {"mode": "on-demand"}, {"mode": "reserved"}, {"gpu_class": "server"}]))
def test_the_profile_the_advice_the_top_offer_and_the_request_never_disagree(plan, filters) -> None:
    if plan is None:
        return
    _check_one_answer(plan, Constraints(filters=filters) if filters else None)


def test_70b_full_without_checkpointing_gets_profile_03_never_none_fits() -> None:
    """The issue's case: `plan` said "none fits ... even 64 x H100" above an 8 x MI325X offer that fits."""
    plan = TrainPlan(model="llama-3.1-70b", method="full", gpus=8, sharding="fsdp", dataset_tokens=10**8)
    d = decide(plan)
    assert d.fits and d.match.profile.profile_id == "03" and d.gpus >= 8
    assert _top_offer(plan) is not None
    _check_one_answer(plan)
    # a vendor constraint keeps to that vendor's cards
    nv = decide(plan, constraints=Constraints(vendor="NVIDIA"))
    assert nv.offer is None or nv.offer.offer.gpu.vendor == "NVIDIA"


def test_a_plan_that_fits_nothing_as_written_gets_the_cheapest_change_that_fits() -> None:
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=4096, batch_size=2, dataset_tokens=10**8)
    consumer = Constraints(filters={"gpu_class": "consumer"})
    d = decide(plan, constraints=consumer)
    assert not d.advice.baseline.fits  # 8B LoRA at 4k without checkpointing: no consumer card as written
    assert d.fits and d.suggestion is not None and d.changes and d.changed_plan.grad_checkpointing
    assert "decision.why_fit" in [r.code for r in d.reasons]
    assert d.offer.offer.gpu.gpu_class.value == "consumer"
    _check_one_answer(plan, consumer)


def test_the_answer_says_the_same_in_both_languages() -> None:
    d = decide(TrainPlan(model="llama-3.1-8b", method="lora", seq_len=4096, dataset_tokens=5 * 10**7))
    en, ru = render(d.summary, "en"), render(d.summary, "ru")
    assert en.startswith("Answer: ") and ru.startswith("Ответ: ")
    # the offer by the name the offers table gives it, never its catalog id (issue 20, item 6)
    o = d.offer.offer
    assert o.offer_id not in en and o.offer_id not in ru
    assert f"offer “{o.provider}: {o.gpus_per_node} × {o.gpu.display_name} per node, " in en
    assert f"предложение «{o.provider}: {o.gpus_per_node} × {o.gpu.display_name} на узел, " in ru
    assert render(offer_name(o), "en") in en and render(offer_name(o), "ru") in ru
    why = next(r for r in d.reasons if r.code == "decision.why_offer")
    assert render(offer_name(o), "ru") in render(why, "ru") and o.offer_id not in render(why, "ru")
    assert f"profile {d.match.profile.profile_id}" in en and f"профиль {d.match.profile.profile_id}" in ru
    for english in ("Answer", "profile", " on ", "with"):
        assert english not in ru


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_app_tabs_show_the_one_answer(lang: str) -> None:
    """Sizing's profile, Advice's answer and the Request ask for the same card, count, nodes and mode under the
    Offers tab's filters (issue 20: the sizing tab said 16 x H100 on demand while the others said 8 x MI325X)."""
    from gpuwork.ui.advice import AdvicePanel
    from gpuwork.ui.request import RequestPanel
    from gpuwork.ui.sizing import size_plan

    plan = TrainPlan(model="llama-3.1-70b", method="full", gpus=8, sharding="fsdp", dataset_tokens=10**8)
    filters = {"mode": "on-demand"}
    d = decide(plan, constraints=Constraints(filters=filters))
    assert d.fits and d.mode == "on-demand"
    sized = size_plan(plan, constraints=Constraints(filters=filters))
    m = sized.profile
    assert (m.gpu_id, m.gpus, m.nodes, m.profile.mode.value) == d.key and sized.decision.key == d.key
    advice = AdvicePanel(plan, lang=lang, filters=lambda: filters)
    assert advice.decision.key == d.key and html.escape(render(d.summary, lang)) in advice.status.value
    request = RequestPanel(plan, filters=lambda: filters)
    s = request.request.fields["suggested"]
    assert (s["reference_gpu"], s["gpus"], s["nodes"], s["mode"]) == d.key


def test_the_offers_tab_top_row_is_the_answer() -> None:
    from gpuwork.ui.offers import OffersPanel

    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=4096, dataset_tokens=5 * 10**7)
    panel = OffersPanel(plan)
    assert panel.decision is not None and panel.results
    assert _key(panel.results[0]) == panel.decision.key == decide(plan).key
    assert html.escape(render(panel.decision.summary, "en")) in panel.table.value


def test_notebook_03s_request_asks_for_its_offers_top_row() -> None:
    """Notebook 03 builds an OffersPanel with its request: the request names the table's top row (issue 20: the
    notebook's request still disagreed with its own offers table)."""
    from gpuwork.ui.offers import OffersPanel

    plan = {"model": "llama-3.1-8b", "method": "qlora", "seq_len": 2048, "batch_size": 4,
            "dataset_tokens": 200_000_000}
    panel = OffersPanel(plan, request={"start_date": None, "budget_usd": None, "rent_period_days": None})
    panel.request.refresh()
    s = panel.request.request.fields["suggested"]
    assert (s["reference_gpu"], s["gpus"], s["nodes"], s["mode"]) == _key(panel.results[0]) == panel.decision.key


# -- my hardware (issue 20, item 2) ------------------------------------------------------------------------------


def test_my_24gb_card_qlora_7b_fits_with_a_change_and_reports_time_without_cost() -> None:
    from gpuwork.facts.catalog import get_gpu

    plan = TrainPlan(model="mistral-7b", method="qlora", seq_len=2048, batch_size=4, dataset_tokens=250_000_000)
    d = decide(plan, constraints=Constraints(have=(1, get_gpu("rtx4090"))))
    assert not d.advice.baseline.fits  # as written it needs more than the card's usable memory
    assert d.fits and d.key == ("rtx4090", 1, 1, "own") and d.cost_usd is None and d.total_s > 0
    assert d.changes and d.run_plan.gpus == 1
    assert d.offer.fit.device_total_bytes <= d.offer.fit.usable_bytes
    en, ru = render(d.summary, "en"), render(d.summary, "ru")
    assert "no rental cost" in en and "без затрат на аренду" in ru
    assert "$" not in en and "USD" not in ru and "GeForce RTX 4090" in en
    assert "decision.why_fit_own" in [r.code for r in d.reasons]


def test_my_cards_never_grow_past_what_i_have() -> None:
    from gpuwork.facts.catalog import get_gpu

    plan = TrainPlan(model="llama-3.1-70b", method="full", dataset_tokens=10**8)
    d = decide(plan, constraints=Constraints(have=(2, get_gpu("rtx4090"))))
    assert not d.fits and d.key == (None, 0, 0, "own")
    assert render(d.summary, "ru").startswith("Ответ: запуск не помещается на ваши карты")
    with pytest.raises(PlanError):
        decide(plan, constraints=Constraints(have=(0, get_gpu("rtx4090"))))


def test_the_advisor_pairs_changes_that_fit_only_together() -> None:
    """8B LoRA at 4k x 8 on consumer cards: no single change fits (checkpointing alone or a smaller micro-batch
    alone), the pair does; the advisor used to say "no change helps"."""
    from gpuwork.sizing import advise

    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=4096, batch_size=8)
    advice = advise(plan, gpu_class="consumer")
    assert not advice.baseline.fits and advice.suggestions
    assert all("+" in s.key for s in advice.suggestions) and any("grad_checkpointing" in s.key
                                                                  for s in advice.suggestions)


def test_the_cli_takes_have_and_answers_on_my_cards(capsys) -> None:
    from gpuwork.cli import main

    args = ["--model", "mistral-7b", "--method", "qlora", "--seq-len", "2048", "--batch-size", "4",
            "--dataset-tokens", "250M", "--have", "1xrtx4090"]
    for lang, answer, no_cost in (("en", "Answer on your cards: 1 x GeForce RTX 4090", "no rental cost"),
                                  ("ru", "Ответ на ваших картах: 1 × GeForce RTX 4090", "без затрат на аренду")):
        assert main(["advise", *args, "--lang", lang]) == 0
        out = capsys.readouterr().out
        assert answer in out and no_cost in out and "$" not in out and "USD" not in out
        assert main(["plan", *args, "--lang", lang]) == 0
        assert answer in capsys.readouterr().out
    assert main(["advise", *args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["decision"]["mode"] == "own" and data["decision"]["cost_usd"] is None
    assert data["decision"]["gpu_id"] == "rtx4090" and data["decision"]["gpus"] == 1
    with pytest.raises(SystemExit):
        main(["advise", "--model", "mistral-7b", "--have", "one rtx4090"])
    assert "1xrtx4090" in capsys.readouterr().err


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_app_sizes_for_my_own_card(lang: str) -> None:
    """The "My cards" field: Sizing, Advice and Offers give the answer on the owned card, with time and no price."""
    from gpuwork.ui.app import App

    plan = {"model": "mistral-7b", "method": "qlora", "seq_len": 2048, "batch_size": 4, "dataset_tokens": 250_000_000}
    app = App(plan, lang=lang)
    app.offers.have.value = "1xrtx4090"
    for tab in range(len(app.tabs.children)):
        app.tabs.selected_index = tab
    app.advice.refresh_if_stale()
    answer = html.escape(render(app.offers.decision.summary, lang))
    assert app.offers.decision.key == ("rtx4090", 1, 1, "own") and app.offers.decision.cost_usd is None
    for shown in (app.sizing.details.value, app.advice.status.value, app.offers.table.value):
        assert answer in shown
    rows = [r.children[1].value for r in app.advice.rows.children]
    assert rows and not any("$" in r or "USD" in r for r in rows)
    app.offers.have.value = "one card"  # a bad value says so, in the page's language
    assert app.offers.error and ("1xrtx4090" in app.offers.error)


def test_notebook_03_takes_my_cards() -> None:
    from gpuwork.ui.offers import OffersPanel

    panel = OffersPanel({"model": "mistral-7b", "method": "qlora", "seq_len": 2048, "batch_size": 4},
                        have="1xrtx4090")
    assert panel.decision.own and panel.decision.gpu_id == "rtx4090"


# -- each change's own effect (issue 20, item 3, first part) -------------------------------------------------------


def test_each_suggestion_shows_its_own_effect_on_the_same_card() -> None:
    """'+292 % time' compared different cards; the same-card line compares the plan and the change on one offer."""
    from gpuwork.estimate.offers import evaluate_offer
    from gpuwork.facts.resolve import resolve
    from gpuwork.sizing import advise

    plan = TrainPlan(model="mistral-7b", method="qlora", seq_len=2048, batch_size=4)
    advice = advise(plan)
    base = advice.baseline.offer
    assert advice.suggestions and base is not None
    for s in advice.suggestions:
        same = s.same_card
        assert same is not None and (same.gpu, same.gpus) == (base.offer.gpu.display_name, base.fit.plan.gpus)
        after = evaluate_offer(s.plan, base.offer, resolve(s.plan))
        assert same.memory_change == pytest.approx(after.fit.device_total_bytes / base.fit.device_total_bytes - 1)
        assert same.time_change == pytest.approx(after.expected_total_s / base.expected_total_s - 1)
        en, ru = render(s.summary, "en"), render(s.summary, "ru")
        assert f"the change alone, on the same {same.gpus} x {same.gpu}" in en
        assert f"само изменение на тех же {same.gpus} × {same.gpu}" in ru
    mb = advice.get("micro_batch_1")
    assert mb.same_card.memory_change < 0  # a smaller micro-batch frees memory on the same card


def test_a_larger_micro_batch_with_less_accumulation_is_suggested_where_memory_allows() -> None:
    from gpuwork.facts.catalog import load_offers
    from gpuwork.sizing import advise

    # bf16 autocast, as a Trainer run with bf16=True: without it peft's fp32-prepared model runs attention and the
    # activations in fp32 (ops.fp32_qlora), compute-bound, where a larger micro-batch saves too little to suggest

    plan = TrainPlan(model="llama-3.1-8b", method="qlora", precision="bf16-mixed", seq_len=1024, batch_size=1,
                     grad_accum=8)
    # cards of 40 GB and more: on a 24 GB card (the cheapest for the plan as written since the GeForce GEMM peaks
    # of 4f262e3) micro-batch 2 does not fit, and the change alone has no time there
    roomy = [o for o in load_offers() if o.gpu.memory_total_bytes >= 40 * 10**9]
    advice = advise(plan, roomy)
    up = advice.get("micro_batch_2")
    assert (up.plan.batch_size, up.plan.grad_accum) == (2, 4) and up.plan.tokens_per_step == plan.tokens_per_step
    assert up.same_card.memory_change > 0 and up.same_card.time_change < 0  # spends memory, saves time
    assert up.outcome.memory_per_gpu_bytes <= up.outcome.offer.fit.usable_bytes
    assert up.cost_change <= -0.05


def test_a_run_on_two_nodes_is_offered_one_node() -> None:
    from gpuwork.sizing import advise

    plan = TrainPlan(model="llama-3.1-8b", method="full", gpus=16, sharding="zero3")
    advice = advise(plan)
    one = advice.get("one_node_x8")
    assert one.plan.gpus == 8 and one.plan.tokens_per_step == plan.tokens_per_step
    assert one.outcome.offer.nodes == 1 and advice.baseline.offer.nodes == 2
    assert one.cost_change <= -0.05
    assert render(one.changes[0], "ru").startswith("в одном узле: 8 GPU")


# -- the tie rule between shardings (issue 20, leftovers) ----------------------------------------------------------


def _outcome_on(plan: TrainPlan, offer):
    """``plan`` on one offer, as the advisor holds it (an Outcome with the model states per GPU)."""
    from gpuwork.estimate.advisor import SHARDED_PARTS, Outcome
    from gpuwork.estimate.offers import evaluate_offer
    from gpuwork.facts.resolve import resolve
    from gpuwork.sizing import estimate_memory

    r = evaluate_offer(plan, offer, resolve(plan))
    breakdown = estimate_memory(r.fit.plan).breakdown
    return Outcome(plan, estimate_memory(plan.single_gpu()).device_total_bytes, r,
                   sum(breakdown.get(k, 0) for k in SHARDED_PARTS))


def _tied(out, other):
    """``out`` with ``other``'s cost and time: a tie, whatever the two cost (the tie rule alone decides)."""
    import dataclasses

    return dataclasses.replace(out, offer=dataclasses.replace(
        out.offer, expected_total_s=other.total_s, expected_cost_usd=other.cost_usd))


def test_at_equal_cost_and_time_the_sharding_that_keeps_less_per_gpu_wins() -> None:
    """A pure-bf16 70B full fine-tune fits no card as written, so the offer picks its sharding (ZeRO-3). FSDP on the
    same offer keeps no fp32 masters but takes longer: FSDP2 copies every gathered unit into its parameters on the
    compute stream (estimate.fsdp_costs), where ZeRO-3's gathered parameters are views of its buffer, so the answer
    does not run FSDP. At equal cost and time the tie rule puts FSDP first."""
    from gpuwork.estimate.advisor import tie_order, wins_tie

    plan = TrainPlan(model="llama-3.1-70b", method="full", dataset_tokens=10**8)
    d = decide(plan)
    base = d.advice.baseline
    assert base.run_plan.sharding is Sharding.ZERO3 and base.run_plan.gpus > 1  # chosen by the offer, not the user
    fsdp = _outcome_on(base.run_plan.replace(sharding="fsdp"), base.offer.offer)
    assert fsdp.total_s > base.total_s and fsdp.cost_usd > base.cost_usd  # FSDP2's copies
    assert not wins_tie(fsdp, base) and d.run_plan.sharding is not Sharding.FSDP
    tied = _tied(fsdp, base)
    assert tied.memory_per_gpu_bytes < base.memory_per_gpu_bytes and wins_tie(tied, base)
    assert tie_order(tied)[2] is False and tie_order(base)[2] is True  # FSDP needs no DeepSpeed
    assert state_bytes_per_param(fsdp.run_plan) < state_bytes_per_param(base.run_plan)
    _check_one_answer(plan)


def test_the_plan_as_written_keeps_its_own_sharding_on_a_tie() -> None:
    """The tie rule decides only what the user left open: a plan that names ZeRO-3 and fits with it keeps it when
    FSDP ties (given ZeRO-3's cost and time: FSDP2's copies make it dearer, ``_tied``); the same setup chosen by
    the offer goes to FSDP."""
    from gpuwork.estimate.advisor import Advice, Suggestion

    written = TrainPlan(model="llama-3.1-70b", method="full", gpus=8, sharding="zero3", dataset_tokens=10**8)
    base = decide(written).advice.baseline
    assert base.run_plan.sharding is Sharding.ZERO3  # fits as written
    fsdp = _tied(_outcome_on(written.replace(sharding="fsdp"), base.offer.offer), base)
    s = Suggestion("fsdp_x8", "sharding", (), fsdp.plan, fsdp, fsdp.memory_per_gpu_bytes / base.memory_per_gpu_bytes - 1,
                   0.0, 0.0, False, False)
    assert best_outcome(Advice(written, base, (s,), 2)) is base  # the user's choice stands
    # the same run when the user wrote one GPU and the offer chose ZeRO-3: the tie rule picks FSDP
    open_plan = written.replace(gpus=1, sharding="ddp")
    chosen = _outcome_on(open_plan, base.offer.offer)
    assert chosen.run_plan.sharding is Sharding.ZERO3 and (chosen.cost_usd, chosen.total_s) == (
        base.cost_usd, base.total_s)
    assert best_outcome(Advice(open_plan, chosen, (s,), 2)) is s
