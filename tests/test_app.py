"""The Voila app: wiring without a browser, then a real Voila server driven by chromium.

Only 127.0.0.1 is contacted. The Voila tests start their own server on a free port and always stop it
(and the kernels it started) by PID. The browser test prints the app's first-render time and the time
from a widget change to the updated chart.
"""

from __future__ import annotations

import html
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import ipywidgets as widgets
import nbformat
import psutil
import pytest
from conftest import free_port, load_benchmark, local_page, stop_server, upload_value

from gpuwork.cli.app import POOL_SIZE
from gpuwork.estimate.memory import TERM_LABELS
from gpuwork.estimate.offers import offer_name
from gpuwork.facts.model import load_config
from gpuwork.plan import TrainPlan
from gpuwork.present.charts import TOTALS
from gpuwork.present.messages import render
from gpuwork.ui import app as app_view
from gpuwork.ui import common
from gpuwork.ui.app import GIB, TITLE, App, StaticApp, build_app
from gpuwork.ui.common import PLOTLY_BASIC_URL
from gpuwork.ui.queue import ActionQueue

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "app.ipynb"
ADVICE, FIT, OFFERS, REQUEST = (app_view.TABS.index(t) for t in ("advice", "fit", "offers", "request"))


# -- (a) the app's wiring, no browser ---------------------------------------------------------------------


def test_app_has_the_tabs_and_starts_from_the_default_plan() -> None:
    app = build_app()
    assert isinstance(app, App) and isinstance(app, widgets.Widget)
    assert app.tabs.titles == ("Sizing", "Advice", "All GPUs", "Offers", "Request", "Demo trial")
    assert app.sizing.plan == TrainPlan() and app.sizing.error is None
    assert f"{app.sizing.memory.device_total_bytes / GIB:,.2f}" in app.sizing.totals.value
    assert app.trial is not None and app.trial.demo and app.trial.device == "cpu"
    assert app.offers.request is None  # the request has its own tab


def test_the_plan_flows_to_offers_and_request_when_their_tab_is_shown() -> None:
    app = build_app({"model": "llama-3.1-8b", "method": "qlora"})
    assert app.offers.results == [] and app.request.request is None  # not evaluated while hidden
    assert app.advice.advice is None and app.fit.matrix is None
    app.tabs.selected_index = OFFERS
    assert app.offers.results and app.offers.plan == app.sizing.plan == app.plan
    app.tabs.selected_index = REQUEST
    assert app.request.text.value.startswith("Fine-tuning, QLoRA")
    app.sizing.controls["method"].value = "lora"  # the visible request follows at once
    assert app.request.text.value.startswith("Fine-tuning, LoRA")
    assert app.offers.plan.method.value == "lora" and app.offers._stale
    app.tabs.selected_index = OFFERS
    assert not app.offers._stale and all(r.fit.plan.method.value == "lora" for r in app.offers.results if r.fits)


# A result's number with its unit: memory, money, time (an intro's words carry none).
NUMBERS = re.compile(r"\d[\d,.]* (GiB|GB|h|min|s)\b|\$\d")


def _tab_texts(app: App) -> dict[str, str]:
    """What each tab shows as text (HTML without tags, text areas), after showing every tab."""
    out = {}
    for index, name in enumerate(app_view.TABS[:-1]):  # the demo trial has its own plan
        app.tabs.selected_index = index
        texts: list[str] = []
        _walk(app.tabs.children[index], texts)
        out[name] = " ".join(" ".join(texts).split())
    return out


def _walk(w: widgets.Widget, texts: list[str]) -> None:
    if isinstance(w, widgets.HTML | widgets.Textarea):
        texts.append(re.sub(r"<[^>]+>", " ", html.unescape(w.value)))
    for child in getattr(w, "children", ()) or ():
        _walk(child, texts)


