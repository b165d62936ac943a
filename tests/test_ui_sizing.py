"""The sizing form without a browser: set ``.value`` on controls, assert on the plan, the results and fig.data."""

from __future__ import annotations

import html
import itertools
import json
import shutil
from pathlib import Path

import plotly.graph_objects as go
import pytest
from conftest import upload_value

from gpuwork.errors import ModelError
from gpuwork.estimate.memory import GIB
from gpuwork.facts.model import load_config
from gpuwork.facts.paths import ENV_DATA_DIR, bundled_data_dir
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory
from gpuwork.ui import sizing as ui_sizing
from gpuwork.ui.common import PLOTLY_MIME
from gpuwork.ui.offers import OffersPanel
from gpuwork.ui.sizing import (
    DEFAULT_GPUS,
    MANUAL_DEFAULTS,
    WHATIF_METHODS,
    SizingForm,
    manual_config,
    parse_config,
)

PLAN = {"model": "llama-3.2-1b", "method": "lora", "seq_len": 2048, "batch_size": 2}



def _device_total_y(form: SizingForm) -> float:
    fig = form.breakdown.figure
    return next(t.y[0] for t in fig.data if t.name == "Device total")



def test_form_starts_from_the_plan_and_shows_everything() -> None:
    form = SizingForm(PLAN)
    assert form.error is None and form.plan == TrainPlan.from_dict(PLAN)
    est = estimate_memory(form.plan)
    assert form.memory.device_total_bytes == est.device_total_bytes
    for text in ("Peak allocated", "Peak reserved", "Device total", "nvidia-smi", "max_memory_allocated"):
        assert text in form.totals.value
    assert f"{est.device_total_bytes / GIB:,.2f}" in form.totals.value
    assert _device_total_y(form) == pytest.approx(est.device_total_bytes / GIB)
    whatif = form.whatif.figure
    assert [t.name for t in whatif.data] == [*WHATIF_METHODS, "runs out"]
    lora = next(t for t in whatif.data if t.name == "lora")
    assert lora.y[list(lora.x).index(2048)] == pytest.approx(est.device_total_bytes / GIB)
    details = html.unescape(form.details.value)
    assert "Profile 01" in details and "Recommended disk" in details and "GPU-hours" in details
    assert {s.name for s in form.breakdown.figure.layout.shapes} == set(DEFAULT_GPUS)


def test_changes_update_plan_totals_and_figures() -> None:
    form = SizingForm(PLAN)
    first = form.memory.device_total_bytes
    form.controls["seq_len"].value = 8192
    assert form.plan.seq_len == 8192 and form.memory.device_total_bytes > first
    assert _device_total_y(form) == pytest.approx(form.memory.device_total_bytes / GIB)
    assert f"{form.memory.device_total_bytes / GIB:,.2f}" in form.totals.value

    form.controls["method"].value = "full"
    assert form.plan.method.value == "full"
    bars = {t.name: t.y[0] for t in form.breakdown.figure.data if t.type == "bar"}
    assert bars["optimizer states"] == pytest.approx(form.memory.breakdown["optimizer_states"] / GIB)
    assert form.controls["lora_r"].layout.display == "none"  # LoRA fields hide for full fine-tuning

    for name, value in (("precision", "bf16-mixed"), ("optimizer", "adamw-8bit"), ("grad_accum", 4),
                        ("grad_checkpointing", True), ("attention", "eager"), ("gpus", 4), ("sharding", "zero3"),
                        ("dataset_tokens", 10**9), ("epochs", 2.0)):
        form.controls[name].value = value
        assert form.error is None, (name, form.error)
    plan = form.plan
    assert (plan.gpus, plan.sharding.value, plan.grad_checkpointing, plan.epochs) == (4, "zero3", True, 2)

    form.axis.value = "batch_size"
    assert form.result.axis == "batch_size"
    assert list(form.whatif.figure.data[0].x) == list(form.result.whatif_values)
    assert 1 in form.result.whatif_values and 64 in form.result.whatif_values

    form.gpu_select.value = ("l4",)
    assert [s.name for s in form.breakdown.figure.layout.shapes] == ["l4"]


