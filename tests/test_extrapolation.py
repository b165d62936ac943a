"""Tests for gpuwork.measure.extrapolation's range: the whole run at the ends of the median step's 95 % interval,
from records with fixed step lists (numbers worked by hand), and `gpuwork compare` showing it."""

from __future__ import annotations

import pytest

from gpuwork.measure.extrapolation import extrapolate
from gpuwork.measure.trial import (
    StepMeasurement,
    TrialEnvironment,
    TrialProtocol,
    TrialRecord,
    compare,
    summarize,
)
from gpuwork.plan import TrainPlan

TOKENS = 1000  # per step


def record(times: list[float], *, device: str = "cpu", device_name: str = "a CPU", total_bytes: int = 2**34,
           plan: TrainPlan | None = None) -> TrialRecord:
    """A trial record of one warm-up step plus ``times`` as measured steps (no torch involved)."""
    plan = plan or TrainPlan(model="tiny-llama", method="lora", precision="fp32", seq_len=100, batch_size=10,
                             dataset_tokens=1_000_000, epochs=1.0, checkpoint_every_steps=100_000,
                             eval_fraction=0.05)
    steps = tuple(StepMeasurement(step=i + 1, is_warmup=i == 0, loss=2.0, step_time_s=t, data_wait_s=0.0,
                                  tokens=TOKENS, tokens_per_s=TOKENS / t, grad_norm=1.0, learning_rate=1e-3,
                                  trial_memory_bytes=1) for i, t in enumerate([9.0, *times]))
    protocol = TrialProtocol(
        model=plan.model, method=plan.method.value, task="causal-lm", steps=len(times), warmup=1,
        micro_batch=plan.batch_size, grad_accum=1, seq_len=plan.seq_len, tokens_per_step=TOKENS, seed=0,
        learning_rate=1e-3, lr_schedule="constant", max_grad_norm=1.0, precision_requested="fp32",
        precision_used="fp32", attention_requested="sdpa", attention_used="sdpa", optimizer="adamw",
        optimizer_class="torch.optim.AdamW", grad_checkpointing=False, params_total=1, params_trainable=1,
        weights="random", dataset={}, tokenizer={}, loader_workers=0, memory_cap_bytes=None, substitutions=(),
        plan=plan.as_dict())
    env = TrialEnvironment(python="3", platform="linux", torch="2", transformers=None, peft=None, bitsandbytes=None,
                           accelerate=None, tokenizers=None, device=device, device_name=device_name,
                           device_total_bytes=total_bytes, cpu_model="cpu", cpu_logical_cores=2, torch_threads=1,
                           ram_total_bytes=2**34)
    return TrialRecord(protocol=protocol, environment=env, summary=summarize(steps), steps=steps, checkpoint=None,
                       fits=True, error=None, peak_trial_memory_bytes=1, created_utc="2025-01-01T00:00:00+00:00",
                       duration_s=1.0)


# ten measured steps: sorted 0.9 0.9 0.95 1.0 1.0 1.0 1.0 1.1 1.2 1.3 -> median 1.0, interval [x(2), x(9)] = [0.9, 1.2]
TEN = [1.0, 0.9, 1.2, 1.0, 0.95, 1.3, 1.0, 0.9, 1.1, 1.0]


