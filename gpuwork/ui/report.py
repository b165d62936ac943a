"""Reports: the workbook's notebooks executed for one plan and exported as self-contained HTML.

``build_report(plan, out_dir, lang=...)`` runs ``notebooks/01_sizing``, ``02_trial`` and ``03_offers`` with
papermill (parameters: the plan as a dict, ``report=True`` and ``lang``; kernel ``python3``), then exports each
executed notebook with nbconvert into one HTML page that opens offline. The notebooks' report mode embeds
plotly.js in the output (``plotly_mimetype+notebook``); the report writes it once, as ``plotly.min.js`` in the
folder, and every page and executed notebook loads that file instead of carrying its own 4.6 MB copy. The
template drops require.js, MathJax and mermaid from the page head, and any remaining external ``<script
src=...>`` (plotly adds a MathJax CDN tag per figure; no label here uses LaTeX) is removed. Code cells are
hidden, library noise on stderr is removed (``gpuwork.ui.noise``), and the notebooks' prose (written for
interactive use: "press Run trial") is replaced by the catalog's text for a static page in the report's
language (entries ``report.md.<notebook>.<n>``, one per markdown cell in order). Every page, and the index,
opens with the answer (``answer_html``): the cards the run fits on, the recommended offer, time and cost as a
range over the cheapest fitting offers, and the risks.

Everything is written into ``out_dir``: ``<name>.ipynb`` (executed), ``<name>.html``, ``plotly.min.js``,
``trials/`` (the trial's record and checkpoint) and ``index.html``.

Example:
    >>> result = build_report(TrainPlan(model="llama-3.1-8b", method="lora"), "reports/llama-lora")
    >>> [p.name for p in result.html]
    ['01_sizing.html', '02_trial.html', '03_offers.html']

Limitations: without CUDA the trial notebook runs a tiny model of the same family on the CPU (it proves
the pipeline, not the speed); each notebook starts its own kernel (a few seconds each).
"""

from __future__ import annotations

import dataclasses
import functools
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
from gpuwork.plan import SdpaBackend, TrainPlan
from gpuwork.present.messages import CATALOG, LANGS, render, text
from gpuwork.ui.noise import strip_noise
from gpuwork.units import is_whole

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
PLOTLY_FILE = "plotly.min.js"  # the one copy of plotly.js in a report folder
# The inline plotly.js bundle that plotly's "notebook" renderer puts in the first figure's cell.
_PLOTLY_BUNDLE = re.compile(r"<script>\s*/\*\*\s*\*\s*plotly\.js v[\d.]+.*?</script>", re.DOTALL)
ANSWER_CARDS = 8  # cards named in the answer, fewest GPUs and smallest memory first; the rest are counted
ANSWER_OFFERS = 5  # the time and cost range covers this many of the cheapest fitting offers
TIGHT_HEADROOM = 0.10  # less free memory than this share of the usable memory is a risk worth naming


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
    if plan.sdpa_backend in (SdpaBackend.CUDNN, SdpaBackend.EFFICIENT):  # CUDA-only kernels: the CPU's own order
        changes["sdpa_backend"] = SdpaBackend.FLASH  # (the trial refuses them on the CPU, gpuwork.measure.sdpa)
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
    out: list[str] = []
    while (code := f"report.md.{name}.{len(out)}") in CATALOG:
        out.append(text(code, lang))
    return out


def share_plotly(nb: Any, src: str = PLOTLY_FILE) -> int:
    """Replace the inline plotly.js bundle in ``nb``'s outputs by ``<script src=src>``, in place; returns how many
    outputs carried one (the report writes the library once, next to its pages)."""
    replaced = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else ():
            page = output.get("data", {}).get("text/html")
            if isinstance(page, str) and _PLOTLY_BUNDLE.search(page):
                output["data"]["text/html"] = _PLOTLY_BUNDLE.sub(f'<script src="{src}"></script>', page, count=1)
                replaced += 1
    return replaced


def write_plotly(out_dir: Path) -> Path:
    """plotly.js (the version the figures were made with) as one file in the report folder."""
    from plotly.offline import get_plotlyjs

    path = out_dir / PLOTLY_FILE
    path.write_text(get_plotlyjs(), encoding="utf-8")
    return path


def _answer_cell(answer: str) -> Any:
    import nbformat

    cell = nbformat.v4.new_code_cell("# the answer (gpuwork.ui.report.answer_html)")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": answer, "text/plain": ""})]
    return cell


