"""Held-out cases: published runs whose predictions were committed before their figures were read.

Two kinds, one protocol: step time (``time_heldout.json``, scored in docs/time_accuracy.md) and peak memory
(``memory_heldout.json``, scored in docs/accuracy.md). The protocol (docs/time_accuracy.md, "Held-out cases"):

1. The model is frozen at a commit (``frozen_commit``).
2. A collector who does not build the model records each run's configuration; the published figure is kept
   outside the repository.
3. ``scripts/heldout.py predict`` prices every configuration with the frozen model and writes the predictions
   into ``facts/data/time_heldout.json``, which is committed with no published figure in it.
4. ``scripts/heldout.py reveal`` adds the published figures and the hash of the commit that holds the
   predictions (``predictions_commit``); the page scores the committed predictions, not today's model.

``protocol_problems`` checks steps 1-4 against the repository's history: the predictions commit descends from
the frozen one, nothing under ``gpuwork/`` but this file and model presets changed between them, and the file at
the predictions commit holds the same predictions and no figure. Once the model changes after a set is revealed,
the set counts as seen: the page shows today's error beside the frozen one.

A case whose record was later found to misdescribe what its source ran may carry a re-reading (``reread``: the
fields it should have been read with, why, and the source's own text). It is kept beside the frozen
configuration, never in it: the protocol check and the frozen score stay as they were, and the pages show today's
model on both readings.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuwork.errors import GpuworkError, PlanError
from gpuwork.estimate.comm import coerce_link
from gpuwork.facts import reading
from gpuwork.facts.catalog import Link
from gpuwork.facts.paths import bundled_data_dir
from gpuwork.measure.time_cases import METRICS, STEPS_ONLY, Covers, TimeCase, case_gpu
from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan
from gpuwork.units import is_whole

HELDOUT_NAME = "time_heldout.json"
MEMORY_HELDOUT_NAME = "memory_heldout.json"
# one file per kind of estimate; memory cases predict a peak in bytes as the source measured it
_FILES = {"time": HELDOUT_NAME, "memory": MEMORY_HELDOUT_NAME}
KINDS = tuple(_FILES)
MEMORY_METRICS = ("device", "reserved", "allocated")  # nvidia-smi total, max_memory_reserved, max_memory_allocated
_PREDICTED = {"time": "predicted_tokens_per_s_per_gpu", "memory": "predicted_bytes"}
# what may change between the frozen model and its predictions: the held-out files and model presets
_ALLOWED_BETWEEN = (*("gpuwork/facts/data/" + name for name in _FILES.values()), "gpuwork/facts/data/models/")
# a published figure: never in the predictions commit. A run's ``samples`` is its size, a configuration fact that
# ``scripts/heldout.py predict`` keeps beside ``covers`` (the time it spans is ``measured_time_s``)
_FIGURE_KEYS = ("measured", "measured_time_s", "quote", "measured_bytes")


# what a re-reading may set (the case's configuration, never its prediction or figure) and what it must say
REREAD_FIELDS = ("plan", "gpu_id", "nodes", "network", "metric", "moe_experts", "covers", "model_config", "link",
                 "cache_emptied")
_REREAD_KEYS = (*REREAD_FIELDS, "why", "evidence")


def heldout_path(kind: str = "time") -> Path:
    return bundled_data_dir() / _FILES[kind]


class CaseError(GpuworkError, ValueError):
    """A held-out case's field is malformed: names the case and the field."""

    def __init__(self, case: str, field: str, message: Msg):
        super().__init__(message)
        self.case = case
        self.field = field


class RereadError(CaseError):
    """A held-out case's re-reading is malformed: names the case and the field."""


@dataclass(frozen=True)
class Evidence:
    """Where a re-reading comes from: the source's address and the line it quotes."""

    url: str
    quote: str


@dataclass(frozen=True)
class Reread:
    """A case's configuration as it should have been read, kept apart from the frozen one."""

    plan: TrainPlan
    gpu_id: str
    nodes: int
    network: str | None
    metric: str
    moe_experts: str | None
    covers: Covers  # what the figure's time spans, as the source's code settles it (time cases)
    changed: tuple[tuple[str, str, str], ...]  # (field, as recorded, as re-read), e.g. ("plan.precision", ...)
    why: str
    evidence: tuple[Evidence, ...]
    model_config: dict[str, Any] | None = None  # the case's config.json values with the re-read keys applied
    link: str | None = None  # the GPUs' link inside a node (estimate_time's link); None: the GPU's best
    cache_emptied: bool = False  # a memory case's harness emptied the cache before the measured step


