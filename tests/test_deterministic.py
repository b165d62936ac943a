"""TrainPlan.deterministic: torch's deterministic mode fills each natively allocated tensor (estimate.deterministic).

The real-step test runs a tiny Llama (transformers, from its config) forward, backward and AdamW on the CPU under
the torch profiler with and without ``torch.use_deterministic_algorithms(True)`` and compares the extra ``fill_``
bytes with what the estimate prices.
"""

from __future__ import annotations

import collections
import dataclasses
import json

import pytest

from gpuwork.estimate.ops import Kind, step_ops
from gpuwork.estimate.timing import estimate_time
from gpuwork.facts.configs import import_configs
from gpuwork.facts.resolve import resolve
from gpuwork.plan import TrainPlan
from gpuwork.present.messages import render

FILL = "deterministic fill"
H, INTER, LAYERS, HEADS, KV, VOCAB, BATCH, SEQ = 64, 128, 2, 4, 2, 96, 2, 32


def _fills(plan: TrainPlan) -> dict[str, float]:
    spec = resolve(plan).spec
    out: dict[str, float] = collections.defaultdict(float)
    for op in step_ops(plan, spec):
        if op.name.startswith(FILL):
            assert op.kind is Kind.MEMORY and op.flops == 0
            out[op.phase.value] += op.bytes * op.count
    return dict(out)


def test_off_by_default_and_on_adds_only_fill_writes() -> None:
    plan = TrainPlan(model="llama-3.1-8b", method="full", seq_len=8192, batch_size=2, grad_checkpointing=True)
    assert plan.deterministic is False
    spec = resolve(plan).spec
    base, det = step_ops(plan, spec), step_ops(dataclasses.replace(plan, deterministic=True), spec)
    assert not any(op.name.startswith(FILL) for op in base)
    assert [op for op in det if not op.name.startswith(FILL)] == list(base)
    fills = _fills(dataclasses.replace(plan, deterministic=True))
    t, h, kv, vocab = 16384, 4096, 1024, 128256
    # per block: two RMSNorms' fp32 copy + bf16 cast back (6 B), the attention output (2 B) + logsumexp (32 heads)
    block_forward = 2 * t * h * 6 + t * h * 2 + t * 32 * 4
    # backward: the casts again, dq dk dv, rotary's slice_backward zeros (2 per q and k) and the layout clone
    block_backward = 2 * t * h * 6 + t * (h + 2 * kv) * 2 + 3 * t * (h + kv) * 2
    head_forward = t * h * 2 + t * h * 6 + t * vocab * 4  # lookup, final norm, logits' fp32 copy
    head_backward = t * h * 6 + t * vocab * 2 + vocab * h * 2  # final norm, logits' gradient cast, embedding zeros
    assert fills == {"forward": 32 * block_forward + head_forward, "recompute": 32 * block_forward,
                     "backward": 32 * block_backward + head_backward}


def test_the_fills_lengthen_the_step_by_their_writes_only() -> None:
    plan = TrainPlan(model="llama-3.1-8b", method="full", seq_len=8192, batch_size=2, grad_checkpointing=True,
                     gpus=1)
    inputs = resolve(plan)
    gpu = inputs.gpu("h100_sxm")
    before = estimate_time(plan, gpu, inputs)
    after = estimate_time(dataclasses.replace(plan, deterministic=True), gpu, inputs)
    assert after.breakdown["matmul"] == before.breakdown["matmul"]
    assert after.breakdown["attention"] == before.breakdown["attention"]
    assert after.breakdown["memory"] > before.breakdown["memory"]
    # 123 GB of writes at H100 memory rates: tens of milliseconds on a ~3.8 s step
    assert 0.02 < after.step_time_s - before.step_time_s < 0.1


