"""A model of one's own that writes its attention softmax and its SiLU op by op (the Stanford CS336 staff model:
``x - max, exp, sum, divide`` and ``x * sigmoid(x)``), stated in its config.json as ``softmax_impl`` and
``hidden_act_impl`` "composite": what autograd saves per block, counted with saved-tensor hooks on a real tiny model
on the CPU, against the estimate (docs/memory_misses.md, "Hand-written softmax and SiLU")."""

from __future__ import annotations

import math

import pytest

from gpuwork import TrainPlan
from gpuwork.errors import ModelError
from gpuwork.estimate.composite_ops import softmax_backward_transient, softmax_saved
from gpuwork.estimate.memory import _block_activations, memory_dtypes, stack_profile

HIDDEN, HEADS, INTER, LAYERS, VOCAB = 64, 4, 176, 2, 256
CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": VOCAB,
          "hidden_size": HIDDEN, "intermediate_size": INTER, "num_hidden_layers": LAYERS,
          "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "max_position_embeddings": 512,
          "hidden_act": "silu", "tie_word_embeddings": False}
COMPOSITE = {"softmax_impl": "composite", "hidden_act_impl": "composite"}


def test_saved_and_transient_bytes_per_head_and_pair():
    """exp's output (fp32 under CUDA autocast, which lists exp among its fp32 ops) plus the quotient the P @ V matmul
    keeps in its own dtype; backward holds four exp-dtype s x s buffers more (and the matmul copy's 16-bit gradient
    under autocast)."""
    assert softmax_saved(4, autocast=False) == 8
    assert softmax_saved(2, autocast=True) == 6
    assert softmax_saved(2, autocast=False) == 4
    assert softmax_backward_transient(4, autocast=False) == 16
    assert softmax_backward_transient(2, autocast=True) == 18
    assert softmax_backward_transient(2, autocast=False) == 8


def _spec(extra: dict):
    from gpuwork.measure.accuracy import case_spec

    return case_spec("tiny-cs336", {**CONFIG, **extra})


def _plan(precision: str, seq_len: int, batch_size: int) -> TrainPlan:
    return TrainPlan(model="tiny-cs336", method="scratch", precision=precision, attention="eager",
                     stack="torch-loop", seq_len=seq_len, batch_size=batch_size)


def _estimated_block_bytes(extra: dict, precision: str, seq_len: int, batch_size: int) -> int:
    spec, plan = _spec(extra), _plan(precision, seq_len, batch_size)
    profile = stack_profile(plan, spec)
    act = _block_activations(spec, plan, memory_dtypes(plan, profile), profile)
    return (act.per_layer_trained + act.per_layer_quadratic * seq_len) * batch_size * seq_len


def test_the_config_keys_reach_the_spec_and_refuse_other_values():
    assert _spec(COMPOSITE).extras["softmax_impl"] == "composite"
    assert "softmax_impl" not in _spec({}).extras
    with pytest.raises(ModelError):
        _spec({"softmax_impl": "handwritten"})


def test_composite_softmax_and_silu_save_more_than_the_fused_ops():
    """fp32: one s x s tensor per head more (exp's output beside the quotient) and one intermediate-sized tensor more
    (sigmoid's output); bf16 autocast: the same 6 bytes per head and pair as Hugging Face's fp32 softmax."""
    seq, batch = 128, 2
    fused = _estimated_block_bytes({}, "fp32", seq, batch)
    composite = _estimated_block_bytes(COMPOSITE, "fp32", seq, batch)
    assert composite - fused == (4 * HEADS * seq + 12 * HEADS + 4 * INTER) * batch * seq
    fused = _estimated_block_bytes({}, "bf16-mixed", seq, batch)
    composite = _estimated_block_bytes(COMPOSITE, "bf16-mixed", seq, batch)
    assert composite - fused == (12 * HEADS + 2 * INTER) * batch * seq


