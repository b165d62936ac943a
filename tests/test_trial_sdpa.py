"""The plan's SDPA backend in the measured trial (gpuwork.measure.sdpa): a real tiny Llama on the CPU, a few steps.

torch's CPU SDPA has FlashAttention's CPU kernel and the math fallback only (aten sdp_utils_cpp.cpp), so on this
machine "flash" and "auto" run the flash CPU kernel, and "cudnn" / "efficient" are refused before any step.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from gpuwork.cli.trial import format_trial  # noqa: E402
from gpuwork.facts.model import load_config  # noqa: E402
from gpuwork.measure import sdpa  # noqa: E402
from gpuwork.measure.calibration import _plan_as_run  # noqa: E402
from gpuwork.measure.hf import infer_plan  # noqa: E402
from gpuwork.measure.trial import TrialError, TrialRecord, run_trial  # noqa: E402
from gpuwork.plan import SdpaBackend, TrainPlan  # noqa: E402
from gpuwork.present.messages import render  # noqa: E402

FLASH_CPU = "aten::_scaled_dot_product_flash_attention_for_cpu"
MATH = "aten::_scaled_dot_product_attention_math"


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here trains: one torch thread (see conftest)."""


def plan(**changes) -> TrainPlan:
    base = dict(model="tiny-llama", method="full", precision="fp32", seq_len=32, batch_size=2, attention="sdpa")
    base.update(changes)
    return TrainPlan(**base)


def flags() -> tuple[bool, bool, bool, bool]:
    b = torch.backends.cuda
    return b.flash_sdp_enabled(), b.mem_efficient_sdp_enabled(), b.math_sdp_enabled(), b.cudnn_sdp_enabled()


def profiled(p: TrainPlan, **options) -> tuple[TrialRecord, set[str], list[tuple[bool, ...]]]:
    """The trial's record, the aten ops its steps ran, and torch's SDPA flags at each step."""
    seen: list[tuple[bool, ...]] = []
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        record = run_trial(p, steps=2, warmup=1, device="cpu", checkpoint=False, callbacks=[lambda m: seen.append(flags())],
                           **options)
    return record, {e.key for e in prof.key_averages()}, seen


def test_flash_runs_the_flash_cpu_kernel_under_its_restriction_and_records_it() -> None:
    before = flags()
    record, ops, seen = profiled(plan(sdpa_backend="flash"))
    assert FLASH_CPU in ops and FLASH_CPU + "_backward" in ops
    assert MATH not in ops
    # every step ran with cuDNN's attention left out (flash, memory-efficient and math on); the caller's flags back
    assert seen == [(True, True, True, False)] * 3
    assert flags() == before
    p = record.protocol
    assert (p.attention_used, p.sdpa_backend_requested, p.sdpa_backend_used) == ("sdpa", "flash", "flash")
    assert p.substitutions == ()


def test_auto_forces_nothing_and_torch_picks_as_before() -> None:
    before = flags()
    record, ops, seen = profiled(plan(sdpa_backend="auto"))
    assert seen == [before] * 3  # no flag changed during the steps
    assert FLASH_CPU in ops  # torch's own CPU order: FlashAttention's kernel first
    assert (record.protocol.sdpa_backend_requested, record.protocol.sdpa_backend_used) == ("auto", "flash")


@pytest.mark.parametrize("backend", ["cudnn", "efficient"])
def test_a_backend_the_cpu_lacks_is_one_message_before_any_step(tmp_path: Path, backend: str) -> None:
    steps: list[object] = []
    with pytest.raises(TrialError) as info:
        run_trial(plan(sdpa_backend=backend), steps=2, warmup=1, device="cpu", out_dir=tmp_path,
                  callbacks=[steps.append])
    assert info.value.msg.code == "error.trial.sdpa_needs_cuda"
    assert steps == [] and list(tmp_path.iterdir()) == []  # no step, no record, no checkpoint
    en, ru = info.value.text("en"), info.value.text("ru")
    assert f"sdpa_backend='{backend}' needs a CUDA GPU" in en and "`flash` or `auto`" in en
    assert f"sdpa_backend='{backend}' требует GPU с CUDA" in ru
    assert torch.backends.cuda.cudnn_sdp_enabled() and torch.backends.cuda.mem_efficient_sdp_enabled()


def test_a_refusal_during_the_steps_is_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    # the check passed (as if the device could run it), then torch refuses the model's first call
    monkeypatch.setattr(sdpa, "device_problem", lambda backend, device: None)
    monkeypatch.setattr(sdpa, "torch_choice", lambda *a, **k: ("efficient", ""))
    with pytest.raises(TrialError) as info:
        run_trial(plan(sdpa_backend="efficient"), steps=1, warmup=0, device="cpu", checkpoint=False)
    assert info.value.msg.code == "error.trial.sdpa_no_kernel_run"
    assert "No viable backend" in info.value.text("en") and "sdpa_backend='efficient'" in info.value.text("ru")
    assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.math_sdp_enabled()  # flags restored


