"""The dtype peft gives LoRA adapters, by release (docs/peft_adapter_dtype.md), and what the stacks price for it.

peft 0.7.0-0.11.1 move a new adapter to its base weight's dtype when that dtype is floating point (16-bit adapters on
a 16-bit base, or on a 4-bit base stored in 16 bits); peft 0.12.0 and later then upcast 16-bit adapters to fp32
(``autocast_adapter_dtype=True``); ``autocast_adapter_dtype=False`` keeps the earlier behaviour. The real tiny model
below runs the installed peft; the pricing tests check that the stacks and the re-read held-out cases say the same."""

from __future__ import annotations

from typing import Any

import pytest

from gpuwork.estimate.ops import step_ops
from gpuwork.estimate.steptime import stack_kernels
from gpuwork.facts.model import get_spec
from gpuwork.facts.rates import load_rates
from gpuwork.measure.heldout import heldout_sets
from gpuwork.plan import Stack

# the held-out runs that ran peft's layer with 16-bit adapters (docs/peft_adapter_dtype.md)
_SIXTEEN_BIT_SOURCES = ("answerdotai-fsdp-qlora-benchmarks-2024-03", "vectorlm")


def _tiny_peft_model(**kwargs: Any) -> Any:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
    )
    base = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    lora = peft.LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    return peft.get_peft_model(base, lora, **kwargs)


def _adapter_dtypes(model: Any) -> set[str]:
    return {str(p.dtype) for name, p in model.named_parameters() if "lora_" in name}


def _installed_peft_at_least_0_12() -> bool:
    peft = pytest.importorskip("peft")
    major, minor = (int(part) for part in peft.__version__.split(".")[:2])
    return (major, minor) >= (0, 12)


def test_installed_peft_upcasts_adapters_on_a_16_bit_base_to_fp32() -> None:
    if not _installed_peft_at_least_0_12():
        pytest.skip("peft before 0.12 has no autocast_adapter_dtype")
    model = _tiny_peft_model()
    assert _adapter_dtypes(model) == {"torch.float32"}
    frozen = {str(p.dtype) for name, p in model.named_parameters() if "lora_" not in name}
    assert frozen == {"torch.bfloat16"}  # the base stays in its own dtype


def test_without_the_upcast_adapters_take_the_base_weights_dtype_as_before_0_12() -> None:
    if not _installed_peft_at_least_0_12():
        pytest.skip("peft before 0.12 has no autocast_adapter_dtype")
    # the flag skips only the upcast; what remains is update_layer's move to the base weight's dtype (0.7.0-0.11.1)
    assert _adapter_dtypes(_tiny_peft_model(autocast_adapter_dtype=False)) == {"torch.bfloat16"}


def test_stacks_price_the_peft_of_their_period() -> None:
    stacks = load_rates().stacks
    # hf-trainer: peft 0.12+; hf-trainer-2023: its runs are QLoRA on bitsandbytes' uint8 storage, fp32 adapters in
    # every peft; hf-loop-2024: peft 0.9/0.10 on a bf16 base or bf16 4-bit storage, adapters in the model's dtype
    assert stacks[Stack.HF_TRAINER].adapters_fp32 and stacks[Stack.HF_TRAINER_2023].adapters_fp32
    assert not stacks[Stack.HF_LOOP_2024].adapters_fp32


def _sixteen_bit_cases() -> list[Any]:
    return [
        case
        for held in heldout_sets()
        for case in held.cases
        if case.source_id in _SIXTEEN_BIT_SOURCES and case.plan.uses_adapters
    ]


def test_runs_with_16_bit_adapters_are_re_read_onto_a_16_bit_adapter_stack() -> None:
    cases = _sixteen_bit_cases()
    assert len(cases) == 31  # 22 Answer.AI LoRA and QLoRA rows, 9 VectorLM LoRA rows
    stacks = load_rates().stacks
    for case in cases:
        assert case.reread is not None, case.name
        assert not stacks[case.as_reread().plan.stack].adapters_fp32, case.name


