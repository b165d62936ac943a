"""Whole fixed-shape training steps replayed through PyTorch's caching allocator (gpuwork.estimate.allocator).

Why: with a fixed batch shape reserved memory was allocated x (1 + ALLOCATOR_SLACK). The allocator's rules say
where the cache comes from instead: a request under 10 MiB (kMinLargeAlloc) gets a 20 MiB segment (kLargeBuffer)
shared with the next small requests; such a segment can never hold a parameter-shaped tensor made later in the
step (a gradient, an optimizer temporary), so when the step's activations are small tensors their segments stay
cached beside the gradients and the optimizer step, and the reserved peak is about the allocated peak plus those
segments. Activations over 10 MiB get segments of their own size, rounded to 2 MiB, whose freed blocks a gradient
of the same or smaller size can take (best fit, split), so the cache shrinks to the rounding.

The replay: the parameters (model order), then three steps (the first makes the optimizer states, the CS336 rows
and most sources measure after warm-up; segments are never returned, so the third step's end is the peak):
zero_grad(set_to_none) frees the gradients, the forward keeps each block's saved tensors (and autocast's 16-bit
copy of each block weight), the backward makes the head's gradient, then per block its recompute and
intermediates, its gradients, frees its saved tensors and copies, then the embeddings' gradient; then the
optimizer's temporaries by implementation (``optimizer_program``). Requests of at most 1 MiB (the small pool, 2 MiB
segments) are left out, as in gpuwork.estimate.allocator.

Where: hand-written models only (``own_model``: the config says how the model writes its softmax or SiLU, as the
CS336 staff model's does), whose step tensors ``StepTensors`` lists one by one; Hugging Face models keep
ALLOCATOR_SLACK. The card bounds it: a segment that would pass the device's memory first releases the cached
segments, as ``cudaMalloc``'s failure does in PyTorch (``fixed_step_cache`` ``room``; CachingAllocator ``limit``).

Pure: no file, torch or clock.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace

from gpuwork.estimate.allocator import SMALL_SIZE, Burst, CachingAllocator, Program, StepTensors, round_size
from gpuwork.estimate.memory_dtypes import memory_dtypes
from gpuwork.estimate.model_states import state_element_bytes
from gpuwork.facts.spec import CONFIG_KEYS, ModelSpec
from gpuwork.plan import Method, Optimizer, Sharding, TrainPlan

STEPS = 3  # replayed steps: the first makes the optimizer states, the next two are the steady state
# On, for hand-written models only (``replayed``): on the 46 CS336 held-out reserved rows (re-read: the staff model's
# softmax_impl / hidden_act_impl) the median |error| falls from 5.5 % to 1.0 %, and the all-case medians and 90th
# percentiles, as recorded and re-read, do not get worse (docs/memory_misses.md, "Reserved memory of fixed-shape
# steps"). Hugging Face models keep ALLOCATOR_SLACK: their step tensors (blocks cut into hidden- and
# intermediate-sized pieces, logits into vocabulary-wide ones) are too coarse for the replay's cache (``own_model``).
REPLAY_FIXED_STEPS = True


@dataclass(frozen=True)
class ParamLayout:
    """Parameter tensors in elements, in the order the model makes them: the embeddings, each block's (all blocks
    alike), the output layer's (empty when tied). ``linears``: which of a block's tensors autocast copies."""

    embed: tuple[int, ...]
    block: tuple[int, ...]
    head: tuple[int, ...]
    layers: int
    linears: tuple[bool, ...]


@dataclass(frozen=True)
class StepBytes:
    """Bytes per element: parameter, gradient, one optimizer state (AdamW keeps two), autocast copy (0: none)."""

    param: int
    grad: int
    state: int
    copy: int
    impl: str  # gpuwork.plan.OptimizerImpl value


# a group of tensors as _Requests takes them: the large pool's requested bytes, rounded, their sum, and the group as
# one Burst (made then freed in the order made; None when it holds no large request)
Group = tuple[tuple[int, ...], tuple[int, ...], int, "Burst | None"]
Handles = tuple[int, int, int]  # the handles of one group taken: first, past the last, their requested bytes


class _Requests:
    """A replay's requests as one ``Program`` of gpuwork.estimate.allocator (a size takes a block, ``~i`` gives back
    the i-th taken; a ``Burst`` is made and freed whole, skipped where it leaves the cache as it found it), and the
    allocated peak of the steps after the first: one ``CachingAllocator.run`` replays it, without a call per
    tensor. Requests of at most 1 MiB (the small pool) are left out. Tensors go in groups (a block's saved
    tensors, its gradients), each sized once (``_group``): a group's requests are appended at once and its
    handles are a range."""

    def __init__(self) -> None:
        self.ops: list[int | Burst] = []
        self.taken = 0  # handles given out so far
        self.live = self.peak = 0
        self.counting = False  # the first step's peak is not measured

    def take(self, group: Group) -> Handles:
        """A group made one after another; returns its handles."""
        large, rounded, total, _ = group
        start = self.taken
        self.taken += len(large)
        self.ops += rounded
        self.live += total
        if self.counting and self.live > self.peak:
            self.peak = self.live
        return start, self.taken, total

    def give(self, handles: Handles) -> None:
        start, stop, total = handles
        self.ops += range(~start, ~stop, -1)
        self.live -= total

    def burst(self, group: Group) -> None:
        """A group made one after another, then freed in the order made."""
        if group[3] is not None:
            self.ops.append(group[3])
            if self.counting:
                self.peak = max(self.peak, self.live + group[2])

    def start_counting(self) -> None:
        self.counting, self.peak = True, self.live


def _group(nbytes: list[int] | tuple[int, ...]) -> Group:
    """Tensors of ``nbytes`` as ``_Requests`` takes them: the large pool's requests, rounded, their sum, as a
    Burst."""
    large = tuple(n for n in nbytes if n > SMALL_SIZE)
    rounded = tuple(round_size(n) for n in large)
    burst = (rounded, sum(rounded), rounded + tuple(~i for i in range(len(rounded)))) if large else None
    return large, rounded, sum(large), burst


_NOTHING = _group(())  # a group of no tensors


def _states(req: _Requests, params: list[int], states: dict[int, list[Handles]], sb: int) -> None:
    """The first step's AdamW states, torch.zeros_like(p) twice (exp_avg, exp_avg_sq) per tensor."""
    one = {n: _group([n * sb]) for n in set(params)}
    for i, n in enumerate(params):
        if i not in states:
            states[i] = [req.take(one[n]), req.take(one[n])]


