"""The user's-run measurement (gpuwork.measure.hf): real Trainer / SFTTrainer / plain-loop runs of a tiny Llama
on CPU with the callback attached, and the record they write read back by compare and calibration."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from gpuwork.cli import main  # noqa: E402
from gpuwork.facts.model import load_config  # noqa: E402
from gpuwork.measure.hf import GpuworkCallback, _verifier, measure  # noqa: E402
from gpuwork.measure.options import OwnRunOptions  # noqa: E402
from gpuwork.measure.runtime import TrialError  # noqa: E402
from gpuwork.measure.trial import TrialRecord  # noqa: E402
from gpuwork.sizing import estimate_memory  # noqa: E402

SEQ = 32
BATCH, ACCUM = 2, 2
WARMUP, STEPS = 1, 4


@pytest.fixture(scope="module")
def text():
    from gpuwork.measure.textdata import prepare_text_data

    config, _ = load_config("tiny-llama")
    return prepare_text_data(SEQ, config["vocab_size"])


@pytest.fixture(scope="module")
def rows(text):
    """Rows of gpuwork's bundled text with some right padding, so real tokens and padding differ."""
    out = []
    for i, seq in enumerate(text.sequences[:48]):
        real = SEQ - (i % 4) * 5
        ids, mask = seq.clone(), torch.ones_like(seq)
        ids[real:], mask[real:] = text.tokenizer.pad_id, 0
        labels = ids.clone()
        labels[real:] = -100
        out.append({"input_ids": ids, "attention_mask": mask, "labels": labels})
    return out


def tiny_llama(lora: bool = False):
    config, _ = load_config("tiny-llama")
    hf_config = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(dict(config))
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config)
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                                 task_type="CAUSAL_LM"))
    return model


def trainer_args(tmp_path: Path, **changes):
    values = dict(output_dir=str(tmp_path / "run"), per_device_train_batch_size=BATCH,
                  gradient_accumulation_steps=ACCUM, max_steps=40, learning_rate=1e-3, report_to=[],
                  save_strategy="no", logging_steps=100, use_cpu=True, disable_tqdm=True, eval_strategy="steps",
                  eval_steps=10, per_device_eval_batch_size=4, seed=3)
    values.update(changes)
    return transformers.TrainingArguments(**values)


def check_measured(record: TrialRecord, plan_seq: int = SEQ) -> None:
    """Memory and step figures come from the run: positive, varying, not the estimate's numbers."""
    assert len(record.steps) == WARMUP + STEPS
    assert [s.is_warmup for s in record.steps] == [True] * WARMUP + [False] * STEPS
    measured = record.measured
    assert all(s.step_time_s > 0 and s.trial_memory_bytes > 0 and s.rss_peak_bytes > 0 for s in measured)
    assert len({s.step_time_s for s in measured}) > 1
    assert all(math.isfinite(s.loss) and s.loss > 0 for s in measured)
    assert record.summary.measured_steps == STEPS
    assert record.summary.median_step_time_s > 0 and record.summary.tokens_per_s > 0
    assert record.peak_trial_memory_bytes == max(s.trial_memory_bytes for s in record.steps)
    estimate = estimate_memory(record.plan)
    assert record.peak_trial_memory_bytes not in (estimate.peak_allocated_bytes, estimate.peak_reserved_bytes,
                                                  estimate.device_total_bytes)
    assert record.environment.device == "cpu" and record.environment.torch == torch.__version__


