"""The faster allocator replay gives exactly the numbers of the one it replaced.

The replaced implementation (a block list per segment, scanned on each request and release) is kept below as
the reference: every comparison runs it, so no expected number is written down here."""

from __future__ import annotations

import bisect
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwork.estimate import memory
from gpuwork.estimate.allocator import (
    ADDR_BITS,
    KEY_BITS,
    KEY_MASK,
    LARGE_BUFFER,
    MIN_BLOCK,
    MIN_LARGE_ALLOC,
    ORDERS,
    ROUND_LARGE,
    SMALL_SIZE,
    CachingAllocator,
    StepTensors,
    order_lengths,
    padded_mix,
    replay,
    reserved_over_orders,
    round_size,
    segment_size,
    step_program,
)
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory
from gpuwork.units import MIB

# -- the reference: gpuwork.estimate.allocator before the faster replay ------------------------------------------

def before_round_size(size: int) -> int:
    return max(MIN_BLOCK, MIN_BLOCK * math.ceil(size / MIN_BLOCK))


def before_segment_size(size: int) -> int:
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * math.ceil(size / ROUND_LARGE)


class BeforeAllocator:
    """The allocator as it was before the faster replay (gpuwork 6ac435b), kept verbatim as the reference."""

    def __init__(self, expandable: bool = False):
        self.expandable = expandable
        self.segments: list[list[list[int]]] = []  # per segment: blocks [addr, size, live] by address
        self.free: list[tuple[int, int, int]] = []  # (size, segment, addr) of free blocks, sorted
        self.live: dict[int, tuple[int, int, int]] = {}  # handle -> (segment, addr, requested bytes)
        self.reserved = self.peak_reserved = 0
        self.allocated = self.peak_allocated = 0
        self._next = 0

    # -- requests ---------------------------------------------------------------------------------

    def malloc(self, nbytes: int) -> int | None:
        """A handle for ``nbytes`` (None for requests of the small pool, which this replay leaves out)."""
        if nbytes <= SMALL_SIZE:
            return None
        size = before_round_size(nbytes)
        i = bisect.bisect_left(self.free, (size, -1, -1))
        if i == len(self.free):
            seg, addr = self._grow(size)
        else:
            _, seg, addr = self.free.pop(i)
        block = self._block(seg, addr)
        if block[1] - size > SMALL_SIZE:  # split: the rest stays cached as a free block
            rest = [addr + size, block[1] - size, 0]
            block[1] = size
            blocks = self.segments[seg]
            blocks.insert(blocks.index(block) + 1, rest)
            bisect.insort(self.free, (rest[1], seg, rest[0]))
        block[2] = 1
        self._next += 1
        self.live[self._next] = (seg, addr, nbytes)
        self.allocated += nbytes
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return self._next

    def release(self, handle: int | None) -> None:
        if handle is None:
            return
        seg, addr, nbytes = self.live.pop(handle)
        self.allocated -= nbytes
        blocks = self.segments[seg]
        j = next(k for k, b in enumerate(blocks) if b[0] == addr)
        block = blocks[j]
        block[2] = 0
        # merge with free neighbours of the same segment
        if j + 1 < len(blocks) and not blocks[j + 1][2]:
            nxt = blocks.pop(j + 1)
            self._drop_free(nxt[1], seg, nxt[0])
            block[1] += nxt[1]
        if j > 0 and not blocks[j - 1][2]:
            prev = blocks[j - 1]
            self._drop_free(prev[1], seg, prev[0])
            prev[1] += block[1]
            blocks.pop(j)
            block = prev
        bisect.insort(self.free, (block[1], seg, block[0]))

    def segment_sizes(self) -> tuple[int, ...]:
        return tuple(sorted(sum(b[1] for b in blocks) for blocks in self.segments))

    # -- internals ---------------------------------------------------------------------------------

    def _block(self, seg: int, addr: int) -> list[int]:
        return next(b for b in self.segments[seg] if b[0] == addr)

    def _drop_free(self, size: int, seg: int, addr: int) -> None:
        i = bisect.bisect_left(self.free, (size, seg, addr))
        del self.free[i]

    def _grow(self, size: int) -> tuple[int, int]:
        """Map memory for a request no free block holds; returns the free block that now holds it."""
        if not self.expandable:
            self.segments.append([[0, before_segment_size(size), 0]])
            self._add_reserved(before_segment_size(size))
            return len(self.segments) - 1, 0
        if not self.segments:
            self.segments.append([])
        blocks = self.segments[0]
        tail = blocks[-1] if blocks and not blocks[-1][2] else None
        have = tail[1] if tail else 0
        pages = math.ceil((size - have) / LARGE_BUFFER)
        self._add_reserved(pages * LARGE_BUFFER)
        if tail:
            self._drop_free(tail[1], 0, tail[0])
            tail[1] += pages * LARGE_BUFFER
            return 0, tail[0]
        end = blocks[-1][0] + blocks[-1][1] if blocks else 0
        blocks.append([end, pages * LARGE_BUFFER, 0])
        return 0, end

    def _add_reserved(self, nbytes: int) -> None:
        self.reserved += nbytes
        self.peak_reserved = max(self.peak_reserved, self.reserved)


