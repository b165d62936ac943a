"""The masked-LM head in the step's op list (estimate.mlm_head, estimate.ops): BertForMaskedLM's transform (dense,
GELU, LayerNorm) and vocabulary bias, and autocast's fp32 cross-entropy (docs/time_misses.md, "Held-out 17:
milabench-scaling-l40s")."""

from __future__ import annotations

from gpuwork.estimate.ops import Kind, Phase, step_ops
from gpuwork.facts.model import get_spec
from gpuwork.plan import TrainPlan

BERT = "bert-base-uncased"


def _plan(**changes) -> TrainPlan:
    base = dict(model=BERT, task="masked-lm", method="scratch", precision="fp16-mixed", seq_len=512, batch_size=8,
                attention="sdpa", lengths="fixed")
    return TrainPlan(**{**base, **changes})


def _ops(plan: TrainPlan) -> dict[str, object]:
    spec = get_spec(plan.model, plan.task)
    return {o.name: o for o in step_ops(plan, spec) if o.count > 0}


def _linear(spec, suffix: str):
    return next(lin for lin in spec.linears if lin.name.endswith(suffix))


def test_bert_mlm_under_autocast_prices_the_head_transform_bias_and_an_fp32_loss():
    plan = _plan()
    spec = get_spec(BERT, "masked-lm")
    rows, h, v = plan.batch_size * plan.seq_len, spec.hidden_size, spec.vocab_size
    dense = _linear(spec, "transform.dense")
    assert (dense.in_features, dense.out_features, dense.bias) == (h, h, True)
    assert _linear(spec, "predictions.decoder").bias
    ops = _ops(plan)
    fwd = ops["head transform dense"]
    assert fwd.kind is Kind.MATMUL and fwd.phase is Phase.FORWARD and fwd.dtype == "fp16"
    assert fwd.flops == 2 * rows * dense.in_features * dense.out_features
    assert ops["head transform dense input gradient"].flops == fwd.flops
    assert ops["head transform dense weight gradient"].flops == fwd.flops
    assert ops["head transform bias gradient"].bytes == rows * h * 2 + h * 4
    assert ops["head transform activation"].bytes == rows * h * 2 * 2
    # the last block's fp32 LayerNorm output cast for the dense, the GELU's fp16 output cast for the fp32 LayerNorm
    assert ops["head transform input cast (autocast)"].bytes == rows * h * (4 + 2)
    assert ops["head norm input cast (autocast)"].bytes == rows * h * (2 + 4)
    assert ops["output layer input cast (autocast)"].bytes == rows * h * (4 + 2)
    # the per-token bias: a column sum of the fp16 logits' gradient
    assert ops["output layer bias gradient"].bytes == rows * v * 2 + v * 4
    # cross_entropy is an fp32 autocast op: the fp16 logits are cast, log_softmax and its backward run in fp32;
    # a 30,522-wide fp32 row is past shared memory, so log_softmax reads it three times and its backward reads the
    # gradient twice after nll's zero fill
    assert ops["logits to fp32"].bytes == rows * v * (2 + 4)
    assert ops["log_softmax + nll"].bytes == rows * v * (3 + 1) * 4
    assert ops["loss backward (nll, log_softmax)"].bytes == rows * v * (1 + 2 + 1 + 1) * 4
    assert ops["logits gradient cast"].bytes == rows * v * (4 + 2)


def test_fp32_bert_has_the_transform_but_no_autocast_casts():
    plan = _plan(precision="fp32")
    spec = get_spec(BERT, "masked-lm")
    rows, h, v = plan.batch_size * plan.seq_len, spec.hidden_size, spec.vocab_size
    ops = _ops(plan)
    assert ops["head transform dense"].dtype == "fp32"
    assert ops["head transform dense"].flops == 2 * rows * h * h
    assert ops["output layer bias gradient"].bytes == rows * v * 4 + v * 4
    assert ops["log_softmax + nll"].bytes == rows * v * (3 + 1) * 4
    for name in ("head transform input cast (autocast)", "head norm input cast (autocast)", "logits to fp32",
                 "logits gradient cast", "head transform weight cast (autocast)"):
        assert name not in ops


def test_gathered_masked_rows_size_the_head_and_lora_trains_no_head_weight():
    plan = _plan(mlm_predictions=20)
    spec = get_spec(BERT, "masked-lm")
    rows, h = plan.batch_size * 20, spec.hidden_size
    ops = _ops(plan)
    assert ops["head transform dense"].flops == 2 * rows * h * h
    assert ops["output layer bias gradient"].bytes == rows * spec.vocab_size * 2 + spec.vocab_size * 4
    lora = _ops(_plan(method="lora", lora_targets=("query", "value")))
    assert "head transform dense input gradient" in lora
    for name in ("head transform dense weight gradient", "head transform bias gradient", "output layer bias gradient"):
        assert name not in lora


def test_causal_lm_and_classifier_get_no_mlm_head():
    causal = _ops(TrainPlan(model="gpt2", method="full", precision="bf16-mixed", seq_len=512, batch_size=2))
    cls = _ops(_plan(task="seq-cls", precision="fp16-mixed"))
    for ops in (causal, cls):
        assert not [name for name in ops if name.startswith("head ")]
        assert "output layer bias gradient" not in ops
    assert "output layer input cast (autocast)" not in cls  # a classifier reads its pooler's 16-bit output
