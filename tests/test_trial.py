"""Tests for gpuwork.measure.trial: real tiny fine-tunes on CPU, measured, checkpointed, capped and ramped.

Models are the tiny presets (a few million parameters) at seq 64, batch 2, a few steps each.
Timings are never asserted (the machine is shared and noisy); counts, flags and exact losses are.
"""

from __future__ import annotations

import gc
import json
import math
import tempfile
import weakref
from pathlib import Path

import pytest
import torch

from gpuwork.facts.model import count_params, get_spec
from gpuwork.measure.checkpoint import CPU_LOSS_RTOL, RESUME_STEPS, FileCheckpoint
from gpuwork.measure.runtime import Parallel
from gpuwork.measure.trial import (
    DATA_WAIT_THRESHOLD,
    DEFAULT_MAX_STEPS,
    StepMeasurement,
    TrialError,
    TrialOptions,
    TrialRecord,
    compare,
    iter_trial,
    ramp,
    run_trial,
    summarize,
)
from gpuwork.message import msg
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render

PRESET = "tiny-llama"


@pytest.fixture(autouse=True, scope="module")
def _one_thread(one_thread):
    """Every test here trains: one torch thread (see conftest)."""


@pytest.fixture(scope="module")
def model_ref(tmp_path_factory):
    """The tiny-llama preset, or an equivalent config.json while the presets are being written."""
    if Path(__file__).resolve().parent.parent.joinpath("data", "models", f"{PRESET}.json").is_file():
        return PRESET
    path = tmp_path_factory.mktemp("model") / "config.json"
    path.write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
        "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 32, "num_hidden_layers": 4,
        "vocab_size": 4096, "max_position_embeddings": 2048, "tie_word_embeddings": False,
        "rms_norm_eps": 1e-5, "hidden_act": "silu",
    }))
    return str(path)


def tiny(model_ref: str, **changes) -> TrainPlan:
    base = dict(model=model_ref, method="full", precision="fp32", seq_len=64, batch_size=2, lora_r=8,
                lora_alpha=16, trainable_layers=1)
    base.update(changes)
    return TrainPlan(**base)


def assert_complete(record: TrialRecord, steps: int, warmup: int) -> None:
    assert record.fits and record.error is None
    assert len(record.steps) == steps + warmup
    assert [s.step for s in record.steps] == list(range(1, steps + warmup + 1))
    assert [s.is_warmup for s in record.steps] == [True] * warmup + [False] * steps
    assert all(math.isfinite(s.loss) and s.loss > 0 for s in record.steps)
    assert all(s.step_time_s > 0 and s.tokens_per_s > 0 and math.isfinite(s.grad_norm) for s in record.steps)
    assert record.summary is not None and record.summary.measured_steps == steps
    assert record.summary.losses_finite


def assert_resumed_exactly(record: TrialRecord) -> None:
    ck = record.checkpoint
    assert ck is not None, record
    assert ck.verified, ck.message
    assert ck.tensors_equal and ck.tensors_checked > 0
    assert len(ck.resumed_losses) == RESUME_STEPS
    assert ck.resumed_losses == ck.uninterrupted_losses  # bit-exact on CPU
    assert ck.loss_rtol == CPU_LOSS_RTOL == 0.0
    assert ck.bytes_on_disk == sum(ck.files.values()) > 0
    assert ck.save_s > 0 and ck.restore_s > 0


# -- pure parts ------------------------------------------------------------------------------------------


def step(n: int, warm: bool, time_s: float, wait_s: float = 0.0, loss: float = 2.0, memory: int = 100):
    return StepMeasurement(step=n, is_warmup=warm, loss=loss, step_time_s=time_s, data_wait_s=wait_s, tokens=100,
                           tokens_per_s=100 / time_s, grad_norm=1.0, learning_rate=1e-3, trial_memory_bytes=memory,
                           rss_peak_bytes=memory + 1000)


