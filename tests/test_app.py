"""The Voila app: widget logic without a browser, the notebook headless, and a real Voila server.

Only 127.0.0.1 is contacted. The Voila test starts its own server on a free port and always stops it
(and the kernels it started) by PID.
"""

from __future__ import annotations

import html
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import ipywidgets as widgets
import nbformat
import psutil
import pytest

from gpuwork import app_view
from gpuwork.app_view import GIB, TITLE, build_app
from gpuwork.plan import TrainPlan

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "app.ipynb"
NOTEBOOK_PY = ROOT / "notebooks" / "app.py"


# -- (a) widget logic, no browser --------------------------------------------------------------------


def _gib_text(n_bytes: int) -> str:
    return f"{n_bytes / GIB:,.2f}"


def test_app_starts_from_the_default_plan() -> None:
    panel = build_app()
    assert isinstance(panel, widgets.Widget)
    assert panel.plan == TrainPlan()
    assert panel.error is None
    shown = panel.result.value
    for label in ("Peak allocated", "Peak reserved", "Device total", "nvidia-smi", "max_memory_allocated"):
        assert label in shown
    for term, n_bytes in panel.estimate.breakdown.items():
        assert (app_view._label(term) in shown) == (n_bytes > 0), term
    assert _gib_text(panel.estimate.device_total_bytes) in shown
    assert set(panel.controls) == set(app_view.FORM_FIELDS)
    assert "llama-3.2-1b" in panel.controls["model"].options


def test_changing_controls_updates_the_totals() -> None:
    panel = build_app()
    first = panel.estimate
    first_html = panel.result.value

    panel.controls["seq_len"].value = 8192
    assert panel.plan.seq_len == 8192
    longer = panel.estimate
    assert longer.peak_allocated_bytes > first.peak_allocated_bytes
    assert panel.result.value != first_html
    assert _gib_text(longer.peak_allocated_bytes) in panel.result.value

    panel.controls["method"].value = "full"
    assert panel.plan.method.value == "full"
    assert panel.estimate.peak_allocated_bytes > longer.peak_allocated_bytes
    assert _gib_text(panel.estimate.device_total_bytes) in panel.result.value

    panel.controls["batch_size"].value = 2
    panel.controls["precision"].value = "fp32"
    panel.controls["model"].value = "qwen2.5-0.5b"
    assert panel.plan.model == "qwen2.5-0.5b" and panel.error is None


def test_invalid_input_shows_one_red_line_and_recovers() -> None:
    panel = build_app()
    panel.controls["seq_len"].value = 0  # must not raise
    assert panel.plan is None and panel.estimate is None
    assert panel.error and "seq_len" in panel.error and "\n" not in panel.error
    assert 'class="gpuwork-error"' in panel.result.value and "color:" in panel.result.value
    assert "Traceback" not in panel.result.value
    assert "Peak allocated" not in panel.result.value

    panel.controls["batch_size"].value = -3
    assert "batch_size" in panel.error or "seq_len" in panel.error

    panel.controls["seq_len"].value = 1024
    panel.controls["batch_size"].value = 1
    assert panel.error is None and panel.plan.seq_len == 1024
    assert "Peak allocated" in panel.result.value


def test_lora_targets_follow_the_architecture() -> None:
    panel = build_app()
    panel.controls["model"].value = "gpt2"  # no q_proj in GPT-2: the message lists its modules
    assert panel.estimate is None and "c_attn" in panel.error and "all-linear" in panel.error
    panel.controls["lora_targets"].value = "all-linear"
    assert panel.error is None and panel.plan.lora_targets == ("all-linear",)
    panel.controls["lora_targets"].value = "c_attn"
    assert panel.error is None and panel.plan.lora_targets == ("c_attn",)


def test_unknown_model_is_a_friendly_message() -> None:
    panel = build_app(TrainPlan(model="no-such-model-xyz"))
    assert panel.estimate is None
    assert "no-such-model-xyz" in panel.error
    assert 'class="gpuwork-error"' in panel.result.value


def test_a_bug_never_shows_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(plan: TrainPlan) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(app_view, "estimate_memory", broken)
    panel = build_app()
    assert "unexpected error" in panel.error and "boom" in panel.error
    assert "Traceback" not in panel.result.value


def test_error_html_escapes_and_joins_lines() -> None:
    out = app_view.error_html("bad <value>\n  use 1")
    assert "&lt;value&gt;" in out and "bad &lt;value&gt; use 1" in out


