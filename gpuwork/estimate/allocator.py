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
  segments are returned to CUDA only when an allocation fails (not modelled: the GPU is assumed to hold
  what the run reserves, which is the number a sizing tool must give);
- ``expandable_segments:True``: one segment per pool whose physical memory grows at its end in 20 MiB
  pages; every block lies in one address range, so free neighbours always merge.

Pure: no file, torch or clock.
"""

from __future__ import annotations

import bisect
import functools
import math
import random
from dataclasses import dataclass

from gpuwork.units import MIB

MIN_BLOCK = 512  # kMinBlockSize: every size rounds up to a multiple of 512 bytes
SMALL_SIZE = 1 * MIB  # kSmallSize: largest request of the small pool; larger splits must leave more
MIN_LARGE_ALLOC = 10 * MIB  # kMinLargeAlloc: requests below this get a kLargeBuffer segment
LARGE_BUFFER = 20 * MIB  # kLargeBuffer: segment for 1-10 MiB requests; expandable large-pool page
ROUND_LARGE = 2 * MIB  # kRoundLarge: larger segments round up to 2 MiB
REPLAY_BATCHES = 48  # micro-batches replayed: enough for the records of a shuffled epoch's start
REPLAY_SEED = 0  # the replayed order is one fixed shuffle, so an estimate is reproducible


def round_size(size: int) -> int:
    return max(MIN_BLOCK, MIN_BLOCK * math.ceil(size / MIN_BLOCK))


def segment_size(size: int) -> int:
    """Bytes ``cudaMalloc``-ed for a large-pool request that no cached block holds."""
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * math.ceil(size / ROUND_LARGE)


class CachingAllocator:
    """The large pool of the caching allocator: blocks in segments, best-fit reuse, split and merge."""

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
        size = round_size(nbytes)
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
            self.segments.append([[0, segment_size(size), 0]])
            self._add_reserved(segment_size(size))
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


@dataclass(frozen=True)
class StepTensors:
    """The large tensors of one micro-batch, in bytes per token, in the order the step makes them.

    ``layer_saved``: what each block keeps for backward; ``layer_transient``: made and freed inside each block's
    forward (the block's internals under checkpointing); ``head``: logits and loss kept to the loss backward;
    ``loss_transient``: the loss backward's own buffers; ``recompute``: a block's internals rebuilt in its
    backward (checkpointing); ``backward_transient``: gradients of a block's intermediates.
    """

    layers: int
    layer_saved: tuple[int, ...]
    layer_transient: tuple[int, ...]
    head: tuple[int, ...]
    loss_transient: tuple[int, ...]
    recompute: tuple[int, ...]
    backward_transient: tuple[int, ...]


def _replay_step(alloc: CachingAllocator, step: StepTensors, tokens: int) -> None:
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


@functools.lru_cache(maxsize=512)
def replay(step: StepTensors, tokens: tuple[int, ...], expandable: bool) -> tuple[int, int]:
    """(peak reserved, peak allocated) bytes of the large pool over micro-batches of ``tokens`` each."""
    alloc = CachingAllocator(expandable)
    seen: set[tuple[tuple[int, ...], int]] = set()
    for t in tokens:
        # between steps every block is free and merged, so the cache is just its segments' sizes: a length
        # already replayed on the same segments repeats itself exactly and changes nothing
        key = (alloc.segment_sizes(), t)
        if key in seen:
            continue
        seen.add(key)
        _replay_step(alloc, step, t)
    return alloc.peak_reserved, alloc.peak_allocated


def batch_lengths(histogram: tuple[tuple[int, float], ...], batch_size: int,
                  batches: int = REPLAY_BATCHES) -> tuple[int, ...]:
    """Padded lengths of ``batches`` micro-batches drawn from a length histogram, in a shuffled order.

    A padding collator pads each micro-batch to its longest sequence, so a batch's length follows the
    distribution of the maximum of ``batch_size`` draws, F(x)^batch_size. The batches are that distribution's
    evenly spaced quantiles (a stratified sample, the longest included), in one fixed shuffled order: what a
    shuffled DataLoader gives, reproducibly.
    """
    total = sum(w for _, w in histogram)
    cdf, acc = [], 0.0
    for length, weight in histogram:
        acc += weight / total
        cdf.append((acc ** batch_size, length))
    lengths = []
    for i in range(batches):
        q = (i + 0.5) / batches
        lengths.append(next((length for c, length in cdf if c >= q), histogram[-1][0]))
    lengths[-1] = histogram[-1][0]  # the longest batch happens in an epoch
    random.Random(REPLAY_SEED).shuffle(lengths)
    return tuple(lengths)


__all__ = ["CachingAllocator", "StepTensors", "batch_lengths", "replay", "round_size", "segment_size"]
