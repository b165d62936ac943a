"""`gpuwork report`: notebooks executed by papermill in report mode, exported to offline HTML in one folder."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import nbformat
import pytest

from gpuwork.cli import main as cli_main
from gpuwork.cli import report as cli_report
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
from gpuwork.ui import report

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
PLAN = {"model": "llama-3.1-8b", "method": "lora", "seq_len": 2048, "batch_size": 2}
GPU_NAME_H100 = "H100 SXM"


def _visible_text(page: str) -> str:
    """What a reader sees: the page without scripts (plotly.js), styles and tags."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S | re.I)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def _repo_files() -> set[str]:
    return {str(p) for p in (ROOT / "notebooks").rglob("*")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    # the notebooks' kernels inherit one intra-op thread (two OpenMP threads on a shared 2-core box stall)
    mp = pytest.MonkeyPatch()
    mp.setenv("OMP_NUM_THREADS", "1")
    before = _repo_files()
    out = tmp_path_factory.mktemp("report") / "out"
    lines: list[str] = []
    try:
        result = report.build_report(PLAN, out, steps=2, progress=False, log=lines.append, cuda=False)
    finally:
        mp.undo()
    return result, lines, before


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_report_writes_html_only_into_its_folder(built) -> None:
    result, lines, before = built
    out = result.out_dir
    assert [p.name for p in result.html] == ["01_sizing.html", "02_trial.html", "03_offers.html"]
    names = {p.name for p in out.iterdir()}
    assert names == {"01_sizing.html", "02_trial.html", "03_offers.html", "01_sizing.ipynb", "02_trial.ipynb",
                     "03_offers.ipynb", "index.html", "trials", report.PLOTLY_FILE}
    assert _repo_files() == before, "the report wrote into the repository"
    assert [line.split()[-1] for line in lines] == list(report.NOTEBOOKS)  # one progress line per notebook
    index = result.index.read_text()
    assert all(f'href="{p.name}"' in index for p in result.html)
    records = list((out / "trials").glob("trial-tiny-llama-lora-*.json"))  # the CPU stand-in for llama-3.1-8b
    assert len(records) == 1
    executed = nbformat.read(out / "02_trial.ipynb", as_version=4)
    assert "widgets" not in executed.metadata


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_report_loads_plotly_once_from_its_folder_and_needs_no_network(built) -> None:
    result, _lines, _before = built
    library = result.out_dir / report.PLOTLY_FILE
    assert re.search(r"plotly\.js v\d+\.\d+", library.read_text(encoding="utf-8")[:400])
    # one copy of plotly.js in the folder, not one per page (and none in the executed notebooks)
    sizes = {p.name: p.stat().st_size for p in result.out_dir.iterdir() if p.is_file()}
    print(f"report folder: {sum(sizes.values()) / 1e6:.1f} MB, plotly.min.js {sizes[report.PLOTLY_FILE] / 1e6:.1f} MB")
    assert all(size < 1_000_000 for name, size in sizes.items() if name != report.PLOTLY_FILE), sizes
    for page in result.html:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"plotly\.js v\d+\.\d+", text), f"{page.name} embeds its own plotly.js"
        assert text.count(f'<script src="{report.PLOTLY_FILE}"></script>') == 1, page.name
        assert "cdn.plot.ly" not in "".join(re.findall(r"<script[^>]*>", text))
        assert not re.search(r"<script\b[^>]*\bsrc=[\"']?(https?:)?//", text), f"{page.name} loads a script"
        assert "Plotly.newPlot(" in text
        assert "from gpuwork" not in text  # code cells are hidden
    sizing = result.html[0].read_text(encoding="utf-8")
    assert '"name":"optimizer states"' in sizing and "Device total" in sizing and "runs out" in sizing
    trial = result.html[1].read_text(encoding="utf-8")
    assert "stand-in for llama-3.1-8b" in trial and "Checkpoint round-trip: verified" in trial
    # a static page asks no one to press a button: the report's prose and the panel's status say what ran
    shown = _visible_text(trial)
    assert "Run trial" not in shown and "Press" not in shown and "Trial plan: tiny-llama" in shown
    for page in result.html:  # no page asks for a click, and none shows library noise
        shown = _visible_text(page.read_text(encoding="utf-8"))
        for phrase in ("Press", "Run trial", "Ctrl", "gemm_4bit", "pip install kernels", "FutureWarning"):
            assert phrase not in shown, (page.name, phrase)
    offers = result.html[2].read_text(encoding="utf-8")
    assert '"name":"interruptible"' in offers and "Fine-tuning, LoRA adapters" in offers
    assert "tiny-llama lora" in offers  # the trial's record compared on the offers page


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(300)
def test_report_opens_offline_in_a_browser(built) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    result, _lines, _before = built
    requested: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))

            def only_files(route):
                requested.append(route.request.url)
                return route.continue_() if route.request.url.startswith("file:") else route.abort()

            page.route("**/*", only_files)
            expected = {"01_sizing.html": 3, "02_trial.html": 2, "03_offers.html": 1}
            for html_page in result.html:
                page.goto(html_page.as_uri())
                page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length >= "
                                       f"{expected[html_page.name]}", timeout=60_000, polling=200)
                traces = page.evaluate("Array.from(document.querySelectorAll('.js-plotly-plot'))"
                                       ".map(d => d.data.length)")
                assert all(n > 0 for n in traces), (html_page.name, traces)
            assert not errors, errors
        finally:
            browser.close()
    assert all(u.startswith("file:") for u in requested), [u for u in requested if not u.startswith("file:")]