# -- (b) the notebook: thin, paired, committed without outputs, runs headless -------------------------


def test_notebook_is_paired_and_clean() -> None:
    import jupytext

    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "commit app.ipynb without outputs"
            assert "def " not in cell.source, "keep logic in gpuwork/app_view.py, not the notebook"
    assert "widgets" not in nb.metadata, "commit app.ipynb without widget state"
    paired = jupytext.read(NOTEBOOK_PY)
    assert [(c.cell_type, c.source) for c in paired.cells] == [(c.cell_type, c.source) for c in nb.cells], (
        "notebooks/app.ipynb is out of sync with app.py: run `jupytext --sync notebooks/app.py`")
    assert TITLE in nb.cells[0].source


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_notebook_executes_headless() -> None:
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=180,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, "\n".join(f"{o.ename}: {o.evalue}" for o in errors)
    stderr = "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stderr")
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs), (
        "the last cell must display the app widget")


# -- (c) Voila serves the page ---------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stop(proc: subprocess.Popen) -> None:
    """Stop Voila (its process group) and any kernel it started, all by PID."""
    try:
        started = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        started = []
    if proc.poll() is None:
        # Voila's clean stop (it shuts its kernels down); SIGKILL if SIGINT is ignored or too slow.
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    for child in started:
        try:
            child.wait(timeout=5)
        except psutil.TimeoutExpired:
            child.kill()
        except psutil.NoSuchProcess:
            pass


@pytest.fixture(scope="module")
def voila_app(tmp_path_factory: pytest.TempPathFactory):
    """A Voila server for notebooks/app.ipynb on a free 127.0.0.1 port: yields (url, first page HTML).

    Started from the repository root so that it reads the project's voila.json; always stopped.
    """
    voila = Path(sys.executable).with_name("voila")
    assert voila.exists(), f"voila is not installed next to {sys.executable}: run `make venv`"
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    log_path = tmp_path_factory.mktemp("voila") / "voila.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(voila), "notebooks/app.ipynb", f"--port={port}", "--Voila.port_retries=0", "--no-browser"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    try:
        body, status = "", None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"voila exited with {proc.returncode}:\n{log_path.read_text(errors='replace')}")
            try:
                with urllib.request.urlopen(url, timeout=max(1.0, deadline - time.monotonic())) as response:
                    status, body = response.status, response.read().decode("utf-8", errors="replace")
                if status == 200:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        assert status == 200, f"no 200 from {url} within 90 s:\n{log_path.read_text(errors='replace')}"
        yield url, body
    finally:
        _stop(proc)
        assert proc.poll() is not None, f"voila (pid {proc.pid}) is still running"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_voila_serves_the_app(voila_app: tuple[str, str]) -> None:
    _url, body = voila_app
    assert TITLE in html.unescape(body), "the page lacks the app title"
    assert "Traceback" not in body
    assert "application/vnd.jupyter.widget-view+json" in body  # the app widget was displayed
    assert "from gpuwork.app_view import" not in body  # sources stripped
    config = json.loads(body.split('<script id="jupyter-config-data" type="application/json">', 1)[1]
                        .split("</script>", 1)[0])
    loaded = [ext["name"] for ext in config.get("federated_extensions", [])]
    assert "jupyterlab-jupytext" not in loaded


CHROMIUM = Path("/usr/bin/chromium")
# Headless Debian chromium in a container, often as root: no sandbox, no /dev/shm, no GPU.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(240)
def test_browser_form_updates_the_table(voila_app: tuple[str, str]) -> None:
    """The real wiring: Voila page in chromium, type a sequence length, the totals re-render."""
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    url, _body = voila_app
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            # Only the local server: anything else (CDNs) is refused, never fetched.
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url)
                       else route.abort())
            page.goto(url, timeout=90_000)
            page.wait_for_selector(".gpuwork-totals", timeout=90_000)
            before = page.inner_text(".gpuwork-totals")
            assert "Device total" in before

            seq_len = page.locator(".gpuwork-seq-len input")
            seq_len.fill("8192")
            seq_len.press("Enter")
            page.wait_for_function(
                "before => { const t = document.querySelector('.gpuwork-totals');"
                " return t !== null && t.innerText !== before; }",
                arg=before, polling=100, timeout=60_000)

            seq_len.fill("0")
            seq_len.press("Enter")
            page.wait_for_selector(".gpuwork-error", timeout=60_000)
            assert "seq_len" in page.inner_text(".gpuwork-error")
        finally:
            browser.close()
