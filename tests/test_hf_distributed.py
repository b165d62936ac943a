"""The user's-run callback under torchrun: two gloo processes train a tiny Llama with the real Trainer (DDP);
every rank measures and rank 0 writes one record with per-rank figures."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from gpuwork.measure.distributed import free_port  # noqa: E402
from gpuwork.measure.trial import TrialRecord  # noqa: E402

SCRIPT = textwrap.dedent("""
    import sys, torch, transformers
    from gpuwork.facts.model import load_config
    from gpuwork.measure.hf import GpuworkCallback
    from gpuwork.measure.textdata import prepare_text_data

    out = sys.argv[1]
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
        output_dir=out + "/run", per_device_train_batch_size=2, gradient_accumulation_steps=1, max_steps=30,
        report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True, logging_steps=100,
        ddp_backend="gloo")
    callback = GpuworkCallback(out=out + "/trials", steps=3, warmup=1)
    transformers.Trainer(model=model, args=args, train_dataset=rows, callbacks=[callback]).train()
    print("RANK-DONE", torch.distributed.get_rank(), callback.saved_to, flush=True)
    # as gpuwork's own ranks do (gpuwork.measure.distributed._exit_now): torch's teardown at interpreter exit
    # sometimes aborts a gloo rank ("terminate called without an active exception") after all work is done
    torch.distributed.destroy_process_group()
    import os
    os._exit(0)
""")


@pytest.mark.slow
def test_two_gloo_ranks_write_one_record_with_per_rank_figures(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "2",
               "--master-addr", "127.0.0.1", "--master-port", str(free_port()), "--max-restarts", "0",
               str(script), str(tmp_path)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
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
