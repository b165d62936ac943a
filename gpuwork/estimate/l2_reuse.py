"""Bytes of a chain of element-wise kernels that stay in the L2 cache, and their price (docs/kernels.md, "Kernels whose
inputs are still in L2").

A Python loop over the parameters runs a short chain of element-wise kernels on each tensor, and an eager block runs
its norm, rotary embedding and a softmax or SiLU written op by op as such chains over whole activations: each kernel
reads what the one before it wrote. The rule, from how the cache works and nothing fitted:

- a tensor the immediately preceding kernel read or wrote is read from L2 when the distinct tensors the two kernels
  touch (the pair's working set) fit in what the GPU holds at the rate of a measured copy (l2_measurements.csv);
- a tensor written by one kernel and next read or overwritten by the following one, and not read again after that
  (a temporary freed once read, its block taken by the next temporary of its size; a buffer written back and forth),
  stays in L2 and is overwritten there, not streamed to DRAM, under the same condition; the tensors that outlive the
  chain (the new weights and states) always reach DRAM;
- everything else (the step's inputs p, grad, m, v; a tensor read two or more kernels after it was touched) streams
  at the large-array bandwidth, as before.

L2 bytes move at the copy rate measured on the GPU for the smallest measured working set at least as large as the
pair's (``l2_rate``); where that rate is not above the large-array bandwidth, or the GPU has no copy row, nothing
changes. Each chain is its kernels in code order (tensors read, tensors written); ``chain_l2`` applies the rule.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from gpuwork.facts.spec import ModelSpec
from gpuwork.plan import Method, OptimizerImpl, TrainPlan

# A kernel of a chain: (tensors read, tensors written), by name; every tensor of an optimizer chain is one parameter's
# size. ``chain_l2`` finds the passes that stay in L2 by the rule of the module docstring.
Kernel = tuple[tuple[str, ...], tuple[str, ...]]

# The CS336 staff AdamW (estimate.adamw_passes: 16 kernels, 35 passes per tensor), in code order. The new m_t, v_t and
# p outlive the chain (KEPT); t1 .. t10 and the two zeros_like fills are freed once read.
OUT_OF_PLACE_CHAIN: tuple[Kernel, ...] = (
    ((), ("z_m",)), ((), ("z_v",)),  # state.get("m", torch.zeros_like(grad)), the same for v
    (("m",), ("t1",)), (("grad",), ("t2",)), (("t1", "t2"), ("m_t",)),  # beta_1 * m + (1 - beta_1) * grad
    (("grad",), ("t3",)), (("t3",), ("t4",)), (("v",), ("t5",)), (("t5", "t4"), ("v_t",)),  # ... * torch.square(grad)
    (("m_t",), ("t6",)), (("v_t",), ("t7",)), (("t7",), ("t8",)), (("t6", "t8"), ("t9",)),  # alpha_t * m_t / (...)
    (("p", "t9"), ("p",)),  # p.data -= ...
    (("p",), ("t10",)), (("p", "t10"), ("p",)),  # p.data -= alpha * weight_decay * p.data
)
# torch.optim's _single_tensor_adam (torch/optim/adam.py; 7 kernels, 18 passes per tensor; weight_decay 0):
# exp_avg.lerp_(grad), exp_avg_sq.mul_(beta2).addcmul_(grad, grad), (exp_avg_sq.sqrt() / c).add_(eps),
# param.addcdiv_(exp_avg, denom). transformers' 2021 AdamW (also ``for-loop``: mul_, add_, mul_, addcmul_, sqrt,
# add_, addcdiv_) keeps as many passes in L2 by the same rule, with working sets of two tensors or three.
FOR_LOOP_CHAIN: tuple[Kernel, ...] = (
    (("m", "grad"), ("m",)), (("v",), ("v",)), (("v", "grad"), ("v",)),
    (("v",), ("d",)), (("d",), ("d2",)), (("d2",), ("d2",)), (("p", "m", "d2"), ("p",)),
)
KEPT = frozenset({"p", "m", "v", "m_t", "v_t", "grad"})  # inputs and what outlives the update


def _read_before_write(rest: tuple[Kernel, ...], name: str) -> bool:
    """The tensor's next touch in ``rest`` is a read (its value is used again); False when it is next overwritten,
    or never touched again (freed: its block goes to the next temporary of its size)."""
    for reads, writes in rest:
        if name in reads:
            return True
        if name in writes:
            return False
    return False


def chain_l2(chain: tuple[Kernel, ...], kept: frozenset[str] = KEPT,
             width: Mapping[str, float] | None = None) -> tuple[tuple[float, float], ...]:
    """(passes, working set) of a chain's passes that stay in L2, summed by working set: a read of a tensor the
    previous kernel read or wrote; a write of a tensor the next kernel overwrites, or reads and then never reads
    again before overwriting or freeing it (not ``kept``: those must reach DRAM). The working set is the distinct
    tensors of the kernel pair. Both count tensors, or with ``width`` (bytes per element of each tensor; 1 for a
    name it lacks) bytes per element."""
    def w(name: str) -> float:
        return 1.0 if width is None else width.get(name, 1.0)

    out: list[tuple[float, float]] = []
    touched = [set(reads) | set(writes) for reads, writes in chain]
    for i, (reads, writes) in enumerate(chain):
        if i > 0:
            pair = sum(w(name) for name in touched[i - 1] | touched[i])
            out += [(w(name), pair) for name in reads if name in touched[i - 1]]
        if i + 1 < len(chain):
            pair = sum(w(name) for name in touched[i] | touched[i + 1])
            nxt_reads, nxt_writes = chain[i + 1]
            out += [(w(name), pair) for name in writes if name in nxt_writes
                    or (name in nxt_reads and name not in kept and not _read_before_write(chain[i + 2:], name))]
    merged: dict[float, float] = {}
    for passes, working in out:
        if passes > 0:
            merged[working] = merged.get(working, 0.0) + passes
    return tuple((passes, working) for working, passes in sorted(merged.items()))


OUT_OF_PLACE_L2 = chain_l2(OUT_OF_PLACE_CHAIN)
FOR_LOOP_L2 = chain_l2(FOR_LOOP_CHAIN)


# The hand-written softmax of the CS336 staff attention (estimate.composite_ops.softmax_chain_cost: the same kernels
# and bytes), per score element; "[up]" / "[down]" kernels run under autocast only. Row vectors (max, sums and their
# gradients) are 0 bytes per element; max's backward scatter (a value a row into the zero fill) is left out.
SOFTMAX_FORWARD: tuple[Kernel, ...] = (
    (("s",), ("a",)), (("a", "mask"), ("b",)), (("b",), ("rmax",)), (("b", "rmax"), ("c",)),  # scale, where, max, sub
    (("c",), ("c32",)),  # [up]
    (("c32",), ("d",)), (("d",), ("rsum",)), (("d", "rsum"), ("q",)),  # exp, sum, divide
    (("q",), ("qb",)),  # [down]: the 16-bit copy P @ V reads
)
SOFTMAX_BACKWARD: tuple[Kernel, ...] = (
    (("gqb",), ("gq",)),  # [up]: the incoming gradient of the 16-bit copy
    (("gq", "rsum"), ("gd",)),  # the division's gradient for its numerator
    (("gq",), ("n1",)), (("d", "rsum"), ("r1",)), (("r1",), ("r2",)), (("n1", "r2"), ("r3",)),  # ... for the sums
    (("r3",), ("gsum",)), (("gd", "gsum"), ("gd",)),  # row sum; the sum's gradient added in place
    (("gd", "d"), ("gc32",)),  # exp's gradient
    (("gc32",), ("gc",)),  # [down]
    (("gc",), ("n2",)), (("n2",), ("gmax",)), ((), ("z",)),  # sub's gradient for the row max; max's zero fill
    (("gc", "z"), ("gb",)), (("gb", "mask"), ("ga",)), (("ga",), ("gs",)),  # add, where, scale
)
# inputs, what backward keeps (exp's output, the row sums, the probabilities P @ V saved) and the chain's outputs
SOFTMAX_KEPT = frozenset({"s", "mask", "d", "rsum", "q", "qb", "gqb", "gs"})
# x * torch.sigmoid(x) (composite_ops.silu_cost) and its backward: grad * s, grad * x, sigmoid_backward, the add
SILU_FORWARD: tuple[Kernel, ...] = ((("x",), ("sg",)), (("x", "sg"), ("y",)))
SILU_BACKWARD: tuple[Kernel, ...] = ((("g", "sg"), ("g1",)), (("g", "x"), ("g2",)), (("g2", "sg"), ("g3",)),
                                     (("g1", "g3"), ("gx",)))
SILU_KEPT = frozenset({"x", "sg", "y", "g", "gx"})


# transformers' LlamaRMSNorm (estimate.ops._norm_ops: the same kernels and bytes), per element of the stream: to fp32,
# pow, mean, + eps, rsqrt, x * rsqrt, back to the input dtype, weight x. The row tensors (the mean, + eps, its rsqrt)
# and the weight are 0 bytes an element; the two casts are dropped on an fp32 stream.
RMS_NORM_FORWARD: tuple[Kernel, ...] = (
    (("x",), ("x32",)), (("x32",), ("sq",)), (("sq",), ("var",)), (("var",), ("ve",)), (("ve",), ("r",)),
    (("x32", "r"), ("y32",)), (("y32",), ("yb",)), (("w", "yb"), ("out",)),
)
# its backward in autograd's order (torch derivatives.yaml; the node created last runs first): the weight's gradient
# (gradient x normalised input, then sum_to's row reduction) when it trains, the input gradient through the weight,
# the cast back to fp32, x * rsqrt's two gradients (the rsqrt's reduced over the row), rsqrt's and + eps's on one value
# a row, mean's expand, pow's backward (x.pow(1), x 2, x the gradient), the two gradients reaching x32 summed, the cast
RMS_NORM_BACKWARD: tuple[Kernel, ...] = (
    (("g", "yb"), ("gwf",)), (("gwf",), ("gw",)),  # the weight's gradient (when it trains)
    (("g", "w"), ("gyb",)), (("gyb",), ("gy32",)),
    (("gy32", "r"), ("gxa",)), (("gy32", "x32"), ("t",)), (("t",), ("gr",)),
    (("gr",), ("gr1",)), (("gr1",), ("gr2",)), (("gr2",), ("gve",)),  # rsqrt's backward: pow, mul, mul on a row
    (("gve",), ("gsq",)),  # mean's expand and division
    (("x32",), ("p1",)), (("p1",), ("p2",)), (("gsq", "p2"), ("gxb",)),  # pow_backward
    (("gxa", "gxb"), ("gx32",)), (("gx32",), ("gx",)),
)
# inputs, what backward keeps (pow's and the product's x32, the rsqrt, the 16-bit copy the weight multiply saved) and
# the outputs
RMS_NORM_KEPT = frozenset({"x", "x32", "r", "yb", "w", "out", "g", "gx", "gw"})
# transformers' apply_rotary_pos_emb for one of q and k: q * cos + rotate_half(q) * sin, rotate_half = cat(-q2, q1)
# over the two halves of the head dimension (q1, q2: half a width each); cos and sin are one row a token, broadcast
# over the heads (0 bytes an element)
ROTARY_FORWARD: tuple[Kernel, ...] = (
    (("q1", "q2", "cos"), ("a",)), (("q2",), ("n",)), (("n", "q1"), ("rh",)), (("rh", "sin"), ("b",)),
    (("a", "b"), ("qe",)),
)
# backward (the add passes its gradient on): rh * sin's gradient, cat's halves (views), the neg's, each slice's
# slice_backward into a zero-filled whole, the two summed, q * cos's gradient, its sum with the slices'
ROTARY_BACKWARD: tuple[Kernel, ...] = (
    (("g", "sin"), ("grh1", "grh2")), (("grh1",), ("gn",)), (("gn",), ("sx2",)), (("grh2",), ("sx1",)),
    (("sx2", "sx1"), ("s",)), (("g", "cos"), ("ga",)), (("s", "ga"), ("gq",)),
)
ROTARY_KEPT = frozenset({"q1", "q2", "cos", "sin", "qe", "g", "gq"})
_ROTARY_WIDTH = {"q1": 0.5, "q2": 0.5, "n": 0.5, "grh1": 0.5, "grh2": 0.5, "gn": 0.5, "cos": 0.0, "sin": 0.0}


# A LayerNorm written op by op (config ``norm_impl: "composite"``, estimate.composite_ops; the from-scratch GPT of
# Raschka's "Build a Large Language Model"): x.mean, x.var, x - mean, + eps and sqrt on one value a row, the division,
# scale x, + shift, all in the stream's dtype. m, v, ve, sd are row values; the scale and shift 0 bytes an element.
LAYER_NORM_FORWARD: tuple[Kernel, ...] = (
    (("x",), ("m",)), (("x",), ("v",)), (("x", "m"), ("a",)), (("v",), ("ve",)), (("ve",), ("sd",)),
    (("a", "sd"), ("n",)), (("w", "n"), ("b",)), (("b", "shift"), ("out",)),
)
# its backward as autograd runs it (torch derivatives.yaml; the order the profiler records on the CPU): the shift's and
# the scale's gradients (row sums of the gradient and of gradient x normalised input) when they train, the gradient
# through the scale, the division's two gradients (grad / sd; -grad * (a / sd) / sd summed over the row), sqrt's on a
# row, the subtraction's for the mean (neg, row sum), var's (x - mean(x), times 2 / N x its row gradient), and x's
# three gradients summed (mean's expand / N among them)
LAYER_NORM_BACKWARD: tuple[Kernel, ...] = (
    (("g",), ("gshift",)),  # the shift's gradient (when it trains)
    (("g", "w"), ("gn",)),
    (("g", "n"), ("gwf",)), (("gwf",), ("gw",)),  # the scale's gradient (when it trains)
    (("gn", "sd"), ("ga",)), (("a", "sd"), ("q1",)), (("gn",), ("ng",)), (("ng", "q1"), ("t",)), (("t", "sd"), ("t4",)),
    (("t4",), ("gsd",)), (("sd",), ("r1",)), (("gsd", "r1"), ("gve",)),
    (("ga",), ("t5",)), (("t5",), ("gm",)),
    (("x",), ("m2",)), (("x", "m2"), ("d",)), (("gve",), ("r2",)), (("r2", "d"), ("gxv",)),
    (("ga", "gxv"), ("acc",)), (("gm",), ("gxm",)), (("acc", "gxm"), ("gx",)),
)
_LAYER_NORM_ROWS = ("m", "v", "ve", "sd", "w", "shift", "gshift", "gw", "gsd", "r1", "gve", "gm", "m2", "r2")
_LAYER_NORM_WEIGHT_GRADIENTS = frozenset({"gshift", "gwf", "gw"})


def layer_norm_chains(stream_bytes: int, weight_trains: bool) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...],
                                                                        dict[str, float], frozenset[str]]:
    """(forward, backward, bytes an element of each tensor, what outlives each chain) of the op-by-op LayerNorm. A
    frozen scale and shift get no gradient kernels, and the division's output is then not kept (the scale's product
    saves it only for the scale's own gradient)."""
    names = {name for kernel in LAYER_NORM_FORWARD + LAYER_NORM_BACKWARD for names in kernel for name in names}
    width = {name: 0.0 if name in _LAYER_NORM_ROWS else float(stream_bytes) for name in names}
    backward = LAYER_NORM_BACKWARD if weight_trains else tuple(
        k for k in LAYER_NORM_BACKWARD if not set(k[1]) & _LAYER_NORM_WEIGHT_GRADIENTS)
    kept = frozenset({"x", "a", "sd", "w", "shift", "out", "g", "gx", "gw", "gshift"} | ({"n"} if weight_trains else set()))
    return LAYER_NORM_FORWARD, backward, width, kept


