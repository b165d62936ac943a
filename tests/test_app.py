"""The Voila app: wiring without a browser, then a real Voila server driven by chromium.

Only 127.0.0.1 is contacted. The Voila tests start their own server on a free port and always stop it
(and the kernels it started) by PID. The browser test prints the app's first-render time and the time
from a widget change to the updated chart.
"""

from __future__ import annotations

import html
import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import ipywidgets as widgets
import nbformat
import psutil
import pytest
from conftest import free_port, stop_server

from gpuwork.plan import TrainPlan
from gpuwork.ui import app as app_view
from gpuwork.ui.app import GIB, TITLE, App, StaticApp, build_app

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "app.ipynb"


# -- (a) the app's wiring, no browser ---------------------------------------------------------------------


def test_app_has_the_tabs_and_starts_from_the_default_plan() -> None:
    app = build_app()
    assert isinstance(app, App) and isinstance(app, widgets.Widget)
    assert app.tabs.titles == ("Sizing", "Offers", "Request", "Demo trial")
    assert app.sizing.plan == TrainPlan() and app.sizing.error is None
    assert f"{app.sizing.memory.device_total_bytes / GIB:,.2f}" in app.sizing.totals.value
    assert app.trial is not None and app.trial.demo and app.trial.device == "cpu"
    assert app.offers.request is None  # the request has its own tab


def test_the_plan_flows_to_offers_and_request_when_their_tab_is_shown() -> None:
    app = build_app({"model": "llama-3.1-8b", "method": "qlora"})
    assert app.offers.results == [] and app.request.request is None  # not evaluated while hidden
    app.tabs.selected_index = 1
    assert app.offers.results and app.offers.plan == app.sizing.plan
    app.tabs.selected_index = 2
    assert app.request.text.value.startswith("Fine-tuning, QLoRA")
    app.sizing.controls["method"].value = "lora"  # the visible request follows at once
    assert app.request.text.value.startswith("Fine-tuning, LoRA")
    assert app.offers.plan.method.value == "lora" and app.offers._stale
    app.tabs.selected_index = 1
    assert not app.offers._stale and all(r.fit.plan.method.value == "lora" for r in app.offers.results if r.fits)


def test_invalid_input_keeps_the_last_valid_plan_elsewhere() -> None:
    app = build_app()
    app.tabs.selected_index = 2
    before = app.request.text.value
    app.sizing.controls["seq_len"].value = -5
    assert "seq_len" in app.sizing.error and "gpuwork-error" in app.sizing.message.value
    assert app.request.text.value == before
    app.sizing.controls["seq_len"].value = 4096
    assert app.sizing.error is None and app.request.plan.seq_len == 4096


def test_language_switch_relabels_every_tab_and_the_request() -> None:
    app = build_app()
    app.tabs.selected_index = 2
    app.lang_toggle.value = "ru"
    assert app.tabs.titles == ("Расчёт", "Предложения", "Заявка", "Пробный запуск")
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


def test_report_mode_builds_a_static_app(monkeypatch: pytest.MonkeyPatch) -> None:
    import plotly.graph_objects as go

    from gpuwork.ui import common

    shown: list = []
    monkeypatch.setattr(common, "display", lambda *objs: shown.extend(objs))
    static = build_app({"model": "llama-3.2-1b"}, report=True)
    assert isinstance(static, StaticApp)
    static._ipython_display_()
    assert sum(isinstance(o, go.Figure) for o in shown) == 4  # breakdown, 2 what-if, offers
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
  const gd = document.querySelector('.gpuwork-breakdown .js-plotly-plot');
  const snap = () => JSON.stringify(gd.data.map(t => t.y));
  const before = snap();
  const el = document.querySelector(selector);
  const t0 = performance.now();
  el.value = value;
  if (kind === 'text') { el.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); }
  el.dispatchEvent(new Event('change', {bubbles: true}));
  while (snap() === before) {
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
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            # Only the local server: anything else (CDNs) is refused, never fetched.
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url)
                       else route.abort())
            started = time.monotonic()
            page.goto(url, timeout=120_000)
            page.wait_for_selector(CHART, timeout=120_000)
            first_render_s = time.monotonic() - started
            page.wait_for_selector(".gpuwork-whatif .js-plotly-plot", timeout=60_000)

            def chart() -> list:
                return page.evaluate(f"document.querySelector('{CHART}').data.map(t => [t.name, t.y])")

            def totals() -> str:
                return page.inner_text(".gpuwork-totals")

            before_chart, before_totals = chart(), totals()
            assert "Device total" in before_totals and len(before_chart) == 15
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
            assert "seq_len" in message and "\n" not in message.strip() and "Traceback" not in page.content()
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
    assert "jupyterlab-jupytext" not in loaded