def test_summary_excludes_warmup_steps():
    steps = [step(1, True, 10.0, memory=999), step(2, True, 5.0)] + [step(i, False, t) for i, t in
                                                                     zip(range(3, 8), [1.0, 2.0, 3.0, 4.0, 100.0], strict=True)]
    summary = summarize(steps, "CPU")
    assert summary.measured_steps == 5
    assert summary.median_step_time_s == 3.0
    assert summary.p90_step_time_s == pytest.approx(4.0 + 0.6 * 96.0)  # linear interpolation, numpy's default
    assert summary.min_step_time_s == 1.0
    assert summary.tokens_per_s == pytest.approx(100 / 3.0)
    assert summary.peak_trial_memory_bytes == 100  # the warm-up's 999 is not counted
    assert summary.warmup_mean_step_time_s == 7.5
    assert summarize(steps[:2]) is None


def test_data_wait_verdict():
    fast = summarize([step(1, False, 1.0, wait_s=0.01), step(2, False, 1.0, wait_s=0.01)], "GPU")
    slow = summarize([step(1, False, 1.0, wait_s=0.2), step(2, False, 1.0, wait_s=0.2)], "GPU")
    assert not fast.data_bound and fast.data_wait_fraction == pytest.approx(0.01)
    assert slow.data_bound and slow.data_wait_fraction > DATA_WAIT_THRESHOLD
    assert fast.verdict.code == "trial.data_wait.keeps_up" and fast.verdict["share"] == pytest.approx(0.01)
    assert slow.verdict.code == "trial.data_wait.bound" and slow.verdict["share"] == pytest.approx(0.2)
    assert (slow.verdict["device"], slow.verdict["threshold"]) == ("GPU", DATA_WAIT_THRESHOLD)
    assert render(slow.verdict).startswith("the GPU waits for data: 20% of step time is data wait (more than 5%)")
    assert render(slow.verdict, "ru").startswith("GPU ждёт данные: ожидание данных — 20 % времени шага")


def test_bad_arguments_are_refused(model_ref):
    with pytest.raises(TrialError, match="at least one step"):
        run_trial(tiny(model_ref), steps=0)
    with pytest.raises(TrialError, match="warmup"):
        run_trial(tiny(model_ref), warmup=-1)


def test_one_options_object_and_its_keywords_run_the_same_trial(model_ref):
    base = TrialOptions(steps=5, warmup=3, seed=7, checkpoint=False)
    with pytest.raises(TypeError):
        base.replace(stepz=2)  # a misspelt option is not silently ignored
    with pytest.raises(TrialError) as cap:
        run_trial(tiny(model_ref), base, memory_cap_bytes=0)
    assert cap.value.msg.code == "error.trial.memory_cap"
    assert TrialOptions(until_stable=0.05).checked().max_steps == DEFAULT_MAX_STEPS
    assert TrialOptions(steps=4, warmup=1).checked().last_step == 5
    by_object = run_trial(tiny(model_ref), base.replace(steps=2, warmup=1))
    by_keywords = run_trial(tiny(model_ref), base, steps=2, warmup=1)  # keywords change a copy of base
    assert base.steps == 5 and by_object.protocol.steps == by_keywords.protocol.steps == 2
    assert [s.loss for s in by_object.steps] == [s.loss for s in by_keywords.steps]  # seed 7 both times
    assert by_object.protocol.seed == 7 and by_object.checkpoint is None


# -- every method, real training on CPU --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("method", ["full", "scratch", "freeze", "lora", "qlora"])
def test_every_method_trains_measures_and_resumes_exactly(model_ref, method):
    plan = tiny(model_ref, method=method, precision="bf16-mixed")
    seen = []
    record = run_trial(plan, steps=3, warmup=1, callbacks=[seen.append])
    assert_complete(record, steps=3, warmup=1)
    assert seen == list(record.steps)
    assert_resumed_exactly(record)
    p = record.protocol
    assert p.precision_used == "fp32" and p.substitutions == (msg("trial.sub.precision_cpu", precision="bf16-mixed"),)
    assert "bf16-mixed -> fp32" in render(p.substitutions[0])
    assert p.tokens_per_step == 128 and record.summary.tokens_per_step == 128
    expected = count_params(get_spec(model_ref), plan)
    assert p.params_trainable == expected.trainable
    assert p.params_total == expected.total
    weights = "adapter_model.safetensors" if method in ("lora", "qlora") else "model.safetensors"
    assert weights in record.checkpoint.files
    assert record.summary.first_loss < 9.0  # ln(4096) = 8.3 at random init