def _optimizer(req: _Requests, params: list[int], states: dict[int, list[Handles]], sb: int, impl: str) -> None:
    """The AdamW update's temporaries, after torch/optim/adamw.py (foreach, for-loop, fused) and the CS336 staff
    loop (out-of-place; gpuwork.estimate.model_states.optimizer_step_temporary counts the same tensors):
    foreach makes ``_foreach_sqrt(exp_avg_sqs)`` for every tensor at once; for-loop ``exp_avg_sq.sqrt()`` and its
    quotient by the bias correction per tensor; fused none; out-of-place new m and v beside the old ones with
    alpha * m, sqrt(v) + eps and their quotient, the old states then freed and the new ones kept."""
    if impl == "foreach":
        req.burst(_group([n * sb for n in params]))
    elif impl == "for-loop":
        pairs = {n: _group([n * sb, n * sb]) for n in set(params)}
        for n in params:
            req.burst(pairs[n])
    elif impl == "out-of-place":
        one = {n: _group([n * sb]) for n in set(params)}
        for i, n in enumerate(params):
            new = [req.take(one[n]) for _ in range(5)]
            for h in new[2:] + states[i]:
                req.give(h)
            states[i] = new[:2]


@dataclass
class _Steps:
    """What the steps take, grouped once per program (``_Requests`` groups), and the handles held between the
    steps: the AdamW states and the last step's gradients."""

    order: list[int]
    saved: Group
    transient: Group
    head: Group
    loss: Group
    recompute: Group
    inner: Group
    copies: Group
    grads_head: Group
    grads_block: Group
    grads_embed: Group
    layers: int
    states: dict[int, list[Handles]]
    grads: list[Handles]
    policy: Group = _NOTHING  # an op-level policy's kept outputs, freed as their block's recompute begins
    plain: Group = _NOTHING  # one block in ``every`` checkpointed: what each other block keeps
    every: int = 1

    def step(self, req: _Requests) -> None:
        """One step to its optimizer update: zero_grad(set_to_none=True), the forward, the backward."""
        for h in self.grads:  # zero_grad(set_to_none=True)
            req.give(h)
        kept: list[tuple[Handles, Handles, Handles | None]] = []
        for i in range(self.layers):
            made_copies = req.take(self.copies)
            if i % self.every:  # not checkpointed (one block in n): its saved tensors, nothing rebuilt
                kept.append((req.take(self.plain), made_copies, None))
                continue
            kept.append((req.take(self.saved), made_copies, req.take(self.policy)))
            req.burst(self.transient)
        logits = req.take(self.head)
        req.burst(self.loss)
        self.grads = [req.take(self.grads_head)]
        req.give(logits)
        for block, block_copies, policy in reversed(kept):
            if policy is not None:
                req.give(policy)
            rebuilt = req.take(self.recompute if policy is not None else _NOTHING)
            made_inner = req.take(self.inner)
            self.grads.append(req.take(self.grads_block))
            for h in (made_inner, rebuilt, block, block_copies):
                req.give(h)
        self.grads.append(req.take(self.grads_embed))