def test_invalid_input_is_one_red_line_and_the_form_recovers() -> None:
    form = SizingForm(PLAN)
    form.controls["seq_len"].value = 0  # must not raise
    assert form.plan is None and form.result is None
    assert form.error and form.error.startswith("Sequence length: 0") and "\n" not in form.error
    assert "seq_len" not in form.error  # the field by its label, not its attribute (issue 20, item 6)
    assert 'class="gpuwork-error"' in form.message.value and "Traceback" not in form.message.value
    assert "Peak allocated" not in form.totals.value
    form.controls["sharding"].value = "zero3"  # still invalid: one GPU
    assert "Sequence length" in form.error or "sharding" in form.error
    form.controls["seq_len"].value = 1024
    assert "sharding" in form.error and "gpus" in form.error
    form.controls["sharding"].value = "ddp"
    assert form.error is None and form.plan.seq_len == 1024 and form.message.value == ""
    assert "Peak allocated" in form.totals.value


def test_lora_targets_follow_the_architecture() -> None:
    form = SizingForm(PLAN)
    form.controls["model"].value = "gpt2"
    assert form.plan is None and "c_attn" in form.error and "all-linear" in form.error
    form.controls["lora_targets"].value = "c_attn"
    assert form.error is None and form.plan.lora_targets == ("c_attn",)


def test_unknown_model_and_a_bug_are_friendly(monkeypatch: pytest.MonkeyPatch) -> None:
    form = SizingForm({"model": "no-such-model-xyz"})
    assert form.plan is None and "no-such-model-xyz" in form.error

    def broken(plan: TrainPlan, axis: str = "seq_len") -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(ui_sizing, "size_plan", broken)
    form = SizingForm(PLAN)
    assert "unexpected error" in form.error and "boom" in form.error
    assert "Traceback" not in form.message.value


def test_uploaded_config_is_used_from_a_temporary_folder_owned_by_the_form() -> None:
    config, _ = load_config("tiny-llama")
    form = SizingForm(PLAN)
    form.upload.value = upload_value(json.dumps(config).encode())
    assert form.model_source.value == "upload" and form.error is None, form.error
    folder = Path(form.store.folder)
    assert Path(form.plan.model).parent.parent == folder and Path(form.plan.model).name == "config.json"
    assert form.memory.params.total == estimate_memory(TrainPlan(**{**PLAN, "model": "tiny-llama"})).params.total
    assert form.model_label() == "config.json" and "config.json" in form.breakdown.figure.data[0].x[0]

    form.upload.value = upload_value(b"{not json", "broken.json")
    assert "broken.json is not valid JSON" in form.error
    form.upload.value = upload_value(b'{"hidden_size": 8}', "other.json")
    assert "model_type" in form.error
    form.model_source.value = "preset"
    assert form.error is None and form.plan.model == "llama-3.2-1b"
    form.close()
    assert not folder.exists()


def test_upload_source_without_a_file_asks_for_one() -> None:
    form = SizingForm(PLAN)
    form.model_source.value = "upload"
    assert "config.json" in form.error
    assert form.upload.layout.display is None and form.controls["model"].layout.display == "none"
    form.close()


def test_manual_architecture_builds_a_config() -> None:
    form = SizingForm(PLAN)
    form.model_source.value = "manual"
    for name, value in {"hidden_size": 256, "num_hidden_layers": 4, "num_attention_heads": 8,
                        "num_key_value_heads": 4, "intermediate_size": 688, "vocab_size": 4096}.items():
        form.manual[name].value = value
    assert form.error is None, form.error
    tiny = estimate_memory(TrainPlan(**{**PLAN, "model": "tiny-llama"}))
    assert form.memory.params.total == tiny.params.total
    assert form.model_label().startswith("manual 4×256")
    form.manual["num_attention_heads"].value = 7
    assert "divisible" in form.error and "num_attention_heads" in form.error
    form.manual["num_attention_heads"].value = 8
    form.manual["vocab_size"].value = 0
    assert "vocab_size" in form.error
    form.close()


def test_manual_config_and_parse_config() -> None:
    config = manual_config(MANUAL_DEFAULTS)
    assert config["model_type"] == "llama" and config["hidden_size"] == 2048
    with pytest.raises(ModelError, match="num_key_value_heads"):
        manual_config({**MANUAL_DEFAULTS, "num_key_value_heads": 5})
    assert parse_config(b'{"model_type": "llama"}') == {"model_type": "llama"}


