"""Per-block activation checkpointing: the step's peak can come in the FIRST block's backward, the last to run.

Non-reentrant ``torch.utils.checkpoint`` re-runs a block's forward inside that block's backward, and with
``zero_grad(set_to_none=True)`` each block's gradients appear in its own backward; when autograd reaches the first
block every other gradient exists beside one block input, its recompute and its backward transient
(docs/memory_misses.md, "Per-block checkpointing at 2,048 tokens")."""

from __future__ import annotations

import pytest

from gpuwork.estimate.memory import estimate_memory
from gpuwork.measure.accuracy import case_spec
from gpuwork.plan import TrainPlan

# the CS336 staff model's "medium" shape (hand-written softmax and SiLU), as the held-out memory cases record it
MEDIUM = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 10000, "hidden_size": 1024,
          "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 16,
          "head_dim": 64, "max_position_embeddings": 2048, "rope_theta": 10000.0, "rms_norm_eps": 1e-5,
          "hidden_act": "silu", "tie_word_embeddings": False, "softmax_impl": "composite",
          "hidden_act_impl": "composite"}


def _plan(seq_len: int, checkpointing: bool) -> TrainPlan:
    return TrainPlan(model="cs336-medium", method="scratch", precision="bf16-mixed", optimizer="adamw",
                     optimizer_impl="out-of-place", seq_len=seq_len, batch_size=1, grad_checkpointing=checkpointing,
                     attention="eager", stack="torch-loop", grad_clip=False)


def test_the_first_blocks_backward_holds_every_other_gradient_beside_one_recompute() -> None:
    spec = case_spec("cs336-medium", MEDIUM)
    ckpt = estimate_memory(_plan(2048, True), spec)
    short = estimate_memory(_plan(128, False), spec)  # its peak is the optimizer step, with every gradient
    assert short.peak_phase == "optimizer step"
    all_grads = short.breakdown["gradients"]
    assert ckpt.peak_phase == "backward end"
    assert ckpt.phase_peaks["backward end"] > ckpt.phase_peaks["block backward"]
    assert ckpt.breakdown["gradients"] == all_grads - all_grads // 24  # all but the first block's own
    # one block input and one block's recompute instead of the 24 checkpointed inputs of the first backward
    first_backward = estimate_memory(_plan(2048, False), spec)
    assert 0 < ckpt.breakdown["activations"] < first_backward.breakdown["activations"] / 10


def test_without_checkpointing_the_end_of_backward_keeps_its_terms() -> None:
    # every block's saved tensors are alive in the first backward, so that moment stays the larger one
    spec = case_spec("cs336-medium", MEDIUM)
    est = estimate_memory(_plan(2048, False), spec)
    assert est.peak_phase == "block backward"
    assert est.phase_peaks["backward end"] < est.phase_peaks["block backward"]


def test_torch_peaks_in_the_first_blocks_backward_under_per_block_checkpointing() -> None:
    """The mechanism itself, traced by PyTorch's MemTracker on CPU: a six-block residual MLP stack, every block
    checkpointed (use_reentrant=False), the second step (AdamW states exist, gradients set to None)."""
    torch = pytest.importorskip("torch")
    from torch.distributed._tools.mem_tracker import MemTracker, _ModState
    from torch.utils.checkpoint import checkpoint

    class Block(torch.nn.Module):
        def __init__(self, d: int):
            super().__init__()
            self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

        def forward(self, x):
            return x + self.down(torch.nn.functional.silu(self.up(x)))

    class Stack(torch.nn.Module):  # MemTracker follows the blocks by their names under a parent
        def __init__(self, d: int, n: int):
            super().__init__()
            self.layers = torch.nn.ModuleList(Block(d) for _ in range(n))

        def forward(self, h):
            for block in self.layers:
                h = checkpoint(block, h, use_reentrant=False)
            return h

    torch.manual_seed(0)
    d, layers = 128, 6
    model = Stack(d, layers)
    opt = torch.optim.AdamW(model.parameters())
    x = torch.randn(1, 256, d)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()

    step()
    opt.step()  # the states exist from here on, as in a steady-state step
    tracker = MemTracker()
    tracker.track_external(model, opt, x)
    with tracker:
        step()

    def backward_peak(block) -> int:
        snap = tracker.memory_tracking[block].snapshots[_ModState.PEAK_BW][-1]
        return int(next(iter(snap.values()))["Total"])

    first, last = backward_peak(model.layers[0]), backward_peak(model.layers[-1])
    grads_of_others = (layers - 1) * sum(p.numel() * 4 for p in model.layers[0].parameters())
    inputs_freed = (layers - 1) * x.numel() * 4
    assert first > last
    # what the first block's backward holds beyond the last block's: the other blocks' gradients, less their inputs
    assert first - last == pytest.approx(grads_of_others - inputs_freed, rel=0.01)