class _LosesOptimizerState(FileCheckpoint):
    """A restore that drops the optimizer state: the broken resume the round-trip exists to catch."""

    def load(self, run, setup, folder):
        rng = super().load(run, setup, folder)
        run.optimizer.state.clear()
        return rng


class _OneProcessStoringIn(Parallel):
    """One process, its checkpoint written by ``store`` (the ``checkpoint_store`` seam torchrun ranks use)."""

    def __init__(self, store):
        self.store = store

    def checkpoint_store(self):
        return self.store


@pytest.mark.slow
def test_the_one_round_trip_judges_any_store_and_catches_a_lost_optimizer_state(model_ref):
    record = run_trial(tiny(model_ref), steps=1, warmup=1, parallel=_OneProcessStoringIn(_LosesOptimizerState()))
    ck = record.checkpoint
    assert record.fits and not ck.verified and not ck.tensors_equal
    assert ck.message.code == "checkpoint.not_verified_because"
    entries, losses = ck.message["parts"]
    assert entries.code == "checkpoint.state_differs" and entries["first"].startswith("optimizer.state.")
    assert render(ck.message).startswith("checkpoint NOT verified: ")
    assert "differ after the restore (first: optimizer.state." in render(ck.message)
    assert ck.resumed_losses[0] == ck.uninterrupted_losses[0]  # the weights came back
    assert ck.resumed_losses[1] != ck.uninterrupted_losses[1]  # the 2nd step reads the lost AdamW moments
    assert losses.code == "checkpoint.losses_differ" and losses["diff"] == ck.max_abs_loss_diff > 0
    assert "differ from uninterrupted" in render(ck.message)


@pytest.mark.slow
@pytest.mark.parametrize("optimizer", ["adamw-8bit", "paged-adamw-8bit", "adafactor", "sgd", "lion"])
def test_every_optimizer_steps_and_its_state_restores(model_ref, optimizer):
    record = run_trial(tiny(model_ref, method="freeze", optimizer=optimizer), steps=2, warmup=0)
    assert_complete(record, steps=2, warmup=0)
    assert_resumed_exactly(record)
    assert record.protocol.optimizer == optimizer
    if optimizer == "paged-adamw-8bit":
        assert msg("trial.sub.paged_cpu") in record.protocol.substitutions


@pytest.mark.slow
def test_full_training_lowers_the_loss(model_ref):
    record = run_trial(tiny(model_ref, method="full"), steps=6, warmup=2, checkpoint=False, lr=1e-3)
    assert_complete(record, steps=6, warmup=2)
    losses = [s.loss for s in record.steps]
    assert min(losses[-3:]) < losses[0]
    assert record.checkpoint is None


@pytest.mark.slow
@pytest.mark.parametrize("method", ["lora", "qlora", "freeze"])
def test_grad_accumulation_and_checkpointing(model_ref, method):
    plan = tiny(model_ref, method=method, grad_accum=2, grad_checkpointing=True, lora_targets="all-linear",
                lora_dropout=0.1)
    record = run_trial(plan, steps=2, warmup=1)
    assert_complete(record, steps=2, warmup=1)
    assert record.protocol.tokens_per_step == 2 * 64 * 2
    assert all(s.tokens == 256 for s in record.steps)
    assert record.protocol.grad_checkpointing
    assert_resumed_exactly(record)  # dropout RNG restored too


@pytest.mark.slow
@pytest.mark.parametrize(("model", "task", "method"), [("tiny-bert", "auto", "full"),
                                                     ("tiny-llama", "seq-cls", "lora"),
                                                     ("tiny-gpt2", "auto", "full")])
def test_other_heads_and_families(model, task, method):
    plan = TrainPlan(model=model, task=task, method=method, precision="fp32", seq_len=64, batch_size=2, lora_r=4,
                     attention="flash")
    record = run_trial(plan, steps=2, warmup=1)
    assert_complete(record, steps=2, warmup=1)
    assert_resumed_exactly(record)  # tiny-gpt2 and tiny-bert have dropout
    p = record.protocol
    assert p.task == {"tiny-bert": "masked-lm", "tiny-llama": "seq-cls", "tiny-gpt2": "causal-lm"}[model]
    assert p.attention_requested == "flash" and p.attention_used in ("sdpa", "eager")
    assert msg("trial.sub.flash", reason="no_cuda") in p.substitutions
    assert "attention flash -> sdpa: no CUDA device" in [render(s) for s in p.substitutions]


