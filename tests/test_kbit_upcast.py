"""TrainPlan.kbit_upcast: whether a QLoRA run keeps peft's fp32 upcast of the non-quantised parameters
(prepare_model_for_kbit_training). Without it embeddings, norms and lm_head stay 16-bit, the norms return a 16-bit
stream and Linear4bit returns its input's dtype (docs/memory_misses.md#the-kbit_upcast-field); the real-step check
with bitsandbytes is tests/test_qlora_real_step.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwork import TrainPlan, estimate_memory
from gpuwork.errors import PlanError
from gpuwork.estimate.memory import _block_activations, memory_dtypes, stack_profile
from gpuwork.facts.configs import import_configs
from gpuwork.facts.configs.base import Reader
from gpuwork.facts.configs.hf import _claim_trl_kbit_upcast
from gpuwork.facts.model import spec_for_plan
from gpuwork.facts.spec import count_params
from gpuwork.present.messages import render

OFFICIAL = Path(__file__).resolve().parent / "data" / "official_configs"
QLORA = TrainPlan(model="llama-3.2-1b", method="qlora", seq_len=1024, batch_size=2, lora_targets="all-linear")


def _per_block(plan: TrainPlan) -> int:
    spec = spec_for_plan(plan)
    profile = stack_profile(plan, spec)
    return _block_activations(spec, plan, memory_dtypes(plan, profile), profile).per_layer_frozen


@pytest.mark.parametrize("precision", ["bf16", "bf16-mixed", "fp16-mixed"])
def test_without_the_upcast_the_estimate_moves_by_the_derived_bytes(precision):
    kept = QLORA.replace(precision=precision)
    cast_back = kept.replace(kbit_upcast=False)
    spec = spec_for_plan(kept)
    counts = count_params(spec, kept)
    up, down = estimate_memory(kept), estimate_memory(cast_back)
    # embeddings, norms and lm_head: 2 bytes a parameter instead of 4; the packed 4-bit weights, their constants
    # and the fp32 adapters are the same
    assert up.breakdown["weights"] - down.breakdown["weights"] == 2 * (counts.base - counts.quantized)
    # a block saves what plain LoRA's block on the 16-bit base saves (16-bit stream and linear outputs)
    assert _per_block(cast_back) == _per_block(cast_back.replace(method="lora"))
    assert _per_block(cast_back) < _per_block(kept)
    # under autocast no 16-bit copy of an fp32 lm_head is kept until the head's backward
    copy = 2 * spec.vocab_size * spec.hidden_size if kept.precision.is_mixed else 0
    assert up.breakdown["autocast_weight_copies"] - down.breakdown["autocast_weight_copies"] == copy


def test_the_field_matters_for_qlora_only_and_takes_a_bool():
    lora = TrainPlan(model="llama-3.2-1b", method="lora", precision="bf16-mixed")
    assert estimate_memory(lora).peak_allocated_bytes == estimate_memory(
        lora.replace(kbit_upcast=False)).peak_allocated_bytes
    with pytest.raises(PlanError) as info:
        TrainPlan(method="qlora", kbit_upcast="no")
    assert info.value.field == "kbit_upcast" and "kbit_upcast" in str(info.value)
    assert TrainPlan.from_dict({**QLORA.as_dict(), "kbit_upcast": False}).kbit_upcast is False


def _upcast_claim(imported):
    return next(c for c in imported.claims if c.field == "kbit_upcast")


def test_axolotl_casts_back_and_says_where():
    imported = import_configs([OFFICIAL / "axolotl" / "examples" / "llama-3" / "qlora-1b.yml"])
    claim = _upcast_claim(imported)
    assert claim.value is False and claim.rule.code == "config.rule.axolotl_kbit_upcast"
    line = next(render(x, "ru") for x in imported.report() if render(x, "en").startswith("  kbit_upcast = false"))
    assert "loaders/model.py @2b66ee1" in line and "эмбеддинги" in line


def test_trl_decides_by_its_version():
    imported = import_configs([OFFICIAL / "alignment-handbook" / "recipes" / "zephyr-7b-beta" / "sft" /
                               "config_qlora.yaml"])
    claim = _upcast_claim(imported)
    assert claim.rule.code in ("config.rule.trl_no_kbit_preparation", "config.rule.trl_kbit_preparation")
    for version, kept in (("0.26.2", True), ("0.7.5", True), ("0.27.0", False), ("1.16.0", False)):
        reader = Reader("sft.yaml", {})
        _claim_trl_kbit_upcast(reader, version)
        (only,) = reader.claims
        assert only.value is kept and only.rule["version"] == version


def test_a_file_that_cannot_tell_takes_peft_s_default_and_says_so(tmp_path):
    config = tmp_path / "qlora.yaml"
    config.write_text("model_name_or_path: meta-llama/Llama-3.2-1B\nstage: sft\nfinetuning_type: lora\n"
                      "quantization_bit: 4\ncutoff_len: 1024\nbf16: true\n", encoding="utf-8")
    imported = import_configs([config])
    claim = _upcast_claim(imported)
    assert claim.value is True and claim.rule.code == "config.rule.kbit_upcast_unknown"
    text = {lang: [render(x, lang) for x in imported.report()] for lang in ("en", "ru")}
    assert any(x.startswith("  kbit_upcast = true") and "--no-kbit-upcast" in x for x in text["en"])
    assert any(x.startswith("  kbit_upcast = true") and "повышение точности" in x for x in text["ru"])
    # LoRA: no claim, nothing defaulted
    config.write_text(config.read_text(encoding="utf-8").replace("quantization_bit: 4\n", ""), encoding="utf-8")
    lora = import_configs([config])
    assert all(c.field != "kbit_upcast" for c in lora.claims) and "kbit_upcast" not in lora.defaulted()


def test_the_cli_takes_no_kbit_upcast():
    def run(*flags: str) -> dict:
        done = subprocess.run([sys.executable, "-m", "gpuwork", "estimate", "--model", "tiny-llama", "--method",
                               "qlora", "--seq-len", "256", "--json", *flags], capture_output=True, text=True,
                              timeout=120, check=True)
        return json.loads(done.stdout)

    kept, cast_back = run(), run("--no-kbit-upcast")
    assert kept["plan"]["kbit_upcast"] is True and cast_back["plan"]["kbit_upcast"] is False
    assert cast_back["memory"]["peak_allocated_bytes"] < kept["memory"]["peak_allocated_bytes"]


def test_the_sizing_form_shows_the_field_for_qlora_only():
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm({"model": "llama-3.2-1b", "method": "lora", "seq_len": 1024})
    box = form.controls["kbit_upcast"]
    assert box.layout.display == "none" and box.value is True
    box.value = False  # hidden: LoRA does not read it
    assert form.error is None and form.plan is not None and form.plan.kbit_upcast is True
    form.controls["method"].value = "qlora"
    assert box.layout.display is None
    assert form.error is None and form.plan is not None and form.plan.kbit_upcast is False
    cast_back = form.memory.peak_allocated_bytes
    box.value = True
    assert form.plan.kbit_upcast is True and form.memory.peak_allocated_bytes > cast_back
    assert box.description == "fp32 embeddings, norms, head" and "axolotl" in box.tooltip
    form.set_lang("ru")
    assert box.description == "Эмбеддинги, нормы, голова в fp32" and "Снимите флажок" in box.tooltip