def test_trial_plan_on_cpu_is_a_tiny_stand_in() -> None:
    plan, note = report.trial_plan(TrainPlan(model="llama-3.1-8b", method="qlora", seq_len=4096, batch_size=8),
                                   cuda=False)
    assert (plan.model, plan.method.value, plan.precision.value, plan.seq_len, plan.batch_size) == (
        "tiny-llama", "qlora", "fp32", 128, 4)
    assert note.code == "report.cpu_stand_in" and (note["tiny"], note["model"]) == ("tiny-llama", "llama-3.1-8b")
    assert "stand-in for llama-3.1-8b" in render(note) and "вместо llama-3.1-8b" in render(note, "ru")
    gpt2, _ = report.trial_plan(TrainPlan(model="gpt2", lora_targets=("c_attn",)), cuda=False)
    assert gpt2.model == "tiny-gpt2" and gpt2.lora_targets == ("c_attn",)
    same, none = report.trial_plan(TrainPlan(model="llama-3.1-8b"), cuda=True)
    assert same.model == "llama-3.1-8b" and none is None
    # cuDNN's attention and the memory-efficient kernel are CUDA-only: the CPU stand-in runs torch's CPU order
    cudnn = TrainPlan(model="llama-3.1-8b", attention="sdpa", sdpa_backend="cudnn")
    assert report.trial_plan(cudnn, cuda=False)[0].sdpa_backend.value == "flash"
    assert report.trial_plan(cudnn, cuda=True)[0].sdpa_backend.value == "cudnn"
    auto = TrainPlan(model="llama-3.1-8b", attention="sdpa", sdpa_backend="auto")
    assert report.trial_plan(auto, cuda=False)[0].sdpa_backend.value == "auto"


def test_parameters_per_notebook(tmp_path: Path) -> None:
    plan = TrainPlan.from_dict(PLAN)
    assert report.parameters_for("01_sizing", plan, tmp_path) == {"plan": plan.as_dict(), "lang": "en",
                                                                  "report": True}
    trial = report.parameters_for("02_trial", plan, tmp_path, steps=3, cuda=False)
    assert trial["out_dir"] == str(tmp_path / "trials") and trial["steps"] == 3 and trial["report"] is True
    assert json.dumps(trial)  # papermill parameters must be JSON
    russian = report.parameters_for("02_trial", plan, tmp_path, steps=3, cuda=False, lang="ru")
    assert russian["lang"] == "ru" and russian["note"].startswith("здесь нет GPU с CUDA: вместо llama-3.1-8b")
    assert report.parameters_for("03_offers", plan, tmp_path, records=["a.json"])["records"] == ["a.json"]