def test_a_masked_lm_trial_says_its_head_runs_on_every_position():
    """transformers' BertForMaskedLM has no gather: a plan's mlm_predictions is listed as a substitution, and
    a causal-LM plan (where the field means nothing) lists none."""
    bert = TrainPlan(model="tiny-bert", task="masked-lm", method="full", precision="fp32", seq_len=64, batch_size=2,
                     attention="eager", mlm_predictions=10)
    record = run_trial(bert, steps=1, warmup=0, checkpoint=False)
    assert record.fits
    assert msg("trial.sub.mlm_every_position", n=10, seq_len=64) in record.protocol.substitutions
    assert "all 64 positions, not only on the 10 masked" in render(record.protocol.substitutions[-1])
    plain = run_trial(bert.replace(mlm_predictions=None), steps=1, warmup=0, checkpoint=False)
    assert not any(m.code == "trial.sub.mlm_every_position" for m in plain.protocol.substitutions)


@pytest.mark.slow
def test_fp32_plan_has_no_precision_substitution_and_eager_attention(model_ref):
    record = run_trial(tiny(model_ref, attention="eager"), steps=1, warmup=0, checkpoint=False)
    assert record.protocol.precision_used == "fp32" and record.protocol.substitutions == ()
    assert record.protocol.attention_used == "eager"


@pytest.mark.slow
def test_local_model_folder_with_weights_is_loaded(model_ref, tmp_path):
    import transformers

    from gpuwork.facts.model import load_config

    config, _ = load_config(model_ref)
    torch.manual_seed(7)
    model = transformers.AutoModelForCausalLM.from_config(transformers.CONFIG_MAPPING["llama"].from_dict(config))
    model.save_pretrained(str(tmp_path / "weights"))
    record = run_trial(tiny(str(tmp_path / "weights"), method="lora"), steps=1, warmup=0, checkpoint=False)
    assert record.fits and record.protocol.weights == str(tmp_path / "weights")
    scratch = run_trial(tiny(str(tmp_path / "weights"), method="scratch"), steps=1, warmup=0, checkpoint=False)
    assert scratch.protocol.weights == "random"


@pytest.mark.slow
def test_users_jsonl_data_is_recorded(model_ref, tmp_path):
    rows = [json.dumps({"text": f"Line {i}: the checkpoint was saved and restored without loss."}) for i in range(40)]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(rows))
    record = run_trial(tiny(model_ref), steps=2, warmup=0, data=path, checkpoint=False, loader_workers=1)
    ds = record.protocol.dataset
    assert ds["name"] == "mine.jsonl" and ds["documents"] == 40 and len(ds["sha256"]) == 64
    assert record.protocol.tokenizer["kind"] == "bpe-trained" and record.protocol.loader_workers == 1
    assert record.fits and all(s.data_wait_s >= 0 for s in record.steps)


@pytest.mark.slow
def test_prepared_text_data_is_reused_or_repacked(model_ref):
    from gpuwork.measure.textdata import prepare_text_data

    data = prepare_text_data(seq_len=32, vocab_size=4096)
    state = torch.get_rng_state()
    same = run_trial(tiny(model_ref, seq_len=32), steps=1, warmup=0, data=data, checkpoint=False)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's RNG is left as it was
    assert same.protocol.dataset["seq_len"] == 32 and same.protocol.dataset["sha256"] == data.source.sha256
    longer = run_trial(tiny(model_ref, seq_len=64), steps=1, warmup=0, data=data, checkpoint=False)
    assert longer.protocol.dataset["seq_len"] == 64 and longer.protocol.tokenizer == data.tokenizer.as_dict()


# -- seams: clock, generator -----------------------------------------------------------------------------


class TickClock:
    def __init__(self, tick: float):
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