def test_language_switch_relabels_the_form() -> None:
    form = SizingForm(PLAN)
    form.set_lang("ru")
    assert form.controls["method"].description == "Метод"
    assert "Всего на устройстве" in form.totals.value
    assert form.breakdown.figure.data[0].name == "веса"
    assert form.model_source.value == "preset"
    form.set_lang("en")
    assert form.controls["method"].description == "Method"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_verify_exactly_traces_one_step_and_compares() -> None:
    form = SizingForm({"model": "tiny-llama", "method": "lora", "precision": "fp32", "seq_len": 128})
    traced = form.verify()
    assert traced is not None and traced.peak_allocated_bytes > 0
    text = html.unescape(form.verify_out.value)
    assert "Traced peak allocated" in text and "Analytic estimate" in text and "Difference" in text
    assert not form.verify_button.disabled


def test_verify_with_invalid_plan_is_a_message() -> None:
    form = SizingForm(PLAN)
    form.controls["batch_size"].value = 0
    assert form.verify() is None and "gpuwork-error" in form.verify_out.value


def test_report_mode_shows_plain_figures(shown: list) -> None:
    form = SizingForm(PLAN, report=True)
    assert form.breakdown.figure is None and form.whatif.figure is None  # no live charts in reports
    for part in ("controls", "totals", "breakdown", "whatif", "details", "verify"):
        form.show(part)
    figures = [o for o in shown if isinstance(o, go.Figure)]
    assert len(figures) == 4 and not any(isinstance(o, go.FigureWidget) for o in shown)
    assert figures[1].layout.xaxis.title.text.startswith("sequence length")
    assert figures[2].layout.xaxis.title.text.startswith("micro-batch")
    # the details end with the throughput per GPU on 1..64 of the profile's card
    tokens, efficiency = figures[3].data
    assert list(tokens.x) == [p.gpus for p in form.result.scaling] and tokens.x[0] == 1 and tokens.x[-1] == 64
    assert list(tokens.y) == [p.tokens_per_s_per_gpu for p in form.result.scaling]
    assert efficiency.y[0] == pytest.approx(100) and all(a >= b for a, b in itertools.pairwise(tokens.y))
    with pytest.raises(KeyError):
        form.show("nope")


def test_interactive_show_gives_widgets(shown: list) -> None:
    form = SizingForm(PLAN)
    form.show("breakdown")
    assert shown[-1] is form.breakdown.box and form.breakdown.box.children[0] is form.breakdown.out


def test_the_scaling_chart_follows_the_plan_and_hides_with_an_error() -> None:
    form = SizingForm(PLAN)
    (output,) = form.scaling.out.outputs
    sent = output["data"][PLOTLY_MIME]
    assert sent["data"][0]["x"] == [p.gpus for p in form.result.scaling]
    assert form.result.profile.time.gpu_name in sent["layout"]["title"]["text"]
    before = sent["data"][0]["y"]
    form.controls["seq_len"].value = 4096
    assert form.scaling.out.outputs[0]["data"][PLOTLY_MIME]["data"][0]["y"] != before
    form.controls["seq_len"].value = 0
    assert form.scaling.box.layout.visibility == "hidden"
    form.controls["seq_len"].value = 1024
    assert form.scaling.box.layout.visibility == "visible" and form.scaling.box.layout.display is None


def test_a_change_sends_the_browser_the_new_chart() -> None:
    """What reaches the page is the Output widget's one output: plotly's JSON for the current plan."""
    form = SizingForm(PLAN)
    form.controls["seq_len"].value = 4096
    (output,) = form.whatif.out.outputs
    sent = output["data"][PLOTLY_MIME]
    assert sent["layout"]["shapes"][-1]["x0"] == 4096  # the marker follows the form
    bars = {t["name"]: t["y"][0] for t in form.breakdown.out.outputs[0]["data"][PLOTLY_MIME]["data"]
            if t["type"] == "bar"}
    assert bars == {t.name: t.y[0] for t in form.breakdown.figure.data if t.type == "bar"}


