"""PyTorch's CUDA caching allocator, replayed over the tensors of training steps of varying length.

Why: with a fixed batch shape every step asks for the same sizes and the cache serves them again, so
reserved memory stays a few percent above allocated. With batches of varying length the sizes change from
step to step; a block cut for a shorter batch cannot hold the same tensor of a longer one, and, without
expandable segments, free blocks in different segments never merge, so the allocator maps new segments
while the old ones stay cached. Reserved memory then depends on the order of the lengths, which this module
replays rule by rule instead of fitting a factor.

The rules (PyTorch ``c10/cuda/CUDACachingAllocator.cpp`` and the pytorch/devlogs post "When does
fragmentation occur in the CUDA caching allocator?", 2026-06-01; sources in
``gpuwork/facts/data/rates_sources.md`` [M4]):

- sizes round up to 512 bytes; requests of at most 1 MiB go to a separate small pool (left out here: their
  segments are 2 MiB and hold the step's small tensors, a constant);
- a request finds the smallest cached free block that holds it (best fit); a block is split when more
  than 1 MiB would remain, otherwise the whole block is handed out;
- without a fitting block: ``cudaMalloc`` of a new segment, 20 MiB for requests under 10 MiB, else the
  request rounded up to 2 MiB; freed blocks merge only with free neighbours of the same segment; cached
  segments are returned to CUDA only when an allocation fails: with a ``limit`` (the bytes the card leaves
  the pool), a segment that would pass it first releases every cached segment that is wholly free
  (``release_cached_blocks``), then is mapped; without one the GPU is assumed to hold what the run reserves;
- ``expandable_segments:True``: one segment per pool whose physical memory grows at its end in 20 MiB
  pages; every block lies in one address range, so free neighbours always merge.

Pure: no file, torch or clock.
"""

from __future__ import annotations

import bisect
import functools
import random
from dataclasses import dataclass

from gpuwork.units import MIB

MIN_BLOCK = 512  # kMinBlockSize: every size rounds up to a multiple of 512 bytes
SMALL_SIZE = 1 * MIB  # kSmallSize: largest request of the small pool; larger splits must leave more
MIN_LARGE_ALLOC = 10 * MIB  # kMinLargeAlloc: requests below this get a kLargeBuffer segment
LARGE_BUFFER = 20 * MIB  # kLargeBuffer: segment for 1-10 MiB requests; expandable large-pool page
ROUND_LARGE = 2 * MIB  # kRoundLarge: larger segments round up to 2 MiB
# Orders of micro-batches replayed, each of ORDER_BATCHES drawn at random (seeds 0..ORDERS-1: reproducible); the
# estimate is the largest reserved peak. The allocator keeps every segment until an allocation fails, so a run's
# reserved peak is where its own order leaves the cache, and orders leave it at very different places; a further
# run's order ends above the largest of ORDERS with probability 1 / (ORDERS + 1), 10 % (docs/memory_lengths.md).
ORDERS = 9
# Replayed orders mapped their last new segment by micro-batch 853 at the latest (docs/memory_lengths.md); 3,000 draw
# every padded length of probability 1/1,000 three times on average, and most runs hold more micro-batches per GPU
ORDER_BATCHES = 3_000
ADDR_BITS = 48  # a block's key: segment << ADDR_BITS | address (segments below 256 TiB)
KEY_BITS = 2 * ADDR_BITS  # a free entry: size << KEY_BITS | key, one int that sorts as (size, segment, address)
KEY_MASK = (1 << KEY_BITS) - 1


# A stretch of a step whose tensors are all made, then all freed: (their rounded sizes in the order made, their
# sum, the stretch as requests one by one); a program is a step's requests and bursts (CachingAllocator.run)
Burst = tuple[tuple[int, ...], int, tuple[int, ...]]
Program = tuple[int | Burst, ...]


