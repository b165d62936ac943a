"""In-run evaluation memory (gpuwork.estimate.eval_memory): the plan's evaluation fields, the rule's byte counts,
and what the real transformers Trainer's evaluation loop keeps, against the rule's count."""

from __future__ import annotations

import json
import math

import pytest
import torch

from gpuwork.errors import PlanError
from gpuwork.estimate import eval_memory
from gpuwork.estimate.eval_memory import ID_BYTES, eval_forward, kept_per_batch
from gpuwork.estimate.memory import estimate_memory
from gpuwork.facts.resolve import resolve
from gpuwork.plan import EvalKeep, TrainPlan
from gpuwork.present.messages import render

LORA = dict(model="llama-3.2-1b", method="lora", precision="bf16-mixed", seq_len=1024, batch_size=2)


@pytest.mark.parametrize("field, value", [("eval_batch_size", 0), ("eval_samples", 2.5), ("eval_accum", -1),
                                          ("eval_keep", "logit"), ("eval_batch_size", 2**21)])
def test_bad_evaluation_fields_name_the_field_in_both_languages(field, value):
    with pytest.raises(PlanError) as err:
        TrainPlan(**{field: value})
    assert err.value.field == field
    for lang in ("en", "ru"):
        assert field in render(err.value.msg, lang)


def test_no_evaluation_by_default_leaves_the_step_as_it_was():
    plan = TrainPlan(**LORA)
    assert plan.eval_batch_size is None and plan.eval_keep is EvalKeep.LOSS
    est = estimate_memory(plan, resolve(plan).spec)
    assert not any(k.startswith("eval_") for k in est.breakdown)
    assert "evaluation" not in est.phase_peaks and est.peak_phase != "evaluation"


def test_kept_bytes_per_batch_follow_what_the_loop_keeps():
    plan = TrainPlan(**LORA, eval_batch_size=8)
    spec = resolve(plan).spec
    tokens = 8 * 1024
    assert kept_per_batch(spec, plan, 2) == (0, 0)  # prediction_loss_only: the loss alone
    assert kept_per_batch(spec, plan.replace(eval_keep="ids"), 2) == (tokens * 8, tokens * 8)  # int64 ids, labels
    assert kept_per_batch(spec, plan.replace(eval_keep="logits"), 2) == (tokens * spec.vocab_size * 2, tokens * 8)


def test_eval_forward_head_holds_logits_their_fp32_upcast_and_log_softmax():
    plan = TrainPlan(**LORA, eval_batch_size=4)
    spec = resolve(plan).spec
    forward = eval_forward(spec, plan, stream=4, linear_out=2, logits_bytes=2)
    v, h = spec.vocab_size, spec.hidden_size
    assert forward.head == (4 * h, 2 * v, 4 * v, 4 * v)
    assert forward.layer_saved == ()  # no_grad: nothing saved for backward
    assert forward.layer_transient[-1] == 3 * 2 * spec.intermediate_size  # act(gate), up, their product


def test_kept_logits_set_the_peak_and_accumulation_bounds_them():
    plan = TrainPlan(**LORA, eval_batch_size=4, eval_samples=64, eval_keep="logits")
    spec = resolve(plan).spec
    est = estimate_memory(plan, spec)
    assert est.peak_phase == "evaluation"
    assert "gradients" not in est.breakdown  # zero_grad(set_to_none) ran before the evaluation
    pred, label = kept_per_batch(spec, plan, 2)
    batches = 64 // 4
    # the last concatenation holds the old predictions, the batch's and the joined tensor, with every label
    assert est.breakdown["eval_predictions"] == 2 * batches * pred + batches * label
    accum = estimate_memory(plan.replace(eval_accum=2), spec)
    assert accum.breakdown["eval_predictions"] < est.breakdown["eval_predictions"]
    assert accum.peak_reserved_bytes < est.peak_reserved_bytes
    for e in (est, accum):  # the breakdown still adds up to the totals
        assert sum(v for k, v in e.breakdown.items() if k not in _RESERVED_TERMS) == e.peak_allocated_bytes
        assert sum(e.breakdown.values()) == e.device_total_bytes