def test_an_invalid_plan_is_explained_in_russian_in_russian_mode() -> None:
    form = SizingForm(PLAN)
    form.set_lang("ru")
    form.controls["seq_len"].value = 0
    assert form.error == "Длина последовательности: 0 — слишком мало: нужно целое число ≥ 1"
    form.controls["seq_len"].value = 1024
    form.controls["sharding"].value = "zero3"
    assert "требует gpus ≥ 2" in form.error and "needs" not in form.error


def test_in_russian_a_bad_model_name_and_a_bad_catalog_row_are_explained_in_russian(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    form = SizingForm({**PLAN, "model": "llama-3.1-8"}, lang="ru")  # a name typed one character short
    assert form.plan is None and form.error == (
        "неизвестная модель 'llama-3.1-8': это не пресет, не путь к config.json и не id на Hugging Face Hub "
        "(org/name). Может быть, llama-3.1-8b, llama-3.1-70b, llama-3.2-3b? Список пресетов: `gpuwork models`.")
    form.set_lang("en")  # the same error, now in English
    assert form.error.startswith("unknown model 'llama-3.1-8': not a preset")
    form.close()

    # the user's own data folder, whose catalog says 'spot' where the mode belongs
    data = shutil.copytree(bundled_data_dir(), tmp_path / "data")
    catalog = (data / "catalog.csv").read_text(encoding="utf-8").splitlines()
    catalog[6] = catalog[6].replace(",interruptible,", ",spot,")
    (data / "catalog.csv").write_text("\n".join(catalog) + "\n", encoding="utf-8")
    monkeypatch.setenv(ENV_DATA_DIR, str(data))
    panel = OffersPanel(PLAN, lang="ru", with_request=False)
    assert panel.error == (
        "catalog.csv, строка 7, поле 'mode': 'spot' — не из списка: on-demand, reserved, interruptible "
        "(для предложений spot/preemptible укажите 'interruptible')")
    assert "catalog.csv, строка 7" in html.unescape(panel.message.value)


def test_the_form_names_the_stack_and_shows_where_the_step_goes():
    form = SizingForm(lang="ru")
    assert form.controls["stack"].value == "hf-trainer"
    base = form.result.profile.time
    form.controls["stack"].value = "hf-liger"
    assert form.plan.stack.value == "hf-liger"
    liger = form.result.profile.time
    assert liger.stack == "hf-liger" and liger.step_time_s < base.step_time_s  # fused kernels: fewer bytes
    details = form.details.value
    assert "Из чего состоит шаг на одном GPU (HF Trainer с объединёнными ядрами (hf-liger)" in details
    assert "стек: HF Trainer с объединёнными ядрами (hf-liger)" in details
    assert "умножения матриц" in details and "Токенов/с на GPU для 1, 2, … 64" in details
    # each part shows its seconds: the largest part's value is in the table
    largest = max(liger.breakdown.values())
    assert f"{largest:.3f}".replace(".", ",") + " с" in details


# -- the upload takes the users' training configs too (gpuwork.facts.configs) ---------------------------------

CONFIGS = Path(__file__).parent / "data" / "configs"


def _upload(form: SizingForm, *names: str, lang: str = "en") -> None:
    """Upload example files as a browser sends them: bytes and a name, several at once."""
    form.upload.value = tuple(upload_value((CONFIGS / n).read_bytes(), n)[0] for n in names)


def _report_text(form: SizingForm) -> str:
    return html.unescape(form.upload_report.value.replace("<br>", "\n")).replace("\xa0", " ")


@pytest.mark.parametrize(("name", "expected"), [
    ("axolotl_lora.yml", {"model": "llama-3.2-1b", "method": "lora", "seq_len": 4096, "batch_size": 2,
                          "optimizer": "adamw-8bit", "lora_r": 32}),
    ("sft_config.yaml", {"model": "llama-3.1-8b", "method": "lora", "seq_len": 4096, "batch_size": 2,
                         "optimizer": "paged-adamw-8bit"}),
    ("llamafactory_lora.yaml", {"model": "qwen2.5-7b", "method": "lora", "seq_len": 2048, "batch_size": 1}),
])
def test_a_training_config_upload_sets_the_form_to_its_plan(name, expected) -> None:
    from gpuwork.facts.configs import import_configs

    form = SizingForm(PLAN)
    _upload(form, name)
    assert form.error is None, form.error
    plan = import_configs([CONFIGS / name]).plan()
    assert form.plan == plan  # exactly the CLI's `--from` plan
    assert {k: (v.value if hasattr(v, "value") else v) for k, v in
            ((k, getattr(form.plan, k)) for k in expected)} == expected
    assert form.model_source.value == "preset" and form.controls["model"].value == expected["model"]
    assert form.controls["seq_len"].number("seq_len") == expected["seq_len"]  # the controls show it
    assert form.controls["method"].value == expected["method"]
    text = _report_text(form)
    assert f"{name} (" in text and "Understood" in text and "Ignored" in text
    assert f"seq_len = {expected['seq_len']}" in text and "/tmp" not in text and "gpuwork-upload-" not in text
    assert form.result is not None and form.memory.device_total_bytes > 0  # and it was sized
    form.close()


def test_training_args_keep_the_forms_model_and_say_so_in_russian() -> None:
    form = SizingForm({**PLAN, "model": "tiny-llama"}, lang="ru")
    _upload(form, "training_args.json")
    assert form.error is None, form.error
    p = form.plan
    assert (p.model, p.batch_size, p.grad_accum, p.grad_checkpointing, p.optimizer_impl, p.epochs) == \
        ("tiny-llama", 4, 4, True, "fused", 2)  # adamw_torch_fused -> adamw, fused
    assert form.controls["batch_size"].number("batch_size") == 4 and form.controls["grad_checkpointing"].value
    text = _report_text(form)
    assert "Понято (поле плана" in text and "batch_size = 4" in text, text[:300]
    assert "форма считает tiny-llama" in text and "model = llama-3.2-1b" not in text
    form.set_lang("en")
    assert "the form sizes tiny-llama" in _report_text(form)
    form.close()


def test_a_training_config_and_its_deepspeed_file_uploaded_together_combine() -> None:
    form = SizingForm(PLAN)
    _upload(form, "llamafactory_full_ds3.yaml", "ds_z3_config.json")
    assert form.error is None, form.error
    from gpuwork.facts.configs import import_configs

    expected = import_configs([CONFIGS / "llamafactory_full_ds3.yaml", CONFIGS / "ds_z3_config.json"]).plan()
    assert form.plan == expected and form.plan.sharding.value == "zero3"
    assert form.controls["sharding"].value == "zero3" and form.controls["method"].value == "full"
    form.close()


def test_a_reference_to_a_file_not_uploaded_is_never_read_on_the_server(tmp_path) -> None:
    secret = tmp_path / "ds_secret.json"  # a real DeepSpeed file on "the server": must not be followed
    secret.write_text(json.dumps({"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 7}))
    content = json.dumps({"per_device_train_batch_size": 2, "deepspeed": str(secret),
                          "model_name_or_path": str(tmp_path)}).encode()
    form = SizingForm(PLAN)
    form.upload.value = upload_value(content, "training_args.json")
    assert form.error is None, form.error
    assert form.plan.batch_size == 2 and form.plan.sharding.value != "zero3"  # the file's stage 3 was not read
    text = _report_text(form)
    assert "ds_secret.json, which was not uploaded" in text and str(tmp_path) not in text.replace(
        f"deepspeed names {secret}", "")
    form.close()


def test_upload_refusals_are_one_clear_line() -> None:
    form = SizingForm(PLAN)
    form.upload.value = upload_value(b"x" * (1_000_001), "big.yaml")
    assert "1 MB" in form.error and "big.yaml" in form.error
    form.upload.value = upload_value(b"hello: world\n", "notes.yaml")
    assert "notes.yaml is neither a model's config.json" in form.error and "hello" in form.error
    form.upload.value = upload_value(b"/etc/passwd", "path.yaml")  # content, never opened as a path
    assert "path.yaml" in form.error and "root:" not in form.error
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdef", "bcdefg", strict=True))
    form.upload.value = upload_value(bomb.encode(), "bomb.yaml")
    assert "bomb.yaml" in form.error and "aliases" in form.error
    config, _ = load_config("tiny-llama")  # a model's config.json still works as before
    form.upload.value = upload_value(json.dumps(config).encode())
    assert form.error is None and form.model_source.value == "upload" and form.upload_report.value == ""
    form.close()