@pytest.mark.slow
def test_generator_yields_steps_then_returns_the_record_with_an_injected_clock(model_ref):
    gen = iter_trial(tiny(model_ref, method="lora"), steps=2, warmup=1, clock=TickClock(0.25), checkpoint=False)
    yielded = []
    with pytest.raises(StopIteration) as stop:
        while True:
            yielded.append(next(gen))
    record = stop.value.value
    assert isinstance(record, TrialRecord) and list(record.steps) == yielded
    for s in yielded:
        assert s.step_time_s / 0.25 == pytest.approx(round(s.step_time_s / 0.25))
        assert s.data_wait_s == pytest.approx(0.25)  # one micro-batch fetch = one tick
    assert record.summary.data_bound  # with this clock, data wait is a large share of each step


# -- out of memory --------------------------------------------------------------------------------------------


def oom_above(limit_tokens: int):
    """A model factory whose forward raises a real torch.OutOfMemoryError above a batch size."""
    import transformers

    def factory(config, plan):
        model = transformers.AutoModelForCausalLM.from_config(config)
        forward = model.forward

        def guarded(*args, **kwargs):
            ids = kwargs["input_ids"]
            if ids.numel() > limit_tokens:
                raise torch.OutOfMemoryError(f"simulated: {ids.numel()} tokens > {limit_tokens}")
            return forward(*args, **kwargs)

        model.forward = guarded
        return model

    return factory


@pytest.mark.slow
def test_memory_cap_gives_fits_false_and_the_process_goes_on(model_ref):
    failed = run_trial(tiny(model_ref, method="full"), steps=2, warmup=1, memory_cap_bytes=1)
    assert not failed.fits
    error = failed.error
    assert error.code == "trial.memory_cap_exceeded" and error["phase"] in ("build", "forward")
    assert error["used_mib"] > error["cap_mib"] == pytest.approx(1 / 2**20)
    assert render(error).startswith("memory cap exceeded after")
    assert failed.peak_trial_memory_bytes > 1
    assert failed.checkpoint is None and failed.summary is None
    ok = run_trial(tiny(model_ref, method="lora"), steps=1, warmup=0, checkpoint=False)
    assert ok.fits and ok.summary.measured_steps == 1


@pytest.mark.slow
def test_a_real_out_of_memory_error_in_a_step_is_recorded(model_ref):
    plan = tiny(model_ref, batch_size=4)
    record = run_trial(plan, steps=2, warmup=1, model_factory=oom_above(128))
    assert not record.fits and record.steps == ()
    assert record.error == msg("trial.out_of_memory", kind="OutOfMemoryError", detail="simulated: 256 tokens > 128")
    fine = run_trial(tiny(model_ref, batch_size=2), steps=1, warmup=0, model_factory=oom_above(128))
    assert fine.fits
    assert_resumed_exactly(fine)  # the factory is called again for the restore


@pytest.mark.slow
def test_ramp_finds_the_limit_exactly_with_a_simulated_device(model_ref):
    result = ramp(tiny(model_ref, batch_size=1, seq_len=32), max_seq_len=256, steps=1, warmup=0,
                  model_factory=oom_above(4 * 64))
    assert result.max_batch_size == 8  # 8 x 32 = 256 fits, 16 x 32 does not
    assert result.max_seq_len == 32 and result.seq_limited_by == "out of memory"
    assert result.batch_limited_by == "out of memory"
    assert [(p.batch_size, p.seq_len, p.fits) for p in result.probes] == [
        (1, 32, True), (2, 32, True), (4, 32, True), (8, 32, True), (16, 32, False), (8, 64, False)]
    down = ramp(tiny(model_ref, batch_size=16, seq_len=32), max_seq_len=32, steps=1, warmup=0,
                model_factory=oom_above(4 * 32))
    assert down.max_batch_size == 4 and [p.batch_size for p in down.probes] == [16, 8, 4]
    none = ramp(tiny(model_ref, batch_size=2, seq_len=32), steps=1, warmup=0, model_factory=oom_above(1))
    assert none.max_batch_size is None and none.batch_limited_by == "nothing fit"


