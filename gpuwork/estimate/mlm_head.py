"""The masked-LM head's transform and vocabulary bias: the operations ``ops._head_forward_backward`` adds for them.

transformers' BertForMaskedLM (models/bert/modeling_bert.py at v4.49.0: BertPredictionHeadTransform,
BertLMPredictionHead) runs every row it predicts through a dense hidden x hidden layer with a bias, the config's
activation and a LayerNorm, then the vocabulary projection, whose ``decoder.bias`` is a trained per-token bias.
The LayerNorm is the head's norm that ``ops`` already prices ("final norm"; an encoder has no other); the
projection's bias add runs in the GEMM (torch's ``linear`` on a contiguous 3-D input calls ``addmm``, which hands a
1-D bias to cuBLASLt's bias epilogue), and its gradient is a column sum of the logits' gradient, one reduction.
Under autocast, ``layer_norm`` is an fp32 op (torch docs amp.rst, "CUDA Ops that can autocast to float32"), so the
activation's 16-bit output is cast to fp32 before the norm. Sources: docs/time_misses.md
"Held-out 17: milabench-scaling-l40s".

Pure: ``Op``s (``estimate.op``, each backward its own row); no import of ``ops`` (no cycle).
"""

from __future__ import annotations

from typing import NamedTuple

from gpuwork.estimate.op import Backward, Kind, Op, Phase
from gpuwork.facts.spec import ModelSpec
from gpuwork.plan import Task

TRANSFORM_SUFFIX = "transform.dense"  # cls.predictions.transform.dense (BERT, RoBERTa's lm_head.dense is not one)
DECODER_SUFFIX = "predictions.decoder"


class HeadWidths(NamedTuple):
    """Bytes per element the head reads: activations (e), the stream (s_b, fp32 under autocast), the weight as the
    GEMM reads it (w_b), the logits (out_b), the GEMM dtype, and whether autocast casts the fp32 weights."""

    e: int
    s_b: int
    w_b: int
    out_b: int
    mm: str
    autocast: bool
    casts_weight: bool


def _mem(name: str, phase: Phase, nbytes: float, launches: int, count: int) -> Op:
    return Op(name, Kind.MEMORY, phase, flops=0.0, bytes=float(nbytes), launches=launches, count=count,
              backward=Backward.NONE)


def _gemm(name: str, phase: Phase, m: int, n: int, k: int, nbytes: float, count: int, mm: str) -> Op:
    return Op(name, Kind.MATMUL, phase, flops=2.0 * m * n * k, bytes=float(nbytes), launches=1, count=count,
              dtype=mm, m=m, n=n, backward=Backward.NONE)


def _transform_rows(h: int, rows: int, w: HeadWidths, trains: bool, count: int) -> list[Op]:
    """dense (h x h, bias) -> activation (torch's native GELU kernel) -> [fp32 cast under autocast] -> LayerNorm."""
    fwd, bwd, e = Phase.FORWARD, Phase.BACKWARD, w.e
    out: list[Op] = []
    in_b = w.s_b
    if w.autocast and w.s_b != e:  # the last block's fp32 LayerNorm output, cast for this linear
        out += [_mem("head transform input cast (autocast)", fwd, rows * h * (w.s_b + e), 1, count),
                _mem("head transform input gradient cast", bwd, rows * h * (e + w.s_b), 1, count)]
        in_b = e
    if trains and w.casts_weight:  # the fp32 weight and bias copied to 16 bits once per step, gradients back
        out += [_mem("head transform weight cast (autocast)", fwd, (h * h + h) * (4 + w.w_b), 2, count),
                _mem("head transform weight gradient cast", bwd, (h * h + h) * (w.w_b + 4), 2, count)]
    io = rows * h * (in_b + e) + h * h * w.w_b
    out.append(_gemm("head transform dense", fwd, rows, h, h, io, count, w.mm))
    out.append(_gemm("head transform dense input gradient", bwd, rows, h, h, io, count, w.mm))
    if trains:
        out.append(_gemm("head transform dense weight gradient", bwd, h, h, rows, io, count, w.mm))
        out.append(_mem("head transform bias gradient", bwd, rows * h * e + h * 4, 1, count))
    # GELU reads x, writes y; its backward reads x and the gradient, writes one (1.5x)
    out += [_mem("head transform activation", fwd, rows * h * 2 * e, 1, count),
            _mem("head transform activation backward", bwd, rows * h * 3 * e, 1, count)]
    if w.autocast and e != 4:  # layer_norm runs in fp32 under autocast: its 16-bit input is cast first
        out += [_mem("head norm input cast (autocast)", fwd, rows * h * (e + 4), 1, count),
                _mem("head norm input gradient cast", bwd, rows * h * (4 + e), 1, count)]
    return out


def mlm_head_rows(spec: ModelSpec, rows: int, vocab: int, widths: HeadWidths, trains: bool,
                  count: int) -> list[Op]:
    """The masked-LM head's operations beyond its norm and projection, for ``rows`` predicted rows per micro-batch
    (``count`` micro-batches a step); none for a model whose spec lists no such head."""
    if spec.task is not Task.MASKED_LM:
        return []
    heads = [lin for lin in spec.linears if not lin.in_block]
    out: list[Op] = []
    for lin in heads:
        if lin.name.endswith(TRANSFORM_SUFFIX) and lin.in_features == lin.out_features == spec.hidden_size:
            out += _transform_rows(spec.hidden_size, rows, widths, trains, count)
    decoder_bias = any(lin.name.endswith(DECODER_SUFFIX) and lin.bias for lin in heads)
    if decoder_bias and trains:  # the per-token bias's gradient: a column sum of the logits' gradient
        out.append(_mem("output layer bias gradient", Phase.BACKWARD, rows * vocab * widths.out_b + vocab * 4, 1, count))
    return out