def chain_bytes(chain: tuple[Kernel, ...], width: Mapping[str, float]) -> float:
    """Bytes an element the chain's kernels read and write."""
    return sum(width.get(name, 1.0) for reads, writes in chain for name in (*reads, *writes))


def broadcast_bytes(chain: tuple[Kernel, ...], width: Mapping[str, float]) -> float:
    """Bytes an element of the chain's broadcast kernels (an operand of 0 bytes an element, a row value or a weight,
    into an output of the whole width): TensorIterator's unvectorised path (``Op.strided_share``)."""
    return sum(sum(width[n] for n in (*reads, *writes)) for reads, writes in chain
               if any(width[n] == 0 for n in reads) and any(width[n] > 0 for n in writes))


def layer_norm_l2(stream_bytes: int, elements: float,
                  weight_trains: bool) -> tuple[tuple[tuple[float, float], ...], ...]:
    """(forward, backward) ``Op.l2_reads`` of the op-by-op LayerNorm over ``elements`` stream elements."""
    forward, backward = _layer_norm_per_element(stream_bytes, weight_trains)
    return _per_element(forward, elements), _per_element(backward, elements)


@functools.lru_cache(maxsize=64)
def _layer_norm_per_element(stream_bytes: int, weight_trains: bool) -> tuple[tuple[tuple[float, float], ...], ...]:
    forward, backward, width, kept = layer_norm_chains(stream_bytes, weight_trains)
    return chain_l2(forward, kept, width), chain_l2(backward, kept, width)


