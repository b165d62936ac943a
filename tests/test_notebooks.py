"""The workbook's notebooks: thin, paired with py:percent, committed clean, and they execute headless."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
NAMES = ("01_sizing", "02_trial", "03_offers", "app")
MAX_CODE_CELLS = 10


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_thin_paired_and_clean(name: str) -> None:
    import jupytext

    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert nb.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb.metadata, f"commit {name}.ipynb without widget state"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert 0 < len(code) <= MAX_CODE_CELLS
    for cell in code:
        assert cell.outputs == [] and cell.execution_count is None, f"commit {name}.ipynb without outputs"
        tree = ast.parse(cell.source)
        assert not any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
                       for n in ast.walk(tree)), "notebooks assemble panels; logic lives in gpuwork/"
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, "one cell tagged 'parameters' (papermill)"
    names = {t.id for n in ast.walk(ast.parse(params[0].source)) if isinstance(n, ast.Assign) for t in n.targets}
    assert {"plan", "report"} <= names
    assert "report = False" in params[0].source
    paired = jupytext.read(NOTEBOOKS / f"{name}.py")
    assert [(c.cell_type, c.source) for c in paired.cells] == [(c.cell_type, c.source) for c in nb.cells], (
        f"notebooks/{name}.ipynb is out of sync with {name}.py: run `jupytext --sync notebooks/{name}.py`")


@pytest.fixture(autouse=True)
def one_thread_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels inherit this: one intra-op thread (two OpenMP threads on a shared 2-core box stall each other)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def _execute(name: str, tmp_path: Path, **parameters) -> nbformat.NotebookNode:
    import papermill

    out = tmp_path / f"{name}.ipynb"
    papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(out), parameters=parameters,
                               kernel_name="python3", progress_bar=False, cwd=str(tmp_path),
                               store_widget_state=False)
    nb = nbformat.read(out, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, "\n".join(f"{o.ename}: {o.evalue}" for o in errors)
    stderr = "".join(o.text for o in outputs if o.output_type == "stream" and o.name == "stderr")
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert "widgets" not in nb.metadata  # executed with store_widget_state=False
    return nb


def _mimetypes(nb: nbformat.NotebookNode) -> list[str]:
    return [m for c in nb.cells if c.cell_type == "code" for o in c.outputs for m in o.get("data", {})]


def _html(nb: nbformat.NotebookNode) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_sizing_notebook_executes_with_live_widgets(tmp_path: Path) -> None:
    nb = _execute("01_sizing", tmp_path, plan={"model": "qwen2.5-0.5b", "method": "full", "seq_len": 1024})
    assert _mimetypes(nb).count("application/vnd.jupyter.widget-view+json") >= 5
    assert not list(tmp_path.glob("*/")), "the sizing notebook writes no files"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_trial_notebook_runs_a_tiny_model_on_the_cpu(tmp_path: Path) -> None:
    nb = _execute("02_trial", tmp_path, steps=2, warmup=1, out_dir=str(tmp_path / "trials"), wait=True)
    records = list((tmp_path / "trials").glob("trial-tiny-llama-lora-*.json"))
    assert len(records) == 1
    assert "application/vnd.jupyter.widget-view+json" in _mimetypes(nb)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_offers_notebook_executes(tmp_path: Path) -> None:
    nb = _execute("03_offers", tmp_path, request={"start_date": "2026-12-01", "budget_usd": 300,
                                                   "rent_period_days": 7})
    assert _mimetypes(nb).count("application/vnd.jupyter.widget-view+json") >= 5


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_app_notebook_executes_and_displays_the_app(tmp_path: Path) -> None:
    nb = _execute("app", tmp_path, lang="ru")
    assert "application/vnd.jupyter.widget-view+json" in _mimetypes(nb)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_app_notebook_report_mode_is_static(tmp_path: Path) -> None:
    nb = _execute("app", tmp_path, report=True, plan={"model": "llama-3.2-1b", "method": "qlora"})
    kinds = _mimetypes(nb)
    assert "application/vnd.jupyter.widget-view+json" not in kinds
    assert "application/vnd.plotly.v1+json" in kinds
    assert "Plotly.newPlot" in _html(nb)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_stop_works_after_run_all_in_the_trial_notebook(tmp_path: Path) -> None:
    """Run All returns while the trial runs in the background, so a real click on Stop (the widget's comm
    message, as JupyterLab sends it) reaches the kernel and stops the trial between steps."""
    import time

    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOKS / "02_trial.ipynb", as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(f"steps = 2000\nout_dir = {str(tmp_path / 'trials')!r}"))
    client = NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(tmp_path)}})

    def run(code: str) -> str:
        nb.cells.append(nbformat.v4.new_code_cell(code))
        cell = client.execute_cell(nb.cells[-1], len(nb.cells) - 1)
        return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")

    def poll(code: str, until: str) -> str:
        for _ in range(600):  # up to about a minute
            out = run(code)
            if until in out:
                return out
            time.sleep(0.1)
        raise AssertionError(f"{code!r} never printed {until!r}; last: {out!r}")

    with client.setup_kernel():
        for index, cell in enumerate(list(nb.cells)):  # Run All
            client.execute_cell(cell, index)
        # every cell has run; the kernel answers while the trial is still going
        poll("print('steps', len(trial.steps_seen) >= 3)", "steps True")
        button = run("print(trial.stop_button.model_id, trial.stop_button.disabled)").split()
        assert button[1] == "False", "Stop is enabled while the trial runs"
        kc = client.kc
        kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": button[0], "data": {
            "method": "custom", "content": {"event": "click"}}}))
        poll("print('ended', trial.stop_button.disabled)", "ended True")
        state = run("print(trial.stopped, trial.record is None, len(trial.steps_seen))").split()
    assert state[:2] == ["True", "True"] and int(state[2]) < 2001


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_trial_notebook_shows_a_loaded_record_beside_its_estimate(tmp_path: Path) -> None:
    """``record=`` shows a record written earlier (here a CPU trial recast as measured on an H100, as
    tests/test_calibration.py does) instead of running one, with the estimate for exactly its configuration."""
    import torch
    from test_calibration import as_gpu

    from gpuwork.measure.trial import run_trial
    from gpuwork.plan import TrainPlan

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        cpu = run_trial(TrainPlan(model="tiny-llama", method="lora", precision="fp32", seq_len=32, batch_size=2),
                        steps=1, warmup=0)
    finally:
        torch.set_num_threads(before)
    path = tmp_path / "gpu-record.json"
    as_gpu(cpu, median_s=0.5, allocated=3 * 2**30, reserved=4 * 2**30).to_json(path)
    nb = _execute("02_trial", tmp_path, record=str(path), report=True, out_dir=str(tmp_path / "trials"))
    page = _html(nb)
    assert "The estimate for exactly this configuration (stack hf-trainer, GPU h100_sxm)" in page
    assert "3.00 GiB</td>" in page and "4.00 GiB</td>" in page and "0.500 s</td>" in page
    assert "Whole run on 1 × H100 SXM" in page
    assert not (tmp_path / "trials").exists(), "a loaded record runs no trial"
