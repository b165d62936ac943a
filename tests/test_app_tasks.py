"""The issue's three tasks, done in a real browser as a person would, in English and in Russian.

One Voila server (as ``gpuwork app`` serves it: benchmarks/app_load.py's ``start_server``) and one headless
Chromium page for the whole module; only 127.0.0.1 is contacted and the server is stopped by its PID.
Each task fills the form by typing into its fields and picking in its selects, then visits every tab
(Sizing, Advice, All GPUs, Offers, Request, Demo trial) and checks that they give ONE answer:

- the plan each tab describes is the form's plan (the Sizing caption, the chart, the request's fields);
- the Sizing totals and the breakdown chart are the estimator's for that plan (computed here in Python);
- the memory per GPU of the chosen card's row on the All GPUs tab is the Sizing total (one GPU) and the
  chosen offer's (its GPU count);
- the Advice's status names the Offers tab's top row (the cheapest offer under the Offers tab's filters);
- the Request names the same GPU, vendor and count as that offer, and a rental mode that fits the run's
  length (no reserved month for a run of hours);
- in Russian no English word is visible beyond technical names (tests/test_messages.py's TECHNICAL set).

- the CLI (`plan`, `advise`, `offers`, `request`, subprocesses with --json) and notebook 03 (executed by
  papermill in report mode) give the same card, count, nodes, mode, changes, time and cost (issue 20, "Done when").

The tasks are the issue's: an 8B LoRA at "4k" on "200 MB" of text (typed as a person writes them), a 70B full
fine-tune, and a QLoRA 7B on one 24 GB card the person owns ("My cards": time, no rental cost).
An invalid sequence length ("abc", 0) clears every tab's results: no number of the previous plan stays.

Waits are on conditions in the page (the text the Python side expects), never fixed sleeps.
"""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import free_port, load_benchmark, local_page
from test_messages import _allowed_names, _english_words

from gpuwork import sizing
from gpuwork.estimate.disk import BYTES_PER_TOKEN_TEXT
from gpuwork.estimate.memory import GIB
from gpuwork.facts.catalog import GpuClass
from gpuwork.facts.model import list_presets
from gpuwork.message import msg
from gpuwork.plan import Method, TrainPlan, plan_from_choices
from gpuwork.present import charts
from gpuwork.present.messages import render
from gpuwork.present.messages import text as text_of
from gpuwork.ui.app import TABS
from gpuwork.ui.common import plan_caption, ui
from gpuwork.units import fmt_number

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CHROMIUM = Path("/usr/bin/chromium")
# as tests/test_app.py: headless Debian chromium in a container, no sandbox, no /dev/shm, no GPU, no network chatter
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
ALL_CLASSES = tuple(c.value for c in GpuClass)  # every GPU class ticked: the offers unfiltered
CHART = ".gpuwork-breakdown .js-plotly-plot"
WAIT_MS = 90_000  # one server answer on a busy 2-core machine
# the visible container of each tab's content
PANELS = {"sizing": ".gpuwork-sizing", "advice": ".gpuwork-advice", "fit": ".gpuwork-fit-panel",
          "offers": ".gpuwork-offers", "request": ".gpuwork-request", "trial": ".gpuwork-trial"}
# where results are shown (the form's own labels and inputs are not results)
RESULTS = {"sizing": ".gpuwork-results", "advice": ".gpuwork-advice", "fit": ".gpuwork-fit-panel",
           "offers": ".gpuwork-offers", "request": ".gpuwork-request"}
# a result's number with its unit, in either language: memory, money, time
NUMBERS = re.compile(r"\d[\d,.\u00a0\u202f ]*\s?(GiB|GB|ГиБ|ГБ|h|min|s|ч|мин|с)(?![\w])|\$\s?\d")
# model presets are names, as GPU names are; the count syntax the number fields accept ("4k") is quoted as typed
# in the validation message, and so is the person's own invalid value
ALLOWED = _allowed_names() | set(list_presets()) | {"k", "abc"}
# "200 MB of text" in the form's unit (tokens), at the bytes per token the disk estimate assumes
TEXT_200MB_TOKENS = round(200e6 / BYTES_PER_TOKEN_TEXT)

