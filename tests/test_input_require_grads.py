"""TrainPlan.input_require_grads: the embeddings' output requires grad (transformers' enable_input_require_grads).

Under freeze the backward then runs through the frozen blocks too: their recompute under checkpointing and their
input gradients, never their weight gradients (LLaMA-Factory 0.5-0.6.2 called it with reentrant checkpointing;
docs/time_misses.md). The other methods already send the gradient through every block, so the flag changes nothing
for them. Left unset, the plan takes its stack's behaviour (stacks.csv embeddings_hooked): transformers 5 hooks the
embeddings whenever checkpointing is on (the hf-trainer and hf-liger rows), 4.x only under PEFT.
"""

from __future__ import annotations

import dataclasses

import pytest

from gpuwork.cli import build_parser
from gpuwork.cli.args import plan_from_args
from gpuwork.errors import PlanError
from gpuwork.estimate.flops import flops_per_token
from gpuwork.estimate.ops import Kind, Phase, step_ops
from gpuwork.estimate.timing import estimate_time
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan

FREEZE = TrainPlan(model="llama-2-7b", method="freeze", trainable_layers=3, precision="bf16", seq_len=512,
                   grad_checkpointing=True, attention="flash", optimizer="adamw-8bit", lengths="packed",
                   input_require_grads=False)
GPU = "a100_40_sxm"


def _block_matmul_flops(plan: TrainPlan, phase: Phase) -> float:
    spec = resolve(plan).spec
    outside = ("output layer", "embedding")
    return sum(o.flops * o.count for o in step_ops(plan, spec)
               if o.kind is Kind.MATMUL and o.phase is phase and not o.name.startswith(outside))


def _step_s(plan: TrainPlan) -> float:
    inputs = resolve(plan)
    return estimate_time(plan, inputs.gpu(GPU), inputs).step_time_s


def test_unset_by_default_and_a_bool() -> None:
    assert TrainPlan().input_require_grads is None
    with pytest.raises(PlanError) as info:
        TrainPlan(input_require_grads="yes")
    assert info.value.field == "input_require_grads"


def test_unset_takes_the_stacks_behaviour_under_checkpointing() -> None:
    unset = FREEZE.replace(input_require_grads=None)
    on = FREEZE.replace(input_require_grads=True)
    stacks = resolve(FREEZE).rates.stacks
    assert stacks[unset.stack].embeddings_hooked  # hf-trainer: transformers 5
    assert not stacks[unset.replace(stack="hf-trainer-2024").stack].embeddings_hooked  # transformers 4.x
    assert _step_s(unset) == _step_s(on) > _step_s(FREEZE)
    assert flops_per_token(unset.with_input_grads(True), resolve(unset).spec) == \
        flops_per_token(on, resolve(unset).spec)
    old = unset.replace(stack="hf-trainer-2024")
    assert _step_s(old) == _step_s(old.replace(input_require_grads=False)) < \
        _step_s(old.replace(input_require_grads=True))
    # without checkpointing nothing hooks the embeddings: the backward stops at the trained blocks
    plain = unset.replace(grad_checkpointing=False)
    assert _step_s(plain) == _step_s(plain.replace(input_require_grads=False))
    assert unset.with_input_grads(True).input_require_grads is True
    assert plain.with_input_grads(True).input_require_grads is False
    assert FREEZE.with_input_grads(True) is FREEZE  # a stated value stays


def test_freeze_backward_runs_input_gradients_through_the_frozen_blocks() -> None:
    layers = resolve(FREEZE).spec.num_layers
    k = FREEZE.trainable_layers
    on = FREEZE.replace(input_require_grads=True)
    forward = _block_matmul_flops(FREEZE, Phase.FORWARD)
    assert forward == _block_matmul_flops(on, Phase.FORWARD)  # the forward is the same
    per_block = forward / layers
    # off: recompute and backward (input + weight gradients) over the k trained blocks only
    assert _block_matmul_flops(FREEZE, Phase.RECOMPUTE) == pytest.approx(k * per_block)
    assert _block_matmul_flops(FREEZE, Phase.BACKWARD) == pytest.approx(2 * k * per_block)
    # on: every block recomputed; input gradients through all of them, weight gradients in the trained k only
    assert _block_matmul_flops(on, Phase.RECOMPUTE) == pytest.approx(layers * per_block)
    assert _block_matmul_flops(on, Phase.BACKWARD) == pytest.approx((layers + k) * per_block)


def test_flops_per_token_counts_the_input_gradients_of_every_weight() -> None:
    spec = resolve(FREEZE).spec
    off, on = flops_per_token(FREEZE, spec), flops_per_token(FREEZE.replace(input_require_grads=True), spec)
    full = flops_per_token(FREEZE.replace(method="full"), spec)
    assert on.backward_input == full.backward_input > off.backward_input
    assert on.backward_weight == off.backward_weight < full.backward_weight
    assert on.recompute == full.recompute > off.recompute
    assert off.total < on.total < full.total


