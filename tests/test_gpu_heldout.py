"""scripts/gpu_heldout.py: predictions for the GPU run's cases, and the comparison once measured."""


import pytest
from conftest import load_benchmark


@pytest.fixture(scope="module")
def heldout():
    return load_benchmark("gpu_heldout", "scripts")


def test_step_plans_describe_the_bare_loop(heldout):
    plan = heldout.step_plan("llama-3.2-1b", "lora", 256, 2)
    assert plan.stack.value == "torch-loop" and plan.grad_clip is False and plan.weight_decay == 0.0
    assert (plan.seq_len, plan.batch_size, plan.lora_r) == (256, 2, 16)


def test_compare_pairs_each_measured_case_with_its_prediction(heldout):
    predictions = {"step": [{"model": "m", "method": "lora", "seq_len": 128, "batch_size": 1, "step_s": 0.09},
                            {"model": "m", "method": "full", "seq_len": 128, "batch_size": 1, "step_s": 0.05}],
                   "trial": [{"model": "m", "method": "full", "seq_len": 256, "batch_size": 2, "step_s": 0.1,
                              "allocated_bytes": 2**30, "reserved_bytes": 3 * 2**29}]}
    sweep = {"step": [{"model": "m", "method": "lora", "seq_len": 128, "batch_size": 1, "wall_s": 0.1}]}
    check = {"results": [{"method": "full", "seq_len": 256, "batch_size": 2,
                          "measured": {"step_time_s": 0.08, "allocated_bytes": 2**30, "reserved_bytes": None}}]}
    rows = heldout.compare(predictions, sweep, check)
    assert [(r["kind"], round(r["error"], 4)) for r in rows] == [("step", -0.1), ("trial step s", 0.25),
                                                                   ("trial allocated", 0.0)]
    text = heldout.report(rows)
    assert "| step | m lora 128 x 1 | 0.1 s | 0.09 s | -10.0% |" in text
    assert "trial step s: 1 cases, median |error| 25.0%" in text