_TEXT_JS = """([sel, want]) => {
  const e = document.querySelector(sel);
  if (!e) return false;
  const raw = e.tagName === 'TEXTAREA' ? e.value : e.innerText;
  return raw.replace(/[\\u00a0\\u202f]/g, ' ').replace(/\\s+/g, ' ').trim().includes(want);
}"""
# every element of ``sel`` starts with the line expected at its place, and there are as many
_LINES_JS = """([sel, lines]) => {
  const shown = [...document.querySelectorAll(sel)].map(e => e.innerText.replace(/[\\u00a0\\u202f]/g, ' ')
    .replace(/\\s+/g, ' ').trim());
  return shown.length === lines.length && shown.every((t, i) => t.startsWith(lines[i]));
}"""
_ROWS_JS = """sel => [...document.querySelectorAll(sel + ' tbody tr')].map(r => [...r.cells].map(c => c.innerText))"""


def norm(text: str) -> str:
    """Text as compared: non-breaking spaces as spaces, runs of white space as one."""
    return " ".join(text.replace("\u00a0", " ").replace("\u202f", " ").split())


def number(text: str, lang: str) -> float:
    """A number as the page writes it ("1,234.5" in English, "1 234,5" in Russian)."""
    t = norm(text).replace(" ", "")
    return float(t.replace(",", ".") if lang == "ru" else t.replace(",", ""))


class Page:
    """The app in the browser, driven as a person does: click tabs, type, pick, tick."""

    def __init__(self, page: Any, lang: str = "en"):
        self.page = page
        self.lang = lang

    # -- reading ---------------------------------------------------------------------------------------

    def text(self, selector: str) -> str:
        loc = self.page.locator(selector)
        return norm(loc.first.inner_text()) if loc.count() else ""

    def rows(self, selector: str) -> list[list[str]]:
        return [[norm(c) for c in row] for row in self.page.evaluate(_ROWS_JS, selector)]

    def wait_text(self, selector: str, want: str, timeout_ms: int = WAIT_MS) -> None:
        """Until ``selector`` shows ``want`` (white space normalised); else fail with what it shows."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        want = norm(want)
        try:
            self.page.wait_for_function(_TEXT_JS, arg=[selector, want], polling=100, timeout=timeout_ms)
        except PlaywrightTimeout:
            loc = self.page.locator(selector)
            shown = (loc.first.input_value() if loc.count() and loc.first.evaluate("e => e.tagName") == "TEXTAREA"
                     else self.text(selector)) if loc.count() else "<absent>"
            raise AssertionError(f"{selector} should show {want!r}; it shows {shown!r}") from None

    # -- acting ------------------------------------------------------------------------------------------

    def tab(self, name: str) -> str:
        """Show tab ``name`` (as TABS names it); the visible content's text."""
        index = TABS.index(name)
        self.page.locator(".gpuwork-tabs .lm-TabBar-tab").nth(index).click()
        self.page.wait_for_selector(f".gpuwork-tabs .lm-TabBar-tab.lm-mod-current >> text={ui(f'tab_{name}', self.lang)}",
                                    timeout=WAIT_MS)
        self.page.locator(PANELS[name]).first.wait_for(state="visible", timeout=WAIT_MS)
        return self.text(PANELS[name])

    def type_into(self, css: str, value: str) -> None:
        field = self.page.locator(f"{css} input").first
        field.fill(value)
        field.press("Enter")

    def pick(self, css: str, value: str) -> None:
        self.page.select_option(f"{css} select", value=value)

    def tick(self, css: str, on: bool) -> None:
        box = self.page.locator(f"{css} input[type=checkbox]").first
        if box.is_checked() != on:
            box.click()

    def set_lang(self, lang: str) -> None:
        """Switch the page to ``lang`` (nothing to do when it is in that language already: the tests share a page)."""
        if lang == self.lang:
            return
        self.page.locator(".gpuwork-lang button").nth(("en", "ru").index(lang)).click()
        self.lang = lang
        self.page.wait_for_selector(f".gpuwork-tabs .lm-TabBar-tab >> text={ui('tab_sizing', lang)}", timeout=WAIT_MS)

    def set_classes(self, classes: tuple[str, ...]) -> None:
        """Tick exactly ``classes`` among the Offers tab's GPU classes (that tab must be shown)."""
        group = self.page.locator(".gpuwork-offers-filters .gpuwork-choices").nth(1)  # modes, classes, regions
        for c in GpuClass:
            box = group.locator(".widget-checkbox", has_text=ui("class_option", self.lang, value=c)).first
            checkbox = box.locator("input[type=checkbox]")
            if checkbox.is_checked() != (c.value in classes):
                checkbox.click()