def test_one_state_an_invalid_input_clears_the_results_on_every_tab() -> None:
    """Set a valid plan and look at every tab; then an invalid value: no tab shows the old numbers, each says
    why; the charts are hidden; a valid value brings everything back, for that plan."""
    app = build_app({"model": "llama-3.1-8b", "method": "lora", "seq_len": 4096})
    before = _tab_texts(app)
    total = f"{app.sizing.memory.device_total_bytes / GIB:,.2f}"
    assert total in before["sizing"] and "$" in before["offers"] and "Fine-tuning, LoRA" in before["request"]
    assert "GiB per GPU" in before["advice"] and "headroom" in before["fit"]
    app.tabs.selected_index = 0
    app.sizing.controls["seq_len"].value = -5
    assert app.plan is None and app.error.startswith("Sequence length: -5")
    after = _tab_texts(app)
    assert NUMBERS.search(before["sizing"]) and total not in after["sizing"] and not NUMBERS.search(after["sizing"])
    for name in ("advice", "fit", "offers", "request"):
        assert "the plan on the Sizing tab is invalid (Sequence length: -5" in after[name], (name, after[name])
        assert not NUMBERS.search(after[name]), (name, NUMBERS.search(after[name]))
    assert app.request.text.value == "" and app.offers.results == [] and app.fit.matrix is None
    assert app.sizing.breakdown.box.layout.visibility == "hidden" == app.offers.scatter.box.layout.visibility
    app.sizing.controls["seq_len"].value = 1024
    # the hidden tabs drop the error at once (their results come when shown): no stale red line anywhere
    assert not any(p.message.value for p in (app.advice, app.fit, app.offers, app.request))
    again = _tab_texts(app)
    assert app.error is None and app.request.plan.seq_len == 1024 == app.fit.matrix.plan.seq_len
    assert "invalid" not in " ".join(again.values()) and app.sizing.breakdown.box.layout.visibility == "visible"
    assert app.offers.plan == app.advice.plan == app.plan and app.plan.seq_len == 1024


def test_the_advisor_applies_with_one_click_and_the_offers_follow() -> None:
    """The QLoRA 7B task (on demand): the best suggestion lands on a 24 GB card; Apply sets the form, and the
    offers' top row is that card, the request says the applied plan."""
    app = build_app({"model": "mistral-7b", "method": "qlora", "seq_len": 2048})
    app.offers.modes.value = ("on-demand",)
    app.tabs.selected_index = ADVICE
    best = app.advice.advice.suggestions[0]
    assert best.gpu_id == "rtx4090" and best.outcome.offer.offer.gpu.memory_gb == 24
    assert not app.sizing.controls["grad_checkpointing"].value
    app.advice.buttons[0].click()
    assert app.sizing.controls["grad_checkpointing"].value and app.plan == best.plan == app.sizing.plan
    app.tabs.selected_index = OFFERS
    top = app.offers.results[0]
    assert top.offer.gpu_id == "rtx4090" and top.offer.offer_id == best.outcome.offer.offer.offer_id
    # the table prices the one answer for the applied plan, which goes a step further on the same card:
    # checkpointing on one block in 4 spends memory the card has for less recompute
    further = app.offers.decision.suggestion
    assert further.key == "recompute_every_4" and further.plan == best.plan.replace(recompute_every=4)
    assert top.fit.plan.gpus == 1 and top.expected_cost_usd == pytest.approx(further.outcome.cost_usd)
    assert further.outcome.cost_usd < best.outcome.cost_usd
    app.tabs.selected_index = REQUEST
    assert app.request.plan == best.plan and "24 GB (GeForce RTX 4090 class)" in app.request.text.value
    offer = best.outcome.offer.offer  # the request names the offer as the tables do, never by its catalog id
    assert render(offer_name(offer), app.lang) in app.request.text.value
    assert offer.offer_id not in app.request.text.value
    app.tabs.selected_index = ADVICE  # the applied plan is the new baseline
    assert app.advice.plan == best.plan and "1 x GeForce RTX 4090" in app.advice.status.value


def test_the_advice_follows_the_offers_filters() -> None:
    app = build_app({"model": "mistral-7b", "method": "qlora"})
    app.tabs.selected_index = OFFERS
    app.offers.modes.value = ("interruptible", "reserved")
    assert app.advice._stale
    app.tabs.selected_index = ADVICE
    assert app.advice.advice.baseline.offer.offer.mode.value == "interruptible"
    app.offers.modes.value = ("reserved",)
    assert not app.advice._stale  # the advice tab is in view: evaluated again at once
    assert app.advice.advice.baseline.offer.offer.mode.value == "reserved"


def test_the_plan_round_trips_through_the_url_and_the_plan_file() -> None:
    from gpuwork.ui.share import plan_file_bytes

    app = build_app(query="?model=llama-3.1-8b&method=qlora&seq_len=4096&grad_checkpointing=true&lang=ru")
    # a link that names no precision: QLoRA's (gpuwork.plan.default_precision)
    assert app.plan == TrainPlan(model="llama-3.1-8b", method="qlora", precision="bf16-mixed", seq_len=4096,
                                 grad_checkpointing=True)
    assert app.lang == "ru" and app.tabs.titles[0] == "Расчёт"
    assert app.sizing.controls["model"].value == "llama-3.1-8b" and app.sizing.controls["seq_len"].value == "4096"
    again = build_app(query=app.query())
    assert again.plan == app.plan and again.lang == "ru"
    assert "href=\"?model=llama-3.1-8b&amp;method=qlora" in app.sizing.share.value
    # the downloaded plan file, uploaded to a fresh page, gives the same plan
    fresh = build_app()
    fresh.sizing.upload.value = upload_value(plan_file_bytes(app.plan), "plan-llama-3.1-8b.json")
    assert fresh.sizing.error is None and fresh.plan == app.plan
    assert fresh.sizing.controls["method"].value == "qlora"