def export_html(notebook: Path, target: Path, lang: str = "en", *, answer: str | None = None) -> Path:
    """Export an executed notebook to one offline HTML file in ``lang`` (see the module docstring).

    ``answer``: HTML shown right after the page's title (``answer_html``). The executed notebook itself is
    rewritten without library noise and with plotly.js loaded from the folder's ``plotly.min.js``.
    """
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    nb.metadata.pop("widgets", None)
    strip_noise(nb)
    if share_plotly(nb):
        nbformat.write(nb, notebook)
    prose = iter(report_prose(notebook.stem, lang))
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = next(prose, cell.source)  # a cell the catalog lacks keeps its text (tests catch it)
    if answer:
        first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), -1)
        nb.cells.insert(first + 1, _answer_cell(answer))
    body, _resources = _exporter().from_notebook_node(nb, resources={"metadata": {"name": notebook.stem}})
    body = _EXTERNAL_SCRIPT.sub("", body)
    target.write_text(body, encoding="utf-8")
    return target


def answer_html(plan: TrainPlan, lang: str = "en", *, offers: Sequence[Any] | None = None) -> str:
    """The answer a report opens with: which cards the run fits on (fewest GPUs each), the recommended offer
    (the cheapest expected cost that fits), time and cost over the ANSWER_OFFERS cheapest fitting offers, and
    the risks. ``offers``: OfferResults ranked by cost (default: the bundled catalog evaluated for ``plan``)."""
    from gpuwork.present.band import band_messages
    from gpuwork.sizing import decide, evaluate_offers, time_band
    from gpuwork.units import GB

    say = functools.partial(render, lang=lang)
    items: list[str] = []
    decision = None
    if offers is None:
        # the one answer (gpuwork.estimate.decision): the recommended offer below is the card, count and mode the
        # app, the CLI and the request name (with its change, if the plan needs one); the cards listed are where
        # the plan as written fits
        decision = decide(plan)
        items.append(say(decision.summary))
        results = list(evaluate_offers(plan, sort="cost"))
    else:
        results = list(offers)
    fitting = [r for r in results if r.fits and r.expected_total_s is not None and r.expected_cost_usd is not None]
    chosen = decision.offer if decision is not None else None  # the one answer's offer; None when nothing fits
    if not fitting:
        items.append(say(msg("report.answer.fits_none")))
    else:
        cards: dict[str, Any] = {}
        for r in fitting:  # the fewest GPUs each card needs
            seen = cards.get(r.offer.gpu_id)
            if seen is None or r.fit.plan.gpus < seen.fit.plan.gpus:
                cards[r.offer.gpu_id] = r
        ordered = sorted(cards.values(), key=lambda r: (r.fit.plan.gpus, r.offer.gpu.memory_bytes))
        named = [msg("report.answer.card", gpus=r.fit.plan.gpus, gpu=r.offer.gpu.display_name,
                     card_gb=round(r.offer.gpu.memory_bytes / GB)) for r in ordered[:ANSWER_CARDS]]
        if len(ordered) > ANSWER_CARDS:
            named.append(msg("report.answer.more", n=len(ordered) - ANSWER_CARDS))
        items.append(say(msg("report.answer.fits", cards=tuple(named))))
        best = chosen if chosen is not None else fitting[0]
        items.append(say(msg("report.answer.recommended", offer=best.offer.offer_id, provider=best.offer.provider,
                             gpus=best.fit.plan.gpus, gpu=best.offer.gpu.display_name, mode=best.offer.mode.value,
                             price_usd=best.offer.price_per_gpu_hour, total_s=best.expected_total_s,
                             cost_usd=best.expected_cost_usd)))
        if best.time is not None:  # the held-out track record beside that time
            items += [say(m) for m in band_messages(time_band(best.time), best.time)]
        top = fitting[:ANSWER_OFFERS]
        times = [r.expected_total_s for r in top if r.expected_total_s is not None]  # all: fitting has both
        costs = [r.expected_cost_usd for r in top if r.expected_cost_usd is not None]
        items.append(say(msg("report.answer.range", n=len(top), low_s=min(times), high_s=max(times),
                             low_usd=min(costs), high_usd=max(costs))))
    risks = [msg("report.answer.risk_estimate")]
    if fitting:
        best = chosen if chosen is not None else fitting[0]
        if best.fit.headroom_bytes < TIGHT_HEADROOM * best.fit.usable_bytes:
            risks.append(msg("report.answer.risk_headroom", need_bytes=best.fit.device_total_bytes,
                             usable_bytes=best.fit.usable_bytes))
        if best.expected_preemptions:
            risks.append(msg("report.answer.risk_preemptions", preemptions=best.expected_preemptions))
        if best.fit.changes:
            risks.append(msg("report.answer.risk_changes", changes=best.fit.changes))
    risk_items = "".join(f"<li>{html.escape(say(r))}</li>" for r in risks)
    body = "".join(f'<p style="margin:2px 0">{html.escape(line)}</p>' for line in items)
    return (f'<div class="gpuwork-answer" style="border-left:4px solid #4c78a8;padding:4px 12px;margin:8px 0">'
            f"<h2 style=\"margin:4px 0\">{html.escape(text('report.answer.title', lang))}</h2>{body}"
            f"<p style=\"margin:6px 0 0 0\">{html.escape(text('report.answer.risks', lang))}</p>"
            f'<ul style="margin:2px 0">{risk_items}</ul></div>')


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