# -- what the Python side says about a plan -----------------------------------------------------------------


def expected(plan: TrainPlan, filters: dict[str, Any]) -> SimpleNamespace:
    """The estimator's answers for ``plan`` under the Offers tab's ``filters`` (evaluate_offers keywords): ``top`` is
    the one answer's offer (gpuwork.estimate.decision, issue 20), which every tab must name."""
    from gpuwork.estimate.decision import Constraints

    decision = sizing.decide(plan, constraints=Constraints(filters=filters))
    assert decision.offer is not None
    return SimpleNamespace(plan=plan, memory=sizing.estimate_memory(plan), top=decision.offer, decision=decision,
                           advice=sizing.advise(plan, **filters), matrix=sizing.fit_matrix(plan))


def gib(n_bytes: float, lang: str, digits: int) -> str:
    return fmt_number(n_bytes / GIB, lang, digits)


def request_fields(b: Page) -> dict[str, Any]:
    """The request as the page offers it for download (its JSON link)."""
    href = b.page.get_attribute(".gpuwork-download-json", "href")
    return json.loads(base64.b64decode(href.split("base64,", 1)[1]).decode("utf-8"))


def check_russian(b: Page, tab: str, text: str) -> None:
    if b.lang == "ru":
        words = _english_words(text, ALLOWED)
        assert not words, f"English words on the {tab} tab in Russian: {sorted(set(words))}"