@dataclass(frozen=True)
class HeldoutCase:
    """One held-out run: its configuration, the frozen model's prediction and, once revealed, the figure."""

    name: str
    source_id: str
    source: str
    gpu_id: str
    plan: TrainPlan
    nodes: int
    network: str | None
    metric: str
    predicted: float  # tokens/s per GPU (time) or bytes (memory), by the model at the set's frozen commit
    notes: str = ""
    moe_experts: str | None = None
    measured: float | None = None  # in ``metric``, as the source reports it (memory: bytes)
    measured_time_s: float | None = None
    samples: int | None = None
    model_config: dict[str, Any] | None = None  # config.json values of a model with no preset
    # what the figure's time spans beyond the steps: read with the figure, not part of the configuration
    covers: Covers = STEPS_ONLY
    reread: Reread | None = None  # the configuration as re-read after the reveal (None: as recorded)
    link: str | None = None  # the GPUs' link inside a node where the source names it (None: the GPU's best)
    # how a memory case's peak was measured, not what the run trains: the harness called torch.cuda.empty_cache()
    # (and reset the peaks) between its warm-up and the measured step (estimate.memory's ``cache_emptied``)
    cache_emptied: bool = False

    @property
    def revealed(self) -> bool:
        return self.measured is not None

    def as_reread(self) -> HeldoutCase:
        """The case with its re-read configuration (itself when it has none); prediction and figure unchanged."""
        r = self.reread
        if r is None:
            return self
        return dataclasses.replace(self, plan=r.plan, gpu_id=r.gpu_id, nodes=r.nodes, network=r.network,
                                   metric=r.metric, moe_experts=r.moe_experts, covers=r.covers,
                                   model_config=r.model_config, link=r.link, cache_emptied=r.cache_emptied,
                                   reread=None)

    def time_case(self) -> TimeCase:
        """The case as a published TimeCase (a time case, only once revealed)."""
        if self.measured is None or self.metric in MEMORY_METRICS:
            raise ValueError(f"held-out case {self.name!r} has no published figure yet")
        return TimeCase(name=self.name, plan=self.plan, gpu_id=self.gpu_id, metric=self.metric,
                        measured=self.measured, source=self.source, source_id=self.source_id, notes=self.notes,
                        measured_time_s=self.measured_time_s, samples=self.samples, moe_experts=self.moe_experts,
                        nodes=self.nodes, network=self.network, model_config=self.model_config, covers=self.covers,
                        link=self.link)


@dataclass(frozen=True)
class HeldoutSet:
    name: str
    frozen_commit: str
    predictions_commit: str | None  # set when the figures are revealed
    cases: tuple[HeldoutCase, ...]
    # cases the collectors found but that were left out before the predictions: (name, source_id, why)
    left_out: tuple[tuple[str, str, str], ...] = ()
    kind: str = "time"  # one of KINDS

    @property
    def revealed(self) -> bool:
        return bool(self.cases) and all(c.revealed for c in self.cases)


def plan_from_json(fields: dict[str, Any]) -> TrainPlan:
    fields = dict(fields)
    if isinstance(fields.get("lora_targets"), list):
        fields["lora_targets"] = tuple(fields["lora_targets"])
    return TrainPlan(**fields)


def cache_emptied_flag(case: str, value: Any, error: type[CaseError] = CaseError) -> bool:
    """A memory case's ``cache_emptied`` (true or false; absent: false).

    Raises:
        CaseError: (``error``) anything but a JSON boolean, naming the case and the field.
    """
    if value is None:
        return False
    if not isinstance(value, bool):
        raise error(case, "cache_emptied", msg("error.heldout.cache_emptied", case=case, value=repr(value)))
    return value


def _case(raw: dict[str, Any], kind: str = "time") -> HeldoutCase:
    metrics = METRICS if kind == "time" else MEMORY_METRICS
    if raw["metric"] not in metrics:
        raise ValueError(f"held-out case {raw['name']!r}: metric {raw['metric']!r} is not one of {metrics}")
    case = HeldoutCase(
        name=raw["name"], source_id=raw["source_id"], source=raw["source"], gpu_id=raw.get("gpu_id") or "",
        plan=plan_from_json(raw["plan"]), nodes=int(raw.get("nodes") or 1), network=raw.get("network"),
        metric=raw["metric"], predicted=float(raw[_PREDICTED[kind]]), notes=raw.get("notes", ""),
        moe_experts=raw.get("moe_experts"), measured=raw.get("measured"), measured_time_s=raw.get("measured_time_s"),
        samples=raw.get("samples"), model_config=raw.get("model_config"), covers=Covers.parse(raw.get("covers")),
        link=raw.get("link"), cache_emptied=_memory_flag(raw["name"], raw, kind == "memory"))
    if raw.get("reread") is None:
        return case
    return dataclasses.replace(case, reread=parse_reread(case, raw["reread"], raw["plan"], metrics))


