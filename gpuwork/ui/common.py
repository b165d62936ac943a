"""What the workbook's panels share: labels in two languages, HTML helpers, friendly errors, live charts.

The panels (``gpuwork.ui.sizing``, ``trial``, ``offers``, ``request``) follow solara's rule, three
layers each: *state* (the plan and the results, plain attributes), a *pure update* (``size_plan``,
``offer_results``, ``estimate_vs_measured_rows``, ... call the estimators and return data, no widgets),
and a *thin view* (ipywidgets controls that rebuild the state on every change and re-render HTML and
charts, ``LiveFigure``). Nothing here computes a formula: numbers come from
gpuwork's estimators and are only converted for display.

Every panel runs in two modes: interactive (widgets, live charts) and report
(``report=True``: plain ``go.Figure``s and HTML that survive offline HTML export). A panel's
``show(part)`` displays one part in either mode through ``display`` (the one seam tests replace).
Invalid input anywhere shows one friendly line (``error_html``, class ``gpuwork-error``), never a
traceback, and the panel keeps working.

Example:
    >>> ui("method")
    'Method'
    >>> error_html("bad\\nvalue")
    '<div class="gpuwork-error" style="color:#c62828;font-weight:600">bad value</div>'

Limitations: labels exist in English and Russian (catalog entries ``ui.*`` of gpuwork.present.messages). Button actions (trace, trial) run in a background
thread (``run_in_thread``); several at once are refused by the panels rather than queued.
"""

from __future__ import annotations

import contextlib
import html
import json
import logging
import re
import secrets
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import plotly.graph_objects as go
import traitlets

from gpuwork.errors import GpuworkError
from gpuwork.message import msg
from gpuwork.plan import TrainPlan, plan_from_choices
from gpuwork.present import messages
from gpuwork.units import LANGS, parse_count, parse_number

_log = logging.getLogger(__name__)


_ERROR_COLOR = "#c62828"
NOTE_COLOR = "#9a6700"  # warnings and notes that need attention
MUTED = "#555"  # secondary text
WIDE = {"description_width": "170px"}  # the controls' label column
CHECKBOX_LAYOUT = {"width": "auto"}

# -- number fields ----------------------------------------------------------------------------------