def check_every_tab(b: Page, want: SimpleNamespace, problems: list[str], *, unfiltered: bool,
                    dataset_bytes: int | None = None) -> None:
    """Visit every tab and check that each gives the same answer for ``want.plan``; the request's disagreement with
    the chosen offer goes to ``problems`` (the task fails on it at its end)."""
    lang, plan, est, top = b.lang, want.plan, want.memory, want.top

    # Sizing: the form's plan, the estimator's totals, the chart of the same plan
    b.tab("sizing")
    b.wait_text(".gpuwork-summary", plan_caption(plan, lang=lang))
    totals = [gib(getattr(est, attr), lang, 2) for attr in charts.TOTALS]
    shown = [row[1] for row in b.rows(".gpuwork-totals")]
    assert shown == totals, (shown, totals)
    # the chart: one bar of this plan, its three total markers at the estimator's values (a new plot per update)
    label = f"{plan.model}, {plan.method.value}"
    values = [getattr(est, a) / GIB for a in charts.TOTALS]
    try:
        b.page.wait_for_function(f"""([label, values]) => {{
            const gd = document.querySelector('{CHART}');
            if (!gd || !gd.data) return false;
            const marks = gd.data.filter(t => t.type === 'scatter');
            return marks.length === values.length && marks.every((t, i) => t.x[0] === label
                && Math.abs(t.y[0] - values[i]) < 1e-9 * values[i]); }}""", arg=[label, values], polling=100,
                                 timeout=WAIT_MS)
    except Exception:  # noqa: BLE001 - say what the chart shows instead
        shown = b.page.evaluate(f"() => document.querySelector('{CHART}').data.map(t => [t.name, t.x, t.y])")
        raise AssertionError(f"the breakdown chart should show {label} at {values}; it shows {shown}") from None
    assert b.page.locator(".gpuwork-breakdown").is_visible() and not b.page.locator(
        ".gpuwork-sizing .gpuwork-message .gpuwork-error").count()
    check_russian(b, "sizing", b.text(".gpuwork-tabs"))

    # Advice: the plan as it is runs on the Offers tab's top row
    b.tab("advice")
    b.wait_text(".gpuwork-advice-status", render(want.advice.status, lang))
    # the advisor's best answer is the one answer (the plan as written, or its cheapest change), said on the tab
    from gpuwork.estimate.advisor import Suggestion
    from gpuwork.estimate.decision import best_outcome

    best = best_outcome(want.advice)
    assert (best.outcome if isinstance(best, Suggestion) else best).offer.offer.offer_id == top.offer.offer_id
    b.wait_text(".gpuwork-advice-status-box .gpuwork-decision", render(want.decision.summary, lang))
    # the rows are new widgets, drawn after the status line: wait until they are this plan's
    lines = [norm(render(s.summary, lang)) for s in want.advice.suggestions]
    try:
        b.page.wait_for_function(_LINES_JS, arg=[".gpuwork-suggestion", lines], polling=100, timeout=WAIT_MS)
    except Exception:  # noqa: BLE001 - say what the page shows instead
        shown = [norm(t) for t in b.page.locator(".gpuwork-suggestion").all_inner_texts()]
        raise AssertionError(f"the advice should list {lines}; it lists {shown}") from None
    check_russian(b, "advice", b.text(".gpuwork-tabs"))

    # All GPUs: the one answer above the matrix; the chosen card's rows carry the Sizing total (1 GPU) and the
    # chosen offer's memory per GPU
    b.tab("fit")
    b.wait_text(".gpuwork-fit-panel .gpuwork-decision", render(want.decision.summary, lang))
    gpu = top.offer.gpu
    b.wait_text(".gpuwork-fit-table", f"{gpu.display_name} 1 {plan.sharding.value} {gib(est.device_total_bytes, lang, 1)} /")
    rows = {(r[0], r[1]): r for r in b.rows(".gpuwork-fit-table")}
    assert len(rows) == len(want.matrix.cells)
    one = rows[(norm(gpu.display_name), "1")]
    sizing_total = number(totals[2], lang)
    assert number(one[3].split("/")[0], lang) == pytest.approx(sizing_total, abs=0.051), (one, totals)
    # the matrix is the plan as written: its row of the chosen card and count carries the answer's memory only when
    # the answer needs no change (else the change, e.g. checkpointing, is what frees the memory)
    if want.decision.suggestion is None:
        chosen = rows[(norm(gpu.display_name), str(top.fit.plan.gpus))]
        assert chosen[3].split("/")[0].strip() == gib(top.fit.device_total_bytes, lang, 1), (chosen, top.fit)
        assert chosen[2] == top.fit.plan.sharding.value
    if unfiltered and want.decision.suggestion is None:  # with no filter and no change its cheapest is the top row
        best = want.matrix.cheapest()
        assert (best.gpu_id, best.gpus) == (top.offer.gpu_id, top.fit.plan.gpus)
        b.wait_text(".gpuwork-fit-cheapest", render(msg("cli.fit.cheapest", gpus=best.gpus, gpu=best.gpu_name,
                                                         run_s=best.total_s, cost_usd=best.cost_usd), lang))
    check_russian(b, "fit", b.text(".gpuwork-tabs"))

    # Offers: the top row is the evaluator's cheapest offer for this plan, on the same GPUs as the advice says
    b.tab("offers")
    name = text_of("offer.name", lang, provider=top.offer.provider, per_node=top.offer.gpus_per_node,
                   gpu=gpu.display_name, mode=top.offer.mode.value)  # a name people read, not the catalog id
    b.wait_text(".gpuwork-offers tbody tr:first-child", name)
    first = b.rows(".gpuwork-offers")[0]
    assert first[:3] == [norm(name), top.offer.provider, norm(gpu.display_name)], first
    assert b.page.get_attribute(".gpuwork-offers tbody tr:first-child .gpuwork-offer-name",
                                "data-offer-id") == top.offer.offer_id
    assert first[6] == f"{top.fit.plan.gpus} / {top.billed_gpus}"
    b.wait_text(".gpuwork-offers-table .gpuwork-decision", render(want.decision.summary, lang))
    status = b.page.evaluate("() => document.querySelector('.gpuwork-advice-status-box .gpuwork-decision')"
                             ".textContent")
    assert norm(name) in norm(status) and top.offer.offer_id not in status  # the answer names the table's row
    assert f"{top.fit.plan.gpus} x" in norm(status).replace("×", "x")
    check_russian(b, "offers", b.text(".gpuwork-tabs"))

    # Request: the form's plan, on the chosen offer's GPU, vendor and count, rented in a mode that fits the run
    b.tab("request")
    b.wait_text(".gpuwork-request-text textarea", render(msg("request.shape", seq_len=plan.seq_len,
                                                             batch=plan.batch_size, accum=None), lang))
    fields = request_fields(b)
    assert b.page.locator(".gpuwork-request-text textarea").input_value() == fields["text"]
    assert fields["lang"] == lang
    assert (fields["model_ref"], fields["method"], fields["seq_len"], fields["batch_size"], fields["grad_accum"]) == (
        plan.model, plan.method.value, plan.seq_len, plan.batch_size, plan.grad_accum)
    if dataset_bytes is not None:
        assert fields["dataset_bytes"] == dataset_bytes
    suggested = fields["suggested"]
    one_answer = {"gpu": gpu.display_name, "vendor": gpu.vendor, "gpus": top.fit.plan.gpus}
    in_request = {"gpu": (suggested["offer"] or {}).get("gpu"), "vendor": suggested["vendor"],
                  "gpus": suggested["gpus"]}
    if in_request != one_answer:  # said at the end of the task, so that the other tabs are checked too
        problems.append(f"{lang}: the request names {in_request}, the chosen offer (Offers tab's top row, the "
                        f"advice's) is {one_answer}")
    elif norm(gpu.display_name) not in norm(fields["text"]):
        problems.append(f"{lang}: the request's text does not name {gpu.display_name}")
    run_s = fields["estimates"]["total_s"]
    assert run_s is not None
    if run_s < 7 * 24 * 3600:  # a run of hours or days is never a reserved month
        assert suggested["mode"] in ("on-demand", "interruptible"), (run_s, suggested["mode"])
    check_russian(b, "request", b.text(".gpuwork-tabs"))

    # Demo trial: its own tiny plan, said so, no error
    b.tab("trial")
    b.page.wait_for_selector(".gpuwork-trial-run", state="visible", timeout=WAIT_MS)
    trial_text = b.text(".gpuwork-trial")
    assert "tiny-" in trial_text and not b.page.locator(".gpuwork-trial .gpuwork-error").count()
    check_russian(b, "trial", b.text(".gpuwork-tabs"))


