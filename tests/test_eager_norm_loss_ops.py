"""Bytes and kernels of torch's native LayerNorm and of the loss's log_softmax as ``ops`` counts them.

Sources: aten/src/ATen/native/cuda/layer_norm_kernel.cu and SoftMax.cu (docs/kernels.md, "Eager LayerNorm and
log_softmax: passes over the row").
"""

from __future__ import annotations

import pytest

from gpuwork.estimate.ops import Phase, StackKernels, softmax_row_reads, step_ops
from gpuwork.facts.model import get_spec
from gpuwork.plan import TrainPlan


def _ops(plan: TrainPlan, stack: StackKernels | None = None) -> dict[str, object]:
    return {o.name: o for o in step_ops(plan, get_spec(plan.model, plan.task), stack) if o.count > 0}


@pytest.mark.parametrize(("dim", "elem_bytes", "reads"), [
    (2, 4, 1),  # a classifier's labels: a warp per row
    (8192, 4, 1),  # 8 elements per thread of a 1024-thread block: registers
    (11_264, 4, 1),  # 45 KB, a multiple of four: staged in the 48 KiB of shared memory
    (12_288, 4, 3),  # 48 KB: past shared memory
    (11_266, 4, 3),  # fits, but not a multiple of the 16-byte vector
    (20_000, 2, 1),  # 40 KB of 16-bit logits, a multiple of eight
    (32_000, 4, 3), (50_257, 4, 3), (128_256, 4, 3), (151_936, 2, 3),  # LLM vocabularies
])
def test_softmax_reads_a_row_once_while_it_fits_on_chip_and_three_times_past_it(dim, elem_bytes, reads):
    assert softmax_row_reads(dim, elem_bytes) == reads


def test_causal_lm_loss_reads_fp32_logits_three_times_and_its_gradient_twice():
    plan = TrainPlan(model="llama-3.2-1b", method="full", precision="bf16", seq_len=512, batch_size=2)
    spec = get_spec(plan.model)
    ops = _ops(plan)
    n = plan.batch_size * plan.seq_len * spec.vocab_size
    assert ops["log_softmax + nll"].bytes == n * (3 + 1) * 4  # max, sum of exponentials, output pass; one write
    assert ops["log_softmax + nll"].launches == 2
    # nll's zero fill, the gradient read for its row sum and again with the saved output, the logits' gradient
    assert ops["loss backward (nll, log_softmax)"].bytes == n * (1 + 2 + 1 + 1) * 4
    assert ops["loss backward (nll, log_softmax)"].launches == 3


def test_a_classifier_loss_over_two_labels_reads_its_rows_once():
    plan = TrainPlan(model="bert-base-uncased", task="seq-cls", method="full", precision="fp32", seq_len=128,
                     batch_size=8)
    ops = _ops(plan)
    labels = max(get_spec(plan.model, plan.task).num_labels, 1)
    assert ops["log_softmax + nll"].bytes == plan.batch_size * labels * 2 * 4
    assert ops["loss backward (nll, log_softmax)"].bytes == plan.batch_size * labels * 4 * 4


@pytest.mark.parametrize(("method", "weight_kernel"), [("full", True), ("lora", False)])
def test_native_layer_norm_reads_each_row_twice_each_way(method, weight_kernel):
    plan = TrainPlan(model="gpt2", method=method, precision="fp32", seq_len=256, batch_size=4, lora_targets=("c_attn",))
    spec = get_spec(plan.model)
    ops = _ops(plan)
    n = plan.batch_size * plan.seq_len * spec.hidden_size
    forward = ops["norm (attention input)"]
    assert forward.bytes == n * (2 * 4 + 4) and forward.launches == 1  # moments pass, output pass; one write
    backward = ops["norm (attention input) backward"]
    # dx: dy and x read twice, dx written; the weight and bias gradients read dy and x once more, in their own kernel
    assert backward.phase is Phase.BACKWARD
    assert backward.bytes == pytest.approx(n * ((2 * 4 + 3 * 4) + (8 if weight_kernel else 0)))
    assert backward.launches == (2 if weight_kernel else 1)


def test_the_final_norm_backward_is_priced_as_a_backward():
    plan = TrainPlan(model="gpt2", method="full", precision="fp32", seq_len=256, batch_size=4)
    ops = _ops(plan)
    final, block = ops["final norm backward"], ops["norm (attention input) backward"]
    assert final.phase is Phase.BACKWARD
    assert final.bytes == block.bytes and final.launches == block.launches


def test_a_fused_norm_stays_one_kernel_each_way():
    plan = TrainPlan(model="gpt2", method="full", precision="fp32", seq_len=256, batch_size=4)
    ops = _ops(plan, StackKernels(fused_norm=True))
    n = plan.batch_size * plan.seq_len * get_spec(plan.model).hidden_size
    assert ops["norm (attention input)"].bytes == n * (4 + 4)
    assert ops["norm (attention input) backward"].bytes == n * 2 * (4 + 4)


def test_a_fusing_stack_reads_the_logits_once():
    plan = TrainPlan(model="llama-3.2-1b", method="full", precision="bf16", seq_len=512, batch_size=2)
    ops = _ops(plan, StackKernels(fuse_elementwise=True))
    n = plan.batch_size * plan.seq_len * get_spec(plan.model).vocab_size
    assert ops["log_softmax + nll"].bytes == n * 2 * 4
    assert ops["loss backward (nll, log_softmax)"].bytes == n * 4 * 4


@pytest.mark.parametrize(("precision", "forward_share", "backward_share"), [
    # bf16: forward 36 bytes an element, x * rsqrt (8) and weight * x (2 + 2) broadcast; backward 92, the gradient
    # times the weight (2 + 2), times the rsqrt (8) and mean's division of its expanded gradient (4)
    ("bf16", 12 / 36, 16 / 92),
    # fp32: no casts, wider gradients; forward 8 + 8 of 28, backward 8 + 8 + 4 of 92
    ("fp32", 16 / 28, 20 / 92),
])
def test_eager_rms_norm_marks_its_broadcast_kernels_strided(precision, forward_share, backward_share):
    plan = TrainPlan(model="llama-3.2-1b", method="full", precision=precision, seq_len=256, batch_size=2)
    ops = _ops(plan)
    assert ops["norm (attention input)"].strided_share == pytest.approx(forward_share)
    assert ops["norm (attention input) backward"].strided_share == pytest.approx(backward_share)
    assert ops["final norm backward"].strided_share == pytest.approx(backward_share)
    # a fused norm is one contiguous kernel
    assert _ops(plan, StackKernels(fused_norm=True))["norm (attention input)"].strided_share == 0.0