def _as_text(value: Any) -> Any:
    """A number set from code (``control.value = 4096``) as the text a person would have typed."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value) if isinstance(value, int) else format(value, "g")


class _TextOrNumber(traitlets.Unicode):  # the trait class of Text.value
    def validate(self, obj: Any, value: Any) -> Any:
        return super().validate(obj, _as_text(value))


class NumberText(widgets.Text):
    """A text field for a number a person types, read by gpuwork.units: "4096", "1e4", "4k", "1.5B".

    The browser's number inputs (``IntText``) keep only what they can read, so "4096.5" arrived as 40965,
    "1e4" as 14 and "200 MB" as 200. This field sends the text as typed; ``number(field)`` parses it or
    raises PlanError naming the field and what to write. Setting ``.value`` to a number shows it as text.

    Args:
        kind: "count" (a whole number, k/M/B/T suffixes allowed), "length" (a sequence length: "4k" is 4,096,
            ``gpuwork.sizing.parse_seq_len``) or "number" (a finite decimal).
    """

    value = _TextOrNumber("", help="the text as typed").tag(sync=True)

    def __init__(self, value: Any = "", *, kind: str = "count", **kwargs: Any):
        if kind not in ("count", "length", "number"):
            raise ValueError(f"kind={kind!r} must be 'count', 'length' or 'number'")
        kwargs.setdefault("continuous_update", False)  # re-estimate on Enter or leaving the field, not per key
        super().__init__(value=_as_text(value), **kwargs)
        self.kind = kind

    def number(self, field: str) -> int | float:
        """The parsed value; PlanError (naming ``field``) when the text is not a finite number of this kind."""
        if self.kind == "count":
            return parse_count(self.value, field, minimum=None)
        if self.kind == "length":
            from gpuwork.sizing import parse_seq_len

            return parse_seq_len(self.value, field)
        value = parse_number(self.value, field)
        return int(value) if float(value).is_integer() else value


# -- labels -----------------------------------------------------------------------------------------


class Label(str):
    """A workbook label: the text of catalog entry ``ui.<key>`` in one language.

    ``Label.format(**params)`` renders the entry through the catalog (numbers in the language's form), so
    ``ui("trial_step", lang).format(step=3, ...)`` and ``ui("trial_step", lang, step=3, ...)`` say the same.
    """

    code: str
    lang: str

    def __new__(cls, code: str, lang: str) -> Label:
        label = super().__new__(cls, messages.CATALOG[code][lang])
        label.code, label.lang = code, lang
        return label

    def format(self, *args: Any, **params: Any) -> str:  # type: ignore[override]
        if args:
            raise TypeError(f"{self.code}: pass the parameters by name")
        return messages.render(msg(self.code, **params), self.lang)


def ui(key: str, lang: str = "en", **params: Any) -> str:
    """A workbook label in ``lang`` (catalog entry ``ui.<key>``; English for an unknown language).

    With ``params`` the entry is rendered: ``ui("params", "ru", total=8_030_261_248, trainable=...)``.
    """
    lang = lang if lang in LANGS else "en"
    if params:
        return messages.render(msg(f"ui.{key}", **params), lang)
    return Label(f"ui.{key}", lang)


# -- small display helpers (conversion for display only) ---------------------------------------------


def describe(controls: Mapping[str, Any], lang: str) -> None:
    """Label each control with its catalog entry: ``{"steps": IntText}`` gets ``ui("steps", lang)``."""
    for key, control in controls.items():
        control.description = ui(key, lang)


def one_line(message: Any) -> str:
    """A message on one line (the app shows errors as a single line)."""
    return " ".join(str(message).split())


def error_html(message: str) -> str:
    """A friendly one-line error in red, HTML-escaped (in the served app, without server paths)."""
    return (f'<div class="gpuwork-error" style="color:{_ERROR_COLOR};font-weight:600">'
            f"{html.escape(one_line(public_text(message) if _public else message))}</div>")


# -- the served app: what a visitor may see ----------------------------------------------------------------

_public = False  # True in a kernel behind a web server (set_public): no server paths, no exception text
# an absolute path after a space, quote, bracket, "=" or ":" (not "tokens/s" or a URL's "//host/...")
_ABS_PATH = re.compile(r"""(^|[\s'"(\[=:,])(/(?:[^\s'"/)\],;]+/)+[^\s'"/)\],;]*)""")


def set_public(on: bool = True) -> None:
    """Say that this kernel serves visitors (the Voila app): errors then name no server path and show a
    reference for an unexpected exception instead of its text (the log has the details)."""
    global _public
    _public = bool(on)


def is_public() -> bool:
    return _public


def public_text(text: str) -> str:
    """``text`` with each absolute path shortened to its last part: "/srv/x/config.json" -> "config.json"."""
    return _ABS_PATH.sub(lambda m: m.group(1) + (m.group(2).rstrip("/").rsplit("/", 1)[-1] or "/"), str(text))


# -- uploads: bytes of content, never a path ------------------------------------------------------------------

UPLOAD_LIMIT_BYTES = 1_000_000  # a config.json is a few KB, a trial record tens of KB


def upload_name(item: Mapping[str, Any], default: str = "upload.json") -> str:
    """The file name a browser sent, without folders, at most 80 characters (it is shown to the visitor)."""
    name = str(item.get("name") or default).replace("\\", "/").rsplit("/", 1)[-1]
    return one_line(name)[:80] or default


def upload_content(item: Mapping[str, Any], what: str, limit_bytes: int = UPLOAD_LIMIT_BYTES) -> bytes:
    """The bytes of one ``FileUpload`` item: its content as sent, never a file read on the server.

    ``what`` is "config" or "record" (for the messages). Raises GpuworkError for no content, an empty file
    or one above ``limit_bytes``.
    """
    name = upload_name(item)
    content = item.get("content")
    if isinstance(content, memoryview):
        size = content.nbytes
    elif isinstance(content, bytes | bytearray):
        size = len(content)
    else:
        raise GpuworkError(msg("error.upload.not_json", name=name, reason="no file content", what=what))
    if size > limit_bytes:
        raise GpuworkError(msg("error.upload.too_large", name=name, size_bytes=size, limit_mb=limit_bytes / 1e6,
                               what=what))
    if size == 0:
        raise GpuworkError(msg("error.upload.empty", name=name, what=what))
    return bytes(content)


def upload_json(item: Mapping[str, Any], what: str, limit_bytes: int = UPLOAD_LIMIT_BYTES) -> Any:
    """The JSON value in one upload (``upload_content`` parsed as UTF-8 JSON); GpuworkError when it is not JSON.

    Text such as "/dev/zero" or "/etc/passwd" is content that is not JSON: it is never opened as a path.
    """
    from gpuwork.facts import reading

    content = upload_content(item, what, limit_bytes)
    try:
        return reading.parse_json(content.decode("utf-8"), upload_name(item))  # bounded: depth and digits
    except UnicodeDecodeError:
        reason = "not UTF-8 text"
    except (json.JSONDecodeError, RecursionError) as exc:
        reason = f"line {exc.lineno}, column {exc.colno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) \
            else "nested too deeply"
    raise GpuworkError(msg("error.upload.not_json", name=upload_name(item), reason=reason, what=what))


def note_html(message: str, color: str = MUTED, cls: str = "gpuwork-note") -> str:
    """A line of already-escaped HTML in ``color``."""
    return f'<div class="{cls}" style="color:{color}">{message}</div>'


def friendly(exc: BaseException, lang: str = "en") -> str:
    """One line for the user in ``lang``: the message of a GpuworkError, or a short 'unexpected error' line.

    Errors raised with a message code render in ``lang``; one raised without a code falls back to its English
    text.
    """
    if isinstance(exc, GpuworkError):
        text = one_line(field_named(exc, lang) or exc.text(lang))
        return public_text(text) if _public else text
    if _public:  # a visitor sees a reference; the server's log has the exception under it
        ref = secrets.token_hex(4)
        _log.error("unexpected error in a gpuwork widget (reference %s)", ref, exc_info=exc)
        return one_line(ui("app_unexpected", lang, ref=ref))
    _log.error("unexpected error in a gpuwork widget", exc_info=exc)
    return one_line(ui("unexpected", lang, error=f"{type(exc).__name__}: {exc}"))


_FIELD_MARK = "\ue000"  # a private-use character: rendering escapes control characters, it keeps this one


def field_named(exc: BaseException, lang: str = "en") -> str | None:
    """The message of an error about one field with the field's plain name instead of its attribute:
    "Sequence length: 'abc' is not a count: ..." for "seq_len='abc' is not a count: ..."; None when the message
    names no field the catalog has a name for (``ui.field.<name>``)."""
    from gpuwork.message import Msg

    message = getattr(exc, "msg", None)
    if not isinstance(message, Msg):
        return None
    params = dict(message.kwargs)
    name = params.get("field")
    if not isinstance(name, str) or f"ui.field.{name}" not in messages.CATALOG:
        return None
    params["field"] = _FIELD_MARK
    try:
        said = messages.render(Msg(message.code, tuple(sorted(params.items()))), lang)
    except Exception:  # noqa: BLE001 - a message that cannot take the mark is said as it was
        return None
    said = said.replace(_FIELD_MARK + "=", "").replace(_FIELD_MARK, "").strip(" :")
    return messages.render(msg("ui.field_problem", label=messages.text(f"ui.field.{name}", lang), problem=said), lang)


def table_html(header: Sequence[str], rows: Sequence[Sequence[Any]], cls: str, right: Sequence[int] = ()) -> str:
    """An HTML table; cells are already-escaped HTML strings; ``right`` aligns those columns right."""
    def cell(tag: str, i: int, value: Any) -> str:
        style = "text-align:right;white-space:nowrap" if i in right else "text-align:left"
        return f'<{tag} style="{style};padding:2px 8px">{value}</{tag}>'

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>" for row in rows)
    # display:block lets a wide table scroll sideways in its own box instead of being cut off at the page's edge
    return (f'<table class="{cls}" style="border-collapse:collapse;margin:4px 0;display:block;overflow-x:auto;'
            f'max-width:100%">'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def heading_html(level: int, text: str) -> str:
    """A compact ``<hN>`` heading, HTML-escaped."""
    return f'<h{level} style="margin:10px 0 4px 0">{html.escape(text)}</h{level}>'


def plan_caption(plan: TrainPlan, model_label: str | None = None, lang: str = "en") -> str:
    """The plan on one line (model, method, precision, optimizer, batch shape, GPUs, sharding)."""
    return ui("plan_caption", lang, model=model_label or plan.model, method=plan.method, precision=plan.precision,
              optimizer=plan.optimizer, seq_len=plan.seq_len, batch=plan.batch_size, grad_accum=plan.grad_accum,
              gpus=plan.gpus, sharding=plan.sharding)


def setup_notebook(report: bool = False) -> None:
    """Call once at the top of a notebook. Report mode embeds plotly.js in the output (offline HTML).

    With ``report=True`` plotly's renderer becomes ``plotly_mimetype+notebook``: the first figure's cell
    carries the plotly.js library itself, so exported HTML works without a network. Interactive mode
    keeps the default renderer (live charts are ``LiveFigure`` outputs). Either way, library warnings
    meant for their developers stay off the page (gpuwork.ui.noise).
    """
    from gpuwork.ui.noise import quiet_libraries

    quiet_libraries()
    if report:
        import plotly.io as pio

        pio.renderers.default = "plotly_mimetype+notebook"


def plan_from(value: TrainPlan | Mapping[str, Any] | None, default: Mapping[str, Any] | None = None) -> TrainPlan:
    """A TrainPlan from a plan, a dict of fields (``{"plan": {...}}`` accepted; without a precision, the method's:
    ``gpuwork.plan.plan_from_choices``) or None (the default)."""
    if isinstance(value, TrainPlan):
        return value
    data = dict(default or {})
    if value:
        nested = value.get("plan")
        data.update(nested if isinstance(nested, Mapping) else value)
    return plan_from_choices(data)


def start_plan(panel: Any, plan: TrainPlan | Mapping[str, Any] | None) -> None:
    """A panel's starting plan (a TrainPlan, a dict of its fields, or None), evaluated at once through
    ``panel.set_plan``; a bad one shows its one-line message (``panel._show_error``, in ``panel.lang``)."""
    if plan is None:
        return
    try:
        panel.set_plan(plan_from(plan))
    except GpuworkError as exc:
        panel._show_error(friendly(exc, panel.lang))


def display(*objects: Any) -> None:
    """Display each object that is not None: every panel's ``show(part)`` goes through here (tests replace it)."""
    from IPython.display import display as ipython_display

    for obj in objects:
        if obj is not None:
            ipython_display(obj)