@pytest.mark.parametrize(("query", "says"), [
    ("model=llama-3.1-8b&seq_len=lots", "Sequence length"), ("method=qloraa", "qlora"), ("seq_lenn=4096", "seq_len"),
])
def test_a_bad_query_value_shows_the_validation_message(query: str, says: str) -> None:
    app = build_app(query=query)
    assert app.plan is None and says in app.error and "gpuwork-error" in app.sizing.message.value
    assert app.sizing.controls["model"].value == TrainPlan().model  # the form starts from the default plan
    app.tabs.selected_index = OFFERS
    assert app.offers.results == [] and "invalid" in app.offers.message.value


def test_a_preheated_kernel_builds_first_and_follows_the_visitors_query(monkeypatch: pytest.MonkeyPatch) -> None:
    """Voila's preheated kernel runs the notebook before its visitor comes; the query arrives with the visitor
    (gpuwork.ui.share.page_query waits for it): the app is shown at once and then set to the link's plan."""
    monkeypatch.setattr(common, "_public", False)
    monkeypatch.setenv("VOILA_PREHEAT", "True")
    monkeypatch.delenv("SERVER_SOFTWARE", raising=False)
    monkeypatch.setenv("QUERY_STRING", "model=llama-3.2-1b&method=full")  # as voila sets it when the visitor comes
    assert app_view.preheated() and app_view.served_by_voila()
    app = build_app()
    assert common.is_public()  # a preheated kernel serves a visitor too
    deadline = time.monotonic() + 30
    while app.plan != TrainPlan(model="llama-3.2-1b", method="full") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert app.plan == TrainPlan(model="llama-3.2-1b", method="full")
    assert app.sizing.controls["method"].value == "full"


def test_language_switch_relabels_every_tab_and_the_request() -> None:
    app = build_app()
    app.tabs.selected_index = REQUEST
    app.lang_toggle.value = "ru"
    assert app.tabs.titles == ("Расчёт", "Советы", "Все GPU", "Предложения", "Заявка", "Пробный запуск")
    assert app.sizing.controls["method"].description == "Метод"
    assert app.request.text.value.startswith("Дообучение")
    assert "Поместится ли" in app.intro.value
    app.set_lang("en")
    assert app.lang_toggle.value == "en" and app.tabs.titles[0] == "Sizing"
    assert app.request.text.value.startswith("Fine-tuning")


def test_a_finished_demo_trial_joins_the_comparison() -> None:
    app = build_app()
    fake = SimpleNamespace(label="fake")
    app.trial.listeners[0](fake)
    assert app.offers.records == [fake]


def test_a_bug_never_shows_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuwork.ui import sizing as ui_sizing

    def broken(plan: TrainPlan, axis: str = "seq_len") -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(ui_sizing, "size_plan", broken)
    app = build_app()
    assert "unexpected error" in app.sizing.error and "boom" in app.sizing.error
    assert "Traceback" not in app.sizing.message.value


# -- (b) a hostile visitor: uploads, paths, numbers, the waiting line ---------------------------------------

_OPENED: list[str] = []
_WATCH = threading.local()


def _audit(event: str, args: tuple) -> None:  # sys.addaudithook cannot be removed: it records only when asked
    if event == "open" and getattr(_WATCH, "on", False) and isinstance(args[0], str | bytes):
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)


def _opened_while(action) -> list[str]:
    """The files this thread opened while ``action()`` ran (Python's audit events: every open() and os.open())."""
    _OPENED.clear()
    _WATCH.on = True
    try:
        action()
    finally:
        _WATCH.on = False
    return list(_OPENED)


