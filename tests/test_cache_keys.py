"""Caches keyed by a model spec see its family switches (``ModelSpec.extras``; gpuwork issue 22 item 6): two specs
equal in every other field but with other switches get each its own answer, the one a process with empty caches
computes for it alone."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from conftest import clear_package_caches

from gpuwork.estimate.disk import checkpoint_size
from gpuwork.estimate.memory import estimate_memory
from gpuwork.estimate.timing import estimate_time
from gpuwork.facts.block_profiles import BlockProfile, bundled_profiles_dir
from gpuwork.facts.model import get_spec
from gpuwork.facts.resolve import resolve
from gpuwork.facts.spec import ModelSpec
from gpuwork.plan import TrainPlan

LLAMA_8B = "llama-3.1-8b"

# (plan fields, the switch changed): each changes what the plan trains or saves
CASES = {
    # no output layer named: all-linear LoRA wraps lm_head too (4096 x 128256 more adapter inputs and outputs)
    "output_layers": (dict(method="lora", lora_targets=("all-linear",)), {"output_layers": []}),
    # the final norm's weights train next to the last blocks (0 instead of 4096 parameters)
    "params_final_norm": (dict(method="freeze", trainable_layers=2), {"params_final_norm": 0}),
    # Gemma-2-style logits: the capped logits are saved for backward
    "final_logit_softcapping": (dict(method="lora"), {"final_logit_softcapping": 30.0}),
}


def _pair(switches: dict[str, Any]) -> tuple[ModelSpec, ModelSpec]:
    spec = get_spec(LLAMA_8B)
    return spec, dataclasses.replace(spec, extras={**spec.extras, **switches})


def _after_the_other(answer: Callable[[ModelSpec], Any], first: ModelSpec, second: ModelSpec) -> tuple[Any, Any, Any]:
    """(``second``'s answer computed right after ``first``'s, both alone with empty caches)."""
    clear_package_caches()
    answer(first)
    warm = answer(second)
    clear_package_caches()
    alone = answer(second)
    clear_package_caches()
    return warm, alone, answer(first)


def _plan(fields: dict[str, Any]) -> TrainPlan:
    return TrainPlan(model=LLAMA_8B, seq_len=1024, **fields)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_memory_estimate_follows_the_spec_switches(case):
    fields, switches = CASES[case]
    plan = _plan(fields)
    warm, alone, other = _after_the_other(lambda s: estimate_memory(plan, s).as_dict(), *_pair(switches))
    assert alone != other  # the switch changes the answer
    assert warm == alone


@pytest.mark.parametrize("case", ["output_layers", "params_final_norm"])
def test_a_step_time_follows_the_spec_switches(case):
    fields, switches = CASES[case]
    plan = _plan(fields)
    inputs = resolve(plan)

    def step_time(spec: ModelSpec) -> float:
        return estimate_time(plan, inputs.gpu("h100_sxm"), dataclasses.replace(inputs, spec=spec)).step_time_s

    first, second = _pair(switches)
    warm, alone, other = _after_the_other(step_time, first, second)
    assert alone != other
    assert warm == alone


@pytest.mark.parametrize("case", ["output_layers", "params_final_norm"])
def test_a_checkpoint_size_follows_the_spec_switches(case):
    fields, switches = CASES[case]
    plan = _plan(fields)
    warm, alone, other = _after_the_other(lambda s: checkpoint_size(plan, s), *_pair(switches))
    assert alone != other
    assert warm == alone


def test_specs_with_other_switches_differ_and_equal_switches_match_in_any_order():
    spec = get_spec(LLAMA_8B)
    capped = dataclasses.replace(spec, extras={**spec.extras, "final_logit_softcapping": 30.0})
    assert capped != spec
    reordered = dataclasses.replace(spec, extras=dict(reversed(list(spec.extras.items()))))
    assert reordered == spec
    assert hash(reordered) == hash(spec)
    # a spec written to the preset file and read back is the same spec (its lists come back as lists)
    assert ModelSpec.from_dict(json.loads(json.dumps(spec.as_dict()))) == spec


def test_a_spec_with_traced_blocks_and_stacks_keys_a_cache():
    profile = BlockProfile.from_json(next(bundled_profiles_dir().glob("*.json")).read_text())
    spec = resolve(TrainPlan(model=LLAMA_8B)).spec  # with the stacks
    traced = dataclasses.replace(spec, extras={**spec.extras, "block_profiles": (profile,)})
    assert "stacks" in spec.extras and traced != spec and hash(traced) == hash(copy.deepcopy(traced))


def test_a_spec_sent_to_another_process_hashes_as_one_made_there():
    code = ("import pickle, sys; from gpuwork.facts.model import get_spec; "
            "spec = pickle.loads(sys.stdin.buffer.read()); "
            "print(spec == get_spec('llama-3.1-8b'), hash(spec) == hash(get_spec('llama-3.1-8b')))")
    spec = get_spec(LLAMA_8B)
    hash(spec)  # computed here first
    done = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(spec), capture_output=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": "random"})
    assert done.stdout.split() == [b"True", b"True"]