def test_the_step_sits_between_freeze_alone_and_full_and_other_methods_are_unchanged() -> None:
    on = FREEZE.replace(input_require_grads=True)
    assert _step_s(FREEZE) < _step_s(on) < _step_s(FREEZE.replace(method="full"))
    for method in ("full", "lora"):
        plan = FREEZE.replace(method=method)
        assert _step_s(plan.replace(input_require_grads=True)) == _step_s(plan)


def test_cli_flag_and_the_rental_request_in_both_languages() -> None:
    from gpuwork.present.request import rental_request

    on = plan_from_args(build_parser().parse_args(["estimate", "--method", "freeze", "--input-require-grads"]))
    assert on.input_require_grads is True
    assert plan_from_args(build_parser().parse_args(["estimate"])).input_require_grads is None
    # off by hand, against a stack that would hook the embeddings (hf-trainer with checkpointing)
    off = plan_from_args(build_parser().parse_args(["estimate", "--method", "freeze", "--grad-checkpointing",
                                                    "--no-input-require-grads"]))
    assert off.input_require_grads is False and _step_s(off) < _step_s(off.replace(input_require_grads=None))
    for lang, words in (("en", "enable_input_require_grads"), ("ru", "замороженные блоки")):
        request = rental_request(on, lang=lang)
        assert request.fields["suggested"]["input_require_grads"] is True
        assert words in request.text
        assert words not in rental_request(dataclasses.replace(on, input_require_grads=False), lang=lang).text
        # unset on the hf-trainer stack with checkpointing: the backward crossed the frozen blocks, and says so
        unset = dataclasses.replace(on, input_require_grads=None, grad_checkpointing=True)
        assert words in rental_request(unset, lang=lang).text
        assert words not in rental_request(dataclasses.replace(unset, stack="hf-trainer-2024"), lang=lang).text
        # a LoRA run sends the gradient through every block anyway: nothing to state
        assert words not in rental_request(dataclasses.replace(on, method="lora"), lang=lang).text


@pytest.mark.parametrize(("asked", "stack", "on"), [(False, "hf-trainer", False), (True, "hf-trainer", True),
                                                     (None, "hf-trainer", True), (None, "hf-trainer-2024", False)])
def test_the_trial_builds_a_freeze_model_whose_embeddings_output_requires_grad_as_the_estimate_priced(
        asked: bool | None, stack: str, on: bool) -> None:
    import torch

    from gpuwork.measure.options import TrialOptions
    from gpuwork.measure.runtime import build_run, prepare

    plan = TrainPlan(model="tiny-llama", method="freeze", precision="fp32", seq_len=16, trainable_layers=1,
                     grad_checkpointing=True, input_require_grads=asked, stack=stack)
    setup, _ = prepare(plan, TrialOptions(device="cpu"))
    run = build_run(setup)
    seen = []
    run.model.get_input_embeddings().register_forward_hook(lambda _m, _i, out: seen.append(out.requires_grad))
    ids = torch.zeros((1, 16), dtype=torch.long)
    run.model(input_ids=ids, labels=ids).loss.backward()
    assert seen == [on]
    # the trained block gets its gradient either way (non-reentrant checkpointing needs no input grads)
    assert all(p.grad is not None for p in run.trainable)


def test_share_link_keeps_unset_apart_from_off() -> None:
    from gpuwork.ui.share import plan_from_query, plan_query

    assert plan_from_query("input_require_grads=none").input_require_grads is None
    assert plan_from_query("input_require_grads=false").input_require_grads is False
    assert "input_require_grads" not in plan_query(TrainPlan())  # unset is the default: not in the link
    off = TrainPlan(input_require_grads=False)
    assert plan_from_query(plan_query(off)).input_require_grads is False


# -- the app's sizing form: a three-way dropdown, shown for freeze only ------------------------------------------

FORM_PLAN = {"model": "llama-3.2-1b", "method": "freeze", "grad_checkpointing": True}


def _form_step_s(form) -> float:
    return form.result.profile.time.step_time_s


def test_the_form_shows_it_for_freeze_only_and_its_value_reaches_the_plan() -> None:
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm(FORM_PLAN)
    field = form.controls["input_require_grads"]
    assert field.layout.display is None and [v for _, v in field.options] == ["stack", "on", "off"]
    assert field.value == "stack" and form.error is None and form.plan.input_require_grads is None
    unset_s = _form_step_s(form)
    field.value = "off"
    assert form.error is None and form.plan.input_require_grads is False
    off_s = _form_step_s(form)
    field.value = "on"
    assert form.error is None and form.plan.input_require_grads is True
    # the backward through the frozen blocks costs time; unset under checkpointing is hf-trainer's (transformers 5): on
    assert _form_step_s(form) == unset_s > off_s
    field.value = "off"
    form.controls["method"].value = "lora"  # hidden: not read
    assert form.error is None and form.plan.input_require_grads is None and field.layout.display == "none"
    form.controls["method"].value = "freeze"
    assert field.layout.display is None and form.plan.input_require_grads is False


