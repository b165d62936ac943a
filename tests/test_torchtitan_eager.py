"""torchtitan's published rows without torch.compile are priced as the eager stack, the compiled rows as fused."""

from __future__ import annotations

import json
from pathlib import Path

import gpuwork
from gpuwork.measure.time_cases import TIME_CASES, case_gpu
from gpuwork.plan import Stack
from gpuwork.sizing import estimate_time

_TITAN = {c.name: c for c in TIME_CASES if c.source_id == "torchtitan"}


def test_rows_without_compile_are_eager_and_compiled_rows_fused():
    for name, case in _TITAN.items():
        expected = Stack.FRAMEWORK if "compile" in name else Stack.HF_TRAINER
        assert case.plan.stack is expected, name
    assert sum(c.plan.stack is Stack.HF_TRAINER for c in _TITAN.values()) == 6


def test_every_eager_row_quotes_compile_off_at_a_commit():
    for case in _TITAN.values():
        if case.plan.stack is Stack.HF_TRAINER:
            assert "compile = false" in case.notes
            assert "github.com/pytorch/torchtitan/blob/" in case.notes


def test_eager_row_is_slower_than_its_compiled_twin():
    for gpus in (8, 128):
        eager = _TITAN[f"torchtitan Llama-3.1-8B FSDP {gpus}xH100"]
        fused = _TITAN[f"torchtitan Llama-3.1-8B FSDP+compile {gpus}xH100"]
        assert eager.plan.replace(stack=Stack.FRAMEWORK) == fused.plan
        t_eager = estimate_time(eager.plan, case_gpu(eager.gpu_id)).step_time_s
        t_fused = estimate_time(fused.plan, case_gpu(fused.gpu_id)).step_time_s
        assert 1.1 < t_eager / t_fused < 1.5  # eager norms, RoPE, SwiGLU and loss: about a quarter more step time


def test_held_out_torchtitan_rows_without_compile_are_re_read_eager():
    doc = json.loads((Path(gpuwork.__file__).parent / "facts/data/time_heldout.json").read_text(encoding="utf-8"))
    eager_sources = {"crusoecloud-torchtitan": 8, "aws-awsome-distributed-training-torchtitan": 1,
                     "github-adiv413-distributed-pretraining-llm": 3, "github-titan-tritonbench-notes-8xh200": 1,
                     "github-nebius-h200-multinode-poc": 4}
    found = dict.fromkeys(eager_sources, 0)
    for case in (c for s in doc["sets"] for c in s["cases"] if c["source_id"] in eager_sources):
        assert case["plan"]["stack"] == "framework"  # as recorded, untouched
        # (and, where the run used torchtitan's op-level checkpointing, that policy: docs/recompute.md)
        assert case["reread"]["plan"] in ({"stack": "hf-trainer"},
                                          {"stack": "hf-trainer", "grad_checkpointing": True, "recompute": "ops"})
        assert any("compile" in e["quote"] for e in case["reread"]["evidence"])
        found[case["source_id"]] += 1
    assert found == eager_sources
