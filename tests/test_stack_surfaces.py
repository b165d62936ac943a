"""Every surface prices with the plan's software stack and says which, in English and Russian (gpuwork issue 19:
"The plan, the app's sizing tab, the advisor and the request use the same stack and say which")."""

from __future__ import annotations

import html
import json

import pytest

from gpuwork import sizing
from gpuwork.cli import main
from gpuwork.message import msg
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
from gpuwork.present.request import rental_request

STACKS = ("hf-trainer", "unsloth")
ARGS = ["--model", "llama-3.2-1b", "--method", "lora", "--seq-len", "1024", "--grad-checkpointing"]
PLAN = TrainPlan(model="llama-3.2-1b", method="lora", seq_len=1024, grad_checkpointing=True)


def label(stack: str, lang: str) -> str:
    return render(msg("stack.label", stack=stack), lang)


def _other(stack: str) -> str:
    return next(s for s in STACKS if s != stack)


def _out(capsys, argv: list[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


def test_the_names_differ_and_speak_each_language():
    names = {(s, lang): label(s, lang) for s in STACKS for lang in ("en", "ru")}
    assert names[("hf-trainer", "en")] == "stack: HF Trainer (eager)"
    assert names[("unsloth", "ru")] == "стек: библиотека unsloth"
    assert len(set(names.values())) == 4


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_gpuwork_plan_prices_and_names_the_stack(capsys, lang):
    steps = {}
    for stack in STACKS:
        out = _out(capsys, ["plan", *ARGS, "--stack", stack, "--lang", lang])
        assert label(stack, lang) in out and label(_other(stack), lang) not in out
        data = json.loads(_out(capsys, ["plan", *ARGS, "--stack", stack, "--json"]))
        time = data["time"]
        assert time["stack"] == stack and time["plan"]["stack"] == stack
        direct = sizing.estimate_time(TrainPlan.from_dict(time["plan"]), time["gpu_id"])
        assert time["step_time_s"] == pytest.approx(direct.step_time_s)
        steps[stack] = time["step_time_s"]
    assert steps["unsloth"] != steps["hf-trainer"]


def test_gpuwork_offers_prices_and_names_the_stack(capsys):
    totals = {}
    for stack in STACKS:
        for lang in ("en", "ru"):
            out = _out(capsys, ["offers", *ARGS, "--stack", stack, "--lang", lang, "--limit", "3"])
            assert label(stack, lang) in out.splitlines()[0]
        rows = json.loads(_out(capsys, ["offers", *ARGS, "--stack", stack, "--json", "--limit", "3"]))
        totals[stack] = {r["offer_id"]: r["total_s"] for r in rows}
        # the table prices the one answer's plan (here, under hf-trainer, checkpointing on one block in 4)
        expected = sizing.evaluate_offers(sizing.decide(PLAN.replace(stack=stack)).changed_plan, include_unfit=False)
        by_id = {r.offer.offer_id: r.time.total_s for r in expected}
        assert all(by_id[k] == pytest.approx(v) for k, v in totals[stack].items())
    common = set(totals["hf-trainer"]) & set(totals["unsloth"])
    assert common and all(totals["hf-trainer"][k] != totals["unsloth"][k] for k in common)


def test_gpuwork_advise_prices_and_names_the_stack(capsys):
    for stack in STACKS:
        for lang in ("en", "ru"):
            out = _out(capsys, ["advise", *ARGS, "--stack", stack, "--lang", lang, "--limit", "1"])
            assert out.splitlines()[0] == label(stack, lang)
        data = json.loads(_out(capsys, ["advise", *ARGS, "--stack", stack, "--json", "--limit", "1"]))
        assert data["stack"] == stack and data["rendered"]["stack"] == label(stack, "en")
    advice = {s: sizing.advise(PLAN.replace(stack=s), limit=1) for s in STACKS}
    assert all(a.baseline.run_plan.stack.value == s for s, a in advice.items())
    assert advice["unsloth"].baseline.offer.time.total_s != advice["hf-trainer"].baseline.offer.time.total_s


def test_the_request_prices_and_names_the_stack(capsys):
    seconds = {}
    for stack in STACKS:
        plan = PLAN.replace(stack=stack)
        for lang in ("en", "ru"):
            req = rental_request(plan, lang=lang)
            assert label(stack, lang) in req.text and label(_other(stack), lang) not in req.text
            assert req.fields["stack"] == stack
        out = _out(capsys, ["request", *ARGS, "--stack", stack, "--lang", "ru"])
        assert label(stack, "ru") in out
        data = json.loads(_out(capsys, ["request", *ARGS, "--stack", stack, "--format", "json"]))
        assert data["stack"] == stack
        seconds[stack] = data["estimates"]["step_time_s"]
        # the request prices the one answer's card (issue 20), not the profile's reference card
        assert seconds[stack] == pytest.approx(sizing.decide(plan).match.time.step_time_s)
    assert seconds["unsloth"] != seconds["hf-trainer"]


def _tab_texts(app) -> dict[str, str]:
    for tab in range(len(app.tabs.children)):
        app.tabs.selected_index = tab
    app.request.refresh()
    return {"sizing": html.unescape(app.sizing.totals.value + app.sizing.details.value),
            "advice": html.unescape(app.advice.status.value),
            "fit": html.unescape(app.fit.table.value),
            "offers": html.unescape(app.offers.table.value),
            "request": app.request.text.value}


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_every_tab_of_the_app_follows_the_forms_stack(lang):
    from gpuwork.ui.app import App

    app = App({**PLAN.as_dict(), "stack": "hf-trainer"}, lang=lang)
    before = _tab_texts(app)
    numbers = {"offers": [r.time.total_s for r in app.offers.results if r.time],
               "advice": app.advice.advice.baseline.offer.time.total_s,
               "sizing": app.sizing.result.profile.time.step_time_s}
    for name, text in before.items():
        assert label("hf-trainer", lang) in text, name
    app.sizing.controls["stack"].value = "unsloth"
    assert app.plan.stack.value == "unsloth"
    after = _tab_texts(app)
    for name, text in after.items():
        assert label("unsloth", lang) in text and label("hf-trainer", lang) not in text, name
    assert app.sizing.result.profile.time.stack == "unsloth"
    assert app.sizing.result.profile.time.step_time_s != numbers["sizing"]
    assert app.advice.advice.baseline.offer.time.total_s != numbers["advice"]
    assert [r.time.total_s for r in app.offers.results if r.time] != numbers["offers"]
    assert app.offers.results[0].time.stack == "unsloth"


def test_notebook_03_prices_its_plans_stack():
    from gpuwork.ui.offers import OffersPanel

    for stack in STACKS:
        panel = OffersPanel({**PLAN.as_dict(), "stack": stack}, lang="ru", report=True)
        assert label(stack, "ru") in html.unescape(panel.table.value)
        assert all(r.time.stack == stack for r in panel.results if r.time)