@pytest.mark.slow
def test_trainer_full_trial_writes_the_record_compare_reads(tmp_path, rows, capsys) -> None:
    callback = GpuworkCallback(out=tmp_path / "trials", steps=STEPS, warmup=WARMUP, verify_restore=True)
    trainer = transformers.Trainer(model=tiny_llama(), args=trainer_args(tmp_path), train_dataset=rows,
                                   eval_dataset=rows[:8], callbacks=[callback])
    trainer.train()

    assert trainer.state.global_step == WARMUP + STEPS  # the trial stopped the 40-step run
    record = callback.record
    check_measured(record)
    plan = record.plan  # inferred from the Trainer's arguments and model
    assert (plan.model, plan.method.value, plan.precision.value) == ("tiny-llama", "full", "fp32")
    assert (plan.batch_size, plan.grad_accum, plan.seq_len) == (BATCH, ACCUM, SEQ)
    p = record.protocol
    assert (p.micro_batch, p.grad_accum, p.seq_len, p.seed, p.learning_rate) == (BATCH, ACCUM, SEQ, 3, 1e-3)
    assert p.params_trainable == p.params_total > 4_000_000
    assert p.optimizer_class.endswith("AdamW")
    # tokens: the attention mask's ones; padding apart; together the batch's shape
    for step in record.steps:
        assert 0 < step.tokens < BATCH * ACCUM * SEQ
        assert step.tokens + step.padding_tokens == BATCH * ACCUM * SEQ
        assert step.device_total_bytes is None  # a CUDA figure
    assert record.summary.tokens_per_step == round(sum(s.tokens for s in record.measured) / STEPS)
    assert record.source == "gpuwork.hf.GpuworkCallback"
    assert {"model", "method", "batch_size", "optimizer"} <= record.inferred.keys()
    assert record.inferred["batch_size"] == {"value": BATCH, "from": "args.per_device_train_batch_size"}
    # the checkpoint the trial asked for: saved, timed, restored into a fresh model, every tensor equal
    ck = record.checkpoint
    assert ck.verified and ck.tensors_checked == len(list(tiny_llama().parameters()))
    assert ck.save_s > 0 and ck.files["model.safetensors"] > 0 and ck.bytes_on_disk == sum(ck.files.values())
    # the evaluation pass: timed and turned into the run's share (40 steps, a pass every 10)
    evaluation = record.evaluation
    assert evaluation["passes"] == 1 and evaluation["times_s"][0] > 0 and evaluation["run_eval_passes"] == 4
    expected = 4 * evaluation["times_s"][0] / (40 * record.summary.median_step_time_s)
    assert plan.eval_fraction == pytest.approx(expected)
    # the file is the record gpuwork trial writes: compare and the record reader take it as is
    again = TrialRecord.from_json(Path(callback.saved_to))
    assert again.steps == record.steps and again.summary == record.summary
    assert (again.evaluation, again.inferred, again.source) == (record.evaluation, record.inferred, record.source)
    assert again.saves == record.saves and record.saves[0]["save_s"] == record.checkpoint.save_s
    capsys.readouterr()
    assert main(["compare", str(callback.saved_to)]) == 0
    table = capsys.readouterr().out
    assert "tiny-llama full b2x32" in table and "checkpoint verified" in table
    from gpuwork.measure.calibration import calibrate

    assert calibrate(record).device_kind == "cpu"


@pytest.mark.slow
def test_lora_trainer_run_and_the_restore_check(tmp_path, rows) -> None:
    seen = []
    callback = GpuworkCallback(out=tmp_path, steps=STEPS, warmup=WARMUP, verify_restore=True,
                               on_measure=seen.append)
    model = tiny_llama(lora=True)
    trainer = transformers.Trainer(model=model, args=trainer_args(tmp_path, eval_strategy="no"),
                                   train_dataset=rows, callbacks=[callback])
    trainer.train()
    record = callback.record
    check_measured(record)
    assert seen == list(record.steps)  # the live feed got every step, warm-up included
    plan = record.plan
    assert (plan.method.value, plan.lora_r, plan.lora_alpha, plan.lora_targets) == ("lora", 8, 16,
                                                                                     ("q_proj", "v_proj"))
    assert 0 < record.protocol.params_trainable < record.protocol.params_total / 50
    assert record.checkpoint.verified and record.checkpoint.tensors_checked == 4 * 2 * 2  # layers x targets x A,B
    assert record.evaluation["passes"] == 0  # eval_strategy "no": none forced
    # the check can fail: a tensor changed after the save is reported by name
    with torch.no_grad():
        next(p for n, p in model.named_parameters() if "lora_B" in n).add_(1.0)
    _, _, checked, differ = _verifier(model)(Path(record.checkpoint.path))
    assert checked == 16 and len(differ) == 1 and "lora_B" in differ[0]