@pytest.mark.slow
def test_ramp_under_a_memory_cap(model_ref):
    probe = run_trial(tiny(model_ref, batch_size=1), steps=1, warmup=1, checkpoint=False)
    cap = probe.summary.peak_trial_memory_bytes + 48 * 2**20
    result = ramp(tiny(model_ref, batch_size=1), max_batch_size=64, max_seq_len=512, steps=1, warmup=0,
                  memory_cap_bytes=cap)
    assert result.max_batch_size is not None and result.max_batch_size >= 1
    assert any(not p.fits for p in result.probes)
    for p in result.probes:
        if not p.fits:
            assert p.error.code == "trial.memory_cap_exceeded"
            assert p.peak_trial_memory_bytes > cap


# -- records: JSON, files, comparison ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def written(model_ref, tmp_path_factory):
    out = tmp_path_factory.mktemp("trials")
    record = run_trial(tiny(model_ref, method="lora"), steps=2, warmup=1, out_dir=out)
    return record, out


@pytest.mark.slow
def test_record_json_round_trips(written, tmp_path):
    record, _ = written
    path = tmp_path / "record.json"
    record.to_json(path)
    again = TrialRecord.from_json(path)
    assert again == record
    assert TrialRecord.from_json(record.to_json()) == record
    assert again.plan == record.plan
    env = again.environment
    assert env.device == "cpu" and env.torch == torch.__version__ and env.ram_total_bytes > 0
    assert env.cpu_logical_cores >= 1 and env.peft and env.transformers and env.bitsandbytes


@pytest.mark.slow
def test_out_dir_holds_the_record_and_checkpoint_and_nothing_else(written):
    record, out = written
    names = sorted(p.name for p in out.iterdir())
    stem = Path(record.saved_to).stem
    assert names == [f"{stem}-checkpoint", f"{stem}.json", f"{stem}.steps.jsonl"]  # the record and its steps
    assert stem.startswith("trial-tiny-llama-lora-") or stem.startswith("trial-config-lora-")
    assert TrialRecord.from_json(Path(record.saved_to)) == record
    assert record.checkpoint.path == str(out / f"{stem}-checkpoint")
    assert sorted(record.checkpoint.files) == sorted(p.name for p in (out / f"{stem}-checkpoint").iterdir())


@pytest.mark.slow
def test_without_out_dir_nothing_is_left_behind(model_ref, tmp_path, monkeypatch):
    work, temp = tmp_path / "cwd", tmp_path / "tmp"
    work.mkdir()
    temp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # a private temp root: other runs may share /tmp
    seen = []
    record = run_trial(tiny(model_ref, method="qlora"), steps=1, warmup=0,
                       callbacks=[lambda m: seen.extend(p.name for p in temp.iterdir())])
    assert any(name.startswith("gpuwork-trial-") for name in seen)  # the scratch dir existed during the run
    assert record.fits and record.checkpoint.verified and record.checkpoint.path is None
    assert record.saved_to is None
    assert not list(temp.glob("gpuwork-trial-*")) and list(work.iterdir()) == []


@pytest.mark.slow
def test_compare_rows(written, model_ref):
    record, _ = written
    failed = run_trial(tiny(model_ref), steps=1, warmup=0, memory_cap_bytes=1)
    rows = compare([record, failed], price_per_hour=2.0)
    assert [r["fits"] for r in rows] == [True, False]
    assert rows[0].keys() == rows[1].keys()
    row = rows[0]
    assert row["tokens_per_s"] == record.summary.tokens_per_s
    assert row["cost_per_1m_tokens"] == pytest.approx(2.0 / 3600 * 1e6 / record.summary.tokens_per_s)
    assert rows[1]["cost_per_1m_tokens"] is None and rows[1]["median_step_time_s"] is None
    assert compare([record], None)[0]["cost_per_1m_tokens"] is None
    assert compare([record, failed], [1.0, None])[0]["price_per_hour"] == 1.0
    with pytest.raises(TrialError, match="one per record"):
        compare([record, failed], [1.0])


