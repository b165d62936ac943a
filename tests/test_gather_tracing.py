"""Block tracing inside the gather step (``facts.resolve``): every surface gets the same traced block and note.

A config of a family without a hand-written block model (a small GPT-NeoX, cut from Pythia's published
config) that no bundled profile matches: the CLI, the workbook's sizing panel and ``gpuwork.sizing`` give the
same memory and step time, the block is traced once per process, and a config whose block cannot be traced (a
small OLMoE: routed experts) gives the same note everywhere; a preset is never traced on the fly. Each test
writes its own config (a distinct width), so that the process's cache holds nothing of it beforehand.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwork.facts import block_profiles
from gpuwork.facts.block_profiles import (
    DEFAULT_CACHE,
    block_profile_note,
    matching_profile,
    plan_profile_key,
    register_tracer,
    registered_tracer,
    unregister_tracer,
)
from gpuwork.facts.model import load_config, spec_for_plan
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render

PYTHIA = Path(__file__).parent / "data" / "models" / "pythia-1b.json"
ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.needs("torch", "transformers")


def _neox(folder: Path, width: int) -> str:
    config = json.loads(PYTHIA.read_text(encoding="utf-8"))
    config.update(hidden_size=width, num_attention_heads=4, intermediate_size=4 * width, num_hidden_layers=2,
                  vocab_size=512, max_position_embeddings=1024)
    path = folder / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return str(path)


def _olmoe(folder: Path, width: int) -> str:
    config = {"model_type": "olmoe", "architectures": ["OlmoeForCausalLM"], "hidden_size": width,
              "intermediate_size": 2 * width, "num_attention_heads": 4, "num_key_value_heads": 4,
              "num_hidden_layers": 2, "vocab_size": 512, "num_experts": 4, "num_experts_per_tok": 2,
              "max_position_embeddings": 1024}
    path = folder / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return str(path)


def _plan(model: str) -> TrainPlan:
    return TrainPlan(model=model, method="full", precision="bf16", seq_len=256)


def _key(plan: TrainPlan) -> str:
    return plan_profile_key(load_config(plan.model)[0], plan)


def _flags(model: str, *extra: str) -> list[str]:
    return ["--model", model, "--method", "full", "--precision", "bf16", "--seq-len", "256", *extra]


def _cli(argv: list[str]) -> tuple[str, str]:
    from gpuwork.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(argv) == 0, err.getvalue()
    return out.getvalue(), err.getvalue()


@pytest.fixture
def counted():
    """The registered tracer (gpuwork.measure's, real), with the profile key of each call; put back afterwards."""
    real = registered_tracer()
    assert real is not None, "importing gpuwork registers the block tracer"
    calls: list[str] = []

    def tracer(plan):
        calls.append(_key(plan))
        return real(plan)

    register_tracer(tracer)
    yield calls
    register_tracer(real)


@pytest.fixture
def no_tracer():
    real = registered_tracer()
    unregister_tracer()
    yield
    if real is not None:
        register_tracer(real)


@pytest.mark.slow
def test_the_workbook_the_api_and_the_cli_size_the_traced_block_alike(tmp_path, counted) -> None:
    from gpuwork import sizing
    from gpuwork.ui.sizing import SizingForm

    model = _neox(tmp_path, 96)
    plan = _plan(model)
    form = SizingForm(plan)  # the workbook first: before, only the CLI traced
    assert form.error is None and form.result is not None
    assert counted == [_key(plan)]  # the what-if curves' LoRA plans are refused (no q_proj here): not traced
    spec = resolve(plan).spec
    profile = matching_profile(spec, plan)
    assert profile is not None and profile.model_type == "gpt_neox" and profile.source == form.plan.model
    note = block_profile_note(spec)
    assert note is not None and note.code == "cli.block_profile.traced" and note["seconds"] > 0
    assert html.escape(render(note, "en")) in form.details.value

    out, err = _cli(["plan", *_flags(model, "--json")])
    cli = json.loads(out)
    assert err.splitlines()[0] == render(note, "en")  # the same note: the trace the workbook made
    time = form.result.profile.time
    assert time is not None and time.gpu_id == cli["time"]["gpu_id"]
    assert time.step_time_s == cli["time"]["step_time_s"]
    assert form.result.memory.device_total_bytes == cli["memory"]["device_total_bytes"]
    est, _ = _cli(["estimate", *_flags(model, "--json")])
    assert json.loads(est)["memory"]["device_total_bytes"] == cli["memory"]["device_total_bytes"]
    api_plan = TrainPlan.from_dict(cli["plan"])
    assert sizing.estimate_time(api_plan, cli["time"]["gpu_id"]).step_time_s == cli["time"]["step_time_s"]
    assert sizing.estimate_memory(api_plan).device_total_bytes == cli["memory"]["device_total_bytes"]
    assert counted == [_key(plan)]  # once per config and plan shape in this process

    # the figures are the traced block's: the nearest family's block (no profiles at hand) gives others
    hand = spec_for_plan(api_plan)
    assert "block_profiles" not in hand.extras
    from gpuwork.estimate.memory import estimate_memory as pure_memory

    assert pure_memory(api_plan, hand).breakdown["activations"] != form.result.memory.breakdown["activations"]


@pytest.mark.slow
def test_a_block_that_cannot_be_traced_gives_one_note_on_every_surface(tmp_path, counted) -> None:
    from gpuwork.ui.sizing import SizingForm, details_html

    model = _olmoe(tmp_path, 80)
    plan = _plan(model)
    _, err_en = _cli(["estimate", *_flags(model)])
    _, err_ru = _cli(["estimate", *_flags(model, "--lang", "ru")])
    note = block_profile_note(resolve(plan).spec)
    assert note is not None and note.code == "cli.block_profile.failed" and note["model_type"] == "olmoe"
    assert note["error"].code == "error.trace.method"  # the tracer's own coded reason, rendered per language
    line_en, line_ru = render(note, "en"), render(note, "ru")
    assert "routed experts (MoE)" in line_en and "nearest family's block stands in" in line_en
    assert "ближайшего семейства" in line_ru and line_ru != line_en
    assert line_en in err_en.splitlines() and line_ru in err_ru.splitlines()
    form = SizingForm(plan, lang="ru")
    assert form.error is None and form.result is not None
    assert form.result.notes[0] == note
    assert html.escape(line_ru) in form.details.value
    assert html.escape(line_en) in details_html(form.result, "en")
    # the failure is kept: traced once, not again by each surface (the what-if curves' LoRA and QLoRA
    # plans of the workbook are blocks of their own, traced once each too)
    assert counted.count(_key(plan)) == 1 and len(counted) == len(set(counted))
    assert matching_profile(resolve(plan).spec, plan) is None  # the nearest family's block stands in


def test_without_a_tracer_the_gather_step_stays_pure(tmp_path, no_tracer) -> None:
    model = _neox(tmp_path, 112)
    plan = _plan(model)
    spec = resolve(plan).spec
    assert "block_profiles" not in spec.extras and block_profile_note(spec) is None
    assert DEFAULT_CACHE.note(plan_profile_key(load_config(model)[0], plan)) is None  # nothing traced
    assert not block_profiles._TRACER
    from gpuwork import sizing

    assert sizing.estimate_memory(plan).device_total_bytes > 0


def test_a_preset_is_never_traced_on_the_fly(counted) -> None:
    """qwen3 has no hand-written block and no bundled profile: the nearest family's block on every install, said."""
    plan = TrainPlan(model="qwen3-0.6b", method="full", precision="bf16", seq_len=256)
    spec = resolve(plan).spec
    assert spec.model_type == "qwen3" and matching_profile(spec, plan) is None
    note = block_profile_note(spec)
    assert note is not None and note.code == "cli.block_profile.preset" and note["model_type"] == "qwen3"
    _, err = _cli(["estimate", "--model", "qwen3-0.6b", "--method", "full", "--precision", "bf16", "--lang", "ru"])
    assert render(note, "ru") in err.splitlines()
    assert counted == []


@pytest.mark.slow
def test_without_torch_the_tracer_says_so(tmp_path) -> None:
    """The core install: the registered tracer cannot import torch and answers with the note to install it."""
    model = _neox(tmp_path, 128)
    script = f"""
import sys
sys.modules["torch"] = None  # as on the core install
from gpuwork.facts.block_profiles import registered_tracer
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render
profile, note = registered_tracer()(TrainPlan(model={model!r}, method="full", precision="bf16"))
print(profile is None, note.code)
print(render(note, "en"))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    first, line = done.stdout.splitlines()
    assert first == "True cli.block_profile.no_torch"
    assert line.startswith("'gpt_neox' has no hand-written block model; install gpuwork[trial] (torch)")