def _index_html(plan: TrainPlan, pages: Sequence[Path], lang: str = "en", answer: str = "") -> str:
    def title(stem: str) -> str:
        return text(f"report.page.{stem}", lang) if f"report.page.{stem}" in CATALOG else stem

    items = "".join(f'<li><a href="{html.escape(p.name)}">{html.escape(title(p.stem))}</a></li>' for p in pages)
    caption = text("ui.plan_caption", lang, model=plan.model, method=plan.method, precision=plan.precision,
                   optimizer=plan.optimizer, seq_len=plan.seq_len, batch=plan.batch_size, grad_accum=plan.grad_accum,
                   gpus=plan.gpus, sharding=plan.sharding)
    heading = html.escape(text("report.title", lang))
    return (f"<!DOCTYPE html><html lang='{lang}'><head><meta charset='utf-8'><title>{heading}</title></head><body>"
            f"<h1>{heading}</h1><p>{html.escape(caption)}</p>{answer}<ul>{items}</ul></body></html>")


@dataclass(frozen=True)
class ReportOptions:
    """How ``build_report`` runs the notebooks.

    notebooks: which of NOTEBOOKS to run, in order.
    steps: measured steps of the trial.
    progress: a progress bar per notebook (papermill's, over its cells).
    timeout_s: per cell.
    log: where progress lines go (default: stderr).
    cuda: force the trial's device choice (None: detect).
    lang: the pages' language, "en" or "ru" (the notebooks' ``lang`` parameter and the pages' prose).

    Raises ReportError for an unknown notebook, a step count below 1 or an unknown language.
    """

    notebooks: Sequence[str] = NOTEBOOKS
    steps: int = TRIAL_STEPS
    progress: bool = True
    timeout_s: float = 900
    log: Callable[[str], Any] | None = None
    cuda: bool | None = None
    lang: str = "en"

    def __post_init__(self) -> None:
        unknown = [n for n in self.notebooks if n not in NOTEBOOKS]
        if unknown:
            raise ReportError(msg("error.report.unknown_notebooks", names=", ".join(unknown),
                                  choices=", ".join(NOTEBOOKS)))
        if not is_whole(self.steps, 1):
            raise ReportError(msg("error.report.steps", steps=repr(self.steps)))
        if self.lang not in LANGS:
            raise ReportError(msg("error.report.no_lang", lang=repr(self.lang)))

    def say(self, line: str) -> None:
        if self.log is not None:
            self.log(line)
        else:
            print(line, file=sys.stderr, flush=True)


def build_report(plan: TrainPlan | Mapping[str, Any], out_dir: str | Path, options: ReportOptions | None = None,
                 **settings: Any) -> ReportResult:
    """Execute the notebooks for ``plan`` and write offline HTML into ``out_dir`` (and nothing elsewhere).

    Args:
        plan: a TrainPlan or a dict of its fields.
        out_dir: the report folder (created).
        options: how to run (``ReportOptions``); its fields may also be given by name
            (``build_report(plan, out, steps=2, lang="ru")``).

    Raises:
        PlanError: the plan is invalid. ReportError: a bad option, or a notebook failed (named, with the cell's
        error).
    """
    started = time.monotonic()
    plan = plan if isinstance(plan, TrainPlan) else TrainPlan.from_dict(dict(plan))
    o = dataclasses.replace(options or ReportOptions(), **settings)
    lang = o.lang
    out = Path(out_dir).expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    executed: list[Path] = []
    pages: list[Path] = []
    try:
        answer = answer_html(plan, lang)
    except GpuworkError as exc:  # the pages still say what failed, cell by cell
        answer = f'<div class="gpuwork-answer">{html.escape(exc.text(lang))}</div>'
    write_plotly(out)
    for i, name in enumerate(o.notebooks, 1):
        records = sorted(str(p) for p in (out / "trials").glob("*.json")) if (out / "trials").is_dir() else []
        params = parameters_for(name, plan, out, steps=o.steps, cuda=o.cuda, records=records, lang=lang)
        o.say(text("report.progress", lang, i=i, n=len(o.notebooks), name=name))
        executed.append(execute(name, params, out, progress=o.progress, timeout_s=o.timeout_s))
        pages.append(export_html(executed[-1], out / f"{name}.html", lang, answer=answer))
    index = out / "index.html"
    index.write_text(_index_html(plan, pages, lang, answer), encoding="utf-8")
    return ReportResult(out, tuple(pages), tuple(executed), index, time.monotonic() - started)


__all__ = ["NOTEBOOKS", "PLOTLY_FILE", "ReportError", "ReportOptions", "ReportResult", "answer_html", "build_report", "export_html",
           "notebooks_dir", "parameters_for", "report_prose", "share_plotly", "trial_plan", "write_plotly"]
