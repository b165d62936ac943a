"""Reports: the workbook's notebooks executed for one plan and exported as self-contained HTML.

``build_report(plan, out_dir, lang=...)`` runs ``notebooks/01_sizing``, ``02_trial`` and ``03_offers`` with
papermill (parameters: the plan as a dict, ``report=True`` and ``lang``; kernel ``python3``), then exports each
executed notebook with nbconvert into one HTML file that opens offline: the notebooks' report mode
embeds plotly.js in the output (``plotly_mimetype+notebook``), the template drops require.js, MathJax
and mermaid from the page head, and any remaining external ``<script src=...>`` (plotly adds a MathJax
CDN tag per figure; no label here uses LaTeX) is removed. Code cells are hidden, and the notebooks' prose
(written for interactive use: "press Run trial") is replaced by the catalog's text for a static page in the
report's language (entries ``report.md.<notebook>.<n>``, one per markdown cell in order).

Everything is written into ``out_dir``: ``<name>.ipynb`` (executed), ``<name>.html``, ``trials/`` (the
trial's record and checkpoint) and ``index.html``.

Example:
    >>> result = build_report(TrainPlan(model="llama-3.1-8b", method="lora"), "reports/llama-lora")
    >>> [p.name for p in result.html]
    ['01_sizing.html', '02_trial.html', '03_offers.html']

Limitations: without CUDA the trial notebook runs a tiny model of the same family on the CPU (it proves
the pipeline, not the speed); each notebook starts its own kernel (a few seconds each).
"""

from __future__ import annotations

import html
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.errors import GpuworkError, ModelError
from gpuwork.facts.paths import notebooks_dir
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import CATALOG, LANGS, render, text

NOTEBOOKS = ("01_sizing", "02_trial", "03_offers")
KERNEL = "python3"
TRIAL_STEPS = 5
TRIAL_WARMUP = 1
# The CPU stand-in for a trial when no GPU is present: a tiny model of the plan's family (same module
# names, so LoRA targets still match), fp32 (bf16 is 35-40x slower on CPUs), a short batch.
TINY_BY_MODEL_TYPE = {"llama": "tiny-llama", "gpt2": "tiny-gpt2", "bert": "tiny-bert", "gemma2": "tiny-gemma2",
                      "mistral": "tiny-mistral", "mixtral": "tiny-mixtral", "qwen2": "tiny-qwen2"}
CPU_TRIAL_MAX = {"seq_len": 128, "batch_size": 4, "grad_accum": 1}