@pytest.mark.parametrize("source", _SIXTEEN_BIT_SOURCES)
def test_the_re_read_step_has_no_fp32_adapter_casts_or_gemms(source: str) -> None:
    case = next(c for c in _sixteen_bit_cases() if c.source_id == source)
    profiles = load_rates().stacks

    def lora_ops(plan: Any) -> list[Any]:
        ops = step_ops(plan, get_spec(plan.model), stack_kernels(profiles[plan.stack]))
        return [o for o in ops if "LoRA" in o.name]

    recorded, re_read = lora_ops(case.plan), lora_ops(case.as_reread().plan)
    assert any("LoRA input cast" in o.name for o in recorded)  # peft 0.12's fp32 copy of each adapter input
    assert {o.dtype for o in recorded if o.name.endswith("LoRA A")} == {"fp32"}
    assert not any("LoRA input cast" in o.name for o in re_read)
    assert {o.dtype for o in re_read if o.name.endswith("LoRA A")} == {"bf16"}


def _lora_plan(**kw: Any) -> Any:
    from gpuwork.plan import TrainPlan

    base = {"model": "tiny-llama", "method": "lora", "precision": "bf16", "seq_len": 64, "batch_size": 2}
    return TrainPlan(**{**base, **kw})


def test_model_dtype_adapters_hold_8_bytes_a_parameter_and_peft_0_12_adapters_16() -> None:
    from gpuwork.estimate.model_states import model_states
    from gpuwork.facts.resolve import resolve
    from gpuwork.facts.spec import count_params

    plan = _lora_plan()
    spec = resolve(plan).spec
    counts = count_params(spec, plan)
    fp32, model = model_states(spec, plan, counts, "fp32"), model_states(spec, plan, counts, "model")
    n = counts.adapter
    assert n > 0 and counts.trainable == n
    # weights, gradients and AdamW's two states: 4 + 4 + 8 bytes against 2 + 2 + 4
    assert fp32.weights - model.weights == 2 * n
    assert (fp32.gradients, model.gradients) == (4 * n, 2 * n)
    assert (fp32.optimizer, model.optimizer) == (8 * n, 4 * n)
    # a mixed plan keeps an fp32 model where the adapters follow it (Lit-GPT's bf16-mixed): nothing changes
    mixed = _lora_plan(precision="bf16-mixed")
    assert model_states(spec, mixed, counts, "model") == model_states(spec, mixed, counts, "fp32")


def test_a_16_bit_adapter_saves_its_dropped_input_in_16_bits() -> None:
    from gpuwork.estimate.memory import memory_dtypes

    stacks = load_rates().stacks
    plan = _lora_plan(lora_dropout=0.05)
    assert memory_dtypes(plan, stacks[Stack.HF_LOOP_2024]).adapter == 2
    assert memory_dtypes(plan, stacks[Stack.HF_TRAINER_2023]).adapter == 4
    assert memory_dtypes(_lora_plan(precision="bf16-mixed"), stacks[Stack.HF_LOOP_2024]).adapter == 4


def test_hf_trainer_2024_is_hf_trainer_2023_with_peft_0_7_to_0_11_adapters() -> None:
    import dataclasses

    stacks = load_rates().stacks
    new, old = stacks[Stack.HF_TRAINER_2024], stacks[Stack.HF_TRAINER_2023]
    assert (new.adapters_fp32, new.adapter_weights) == (False, "model")
    differs = {f.name for f in dataclasses.fields(old) if getattr(old, f.name) != getattr(new, f.name)}
    assert differs == {"stack", "basis", "memory_basis", "adapters_fp32", "adapter_weights"}


def test_fms_acceleration_lora_rows_are_re_read_onto_peft_0_11() -> None:
    cases = [
        case
        for held in heldout_sets(kind="memory")
        for case in held.cases
        if case.source_id == "github-fms-acceleration-benchmarks-a100" and case.plan.method.value == "lora"
    ]
    assert len(cases) == 12
    for case in cases:
        assert case.reread is not None and case.as_reread().plan.stack is Stack.HF_TRAINER_2024, case.name
        assert any(e.quote == "peft==0.11.1" for e in case.reread.evidence)


def test_the_request_names_the_peft_releases_the_stack_prices() -> None:
    from gpuwork.plan import TrainPlan
    from gpuwork.present.request import rental_request

    lora = TrainPlan(method="lora", precision="bf16", stack="hf-trainer-2024")
    for lang in ("en", "ru"):
        assert "peft>=0.7,<0.12" in rental_request(lora, lang=lang).text
        assert "peft>=0.7,<0.12" not in rental_request(lora.replace(stack="hf-trainer"), lang=lang).text