def _staff_style_lm(torch):
    """A tiny decoder written the way the CS336 staff model is (einsum linears, RMSNorm upcast to fp32, RoPE on
    q and k, a causal mask applied with torch.where, softmax and SiLU op by op, untied head): own code, same ops."""
    nn = torch.nn
    d = HIDDEN // HEADS

    def linear(x, w):
        return torch.einsum("...i,oi->...o", x, w)

    def softmax(x):
        shifted = x - torch.max(x, dim=-1, keepdim=True)[0]
        e = torch.exp(shifted)
        return e / torch.sum(e, dim=-1, keepdim=True)

    def rms(x, w):
        x32 = x.to(torch.float32)
        return (w * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5))).to(x.dtype)

    freqs = torch.arange(512)[:, None] * (10000.0 ** (-torch.arange(0, d, 2) / d))[None, :]
    rotary = torch.stack((torch.cos(freqs), torch.sin(freqs)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = nn.Parameter(torch.ones(HIDDEN)), nn.Parameter(torch.ones(HIDDEN))
            self.q, self.k, self.v, self.o = (nn.Parameter(torch.randn(HIDDEN, HIDDEN) * 0.05) for _ in range(4))
            self.w1, self.w3 = (nn.Parameter(torch.randn(INTER, HIDDEN) * 0.05) for _ in range(2))
            self.w2 = nn.Parameter(torch.randn(HIDDEN, INTER) * 0.05)

        def rope(self, x, cos, sin):
            x1, x2 = x[..., 0::2], x[..., 1::2]
            return torch.cat((cos * x1 - sin * x2, sin * x1 + cos * x2), dim=-1)

        def forward(self, x):
            b, s, _ = x.shape
            h = rms(x, self.n1)
            q, k, v = (linear(h, w).view(b, s, HEADS, d).transpose(1, 2) for w in (self.q, self.k, self.v))
            cos, sin = rotary[0, :s], rotary[1, :s]  # slices of one cached buffer, as the staff RoPE reads them
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(d)
            mask = torch.arange(s)[:, None] >= torch.arange(s)[None, :]
            scores = torch.where(mask, scores, float("-inf"))
            attn = torch.einsum("bhqk,bhkd->bhqd", softmax(scores), v)
            x = x + linear(attn.transpose(1, 2).contiguous().view(b, s, HIDDEN), self.o)
            h = rms(x, self.n2)
            gate = linear(h, self.w1)
            return x + linear(gate * torch.sigmoid(gate) * linear(h, self.w3), self.w2)

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Parameter(torch.randn(VOCAB, HIDDEN))
            self.register_buffer("rotary", rotary)
            self.layers = nn.ModuleList(Block() for _ in range(LAYERS))

        def forward(self, ids):
            x = self.emb[ids]
            for layer in self.layers:
                x = layer(x)
            return x

    torch.manual_seed(0)
    return LM()


@pytest.mark.parametrize("seq_len", [64, 256])
def test_a_real_staff_style_block_saves_what_the_estimate_counts(seq_len):
    """fp32, the blocks after the first (the first one's input is the embedding lookup): the bytes of the distinct
    non-parameter tensors autograd saves inside a block meet the estimate once the causal mask is added, the one thing
    it leaves out (s x s bytes per block, built in each block's forward and shared by the batch)."""
    torch = pytest.importorskip("torch")
    model, batch = _staff_style_lm(torch), 2
    seen = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen.add(model.rotary.untyped_storage().data_ptr())  # a buffer, as the staff model's RoPE cache
    saved = [0] * LAYERS
    current = [-1]
    for i, layer in enumerate(model.layers):
        layer.register_forward_pre_hook(lambda m, a, i=i: current.__setitem__(0, i))
        layer.register_forward_hook(lambda m, a, o: current.__setitem__(0, -1))

    def pack(t):
        storage = t.untyped_storage()
        if current[0] >= 0 and storage.data_ptr() not in seen:
            seen.add(storage.data_ptr())
            saved[current[0]] += storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(torch.zeros((batch, seq_len), dtype=torch.long))
    composite = _estimated_block_bytes(COMPOSITE, "fp32", seq_len, batch)
    fused = _estimated_block_bytes({}, "fp32", seq_len, batch)
    for measured in saved[1:]:
        assert composite + seq_len * seq_len == pytest.approx(measured, rel=1e-3)
        assert fused < 0.9 * measured  # the fused ops' count misses exp's output and sigmoid's


def _attention_core(torch, q, k, v, mask, cuda_autocast: bool):
    """The staff attention's ops; ``cuda_autocast``: the dtypes CUDA autocast gives them (bf16 matmuls, exp in fp32,
    the division following its fp32 inputs, the P @ V matmul on a 16-bit copy), written as explicit casts since CPU
    autocast keeps other ops in fp32."""
    scores = torch.where(mask, torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1]), float("-inf"))
    shifted = scores - torch.max(scores, dim=-1, keepdim=True)[0]
    e = torch.exp(shifted.float() if cuda_autocast else shifted)
    probs = e / torch.sum(e, dim=-1, keepdim=True)
    return torch.einsum("bhqk,bhkd->bhqd", probs.to(q.dtype) if cuda_autocast else probs, v)


@pytest.mark.parametrize(("dtype", "cuda_autocast"), [("float32", False), ("bfloat16", False), ("bfloat16", True)])
def test_the_backward_transient_is_what_memtracker_counts(dtype, cuda_autocast):
    """Live bytes over one attention core's forward and backward, counted by PyTorch's MemTracker: the forward leaves
    ``softmax_saved`` bytes per head and pair, and backward peaks ``softmax_backward_transient`` above them (autograd
    runs the same derivative formulas on CUDA; only the allocator differs)."""
    torch = pytest.importorskip("torch")
    from torch.distributed._tools.mem_tracker import MemTracker

    b, h, s, d = 1, 4, 256, 16
    dt = getattr(torch, dtype)
    q, k, v = (torch.randn(b, h, s, d, dtype=dt, requires_grad=True) for _ in range(3))
    mask = torch.arange(s)[:, None] >= torch.arange(s)[None, :]
    grad = torch.randn(b, h, s, d, dtype=dt)
    tracker = MemTracker()
    tracker.track_external(q, k, v, mask, grad)

    def live(kind: str) -> int:
        return int(next(iter(tracker.get_tracker_snapshot(kind).values()))["Total"])

    with tracker:
        start = live("current")
        out = _attention_core(torch, q, k, v, mask, cuda_autocast)
        saved = live("current") - start - out.nbytes
        out.backward(grad)
        del out
        peak = live("peak") - start
    pairs, scores_bytes = b * h * s * s, dt.itemsize
    assert saved == pytest.approx(softmax_saved(scores_bytes, cuda_autocast) * pairs, rel=0.02)  # + rows, mask
    above = peak - saved
    transient = softmax_backward_transient(scores_bytes, cuda_autocast) * pairs
    # besides the s x s buffers: the output and the gradients of q, k and v (b x h x s x d each)
    assert transient <= above <= transient + 4 * b * h * s * d * scores_bytes