_PLAN_FIELDS = tuple(f.name for f in dataclasses.fields(TrainPlan))


def _shown(value: Any) -> str:
    value = getattr(value, "value", value)
    return ", ".join(map(str, value)) if isinstance(value, tuple) else str(value)


def _reread_plan(case: HeldoutCase, changes: Any, recorded: dict[str, Any]) -> TrainPlan:
    name = case.name
    if not isinstance(changes, dict):
        raise RereadError(name, "plan", msg("error.heldout.reread_not_object", case=name, field="plan"))
    for key in changes:
        if key not in _PLAN_FIELDS:
            raise RereadError(name, f"plan.{key}", msg("error.heldout.reread_unknown_field", case=name,
                                                       field=f"plan.{key}", allowed=", ".join(_PLAN_FIELDS)))
    try:
        return plan_from_json({**recorded, **changes})
    except PlanError as exc:
        field = f"plan.{exc.field}"
        problem = exc.msg if exc.msg is not None else str(exc)
        raise RereadError(name, field, msg("error.heldout.reread_bad_value", case=name, field=field,
                                           problem=problem)) from None


def _evidence(name: str, raw: Any) -> tuple[Evidence, ...]:
    bad = RereadError(name, "evidence", msg("error.heldout.reread_evidence", case=name))
    if not isinstance(raw, list) or not raw:
        raise bad
    out = []
    for item in raw:
        if not isinstance(item, dict) or set(item) != {"url", "quote"} or not all(
                isinstance(item[k], str) and item[k].strip() for k in ("url", "quote")) \
                or not item["url"].startswith("https://"):
            raise bad
        out.append(Evidence(url=item["url"], quote=item["quote"]))
    return tuple(out)


def _known_gpu(gpu_id: str) -> bool:
    try:
        case_gpu(gpu_id)
    except GpuworkError:
        return False
    return True


def _reread_covers(case: HeldoutCase, raw: dict[str, Any], metrics: tuple[str, ...]) -> Covers:
    """What the figure spans as re-read (a time case's ``covers`` words); the recorded span when not re-read."""
    if "covers" not in raw:
        return case.covers
    if metrics == MEMORY_METRICS:  # a peak spans no time
        raise RereadError(case.name, "covers", msg("error.heldout.reread_unknown_field", case=case.name,
                                                   field="covers", allowed=", ".join(
                                                       k for k in _REREAD_KEYS if k != "covers")))
    try:
        return Covers.parse(raw["covers"])
    except ValueError:
        raise RereadError(case.name, "covers", msg("error.heldout.reread_covers", case=case.name,
                                                   value=repr(raw["covers"]))) from None


def _reread_link(case: HeldoutCase, raw: dict[str, Any], metrics: tuple[str, ...], gpu_id: str) -> str | None:
    """The GPUs' link inside a node as re-read (a time case's; one the GPU can have); the recorded one when not
    re-read."""
    if "link" not in raw:
        return case.link
    if metrics == MEMORY_METRICS:  # the memory estimate reads no link
        raise RereadError(case.name, "link", msg("error.heldout.reread_unknown_field", case=case.name, field="link",
                                                 allowed=", ".join(k for k in _REREAD_KEYS if k != "link")))
    link = raw["link"]
    try:
        coerce_link(link, case_gpu(gpu_id))
    except (GpuworkError, TypeError):
        raise RereadError(case.name, "link", msg("error.heldout.reread_choice", case=case.name, field="link",
                                                 value=repr(link), allowed=", ".join(x.value for x in Link))) from None
    return link


def _memory_flag(name: str, raw: dict[str, Any], memory: bool, error: type[CaseError] = CaseError) -> bool:
    """``raw``'s ``cache_emptied`` (a case's or a re-reading's), which only a memory case may carry: it says how a
    peak was measured."""
    if "cache_emptied" in raw and not memory:
        raise error(name, "cache_emptied", msg("error.heldout.cache_emptied_time", case=name))
    return cache_emptied_flag(name, raw.get("cache_emptied"), error)