def check_invalid_clears(b: Page, bad: str, want: SimpleNamespace) -> None:
    """An invalid sequence length: every tab drops the last plan's results and says why."""
    b.tab("sizing")
    b.type_into(".gpuwork-seq-len", bad)
    label = text_of("ui.field.seq_len", b.lang)  # the field by its label, never its attribute (issue 20, item 6)
    b.wait_text(".gpuwork-sizing .gpuwork-message", label)
    assert "seq_len" not in b.text(".gpuwork-sizing .gpuwork-message")
    stale = [gib(want.memory.device_total_bytes, b.lang, 2), want.top.offer.offer_id]
    for name in RESULTS:
        b.tab(name)
        if name != "sizing":
            b.wait_text(f"{PANELS[name]} .gpuwork-error", label)
        shown = b.text(RESULTS[name])
        assert not NUMBERS.search(shown), (name, NUMBERS.search(shown).group(0), shown)
        assert not [s for s in stale if s in shown], (name, stale, shown)
        check_russian(b, name, b.text(".gpuwork-tabs"))
    assert b.page.locator(".gpuwork-request-text textarea").input_value() == ""
    assert not b.page.locator(".gpuwork-fit-table").count() and not b.page.locator(".gpuwork-advice-status").count()
    b.tab("sizing")
    assert not b.page.locator(".gpuwork-breakdown").is_visible()