def rms_norm_l2(stream_bytes: int, out_bytes: int, elements: float,
                weight_trains: bool) -> tuple[tuple[tuple[float, float], ...], ...]:
    """(forward, backward) ``Op.l2_reads`` of the eager RMSNorm over ``elements`` stream elements (one kernel over the
    whole tensor per step of the chain): the stream in ``stream_bytes`` an element, the weight multiply's output in
    ``out_bytes``."""
    forward, backward = _rms_norm_per_element(stream_bytes, out_bytes, weight_trains)
    return _per_element(forward, elements), _per_element(backward, elements)


@functools.lru_cache(maxsize=64)
def _rms_norm_per_element(stream_bytes: int, out_bytes: int,
                          weight_trains: bool) -> tuple[tuple[tuple[float, float], ...], ...]:
    forward, backward, width, kept = rms_norm_chains(stream_bytes, out_bytes, weight_trains)
    return chain_l2(forward, kept, width), chain_l2(backward, kept, width)


def rms_norm_chains(stream_bytes: int, out_bytes: int, weight_trains: bool) -> tuple[
        tuple[Kernel, ...], tuple[Kernel, ...], dict[str, float], frozenset[str]]:
    """(forward, backward, bytes an element of each tensor, what outlives each chain) of the eager RMSNorm: the
    stream in ``stream_bytes``, the weight multiply's output in ``out_bytes``; on an fp32 stream without its two
    casts, and without the weight's gradient kernels when the weight is frozen."""
    s, o = float(stream_bytes), float(out_bytes)
    width = {"x": s, "yb": s, "out": o, "g": o, "gwf": o, "gyb": s, "gx": s}
    width |= dict.fromkeys(("x32", "sq", "y32", "gy32", "gxa", "t", "gsq", "p1", "p2", "gxb", "gx32"), 4.0)
    width |= dict.fromkeys(("var", "ve", "r", "w", "gw", "gr", "gr1", "gr2", "gve"), 0.0)
    forward, backward, kept = RMS_NORM_FORWARD, RMS_NORM_BACKWARD, RMS_NORM_KEPT
    if not weight_trains:
        backward = backward[2:]
    if stream_bytes == 4:  # no casts: x32 is x, yb is y32 (kept by the weight multiply), gy32 is gyb, gx32 is gx
        forward = _drop(forward, frozenset({"x32", "yb"}))
        backward = tuple((tuple({"yb": "y32", "x32": "x"}.get(n, n) for n in reads), writes)
                         for reads, writes in _drop(backward, frozenset({"gy32", "gx"})))
        backward = tuple((reads, tuple("gx" if n == "gx32" else n for n in writes)) for reads, writes in backward)
        kept = frozenset({"x", "r", "y32", "w", "out", "g", "gx", "gw"})
    return forward, backward, width, kept