def _reread_model_config(case: HeldoutCase, raw: dict[str, Any]) -> tuple[dict[str, Any] | None, tuple[
        tuple[str, str, str], ...]]:
    """The case's config.json values with the re-read keys applied, and each key that changed (a case with a
    model_config only: a preset model is named by the plan)."""
    if "model_config" not in raw:
        return case.model_config, ()
    changes = raw["model_config"]
    if case.model_config is None or not isinstance(changes, dict) or not changes:
        raise RereadError(case.name, "model_config", msg("error.heldout.reread_model_config", case=case.name))
    merged = {**case.model_config, **changes}
    changed = tuple((f"model_config.{k}", _shown(case.model_config.get(k)), _shown(v)) for k, v in changes.items()
                    if case.model_config.get(k) != v)
    return merged, changed


def parse_reread(case: HeldoutCase, raw: Any, recorded_plan: dict[str, Any],
                 metrics: tuple[str, ...]) -> Reread:
    """``case``'s re-reading from its ``reread`` object; raises RereadError naming the case and the field."""
    name = case.name
    if not isinstance(raw, dict):
        raise RereadError(name, "reread", msg("error.heldout.reread_not_object", case=name, field="reread"))
    for key in raw:
        if key not in _REREAD_KEYS:
            raise RereadError(name, key, msg("error.heldout.reread_unknown_field", case=name, field=key,
                                             allowed=", ".join(_REREAD_KEYS)))
    if not isinstance(raw.get("why"), str) or not raw["why"].strip():
        raise RereadError(name, "why", msg("error.heldout.reread_why", case=name))
    evidence = _evidence(name, raw.get("evidence"))
    plan = _reread_plan(case, raw.get("plan", {}), recorded_plan)
    gpu_id, nodes = raw.get("gpu_id", case.gpu_id), raw.get("nodes", case.nodes)
    network, metric = raw.get("network", case.network), raw.get("metric", case.metric)
    moe_experts = raw.get("moe_experts", case.moe_experts)
    covers = _reread_covers(case, raw, metrics)
    model_config, config_changed = _reread_model_config(case, raw)
    if metric not in metrics:
        raise RereadError(name, "metric", msg("error.heldout.reread_choice", case=name, field="metric",
                                              value=repr(metric), allowed=", ".join(metrics)))
    # a memory case may be recorded without its GPU (the source names none); only a re-read GPU is checked
    if "gpu_id" in raw and (not isinstance(gpu_id, str) or not _known_gpu(gpu_id)):
        raise RereadError(name, "gpu_id", msg("error.heldout.reread_gpu", case=name, value=repr(gpu_id)))
    link = _reread_link(case, raw, metrics, gpu_id)
    cache_emptied = _memory_flag(name, raw, metrics == MEMORY_METRICS, RereadError) if "cache_emptied" in raw else (
        case.cache_emptied)
    if not is_whole(nodes, 1):
        raise RereadError(name, "nodes", msg("error.heldout.reread_nodes", case=name, value=repr(nodes)))
    for key, value in (("network", network), ("moe_experts", moe_experts)):
        if value is not None and (not isinstance(value, str) or not value):
            raise RereadError(name, key, msg("error.heldout.reread_text", case=name, field=key, value=repr(value)))
    changed = tuple((f"plan.{f}", _shown(getattr(case.plan, f)), _shown(getattr(plan, f)))
                    for f in _PLAN_FIELDS if getattr(case.plan, f) != getattr(plan, f))
    changed += tuple((f, _shown(getattr(case, f)), _shown(v)) for f, v in (
        ("gpu_id", gpu_id), ("nodes", nodes), ("network", network), ("metric", metric), ("moe_experts", moe_experts),
        ("cache_emptied", cache_emptied)) if getattr(case, f) != v)
    if link != case.link:  # an unset link is the GPU's best: named, so the page says what it was priced on
        changed += (("link", case.link or case_gpu(case.gpu_id).link.value, link or case_gpu(gpu_id).link.value),)
    if covers != case.covers:
        changed += (("covers", _shown(case.covers.words()), _shown(covers.words())),)
    changed += config_changed
    if not changed:
        raise RereadError(name, "reread", msg("error.heldout.reread_nothing", case=name))
    return Reread(plan=plan, gpu_id=gpu_id, nodes=nodes, network=network, metric=metric, moe_experts=moe_experts,
                  covers=covers, changed=changed, why=raw["why"].strip(), evidence=evidence, model_config=model_config,
                  link=link, cache_emptied=cache_emptied)


def parse_sets(document: dict[str, Any], kind: str = "time") -> tuple[HeldoutSet, ...]:
    return tuple(HeldoutSet(name=s["name"], frozen_commit=s["frozen_commit"],
                            predictions_commit=s.get("predictions_commit"),
                            cases=tuple(_case(c, kind) for c in s["cases"]),
                            left_out=tuple((x["name"], x["source_id"], x["why"]) for x in s.get("left_out", ())),
                            kind=kind)
                 for s in document.get("sets", ()))