def fill(b: Page, plan: TrainPlan, dataset_text: str, seq_text: str | None = None) -> None:
    """Set the Sizing form to ``plan`` as a person does: pick the model and method, type the numbers as written
    ("4k", "200 MB")."""
    b.tab("sizing")
    b.pick(".gpuwork-model", plan.model)
    b.pick(".gpuwork-method", ui("method_option", b.lang, value=plan.method))
    b.type_into(".gpuwork-seq-len", seq_text or str(plan.seq_len))
    b.type_into(".gpuwork-batch-size", str(plan.batch_size))
    b.tick(".gpuwork-grad-checkpointing", plan.grad_checkpointing)
    b.type_into(".gpuwork-dataset-tokens", dataset_text)
    b.wait_text(".gpuwork-summary", plan_caption(plan, lang=b.lang))


def set_dataset_gb(b: Page, gb: str) -> None:
    """The Request tab's dataset size (GB; 0 = from the tokens)."""
    b.tab("request")
    field = b.page.locator(".gpuwork-request-dataset-gb input").first
    field.fill(gb)
    field.press("Enter")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):
    """One Voila server and one Chromium page for the module; yields a ``Page`` on the loaded app."""
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    load = load_benchmark("app_load")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = load.start_server(port, 2, tmp_path_factory.mktemp("voila") / "voila.log")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            try:
                page, errors = local_page(browser, url)
                page.goto(url, timeout=120_000)
                page.wait_for_selector(CHART, timeout=120_000)
                b = Page(page)
                yield b
                assert not errors, errors
            finally:
                browser.close()
    finally:
        load.stop_server(proc)


# -- the same answer from the CLI and notebook 03 ---------------------------------------------------------------------


def cli_json(*args: str) -> Any:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "gpuwork", *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (args, out.stderr[-2000:])
    return json.loads(out.stdout)


def plan_flags(plan: TrainPlan, seq_text: str, dataset: tuple[str, str]) -> list[str]:
    return ["--model", plan.model, "--method", plan.method.value, "--seq-len", seq_text, *dataset]


def the_answer(d: Any) -> dict[str, Any]:
    """What every surface must agree on: card, count, nodes, mode, changes, time and cost."""
    out = d.as_dict() if not isinstance(d, dict) else d
    return {"gpu_id": out["gpu_id"], "gpus": out["gpus"], "nodes": out["nodes"], "mode": out["mode"],
            "suggestion": out["suggestion"], "changes": out["changes"], "total_s": round(out["total_s"], 3),
            "cost_usd": None if out["cost_usd"] is None else round(out["cost_usd"], 4)}