# nbconvert's lab template without the page-head scripts that come from CDNs.
_TEMPLATE_NAME = "gpuwork_offline.html.j2"
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
"""
_EXTERNAL_SCRIPT = re.compile(r"<script\b[^>]*\bsrc=[\"']?(?:https?:)?//[^>]*>\s*</script>", re.IGNORECASE)


class ReportError(GpuworkError):
    """A notebook of the report could not be executed or exported (the message names it and the cell's error)."""


@dataclass(frozen=True)
class ReportResult:
    """What ``build_report`` wrote."""

    out_dir: Path
    html: tuple[Path, ...]
    notebooks: tuple[Path, ...]
    index: Path
    elapsed_s: float




def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def trial_plan(plan: TrainPlan, *, cuda: bool | None = None) -> tuple[TrainPlan, Msg | None]:
    """The plan the report's trial runs, and a note (``report.cpu_stand_in``) when it is a CPU stand-in for ``plan``."""
    if cuda is None:
        cuda = _cuda_available()
    if cuda or plan.model.startswith("tiny-"):
        return plan, None
    from gpuwork.facts.model import load_config

    try:
        config, _ = load_config(plan.model)
        model_type = str(config.get("model_type"))
    except ModelError:
        model_type = ""
    tiny = TINY_BY_MODEL_TYPE.get(model_type, "tiny-llama")
    changes: dict[str, Any] = {"model": tiny, "precision": "fp32", "gpus": 1, "sharding": "ddp",
                               "offload_optimizer": False, "offload_params": False}
    for name, limit in CPU_TRIAL_MAX.items():
        changes[name] = min(getattr(plan, name), limit)
    if model_type not in TINY_BY_MODEL_TYPE:
        changes["lora_targets"] = ("q_proj", "v_proj")
    stand_in = plan.replace(**changes)
    return stand_in, msg("report.cpu_stand_in", tiny=tiny, method=plan.method, model=plan.model)


def parameters_for(name: str, plan: TrainPlan, out_dir: Path, *, steps: int = TRIAL_STEPS,
                   cuda: bool | None = None, records: Sequence[str] = (), lang: str = "en") -> dict[str, Any]:
    """papermill parameters for one notebook of the report (every notebook has a ``lang`` parameter)."""
    params: dict[str, Any] = {"plan": plan.as_dict(), "lang": lang, "report": True}
    if name == "02_trial":
        run_plan, note = trial_plan(plan, cuda=cuda)
        params.update(plan=run_plan.as_dict(), steps=steps, warmup=TRIAL_WARMUP, out_dir=str(out_dir / "trials"))
        if note:
            params["note"] = render(note, lang)
    elif name == "03_offers":
        params["records"] = list(records)
    return params


def _exporter() -> Any:
    import jinja2
    from nbconvert import HTMLExporter

    return HTMLExporter(template_name="lab", template_file=_TEMPLATE_NAME,
                        extra_loaders=[jinja2.DictLoader({_TEMPLATE_NAME: _TEMPLATE})],
                        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)


def report_prose(name: str, lang: str = "en") -> list[str]:
    """The report's text for the markdown cells of notebook ``name``, in order (catalog ``report.md.<name>.<n>``)."""
    out = []
    while (code := f"report.md.{name}.{len(out)}") in CATALOG:
        out.append(text(code, lang))
    return out


def export_html(notebook: Path, target: Path, lang: str = "en") -> Path:
    """Export an executed notebook to one offline HTML file in ``lang`` (see the module docstring)."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    nb.metadata.pop("widgets", None)
    prose = iter(report_prose(notebook.stem, lang))
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = next(prose, cell.source)  # a cell the catalog lacks keeps its text (tests catch it)
    body, _resources = _exporter().from_notebook_node(nb, resources={"metadata": {"name": notebook.stem}})
    body = _EXTERNAL_SCRIPT.sub("", body)
    target.write_text(body, encoding="utf-8")
    return target


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def execute(name: str, params: Mapping[str, Any], out_dir: Path, *, progress: bool = True,
            timeout_s: float = 900, source: Path | None = None) -> Path:
    """Execute one notebook with papermill into ``out_dir/<name>.ipynb``; ReportError on failure."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    src = (source or notebooks_dir()) / f"{name}.ipynb"
    if not src.is_file():
        raise ReportError(msg("error.report.notebook_missing", path=str(src)))
    target = out_dir / f"{name}.ipynb"
    try:
        papermill.execute_notebook(
            str(src), str(target), parameters=dict(params), kernel_name=KERNEL, progress_bar=progress,
            cwd=str(out_dir), execution_timeout=int(timeout_s), store_widget_state=False, log_output=False)
    except PapermillExecutionError as exc:
        raise ReportError(msg("error.report.cell_failed", name=name, cell=str(exc.exec_count), kind=exc.ename,
                              detail=_one_line(exc.evalue))) from None
    except Exception as exc:  # noqa: BLE001 - kernel missing, timeout, ...: one line naming the notebook
        raise ReportError(msg("error.report.failed", name=name, kind=type(exc).__name__,
                              detail=_one_line(exc))) from None
    return target


def _index_html(plan: TrainPlan, pages: Sequence[Path], lang: str = "en") -> str:
    def title(stem: str) -> str:
        return text(f"report.page.{stem}", lang) if f"report.page.{stem}" in CATALOG else stem

    items = "".join(f'<li><a href="{html.escape(p.name)}">{html.escape(title(p.stem))}</a></li>' for p in pages)
    caption = text("ui.plan_caption", lang, model=plan.model, method=plan.method, precision=plan.precision,
                   optimizer=plan.optimizer, seq_len=plan.seq_len, batch=plan.batch_size, grad_accum=plan.grad_accum,
                   gpus=plan.gpus, sharding=plan.sharding)
    heading = html.escape(text("report.title", lang))
    return (f"<!DOCTYPE html><html lang='{lang}'><head><meta charset='utf-8'><title>{heading}</title></head><body>"
            f"<h1>{heading}</h1><p>{html.escape(caption)}</p><ul>{items}</ul></body></html>")


def build_report(plan: TrainPlan | Mapping[str, Any], out_dir: str | Path, *, notebooks: Sequence[str] = NOTEBOOKS,
                 steps: int = TRIAL_STEPS, progress: bool = True, timeout_s: float = 900,
                 log: Callable[[str], Any] | None = None, cuda: bool | None = None, lang: str = "en") -> ReportResult:
    """Execute the notebooks for ``plan`` and write offline HTML into ``out_dir`` (and nothing elsewhere).

    Args:
        plan: a TrainPlan or a dict of its fields.
        out_dir: the report folder (created).
        notebooks: which of NOTEBOOKS to run, in order.
        steps: measured steps of the trial.
        progress: a progress bar per notebook (papermill's, over its cells).
        timeout_s: per cell.
        log: where progress lines go (default: stderr).
        cuda: force the trial's device choice (None: detect).
        lang: the pages' language, "en" or "ru" (the notebooks' ``lang`` parameter and the pages' prose).

    Raises:
        PlanError: the plan is invalid. ReportError: a notebook failed (named, with the cell's error).
    """
    started = time.monotonic()
    plan = plan if isinstance(plan, TrainPlan) else TrainPlan.from_dict(dict(plan))
    unknown = [n for n in notebooks if n not in NOTEBOOKS]
    if unknown:
        raise ReportError(msg("error.report.unknown_notebooks", names=", ".join(unknown), choices=", ".join(NOTEBOOKS)))
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ReportError(msg("error.report.steps", steps=repr(steps)))
    if lang not in LANGS:
        raise ReportError(msg("error.report.no_lang", lang=repr(lang)))
    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    out = Path(out_dir).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    executed: list[Path] = []
    pages: list[Path] = []
    for i, name in enumerate(notebooks, 1):
        records = sorted(str(p) for p in (out / "trials").glob("*.json")) if (out / "trials").is_dir() else []
        params = parameters_for(name, plan, out, steps=steps, cuda=cuda, records=records, lang=lang)
        say(text("report.progress", lang, i=i, n=len(notebooks), name=name))
        executed.append(execute(name, params, out, progress=progress, timeout_s=timeout_s))
        pages.append(export_html(executed[-1], out / f"{name}.html", lang))
    index = out / "index.html"
    index.write_text(_index_html(plan, pages, lang), encoding="utf-8")
    return ReportResult(out, tuple(pages), tuple(executed), index, time.monotonic() - started)


__all__ = ["NOTEBOOKS", "ReportError", "ReportResult", "build_report", "export_html", "notebooks_dir",
           "parameters_for", "report_prose", "trial_plan"]