@functools.lru_cache(maxsize=16)
def _rotary_per_element(elem_bytes: int) -> tuple[tuple[tuple[float, float], ...], ...]:
    width = {name: elem_bytes * _ROTARY_WIDTH.get(name, 1.0) for kernel in ROTARY_FORWARD + ROTARY_BACKWARD
             for names in kernel for name in names}
    return chain_l2(ROTARY_FORWARD, ROTARY_KEPT, width), chain_l2(ROTARY_BACKWARD, ROTARY_KEPT, width)


def rotary_l2(elem_bytes: int, *tensor_elements: float) -> tuple[tuple[tuple[float, float], ...], ...]:
    """(forward, backward) ``Op.l2_reads`` of the eager rotary embedding on each of ``tensor_elements`` (q's and k's
    elements), one chain per tensor."""
    forward, backward = _rotary_per_element(elem_bytes)
    return (tuple(pair for n in tensor_elements for pair in _per_element(forward, n)),
            tuple(pair for n in tensor_elements for pair in _per_element(backward, n)))


def _drop(chain: tuple[Kernel, ...], names: frozenset[str]) -> tuple[Kernel, ...]:
    """The chain without the kernels that write ``names`` (autocast's casts), their readers reading the input."""
    rename: dict[str, str] = {}
    out: list[Kernel] = []
    for reads, writes in chain:
        if set(writes) & names:
            rename.update({w: rename.get(reads[0], reads[0]) for w in writes})
            continue
        out.append((tuple(rename.get(r, r) for r in reads), writes))
    return tuple(out)