def check_cli_and_notebook(want: SimpleNamespace, flags: list[str], lang: str, tmp: Path,
                           have: str | None = None) -> None:
    """`gpuwork plan / advise / offers / request` and notebook 03 give ``want.decision``'s answer."""
    d = want.decision
    answer = the_answer(d)
    extra = ["--have", have] if have else []
    assert the_answer(cli_json("plan", *flags, *extra, "--json")["decision"]) == answer
    assert the_answer(cli_json("advise", *flags, *extra, "--json")["decision"]) == answer
    offers = cli_json("offers", *flags, *extra, "--json")
    if have:
        assert the_answer(offers["decision"]) == answer
    else:  # ranked by cost, the top row is the answer's offer, time and cost
        top = offers[0]
        assert (top["offer_id"], top["gpu_id"], top["fit"]["gpus"], top["nodes"], top["mode"]) == (
            d.offer.offer.offer_id, answer["gpu_id"], answer["gpus"], answer["nodes"], answer["mode"])
        assert (round(top["expected_total_s"], 3), round(top["expected_cost_usd"], 4)) == (
            answer["total_s"], answer["cost_usd"])
    req = cli_json("request", *flags, *extra, "--format", "json", "--lang", lang)
    suggested = req["suggested"]
    assert (suggested["reference_gpu"], suggested["gpus"], suggested["nodes"]) == (
        answer["gpu_id"], answer["gpus"], answer["nodes"])
    assert suggested["changes"] == [render(c, lang) for c in d.changes]
    if have:
        assert suggested["offer"] is None and the_answer(req["decision"]) == answer
    else:
        assert suggested["mode"] == answer["mode"]
        assert (suggested["offer"]["offer_id"], round(suggested["offer"]["expected_cost_usd"], 4)) == (
            d.offer.offer.offer_id, answer["cost_usd"])
    # notebook 03, as a person runs it (papermill, report mode: its HTML is what a reader sees)
    import html as html_lib

    import nbformat
    import papermill


    source = Path(charts.__file__).resolve().parents[1] / "ui" / "notebooks" / "03_offers.ipynb"
    out = tmp / f"03_offers_{lang}.ipynb"
    plan = want.plan
    papermill.execute_notebook(str(source), str(out), kernel_name="python3", progress_bar=False, cwd=str(tmp),
                               parameters={"plan": plan.as_dict(), "have": have or "", "lang": lang,
                                           "report": True}, store_widget_state=False)
    nb = nbformat.read(out, as_version=4)
    shown = html_lib.unescape("".join(o.get("data", {}).get("text/html", "") for c in nb.cells
                                      if c.cell_type == "code" for o in c.outputs))
    assert norm(render(d.summary, lang)) in norm(shown), "notebook 03 does not give the one answer"
    if not have:
        first_row = shown.split("<tbody>", 1)[1].split("</tr>", 1)[0]
        assert d.offer.offer.offer_id in first_row


def check_own_tabs(b: Page, want: SimpleNamespace) -> None:
    """On the user's own cards every tab names the answer there: card, count, changes, time, no rental cost."""
    lang, d = b.lang, want.decision
    summary = render(d.summary, lang)
    b.tab("sizing")
    b.wait_text(".gpuwork-details .gpuwork-decision", summary)
    own = ui("profile_own", lang, id=d.match.profile.profile_id, name=d.match.profile.name, gpus=d.match.gpus,
             gpu=d.match.gpu_name)
    b.wait_text(".gpuwork-details", own)
    for tab, where in (("advice", ".gpuwork-advice-status-box .gpuwork-decision"),
                       ("fit", ".gpuwork-fit-panel .gpuwork-decision"),
                       ("offers", ".gpuwork-offers-table .gpuwork-decision")):
        b.tab(tab)
        b.wait_text(where, summary)
        check_russian(b, tab, b.text(".gpuwork-tabs"))
    b.tab("request")
    b.wait_text(".gpuwork-request-text textarea", d.match.gpu_name)
    suggested = request_fields(b)["suggested"]
    assert (suggested["reference_gpu"], suggested["gpus"], suggested["offer"]) == (d.gpu_id, d.gpus, None)
    assert suggested["changes"] == [render(c, lang) for c in d.changes]
    check_russian(b, "request", b.text(".gpuwork-tabs"))