@pytest.mark.slow
def test_trl_sft_trainer_with_the_callback(tmp_path, rows, text) -> None:
    trl = pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=text.tokenizer.backend, pad_token="<pad>",
                                                     eos_token="<|endoftext|>")
    data = datasets.Dataset.from_list([{"input_ids": r["input_ids"][r["attention_mask"].bool()].tolist()}
                                       for r in rows])
    args = trl.SFTConfig(output_dir=str(tmp_path / "run"), per_device_train_batch_size=BATCH,
                         gradient_accumulation_steps=ACCUM, max_steps=30, learning_rate=1e-3, report_to=[],
                         save_strategy="no", logging_steps=100, use_cpu=True, disable_tqdm=True, max_length=SEQ,
                         optim="adamw_torch", dataset_num_proc=1)
    callback = GpuworkCallback(out=tmp_path / "trials", steps=STEPS, warmup=WARMUP)
    trainer = trl.SFTTrainer(model=tiny_llama(lora=True), args=args, train_dataset=data, processing_class=tokenizer,
                             callbacks=[callback])
    trainer.train()
    record = callback.record
    check_measured(record)
    assert record.plan.method.value == "lora" and record.plan.optimizer_impl.value == "foreach"
    assert record.checkpoint is not None and not record.checkpoint.verified  # timed only (no verify_restore)
    assert record.checkpoint.message.code == "hf.checkpoint.saved_only" and record.checkpoint.save_s > 0
    assert Path(callback.saved_to).is_file()


def test_measure_a_plain_loop(tmp_path, rows) -> None:
    model = tiny_llama()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(rows, batch_size=BATCH)
    seen = []
    with measure(model=model, optimizer=optimizer, out=tmp_path, steps=STEPS, warmup=WARMUP, run_steps=100,
                 eval_passes=2, on_measure=seen.append) as m:
        for batch in m.batches(loader):
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if m.step(batch, loss=loss):
                break
        with m.evaluating(), torch.no_grad():
            model.eval()
            model(**next(iter(loader)))  # an eval forward: not training tokens
    record = m.record
    check_measured(record)
    assert len(seen) == WARMUP + STEPS
    assert all(s.data_wait_s > 0 for s in record.steps)
    assert all(0 < s.tokens < BATCH * SEQ for s in record.steps)  # one micro-batch per step, padding left out
    assert (record.plan.method.value, record.plan.batch_size, record.plan.seq_len) == ("full", BATCH, SEQ)
    assert record.source == "gpuwork.hf.measure" and record.evaluation["passes"] == 1
    assert record.plan.eval_fraction == pytest.approx(record.evaluation["share_of_run"])
    assert all(s.padding_tokens + s.tokens == BATCH * SEQ for s in record.steps)
    assert "own_run" not in json.loads(Path(record.saved_to).read_text())  # the figures are the record's fields
    assert main(["compare", record.saved_to]) == 0


def test_bad_arguments_name_the_problem() -> None:
    with pytest.raises(TrialError) as bad_steps:
        GpuworkCallback(steps=0)
    assert bad_steps.value.msg.code == "error.trial.steps"
    with pytest.raises(TrialError) as bad_plan:
        GpuworkCallback(plan={"model": "tiny-llama"})
    assert bad_plan.value.msg.code == "error.hf.plan_type"
    with pytest.raises(TrialError) as no_plan, measure(steps=1) as m:
        m.step(torch.ones(2, 8, dtype=torch.long), loss=1.0)
    assert no_plan.value.msg.code == "error.hf.no_plan"


def test_the_callback_takes_one_options_object_or_its_keywords() -> None:
    base = OwnRunOptions(steps=4, checkpoint=False)
    callback = GpuworkCallback(None, base, warmup=1)  # keywords change a copy
    assert callback.options == OwnRunOptions(steps=4, warmup=1, checkpoint=False) and base.warmup == 2
    assert (callback.checkpoint, callback._rec.steps, callback._rec.warmup) == (False, 4, 1)
    with pytest.raises(TypeError):
        GpuworkCallback(stepz=3)  # a misspelt option is not silently ignored
    with pytest.raises(TrialError), measure(steps=1) as m:  # no model, no plan: error.hf.no_plan at the end
        assert m._rec.warmup == 1  # a plain loop warms up one step unless told


def check_until_stable(record: TrialRecord, tolerance: float, min_steps: int, max_steps: int) -> None:
    """Converged with the interval within the tolerance, or stopped at the cap: the record says which."""
    st = record.stability
    assert (st.tolerance, st.min_steps, st.max_steps) == (tolerance, min_steps, max_steps)
    assert st.measured_steps == record.summary.measured_steps == len(record.measured)
    assert st.half_width == record.summary.step_time_half_width
    if st.converged:
        assert min_steps <= st.measured_steps <= max_steps and st.half_width <= tolerance
    else:
        assert st.measured_steps == max_steps and st.half_width > tolerance
    s = record.summary
    assert s.step_time_low_s <= s.median_step_time_s <= s.step_time_high_s