_RESERVED_TERMS = ("allocator_cache", "allocator_fragmentation", "stream_pools", "eval_segments",
                   "paged_optimizer_states", "cuda_context")


def test_a_larger_eval_batch_maps_segments_beyond_the_training_cache():
    plan = TrainPlan(**LORA)
    spec = resolve(plan).spec
    train = estimate_memory(plan, spec)
    same = estimate_memory(plan.replace(eval_batch_size=plan.batch_size), spec)
    larger = estimate_memory(plan.replace(eval_batch_size=4 * plan.batch_size), spec)
    assert same.peak_reserved_bytes >= train.peak_reserved_bytes
    assert larger.peak_reserved_bytes > same.peak_reserved_bytes
    # the evaluation's vocabulary-wide tensors are four times the training's: new segments, counted as reserved
    assert larger.peak_reserved_bytes - train.peak_reserved_bytes >= 4 * plan.seq_len * 2 * spec.vocab_size


# -- the real Trainer ------------------------------------------------------------------------------------


def _tiny_llama(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    (tmp_path / "config.json").write_text(json.dumps(config.to_dict()))
    return transformers, model


class _Rows(torch.utils.data.Dataset):
    def __init__(self, n: int, seq: int, vocab: int):
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i].clone()}


@pytest.mark.parametrize("keep, accum", [("ids", None), ("ids", 2), ("logits", None), ("loss", None)])
def test_real_trainer_keeps_what_the_rule_counts(tmp_path, monkeypatch, keep, accum):
    transformers, model = _tiny_llama(tmp_path)
    import transformers.trainer as trainer_module

    peaks: dict[int, int] = {}  # container id -> largest bytes it held on the device at once

    class Recording(trainer_module.EvalLoopContainer):
        def add(self, tensors) -> None:
            super().add(tensors)
            held = sum(t.numel() * t.element_size() for t in _leaves(self.tensors))
            peaks[id(self)] = max(peaks.get(id(self), 0), held)

    monkeypatch.setattr(trainer_module, "EvalLoopContainer", Recording)
    seq, rows, batch = 12, 10, 5
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), per_device_eval_batch_size=batch,
                                          eval_accumulation_steps=accum, report_to=[], use_cpu=True)
    kwargs = {}
    if keep != "loss":
        kwargs["compute_metrics"] = lambda _p: {}
    if keep == "ids":
        kwargs["preprocess_logits_for_metrics"] = lambda logits, _labels: logits.argmax(dim=-1)
    trainer = transformers.Trainer(model=model, args=args, eval_dataset=_Rows(rows, seq, 96), **kwargs)
    trainer.evaluate()

    plan = TrainPlan(model=str(tmp_path / "config.json"), method="full", precision="fp32", seq_len=seq,
                     eval_batch_size=batch, eval_samples=rows, eval_keep=keep, eval_accum=accum)
    spec = resolve(plan).spec
    pred, label = kept_per_batch(spec, plan, 4)  # an fp32 model on the CPU returns fp32 logits
    window = min(math.ceil(rows / batch), accum or rows)
    held = sorted(peaks.values())
    losses = batch * window * 4  # the per-sample losses the loop also keeps (fp32), left out by the rule
    if keep == "loss":
        assert pred == label == 0 and held == [losses]
    else:
        assert held == sorted([losses, window * pred, window * label])
    assert ID_BYTES == torch.empty((), dtype=torch.int64).element_size()


def _leaves(obj):
    if obj is None:
        return []
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _leaves(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _leaves(o)]
    return [obj] if isinstance(obj, torch.Tensor) else []


def test_module_is_pure():
    assert not hasattr(eval_memory, "torch")


# -- training configs (gpuwork ... --from) -----------------------------------------------------------------


def _imported(tmp_path, data: dict):
    from gpuwork.facts.configs import import_configs

    path = tmp_path / "args.json"
    path.write_text(json.dumps(data))
    return import_configs([str(path)])


