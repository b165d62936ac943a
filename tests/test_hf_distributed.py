"""The user's-run callback under torchrun: two gloo processes train a tiny Llama with the real Trainer (DDP);
every rank measures and rank 0 writes one record with per-rank figures, step by step as the run goes, so a
group killed with SIGKILL leaves a record of its finished steps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from gpuwork.cli import main  # noqa: E402
from gpuwork.measure.distributed import free_port  # noqa: E402
from gpuwork.measure.record import steps_path, summarize  # noqa: E402
from gpuwork.measure.recorder import write_record  # noqa: E402
from gpuwork.measure.trial import TrialRecord  # noqa: E402

SCRIPT = textwrap.dedent("""
    import os, sys, torch, transformers
    from gpuwork.facts.model import load_config
    from gpuwork.measure.hf import GpuworkCallback
    from gpuwork.measure.textdata import prepare_text_data

    out, killed = sys.argv[1], sys.argv[2] == "long"  # "long": a whole run, measured until it is killed
    config, _ = load_config("tiny-llama")
    text = prepare_text_data(32, config["vocab_size"])
    rows = []
    for i, seq in enumerate(text.sequences[:32]):
        mask = torch.ones_like(seq)
        mask[32 - (i % 3) * 4:] = 0
        rows.append({"input_ids": seq, "attention_mask": mask, "labels": seq.masked_fill(mask == 0, -100)})
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(
        transformers.CONFIG_MAPPING["llama"].from_dict(dict(config)))
    args = transformers.TrainingArguments(
        output_dir=out + "/run", per_device_train_batch_size=2, gradient_accumulation_steps=1,
        max_steps=100000 if killed else 30,
        report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True, logging_steps=100,
        ddp_backend="gloo")
    # whether the ranks gather each step is rank 0's choice: a script may give out on rank 0 only
    given = out + "/trials" if killed or os.environ["RANK"] == "0" else None
    callback = GpuworkCallback(out=given, steps=None if killed else 3, warmup=1)
    transformers.Trainer(model=model, args=args, train_dataset=rows, callbacks=[callback]).train()
    print("RANK-DONE", torch.distributed.get_rank(), callback.saved_to, flush=True)
    # as gpuwork's own ranks do (gpuwork.measure.distributed._exit_now): torch's teardown at interpreter exit
    # sometimes aborts a gloo rank ("terminate called without an active exception") after all work is done
    torch.distributed.destroy_process_group()
    os._exit(0)
""")


def torchrun(tmp_path: Path, mode: str) -> list[str]:
    """The command that trains SCRIPT on two gloo ranks; ``mode`` "trial" (3 + 1 steps) or "long" (until killed)."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "2",
            "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--max-restarts", "0",
            str(script), str(tmp_path), mode]


ENV = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}


@pytest.mark.slow
def test_two_gloo_ranks_write_one_record_with_per_rank_figures(tmp_path: Path) -> None:
    done = subprocess.run(torchrun(tmp_path, "trial"), env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    files = sorted((tmp_path / "trials").glob("trial-*.json"))
    assert len(files) == 1  # rank 0 writes; rank 1 only measures
    record = TrialRecord.from_json(files[0])
    assert record.world_size == 2 and record.parallel.backend == "gloo" and record.parallel.strategy == "ddp"
    assert [r.rank for r in record.ranks] == [0, 1]
    for rank in record.ranks:
        assert len(rank.step_times_s) == 4 and all(t > 0 for t in rank.step_times_s)
        assert rank.rss_peak_bytes > 0 and rank.peak_trial_memory_bytes > 0
        assert rank.param_bytes == record.ranks[0].param_bytes > 0
        # AdamW: two fp32 states per parameter, plus one 4-byte step counter per parameter tensor
        assert 2 * rank.param_bytes < rank.optimizer_state_bytes <= 2 * rank.param_bytes + 4 * 64
    assert record.ranks[0].params_sha256 == record.ranks[1].params_sha256  # DDP replicas stay equal
    # merged: per step the slowest rank's time and both ranks' tokens
    for i, step in enumerate(record.steps):
        assert step.step_time_s == max(r.step_times_s[i] for r in record.ranks)
    assert record.plan.gpus == 2 and record.protocol.tokens_per_step > 64  # both ranks' real tokens
    assert [r["rank"] for r in record.evaluation["ranks"]] == [0, 1]  # each rank's evaluation passes
    assert "RANK-DONE 0" in done.stdout and "RANK-DONE 1" in done.stdout
    # the steps file grew a merged line a step while the run went; rewritten at once it is the same bytes, so
    # the record appended step by step is the record written whole (same schema, same figures)
    assert record.status == "complete" and record.saved_to == str(files[0])
    assert all(len(json.loads(line)["ranks"]) == 2 for line in steps_path(files[0]).read_text().splitlines())
    again = write_record(record, tmp_path / "again.json")
    assert steps_path(again).read_bytes() == steps_path(files[0]).read_bytes()
    on_disk, whole = json.loads(files[0].read_text()), json.loads(again.read_text())
    assert on_disk.pop("steps_file") != whole.pop("steps_file") and on_disk == whole


def steps_on_disk(folder: Path) -> int:
    """Whole lines in the steps file of the one record in ``folder`` (0 before it exists)."""
    files = list(folder.glob("trial-*.steps.jsonl"))
    return files[0].read_bytes().count(b"\n") if files else 0


@pytest.mark.slow
def test_a_group_killed_mid_run_keeps_every_finished_step_of_every_rank(tmp_path: Path) -> None:
    import psutil

    wanted = 6
    log = tmp_path / "torchrun.log"
    with log.open("wb") as output:  # a file, not a pipe: nothing blocks on output the test does not read
        proc = subprocess.Popen(torchrun(tmp_path, "long"), env=ENV, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600
        while steps_on_disk(tmp_path / "trials") < wanted and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert steps_on_disk(tmp_path / "trials") >= wanted, log.read_text()[-3000:]
        seen = steps_on_disk(tmp_path / "trials")
    finally:  # torchrun and the two ranks it started, each by its PID, all at once
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        for p in tree:
            p.kill()
        psutil.wait_procs(tree, timeout=60)
        proc.wait(timeout=60)
    [path] = sorted((tmp_path / "trials").glob("trial-*.json"))
    record = TrialRecord.from_json(path)  # the package's reader
    done = len(record.steps)
    assert record.status == "running" and record.source == "gpuwork.hf.GpuworkCallback"
    assert done >= seen >= wanted and [m.step for m in record.steps] == list(range(1, done + 1))
    assert record.world_size == 2 and record.parallel.backend == "gloo" and [r.rank for r in record.ranks] == [0, 1]
    for rank in record.ranks:  # every rank's own figures of every finished step
        assert len(rank.losses) == len(rank.step_times_s) == len(rank.data_wait_s) == done
        assert all(t > 0 for t in rank.step_times_s)
    for i, step in enumerate(record.steps):  # merged: the slowest rank's time, the mean loss, both ranks' tokens
        assert step.step_time_s == max(r.step_times_s[i] for r in record.ranks)
        assert step.loss == pytest.approx(sum(r.losses[i] for r in record.ranks) / 2) and step.loss > 0
        assert 64 < step.tokens <= 2 * 2 * 32  # more than one rank's 2 x 32 tokens can hold
    assert record.summary == summarize(record.steps, "CPU") and record.summary.measured_steps == done - 1
    assert record.plan.gpus == 2  # the plan read while the run went on: both processes
    assert main(["compare", str(path)]) == 0