@pytest.mark.parametrize("content", [b"/dev/zero", b"/etc/passwd", b"/dev/zero\n", b"  /etc/passwd"])
def test_an_upload_whose_content_is_a_path_never_opens_that_path(content: bytes) -> None:
    """9 bytes of "/dev/zero" once made the server read /dev/zero until the kernel's memory ran out."""
    app = build_app()
    opened = _opened_while(lambda: setattr(app.offers.record_upload, "value", upload_value(content, "run.json")))
    assert not [p for p in opened if "/dev/" in p or "passwd" in p], opened
    assert app.offers.error == ("run.json is not JSON text (line 1, column 1: Expecting value): upload the trial "
                                "record file itself, not its name or path") or "line 1, column 3" in app.offers.error
    assert app.offers.records == []
    opened = _opened_while(lambda: setattr(app.sizing.upload, "value", upload_value(content, "config.json")))
    assert not [p for p in opened if "/dev/" in p or "passwd" in p], opened
    assert app.sizing.error.startswith("config.json is not valid JSON") and app.sizing.plan is None


@pytest.mark.parametrize("what", ["record", "config"])
def test_uploads_above_one_megabyte_are_refused_with_the_limit(what: str) -> None:
    app = build_app()
    big = b'{"model_type": "llama", "pad": "' + b"x" * 1_000_000 + b'"}'
    control = app.offers.record_upload if what == "record" else app.sizing.upload
    control.value = upload_value(big, "big.json")
    error = app.offers.error if what == "record" else app.sizing.error
    assert error.startswith(f"big.json is larger than the 1 MB limit for uploads ({len(big):,} bytes)"), error


def test_a_real_record_upload_joins_the_comparison() -> None:
    from gpuwork.measure.trial import TrialRecord

    content = (ROOT / "tests" / "data" / "trial_record_own_run.json").read_bytes()
    app = build_app()
    app.offers.record_upload.value = upload_value(content, "/home/someone/run.json")
    assert app.offers.error is None and len(app.offers.records) == 1
    assert isinstance(app.offers.records[0], TrialRecord)


@pytest.mark.parametrize(("content", "says"), [
    (b"", "run.json is empty"), (b"\xff\xfe{}", "not UTF-8 text"), (b"[" * 100_000, "more than the 64 gpuwork reads"),
    (b"[1, 2]", "not a JSON object"), (b'{"schema_version": 999}', "trial record schema 999"),
    (b'{"schema_version": 1}', "is not a gpuwork trial record"),
])
def test_broken_record_uploads_are_one_line(content: bytes, says: str) -> None:
    app = build_app()
    app.offers.record_upload.value = upload_value(content, "run.json")
    assert says in app.offers.error and "\n" not in app.offers.error and app.offers.records == []


def test_the_served_app_names_no_server_path_and_no_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuwork.ui import sizing as ui_sizing

    monkeypatch.setattr(common, "_public", False)  # restored after the test
    monkeypatch.setenv("SERVER_SOFTWARE", "voila/0.5.13")  # what Voila puts in its kernels' environment
    app = build_app()
    assert common.is_public()
    config, _ = load_config("tiny-llama")
    del config["hidden_size"]
    app.sizing.upload.value = upload_value(json.dumps(config).encode(), "my-config.json")
    assert "hidden_size" in app.sizing.error and "/" not in app.sizing.error, app.sizing.error
    assert app.sizing.store.folder not in app.sizing.message.value

    def broken(plan: TrainPlan, axis: str = "seq_len") -> None:
        raise RuntimeError("boom in /srv/gpuwork/secret.py")

    monkeypatch.setattr(ui_sizing, "size_plan", broken)
    app.sizing.model_source.value = "preset"
    error = app.sizing.error
    assert error.startswith("unexpected error (reference ") and "boom" not in error and "RuntimeError" not in error
    assert "/srv" not in app.sizing.message.value


def test_verify_exactly_waits_in_the_line_and_says_so(tmp_path: Path) -> None:
    line = ActionQueue(tmp_path, places=2, poll_s=0.02)
    app = App({"model": "tiny-llama"}, queue=line)
    app.sizing.controls["seq_len"].value = "0"  # verify then answers at once with the form's error: no trace runs
    release = threading.Event()
    busy = threading.Thread(target=line.run, args=(lambda: release.wait(10),))
    busy.start()
    while not line.state()[0]:
        time.sleep(0.01)
    app.sizing.verify_button.click()
    deadline = time.monotonic() + 10
    while "gpuwork-waiting" not in app.sizing.verify_out.value and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "Waiting (1 ahead)" in app.sizing.verify_out.value and line.state() == (True, 1)
    app.set_lang("ru")
    app.sizing.queued(lambda: None)  # a second press while the first waits
    assert "Предыдущее действие ещё выполняется" in app.sizing.verify_out.value
    release.set()
    busy.join(10)
    deadline = time.monotonic() + 10
    # the answer is written inside the action, and the line frees its place only after the action returns
    while (("Длина последовательности" not in app.sizing.verify_out.value or line.state() != (False, 0))
           and time.monotonic() < deadline):
        time.sleep(0.01)
    assert "Длина последовательности" in app.sizing.verify_out.value and line.state() == (False, 0)


