"""Stack litgpt-2023 (Lit-GPT 8641822 under Lightning Fabric 2.1; rates_sources.md [M5]): its chunked loss on the
fp32 chunks Fabric hands back
and its FSDP1 units' whole-block gradients under no_sync, with bytes from the shapes."""

import dataclasses

from gpuwork.estimate.memory import _head_activations, estimate_memory, memory_dtypes
from gpuwork.estimate.memory_stacks import flat_unit_gradients
from gpuwork.facts.rates import load_rates
from gpuwork.facts.resolve import resolve
from gpuwork.facts.spec import count_params
from gpuwork.measure.accuracy import case_spec
from gpuwork.measure.heldout import heldout_sets
from gpuwork.plan import Stack, TrainPlan

LLAMA = {"model": "llama-3.2-1b", "method": "lora", "seq_len": 1024, "batch_size": 2, "lora_r": 8,
         "lora_targets": ["q_proj", "v_proj"]}


def _plan(**kw) -> TrainPlan:
    return TrainPlan(**{**LLAMA, **kw})


def _est(**kw):
    plan = _plan(**kw)
    return estimate_memory(plan, resolve(plan).spec)


def test_the_row_names_its_loss_and_fsdp_gradients():
    stacks = load_rates().stacks
    lit = stacks[Stack.LITGPT_2023]
    assert (lit.loss_kernel, lit.fsdp_grads, lit.adapters_fp32) == ("chunked-fp32", "unit-unsharded", False)
    assert "[M5]" in lit.memory_basis
    assert all(p.fsdp_grads == "sharded" for s, p in stacks.items() if s is not Stack.LITGPT_2023)


def test_the_loss_keeps_fp32_logit_chunks_and_log_softmax_and_no_vocab_wide_backward():
    plan = _plan(stack="litgpt-2023")
    spec = resolve(plan).spec
    dt = memory_dtypes(plan, load_rates().stacks[Stack.LITGPT_2023])
    h, vocab = spec.hidden_size, spec.vocab_size
    head, logsoftmax, loss_backward = _head_activations(spec, plan, dt, False, "chunked-fp32")
    # final RMSNorm (fp32 input copy + rstd; frozen weight), the kept logits Fabric cast to fp32, their fp32
    # log_softmax, on a bf16 model all the same
    assert dt.linear_out == 2
    assert (head, logsoftmax, loss_backward) == (4 * h + 4 + 4 * vocab + 4 * vocab, 4 * vocab, 0)
    # the loop's kept chunks add what the eager loss's backward buffers take away: 8 B per logit against 12
    # (hf-trainer with Lit-GPT's bf16 adapters, so that only the loss differs: docs/peft_adapter_dtype.md)
    hf = dataclasses.replace(load_rates().stacks[Stack.HF_TRAINER], adapter_weights="model")
    total = {"litgpt-2023": _est(stack="litgpt-2023").phase_peaks["loss backward"],
             "hf-trainer": estimate_memory(_plan(stack="hf-trainer"), spec, hf).phase_peaks["loss backward"]}
    assert total["hf-trainer"] - total["litgpt-2023"] == 4 * vocab * 2 * 1024
    eager = _head_activations(spec, plan, dt, False, "eager")
    assert eager == (4 * h + 4 + 4 * vocab, 4 * vocab, 8 * vocab)  # unchanged for the other stacks