def test_measure_runs_a_plain_loop_until_stable(tmp_path, rows) -> None:
    model = tiny_llama(lora=True)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    loader = torch.utils.data.DataLoader(rows, batch_size=BATCH)
    with measure(model=model, optimizer=optimizer, out=tmp_path, steps=6, warmup=1, until_stable=0.25,
                 max_steps=12) as m:
        done = False
        while not done:
            for batch in m.batches(loader):
                model(**batch).loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                if m.step(batch):
                    done = True
                    break
    check_until_stable(m.record, 0.25, 6, 12)
    assert TrialRecord.from_json(Path(m.record.saved_to)).stability == m.record.stability
    with pytest.raises(TrialError) as bad:
        measure(until_stable=0.03, steps=6, max_steps=3).__enter__()
    assert bad.value.msg.code == "error.trial.max_steps"


@pytest.mark.slow
def test_trainer_run_until_stable(tmp_path, rows) -> None:
    callback = GpuworkCallback(out=tmp_path, warmup=1, until_stable=0.25, max_steps=10, checkpoint=False)
    trainer = transformers.Trainer(model=tiny_llama(lora=True), args=trainer_args(tmp_path, eval_strategy="no"),
                                   train_dataset=rows, callbacks=[callback])
    trainer.train()
    record = callback.record
    check_until_stable(record, 0.25, 10, 10)  # steps None: the first check at UNTIL_STABLE_MIN_STEPS = 10
    assert trainer.state.global_step == 1 + record.stability.measured_steps


# -- a run killed mid-way keeps every finished step ---------------------------------------------------------------

KILLED_TRAINER = """
import sys, torch, transformers
from gpuwork.facts.model import load_config
from gpuwork.measure.hf import GpuworkCallback
config, _ = load_config("tiny-llama")
torch.manual_seed(0)
model = transformers.AutoModelForCausalLM.from_config(
    transformers.CONFIG_MAPPING[config["model_type"]].from_dict(dict(config)))
rows = [{"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
        for ids in torch.randint(0, config["vocab_size"], (64, 16))]
args = transformers.TrainingArguments(output_dir=sys.argv[1] + "/run", per_device_train_batch_size=2, max_steps=100000,
                                      report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True)
callback = GpuworkCallback(out=sys.argv[1] + "/trials", warmup=1, on_measure=lambda m: print("done", m.step,
                                                                                              flush=True))
transformers.Trainer(model=model, args=args, train_dataset=rows, callbacks=[callback]).train()
"""


@pytest.mark.slow
def test_a_trainer_run_killed_mid_way_leaves_a_record_of_its_finished_steps(tmp_path) -> None:
    from test_record_bookkeeping import kill_after_steps

    from gpuwork.measure.record import steps_path, summarize

    finished = kill_after_steps(KILLED_TRAINER, tmp_path, 8)
    [path] = sorted((tmp_path / "trials").glob("trial-*.json"))
    lines = [json.loads(x) for x in steps_path(path).read_text().splitlines() if x.endswith("}")]
    assert [x["step"] for x in lines] == list(range(1, len(lines) + 1))
    assert set(finished) <= {x["step"] for x in lines}  # a step is on disk before the caller hears of it
    record = TrialRecord.from_json(path)  # the package's reader
    assert record.status == "running" and record.source == "gpuwork.hf.GpuworkCallback"
    assert [m.step for m in record.steps] == [x["step"] for x in lines]
    assert all(math.isfinite(m.loss) and m.loss > 0 for m in record.steps)  # the Trainer's logged loss, filled in
    assert all(m.tokens == 2 * 16 and m.step_time_s > 0 for m in record.steps)
    assert record.summary == summarize(record.steps, "CPU")  # recomputed beyond the last written summary
    assert record.summary.measured_steps == len(record.steps) - 1
    assert (record.protocol.model, record.protocol.micro_batch, record.protocol.seq_len) == ("tiny-llama", 2, 16)
    assert record.plan.batch_size == 2  # the plan inferred while the run went on