def _param_order(layout: ParamLayout) -> list[int]:
    """The parameter tensors' element counts in the order the model makes them (embedding, blocks, head)."""
    return list(layout.embed) + list(layout.block) * layout.layers + list(layout.head)


@functools.lru_cache(maxsize=64)
def _first_step(layout: ParamLayout, by: StepBytes, step: StepTensors, tokens: int
                ) -> tuple[Program, _Requests, _Steps]:
    """The requests every optimizer implementation shares (``by.impl`` is not read): the parameters, the first
    step to its update and the AdamW states that update makes; with the builder and the handles to go on from."""
    req = _Requests()
    order = _param_order(layout)
    req.take(_group([n * by.param for n in order]))  # the parameters, held for the whole run: never released

    def per_token(tensors: tuple[int, ...]) -> Group:
        return _group([n * tokens for n in tensors if n > 0])

    steps = _Steps(order, saved=per_token(step.layer_saved), transient=per_token(step.layer_transient),
                   head=per_token(step.head), loss=per_token(step.loss_transient),
                   recompute=per_token(step.recompute), inner=per_token(step.backward_transient),
                   copies=_group([n * by.copy for n, lin in zip(layout.block, layout.linears, strict=True)
                                  if lin and by.copy]),
                   grads_head=_group([n * by.grad for n in layout.head]),
                   grads_block=_group([n * by.grad for n in layout.block]),
                   grads_embed=_group([n * by.grad for n in layout.embed]), layers=layout.layers, states={}, grads=[],
                   policy=per_token(step.layer_policy), plain=per_token(step.plain_saved), every=step.every)
    steps.step(req)
    _states(req, order, steps.states, by.state)
    return tuple(req.ops), req, steps


@functools.lru_cache(maxsize=4096)
def step_requests(layout: ParamLayout, by: StepBytes, step: StepTensors, tokens: int
                  ) -> tuple[Program, int, tuple[int, ...]]:
    """The replay's requests (the parameters, then ``STEPS`` steps of one micro-batch of ``tokens`` each) as one
    program, the large pool's allocated peak over the steps after the first, in bytes, and where the optimizer
    updates begin and end: (first update's start, its end, the second's start, its end, ...). Before the first
    update the program is the same for every implementation (``_first_step`` builds it once), and foreach,
    for-loop and fused differ only inside the updates (their temporaries are bursts: no handle taken)."""
    shared, first, built = _first_step(layout, replace(by, impl=""), step, tokens)
    if by.impl in _BURST_UPDATES:  # the steps built once for the three (``_later_steps``), the updates put between
        parts, lives, peak = _later_steps(layout, replace(by, impl=""), step, tokens)
        program, marks = [shared], [len(shared)]
        update, made = _burst_update(layout, by.state, by.impl)
        for k, live in enumerate(lives):
            program.append(update)
            if k > 0 and update:  # the first step's peak is not measured
                peak = max(peak, live + made)
            marks.append(marks[-1] + len(update))
            if k < len(parts):
                program.append(parts[k])
                marks.append(marks[-1] + len(parts[k]))
        return tuple(itertools.chain.from_iterable(program)), peak, tuple(marks)
    return _built_in_order(layout, by, step, tokens)