def test_the_app_trial_and_verify_share_one_line() -> None:
    from gpuwork.ui.queue import shared_queue

    app = build_app()
    app.trial.controls["seq_len"].value = "4096.5"
    assert "not a whole number" in app.trial.error
    assert app.sizing.queue is None and app.trial.queue is None  # both take the server's line when they run
    assert shared_queue() is shared_queue()


def test_report_mode_builds_a_static_app(monkeypatch: pytest.MonkeyPatch) -> None:
    import plotly.graph_objects as go

    from gpuwork.ui import common

    shown: list = []
    monkeypatch.setattr(common, "display", lambda *objs: shown.extend(objs))
    static = build_app({"model": "llama-3.2-1b"}, report=True)
    assert isinstance(static, StaticApp)
    static._ipython_display_()
    assert sum(isinstance(o, go.Figure) for o in shown) == 5  # breakdown, 2 what-if, scaling, offers
    assert not any(isinstance(o, go.FigureWidget) for o in shown)


def test_app_notebook_has_the_title_and_only_builds_the_app() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert TITLE in nb.cells[0].source
    assert "build_app(" in nb.cells[-1].source


def test_app_view_exports() -> None:
    assert app_view.error_html("a\nb").count("gpuwork-error") == 1 and app_view.one_line("a\n b") == "a b"


# -- (c) Voila serves the page ---------------------------------------------------------------------------


def _stop(proc: subprocess.Popen) -> None:
    """Stop Voila (its process group; SIGINT is its clean stop, which shuts its kernels down) and its kernels."""
    try:
        started = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        started = []
    stop_server(proc, started, sig=signal.SIGINT, group=True)