def test_lora_8b_at_4k_on_200_mb_of_text_which_gpu_how_long_how_much_request_in_russian(
        app: Page, tmp_path: Path) -> None:
    """Task 1: typed as people write it ("4k", "200 MB"), checked in both languages, with the CLI and notebook 03;
    then "abc" as the sequence length clears every tab."""
    b = app
    started = time.monotonic()
    problems: list[str] = []
    b.set_lang("en")
    b.tab("offers")
    b.set_classes(ALL_CLASSES)
    set_dataset_gb(b, "0")  # the size comes from the form
    plan = TrainPlan(model="llama-3.1-8b", method=Method.LORA, seq_len=4096, dataset_tokens=TEXT_200MB_TOKENS,
                     dataset_bytes=200_000_000)
    fill(b, plan, "200 MB", "4k")
    b.wait_text(".gpuwork-dataset-note", "4 bytes per token")
    want = expected(plan, {})
    check_every_tab(b, want, problems, unfiltered=True, dataset_bytes=200_000_000)
    b.set_lang("ru")  # the request in Russian, and every tab with it
    check_every_tab(b, want, problems, unfiltered=True, dataset_bytes=200_000_000)
    assert request_fields(b)["text"].startswith("Дообучение")
    check_cli_and_notebook(want, plan_flags(plan, "4k", ("--dataset-bytes", "200MB")), "ru", tmp_path)
    check_invalid_clears(b, "abc", want)
    print(f"\n[tasks] LoRA 8B: {time.monotonic() - started:.0f} s", end="")
    assert not problems, problems


def test_full_fine_tune_of_a_70b_model(app: Page, tmp_path: Path) -> None:
    """Task 2: filled in Russian, checked in both languages, with the CLI and notebook 03; then 0 as the sequence
    length clears every tab."""
    b = app
    started = time.monotonic()
    problems: list[str] = []
    b.set_lang("ru")
    b.tab("offers")
    b.set_classes(ALL_CLASSES)
    set_dataset_gb(b, "0")
    plan = TrainPlan(model="llama-3.1-70b", method=Method.FULL, seq_len=2048)
    fill(b, plan, "100M")
    want = expected(plan, {})
    assert want.top.fit.plan.gpus > 1  # a 70B full update needs several GPUs: the count must agree everywhere
    check_every_tab(b, want, problems, unfiltered=True)
    b.set_lang("en")
    check_every_tab(b, want, problems, unfiltered=True)
    check_cli_and_notebook(want, plan_flags(plan, "2048", ("--dataset-tokens", "100M")), "en", tmp_path)
    check_invalid_clears(b, "0", want)
    print(f"\n[tasks] full 70B: {time.monotonic() - started:.0f} s", end="")
    assert not problems, problems


def test_qlora_7b_on_my_own_24_gb_card(app: Page, tmp_path: Path) -> None:
    """Task 3: "I have one 24 GB card: can I QLoRA a 7B, how long?" - My cards = 1 x RTX 4090; every tab, the CLI
    (--have) and notebook 03 (have=) name that card, the changes it needs and the time, with no rental cost."""
    from gpuwork.estimate.decision import Constraints
    from gpuwork.sizing import parse_have

    b = app
    started = time.monotonic()
    b.set_lang("en")
    set_dataset_gb(b, "0")
    b.tab("offers")
    b.set_classes(ALL_CLASSES)
    # as the user picks it: QLoRA with no precision chosen takes its method's (plan.default_precision)
    plan = plan_from_choices({"model": "mistral-7b", "method": Method.QLORA, "seq_len": 2048})
    fill(b, plan, "100M")
    b.tab("offers")
    b.type_into(".gpuwork-have", "1xrtx4090")
    decision = sizing.decide(plan, constraints=Constraints(have=parse_have("1xrtx4090")))
    assert decision.own and decision.gpu_id == "rtx4090" and decision.cost_usd is None
    want = SimpleNamespace(plan=plan, decision=decision)
    check_own_tabs(b, want)
    b.set_lang("ru")
    check_own_tabs(b, want)
    check_cli_and_notebook(want, plan_flags(plan, "2048", ("--dataset-tokens", "100M")), "ru", tmp_path,
                           have="1xrtx4090")
    b.tab("offers")
    b.type_into(".gpuwork-have", "")  # back to renting, for whatever runs next on this page
    print(f"\n[tasks] QLoRA 7B on my card: {time.monotonic() - started:.0f} s", end="")