def _built_in_order(layout: ParamLayout, by: StepBytes, step: StepTensors, tokens: int
                    ) -> tuple[Program, int, tuple[int, ...]]:
    """``step_requests`` built step after step for one implementation (the out-of-place update takes and frees
    tensors of its own; for the others the tests compare the shared build with this one)."""
    shared, first, built = _first_step(layout, replace(by, impl=""), step, tokens)
    req = _Requests()
    req.taken, req.live = first.taken, first.live
    steps = replace(built, states={i: list(h) for i, h in built.states.items()}, grads=list(built.grads))
    marks = [len(shared)]
    _optimizer(req, steps.order, steps.states, by.state, by.impl)
    marks.append(len(shared) + len(req.ops))
    for _ in range(1, STEPS):
        if not req.counting:
            req.start_counting()
        steps.step(req)
        marks.append(len(shared) + len(req.ops))
        _optimizer(req, steps.order, steps.states, by.state, by.impl)
        marks.append(len(shared) + len(req.ops))
    return shared + tuple(req.ops), req.peak, tuple(marks)


@functools.lru_cache(maxsize=64)
def _burst_update(layout: ParamLayout, state_bytes: int, impl: str) -> tuple[Program, int]:
    """A foreach, for-loop or fused update's requests (``_optimizer``: bursts only) and the most bytes its
    temporaries hold at once."""
    update = _Requests()
    update.counting = True
    _optimizer(update, _param_order(layout), {}, state_bytes, impl)
    return tuple(update.ops), update.peak


@functools.lru_cache(maxsize=64)
def _later_steps(layout: ParamLayout, by: StepBytes, step: StepTensors, tokens: int
                 ) -> tuple[tuple[Program, ...], tuple[int, ...], int]:
    """Steps 2 to ``STEPS`` to their updates, as foreach, for-loop and fused share them (``by.impl`` is not read:
    their updates take no handle and keep no tensor): each step's requests, the live bytes at each update (the
    first's included) and the allocated peak of those steps without the updates' temporaries."""
    _, first, built = _first_step(layout, by, step, tokens)
    req = _Requests()
    req.taken, req.live = first.taken, first.live
    steps = replace(built, states={}, grads=list(built.grads))
    parts, lives = [], [req.live]
    req.start_counting()
    for _ in range(1, STEPS):
        start = len(req.ops)
        steps.step(req)
        parts.append(tuple(req.ops[start:]))
        lives.append(req.live)
    return tuple(parts), tuple(lives), req.peak


def replayed_allocator(layout: ParamLayout, by: StepBytes, step: StepTensors, tokens: int,
                       limit: int | None = None, forked: bool = True) -> CachingAllocator:
    """The allocator at the end of ``step_requests``' program; ``forked`` (the fast path): from what the
    implementations share, else from an empty allocator (the plain replay: the same state at the end, the tests
    check). The fused update has no temporaries, so its replay (``_trunk``) is the steps alone; a foreach or
    for-loop update whose bursts all leave the cache as they find it (``CachingAllocator._restores``: none maps a
    segment) changes nothing, and the replay goes on as the trunk's; from the first update that maps a segment it
    is replayed on a copy of the trunk's allocator. The out-of-place update takes tensors of its own: replayed
    from the shared first step (``_shared_prefix``)."""
    program, _, marks = step_requests(layout, by, step, tokens)
    if not forked:
        alloc = CachingAllocator(limit=limit)
        alloc.run(program)
        return alloc
    if by.impl not in _BURST_UPDATES:
        shared, held = _shared_prefix(layout, replace(by, impl=""), step, tokens, limit)
        alloc = shared.copy()
        alloc.run(program[marks[0]:], list(held))
        return alloc
    trunk = _trunk(layout, replace(by, impl="fused"), step, tokens, limit)
    for k in range(STEPS):
        before, held = trunk.point(k)
        if not all(before._restores(op[0], op[1]) for op in program[marks[2 * k]:marks[2 * k + 1]]
                   if isinstance(op, tuple)):
            alloc = before.copy()
            alloc.run(program[marks[2 * k]:], list(held))
            return alloc
    return trunk.point(STEPS)[0].copy()


_BURST_UPDATES = ("foreach", "for-loop", "fused")  # updates whose temporaries are bursts only (or none)


@functools.lru_cache(maxsize=8)
def _shared_prefix(layout: ParamLayout, by: StepBytes, step: StepTensors, tokens: int,
                   limit: int | None) -> tuple[CachingAllocator, tuple[int, ...]]:
    """The allocator after ``_first_step``'s requests and the blocks it holds (by handle): never changed, copied."""
    alloc, held = CachingAllocator(limit=limit), list[int]()
    alloc.run(_first_step(layout, by, step, tokens)[0], held)
    return alloc, tuple(held)


