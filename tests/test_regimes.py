"""The kinds of run: every stack's kind comes from its stacks.csv columns, and the recorded cases keep theirs."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import gpuwork
from gpuwork.estimate.regimes import EAGER, REGIMES, TUNED, regimes, stack_regime
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.rates import load_rates
from gpuwork.measure.accuracy import case_nodes
from gpuwork.measure.heldout import heldout_sets
from gpuwork.measure.time_cases import TIME_CASES, case_gpu
from gpuwork.plan import Method, Stack, TrainPlan

STACKS_CSV = Path(gpuwork.__file__).parent / "facts" / "data" / "stacks.csv"
# the stack kinds before they were read from the columns (stacks named one by one), and the two plain loops
EXPECTED = {"hf-trainer": EAGER, "hf-trainer-2023": EAGER, "torch-loop": EAGER,
            "unsloth": TUNED, "unsloth-2023-12": TUNED, "unsloth-2024-04": TUNED, "torch-compile": TUNED,
            "torchtune": TUNED, "framework": TUNED, "torch-loop-compile": TUNED,
            "hf-liger": None, "dle-pytorch": None, "litgpt-2023": None, "hf-loop-2024": None,
            "hf-trainer-2024": None}
# the previous rule, by name: the recorded cases must keep what it gave them
_OLD_TUNED = {"unsloth", "unsloth-2023-12", "unsloth-2024-04", "torch-compile", "torchtune", "framework"}
_OLD_EAGER = {"hf-trainer", "hf-trainer-2023"}


def test_every_stack_in_stacks_csv_gets_its_kind_from_its_columns():
    with STACKS_CSV.open(encoding="utf-8", newline="") as f:
        names = [row["stack"] for row in csv.DictReader(f)]
    assert sorted(names) == sorted(EXPECTED) == sorted(s.value for s in Stack)
    stacks = load_rates().stacks
    assert {name: stack_regime(stacks[Stack(name)]) for name in names} == EXPECTED


def test_the_columns_decide_not_the_name():
    eager = load_rates().stacks[Stack.HF_TRAINER]
    assert stack_regime(dataclasses.replace(eager, fuse_elementwise=True)) == TUNED
    assert stack_regime(dataclasses.replace(eager, fused_lora=True)) == TUNED
    assert stack_regime(dataclasses.replace(eager, launch="graph")) == TUNED
    assert stack_regime(dataclasses.replace(eager, fused_norm=True)) is None  # a few ops swapped (Liger)
    assert stack_regime(dataclasses.replace(eager, model_16bit=True)) is None  # no autocast casts (apex O2)
    assert stack_regime(dataclasses.replace(eager, adapters_fp32=False)) is None
    # a caller's own profiles are read, not the bundled ones
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048)
    h100 = get_gpu("h100_sxm")
    stacks = {**load_rates().stacks, Stack.HF_TRAINER: dataclasses.replace(eager, fuse_elementwise=True)}
    assert regimes(plan, h100, 1) == (EAGER,) and regimes(plan, h100, 1, stacks) == (TUNED,)


def test_the_plain_pytorch_loops():
    h100 = get_gpu("h100_sxm")
    for stack, kind in (("torch-loop", EAGER), ("torch-loop-compile", TUNED)):
        plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048, stack=stack)
        assert regimes(plan, h100, 1) == (kind,)


def _old_regimes(found: tuple[str, ...], stack: Stack) -> tuple[str, ...]:
    kept = tuple(r for r in found if r not in (TUNED, EAGER))
    return kept + ((TUNED,) if stack.value in _OLD_TUNED else (EAGER,) if stack.value in _OLD_EAGER else ())


def test_recorded_cases_keep_their_kinds():
    runs = [(c.name, c.plan, case_gpu(c.gpu_id), case_nodes(c)) for c in TIME_CASES]
    for held in heldout_sets():
        for case in held.cases:
            for read in (case, case.as_reread()):
                runs.append((case.name, read.plan, case_gpu(read.gpu_id), read.nodes))
    assert len(runs) > 1000
    seen = set()
    for name, plan, gpu, nodes in runs:
        found = regimes(plan, gpu, nodes)
        seen.add(plan.stack)
        assert set(found) <= set(REGIMES)
        if plan.stack.value in _OLD_TUNED | _OLD_EAGER | {"hf-liger", "dle-pytorch", "litgpt-2023"}:
            assert found == _old_regimes(found, plan.stack), name
    assert {Stack.HF_TRAINER, Stack.FRAMEWORK, Stack.UNSLOTH, Stack.HF_LIGER} <= seen
    assert any(p.method is Method.QLORA for _, p, _, _ in runs)
