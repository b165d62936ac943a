"""The step model's price of eager Hugging Face / torch ops against Liger-Kernel's kernel-level benchmark rows.

Liger-Kernel (linkedin/Liger-Kernel) times its Triton kernels next to the ops they replace ("huggingface" /
"torch" provider): transformers' LlamaRMSNorm and apply_rotary_pos_emb, torch.nn.CrossEntropyLoss and
torch.nn.LayerNorm. ``liger_kernel_rows.csv`` (next to this script) holds those rows of the A100 and H100 files
(the repository, file and commit of each; docs/kernels.md "Liger-Kernel's eager rows"). Each row is rebuilt as the
model's own ``Op``s (``gpuwork.estimate.ops.step_ops`` on a plan of the row's shape and dtype, the ops picked by
name) and priced with ``gpuwork.estimate.steptime.price_ops`` for the hf-trainer stack.

What the benchmark times (benchmark/scripts/benchmark_<kernel>.py at the data's commit): ``triton.testing.do_bench``,
median ("y_value_50") of the calls in milliseconds; "forward" the op, "backward" ``y.backward(dy)`` (rotary:
``torch.autograd.grad``) on a kept graph, "full" both. do_bench clears a 256 MB buffer before each call, so the
inputs start outside L2 and the host queues the call's kernels while the GPU clears. What the benchmark runs beyond
a training step is added here and said so: CrossEntropyLoss's "full" calls keep the logits a leaf without resetting
their gradient, so each backward also adds into ``.grad`` (12 bytes per element); LlamaRMSNorm's weight stays fp32
on a bf16 input, so its output and the gradient it receives are fp32.

Usage: ``python scripts/liger_rows.py [-v]`` prints the ratio model / measured by kernel, mode and GPU (``-v``: every
row).
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpuwork.estimate.op import Kind, Op, Phase
from gpuwork.estimate.ops import step_ops
from gpuwork.estimate.steptime import memory_kernel_t0_us, price_ops
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import get_spec
from gpuwork.facts.rates import Rates, load_rates
from gpuwork.facts.spec import ModelSpec
from gpuwork.plan import Method, Precision, Stack, TrainPlan

ROWS_CSV = Path(__file__).with_name("liger_kernel_rows.csv")
_BASE = "llama-3.1-8b"  # a Llama block whose shape fields each row overrides
_FORWARD = {"rms_norm": "norm (attention input)", "layer_norm": "norm (attention input)", "rope": "rotary (q, k)",
            "cross_entropy": "log_softmax + nll"}
_BACKWARD = {"rms_norm": "norm (attention input) backward", "layer_norm": "norm (attention input) backward",
             "rope": "rotary (q, k) backward", "cross_entropy": "loss backward (nll, log_softmax)"}


@dataclass(frozen=True)
class LigerRow:
    """One speed row of a Liger-Kernel benchmark file."""

    gpu_id: str
    kernel: str  # rms_norm | layer_norm | rope | cross_entropy
    mode: str  # forward | backward | full
    x: int  # the swept value (x_name: hidden size, sequence length or vocabulary)
    config: dict[str, Any]  # extra_benchmark_config_str
    time_s: float  # median of the calls (y_value_50)
    covered: bool  # inside what the model claims to reproduce (else ``note`` says why not)
    note: str


def load_rows(path: Path = ROWS_CSV) -> tuple[LigerRow, ...]:
    with path.open(newline="") as f:
        return tuple(LigerRow(r["gpu_id"], r["kernel"], r["mode"], int(r["x"]), json.loads(r["config"]),
                              float(r["ms_50"]) * 1e-3, r["covered"] == "1", r["note"]) for r in csv.DictReader(f))


def _plan_and_spec(row: LigerRow) -> tuple[TrainPlan, ModelSpec]:
    base, cfg = get_spec(_BASE), row.config
    if row.kernel in ("rms_norm", "layer_norm"):  # x: the hidden size of M rows
        spec = replace(base, hidden_size=row.x, norm="rms" if row.kernel == "rms_norm" else "layer")
        precision = Precision.BF16 if "bfloat16" in str(cfg["dtype"]) else Precision.FP32
        return TrainPlan(model=_BASE, method=Method.FULL, precision=precision, seq_len=int(cfg["M"]), batch_size=1), spec
    if row.kernel == "rope":  # x: the hidden size or the sequence length, whichever the config does not fix
        hidden, seq = int(cfg.get("hidden_size", row.x)), int(cfg.get("seq_len", row.x))
        heads = int(cfg["num_q_heads"])
        spec = replace(base, hidden_size=hidden, num_heads=heads, num_kv_heads=int(cfg["num_kv_heads"]),
                       head_dim=hidden // heads)
        return TrainPlan(model=_BASE, method=Method.FULL, precision=Precision.BF16, seq_len=seq, batch_size=1), spec
    # cross_entropy: fp32 logits of B x T rows over x classes
    spec = replace(base, vocab_size=row.x)
    return TrainPlan(model=_BASE, method=Method.FULL, precision=Precision.FP32, seq_len=int(cfg["T"]), batch_size=int(cfg["B"])), spec


def benchmark_ops(row: LigerRow) -> tuple[Op, ...]:
    """The model's ops for one call of the row's benchmark, each once."""
    plan, spec = _plan_and_spec(row)
    ops = {o.name: o for o in step_ops(plan, spec)}
    names = ([_FORWARD[row.kernel]] if row.mode in ("forward", "full") else []) + \
            ([_BACKWARD[row.kernel]] if row.mode in ("backward", "full") else [])
    chosen = [replace(ops[name], count=1) for name in names]
    n = plan.tokens_per_micro_batch * (spec.vocab_size if row.kernel == "cross_entropy" else spec.hidden_size)
    if row.kernel == "cross_entropy" and row.mode == "full":  # the leaf logits' gradient accumulates: read 2, write 1
        chosen.append(Op("logits .grad accumulation", Kind.MEMORY, Phase.BACKWARD, 0.0, 12.0 * n, 1, 1))
    if row.kernel == "rms_norm":  # an fp32 weight: the broadcast weight multiply writes fp32 (+2 bytes); backward
        # the fp32 dy: the gradient times the weight reads and writes fp32 (+4, broadcast) and autograd casts it back
        # to the bf16 input's dtype (one kernel, 4 + 2), the weight's gradient reads dy and writes fp32 (+4) and its
        # row sum reads fp32 (+2): 16 bytes, a quarter of them broadcast (the ops torch records on the CPU)
        if row.mode in ("forward", "full"):
            chosen.append(Op("fp32 weight: fp32 output", Kind.MEMORY, Phase.FORWARD, 0.0, 2.0 * n, 0, 1,
                             strided_share=1.0))
        if row.mode in ("backward", "full"):
            chosen.append(Op("fp32 weight: fp32 gradients", Kind.MEMORY, Phase.BACKWARD, 0.0, 16.0 * n, 1, 1,
                             strided_share=0.25))
    return tuple(chosen)


STRIDED_ROWS_MIN_S = 1e-3  # rotary rows that set membw_strided_fraction: a millisecond and more, bandwidth-bound


def derive_strided_fraction(rows: tuple[LigerRow, ...], rates: Rates) -> dict[str, float]:
    """kernels.csv ``membw_strided_fraction_<die>`` by its rule: over the die's eager rotary rows of at least
    ``STRIDED_ROWS_MIN_S``, the median of (bytes / mem_bw) / (time - kernels x back-to-back t0), the bytes and
    kernels the model counts."""
    shares: dict[str, list[float]] = {}
    for row in rows:
        if row.kernel != "rope" or row.time_s < STRIDED_ROWS_MIN_S:
            continue
        gpu = get_gpu(row.gpu_id)
        ops = benchmark_ops(row)
        t0_s = memory_kernel_t0_us(gpu, rates)[0] * 1e-6
        stream_s = sum(o.bytes for o in ops) / rates.devices[row.gpu_id].mem_bw_bytes_s
        die = gpu.architecture.split()[-1].lower()
        shares.setdefault(die, []).append(stream_s / (row.time_s - sum(o.launches for o in ops) * t0_s))
    return {die: statistics.median(values) for die, values in shares.items()}


def benchmark_rates(rates: Rates) -> Rates:
    """``rates`` with the host's cost of an op called on its own (kernels.csv ``launch_overhead_isolated_op_*``) in
    place of a whole step's per-kernel costs: the benchmark calls the module or function directly, without a
    model's Python around it."""
    kernels = {**rates.kernels, "launch_overhead_eager_us": rates.kernel("launch_overhead_isolated_op_us"),
               "launch_overhead_eager_backward_us": rates.kernel("launch_overhead_isolated_op_backward_us")}
    return replace(rates, kernels=kernels)