class _Trunk:
    """The fused replay (no temporaries: the steps alone) as the allocator and its blocks (by handle) before each
    optimizer update and at the end, replayed only as far as a replay has asked (``point``): a foreach or
    for-loop replay that forks at its first update costs no fused step. The points are never changed: copied."""

    def __init__(self, program: Program, marks: tuple[int, ...], start: tuple[CachingAllocator, tuple[int, ...]]):
        self.program, self.marks = program, marks
        self.points = [start]

    def point(self, k: int) -> tuple[CachingAllocator, tuple[int, ...]]:
        while len(self.points) <= k:
            j = len(self.points)  # the steps between update j - 1 and update j (the end, after the last)
            alloc, held = self.points[-1][0].copy(), list(self.points[-1][1])
            alloc.run(self.program[self.marks[2 * j - 1]:self.marks[2 * j] if j < STEPS else None], held)
            self.points.append((alloc, tuple(held)))
        return self.points[k]


@functools.lru_cache(maxsize=8)
def _trunk(layout: ParamLayout, by: StepBytes, step: StepTensors, tokens: int, limit: int | None) -> _Trunk:
    """The fused replay of a shape (``by.impl`` "fused"), from the shared first step (``_shared_prefix``)."""
    program, _, marks = step_requests(layout, by, step, tokens)
    return _Trunk(program, marks, _shared_prefix(layout, replace(by, impl=""), step, tokens, limit))


@functools.lru_cache(maxsize=4096)
def replay_step(layout: ParamLayout, by: StepBytes, step: StepTensors, tokens: int,
                limit: int | None = None) -> tuple[int, int]:
    """(reserved, allocated peak of the steps after the first) of the large pool, in bytes, over ``STEPS`` steps of
    one micro-batch of ``tokens`` each (``step_requests``); ``limit``: the bytes of segments the device backs
    (CachingAllocator). Cached per plan shape: a sweep replays each shape of a model once, and the part its
    optimizer implementations share once for them all (``replayed_allocator``)."""
    return replayed_allocator(layout, by, step, tokens, limit).peak_reserved, step_requests(layout, by, step, tokens)[1]


def own_model(spec: ModelSpec) -> bool:
    """Whether the model is one written by hand in plain tensor ops, as its config.json says by stating how it
    writes its softmax, SiLU or LayerNorm (``softmax_impl``, ``hidden_act_impl``, ``norm_impl``:
    gpuwork.facts.spec.CONFIG_KEYS; the Stanford CS336 staff model). Its step's tensors are what ``StepTensors`` cuts them into, one by one: each block's saved
    activations are hidden- and intermediate-sized outputs of its own ops and the logits one vocabulary-wide matrix.
    A Hugging Face model's are not: its saved bytes come from traced block profiles cut into the same sizes, and its
    loss path (logits upcast to fp32, log_softmax, their gradients) into vocabulary-wide pieces, so the replay's
    cache swings from 0 to 17 % of allocated with the tokens (docs/memory_misses.md, "Reserved memory of
    fixed-shape steps"); such models keep ALLOCATOR_SLACK."""
    return any(key in spec.extras for key in CONFIG_KEYS)


def replayed(spec: ModelSpec, plan: TrainPlan) -> bool:
    """Whether the plan's reserved memory comes from the whole-step replay: switched on, a hand-written model
    (``own_model``) and every large tensor of the step known (``whole_step_known``)."""
    return REPLAY_FIXED_STEPS and own_model(spec) and whole_step_known(spec, plan)


def whole_step_known(spec: ModelSpec, plan: TrainPlan) -> bool:
    """Whether every large tensor of the plan's step is known to the replay: one GPU, the whole model trained
    (full, scratch) by torch AdamW, one micro-batch of one fixed shape per step, a dense model, nothing offloaded,
    sharded, evaluated in the run or placed by expandable segments, and no FP8 linears (their casts are not in
    the replay). Elsewhere ALLOCATOR_SLACK stays."""
    hist = plan.length_histogram
    return (plan.gpus == 1 and not plan.fp8_linear and plan.sharding is Sharding.DDP and plan.method in (Method.FULL, Method.SCRATCH)
            and plan.optimizer is Optimizer.ADAMW and not plan.fp32_master_weights and plan.grad_accum == 1
            and spec.num_experts == 1 and not plan.offload_optimizer and not plan.offload_params
            and not plan.expandable_segments and plan.eval_batch_size is None and (hist is None or len(hist) <= 1))