def _per_element(found: tuple[tuple[float, float], ...], elements: float) -> tuple[tuple[float, float], ...]:
    return tuple((passes * elements, working * elements) for passes, working in found)


def softmax_l2(scores_bytes: int, autocast: bool, elements: float) -> tuple[tuple[tuple[float, float], ...], ...]:
    """(forward, backward) ``Op.l2_reads`` of the hand-written softmax chain over ``elements`` score elements (one
    batched kernel per step of the chain, so the working set is the whole score tensors')."""
    e, x = float(scores_bytes), float(4 if autocast else scores_bytes)
    width = {name: e for name in ("s", "a", "b", "c", "qb", "gqb", "gc", "n2", "z", "gb", "ga", "gs")}
    width |= {name: x for name in ("c32", "d", "q", "gq", "gd", "n1", "r1", "r2", "r3", "gc32")}
    width |= {"mask": 1.0, "rmax": 0.0, "rsum": 0.0, "gsum": 0.0, "gmax": 0.0}
    forward, backward, kept = SOFTMAX_FORWARD, SOFTMAX_BACKWARD, SOFTMAX_KEPT - {"q"}  # P @ V keeps the 16-bit copy
    if not autocast:  # no casts: P @ V keeps the quotient itself
        forward, backward = _drop(forward, frozenset({"c32", "qb"})), _drop(backward, frozenset({"gq", "gc"}))
        kept = SOFTMAX_KEPT
    return (_per_element(chain_l2(forward, kept, width), elements),
            _per_element(chain_l2(backward, kept, width), elements))