def test_every_markdown_cell_of_the_notebooks_has_the_reports_text_in_both_languages() -> None:
    """The report replaces the notebooks' prose (written for interactive use) with the catalog's, cell by cell."""
    for name in report.NOTEBOOKS:
        nb = nbformat.read(report.notebooks_dir() / f"{name}.ipynb", as_version=4)
        cells = [c.source for c in nb.cells if c.cell_type == "markdown"]
        english, russian = report.report_prose(name, "en"), report.report_prose(name, "ru")
        assert len(english) == len(russian) == len(cells), name
        # the same heading level in each language, and the heading of the notebook's own cell
        for own, en, ru in zip(cells, english, russian, strict=True):
            assert en.split(" ", 1)[0] == ru.split(" ", 1)[0] == own.split(" ", 1)[0], (name, en)
            assert en.splitlines()[0] == own.splitlines()[0], (name, en)
        assert not any("Run trial" in text or "Press" in text for text in english)


def test_the_index_page_speaks_the_reports_language(tmp_path: Path) -> None:
    plan = TrainPlan.from_dict(PLAN)
    pages = [tmp_path / "01_sizing.html", tmp_path / "02_trial.html"]
    ru = report._index_html(plan, pages, "ru")
    assert "<html lang='ru'>" in ru and "Отчёт gpuwork" in ru and "Пробный запуск: замеренные шаги" in ru
    assert "контекст 2 048 × батч 2" in ru
    en = report._index_html(plan, pages, "en")
    assert "gpuwork report" in en and "Sizing: memory, profile, time, disk" in en and "seq 2,048" in en


def test_failing_cell_is_one_line_naming_the_notebook(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("plan = {}\nreport = False")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("raise ValueError('boom\\nsecond line')")]
    nbformat.write(nb, source / "01_sizing.ipynb")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(report.ReportError) as info:
        report.execute("01_sizing", {"plan": {}, "report": True}, out, progress=False, source=source)
    message = str(info.value)
    assert message.startswith("01_sizing: cell") and "ValueError: boom second line" in message
    assert "\n" not in message
    with pytest.raises(report.ReportError, match="missing"):
        report.execute("02_trial", {}, out, progress=False, source=source)