def html_output(value: str) -> Any:
    """An IPython HTML object for ``display``."""
    from IPython.display import HTML

    return HTML(value)


class Panel:
    """What every workbook panel shares: ``show(part)`` displays the live widgets of a part in a notebook,
    or, in a report (``self.report``), plain figures and HTML; ``view()`` is the whole panel."""

    report: bool

    def live_parts(self) -> dict[str, Callable[[], Any]]:
        """Part name -> the widget that shows it live (None: shown elsewhere)."""
        raise NotImplementedError

    def static_parts(self) -> dict[str, Callable[[], list[Any]]]:
        """Part name -> the figures and HTML that show it in a report."""
        raise NotImplementedError

    def show(self, part: str) -> None:
        parts = self.static_parts() if self.report else self.live_parts()
        if part not in parts:
            raise KeyError(part)
        shown = parts[part]()
        if self.report:
            display(*shown)  # a list of figures and HTML
        else:
            display(shown)  # one live widget

    def view(self) -> Any:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.view()._repr_mimebundle_(**kwargs)


# -- live charts ---------------------------------------------------------------------------------------

PLOTLY_MIME = "application/vnd.plotly.v1+json"
# the modebar's logo links to plotly's site; a read-only app keeps to its own server
PLOTLY_CONFIG: Mapping[str, Any] = {"displaylogo": False}