def round_size(size: int) -> int:
    return max(MIN_BLOCK, -(-size // MIN_BLOCK) * MIN_BLOCK)


def segment_size(size: int) -> int:
    """Bytes ``cudaMalloc``-ed for a large-pool request that no cached block holds."""
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


class CachingAllocator:
    """The large pool of the caching allocator: blocks in segments, best-fit reuse, split and merge.

    ``segments``: bytes of segments already mapped and wholly free, in the order they were mapped (the state
    between two steps). A block is one int key (``ADDR_BITS``) with its size and its neighbours in dicts, and the
    free blocks one sorted list of ints, so each request is a bisection and each merge a few dict look-ups.
    ``limit``: the bytes of segments the device can back (None: no limit); a ``cudaMalloc`` that would pass it
    fails, and the allocator releases its wholly free cached segments and maps again (``_release_cached``; a
    request that still passes it is an out-of-memory error on the device, mapped here all the same so that the
    estimate shows by how much it does not fit). Non-expandable segments only.
    """

    def __init__(self, expandable: bool = False, segments: tuple[int, ...] = (), limit: int | None = None):
        self.expandable = expandable
        self.limit = limit
        self.released = 0  # bytes of cached segments given back to CUDA on failed mappings
        self.segments = list(segments)  # bytes per segment, in the order mapped (0: released)
        self.sizes = {i << ADDR_BITS: s for i, s in enumerate(segments)}  # block key -> bytes, < 0 if handed out
        self.after: dict[int, int] = {}  # block key -> the next block of its segment
        self.before: dict[int, int] = {}  # block key -> the previous block of its segment
        self.free = sorted(s << KEY_BITS | k for k, s in self.sizes.items())
        self.requested: dict[int, int] = {}  # handle (block key) -> requested bytes
        self.reserved = self.peak_reserved = sum(segments)
        self.allocated = self.peak_allocated = 0

    # -- requests ---------------------------------------------------------------------------------

    def malloc(self, nbytes: int) -> int | None:
        """A handle for ``nbytes`` (None for requests of the small pool, which this replay leaves out)."""
        if nbytes <= SMALL_SIZE:
            return None
        held: list[int] = []
        self.run((round_size(nbytes),), held)
        self.requested[held[0]] = nbytes
        self.allocated += nbytes
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return held[0]

    def release(self, handle: int | None) -> None:
        if handle is None:
            return
        self.allocated -= self.requested.pop(handle)
        self.run((~0,), [handle])

    def run(self, program: Program, held: list[int] | None = None) -> None:
        """Requests in order: a size (rounded) takes a block, ``~i`` gives back ``held[i]``; each block taken is
        appended to ``held``; a ``Burst`` runs its own requests unless it leaves the cache as it found it. One loop
        with its look-ups bound locally and the common paths inlined (a new segment, a merge with a neighbour): a
        step is thousands of requests. ``reserved`` is kept in a local and its peak taken where it can fall (a
        release) and at the end: without a release it only grows."""
        sizes, after, before, free, segments = self.sizes, self.after, self.before, self.free, self.segments
        insort, bisect_left, limit, expandable = bisect.insort, bisect.bisect_left, self.limit, self.expandable
        held = [] if held is None else held
        hold = held.append
        reserved = self.reserved
        for op in program:
            if op.__class__ is tuple:
                if not self._restores(op[0], op[1]):
                    self.reserved = reserved
                    self.run(op[2], None)
                    reserved = self.reserved
                continue
            if op > 0:  # type: ignore[operator]  # best fit, split when more than SMALL_SIZE would remain
                i = bisect_left(free, op << KEY_BITS)  # type: ignore[operator]
                if i < len(free):
                    entry = free.pop(i)
                    key, have = entry & KEY_MASK, entry >> KEY_BITS
                    if have - op > SMALL_SIZE:  # type: ignore[operator]  # the rest stays cached as a free block
                        rest = key + op  # type: ignore[operator]
                        sizes[rest] = have - op  # type: ignore[operator]
                        nxt = after.get(key)
                        if nxt is not None:
                            after[rest], before[nxt] = nxt, rest
                        after[key], before[rest] = rest, key
                        insort(free, (have - op) << KEY_BITS | rest)  # type: ignore[operator]
                        have = op  # type: ignore[assignment]
                elif expandable:
                    self.reserved = reserved
                    key, have = self._grow(op)  # type: ignore[arg-type]
                    reserved = self.reserved
                    if have - op > SMALL_SIZE:  # type: ignore[operator]
                        rest = key + op  # type: ignore[operator]
                        sizes[rest] = have - op  # type: ignore[operator]
                        nxt = after.get(key)
                        if nxt is not None:
                            after[rest], before[nxt] = nxt, rest
                        after[key], before[rest] = rest, key
                        insort(free, (have - op) << KEY_BITS | rest)  # type: ignore[operator]
                        have = op  # type: ignore[assignment]
                else:  # cudaMalloc of a new segment: no neighbours yet
                    have = LARGE_BUFFER if op < MIN_LARGE_ALLOC else -(-op // ROUND_LARGE) * ROUND_LARGE  # type: ignore[operator]
                    if limit is not None and reserved + have > limit:
                        self.peak_reserved = max(self.peak_reserved, reserved)
                        self.reserved = reserved
                        self._release_cached()  # cudaMalloc failed: free the cached segments, then retry
                        reserved = self.reserved
                    key = len(segments) << ADDR_BITS
                    segments.append(have)
                    reserved += have
                    if have - op > SMALL_SIZE:  # type: ignore[operator]
                        rest = key + op  # type: ignore[operator]
                        sizes[rest] = have - op  # type: ignore[operator]
                        after[key], before[rest] = rest, key
                        insort(free, (have - op) << KEY_BITS | rest)  # type: ignore[operator]
                        have = op  # type: ignore[assignment]
                sizes[key] = -have  # negative: handed out
                hold(key)
                continue
            # back to the cache, merged with its free neighbours of the same segment
            key = held[~op]  # type: ignore[operator]
            size = -sizes[key]
            nxt = after.get(key)
            if nxt is not None:
                loose = sizes[nxt]
                if loose > 0:  # the next block is free: it joins this one
                    del free[bisect_left(free, loose << KEY_BITS | nxt)], sizes[nxt], before[nxt]
                    beyond = after.pop(nxt, None)
                    if beyond is None:
                        del after[key]
                    else:
                        after[key], before[beyond] = beyond, key
                    size += loose
            prev = before.get(key)
            if prev is not None:
                loose = sizes[prev]
                if loose > 0:  # the previous block is free: this one joins it
                    del free[bisect_left(free, loose << KEY_BITS | prev)], sizes[key], before[key]
                    beyond = after.pop(key, None)
                    if beyond is None:
                        del after[prev]
                    else:
                        after[prev], before[beyond] = beyond, prev
                    size += loose
                    key = prev
            sizes[key] = size
            insort(free, size << KEY_BITS | key)
        self.reserved = reserved
        self.peak_reserved = max(self.peak_reserved, reserved)

    def segment_sizes(self) -> tuple[int, ...]:
        return tuple(sorted(s for s in self.segments if s))

    def copy(self) -> CachingAllocator:
        """An allocator in the same state, that runs on without changing this one (a replay forked where two
        programs part: gpuwork.estimate.allocator_step)."""
        other = CachingAllocator.__new__(CachingAllocator)
        other.__dict__.update(self.__dict__)
        for name in ("segments", "sizes", "after", "before", "free", "requested"):
            setattr(other, name, getattr(self, name).copy())
        return other

    # -- internals ---------------------------------------------------------------------------------

    def _restores(self, burst: tuple[int, ...], nbytes: int) -> bool:
        """Whether tensors of these sizes, all made before any is freed, leave the cache as it is once freed: they
        do unless one of them maps memory. They take only free bytes and give them all back, and free neighbours
        merge, so the free blocks end as the same runs of free bytes between the same blocks in use. The requests
        are played on a copy of the free list (best fit and split, no merge before the frees); nothing changes.
        No need when the largest free block holds them all: each request then fits in what is left of it (more
        than the request, so more than SMALL_SIZE: it stays split, free), whichever block best fit takes."""
        if self.free and self.free[-1] >> KEY_BITS >= nbytes:
            return True
        free, bisect_left = self.free.copy(), bisect.bisect_left
        for size in burst:
            try:
                entry = free.pop(bisect_left(free, size << KEY_BITS))
            except IndexError:
                return False  # no cached block holds it: memory would be mapped
            left = (entry >> KEY_BITS) - size
            if left > SMALL_SIZE:
                bisect.insort(free, left << KEY_BITS | (entry & KEY_MASK) + size)
        return True

    def _grow(self, size: int) -> tuple[int, int]:
        """Map memory for a request no free block holds; returns the free block (key, bytes) now holding it."""
        if not self.expandable:
            key, have = len(self.segments) << ADDR_BITS, segment_size(size)
            if self.limit is not None and self.reserved + have > self.limit:
                self._release_cached()  # cudaMalloc failed: free the cached segments, then retry
            self.segments.append(have)
            self._add_reserved(have)
            self.sizes[key] = have
            return key, have
        if not self.segments:
            self.segments.append(0)
        end = self.segments[0]  # one segment, growing at its end: a block's key is its address
        last = next((k for k, s in self.sizes.items() if k + abs(s) == end), None)
        tail = last if last is not None and self.sizes[last] > 0 else None
        have = self.sizes[tail] if tail is not None else 0
        grown = -(-(size - have) // LARGE_BUFFER) * LARGE_BUFFER
        self.segments[0] += grown
        self._add_reserved(grown)
        if tail is not None:
            self.free.remove(have << KEY_BITS | tail)
            self.sizes[tail] = have + grown
            return tail, have + grown
        self.sizes[end] = grown
        if last is not None:
            self.after[last], self.before[end] = end, last
        return end, grown

    def _release_cached(self) -> None:
        """What ``DeviceCachingAllocator::malloc`` does when ``cudaMalloc`` fails (c10/cuda/CUDACachingAllocator.cpp
        [M4]): ``release_available_cached_blocks`` frees nothing without a ``max_split_size`` (the default), then
        ``release_cached_blocks`` -> ``release_blocks`` gives every cached block that is not split
        (``!block->prev && !block->next``: a wholly free segment) back with ``cudaFree``, and the allocation is
        tried again. A segment with a block in use stays."""
        sizes, free = self.sizes, self.free
        for entry in [e for e in free if (e & KEY_MASK) not in self.after and (e & KEY_MASK) not in self.before]:
            key, nbytes = entry & KEY_MASK, entry >> KEY_BITS
            del free[bisect.bisect_left(free, entry)], sizes[key]
            self.segments[key >> ADDR_BITS] = 0
            self.reserved -= nbytes
            self.released += nbytes

    def _add_reserved(self, nbytes: int) -> None:
        self.reserved += nbytes
        self.peak_reserved = max(self.peak_reserved, self.reserved)


@dataclass(frozen=True)
class StepTensors:
    """The large tensors of one micro-batch, in bytes per token, in the order the step makes them.

    ``layer_saved``: what each block keeps for backward; ``layer_transient``: made and freed inside each block's
    forward (the block's internals under checkpointing); ``head``: logits and loss kept to the loss backward;
    ``loss_transient``: the loss backward's own buffers; ``recompute``: a block's internals rebuilt in its
    backward (checkpointing); ``backward_transient``: gradients of a block's intermediates; ``layer_policy``: the
    outputs each block keeps under an op-level checkpointing policy, which its recompute takes back (torch's
    selective checkpointing pops its cache): freed as that block's recompute begins. ``every`` > 1: checkpointing
    on one block in ``every`` (blocks 0, n, 2n, ...); the others keep ``plain_saved`` and rebuild nothing.
    """

    layers: int
    layer_saved: tuple[int, ...]
    layer_transient: tuple[int, ...]
    head: tuple[int, ...]
    loss_transient: tuple[int, ...]
    recompute: tuple[int, ...]
    backward_transient: tuple[int, ...]
    layer_policy: tuple[int, ...] = ()
    every: int = 1
    plain_saved: tuple[int, ...] = ()


@functools.lru_cache(maxsize=4096)
def step_program(step: StepTensors, tokens: int) -> tuple[Program, int]:
    """One micro-batch of ``tokens`` as the large pool sees it, in the step's order (``CachingAllocator.run``), and
    its peak of requested bytes. Tensors made and freed inside one stretch (a block's internals, the loss backward's
    buffers, a block's recompute and backward) are a ``Burst``: their sizes and their requests one by one."""
    program: list[int | Burst] = []
    requested: list[int] = []  # bytes of each tensor kept past its stretch, by slot
    live = peak = 0
    groups: dict[tuple[int, ...], list[int]] = {}  # a group of tensors repeats in every block: sized once
    bursts: dict[tuple[tuple[int, ...], ...], tuple[Burst, int]] = {}

    def large(tensors: tuple[int, ...]) -> list[int]:
        if tensors not in groups:  # the small pool's requests are left out
            groups[tensors] = [n for n in (s * tokens for s in tensors if s > 0) if n > SMALL_SIZE]
        return groups[tensors]

    def take(tensors: tuple[int, ...]) -> list[int]:
        nonlocal live, peak
        slots = []
        for n in large(tensors):
            slots.append(len(requested))
            program.append(round_size(n))
            requested.append(n)
            live += n
        peak = max(peak, live)
        return slots

    def give(slots: list[int]) -> None:
        nonlocal live
        for i in slots:
            program.append(~i)
            live -= requested[i]

    def burst(first: tuple[int, ...], then: tuple[int, ...] = ()) -> None:
        """``first`` and ``then`` made, ``then`` freed, ``first`` freed, each in the order made."""
        nonlocal peak
        if (first, then) not in bursts:
            made = large(first) + large(then)
            sizes = tuple(round_size(n) for n in made)
            order = tuple(range(len(large(first)), len(sizes))) + tuple(range(len(large(first))))
            bursts[first, then] = (sizes, sum(sizes), sizes + tuple(~i for i in order)), sum(made)
        part, nbytes = bursts[first, then]
        if part[0]:
            program.append(part)
        peak = max(peak, live + nbytes)

    saved: list[tuple[list[int], list[int], bool]] = []
    for i in range(step.layers):
        if i % step.every:  # a block without checkpointing under one-in-n: its tensors, nothing to rebuild
            saved.append((take(step.plain_saved), [], False))
            continue
        saved.append((take(step.layer_saved), take(step.layer_policy), True))
        burst(step.layer_transient)
    head = take(step.head)
    burst(step.loss_transient)
    give(head)
    for layer, policy, checkpointed in reversed(saved):
        give(policy)
        burst(step.recompute if checkpointed else (), step.backward_transient)
        give(layer)
    return tuple(program), peak


class _Chain:
    """The cache between micro-batches of one step, as interned states, and the state each length leads to.

    Between steps every block is free and merged, so the cache is its segments' sizes in the order they were
    mapped, and a micro-batch of a given length on a given cache always ends in the same cache: each transition
    is replayed once, whatever the order or the number of orders that pass through it."""

    def __init__(self, step: StepTensors, expandable: bool):
        self.step, self.expandable = step, expandable
        self.states: list[tuple[int, ...]] = [()]  # state id -> segment sizes
        self.ids: dict[tuple[int, ...], int] = {(): 0}
        self.next: dict[tuple[int, int], int] = {}  # (state id, tokens) -> state id after the micro-batch

    def after(self, state: int, tokens: int) -> int:
        alloc = CachingAllocator(self.expandable, self.states[state])
        alloc.run(step_program(self.step, tokens)[0])
        segments = tuple(alloc.segments)
        out = self.next[state, tokens] = self.ids.setdefault(segments, len(self.states))
        if out == len(self.states):
            self.states.append(segments)
        return out

    def walk(self, tokens: tuple[int, ...]) -> int:
        """The state after micro-batches of ``tokens`` each, from an empty cache."""
        state, nxt = 0, self.next
        for t in tokens:
            out = nxt.get((state, t))
            state = self.after(state, t) if out is None else out
        return state

    def reserved(self, state: int) -> int:
        return sum(self.states[state])  # segments are never returned: the last state's bytes are the peak


@functools.lru_cache(maxsize=64)
def _chain(step: StepTensors, expandable: bool) -> _Chain:
    return _Chain(step, expandable)


@functools.lru_cache(maxsize=512)
def replay(step: StepTensors, tokens: tuple[int, ...], expandable: bool) -> tuple[int, int]:
    """(peak reserved, peak allocated) bytes of the large pool over micro-batches of ``tokens`` each."""
    chain = _chain(step, expandable)
    peak_allocated = max((step_program(step, t)[1] for t in set(tokens)), default=0)
    return chain.reserved(chain.walk(tokens)), peak_allocated


def padded_mix(histogram: tuple[tuple[int, float], ...], batch_size: int) -> tuple[tuple[float, int], ...]:
    """(probability, length) of a micro-batch's padded length under a length histogram ((length, weight), sorted).
    The Hugging Face padding collator pads a batch to its longest member, so with ``batch_size`` sequences drawn
    from the histogram the padded length is their maximum: P(max <= l) = F(l) ** batch_size."""
    total = sum(w for _, w in histogram)
    out, acc, below = [], 0.0, 0.0
    for length, weight in histogram:
        acc += weight / total
        cdf = min(acc, 1.0) ** batch_size
        if cdf > below:
            out.append((cdf - below, length))
        below = cdf
    return tuple(out)


def order_lengths(mix: tuple[tuple[float, int], ...], seed: int, batches: int = ORDER_BATCHES) -> tuple[int, ...]:
    """Padded lengths of ``batches`` micro-batches drawn one by one from ``mix`` (``padded_mix``): one order a
    shuffled DataLoader may give, the same for a seed."""
    return tuple(random.Random(seed).choices([n for _, n in mix], [p for p, _ in mix], k=batches))


@functools.lru_cache(maxsize=512)
def reserved_over_orders(step: StepTensors, mix: tuple[tuple[float, int], ...], batch_size: int,
                         expandable: bool) -> tuple[int, ...]:
    """The large pool's reserved peak at the end of each of ``ORDERS`` orders of ``ORDER_BATCHES`` micro-batches
    of ``batch_size`` sequences (seeds 0, 1, ...), smallest first."""
    chain = _chain(step, expandable)
    ends = (chain.walk(tuple(batch_size * n for n in order_lengths(mix, seed))) for seed in range(ORDERS))
    return tuple(sorted(chain.reserved(end) for end in ends))


__all__ = ["ORDERS", "ORDER_BATCHES", "CachingAllocator", "StepTensors", "order_lengths", "padded_mix", "replay", "reserved_over_orders",
           "round_size", "segment_size", "step_program"]