@pytest.mark.slow
def test_models_are_freed_the_restore_never_holds_two_and_oom_releases(model_ref):
    import transformers

    refs: list[weakref.ref] = []
    alive_at_build: list[int] = []

    def factory(config, plan):
        gc.collect()
        alive_at_build.append(sum(r() is not None for r in refs))
        model = transformers.AutoModelForCausalLM.from_config(config)
        refs.append(weakref.ref(model))
        return model

    record = run_trial(tiny(model_ref), steps=1, warmup=0, model_factory=factory)
    assert record.checkpoint.verified
    assert alive_at_build == [0, 0]  # the original was gone before the fresh model was built
    gc.collect()
    assert all(r() is None for r in refs)
    failed = run_trial(tiny(model_ref), steps=1, warmup=0, model_factory=factory, memory_cap_bytes=1)
    assert not failed.fits
    gc.collect()
    assert all(r() is None for r in refs)  # out of memory: everything released, nothing kept alive


# -- the step time's interval and --until-stable ------------------------------------------------------------------


def test_summary_tokens_per_step_is_the_mean_and_the_interval_is_set():
    # a user's run: real tokens vary by batch; the summary takes the mean of the measured steps (not the first)
    steps = [dataclasses_replace(step(i + 1, i == 0, t), tokens=n) for i, (t, n) in
             enumerate(zip([9.0, 1.0, 1.2, 0.9, 1.1, 1.0, 1.05], [10, 90, 110, 100, 95, 105, 100], strict=True))]
    summary = summarize(steps)
    assert summary.tokens_per_step == 100  # (90 + 110 + 100 + 95 + 105 + 100) / 6
    assert summary.tokens_per_s == pytest.approx(100 / 1.025)
    # six measured steps: the whole range is the 95 % interval (coverage 1 - 2/64); median 1.025
    assert (summary.step_time_low_s, summary.step_time_high_s) == (0.9, 1.2)
    assert summary.step_time_coverage == pytest.approx(0.96875)
    assert summary.step_time_half_width == pytest.approx(0.175 / 1.025)
    assert summary.step_time_confidence == 0.95 and "order statistics" in summary.step_time_interval_method
    assert summary.drift_per_100_steps is not None


def dataclasses_replace(obj, **changes):
    import dataclasses

    return dataclasses.replace(obj, **changes)


def test_until_stable_stops_once_the_interval_is_tight(model_ref, tmp_path):
    record = run_trial(tiny(model_ref, method="lora"), steps=6, warmup=1, until_stable=0.03, max_steps=30,
                       clock=TickClock(0.001), checkpoint=False, out_dir=tmp_path)  # equal steps: a tight interval
    st = record.stability
    assert st.converged and st.measured_steps == 6 == record.summary.measured_steps  # checked from the 6th on
    assert (st.tolerance, st.min_steps, st.max_steps, st.confidence) == (0.03, 6, 30, 0.95)
    assert st.half_width == pytest.approx(0.0, abs=1e-9)
    assert len(record.steps) == 7 and record.protocol.steps == 6
    again = TrialRecord.from_json(Path(record.saved_to))  # the rule and its outcome are in the file
    assert again.stability == st and again.summary == record.summary
    assert all(s.padding_tokens == 0 for s in again.steps)  # packed text


def test_until_stable_stops_at_the_cap_when_the_interval_stays_wide(model_ref):
    # real step times never agree to 1e-5 of the median over 8 steps: the cap ends the trial
    record = run_trial(tiny(model_ref, method="lora"), steps=6, warmup=1, until_stable=1e-5, max_steps=8,
                       checkpoint=False)
    st = record.stability
    assert not st.converged and st.measured_steps == 8 == record.summary.measured_steps
    assert st.half_width == record.summary.step_time_half_width > 1e-5
    assert record.summary.step_time_low_s <= record.summary.median_step_time_s <= record.summary.step_time_high_s


def test_until_stable_arguments_are_checked(model_ref):
    with pytest.raises(TrialError) as tolerance:
        run_trial(tiny(model_ref), steps=6, until_stable=1.5)
    assert tolerance.value.msg.code == "error.trial.tolerance"
    with pytest.raises(TrialError) as cap:
        run_trial(tiny(model_ref), steps=6, until_stable=0.03, max_steps=5)
    assert cap.value.msg.code == "error.trial.max_steps" and "at least the 6 of --steps" in str(cap.value)
