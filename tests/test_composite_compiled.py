"""A hand-written softmax and SiLU (config softmax_impl / hidden_act_impl "composite", the CS336 staff model) under
torch.compile (stack torch-loop-compile): what Inductor's partitioner keeps of them (docs/memory_misses.md, "Held-out
memory 16"). The slow test compiles a small pre-norm block with Inductor on the CPU, once with torch.softmax and
F.silu and once with the op-by-op forms, and counts the bytes autograd keeps (``saved_tensors_hooks``); the difference
is compared with gpuwork's block model, eager (torch-loop) and compiled (torch-loop-compile)."""

from __future__ import annotations

import functools
import math
import shutil

import pytest
from conftest import saved_bytes_per_token

from gpuwork.estimate.memory import _activations, memory_dtypes
from gpuwork.facts.rates import load_rates
from gpuwork.measure.accuracy import case_spec
from gpuwork.plan import Attention, Method, Precision, Stack, TrainPlan

HIDDEN, HEADS, FF, BATCH, SEQ = 64, 4, 384, 2, 64  # sizes that tell a score matrix from an MLP tensor
PROBE = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 1000, "hidden_size": HIDDEN,
         "intermediate_size": FF, "num_hidden_layers": 1, "num_attention_heads": HEADS,
         "num_key_value_heads": HEADS, "head_dim": HIDDEN // HEADS, "max_position_embeddings": SEQ,
         "hidden_act": "silu", "tie_word_embeddings": False}
COMPOSITE = {"softmax_impl": "composite", "hidden_act_impl": "composite"}


@functools.cache
def _spec(composite: bool):
    name = "probe-cs336-composite" if composite else "probe-cs336"
    return case_spec(name, {**PROBE, **COMPOSITE} if composite else PROBE)


def _per_token(composite: bool, stack: Stack) -> int:
    """Bytes per token one fp32 block with eager attention saves under ``stack`` (gpuwork's block model), its score
    matrices included."""
    plan = TrainPlan(model="probe-cs336", method=Method.SCRATCH, precision=Precision.FP32, batch_size=BATCH,
                     seq_len=SEQ, attention=Attention.EAGER, stack=stack, optimizer_impl="out-of-place")
    profile = load_rates().stacks[stack]
    acts = _activations(_spec(composite), plan, memory_dtypes(plan, profile), profile)
    return acts.per_layer_trained + acts.per_layer_quadratic * SEQ


def test_compiled_composite_softmax_keeps_its_score_matrices_and_silu_adds_nothing():
    a = HEADS
    for stack, silu in ((Stack.TORCH_LOOP, 4 * FF), (Stack.TORCH_LOOP_COMPILE, 0)):
        added = _per_token(True, stack) - _per_token(False, stack)
        # exp's output beside the probabilities (4 bytes per head per key), the row max indices and sums (8 + 4
        # per head), and eagerly one more intermediate-sized tensor for x * sigmoid(x)
        assert added == 4 * a * SEQ + 12 * a + silu, stack


def _block(composite: bool):
    torch = pytest.importorskip("torch")

    def softmax(x):
        if not composite:
            return torch.softmax(x, dim=-1)
        shifted = x - torch.max(x, dim=-1, keepdim=True)[0]
        e = torch.exp(shifted)
        return e / torch.sum(e, dim=-1, keepdim=True)

    def silu(x):
        return x * torch.sigmoid(x) if composite else torch.nn.functional.silu(x)

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.qkvo = torch.nn.ModuleList(torch.nn.Linear(HIDDEN, HIDDEN, bias=False) for _ in range(4))
            self.gate, self.up = (torch.nn.Linear(HIDDEN, FF, bias=False) for _ in range(2))
            self.down = torch.nn.Linear(FF, HIDDEN, bias=False)

        def forward(self, x):
            b, t, h = x.shape
            q, k, v = (p(x).view(b, t, HEADS, -1).transpose(1, 2) for p in self.qkvo[:3])
            scores = q @ k.transpose(-1, -2) / math.sqrt(h // HEADS)
            causal = torch.arange(t)[:, None] >= torch.arange(t)[None, :]
            scores = torch.where(causal, scores, float("-inf"))
            out = (softmax(scores) @ v).transpose(1, 2).reshape(b, t, h)
            x = x + self.qkvo[3](out)
            return x + self.down(silu(self.gate(x)) * self.up(x))

    torch.manual_seed(0)
    return Block()


def _saved_per_token(fn, skip: set[int]) -> float:
    import torch

    return saved_bytes_per_token(fn, torch.randn(BATCH, SEQ, HIDDEN, requires_grad=True), skip)


def _eager_and_compiled(composite: bool) -> tuple[float, float]:
    torch = pytest.importorskip("torch")
    block = _block(composite)
    skip = {p.untyped_storage().data_ptr() for p in block.parameters()}
    eager = _saved_per_token(block, skip)
    compiled = torch.compile(block, backend="inductor")
    _saved_per_token(compiled, skip)  # compiles
    return eager, _saved_per_token(compiled, skip)


@pytest.mark.slow
def test_inductor_keeps_the_hand_written_softmax_and_recomputes_the_hand_written_silu():
    pytest.importorskip("torch")
    if shutil.which("g++") is None and shutil.which("c++") is None:
        pytest.skip("Inductor's CPU backend needs a C++ compiler")
    fused_eager, fused_compiled = _eager_and_compiled(False)
    composite_eager, composite_compiled = _eager_and_compiled(True)
    assert composite_eager - fused_eager == _per_token(True, Stack.TORCH_LOOP) - _per_token(False, Stack.TORCH_LOOP)
    # compiled: exp's output stays beside the probabilities (4 bytes per head per key), x * sigmoid(x) is recomputed
    # (an intermediate-sized tensor would be 4 * FF = 1,536 bytes more); the per-row statistics the partitioner picks
    # (max, sums) may differ from eager's by one fp32 per head
    model = _per_token(True, Stack.TORCH_LOOP_COMPILE) - _per_token(False, Stack.TORCH_LOOP_COMPILE)
    assert abs((composite_compiled - fused_compiled) - model) <= 4 * HEADS