def silu_l2(act_bytes: int, elements: float) -> tuple[tuple[tuple[float, float], ...], ...]:
    """(forward, backward) ``Op.l2_reads`` of ``x * torch.sigmoid(x)`` over ``elements`` activations."""
    width = {name: float(act_bytes) for name in ("x", "sg", "y", "g", "g1", "g2", "g3", "gx")}
    return (_per_element(chain_l2(SILU_FORWARD, SILU_KEPT, width), elements),
            _per_element(chain_l2(SILU_BACKWARD, SILU_KEPT, width), elements))


def _chain(impl: OptimizerImpl) -> tuple[tuple[float, float], ...]:
    if impl is OptimizerImpl.OUT_OF_PLACE:
        return OUT_OF_PLACE_L2
    if impl is OptimizerImpl.FOR_LOOP:
        return FOR_LOOP_L2
    return ()  # foreach and fused passes stream every tensor before the next pass: no reuse between kernels


def weight_tensors(spec: ModelSpec) -> tuple[tuple[int, int], ...]:
    """(elements, how many) of the model's weight matrices: every linear (``spec.linears``) and the token embedding
    (vocabulary x hidden, unless tied to the output layer the linears already hold). Norm weights, biases and
    position embeddings are left out: their bytes keep the large-array price."""
    # a fused MoE expert weight is one tensor of all its experts' matrices
    sizes = [(lin.in_features * lin.out_features * max(1, lin.experts), lin.count) for lin in spec.linears]
    if not spec.tie_embeddings:  # a tied embedding is the output layer's weight, already among the linears
        sizes.append((spec.vocab_size * spec.hidden_size, 1))
    return tuple(sizes)