def test_torch_choice_names_the_backend_or_torchs_reasons() -> None:
    config, _ = load_config("tiny-llama")
    assert sdpa.torch_choice(config, 32, torch.float32, torch.device("cpu")) == ("flash", "")
    # the CPU flash kernel refuses dropout: math when it is enabled, no kernel when flash alone is
    assert sdpa.torch_choice(config, 32, torch.float32, torch.device("cpu"), dropout=0.1) == ("math", "")
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        used, reasons = sdpa.torch_choice(config, 32, torch.float32, torch.device("cpu"), dropout=0.1)
    assert used is None and "dropout" in reasons.lower()
    with pytest.raises(LookupError):
        sdpa.torch_choice({"model_type": "llama"}, 32, torch.float32, torch.device("cpu"))


def test_no_kernel_at_the_check_is_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sdpa, "torch_choice", lambda *a, **k: (None, "Flash attention does not support dropout"))
    subs: list[object] = []
    with pytest.raises(TrialError) as info:
        sdpa.check(plan(sdpa_backend="flash"), "sdpa", torch.device("cpu"), torch.float32, {}, subs)
    assert info.value.msg.code == "error.trial.sdpa_no_kernel"
    assert "does not support dropout" in info.value.text("en") and "float32" in info.value.text("ru")


def test_the_order_passes_a_backend_over_as_a_substitution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sdpa, "torch_choice", lambda *a, **k: ("math", ""))
    subs: list[object] = []
    assert sdpa.check(plan(sdpa_backend="flash"), "sdpa", torch.device("cpu"), torch.float32, {}, subs) == "math"
    assert [s.code for s in subs] == ["trial.sub.sdpa_backend"]
    assert render(subs[0], "en").startswith("sdpa_backend flash -> math")
    # attention the model does not run on SDPA: nothing asked of torch
    assert sdpa.check(plan(attention="eager"), "eager", torch.device("cpu"), torch.float32, {}, subs) == ""


def test_flash_attention_falling_back_to_sdpa_forces_no_backend() -> None:
    p = plan(attention="flash")  # no CUDA here: the trial runs it on SDPA, torch picking
    assert sdpa.restriction(p, "sdpa") is None
    assert sdpa.restriction(plan(sdpa_backend="cudnn"), "sdpa") is SdpaBackend.CUDNN
    assert sdpa.restriction(plan(sdpa_backend="auto"), "sdpa") is None


def test_the_record_round_trips_the_fields_and_an_old_record_loads(tmp_path: Path) -> None:
    record = run_trial(plan(sdpa_backend="flash"), steps=1, warmup=0, device="cpu", checkpoint=False,
                       out_dir=tmp_path)
    again = TrialRecord.from_json(Path(record.saved_to))
    assert (again.protocol.sdpa_backend_requested, again.protocol.sdpa_backend_used) == ("flash", "flash")
    data = json.loads(record.to_json())
    for key in ("sdpa_backend_requested", "sdpa_backend_used"):
        del data["protocol"][key]  # a record written before the fields
    old = TrialRecord.from_json(json.dumps(data))
    assert (old.protocol.sdpa_backend_requested, old.protocol.sdpa_backend_used) == ("", "")
    assert "kernel" not in format_trial(old).split("\n")[1]
    # the summary says which backend ran, in both languages
    assert "attention: sdpa, kernel flash (sdpa_backend flash)" in format_trial(record)
    assert "внимание: sdpa, ядро flash (sdpa_backend flash)" in format_trial(record, "ru")


def test_the_comparison_prices_the_backend_that_ran() -> None:
    p = plan(sdpa_backend="flash")

    def record(used: str, attention: str = "sdpa") -> SimpleNamespace:
        protocol = SimpleNamespace(attention_used=attention, sdpa_backend_used=used)
        return SimpleNamespace(plan=p, protocol=protocol, source="gpuwork trial", world_size=1,
                               environment=SimpleNamespace(switches=()))

    assert _plan_as_run(record("cudnn"), None).sdpa_backend is SdpaBackend.CUDNN
    assert _plan_as_run(record("efficient"), None).sdpa_backend is SdpaBackend.EFFICIENT
    assert _plan_as_run(record("math"), None).sdpa_backend is SdpaBackend.FLASH  # no price of its own: as planned
    assert _plan_as_run(record(""), None).sdpa_backend is SdpaBackend.FLASH  # an old record
    cudnn = p.replace(sdpa_backend=SdpaBackend.CUDNN)
    assert _plan_as_run(record("flash"), cudnn).sdpa_backend is SdpaBackend.FLASH


def test_the_callback_plan_reads_the_runs_restriction(tmp_path: Path) -> None:
    config, _ = load_config("tiny-llama")
    model = transformers.AutoModelForCausalLM.from_config(
        transformers.CONFIG_MAPPING[config["model_type"]].from_dict(dict(config)), attn_implementation="sdpa")
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        p, inferred = infer_plan(model, seq_len=64, batch_size=2, out=tmp_path)
    assert p.sdpa_backend is SdpaBackend.CUDNN
    assert inferred["sdpa_backend"]["from"].startswith("torch.backends.cuda SDPA flags: cudnn=on, flash=off")
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        assert infer_plan(model, seq_len=64, batch_size=2, out=tmp_path)[0].sdpa_backend is SdpaBackend.EFFICIENT
    p, inferred = infer_plan(model, seq_len=64, batch_size=2, out=tmp_path)  # nothing forced: the default
    assert p.sdpa_backend is SdpaBackend.FLASH and "sdpa_backend" not in inferred