def test_a_plan_or_a_share_link_fills_it() -> None:
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm.from_query("model=llama-3.2-1b&method=freeze&grad_checkpointing=true&input_require_grads=false")
    field = form.controls["input_require_grads"]
    assert field.value == "off" and form.plan.input_require_grads is False
    assert "input_require_grads=false" in form.query()  # the form's own link keeps it
    form.apply_plan({**FORM_PLAN, "input_require_grads": True})
    assert field.value == "on" and form.plan.input_require_grads is True
    form.apply_plan(FORM_PLAN)
    assert field.value == "stack" and form.plan.input_require_grads is None
    assert "input_require_grads" not in form.query()
    on = SizingForm({**FORM_PLAN, "input_require_grads": True})
    assert on.controls["input_require_grads"].value == "on" and on.plan.input_require_grads is True


def test_both_languages_label_it() -> None:
    from gpuwork.present.messages import text
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm(FORM_PLAN)
    field = form.controls["input_require_grads"]
    field.value = "on"
    for lang in ("en", "ru"):
        form.set_lang(lang)
        labels = [label for label, _ in field.options]
        assert field.description == text("ui.input_require_grads", lang)
        assert labels == [text(f"ui.input_require_grads_{v}", lang) for v in ("stack", "on", "off")]
        assert field.tooltip == text("ui.input_require_grads_hint", lang) and "transformers 5" in field.tooltip
        assert field.value == "on" and form.plan.input_require_grads is True  # the language keeps the choice
    assert labels == ["как в стеке", "включено", "выключено"]
    assert field.description.startswith("Обратный проход") and "замороженные блоки" in field.tooltip
    ru = SizingForm(FORM_PLAN, lang="ru")
    assert [label for label, _ in ru.controls["input_require_grads"].options][0] == "как в стеке"


# -- memory: what the frozen blocks save ----------------------------------------------------------------------------

TINY = TrainPlan(model="tiny-llama", method="freeze", trainable_layers=1, precision="fp32", seq_len=1024, batch_size=2,
                 optimizer_impl="for-loop")


def _activations(plan: TrainPlan) -> int:
    from gpuwork import estimate_memory

    return estimate_memory(plan).breakdown["activations"]


def test_memory_under_freeze_follows_the_same_decision_as_the_steps_time() -> None:
    """Without checkpointing the frozen blocks save nothing unless their input needs a gradient; then each saves
    what a frozen-weight block's input gradient reads, as a LoRA plan's frozen blocks do. With checkpointing each
    frozen block keeps its input only when the backward reaches it. Unset: the stack's rule (transformers 5's
    hf-trainer hooks the embeddings under checkpointing; torch-loop does not)."""
    from gpuwork import estimate_memory

    spec = resolve(TINY).spec
    tokens = TINY.batch_size * TINY.seq_len
    frozen = spec.num_layers - TINY.trainable_layers
    off, on = _activations(TINY.replace(input_require_grads=False)), _activations(TINY.replace(input_require_grads=True))
    lora = estimate_memory(TINY.replace(method="lora", lora_r=1, lora_targets=("q_proj",)))
    assert on - off > frozen * spec.hidden_size * 4 * tokens  # at least each frozen block's fp32 input, and more
    assert _activations(TINY) == off  # no checkpointing: no stack hooks the embeddings
    assert lora.breakdown["activations"] > off
    gc = TINY.replace(grad_checkpointing=True)
    gc_off, gc_on = _activations(gc.replace(input_require_grads=False)), _activations(gc.replace(input_require_grads=True))
    assert gc_on - gc_off == frozen * spec.hidden_size * 4 * tokens  # one fp32 block input per frozen block
    assert _activations(gc) == gc_on  # hf-trainer: transformers 5 hooks the embeddings
    assert _activations(gc.replace(stack="torch-loop")) == _activations(
        gc.replace(stack="torch-loop", input_require_grads=False))


@pytest.mark.slow
@pytest.mark.parametrize("grad_checkpointing", [False, True])
@pytest.mark.parametrize("input_require_grads", [False, True])
def test_memory_under_freeze_matches_a_real_cpu_step(grad_checkpointing: bool, input_require_grads: bool) -> None:
    """A real step on the CPU (MemTracker, real tensors), the model built as the trial builds it: the embeddings
    hooked or not, non-reentrant checkpointing when not. Measured 2026-12-05: 172.5 / 253.1 MiB without
    checkpointing (off / on), 136.9 / 142.9 MiB with it; the estimate within 0.2 % of each."""
    from gpuwork import estimate_memory
    from gpuwork.measure.trace import real_step_peak

    plan = TINY.replace(grad_checkpointing=grad_checkpointing, input_require_grads=input_require_grads)
    assert estimate_memory(plan).traceable_bytes == pytest.approx(real_step_peak(plan)["peak_bytes"], rel=0.01)
