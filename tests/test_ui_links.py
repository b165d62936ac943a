"""Links that keep everything (issue 20, item 5): a link's model that is mistyped or unknown says so (never the
previous preset silently), a Hub id of a bundled model is sized as that preset and said; the link keeps the language
and the dataset size; the address bar follows the form on a served page."""

from __future__ import annotations

import html

import pytest

from gpuwork.plan import TrainPlan
from gpuwork.ui.app import build_app
from gpuwork.ui.share import address_bar_html, page_link_query, plan_from_query


@pytest.fixture(scope="module")
def app():
    return build_app(demo_trial=False)


def test_a_mistyped_model_in_a_followed_link_says_so_instead_of_sizing_the_previous_preset(app) -> None:
    app.apply_plan(plan_from_query("model=llama-3.1-8x&method=qlora"))  # a preheated kernel follows a link so
    assert app.plan is None and app.sizing.plan is None
    assert "llama-3.1-8x" in app.error and "llama-3.1-8b" in app.error  # the name and the closest presets
    assert app.sizing.controls["model"].value == "llama-3.1-8x"
    app.sizing.controls["model"].value = "llama-3.2-1b"  # the form recovers with a real choice
    assert app.error is None and app.plan.model == "llama-3.2-1b"


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_a_hub_id_of_a_bundled_model_is_sized_as_that_preset_and_said(app, lang: str) -> None:
    app.set_lang(lang)
    app.apply_plan(plan_from_query("model=meta-llama/Llama-3.1-8B&method=lora&seq_len=4k"))
    assert app.error is None and app.plan.model == "llama-3.1-8b" and app.plan.seq_len == 4096
    note = html.unescape(app.sizing.model_note.value)
    assert "meta-llama/Llama-3.1-8B" in note and "llama-3.1-8b" in note
    assert ("Hugging Face Hub id" if lang == "en" else "id на Hugging Face Hub") in note
    app.set_lang("en")


def test_links_keep_the_language_and_the_dataset_size(app) -> None:
    app.apply_plan(TrainPlan(model="llama-3.1-8b", method="lora", seq_len=4096))
    app.sizing.controls["dataset_tokens"].value = "200 MB"
    app.set_lang("ru")
    query = app.query()
    assert "dataset_bytes=200000000" in query and query.endswith("lang=ru")
    assert f'href="?{html.escape(query)}"' in app.sizing.share.value  # the Sizing tab's own link, the same
    again = build_app(query=query, demo_trial=False)
    assert again.lang == "ru" and again.plan == app.plan and again.plan.dataset_bytes == 200_000_000
    assert again.sizing.controls["dataset_tokens"].value == str(app.plan.dataset_tokens)
    app.set_lang("en")
    assert page_link_query(app.plan, "en") == app.query() and "lang=" not in app.query()


def test_the_address_bar_follows_the_form_on_a_served_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVER_SOFTWARE", "voila/0.5.13")
    from gpuwork.ui import common

    monkeypatch.setattr(common, "_public", False)
    served = build_app(TrainPlan(model="llama-3.2-1b", method="qlora", seq_len=2048), demo_trial=False, public=False)
    first = served.address.value
    assert f"?{served.query()}".replace("&", "&amp;") in first and "history.replaceState" in first
    served.sizing.controls["seq_len"].value = "8k"
    assert served.address.value != first and "seq_len=8192" in served.address.value
    served.set_lang("ru")
    assert "lang=ru" in served.address.value
    assert address_bar_html("", 1).count("location.pathname") == 1  # an empty query: the bare page