def load_document(path: Path | None = None, kind: str = "time") -> dict[str, Any]:
    """The held-out document (``{"sets": [...]}``), read through the one bounded reader; none on file: no sets.

    Raises ``reading.ReadError`` (a ``GpuworkError``) for a file that is not a regular JSON object within bounds.
    """
    path = Path(path) if path is not None else heldout_path(kind)
    if not os.path.lexists(path):
        return {"sets": []}
    try:
        document = reading.load_json(path, reading.SMALL_JSON)
    except json.JSONDecodeError as exc:
        raise reading.ReadError(msg("error.file.bad_json", path=str(path), line=exc.lineno, column=exc.colno,
                                    reason=exc.msg), str(path)) from None
    if not isinstance(document, dict) or not isinstance(document.get("sets", []), list):
        raise reading.ReadError(msg("error.heldout.not_a_document", path=str(path),
                                    kind=type(document).__name__), str(path))
    return document


def heldout_sets(path: Path | None = None, kind: str = "time") -> tuple[HeldoutSet, ...]:
    """The held-out sets of one kind on file (bundled ``time_heldout.json`` or ``memory_heldout.json``)."""
    return parse_sets(load_document(path, kind), kind)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60, check=False)


def protocol_problems(held: HeldoutSet, repo: Path) -> list[str]:
    """What in ``repo``'s history contradicts the protocol for ``held`` (empty: it was followed)."""
    if held.predictions_commit is None:
        return [] if not any(c.revealed for c in held.cases) else [
            f"{held.name}: figures are on file but no predictions_commit names where the predictions were committed"]
    problems = []
    for commit in (held.frozen_commit, held.predictions_commit):
        if _git(repo, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
            return [f"{held.name}: commit {commit} is not in the repository"]
    if _git(repo, "merge-base", "--is-ancestor", held.frozen_commit, held.predictions_commit).returncode != 0:
        problems.append(f"{held.name}: the frozen commit is not an ancestor of the predictions commit")
    changed = _git(repo, "diff", "--name-only", held.frozen_commit, held.predictions_commit, "--", "gpuwork")
    for name in changed.stdout.split():
        if not name.startswith(_ALLOWED_BETWEEN):
            problems.append(f"{held.name}: {name} changed between the frozen model and its predictions")
    file = _FILES[held.kind]
    shown = _git(repo, "show", f"{held.predictions_commit}:gpuwork/facts/data/{file}")
    if shown.returncode != 0:
        return problems + [f"{held.name}: {file} is missing at the predictions commit"]
    then = next((s for s in json.loads(shown.stdout).get("sets", ()) if s["name"] == held.name), None)
    if then is None:
        return problems + [f"{held.name}: the set is missing at the predictions commit"]
    if then.get("frozen_commit") != held.frozen_commit:
        problems.append(f"{held.name}: the frozen commit differs from the one at the predictions commit")
    before = {c["name"]: c for c in then["cases"]}
    for case in held.cases:
        raw = before.get(case.name)
        if raw is None:
            problems.append(f"{held.name}: {case.name!r} was added after the predictions")
            continue
        if any(raw.get(k) is not None for k in _FIGURE_KEYS):
            problems.append(f"{held.name}: {case.name!r} had its published figure on file with the predictions")
        if float(raw[_PREDICTED[held.kind]]) != case.predicted:
            problems.append(f"{held.name}: {case.name!r}'s prediction changed after it was committed")
        was = _case({**raw, "measured": None}, held.kind)
        if (was.plan, was.gpu_id, was.nodes, was.network, was.metric, was.moe_experts, was.model_config,
                was.link, was.cache_emptied) != (case.plan, case.gpu_id, case.nodes, case.network, case.metric,
                                                 case.moe_experts, case.model_config, case.link, case.cache_emptied):
            problems.append(f"{held.name}: {case.name!r}'s configuration changed after the predictions")
    return problems


__all__ = ["HELDOUT_NAME", "KINDS", "MEMORY_HELDOUT_NAME", "MEMORY_METRICS", "REREAD_FIELDS", "CaseError", "Evidence",
           "HeldoutCase", "HeldoutSet", "Reread", "RereadError", "cache_emptied_flag", "heldout_path", "heldout_sets",
           "load_document", "parse_reread", "parse_sets", "plan_from_json", "protocol_problems"]
