"""The plan read from a user's run (gpuwork.measure.hf_plan, imported as gpuwork.measure.hf.infer_plan): a model
with frozen blocks and a Trainer's arguments and state, on a tiny Llama built from its config (no weights)."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from gpuwork.facts.model import load_config  # noqa: E402
from gpuwork.measure.hf import infer_plan  # noqa: E402


def tiny_llama() -> tuple[object, int]:
    config, _ = load_config("tiny-llama")
    model = transformers.AutoModelForCausalLM.from_config(
        transformers.CONFIG_MAPPING[config["model_type"]].from_dict(dict(config)))
    return model, int(config["num_hidden_layers"])


def test_frozen_blocks_read_as_freeze_with_the_blocks_that_train(tmp_path: Path) -> None:
    model, layers = tiny_llama()
    assert layers >= 2
    model.model.embed_tokens.requires_grad_(False)
    model.model.layers[0].requires_grad_(False)
    plan, inferred = infer_plan(model, seq_len=64, batch_size=2, out=tmp_path)
    assert plan.method.value == "freeze"
    assert plan.trainable_layers == layers - 1  # every block but the frozen first one
    assert inferred["trainable_layers"] == {"value": layers - 1, "from": "blocks with trainable weights"}
    assert inferred["method"]["from"] == "some parameters frozen"


@pytest.mark.parametrize(("max_steps", "epochs"), [(-1, 2.0), (10, 1.0)])
def test_trainer_state_gives_epochs_and_dataset_tokens(tmp_path: Path, max_steps: int, epochs: float) -> None:
    model, _ = tiny_llama()
    args = transformers.TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=2,
                                          gradient_accumulation_steps=3, num_train_epochs=2, max_steps=max_steps,
                                          report_to=[], use_cpu=True, save_strategy="no")
    state = transformers.TrainerState(max_steps=10)
    plan, inferred = infer_plan(model, args, seq_len=64, world_size=1, out=tmp_path, state=state)
    # the run's padded tokens: 10 optimizer steps x 64 tokens x 2 sequences x 3 micro-batches, over its epochs
    assert plan.epochs == epochs
    assert plan.dataset_tokens == round(10 * 64 * 2 * 3 / epochs)
    assert inferred["epochs"]["from"] == ("args.num_train_epochs" if max_steps <= 0 else "args.max_steps")
    assert (plan.batch_size, plan.grad_accum) == (2, 3)


def test_no_trainer_state_leaves_the_dataset_to_the_plan(tmp_path: Path) -> None:
    model, _ = tiny_llama()
    args = transformers.TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=2,
                                          report_to=[], use_cpu=True, save_strategy="no")
    _, inferred = infer_plan(model, args, seq_len=64, out=tmp_path, state=None)
    assert "dataset_tokens" not in inferred and "epochs" not in inferred


def trainer_record(tmp_path: Path, *, dtype: object, **changes: object) -> tuple[object, object, object]:
    """(record, trainer, model): a real Trainer run (3 steps, 1 of them warm-up) of a tiny Llama built in ``dtype``
    with peft's LoRA on every linear layer (peft's defaults: fp32 adapters on a 16-bit base), measured by the
    callback, with TrainingArguments ``changes``."""
    from peft import LoraConfig, get_peft_model

    from gpuwork.measure.hf import GpuworkCallback

    config, _ = load_config("tiny-llama")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(
        transformers.CONFIG_MAPPING[config["model_type"]].from_dict(dict(config)), dtype=dtype,
        attn_implementation="sdpa")
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    generator = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(12):
        ids = torch.randint(0, int(config["vocab_size"]), (16,), generator=generator)
        rows.append({"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()})
    values = dict(output_dir=str(tmp_path / "run"), per_device_train_batch_size=2, max_steps=4, learning_rate=1e-4,
                  report_to=[], save_strategy="no", logging_steps=1000, disable_tqdm=True, use_cpu=True,
                  dataloader_num_workers=0, seed=0)
    values.update(changes)
    callback = GpuworkCallback(steps=2, warmup=1, checkpoint=False, evaluate=False)
    trainer = transformers.Trainer(model=model, args=transformers.TrainingArguments(**values), train_dataset=rows,
                                   callbacks=[callback])
    trainer.train()
    return callback.record, trainer, model


@pytest.mark.slow
@pytest.mark.parametrize(("dtype", "flag", "precision"), [
    ("bfloat16", {}, "bf16"),  # the H200 Trainer case: bf16 weights, no Trainer flag: bf16 GEMMs, no autocast
    ("bfloat16", {"bf16": True}, "bf16-mixed"),  # autocast over the 16-bit base
    ("float32", {}, "fp32"),
])
def test_lora_precision_is_the_frozen_base_dtype_not_the_adapters(tmp_path: Path, dtype: str, flag: dict,
                                                                  precision: str) -> None:
    record, _, model = trainer_record(tmp_path, dtype=getattr(torch, dtype), **flag)
    adapters = {p.dtype for n, p in model.named_parameters() if p.requires_grad}
    base = {p.dtype for p in model.parameters() if not p.requires_grad}
    assert adapters == {torch.float32}  # peft upcast its adapters (autocast_adapter_dtype): they say nothing
    assert base == {getattr(torch, dtype)}
    assert record.plan.precision.value == precision
    assert f"frozen base weights in torch.{dtype}" in record.inferred["precision"]["from"]


@pytest.mark.slow
@pytest.mark.parametrize(("changes", "clip", "decay"), [({}, True, 0.0),
                                                        ({"max_grad_norm": 0.0, "weight_decay": 0.1}, False, 0.1)])
def test_trainer_clipping_decay_and_optimizer_read_from_the_run(tmp_path: Path, changes: dict, clip: bool,
                                                                decay: float) -> None:
    record, trainer, _ = trainer_record(tmp_path, dtype=torch.bfloat16, **changes)
    args = trainer.args
    optimizer = getattr(trainer.optimizer, "optimizer", trainer.optimizer)  # accelerate wraps it
    assert record.plan.grad_clip is clip and (float(args.max_grad_norm) > 0) is clip
    assert record.plan.weight_decay == decay
    # what the Trainer's optimizer applies to its decayed group (biases and norms, if any train, go without)
    assert max(g["weight_decay"] for g in optimizer.param_groups if g["params"]) == decay
    # the optimizer implementation the plan prices is the one the Trainer built
    fused = bool(optimizer.defaults.get("fused"))
    assert (record.plan.optimizer_impl.value == "fused") is fused
    assert record.plan.tf32 is False and record.inferred["tf32"]["from"].startswith("torch.get_float32")


def test_tf32_from_the_process_switch_when_the_arguments_leave_it(tmp_path: Path) -> None:
    model, _ = tiny_llama()
    args = transformers.TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True, save_strategy="no")
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        plan, inferred = infer_plan(model, args, seq_len=16, out=tmp_path)
    finally:
        torch.set_float32_matmul_precision(before)
    assert plan.tf32 is True and inferred["tf32"]["from"] == "torch.get_float32_matmul_precision()=high"
    assert infer_plan(model, args, seq_len=16, out=tmp_path)[0].tf32 is (before != "highest")


def test_a_4bit_base_computes_in_its_quantization_configs_dtype(tmp_path: Path) -> None:
    # a QLoRA base's frozen floating-point weights are fp32 after peft's k-bit preparation; its GEMMs run in
    # bnb_4bit_compute_dtype (stand-in: a tiny Llama flagged 4-bit with that config, peft's adapters on it)
    from peft import LoraConfig, get_peft_model

    model, _ = tiny_llama()
    model.config.quantization_config = {"load_in_4bit": True, "bnb_4bit_compute_dtype": "bfloat16"}
    model.is_loaded_in_4bit = True
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    assert {p.dtype for p in model.parameters()} == {torch.float32}
    plan, inferred = infer_plan(model, seq_len=16, batch_size=1, out=tmp_path)
    assert (plan.method.value, plan.precision.value) == ("qlora", "bf16")
    assert inferred["precision"]["from"] == "quantization_config.bnb_4bit_compute_dtype in torch.bfloat16"
    del model.get_base_model().config.quantization_config  # without it: the frozen weights' dtype, fp32 here
    assert infer_plan(model, seq_len=16, batch_size=1, out=tmp_path)[0].precision.value == "fp32"
