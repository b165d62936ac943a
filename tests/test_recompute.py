"""TrainPlan.recompute "ops" (torchtitan's op-level selective checkpointing) and "matmuls" (every matmul output
kept) in the plan, the estimates, the trial, the CLI, the form and the request (gpuwork.estimate.recompute,
gpuwork.measure.checkpoint_policy, docs/recompute.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwork import PlanError, TrainPlan, estimate_memory, estimate_time
from gpuwork.cli import build_parser
from gpuwork.cli.args import plan_from_args
from gpuwork.estimate.flops import flops_per_token
from gpuwork.estimate.ops import step_ops
from gpuwork.estimate.recompute import block_matmuls, kept_matmuls, kept_op_names
from gpuwork.facts.resolve import resolve
from gpuwork.plan import Recompute

LLAMA_8B = dict(model="llama-3.1-8b", method="scratch", precision="bf16-mixed", seq_len=8192, gpus=8,
                sharding="fsdp", stack="framework", optimizer_impl="fused")


def _plan(recompute: str | None, **changes) -> TrainPlan:
    fields = {**LLAMA_8B, **changes}
    if recompute is not None:
        fields.update(grad_checkpointing=True, recompute=recompute)
    return TrainPlan(**fields)


def _spec(plan: TrainPlan):
    return resolve(plan).spec


def kept_matmul_names(spec, plan: TrainPlan) -> set[str]:
    return {mm.name for mm in kept_matmuls(spec, plan)}


# -- the rule ---------------------------------------------------------------------------------------


def test_a_llama_block_keeps_the_odd_mm_calls():
    plan = _plan("ops")
    assert [mm.name for mm in block_matmuls(_spec(plan), plan)] == [
        "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
        "mlp.up_proj", "mlp.down_proj"]
    assert kept_matmul_names(_spec(plan), plan) == {"self_attn.q_proj", "self_attn.v_proj", "mlp.gate_proj",
                                                    "mlp.down_proj"}


def test_linears_with_a_bias_call_addmm_and_are_not_counted():
    plan = _plan("ops", model="qwen2.5-7b")  # q, k and v carry a bias: the count starts at o_proj
    assert kept_matmul_names(_spec(plan), plan) == {"self_attn.o_proj", "mlp.up_proj"}
    gpt2 = _plan("ops", model="gpt2", gpus=1, sharding="ddp")  # every Conv1D adds its bias
    assert kept_matmul_names(_spec(gpt2), gpt2) == set()


def test_lora_matmuls_count_in_call_order_base_then_a_then_b():
    plan = _plan("ops", method="lora", lora_targets=("q_proj", "v_proj"), gpus=1, sharding="ddp")
    names = [mm.name for mm in kept_matmuls(_spec(plan), plan)]
    # calls: q(1) qA(2) qB(3) k(4) v(5) vA(6) vB(7) o(8) gate(9) up(10) down(11)
    assert names == ["self_attn.q_proj", "self_attn.q_proj LoRA B", "self_attn.v_proj", "self_attn.v_proj LoRA B",
                     "mlp.gate_proj", "mlp.down_proj"]


def test_without_the_op_policy_nothing_is_kept():
    for plan in (_plan("block"), _plan(None)):
        assert kept_op_names(_spec(plan), plan) == frozenset()


def test_the_matmul_policy_keeps_every_matmul_bias_or_not():
    for model in ("llama-3.1-8b", "qwen2.5-7b"):
        plan = _plan("matmuls", model=model)
        spec = _spec(plan)
        assert kept_matmuls(spec, plan) == block_matmuls(spec, plan)
    gpt2 = _plan("matmuls", model="gpt2", gpus=1, sharding="ddp")  # addmm is on this list
    assert len(kept_matmuls(_spec(gpt2), gpt2)) == 4


def test_torchs_sdpa_kernel_is_kept_and_the_flash_attn_librarys_is_not():
    for policy in ("ops", "matmuls"):
        for attention, kept in (("sdpa", True), ("cudnn", True), ("flash", False), ("flash3", False)):
            plan = _plan(policy, attention=attention)
            assert ("attention (fused kernel)" in kept_op_names(_spec(plan), plan)) is kept, (policy, attention)
    eager = _plan("matmuls", attention="eager")  # its bmm outputs are kept; torchtitan's list has no bmm
    assert {"attention Q·K^T", "attention P·V"} <= kept_op_names(_spec(eager), eager)
    ops_eager = _plan("ops", attention="eager")
    assert not {"attention Q·K^T", "attention P·V"} & kept_op_names(_spec(ops_eager), ops_eager)


# -- time and FLOPs ----------------------------------------------------------------------------------


def test_the_recompute_skips_kept_matmuls_and_the_attention_kernel():
    plan = _plan("ops")
    recomputed = [op.name for op in step_ops(plan, _spec(plan)) if op.phase.value == "recompute"]
    assert {"self_attn.k_proj", "self_attn.o_proj", "mlp.up_proj", "norm (attention input)", "MLP activation"} \
        <= set(recomputed)
    assert not {"self_attn.q_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.down_proj",
                "attention (fused kernel)"} & set(recomputed)
    eager = _plan("ops", attention="eager")  # bmm and softmax are not on the save list
    names = {op.name for op in step_ops(eager, _spec(eager)) if op.phase.value == "recompute"}
    assert {"attention Q·K^T", "attention P·V"} <= names


def test_recompute_flops_leave_out_the_kept_matmuls_and_the_attention_kernel():
    plan = _plan("ops")
    spec = _spec(plan)
    ops, block = flops_per_token(plan, spec), flops_per_token(_plan("block"), spec)
    per_layer = {lin.short_name: lin.in_features * lin.out_features for lin in spec.block_linears}
    kept = (per_layer["q_proj"] + per_layer["v_proj"] + per_layer["gate_proj"] + per_layer["down_proj"])
    attention = 4 * spec.num_heads * spec.head_dim * plan.seq_len  # Q·K^T and P·V forward, per layer and token
    assert block.recompute - ops.recompute == spec.num_layers * (2 * kept + attention)
    assert ops.recompute > 0 and block.model == ops.model  # model FLOPs (MFU) count no recompute


def test_the_matmul_policy_recomputes_no_matmul_flops_unless_the_attention_is_flash_attns():
    plan = _plan("matmuls")
    spec = _spec(plan)
    flops = flops_per_token(plan, spec)
    assert 0 <= flops.recompute < 1e-4 * flops.total  # the norms' weights only (the 6N convention counts them)
    flash = _plan("matmuls", attention="flash")  # the flash-attn kernel runs again: its forward FLOPs only
    attention = 4 * spec.num_heads * spec.head_dim * plan.seq_len
    assert flops_per_token(flash, spec).recompute - flops.recompute == spec.num_layers * attention
    from gpuwork.present.messages import render

    assert "every matmul output kept" in render(flops.note, "en")
    assert "хранятся" in render(flops.note, "ru")


def test_the_recompute_under_the_matmul_policy_holds_memory_bound_ops_only():
    for attention in ("sdpa", "eager"):
        plan = _plan("matmuls", attention=attention)
        recomputed = [op for op in step_ops(plan, _spec(plan)) if op.phase.value == "recompute"]
        assert recomputed and all(op.kind.value == "memory" for op in recomputed), attention


def test_the_op_policy_costs_less_time_than_whole_blocks_and_more_than_none():
    times = {name: estimate_time(p, "h100_sxm").step_time_s
             for name, p in (("none", _plan(None)), ("matmuls", _plan("matmuls")), ("ops", _plan("ops")),
                             ("block", _plan("block")))}
    assert times["none"] < times["matmuls"] < times["ops"] < times["block"]


# -- memory ------------------------------------------------------------------------------------------


def test_each_block_keeps_its_input_and_the_policys_outputs():
    plan, block, none = _plan("ops"), _plan("block"), _plan(None)
    spec = _spec(plan)
    ops_act, block_act = (estimate_memory(p).breakdown["activations"] for p in (plan, block))
    assert block_act < ops_act < estimate_memory(none).breakdown["activations"]
    h, kv = spec.hidden_size, spec.num_kv_heads * spec.head_dim
    inter, heads = spec.intermediate_size, spec.num_heads
    # bf16 compute under FSDP2: q, v, gate, down and the attention output in 2 bytes, its logsumexp in 4
    kept = 2 * (h + kv + inter + h + h) + 4 * heads
    assert ops_act - block_act == kept * plan.seq_len * plan.batch_size * spec.num_layers


def test_the_matmul_policy_keeps_every_matmul_output_and_eager_scores():
    block = estimate_memory(_plan("block")).breakdown["activations"]
    plan = _plan("matmuls")
    spec = _spec(plan)
    h, kv = spec.hidden_size, spec.num_kv_heads * spec.head_dim
    inter, heads = spec.intermediate_size, spec.num_heads
    # q, k, v, o, gate, up, down and the SDPA output in 2 bytes, its logsumexp in 4
    kept = 2 * (h + 2 * kv + h + 2 * inter + h + h) + 4 * heads
    tokens = plan.seq_len * plan.batch_size * spec.num_layers
    assert estimate_memory(plan).breakdown["activations"] - block == kept * tokens
    # eager attention keeps Q·K^T's scores (a row per head and token) and P·V's output; the peak comes in a
    # block's backward there, with the other blocks' kept tensors (the trace grid in test_trace checks the bytes)
    eager, eager_block = _plan("matmuls", attention="eager"), _plan("block", attention="eager")
    scores = 2 * heads * plan.seq_len * tokens
    assert estimate_memory(eager).breakdown["activations"] - estimate_memory(eager_block).breakdown["activations"] \
        > scores * (spec.num_layers - 1) / spec.num_layers
    flash_ops = estimate_memory(_plan("ops", attention="flash")).breakdown["activations"]
    flash_block = estimate_memory(_plan("block", attention="flash")).breakdown["activations"]
    assert flash_ops - flash_block == 2 * (h + kv + inter + h) * tokens  # no attention output kept


def test_a_traced_block_refuses_the_op_policy_with_one_message():
    # phi has no hand-written block: the bundled profile (LoRA on every linear, r16, bf16, sdpa) merges its kernels
    plan = TrainPlan(model=str(Path(__file__).parent / "data" / "models" / "phi-1_5.json"), method="lora",
                     lora_targets=("all-linear",), precision="bf16",
                     grad_checkpointing=True, recompute="ops")
    for estimate in (estimate_memory, lambda p: estimate_time(p, "a100_80_sxm")):
        with pytest.raises(PlanError) as err:
            estimate(plan)
        assert err.value.field == "recompute" and "traced block" in err.value.text("en")
        assert "трассированный" in err.value.text("ru")


# -- the plan --------------------------------------------------------------------------------------


def test_the_policy_needs_checkpointing_and_is_not_unsloths():
    with pytest.raises(PlanError) as err:
        TrainPlan(recompute="ops")
    assert err.value.msg.code == "error.plan.recompute_needs_checkpointing"
    assert "grad_checkpointing" in err.value.text("en") and "выключен" in err.value.text("ru")
    with pytest.raises(PlanError) as err:
        TrainPlan(grad_checkpointing=True, recompute="ops", stack="unsloth")
    assert err.value.msg.code == "error.plan.recompute_unsloth"
    with pytest.raises(PlanError, match="did you mean 'ops'"):
        TrainPlan(grad_checkpointing=True, recompute="op")


def test_a_sweep_without_checkpointing_drops_the_policy_and_files_keep_it():
    plan = _plan("ops")
    assert plan.replace(grad_checkpointing=False).recompute is Recompute.BLOCK
    assert plan.replace(stack="unsloth", sharding="ddp", gpus=1).recompute is Recompute.BLOCK
    assert plan.replace(seq_len=4096).recompute is Recompute.OPS
    assert TrainPlan.from_dict(json.loads(json.dumps(plan.as_dict()))) == plan
    assert TrainPlan().recompute is Recompute.BLOCK


def test_the_cli_flag_sets_it():
    args = build_parser().parse_args(["estimate", "--grad-checkpointing", "--recompute", "ops"])
    assert plan_from_args(args).recompute is Recompute.OPS
    assert plan_from_args(build_parser().parse_args(["estimate"])).recompute is Recompute.BLOCK


def test_the_form_shows_it_with_checkpointing_only():
    from gpuwork.ui.sizing import SizingForm

    form = SizingForm({"model": "llama-3.2-1b", "method": "full"})
    field = form.controls["recompute"]
    assert field.layout.display == "none" and [v for _, v in field.options] == ["block", "ops", "matmuls"]
    form.controls["grad_checkpointing"].value = True
    assert field.layout.display is None
    field.value = "ops"
    assert form.error is None and form.plan.recompute is Recompute.OPS
    form.controls["grad_checkpointing"].value = False  # hidden: not read
    assert form.error is None and form.plan.recompute is Recompute.BLOCK
    ru = SizingForm({"model": "llama-3.2-1b"}, lang="ru")
    labels = [label for label, _ in ru.controls["recompute"].options]
    assert labels == ["весь блок", "выборочно по операциям (torchtitan)",
                      "хранить все матричные умножения (пример PyTorch)"]


def test_the_rental_request_says_what_was_recomputed():
    from gpuwork.present.request import rental_request

    plan = TrainPlan(model="llama-3.2-1b", method="full", grad_checkpointing=True, recompute="ops")
    suggested = rental_request(plan, lang="en").fields["suggested"]
    assert (suggested["grad_checkpointing"], suggested["recompute"]) == (True, "ops")
    assert rental_request(TrainPlan(model="llama-3.2-1b"), lang="en").fields["suggested"]["recompute"] is None


# -- the policy a trial and a trace run, against the rule the estimates price ----------------------------------


def _saved_mm_widths(model, batch, monkeypatch) -> list[int]:
    """Output widths of the mm and addmm calls the policy kept in one forward (spied through torch's own
    contexts; a list of ops to save is read as torch reads it)."""
    torch = pytest.importorskip("torch")
    from torch.utils import checkpoint as ckpt

    kept: list[int] = []
    make = ckpt.create_selective_checkpoint_contexts
    aten = torch.ops.aten

    def spying(policy):
        if isinstance(policy, list):
            listed = set(policy)

            def policy(ctx, func, *args, **kwargs):
                return ckpt.CheckpointPolicy.MUST_SAVE if func in listed else ckpt.CheckpointPolicy.PREFER_RECOMPUTE

        def wrapped(ctx, func, *args, **kwargs):
            decision = policy(ctx, func, *args, **kwargs)
            if func in (aten.mm.default, aten.addmm.default) and not ctx.is_recompute \
                    and decision == ckpt.CheckpointPolicy.MUST_SAVE:
                kept.append(args[-1].shape[1])
            return decision
        return make(wrapped)

    monkeypatch.setattr(ckpt, "create_selective_checkpoint_contexts", spying)
    model(**batch).loss.backward()
    return kept


@pytest.mark.parametrize("model_name, method, recompute", [
    ("tiny-llama", "full", "ops"), ("tiny-qwen2", "lora", "ops"), ("tiny-qwen2", "full", "matmuls"),
    ("tiny-llama", "lora", "matmuls")])
def test_the_trials_policy_keeps_the_matmuls_the_estimate_prices(model_name, method, recompute, one_thread,
                                                                 monkeypatch):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from gpuwork.facts.model import load_config
    from gpuwork.measure.checkpoint_policy import checkpoint_kwargs

    plan = TrainPlan(model=model_name, method=method, precision="fp32", seq_len=16, batch_size=2,
                     grad_checkpointing=True, recompute=recompute, lora_targets=("all-linear",))
    config = transformers.AutoConfig.for_model(**load_config(plan.model)[0])
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    if method == "lora":
        import peft

        model = peft.get_peft_model(model, peft.LoraConfig(r=plan.lora_r, target_modules="all-linear"))
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=checkpoint_kwargs(plan))
    model.train()
    ids = torch.randint(0, config.vocab_size, (plan.batch_size, plan.seq_len))
    widths = _saved_mm_widths(model, {"input_ids": ids, "labels": ids}, monkeypatch)
    expected = [mm.out_features for mm in kept_matmuls(_spec(plan), plan)]
    assert widths == expected * config.num_hidden_layers


def test_a_cpu_trial_runs_under_the_op_policy(one_thread, monkeypatch):
    pytest.importorskip("torch")
    from torch.utils import checkpoint as ckpt

    from gpuwork.measure.trial import run_trial

    plan = TrainPlan(model="tiny-llama", method="full", precision="fp32", seq_len=32, batch_size=2,
                     grad_checkpointing=True, recompute="ops")
    calls: list[int] = []
    make = ckpt.create_selective_checkpoint_contexts
    monkeypatch.setattr(ckpt, "create_selective_checkpoint_contexts",
                        lambda policy: (calls.append(1), make(policy))[1])
    record = run_trial(plan, steps=2, warmup=1, device="cpu", checkpoint=False)
    assert record.plan.recompute is Recompute.OPS and len(calls) >= 2 * 2  # every block of every measured step


def test_the_headers_say_what_checkpointing_recomputes(capsys):
    from gpuwork.cli import main

    main(["estimate", "--model", "llama-3.2-1b", "--method", "full", "--grad-checkpointing", "--recompute", "ops"])
    assert "op-level selective checkpointing (torchtitan)" in capsys.readouterr().out.splitlines()[0]
    main(["estimate", "--model", "llama-3.2-1b", "--grad-checkpointing", "--lang", "ru"])
    assert capsys.readouterr().out.splitlines()[0].endswith(", чекпойнтинг целых блоков")
    main(["estimate", "--model", "llama-3.2-1b"])
    assert "checkpointing" not in capsys.readouterr().out.splitlines()[0]


# -- checkpointing one block in n (TrainPlan.recompute_every) ----------------------------------------------------


def test_one_block_in_n_counts_blocks_from_zero_as_transformers_does():
    plan = _plan("block", recompute_every=3)
    assert plan.checkpointed_blocks(32) == 11  # blocks 0, 3, ..., 30
    assert plan.blocks_above_last_checkpointed(32) == 1  # block 31 is not checkpointed
    assert _plan("block", recompute_every=2).blocks_above_last_checkpointed(33) == 0  # block 32 is
    assert _plan("block").checkpointed_blocks(32) == 32 and _plan(None).checkpointed_blocks(32) == 0


def test_one_block_in_n_is_refused_without_checkpointing_with_unsloth_and_under_freeze():
    for fields, code in (({}, "error.plan.recompute_every_needs_checkpointing"),
                         ({"grad_checkpointing": True, "stack": "unsloth"}, "error.plan.recompute_every_unsloth"),
                         ({"grad_checkpointing": True, "method": "freeze"}, "error.plan.recompute_every_freeze")):
        with pytest.raises(PlanError) as err:
            TrainPlan(recompute_every=2, **fields)
        assert err.value.field == "recompute_every" and err.value.msg.code == code
        assert "recompute_every" in err.value.text("ru")
    for bad in (0, 10_001, 2.5):
        with pytest.raises(PlanError) as err:
            TrainPlan(grad_checkpointing=True, recompute_every=bad)
        assert err.value.field == "recompute_every"
    plan = _plan("block", recompute_every=2)
    assert plan.replace(grad_checkpointing=False).recompute_every == 1
    assert plan.replace(method="freeze", sharding="ddp", gpus=1).recompute_every == 1
    assert plan.replace(seq_len=1024).recompute_every == 2
    assert TrainPlan.from_dict(json.loads(json.dumps(plan.as_dict()))) == plan


def test_one_block_in_n_recomputes_that_share_of_the_blocks():
    every = _plan("block", recompute_every=4)
    spec = _spec(every)
    forward = sum(op.count for op in step_ops(every, spec) if op.phase.value == "forward" and "proj" in op.name)
    for plan, share in ((every, 8 / 32), (_plan("block"), 1.0)):
        recomputed = sum(op.count for op in step_ops(plan, spec) if op.phase.value == "recompute" and "proj" in op.name)
        assert recomputed == forward * share
    full, quarter = flops_per_token(_plan("block"), spec), flops_per_token(every, spec)
    assert quarter.recompute == pytest.approx(full.recompute / 4) and "8 of 32 blocks" in quarter.convention
    times = [estimate_time(p, "h100_sxm").step_time_s for p in (_plan(None), every, _plan("block", recompute_every=2),
                                                               _plan("block"))]
    assert times == sorted(times) and len(set(times)) == 4


def test_one_block_in_n_keeps_the_others_activations():
    spec = _spec(_plan("block"))
    none, block = (estimate_memory(p) for p in (_plan(None), _plan("block")))
    half = estimate_memory(_plan("block", recompute_every=2))
    per_block = (none.breakdown["activations"] - block.breakdown["activations"]) / spec.num_layers
    assert half.breakdown["activations"] - block.breakdown["activations"] == pytest.approx(16 * per_block, rel=1e-6)
    assert block.peak_reserved_bytes < half.peak_reserved_bytes < none.peak_reserved_bytes


@pytest.mark.parametrize("model_name, every", [("tiny-llama", 2), ("tiny-llama", 3), ("tiny-qwen2", 2)])
def test_one_block_in_n_matches_a_real_cpu_step(model_name, every, one_thread):
    pytest.importorskip("torch")
    from gpuwork.measure.trace import real_step_peak

    plan = TrainPlan(model=model_name, method="full", precision="fp32", optimizer_impl="for-loop", batch_size=2,
                     seq_len=512, grad_checkpointing=True, recompute_every=every)
    assert estimate_memory(plan).traceable_bytes == pytest.approx(real_step_peak(plan)["peak_bytes"], rel=0.01)


def test_the_trial_checkpoints_blocks_zero_n_2n(one_thread):
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_layers import GradientCheckpointingLayer

    from gpuwork.facts.model import load_config
    from gpuwork.measure.checkpoint_policy import checkpoint_kwargs, checkpoint_one_in

    plan = TrainPlan(model="tiny-llama", method="full", precision="fp32", grad_checkpointing=True, recompute_every=3)
    model = transformers.AutoModelForCausalLM.from_config(
        transformers.AutoConfig.for_model(**load_config(plan.model)[0]))
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=checkpoint_kwargs(plan))
    checkpoint_one_in(model, plan)
    flags = [m.gradient_checkpointing for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
    assert flags == [i % 3 == 0 for i in range(len(flags))] and len(flags) == _spec(plan).num_layers


def test_a_cpu_trial_runs_one_block_in_n(one_thread):
    pytest.importorskip("torch")
    from gpuwork.measure.trial import run_trial

    plan = TrainPlan(model="tiny-llama", method="lora", precision="fp32", seq_len=32, batch_size=2,
                     grad_checkpointing=True, recompute_every=2)
    record = run_trial(plan, steps=2, warmup=1, device="cpu", checkpoint=False)
    assert record.plan.recompute_every == 2


def test_the_flag_the_form_the_header_the_request_and_a_trainer_config_say_it(capsys, tmp_path):
    from gpuwork.cli import main
    from gpuwork.facts.configs import import_configs
    from gpuwork.present.request import rental_request
    from gpuwork.ui.sizing import SizingForm

    args = build_parser().parse_args(["estimate", "--grad-checkpointing", "--recompute-every", "4"])
    assert plan_from_args(args).recompute_every == 4
    main(["estimate", "--model", "llama-3.2-1b", "--grad-checkpointing", "--recompute-every", "4"])
    assert capsys.readouterr().out.splitlines()[0].endswith(", checkpointing whole blocks on one block in 4")
    main(["estimate", "--model", "llama-3.2-1b", "--grad-checkpointing", "--recompute-every", "4", "--lang", "ru"])
    assert capsys.readouterr().out.splitlines()[0].endswith("чекпойнтинг целых блоков на каждом 4-м блоке")
    form = SizingForm({"model": "llama-3.2-1b", "method": "full"})
    field = form.controls["recompute_every"]
    assert field.layout.display == "none"
    form.controls["grad_checkpointing"].value = True
    field.value = "2"
    assert form.error is None and form.plan.recompute_every == 2
    plan = TrainPlan(model="llama-3.2-1b", method="full", grad_checkpointing=True, recompute_every=2)
    assert rental_request(plan, lang="en").fields["suggested"]["recompute_every"] == 2
    config = tmp_path / "args.json"
    config.write_text(json.dumps({"gradient_checkpointing": True, "per_device_train_batch_size": 2,
                                  "gradient_checkpointing_kwargs": {"use_reentrant": False, "every_n_layers": 4,
                                                                    "offload": True}}))
    read = import_configs([config])
    assert read.plan().recompute_every == 4
    assert any(n.code == "config.checkpointing_offload" for n in read.notes)
