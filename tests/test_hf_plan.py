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