@functools.lru_cache(maxsize=64)
def param_layout(spec: ModelSpec) -> ParamLayout:
    """The model's parameter tensors from its shapes: per block the q, k, v and output projections, the MLP's two
    or three matrices, and the rest (norms, biases) as hidden-sized vectors; the embeddings and the untied head as
    vocabulary x hidden matrices (what is left of their counts as one more tensor)."""
    h, q, kv = spec.hidden_size, spec.num_heads * spec.head_dim, spec.num_kv_heads * spec.head_dim
    mats = (h * q, h * kv, h * kv, q * h) + (h * spec.intermediate_size,) * (3 if spec.mlp_gated else 2)
    rest = max(spec.params_block - sum(mats), 0)
    vectors = (h,) * (rest // h) + ((rest % h,) if rest % h else ())

    def matrices(count: int) -> tuple[int, ...]:
        whole = count // max(spec.vocab_size * h, 1)
        left = count - whole * spec.vocab_size * h
        return (spec.vocab_size * h,) * whole + ((left,) if left else ())

    return ParamLayout(matrices(spec.params_embedding), mats + vectors, matrices(spec.params_head),
                       spec.num_layers, (True,) * len(mats) + (False,) * len(vectors))


def with_attention(spec: ModelSpec, plan: TrainPlan, step: StepTensors, quadratic: int) -> StepTensors:
    """``step`` with each block's eager attention matrices (``quadratic`` bytes per token per token of context, as
    gpuwork.estimate.memory counts them) as tensors of one head-batch matrix each (heads x length x length in the
    linear outputs' dtype): saved for backward, or, under checkpointing, made in the forward and rebuilt in the
    backward."""
    seq = plan.longest_batch_len
    unit = max(spec.num_heads * seq * memory_dtypes(plan).linear_out, 1)
    whole, rest = divmod(quadratic * seq, unit)
    mats = (unit,) * whole + ((rest,) if rest else ())
    if not mats:
        return step
    if plan.grad_checkpointing:
        return replace(step, layer_transient=step.layer_transient + mats, recompute=step.recompute + mats,
                       plain_saved=step.plain_saved + mats if step.every > 1 else ())
    return replace(step, layer_saved=step.layer_saved + mats)


def fixed_step_cache(spec: ModelSpec, plan: TrainPlan, step: StepTensors, quadratic: int = 0,
                     room: int | None = None, replay: Callable[..., tuple[int, int]] | None = None) -> int:
    """Bytes the allocator holds beyond the large pool's allocated peak over fixed-shape steps (``replay_step``);
    ``quadratic``: the eager attention matrices' bytes per token per token of context (``with_attention``);
    ``room``: the device's bytes beyond the step's whole allocated peak and the CUDA context (None: unbounded).
    Where the replay's cache would pass ``room``, a cudaMalloc fails on the device: the step is replayed again
    with its segments limited to the large pool's share of the card (its own allocated peak plus ``room``), so
    that the cached segments are released and mapped again as the allocator does (CachingAllocator ``limit``).
    ``replay``: another replay of the same arguments (``allocator_emptied.replay_emptied``), else ``replay_step``."""
    replay = replay or replay_step
    step = with_attention(spec, plan, step, quadratic)
    p = plan.precision
    by = StepBytes(p.param_bytes, p.param_bytes, state_element_bytes(plan), p.compute_bytes if p.is_mixed else 0,
                   plan.optimizer_impl.value)
    layout, tokens = param_layout(spec), plan.batch_size * plan.longest_batch_len
    reserved, allocated = replay(layout, by, step, tokens)
    if room is not None and reserved - allocated > room:
        reserved, allocated = replay(layout, by, step, tokens, allocated + max(room, 0))
    return max(reserved - allocated, 0)


__all__ = ["REPLAY_FIXED_STEPS", "STEPS", "ParamLayout", "StepBytes", "fixed_step_cache", "own_model", "param_layout",
           "replay_step", "replayed", "replayed_allocator", "step_requests", "whole_step_known", "with_attention"]