def model_s(row: LigerRow, rates: Rates) -> float:
    profile = rates.stacks[Stack.HF_TRAINER]
    bench = benchmark_rates(rates)
    return price_ops(benchmark_ops(row), get_gpu(row.gpu_id), bench.devices[row.gpu_id], bench, profile).total_s


def main(argv: list[str]) -> int:
    rates = load_rates()
    ratios: dict[tuple[str, str, str], list[float]] = {}
    for row in load_rows():
        ratio = model_s(row, rates) / row.time_s
        ratios.setdefault((row.kernel, row.mode, row.gpu_id), []).append(ratio)
        if "-v" in argv:
            print(f"{row.gpu_id:13s} {row.kernel:13s} {row.mode:8s} x={row.x:>6d} measured {row.time_s * 1e6:9.1f} us"
                  f"  model {ratio * row.time_s * 1e6:9.1f} us  ratio {ratio:5.2f}  {'' if row.covered else 'not covered'}")
    for die, share in sorted(derive_strided_fraction(load_rows(), rates).items()):
        print(f"membw_strided_fraction_{die} by the rule: {share:.3f}")
    print(f"{'kernel':13s} {'mode':8s} {'gpu':13s} rows  median   min   max  (model / measured)")
    for (kernel, mode, gpu), values in sorted(ratios.items()):
        print(f"{kernel:13s} {mode:8s} {gpu:13s} {len(values):4d}  {statistics.median(values):6.2f} "
              f"{min(values):5.2f} {max(values):5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
