"""Which GELU is one kernel (estimate.ops._activation_forward; docs/kernels.md "GELU: one kernel or a composite").

transformers' ``gelu_pytorch_tanh`` (GELUTanh, once PytorchGELUTanh) and ``gelu`` (GELUActivation) call torch's
``F.gelu``: one kernel forward, ``gelu_backward`` backward. ``gelu_new`` (NewGELUActivation) writes the tanh formula
out in Python, one kernel per operator in eager mode. The profiler test runs the installed transformers' modules
on the CPU and counts the kernels that touch the activation-sized tensor.
"""

from __future__ import annotations

import dataclasses

import pytest

from gpuwork.estimate.op import Phase
from gpuwork.estimate.ops import StackKernels, step_ops
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan

# (forward kernels, backward kernels) as ops prices them and as the profiler counts them below
KERNELS = {"gelu_pytorch_tanh": (1, 1), "gelu": (1, 1), "gelu_new": (8, 11)}
SHAPE = [4, 8]
# allocation, dtype bookkeeping and views: no kernel runs
_NOT_KERNELS = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::result_type", "aten::detach",
                "aten::to", "aten::_to_copy", "aten::lift_fresh"}


def _activation_ops(activation: str) -> tuple[tuple[int, int, float], tuple[int, int, float]]:
    """GPT-2 (a two-matrix MLP) with ``activation``: the MLP activation's (kernels, count, bytes), forward and
    backward."""
    plan = TrainPlan(model="gpt2", method="full", batch_size=2, seq_len=128)
    spec = dataclasses.replace(resolve(plan).spec, activation=activation)
    ops = [op for op in step_ops(plan, spec, StackKernels()) if op.name.startswith("MLP activation")]
    assert len(ops) == 2, [op.name for op in ops]
    fwd = next(op for op in ops if op.phase is Phase.FORWARD)
    bwd = next(op for op in ops if op.phase is Phase.BACKWARD)
    return (fwd.launches, fwd.count, fwd.bytes), (bwd.launches, bwd.count, bwd.bytes)


@pytest.mark.parametrize("activation", sorted(KERNELS))
def test_activation_kernels_as_priced(activation):
    (fwd_k, fwd_n, fwd_b), (bwd_k, bwd_n, bwd_b) = _activation_ops(activation)
    assert (fwd_k, bwd_k) == KERNELS[activation]
    assert fwd_n == bwd_n == 12  # one per block (GPT-2: 12), one micro-batch
    if KERNELS[activation] == (1, 1):
        # F.gelu reads x and writes y; gelu_backward reads x and the gradient and writes one
        assert bwd_b == pytest.approx(1.5 * fwd_b)


def test_torch_gelu_is_cheaper_than_the_composite():
    one = _activation_ops("gelu_pytorch_tanh")
    composite = _activation_ops("gelu_new")
    assert one[0][2] < composite[0][2] and one[1][2] < composite[1][2]


def _profiled_kernels(activation: str) -> tuple[int, int]:
    torch = pytest.importorskip("torch")
    activations = pytest.importorskip("transformers.activations")
    from torch.profiler import ProfilerActivity, profile

    act = activations.ACT2FN[activation]
    x = torch.randn(*SHAPE, requires_grad=True)
    grad = torch.randn(*SHAPE)

    def kernels(prof) -> int:
        # leaf aten ops over the activation-sized tensor (a Python scalar's 0-dim copy is not a GPU kernel)
        return sum(1 for e in prof.events() if e.name.startswith("aten::") and e.name not in _NOT_KERNELS
                   and not any(c.name.startswith("aten::") and c.name not in _NOT_KERNELS for c in e.cpu_children)
                   and SHAPE in e.input_shapes)

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as fwd:
        y = act(x)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as bwd:
        y.backward(grad)
    return kernels(fwd), kernels(bwd)


@pytest.mark.parametrize("activation", sorted(KERNELS))
def test_profiled_kernels_match_the_pricing(activation):
    assert _profiled_kernels(activation) == KERNELS[activation]
