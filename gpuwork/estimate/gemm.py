"""The time of one GEMM ``C[m, n] = A[m, k] @ B[k, n]`` from its shape: tiles, waves, split-K, a memory floor.

cuBLAS / cuBLASLt choose, per shape, an output tile (CTA tile) from a small set and, when the tiles of
``m x n`` leave SMs idle and ``k`` is long, split the ``k`` loop over several CTAs and add the partial sums
afterwards (NVIDIA "Matrix Multiplication Background" guide: tile and wave quantisation, split-K). The model
takes the best over those choices:

- a tile ``tm x tn`` gives ``ceil(m / tm) x ceil(n / tn)`` tiles; with split-K ``s`` each runs ``k / s`` of the
  loop, and ``tiles x s`` CTAs run in ``waves = ceil(tiles x s / SMs)`` waves;
- one CTA sustains ``efficiency(tile)`` of the SM's share of the datasheet dense peak (a small tile reuses each
  loaded operand fewer times), and each wave pays a fixed ``tile_overhead_s`` (prologue loads, epilogue store);
- all SMs together never beat ``achievable_flops``: the rate the card holds for large GEMMs back to back where
  measured (rates.csv ``sustained_tflops``), else its measured large-GEMM rate (MAMF / ``torch.mm``);
- the peak the efficiencies apply to is the datasheet's, or more where the measured rate exceeds it
  (``tiles_peak``: GeForce cards run above their rated boost clock);
- split-K writes and re-reads ``s`` fp32 partial outputs;
- the memory floor: A, B and C once through device memory at the achievable bandwidth;
- plus a fixed ``latency_s`` per kernel (launch, pipeline fill, epilogue).

Worked example (H100 SXM, bf16, m = 256, n = k = 4096; 989 TF peak, 794.5 TF achievable, 132 SMs, tiles and
efficiencies of data/gemm_tiles.csv): 128 x 256 gives 2 x 16 = 32 tiles, a quarter of the SMs (47 us);
128 x 64 gives 2 x 64 = 128 tiles in one wave, each 2 x 128 x 64 x 4096 FLOPs at 0.60 x 989 / 132 TF/s
= 14.9 us, + 2 us for the wave + 4 us latency = 20.9 us (411 TF/s). OpenXLA's sm_90 table measures 20.85 us.

Pure: every number arrives as an argument (``GemmKernels``; ``gpuwork.facts.rates`` loads them); results are cached per
shape and kernels.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

# (tile_m, tile_n, efficiency) triples, as data/gemm_tiles.csv lists them
Tiles = tuple[tuple[int, int, float], ...]

PARTIAL_SUM_BYTES = 4  # split-K partial sums are fp32 (cuBLAS workspace), whatever the operand dtype


class GemmChoice(NamedTuple):
    """The model's pick for one GEMM: its time and how it was reached."""

    time_s: float
    tile_m: int  # 0 when the memory floor binds
    tile_n: int
    split_k: int
    waves: int
    memory_bound: bool


class GemmKernels(NamedTuple):
    """What one GPU's GEMM kernels run at in one dtype: everything ``gemm_choice`` reads besides the shape.

    Hashable (the choice is cached by shape and kernels); ``steptime.gemm_kernels`` builds it from the rates."""

    dtype_bytes: int  # bytes per element of A, B and C
    peak_flops: float  # dense peak of the dtype the tiles' efficiencies apply to (tiles_peak)
    achievable_flops: float  # the cap: sustained back-to-back rate where measured, else MAMF / torch.mm
    sm_count: int
    mem_bw_bytes_s: float  # achievable device-memory bandwidth
    tiles: Tiles
    latency_s: float  # fixed time per kernel
    tile_overhead_s: float  # fixed time per wave of tiles
    max_split_k: int


@functools.lru_cache(maxsize=65536)
def gemm_choice(m: int, n: int, k: int, kernels: GemmKernels) -> GemmChoice:
    """The fastest tile and split-K for ``m x n x k`` (see the module docstring)."""
    (
        dtype_bytes,
        peak_flops,
        achievable_flops,
        sm_count,
        mem_bw_bytes_s,
        tiles,
        latency_s,
        tile_overhead_s,
        max_split_k,
    ) = kernels
    m, n, k = max(1, m), max(1, n), max(1, k)
    sm_count = max(1, sm_count)
    per_sm = peak_flops / sm_count
    flops = 2.0 * m * n * k
    best = (math.inf, 0, 0, 1, 0)
    floor_s = flops / achievable_flops
    partial_s = (
        2.0 * m * n * PARTIAL_SUM_BYTES / mem_bw_bytes_s
    )  # per split: write fp32 partials, read them back
    for tile_m, tile_n, efficiency in tiles:
        count = -(-m // tile_m) * -(-n // tile_n)
        tile_s = 2.0 * tile_m * tile_n / (per_sm * efficiency)  # per unit of k
        # split K only while the tiles leave SMs idle, and not beyond two waves of CTAs
        last = min(max_split_k, 2 * sm_count // count, k // 2) if count < sm_count else 1
        for split in range(1, max(1, last) + 1):
            waves = -(-count * split // sm_count)
            t = max(waves * (tile_s * -(-k // split) + tile_overhead_s), floor_s)
            if split > 1:
                t += split * partial_s
            if t < best[0]:
                best = (t, tile_m, tile_n, split, waves)
    memory_s = (m * k + k * n + m * n) * dtype_bytes / mem_bw_bytes_s
    if not tiles or memory_s >= best[0]:
        return GemmChoice(latency_s + memory_s, 0, 0, 1, 0, True)
    return GemmChoice(latency_s + best[0], best[1], best[2], best[3], best[4], False)


def tiles_peak(datasheet_flops: float, achievable_flops: float, tiles: Tiles, *, simt: bool = False) -> float:
    """The dense peak the tiles' efficiencies are shares of. The datasheet's, unless the measured large-GEMM rate
    exceeds it: then the card runs above the rated boost clock its datasheet is computed at (GeForce cards; RTX 5090:
    242 TF measured vs 209.5), and the peak is the one at which the largest tile reaches the measured rate. The
    measured shapes of the RTX 4090 and 5090 follow that peak (docs/gemm.md#geforce-cards-above-their-datasheet).

    ``simt``: an FP32 SGEMM on the FP32 units. The largest tile must still reach the measured large-GEMM rate where
    that rate is above the largest tile's share of the datasheet peak (A100: ``torch.mm`` fp32 19.18 TF, 98 % of
    19.5, against 0.85 x 19.5 = 16.6 from the tiles), so the peak is raised to the one at which it does; on the other
    GPUs the measured FP32 rate is below that share and the datasheet stays (docs/gemm_fp32.md)."""
    best = max((efficiency for _, _, efficiency in tiles), default=1.0)
    if simt:
        return max(datasheet_flops, achievable_flops / best)
    return achievable_flops / best if achievable_flops > datasheet_flops else datasheet_flops


def gemm_time(m: int, n: int, k: int, kernels: GemmKernels) -> float:
    """Seconds of one ``m x n x k`` GEMM (``gemm_choice(...).time_s``)."""
    return gemm_choice(m, n, k, kernels).time_s


__all__ = [
    "PARTIAL_SUM_BYTES",
    "GemmChoice",
    "GemmKernels",
    "Tiles",
    "gemm_choice",
    "gemm_time",
    "tiles_peak",
]