def _before_step(alloc: BeforeAllocator, step: StepTensors, tokens: int) -> None:
    def take(sizes: tuple[int, ...]) -> list[int | None]:
        return [alloc.malloc(s * tokens) for s in sizes if s > 0]

    def give(handles: list[int | None]) -> None:
        for h in handles:
            alloc.release(h)

    saved = []
    for _ in range(step.layers):
        saved.append(take(step.layer_saved))
        give(take(step.layer_transient))
    head = take(step.head)
    give(take(step.loss_transient))
    give(head)
    for layer in reversed(saved):
        rebuilt = take(step.recompute)
        give(take(step.backward_transient))
        give(rebuilt)
        give(layer)


def before_replay(step: StepTensors, tokens: tuple[int, ...], expandable: bool) -> tuple[int, int]:
    """(peak reserved, peak allocated) bytes of the large pool over micro-batches of ``tokens`` each."""
    alloc = BeforeAllocator(expandable)
    seen: set[tuple[tuple[int, ...], int]] = set()
    for t in tokens:
        # between steps every block is free and merged, so the cache is just its segments' sizes: a length
        # already replayed on the same segments repeats itself exactly and changes nothing
        key = (alloc.segment_sizes(), t)
        if key in seen:
            continue
        seen.add(key)
        _before_step(alloc, step, t)
    return alloc.peak_reserved, alloc.peak_allocated


# -- the comparisons ---------------------------------------------------------------------------------------------

def _free_blocks(alloc: CachingAllocator) -> list[tuple[int, int, int]]:
    """The free list as the reference keeps it: (size, segment, address), sorted."""
    return [(e >> KEY_BITS, (e & KEY_MASK) >> ADDR_BITS, e & ((1 << ADDR_BITS) - 1)) for e in alloc.free]


@settings(max_examples=60, deadline=None, database=None)
@given(expandable=st.booleans(), ops=st.lists(st.tuples(st.booleans(), st.integers(1, 40 * MIB)), max_size=120),
       seed=st.integers(0, 10**6))
def test_each_request_and_release_leaves_the_same_cache(expandable, ops, seed):
    before, after = BeforeAllocator(expandable), CachingAllocator(expandable)
    pick = random.Random(seed)
    held: list[tuple[int | None, int | None]] = []
    for is_malloc, nbytes in ops:
        if is_malloc or not held:
            held.append((before.malloc(nbytes), after.malloc(nbytes)))
        else:
            old, new = held.pop(pick.randrange(len(held)))
            before.release(old)
            after.release(new)
        assert (after.peak_reserved, after.peak_allocated, after.reserved, after.allocated) == (
            before.peak_reserved, before.peak_allocated, before.reserved, before.allocated)
        assert after.segment_sizes() == before.segment_sizes()
        assert _free_blocks(after) == before.free