def test_whole_run_time_and_cost_as_a_range() -> None:
    ext = extrapolate(record(TEN), margin=0.1, price_per_gpu_hour=3.0, offers=[])
    # 1,000,000 tokens / 1000 per step = 1000 steps; no checkpoint (one every 100,000 steps)
    assert ext.steps == 1000 and ext.checkpoints == 0 and ext.checkpoint_s == 0
    assert (ext.step_time_low_s, ext.step_time_s, ext.step_time_high_s) == (0.9, 1.0, 1.2)
    # median: (1000 s + 5 % validation) x 1.1 margin = 1155 s; low 900 s -> 1039.5 s; high 1200 s -> 1386 s
    assert ext.total_s == pytest.approx(1155.0)
    assert (ext.total_low_s, ext.total_high_s) == (pytest.approx(1039.5), pytest.approx(1386.0))
    # $3 per GPU-hour x 1 GPU: 1155 / 3600 x 3 = $0.9625; ends $0.86625 and $1.155
    assert ext.cost == pytest.approx(0.9625)
    assert (ext.cost_low, ext.cost_high) == (pytest.approx(0.86625), pytest.approx(1.155))
    assert ext.confidence == 0.95
    codes = [n.code for n in ext.notes]
    assert "extrapolation.no_interval" not in codes
    data = ext.as_dict()
    assert data["total_low_s"] == pytest.approx(1039.5) and data["cost_high"] == pytest.approx(1.155)


def test_five_steps_give_one_figure_and_say_so() -> None:
    ext = extrapolate(record(TEN[:5]), offers=[])
    assert ext.total_low_s is ext.total_high_s is ext.cost_low is None
    note = next(n for n in ext.notes if n.code == "extrapolation.no_interval")
    assert note["steps"] == 5


def test_a_drift_larger_than_the_interval_is_noted() -> None:
    # 1.00 .. 1.45 s in steps of 0.05: slope 0.05 s/step over a median of 1.225 s; across 9 steps the trend
    # moves the step 0.05 x 9 / 1.225 = 37 %, more than the interval's half-width
    rising = [1.0 + 0.05 * i for i in range(10)]
    ext = extrapolate(record(rising), offers=[])
    assert ext.drift_per_100_steps == pytest.approx(0.05 * 100 / 1.225)
    note = next(n for n in ext.notes if n.code == "extrapolation.drift")
    assert note["drift_pct"] == pytest.approx(0.05 * 100 / 1.225 * 100)
    assert "extrapolation.drift" not in [n.code for n in extrapolate(record(TEN), offers=[]).notes]


def test_catalog_offers_are_billed_at_both_ends() -> None:
    gpu = record(TEN, device="cuda:0", device_name="NVIDIA H100 80GB HBM3", total_bytes=85_520_809_984)
    ext = extrapolate(gpu)
    assert ext.catalog_gpu_id == "h100_sxm" and ext.offers
    for offer in ext.offers:  # each bills the low and high hours by its own rule (minimum, whole periods)
        assert offer.cost_low <= offer.cost <= offer.cost_high


def test_compare_rows_and_table_show_the_range(capsys) -> None:
    from gpuwork.cli.trial import format_compare

    rows = compare([record(TEN), record(TEN[:5])], price_per_hour=3.0)
    first, few = rows
    assert (first["step_time_low_s"], first["step_time_high_s"]) == (0.9, 1.2)
    assert first["step_time_half_width"] == pytest.approx(0.2)  # (1.2 - 1.0) / 1.0, the larger side
    assert first["measured_steps"] == 10 and first["converged"] is None
    # cost per 1M tokens at 1000 tokens/s: $3 / 3600 x 1000 s = $0.8333; at the ends x 0.9 and x 1.2
    assert first["cost_per_1m_tokens"] == pytest.approx(3 / 3.6)
    assert first["cost_per_1m_tokens_low"] == pytest.approx(0.9 * 3 / 3.6)
    assert first["cost_per_1m_tokens_high"] == pytest.approx(1.2 * 3 / 3.6)
    assert few["step_time_low_s"] is None and few["cost_per_1m_tokens_low"] is None
    lines = {line.split("  ")[0]: line.split() for line in format_compare(rows).splitlines()}
    assert " ".join(lines["step time 95 % interval"][5:]) == "0.900 s - 1.200 s (+-20.0%) -"
    assert " ".join(lines["cost per 1M tokens, 95 %"][-4:]) == "$0.7500 - $1.0000 -"
    assert lines["measured steps"][-2:] == ["10", "5"]
    russian = format_compare(rows, "ru")
    assert "интервал времени шага 95" in russian and "0,7500 – 1,0000 USD" in russian