def plotly_bundle(fig: go.Figure) -> dict[str, Any]:
    """``fig`` as a mime bundle: plotly's JSON (numpy arrays as plotly.js typed arrays, base64) for plotly's renderer
    extension, and a ``text/html`` fallback that draws the same JSON with plotly.js's basic bundle (the app's page)."""
    import plotly.io as pio

    data = json.loads(pio.to_json(fig, validate=False, engine="json"))
    data["config"] = dict(PLOTLY_CONFIG)
    return {PLOTLY_MIME: data, "text/html": _plotly_html(data)}


# The app's page (Voila) does not load plotly's renderer extension: its bundle holds all of plotly.js, 4.8 MB of
# JavaScript that the page parses before it even connects to its kernel. The page draws the text/html fallback
# instead, with plotly.js's basic bundle (bar, scatter, pie: every chart here; 1.2 MB, the plotly.js version plotly
# ships), served beside the app notebook (VOILA_SETTINGS' file_allowlist) and loaded once per page, when the first
# chart needs it. JupyterLab ranks plotly's mime type first and never runs this.
PLOTLY_BASIC_URL = "voila/files/static/plotly-basic.min.js"
PLOTLY_BASIC_TRACES = frozenset({"bar", "pie", "scatter"})  # the bundle's trace modules (its README)
_PLOTLY_HTML = """<div class="gpuwork-plot" id="{id}" style="min-height:{height}px"></div><script>(function () {{
  var fig = {fig};
  var el = document.getElementById("{id}");
  if (!el) return;
  function draw() {{
    // responsive: the chart follows its column when the window is resized
    window.Plotly.newPlot(el, fig.data, fig.layout || {{}}, Object.assign({{responsive: true}}, fig.config));
  }}
  function load() {{
    if (window.Plotly) {{ draw(); return; }}
    var s = document.querySelector("script[data-gpuwork-plotly]");
    if (!s) {{
      s = document.createElement("script");
      s.src = "{url}";
      s.setAttribute("data-gpuwork-plotly", "");
      document.head.appendChild(s);
    }}
    s.addEventListener("load", draw);
  }}
  // drawn when it comes near the screen: the first paint draws only the charts in sight, and a chart in a hidden
  // tab is drawn when the tab is shown, at its real width (the reserved height keeps the page from jumping); a
  // chart already in sight (an update) is drawn at once, with no blank frame
  var box = el.getBoundingClientRect(), height = window.innerHeight || document.documentElement.clientHeight;
  if (!window.IntersectionObserver || (box.width > 0 && box.bottom >= -200 && box.top <= height + 200)) {{
    load();
    return;
  }}
  var near = new IntersectionObserver(function (entries) {{
    if (entries.some(function (e) {{ return e.isIntersecting; }})) {{ near.disconnect(); load(); }}
  }}, {{rootMargin: "200px"}});
  near.observe(el);
}})();</script>"""
PLOTLY_DEFAULT_HEIGHT_PX = 450  # plotly.js's layout.height when a figure sets none