def test_cli_report_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text('{"modle": "gpt2"}')
    assert cli_main(["report", "--plan", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuwork: error:") and "modle" in err and "model" in err and err.count("\n") == 1
    assert cli_main(["report", "--plan", str(tmp_path / "missing.json"), "--out", str(tmp_path)]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["report", "--out", str(tmp_path), "--notebooks", "99_nope"])
    assert exit_info.value.code == 2
    assert "01_sizing" in capsys.readouterr().err


def test_register_adds_the_subcommand() -> None:
    parser = argparse.ArgumentParser()
    cli_report.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", "--out", "x", "--notebooks", "01_sizing,03_offers.ipynb", "--steps", "3"])
    assert args.notebooks == ("01_sizing", "03_offers") and args.steps == 3
    assert args.func.__wrapped__ is cli_report._cmd_report  # run with its terminal output escaped


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cli_report_one_notebook(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan": {"model": "qwen2.5-0.5b", "method": "full"}}))  # `estimate --json` shape
    out = tmp_path / "out"
    assert cli_main(["report", "--plan", str(plan), "--out", str(out), "--notebooks", "01_sizing",
                            "--no-progress"]) == 0
    printed = capsys.readouterr()
    assert printed.out.strip() == str(out.resolve() / "01_sizing.html")
    assert "qwen2.5-0.5b" in (out / "01_sizing.html").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_cli_report_in_russian(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert cli_main(["report", "--out", str(out), "--notebooks", "01_sizing", "--no-progress", "--lang", "ru"]) == 0
    assert "gpuwork, отчёт: 1 страница в" in capsys.readouterr().err
    page = _visible_text((out / "01_sizing.html").read_text(encoding="utf-8"))
    for heading in ("01 · Расчёт: поместится ли запуск", "Память на один GPU", "Что если", "Профиль, время и диск",
                    "Точная проверка", "Профиль аренды", "Пик выделенной"):
        assert heading in page, heading
    for english in ("Memory per GPU", "What if", "Exact check", "Peak allocated", "Rental profile"):
        assert english not in page, english
    assert "Отчёт gpuwork" in (out / "index.html").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_page_opens_with_the_answer(built) -> None:
    result, _lines, _before = built
    for page in [*result.html, result.index]:
        shown = _visible_text(page.read_text(encoding="utf-8"))
        assert "The answer" in shown and "Recommended offer:" in shown and "Risks:" in shown, page.name
    sizing = _visible_text(result.html[0].read_text(encoding="utf-8"))
    assert sizing.index("The answer") < sizing.index("The plan") < sizing.index("Memory per GPU")


def test_the_answer_names_cards_offer_ranges_and_risks() -> None:
    from gpuwork.sizing import evaluate_offers

    plan = TrainPlan.from_dict(PLAN)
    ranked = [r for r in evaluate_offers(plan, sort="cost") if r.fits]
    shown = _visible_text(report.answer_html(plan))
    # the recommended offer is the one answer's (issue 20), which the CLI, the app and the request name too
    from gpuwork.sizing import decide

    best = decide(plan).offer
    assert "Answer: " in shown.split("Recommended")[0]
    assert f"Recommended offer: {best.offer.offer_id} ({best.offer.provider})" in shown
    assert f"1 × {GPU_NAME_H100} (80 GB)" in shown  # an 8B LoRA at 2 × 2048 tokens fits one 80 GB card
    assert "GeForce RTX 4090" not in shown.split("Recommended")[0]  # ...but not a 24 GB one
    top = ranked[:report.ANSWER_OFFERS]
    low = min(r.expected_cost_usd for r in top)
    high = max(r.expected_cost_usd for r in top)
    assert f"${low:,.2f} to ${high:,.2f}" in shown
    assert "estimates until a trial on the rented GPU" in shown
    none = _visible_text(report.answer_html(TrainPlan(model="llama-3.1-70b", method="full", seq_len=8192), "ru"))
    assert "Не помещается ни на одну карту каталога" in none and "Рекомендуемое" not in none


def test_share_plotly_replaces_the_inline_bundle_once() -> None:
    nb = nbformat.v4.new_notebook()
    bundle = nbformat.v4.new_code_cell("x")
    bundle.outputs = [nbformat.v4.new_output("display_data", data={"text/html": (
        "<script>window.PlotlyConfig = {};</script>\n<script>/**\n* plotly.js v4.1.1\n* Copyright\n*/\n"
        "var Plotly = 1;</script>\n")})]
    figure = nbformat.v4.new_code_cell("y")
    figure.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<div>Plotly.newPlot(...)</div>"})]
    nb.cells = [bundle, figure]
    assert report.share_plotly(nb) == 1
    assert bundle.outputs[0].data["text/html"] == (
        '<script>window.PlotlyConfig = {};</script>\n<script src="plotly.min.js"></script>\n')
    assert figure.outputs[0].data["text/html"] == "<div>Plotly.newPlot(...)</div>"


def test_report_help_explains_the_plan_file_and_the_language(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main(["report", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "The plan file (--plan) is JSON with TrainPlan fields" in shown
    assert "--lang chooses the language of the pages" in shown and "Download plan" in shown
    with pytest.raises(SystemExit):
        cli_main(["report", "--lang", "ru", "--help"])
    assert "Файл плана (--plan) — JSON с полями TrainPlan" in " ".join(capsys.readouterr().out.split())