def test_an_fp32_stream_and_eager_attention_fill_less() -> None:
    # fp32 masters (mixed precision): RMSNorm's casts are no-ops; eager attention: structured matmuls and softmax
    plan = TrainPlan(model="llama-3.2-1b", method="full", precision="bf16-mixed", attention="eager",
                     deterministic=True)
    fills = _fills(plan)
    spec = resolve(plan).spec
    t, h, vocab = plan.tokens_per_micro_batch, spec.hidden_size, spec.vocab_size
    q, kv = spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    # the fp32 embedding output and autocast's 16-bit logits' fp32 copy; backward: rotary's zeros and clone, the
    # logits' gradient cast, the fp32 embedding gradient's zeros
    assert fills == {"forward": t * h * 4 + t * vocab * 4,
                     "backward": spec.num_layers * 3 * t * (q + kv) * 2 + t * vocab * 2 + vocab * h * 4}


def test_trainer_full_determinism_is_read(tmp_path) -> None:
    for value in (True, False):
        path = tmp_path / f"args_{value}.json"
        path.write_text(json.dumps({"per_device_train_batch_size": 2, "full_determinism": value}))
        got = import_configs([str(path)])
        assert got.fields["deterministic"] is value
        for lang, words in (("en", "enable_full_determinism"), ("ru", "enable_full_determinism")):
            assert any(words in render(line, lang) for line in got.report())
    unset = tmp_path / "unset.json"
    unset.write_text(json.dumps({"per_device_train_batch_size": 2}))
    assert "deterministic" not in import_configs([str(unset)]).fields


# -- a real step on the CPU ------------------------------------------------------------------------------------


def _profiled_step(tmp_path, deterministic: bool):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from torch.profiler import ProfilerActivity, profile, record_function

    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=H, intermediate_size=INTER,
                                      num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV,
                                      max_position_embeddings=64, attn_implementation="sdpa")
    (tmp_path / "config.json").write_text(json.dumps(config.to_dict()))
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).to(torch.bfloat16).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))

    def step() -> None:
        with record_function("PHASE_forward"):
            loss = model(input_ids=ids, labels=ids).loss
        with record_function("PHASE_backward"):
            loss.backward()
        with record_function("PHASE_optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(deterministic)
    try:
        step()  # the optimizer's states exist before the profiled step
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            step()
    finally:
        torch.use_deterministic_algorithms(before)
    return prof.events()


_BYTES = {"float": 4, "c10::BFloat16": 2}


def _fill_bytes(events) -> collections.Counter:
    """Bytes of the floating-point ``fill_`` calls by phase, leaving out the CPU attention kernel's own scratch
    buffers (a CUDA kernel has its own) and one-element scalars."""
    t, d = BATCH * SEQ, H // HEADS
    kept = {(4, t * HEADS * d), (4, t * KV * d), (3, t * HEADS)}  # q / k / v-shaped outputs and gradients, lse
    out: collections.Counter = collections.Counter()
    for e in events:
        if e.name != "aten::fill_" or not e.input_shapes or e.input_dtypes[0] not in _BYTES:
            continue
        numel = 1
        for d in e.input_shapes[0]:
            numel *= d
        chain, p = [], e.cpu_parent
        while p is not None:
            chain.append(p.name)
            p = p.cpu_parent
        phase = next((c[6:] for c in chain if c.startswith("PHASE_")), "")
        in_attention = any("scaled_dot_product" in c for c in chain)
        if numel <= 1 or (in_attention and (len(e.input_shapes[0]), numel) not in kept):
            continue
        out[phase] += numel * _BYTES[e.input_dtypes[0]]
    return out


def test_a_real_step_fills_what_the_estimate_prices(tmp_path) -> None:
    extra = _fill_bytes(_profiled_step(tmp_path, True))
    extra.subtract(_fill_bytes(_profiled_step(tmp_path, False)))
    plan = TrainPlan(model=str(tmp_path), method="full", precision="bf16", seq_len=SEQ, batch_size=BATCH,
                     attention="sdpa", deterministic=True)
    priced = _fills(plan)
    assert priced["backward"] == extra["backward"]
    # the forward's fills not priced, per position, not per token: the rotary embedding's fp32 positions and
    # inverse frequencies, and its cos and sin cast to the model dtype
    d = H // HEADS
    rotary = SEQ * 4 + d // 2 * 4 + 2 * SEQ * d * 2
    assert priced["forward"] + rotary == extra["forward"]
    assert extra["optimizer"] == 0  # AdamW's only fills are one-element step tensors
