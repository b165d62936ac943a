"""Trial records are checked when read, as plans are (issue 21, item 3): every number against a range with both
ends, the file through the bounded reader, strings escaped before they reach a terminal.

Each kind of field (seconds, bytes, tokens, a rate, a share, a count, a free-form section) gets an absurd value in
a real record file; ``TrialRecord.from_json``, ``gpuwork compare`` and ``gpuwork request --record`` refuse it with
one line naming the field and the fix, and never print it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gpuwork.cli import main
from gpuwork.measure.errors import TrialError
from gpuwork.measure.record import (
    StepMeasurement,
    TrialEnvironment,
    TrialProtocol,
    TrialRecord,
    compare,
    summarize,
)
from gpuwork.present.messages import render


def make_record(steps: int = 8) -> TrialRecord:
    """A small CPU record built from its parts (no torch): ``steps`` measured steps of 0.1 s or so."""
    measured = [StepMeasurement(step=i, is_warmup=i == 1, loss=8.0 - i / 10, step_time_s=0.1 + i / 1000,
                                data_wait_s=0.001, tokens=64, tokens_per_s=64 / (0.1 + i / 1000), grad_norm=1.0,
                                learning_rate=1e-3, trial_memory_bytes=1000 + i, rss_peak_bytes=2000 + i,
                                rss_after_step_bytes=1900 + i)
                for i in range(1, steps + 2)]
    protocol = TrialProtocol(
        model="tiny-llama", method="lora", task="causal-lm", steps=steps, warmup=1, micro_batch=2, grad_accum=1,
        seq_len=32, tokens_per_step=64, seed=0, learning_rate=1e-3, lr_schedule="constant", max_grad_norm=1.0,
        precision_requested="fp32", precision_used="fp32", attention_requested="sdpa", attention_used="sdpa",
        optimizer="adamw", optimizer_class="torch.optim.AdamW", grad_checkpointing=False, params_total=1000,
        params_trainable=10, weights="random", dataset={"name": "shipped", "size_bytes": 100, "tokens": 5000},
        tokenizer={"kind": "bpe", "vocab_size": 256}, loader_workers=0, memory_cap_bytes=None, substitutions=(),
        plan={"model": "tiny-llama", "method": "lora", "seq_len": 32, "batch_size": 2})
    env = TrialEnvironment(python="3.11", platform="linux", torch="2.13", transformers=None, peft=None,
                           bitsandbytes=None, accelerate=None, tokenizers=None, device="cpu", device_name="a CPU",
                           device_total_bytes=2 ** 34, cpu_model="a CPU", cpu_logical_cores=2, torch_threads=1,
                           ram_total_bytes=2 ** 34)
    return TrialRecord(protocol=protocol, environment=env, summary=summarize(measured, "CPU"), steps=tuple(measured),
                       checkpoint=None, fits=True, error=None, peak_trial_memory_bytes=1000 + steps + 1,
                       created_utc="2026-01-01T00:00:00+00:00", duration_s=12.0)


def write(tmp_path: Path, data: dict, name: str = "rec.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, allow_nan=True))
    return path


def refused(path: Path) -> TrialError:
    with pytest.raises(TrialError) as caught:
        TrialRecord.from_json(path)
    return caught.value


def test_a_good_record_loads_and_round_trips(tmp_path):
    record = make_record()
    back = TrialRecord.from_json(write(tmp_path, record.as_dict()))
    assert back == record


# -- one absurd value per kind of field ------------------------------------------------------------------------

CASES = [  # (where in the data, the value, the field named in the message)
    (("steps", 3, "step_time_s"), -0.5, "steps[3].step_time_s"),  # seconds: negative
    (("summary", "median_step_time_s"), math.nan, "summary.median_step_time_s"),  # seconds: NaN
    (("duration_s",), 1e308, "duration_s"),  # seconds: absurd
    (("steps", 0, "trial_memory_bytes"), -1, "steps[0].trial_memory_bytes"),  # bytes: negative
    (("peak_trial_memory_bytes",), 2 ** 70, "peak_trial_memory_bytes"),  # bytes: 1 ZiB
    (("steps", 2, "tokens"), -64, "steps[2].tokens"),  # tokens: negative
    (("protocol", "tokens_per_step"), 1e15, "protocol.tokens_per_step"),  # tokens: not whole, absurd
    (("summary", "tokens_per_s"), 1e300, "summary.tokens_per_s"),  # a rate
    (("summary", "data_wait_fraction"), 3.0, "summary.data_wait_fraction"),  # a share above 1
    (("protocol", "micro_batch"), 0, "protocol.micro_batch"),  # a count below its low end
    (("environment", "cpu_logical_cores"), 10 ** 12, "environment.cpu_logical_cores"),  # a count: absurd
    (("protocol", "dataset", "tokens"), math.inf, "protocol.dataset.tokens"),  # a free-form section
    (("summary", "drift_per_100_steps"), -1e308, "summary.drift_per_100_steps"),
]


@pytest.mark.parametrize(("where", "value", "field"), CASES, ids=[c[2] for c in CASES])
def test_an_absurd_number_is_refused_naming_the_field(tmp_path, where, value, field):
    data = make_record().as_dict()
    target = data
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    error = refused(write(tmp_path, data))
    text = render(error.msg, "en")
    assert error.msg.code == "error.trial.record_in" and str(tmp_path / "rec.json") in text
    assert field in text and ("run the trial again or correct this field" in text)
    assert field in render(error.msg, "ru") and "повторите пробный запуск" in render(error.msg, "ru")


def test_a_whole_number_field_refuses_a_fraction(tmp_path):
    data = make_record().as_dict()
    data["steps"][1]["step"] = 2.5
    text = render(refused(write(tmp_path, data)).msg, "en")
    assert "steps[1].step = 2.5 must be a whole number" in text


def test_a_diverged_loss_is_a_measurement_not_damage(tmp_path):
    data = make_record().as_dict()
    data["steps"][4]["loss"] = math.nan  # a run whose loss became NaN is recorded as it was
    data["steps"][5]["grad_norm"] = math.inf
    back = TrialRecord.from_json(write(tmp_path, data))
    assert math.isnan(back.steps[4].loss) and back.steps[5].grad_norm == math.inf


def test_the_bounded_reader_refuses_a_fifo_and_a_deep_file(tmp_path):
    import os

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    assert refused(fifo).msg.code == "error.read.not_regular"
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000)
    assert refused(deep).msg.code == "error.read.too_deep"


# -- what the CLI shows ---------------------------------------------------------------------------------------


def test_compare_and_request_refuse_an_absurd_record_in_one_line(tmp_path, capsys):
    data = make_record().as_dict()
    data["summary"]["median_step_time_s"] = -3.0
    path = write(tmp_path, data)
    assert main(["compare", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "summary.median_step_time_s = -3.0" in err[0] and "Traceback" not in err[0]
    assert main(["request", "--model", "tiny-llama", "--method", "lora", "--record", str(path)]) == 2
    captured = capsys.readouterr()
    assert "summary.median_step_time_s = -3.0" in captured.err and "-3.0" not in captured.out


def test_escape_sequences_in_a_record_never_reach_the_terminal(tmp_path, capsys):
    data = make_record().as_dict()
    data["environment"]["device_name"] = "\x1b[2J\x1b[31mEVIL\u202e"
    data["protocol"]["model"] = "tiny\x07-llama"
    path = write(tmp_path, data)
    record = TrialRecord.from_json(path)
    assert record.environment.device_name == "\\x1b[2J\\x1b[31mEVIL\\u202e"
    assert compare([record])[0]["trial"].startswith("tiny\\x07-llama")
    assert main(["compare", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out and "\\x1b[31mEVIL" in out


# -- the schema version ------------------------------------------------------------------------------------------

V1_RECORD = Path(__file__).parent / "data" / "trial_record_v1.json"  # a user's-run record as 0.1.0 wrote it


def test_a_record_of_another_schema_version_gets_one_line_naming_both(tmp_path, capsys) -> None:
    from gpuwork.measure.record import SCHEMA_VERSION

    old = json.loads(V1_RECORD.read_text())
    assert old["schema_version"] == 1 and SCHEMA_VERSION == 2 and "own_run" in old  # steps inside, own_run section
    with pytest.raises(TrialError) as refused:
        TrialRecord.from_json(V1_RECORD)
    assert refused.value.msg.code == "error.trial.record_in"
    inner = refused.value.msg["error"]
    assert inner.code == "error.trial.record_schema" and inner["found"] == "1" and inner["expected"] == 2
    english, russian = render(refused.value.msg, "en"), render(refused.value.msg, "ru")
    assert "schema 1 is not 2" in english and "run the trial again" in english and str(V1_RECORD) in english
    assert "схема записи пробного запуска — 1" in russian and "схему 2" in russian and "\n" not in russian
    # a newer record (a later gpuwork) is refused the same way, never read as if it were this version
    newer = make_record().as_dict() | {"schema_version": 3}
    with pytest.raises(TrialError) as later:
        TrialRecord.from_dict(newer)
    assert later.value.msg.code == "error.trial.record_schema" and later.value.msg["found"] == "3"
    # no version, or one that is not a whole number: it is not a record of this version
    for version in (None, "2", 2.5, True, 10 ** 30):
        with pytest.raises(TrialError) as none:
            TrialRecord.from_dict(make_record().as_dict() | {"schema_version": version})
        assert none.value.msg.code == "error.trial.record_no_schema", version
        assert "schema_version 2" in render(none.value.msg, "en")
        assert "schema_version 2" in render(none.value.msg, "ru")
    # the CLI: one line and a non-zero exit, no traceback
    capsys.readouterr()
    assert main(["compare", str(V1_RECORD)]) != 0
    err = capsys.readouterr().err.strip()
    assert "schema 1 is not 2" in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_a_record_of_this_version_has_no_own_run_section_and_reads_back(tmp_path) -> None:
    record = make_record()
    assert record.schema_version == 2 and "own_run" not in record.as_dict()
    from gpuwork.measure.recorder import write_record

    path = write_record(record, tmp_path / "r.json")
    on_disk = json.loads(path.read_text())
    assert on_disk["schema_version"] == 2 and on_disk["steps"] == [] and on_disk["step_count"] == len(record.steps)
    assert TrialRecord.from_json(path) == record
