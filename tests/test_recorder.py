"""Tests for gpuwork.measure.recorder: what the three runners measure with (one process, CPU)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import torch

from gpuwork.measure import records
from gpuwork.measure.record import TrialRecord
from gpuwork.measure.recorder import DeviceMemory, Ranks, own_run_path, run_id, write_record

CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_cpu_memory_counts_from_the_baseline_or_adds_what_was_loaded():
    trial = DeviceMemory(torch.device("cpu"), sample_interval_s=0)
    loaded = DeviceMemory(torch.device("cpu"), sample_interval_s=0, loaded_bytes=10_000_000)
    try:
        block = bytearray(64 * 2**20)  # above glibc's largest mmap threshold (32 MiB): fresh pages, resident once written
        block[::4096] = b"x" * len(block[::4096])
        grown = trial.step_fields()
        assert grown["trial_memory_bytes"] >= 60 * 2**20  # at least most of the 64 MiB written
        assert grown["rss_peak_bytes"] - trial.baseline_bytes == grown["trial_memory_bytes"]
        assert set(grown) == {"trial_memory_bytes", "rss_peak_bytes", "rss_after_step_bytes"}
        assert loaded.trial_bytes() == loaded.rss.peak_bytes - loaded.baseline_bytes + 10_000_000
        del block
    finally:
        trial.close()
        loaded.close()


def test_a_memory_cap_raises_the_out_of_memory_the_trial_records():
    # the loaded tensors count, so the cap is passed whatever the allocator gave back before
    memory = DeviceMemory(torch.device("cpu"), cap_bytes=2**20, sample_interval_s=0, loaded_bytes=2**21)
    roomy = DeviceMemory(torch.device("cpu"), cap_bytes=2**50, sample_interval_s=0, loaded_bytes=2**21)
    try:
        with pytest.raises(torch.OutOfMemoryError) as info:
            memory.check("forward")
        assert info.value.gpuwork_msg.code == "trial.memory_cap_exceeded"
        assert info.value.gpuwork_msg["phase"] == "forward" and info.value.gpuwork_msg["cap_mib"] == 1.0
        roomy.check("forward")  # under the cap: nothing raised
        assert memory.highest_bytes >= 2**21
    finally:
        memory.close()
        roomy.close()


def test_one_process_agrees_with_itself():
    ranks = Ranks()
    assert (ranks.active, ranks.rank, ranks.size) == (False, 0, 1)
    assert ranks.agree({"a": 1}) == {"a": 1} and ranks.gather(3) == [3]


def test_run_names_never_take_an_existing_file(tmp_path):
    first = run_id(tmp_path, "tiny-llama", "lora", CREATED)
    assert first.startswith("trial-tiny-llama-lora-20260102T030405Z-") and len(first.rsplit("-", 1)[1]) == 12
    (tmp_path / f"{first}.json").write_text("{}")
    assert run_id(tmp_path, "tiny-llama", "lora", CREATED) != first
    path = own_run_path(tmp_path, "org/My Model", "full", CREATED)
    assert path.name == f"{records.run_stem('org/My Model', 'full', CREATED)}.json"
    assert path.name == "trial-org_My_Model-full-20260102T030405Z.json"
    path.write_text("{}")
    assert own_run_path(tmp_path, "org/My Model", "full", CREATED).name.endswith("Z-2.json")


def test_a_record_is_written_whole_and_reads_back(tmp_path):
    from pathlib import Path

    source = Path(__file__).resolve().parent / "data" / "trial_record_own_run.json"
    record = TrialRecord.from_json(source)
    out = write_record(record, tmp_path / "r.json")
    assert TrialRecord.from_json(out) == record
    # the record and its steps file beside it, no temporary file left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.steps.jsonl"]