def _steps(monkeypatch, plans: list[TrainPlan]) -> list[StepTensors]:
    """The StepTensors estimate_memory replays for each plan, caught on their way to the replay."""
    seen: list[StepTensors] = []

    def catch(step, tokens, expandable):
        seen.append(step)
        return replay(step, tokens, expandable)

    monkeypatch.setattr(memory, "replay", catch)
    for plan in plans:
        estimate_memory(plan)
    return list(dict.fromkeys(seen))


HISTOGRAMS = ("100:10,200:30,300:25,400:15,500:10,600:6,1024:4", "128:30,256:30,384:15,512:10,768:7,1024:4",
              "64:5,1024:1")


@pytest.mark.parametrize("hist", HISTOGRAMS)
def test_the_replay_of_an_order_gives_the_numbers_it_gave_before(monkeypatch, hist):
    plans = [TrainPlan(model="qwen2.5-0.5b", method="lora", seq_len=1024, batch_size=8, grad_checkpointing=True,
                       lengths=hist),
             TrainPlan(model="llama-3.2-1b", method="full", seq_len=1024, batch_size=2, lengths=hist)]
    steps = _steps(monkeypatch, plans)
    assert len(steps) == 2
    for step in steps:
        for batch in (1, 8):
            mix = padded_mix(plans[0].length_histogram, batch)
            drawn = tuple(batch * n for n in order_lengths(mix, seed=batch, batches=150))
            ascending = tuple(sorted(set(drawn)))  # each longer batch needs blocks the cache does not hold
            for tokens in (drawn, ascending, drawn[:1] * 3, ()):
                for expandable in (False, True):
                    assert replay.__wrapped__(step, tokens, expandable) == before_replay(step, tokens, expandable)


def test_a_step_program_is_the_steps_requests_in_order():
    step = StepTensors(2, (4096,), (4096, 11008), (128_000 * 4,), (128_000 * 4,), (4096,), (11008,))
    program, peak = step_program(step, 512)
    before, after, held = BeforeAllocator(), CachingAllocator(), []
    _before_step(before, step, 512)
    after.run(program)
    assert peak == before.peak_allocated
    assert after.segment_sizes() == before.segment_sizes() and after.peak_reserved == before.peak_reserved
    flat = [op for part in program for op in (part[2] if isinstance(part, tuple) else (part,))]
    assert sum(op > 0 for op in flat) == sum(op < 0 for op in flat)  # every block taken is given back
    assert all(op > SMALL_SIZE for op in flat if op > 0)  # the small pool is left out
    # run one by one, the bursts leave the same cache as when they are skipped because they restore it
    one_by_one = CachingAllocator()
    for part in program:  # a burst's requests number its own blocks
        one_by_one.run(*((part[2], []) if isinstance(part, tuple) else ((part,), held)))
    assert one_by_one.segment_sizes() == after.segment_sizes() and one_by_one.free == after.free
    # 4,096 B/token x 512 tokens = 2 MiB: a 1-10 MiB request maps a 20 MiB segment
    assert round_size(4096 * 512) == 2 * MIB and segment_size(2 * MIB) == LARGE_BUFFER


def test_the_estimate_is_the_largest_of_its_orders_each_replayed_as_one_order(monkeypatch):
    plan = TrainPlan(model="qwen2.5-0.5b", method="lora", seq_len=1024, batch_size=4, grad_checkpointing=True,
                     lengths=HISTOGRAMS[1])
    (step,) = _steps(monkeypatch, [plan])
    mix = padded_mix(plan.length_histogram, plan.batch_size)
    ends = reserved_over_orders(step, mix, plan.batch_size, False)
    orders = [tuple(plan.batch_size * n for n in order_lengths(mix, seed)) for seed in range(ORDERS)]
    assert ends == tuple(sorted(before_replay(step, tokens, False)[0] for tokens in orders))
    assert len(set(ends)) > 1  # orders do end at different places: one order alone would not do
    steady = before_replay(step, (plan.batch_size * plan.longest_batch_len,) * 3, False)[0]
    assert estimate_memory(plan).breakdown["allocator_fragmentation"] == ends[-1] - steady