def _plotly_html(data: Mapping[str, Any]) -> str:
    fig = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")  # a "</script>" in a label ends no script
    height = (data.get("layout") or {}).get("height") or PLOTLY_DEFAULT_HEIGHT_PX
    return _PLOTLY_HTML.format(id=f"gpuwork-plot-{uuid.uuid4().hex}", fig=fig, url=PLOTLY_BASIC_URL,
                               height=int(height))


class LiveFigure:
    """A chart slot in a page: an ``Output`` widget holding one output, the figure as ``plotly_bundle``. JupyterLab
    draws it with plotly's renderer extension (jupyterlab-plotly, shipped with plotly); the app's page (Voila, which
    is told not to load that extension) draws the ``text/html`` fallback with plotly.js's basic bundle.

    Not a ``FigureWidget``: each FigureWidget sends its own copy of plotly.js (5 MB, anywidget's ``_esm``) through
    the kernel and the server's websocket, per chart and per visitor; the extension is one static file.
    ``show(fig)`` replaces the output in one state update (thread-safe, no flicker); ``figure`` is the last
    figure shown (None before the first).
    """

    def __init__(self, css_class: str):
        self.out = widgets.Output(layout={"width": "100%"})
        self.box = widgets.VBox([self.out], layout={"width": "100%"})  # a column stretches the chart
        self.box.add_class(css_class)
        self.figure: go.Figure | None = None

    def show(self, fig: go.Figure) -> None:
        self.figure = fig
        self.out.outputs = ({"output_type": "display_data", "data": plotly_bundle(fig), "metadata": {}},)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Library warnings (FutureWarning from transformers, ...) must not reach the page."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def run_in_thread(name: str, target: Callable[[], Any]) -> threading.Thread:
    """Start ``target`` in a daemon thread named ``gpuwork-<name>``; an exception is logged, never raised."""
    def guarded() -> None:
        try:
            target()
        except Exception:  # noqa: BLE001 - the target shows its own errors; never kill the kernel
            _log.exception("%s failed", name)

    thread = threading.Thread(target=guarded, name=f"gpuwork-{name}", daemon=True)
    thread.start()
    return thread



__all__ = [
    "UPLOAD_LIMIT_BYTES",
    "CHECKBOX_LAYOUT",
    "LANGS",
    "MUTED",
    "NOTE_COLOR",
    "WIDE",
    "LiveFigure",
    "PLOTLY_BASIC_TRACES",
    "PLOTLY_BASIC_URL",
    "PLOTLY_MIME",
    "Panel",
    "describe",
    "display",
    "error_html",
    "friendly",
    "heading_html",
    "html_output",
    "note_html",
    "is_public",
    "one_line",
    "plan_caption",
    "public_text",
    "plan_from",
    "plotly_bundle",
    "quiet",
    "run_in_thread",
    "set_public",
    "setup_notebook",
    "start_plan",
    "table_html",
    "ui",
    "upload_content",
    "upload_json",
    "upload_name",
]