def optimizer_l2_reads(spec: ModelSpec, plan: TrainPlan, impl: OptimizerImpl,
                       state_bytes: int) -> tuple[tuple[float, float], ...]:
    """(bytes, working set in bytes) of one update's passes that may stay in L2, per distinct (tensor size, working
    set): only for a per-tensor loop (``for-loop``, ``out-of-place``) over whole unsharded weights of full
    training (adapters, frozen layers and sharded optimizers keep the large-array price)."""
    chain = _chain(impl)
    if not chain or plan.uses_adapters or plan.method not in (Method.FULL, Method.SCRATCH) or plan.shard_ranks != 1:
        return ()
    out: dict[float, float] = {}
    for elements, count in weight_tensors(spec):
        tensor = float(elements * state_bytes)
        for passes, working in chain:
            ws = working * tensor
            out[ws] = out.get(ws, 0.0) + passes * tensor * count
    return tuple((nbytes, ws) for ws, nbytes in sorted(out.items()))


def l2_rate(working_set: float, steps: tuple[tuple[float, float], ...]) -> float:
    """Bytes/s of L2-resident traffic for a kernel pair touching ``working_set`` bytes: the measured copy rate of the
    smallest measured working set at least as large (``facts.l2.l2_copy_steps``); 0 when none is."""
    for footprint, rate in steps:
        if working_set <= footprint:
            return rate
    return 0.0


def l2_saving_s(l2_reads: tuple[tuple[float, float], ...], steps: tuple[tuple[float, float], ...],
                bw: float) -> float:
    """Seconds the L2-resident bytes save against streaming them at ``bw``, the large-array bandwidth (never
    negative: a measured rate not above ``bw`` changes nothing)."""
    saved = 0.0
    for nbytes, working_set in l2_reads:
        rate = l2_rate(working_set, steps)
        if rate > bw:
            saved += nbytes / bw - nbytes / rate
    return saved


__all__ = ["FOR_LOOP_CHAIN", "FOR_LOOP_L2", "KEPT", "LAYER_NORM_BACKWARD", "LAYER_NORM_FORWARD",
           "OUT_OF_PLACE_CHAIN", "OUT_OF_PLACE_L2", "RMS_NORM_BACKWARD", "RMS_NORM_FORWARD", "ROTARY_BACKWARD",
           "ROTARY_FORWARD", "SILU_BACKWARD", "SILU_FORWARD", "SOFTMAX_BACKWARD", "SOFTMAX_FORWARD",
           "broadcast_bytes", "chain_bytes", "chain_l2", "l2_rate", "l2_saving_s", "layer_norm_chains",
           "layer_norm_l2", "optimizer_l2_reads", "rms_norm_chains", "rms_norm_l2", "rotary_l2", "silu_l2", "softmax_l2",
           "weight_tensors"]