def test_fsdp_blocks_keep_their_whole_gradient_unsharded_under_accumulation():
    plan = _plan(stack="litgpt-2023", sharding="fsdp", gpus=2, grad_accum=4, grad_checkpointing=True)
    spec = resolve(plan).spec
    counts = count_params(spec, plan)
    adapters = 16 * 8 * (2048 + 2048 + 2048 + 512)  # 16 layers, r 8: q (2048 -> 2048) and v (2048 -> 512)
    assert counts.adapter == adapters
    full = 2 * (spec.params_block * spec.num_layers + adapters)  # bf16, frozen weights included
    lit = load_rates().stacks[Stack.LITGPT_2023]
    assert flat_unit_gradients(spec, plan, counts, lit) == ((full + 1) // 2, full)
    one = _plan(stack="litgpt-2023", sharding="fsdp", gpus=2, grad_accum=1, grad_checkpointing=True)
    assert flat_unit_gradients(spec, one, counts, lit) == ((full + 1) // 2, 0)
    # the forward of an accumulation micro-batch holds the whole unsharded gradient, the step's end a shard
    accum, sync = estimate_memory(plan, spec), estimate_memory(one, spec)
    assert accum.phase_peaks["forward"] - sync.phase_peaks["forward"] == full
    assert accum.phase_peaks["optimizer step"] == sync.phase_peaks["optimizer step"]
    assert accum.peak_allocated_bytes > 2 * spec.params_block * spec.num_layers


def test_full_fine_tuning_under_no_sync_keeps_the_whole_models_gradient_unsharded():
    # litgpt/finetune/full.py: FSDP1 units per Block, bf16-true, no_backward_sync on the accumulation micro-batches:
    # torch's no_sync "will accumulate the full model gradients (instead of gradient shards)", the root unit's too
    lit = load_rates().stacks[Stack.LITGPT_2023]
    plan = _plan(stack="litgpt-2023", method="full", precision="bf16", sharding="fsdp", gpus=4, grad_accum=4,
                 grad_checkpointing=True)
    spec = resolve(plan).spec
    counts = count_params(spec, plan)
    full = 2 * counts.trainable
    assert counts.trainable > spec.params_block * spec.num_layers  # embeddings and head are trained too
    assert flat_unit_gradients(spec, plan, counts, lit) == ((full + 3) // 4, full)
    one = plan.replace(grad_accum=1)
    assert flat_unit_gradients(spec, one, counts, lit) == ((full + 3) // 4, 0)
    accum, sync = estimate_memory(plan, spec), estimate_memory(one, spec)
    assert accum.phase_peaks["forward"] - sync.phase_peaks["forward"] == full
    # mixed precision (fp32 master weights under a MixedPrecision policy) is not this rule's: sharded as before
    mixed = plan.replace(precision="bf16-mixed")
    assert flat_unit_gradients(spec, mixed, count_params(spec, mixed), lit) is None


def test_other_stacks_and_single_gpus_keep_sharded_adapter_gradients():
    lit = load_rates().stacks[Stack.LITGPT_2023]
    single = _plan(stack="litgpt-2023", grad_accum=4)
    spec = resolve(single).spec
    assert flat_unit_gradients(spec, single, count_params(spec, single), lit) is None
    hf = load_rates().stacks[Stack.HF_TRAINER]
    fsdp = _plan(stack="hf-trainer", sharding="fsdp", gpus=2, grad_accum=4, grad_checkpointing=True)
    assert flat_unit_gradients(spec, fsdp, count_params(spec, fsdp), hf) is None
    full_ft = _plan(stack="litgpt-2023", method="full", precision="bf16-mixed", sharding="fsdp", gpus=2, grad_accum=4)
    assert flat_unit_gradients(spec, full_ft, count_params(spec, full_ft), lit) is None
    a, b = _est(stack="hf-trainer", sharding="fsdp", gpus=2, grad_accum=4, grad_checkpointing=True), \
        _est(stack="hf-trainer", sharding="fsdp", gpus=2, grad_accum=1, grad_checkpointing=True)
    adapters = 4 * 16 * 8 * (2048 + 2048 + 2048 + 512)  # peft's fp32 adapter gradients
    assert a.phase_peaks["forward"] - b.phase_peaks["forward"] == adapters // 2  # the shard only


def test_the_gemma_cookbook_reread_runs_the_chunked_head_without_final_soft_capping():
    case = next(c for s in heldout_sets(kind="memory") for c in s.cases if c.name.startswith("gemma-cookbook LitGPT"))
    again = case.as_reread()
    assert again.plan.stack is Stack.LITGPT_2023 and case.plan.stack is Stack.HF_TRAINER
    assert again.model_config["final_logit_softcapping"] is None
    assert case.model_config["final_logit_softcapping"] == 30.0
    recorded, reread = case_spec(case.plan.model, case.model_config), case_spec(again.plan.model, again.model_config)
    dt, vocab = memory_dtypes(case.plan, None), recorded.vocab_size
    # an eager head would keep the soft-capping's 16-bit tanh output; the chunked fp32 loss counts none either way
    eager = [_head_activations(s, case.plan, dt, False, "eager")[0] for s in (recorded, reread)]
    assert eager[0] - eager[1] == 2 * vocab
    chunked = [_head_activations(s, again.plan, dt, False, "chunked-fp32") for s in (recorded, reread)]
    assert chunked[0] == chunked[1] and chunked[0][1] == 4 * vocab