@pytest.fixture(scope="module")
def voila_app(tmp_path_factory: pytest.TempPathFactory):
    """A Voila server for notebooks/app.ipynb on a free 127.0.0.1 port: yields its URL.

    Started from the repository root so that it reads the project's voila.json; ready when the port
    accepts connections (fetching the page would start a kernel); always stopped by PID.
    """
    voila = Path(sys.executable).with_name("voila")
    assert voila.exists(), f"voila is not installed next to {sys.executable}: run `make venv`"
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log_path = tmp_path_factory.mktemp("voila") / "voila.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(voila), "notebooks/app.ipynb", f"--port={port}", "--Voila.port_retries=0", "--no-browser"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"voila exited with {proc.returncode}:\n{log_path.read_text(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"voila did not listen on {url} within 90 s:\n{log_path.read_text(errors='replace')}")
                time.sleep(0.2)
        yield SimpleNamespace(url=url, log=log_path)
    finally:
        _stop(proc)
        assert proc.poll() is not None, f"voila (pid {proc.pid}) is still running"


CHROMIUM = Path("/usr/bin/chromium")
# Headless Debian chromium in a container, often as root: no sandbox, no /dev/shm, no GPU, no network chatter.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
CHART = ".gpuwork-breakdown .js-plotly-plot"
# Change a control in the page and wait (in the page, frame by frame) until the breakdown chart's data
# differ: returns the milliseconds from the change to the updated chart.
CHANGE_AND_TIME = """async ([selector, value, kind]) => {
  // each update draws a new plot element: look it up every time
  const snap = () => {
    const gd = document.querySelector('.gpuwork-breakdown .js-plotly-plot');
    return gd && gd.data ? JSON.stringify(gd.data.map(t => t.y)) : '';
  };
  const before = snap();
  const el = document.querySelector(selector);
  const t0 = performance.now();
  el.value = value;
  if (kind === 'text') { el.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); }
  el.dispatchEvent(new Event('change', {bubbles: true}));
  // until the new chart is drawn: between the old one and the new one there may be none
  while (snap() === before || snap() === '') {
    await new Promise(r => requestAnimationFrame(r));
    if (performance.now() - t0 > 60000) { return -1; }
  }
  return performance.now() - t0;
}"""


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(300)
def test_browser_method_and_sequence_update_the_chart(voila_app: SimpleNamespace, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The real wiring: Voila page in chromium; method and sequence length change the chart and the totals;
    an invalid value shows one friendly line and the app keeps working."""
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    url = voila_app.url
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page, errors = local_page(browser, url)
            started = time.monotonic()
            page.goto(url, timeout=120_000)
            page.wait_for_selector(CHART, timeout=120_000)
            first_render_s = time.monotonic() - started
            # a chart out of sight is drawn when it comes near the screen: the first paint draws only the first one
            assert page.locator(".gpuwork-scaling .gpuwork-plot").count() == 1
            assert page.locator(".gpuwork-scaling .js-plotly-plot").count() == 0
            for below in (".gpuwork-whatif", ".gpuwork-scaling"):
                page.locator(below).scroll_into_view_if_needed()
                page.wait_for_selector(f"{below} .js-plotly-plot", timeout=60_000)
            scaling = page.evaluate("document.querySelector('.gpuwork-scaling .js-plotly-plot').data[0].x")
            assert scaling[0] == 1 and scaling[-1] == 64
            page.locator(CHART).scroll_into_view_if_needed()

            def chart() -> list:
                return page.evaluate(f"document.querySelector('{CHART}').data.map(t => [t.name, t.y])")

            def totals() -> str:
                return page.inner_text(".gpuwork-totals")

            before_chart, before_totals = chart(), totals()
            # one bar trace per memory term and one marker trace per total (charts.memory_breakdown_figure)
            assert "Device total" in before_totals and len(before_chart) == len(TERM_LABELS) + len(TOTALS)
            timings = {}
            timings["method lora -> full"] = page.evaluate(CHANGE_AND_TIME, [".gpuwork-method select", "full", "select"])
            assert chart() != before_chart
            page.wait_for_function("before => document.querySelector('.gpuwork-totals').innerText !== before",
                                   arg=before_totals, polling=100, timeout=60_000)
            assert "full" in page.inner_text(".gpuwork-summary")
            middle_chart, middle_totals = chart(), totals()
            timings["seq_len 2048 -> 8192"] = page.evaluate(CHANGE_AND_TIME, [".gpuwork-seq-len input", "8192", "text"])
            assert chart() != middle_chart
            page.wait_for_function("before => document.querySelector('.gpuwork-totals').innerText !== before",
                                   arg=middle_totals, polling=100, timeout=60_000)
            assert "8,192" in page.inner_text(".gpuwork-summary")
            assert all(ms > 0 for ms in timings.values()), timings

            # an invalid value: one friendly line, no traceback; then the app keeps working
            seq_len = page.locator(".gpuwork-seq-len input")
            seq_len.fill("0")
            seq_len.press("Enter")
            page.wait_for_selector(".gpuwork-error", timeout=60_000)
            message = page.inner_text(".gpuwork-error")
            assert "Sequence length" in message and "\n" not in message.strip() and "Traceback" not in page.content()
            stale = chart()
            timings["seq_len 0 -> 1024 (recovery)"] = page.evaluate(
                CHANGE_AND_TIME, [".gpuwork-seq-len input", "1024", "text"])
            assert chart() != stale and timings["seq_len 0 -> 1024 (recovery)"] > 0
            page.wait_for_selector(".gpuwork-error", state="detached", timeout=60_000)
            assert "1,024" in page.inner_text(".gpuwork-summary")

            shot = tmp_path / "app.png"
            page.set_viewport_size({"width": 1400, "height": 2900})  # Voila scrolls inside the page: show it all
            page.wait_for_timeout(500)
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
            assert not errors, errors
        finally:
            browser.close()
    with capsys.disabled():
        print(f"\n[voila] first render (page load to first chart): {first_render_s:.1f} s")
        for what, ms in timings.items():
            print(f"[voila] change -> updated chart, {what}: {ms:.0f} ms (goal < 300 ms)")
        print(f"[voila] screenshot: {shot}")


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_voila_serves_the_app(voila_app: SimpleNamespace) -> None:
    with urllib.request.urlopen(voila_app.url, timeout=120) as response:
        status, body = response.status, response.read().decode("utf-8", errors="replace")
    assert status == 200
    assert TITLE in html.unescape(body), "the page lacks the app title"
    assert "Traceback" not in body
    assert "application/vnd.jupyter.widget-view+json" in body  # the app widget was displayed
    assert "from gpuwork.ui.app import" not in body  # sources stripped
    config = json.loads(body.split('<script id="jupyter-config-data" type="application/json">', 1)[1]
                        .split("</script>", 1)[0])
    loaded = [ext["name"] for ext in config.get("federated_extensions", [])]
    # the page loads the widget manager, and nothing it does not use: its charts are drawn with plotly.js's basic
    # bundle (gpuwork.ui.common.PLOTLY_BASIC_URL), not plotly's renderer extension, which holds all of plotly.js
    assert "@jupyter-widgets/jupyterlab-manager" in loaded
    assert not {"jupyterlab-jupytext", "jupyterlab_pygments", "anywidget", "jupyterlab-plotly"} & set(loaded)
    with urllib.request.urlopen(voila_app.url + PLOTLY_BASIC_URL, timeout=60) as response:
        assert response.status == 200 and b"plotly.js (basic - minified)" in response.read(300)
    # that one file is served from beside the notebook, nothing else there: not the notebook, not the license
    for other in ("app.ipynb", "app.py", "static/plotly-basic.LICENSE.txt", "static/../app.ipynb"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(voila_app.url + "voila/files/" + other, timeout=60)
        assert refused.value.code in (403, 404), other


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(300)
def test_browser_uploads_of_a_path_are_content_and_the_app_keeps_working(voila_app: SimpleNamespace,
                                                                          tmp_path: Path) -> None:
    """A real upload through chromium: files whose content is "/dev/zero" or "/etc/passwd" and one above 1 MB
    give one line each (no server path, the kernel stays alive), then a real config.json works."""
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    url = voila_app.url
    files = {"zero.json": b"/dev/zero", "passwd.json": b"/etc/passwd",
             "big.json": b'{"model_type": "llama", "pad": "' + b"x" * 1_100_000 + b'"}'}
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    config, _ = load_config("tiny-llama")
    (tmp_path / "config.json").write_text(json.dumps(config))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url)
                       else route.abort())
            page.goto(url, timeout=120_000)
            page.wait_for_selector(CHART, timeout=120_000)
            page.click(".gpuwork-model-source button:nth-child(2)")  # "Upload"

            def upload(path: Path) -> None:  # as a person does: the button opens the file chooser
                with page.expect_file_chooser(timeout=60_000) as chooser:
                    page.click(".gpuwork-upload")
                chooser.value.set_files(str(path))

            expected = {"zero.json": "zero.json is not valid JSON", "passwd.json": "passwd.json is not valid JSON",
                        "big.json": "big.json is larger than the 1 MB limit for uploads"}
            for name, says in expected.items():
                upload(tmp_path / name)
                page.wait_for_function("says => [...document.querySelectorAll('.gpuwork-error')]"
                                       ".some(e => e.innerText.includes(says))", arg=says, polling=100,
                                       timeout=60_000)
                message = page.inner_text(".gpuwork-message .gpuwork-error")
                assert str(tmp_path) not in message and "/tmp" not in message and "Traceback" not in page.content()
            upload(tmp_path / "config.json")  # the kernel is alive: a real config works
            page.wait_for_selector(".gpuwork-message .gpuwork-error", state="detached", timeout=60_000)
            # the chart is redrawn: between the old plot and the new one there may be none
            page.wait_for_function(f"() => JSON.stringify((document.querySelector('{CHART}')?.data || []).map(t => t.x))"
                                   ".includes('config.json')", polling=100, timeout=60_000)
        finally:
            browser.close()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(400)
def test_a_closed_tab_releases_its_kernel_and_pages_are_bounded(tmp_path: Path) -> None:
    """The app as `gpuwork app --pool 0` serves it, with its page limit at 1 and culling shortened to seconds: a
    second visitor is told to come back (503, no kernel started); closing the first tab releases its kernel (its
    connection is gone, so it is culled), and the next visitor is served. (With a pool, tests/test_cli_app.py
    shows the pool waiting for room instead.)"""
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    load = load_benchmark("app_load")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "voila.log"
    proc = load.start_server(port, 1, log, ("--MappingKernelManager.cull_idle_timeout=8",
                                            "--MappingKernelManager.cull_interval=2"), pool=0)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url)
                           else route.abort())
                page.goto(url, timeout=120_000)
                page.wait_for_selector(CHART, timeout=120_000)
                kernels = psutil.Process(proc.pid).children(recursive=True)
                assert len(kernels) == 1
                time.sleep(12)  # longer than the idle timeout: an open page is never culled
                assert all(k.is_running() for k in kernels) and "Culling '" not in log.read_text()
                with pytest.raises(urllib.error.HTTPError) as refused:
                    urllib.request.urlopen(url, timeout=60)
                assert refused.value.code == 503 and "serves 1 pages, its limit" in refused.value.reason
                assert len(psutil.Process(proc.pid).children(recursive=True)) == 1
                page.close(run_before_unload=True)
                psutil.wait_procs(kernels, timeout=60)
                assert not any(k.is_running() for k in kernels), "the closed tab's kernel still runs"
                assert "Culling 'idle' kernel" in log.read_text()
                page = browser.new_page()
                page.goto(url, timeout=120_000)
                page.wait_for_selector(CHART, timeout=120_000)
            finally:
                browser.close()
    finally:
        load.stop_server(proc)
    assert proc.poll() is not None


def _first_charts(url: str, visitors: int, server_pid: int, log: Path, change: bool = True) -> Any:
    """``visitors`` pages opened at the same moment: their LoadResult (first-chart seconds, the server's part, the
    CPU the server and the browser used)."""
    import asyncio

    load = load_benchmark("app_load")
    result = load.LoadResult(visitors)
    asyncio.run(load._run(url, visitors, 300, server_pid, result, log, change=change))
    assert not result.failures, result.failures
    assert len(result.first_chart_s) == visitors and len(result.widgets_s) == visitors
    assert result.server_cpu_s > 0 and result.browser_cpu_s > 0
    return result


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(900)
def test_browser_a_link_opens_its_plan_and_first_paint_is_measured(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A link with a plan in its query opens that plan (from Voila's preheated kernel pool, as `gpuwork app` serves
    it, and with a kernel per visitor); prints one visitor's first-chart time from the pool. The figures for five
    visitors, a kernel per visitor and this machine's floor (a Voila page with one chart) are
    benchmarks/app_load.py's (--visitors 5, --pool 0, --baseline): a benchmark prints speed, a test checks behaviour."""
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    load = load_benchmark("app_load")

    def open_link(url: str) -> None:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url.split("?")[0])
                           else route.abort())
                page.goto(url, timeout=120_000)
                page.wait_for_selector(CHART, timeout=120_000)
                page.wait_for_function("() => document.querySelector('.gpuwork-summary') && document.querySelector("
                                       "'.gpuwork-summary').innerText.includes('qlora')", polling=100, timeout=60_000)
                summary = page.inner_text(".gpuwork-summary")
                assert "llama-3.1-8b" in summary and "qlora" in summary, summary
                assert page.eval_on_selector(".gpuwork-method select", "e => e.value") == "qlora"
                assert page.eval_on_selector(".gpuwork-model select", "e => e.value") == "llama-3.1-8b"
            finally:
                browser.close()

    # as `gpuwork app` serves it: Voila's preheated pool has run the notebook before the visitors come; the query
    # reaches the pool's kernel when its visitor arrives
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "voila.log"
    proc = load.start_server(port, 40, log)  # returns with the pool ready
    try:
        open_link(url + "?model=llama-3.1-8b&method=qlora")
        load.wait_for_pool(proc, POOL_SIZE + 1)  # the used kernel is replaced (the closed page's stays till culled)
        result = _first_charts(url, 1, proc.pid, log)
    finally:
        load.stop_server(proc)
    # `gpuwork app --pool 0`: a kernel starts per visitor
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    proc = load.start_server(port, 40, tmp_path / "voila-per-visitor.log", pool=0)
    try:
        open_link(url + "?model=llama-3.1-8b&method=qlora")
    finally:
        load.stop_server(proc)
    with capsys.disabled():
        print(f"\n[voila] first chart, preheated pool, 1 visitor: {result.first_chart_s[0]:.1f} s (target 2 s); the "
              f"server's part (widgets asked -> received) {result.widgets_s[0]:.2f} s; CPU: server + kernels "
              f"{result.server_cpu_s:.1f} s, Chromium {result.browser_cpu_s:.1f} s")


def test_the_request_asks_for_the_offers_top_row_and_follows_the_filters() -> None:
    """The Request tab names the offer the Offers tab ranks first (by cost) and the advisor prices on: its card,
    count and vendor; changing the Offers filters changes the request too."""
    app = build_app({"model": "llama-3.1-70b", "method": "full"})
    for tab in ("offers", "request"):
        app.tabs.selected_index = app_view.TABS.index(tab)
    top = app.offers.results[0]
    suggested = app.request.request.fields["suggested"]
    assert (suggested["reference_gpu"], suggested["gpus"]) == (top.offer.gpu_id, top.fit.plan.gpus)
    assert suggested["offer"]["offer_id"] == top.offer.offer_id
    app.tabs.selected_index = app_view.TABS.index("offers")
    app.offers.classes.value = ("server",)
    app.offers.modes.value = ("on-demand",)
    app.offers.max_price.value = 2.0
    top = app.offers.results[0]
    app.tabs.selected_index = app_view.TABS.index("request")
    suggested = app.request.request.fields["suggested"]
    assert suggested["offer"]["offer_id"] == top.offer.offer_id and top.offer.price_per_gpu_hour <= 2.0
    assert suggested["reference_gpu"] == top.offer.gpu_id