def test_config_with_an_evaluation_strategy_reads_the_evaluation(tmp_path):
    got = _imported(tmp_path, {"output_dir": "o", "per_device_train_batch_size": 2, "evaluation_strategy": "epoch",
                               "eval_accumulation_steps": 4})
    assert got.fields["eval_batch_size"] == 8  # TrainingArguments' default, the config being silent
    assert got.fields["eval_accum"] == 4
    got = _imported(tmp_path, {"output_dir": "o", "eval_strategy": "steps", "per_device_eval_batch_size": 3,
                               "prediction_loss_only": True})
    assert (got.fields["eval_batch_size"], got.fields["eval_keep"]) == (3, "loss")


def test_config_without_an_evaluation_prices_none(tmp_path):
    got = _imported(tmp_path, {"output_dir": "o", "per_device_train_batch_size": 2, "per_device_eval_batch_size": 16,
                               "eval_accumulation_steps": 4})
    assert not {"eval_batch_size", "eval_accum"} & set(got.fields)
    assert not any(name.startswith("eval_") for name in got.defaulted())


def test_cli_flags_set_the_evaluation(tmp_path):
    import subprocess
    import sys

    args = [sys.executable, "-m", "gpuwork", "estimate", "--model", "llama-3.2-1b", "--method", "lora", "--seq-len",
            "512", "--eval-batch-size", "8", "--eval-samples", "64", "--eval-keep", "logits", "--json"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["plan"]["eval_batch_size"], data["plan"]["eval_keep"]) == (8, "logits")
    assert data["memory"]["peak_phase"] == "evaluation"
    bad = subprocess.run([*args[:-1], "--eval-accum", "0", "--lang", "ru"], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert bad.returncode != 0 and "eval_accum" in bad.stderr and "Traceback" not in bad.stderr


# -- the app's sizing tab and its links ---------------------------------------------------------------------


def test_the_sizing_form_sets_and_clears_the_evaluation():
    pytest.importorskip("ipywidgets")
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm(TrainPlan(**LORA))
    assert form.controls["eval_batch_size"].value == ""  # none: no evaluation priced
    assert form.values()["eval_batch_size"] is None
    form.controls["eval_batch_size"].value = "8"
    form.controls["eval_samples"].value = "500"
    form.controls["eval_keep"].value = "ids"
    values = form.values()
    assert (values["eval_batch_size"], values["eval_samples"], values["eval_keep"], values["eval_accum"]) == (
        8, 500, "ids", None)
    form.controls["eval_batch_size"].value = "0"
    assert "eval_batch_size" in form.message.value or "Eval batch" in form.message.value
    taken = SizingForm(TrainPlan(**LORA, eval_batch_size=4, eval_accum=2))
    assert (taken.controls["eval_batch_size"].value, taken.controls["eval_accum"].value) == ("4", "2")


def test_a_link_carries_the_evaluation():
    from gpuwork.ui.share import plan_from_query, plan_query

    plan = TrainPlan(**LORA, eval_batch_size=8, eval_samples=500, eval_keep="ids")
    assert plan_from_query(plan_query(plan)) == plan
    assert plan_from_query("eval_batch_size=none&eval_accum=3").eval_batch_size is None
    with pytest.raises(PlanError) as err:
        plan_from_query("eval_samples=lots")
    assert err.value.field == "eval_samples"


def test_every_rank_keeps_every_ranks_outputs():
    one = TrainPlan(**LORA, eval_batch_size=4, eval_samples=64, eval_keep="logits")
    two = one.replace(gpus=2)
    spec = resolve(one).spec
    assert kept_per_batch(spec, two, 2) == tuple(2 * n for n in kept_per_batch(spec, one, 2))
    # half the batches per GPU, each gathered from both: the same outputs are kept at the end
    kept = [estimate_memory(p, spec).breakdown["eval_predictions"] for p in (one, two)]
    pred, label = kept_per_batch(spec, one, 2)
    assert kept == [2 * 16 * pred + 16 * label] * 2
