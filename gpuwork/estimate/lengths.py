"""Variable sequence lengths: the padded length of a micro-batch under a length histogram, and the expected step.

A histogram (``TrainPlan.lengths``) makes each micro-batch as long as its longest member (the Hugging Face padding
collator); ``estimate.timing`` prices the step as the expected cost over those padded lengths, on at most
``LENGTH_GRID`` of them, and counts tokens without the padding. Pure.
"""

from __future__ import annotations

import itertools
import math

from gpuwork.estimate.allocator import padded_mix
from gpuwork.estimate.ops import StackKernels, sdpa_padding_mask
from gpuwork.estimate.steptime import StepPrice
from gpuwork.plan import TrainPlan

# Most padded lengths priced one by one; a histogram with more is priced on this many lengths at quantiles of the
# padded lengths, each of its lengths sharing its probability between the two nearest (linear interpolation of the
# cost): within 1 % of pricing every length on uniform and long-tailed histograms (tests), and an advisor run on a
# 250-length histogram takes seconds rather than a quarter of a minute.
LENGTH_GRID = 24
# Bins of a histogram built from a mean and a standard deviation: each bin is counted at its upper edge, so the
# padded length is never understated by more than one bin width (1/64 of the span).
MOMENT_BINS = 64


def moments_histogram(mean: float, sd: float, shortest: int, longest: int, seq_len: int, *,
                      longer: str = "cut", bins: int = MOMENT_BINS) -> tuple[tuple[int, float], ...]:
    """A length histogram for data published only as mean +- sd (with its shortest and longest sample).

    Lengths are taken as log-normal with the published mean and sd (method of moments: sigma^2 = ln(1 + sd^2 /
    mean^2), mu = ln(mean) - sigma^2 / 2; the R package dampack's ``lnorm_params``, and Wikipedia "Log-normal
    distribution"), restricted to [shortest, longest] and cut into ``bins`` equal bins up to min(longest,
    seq_len), each weighted by the probability between its edges and counted at its upper edge. Samples longer
    than ``seq_len`` are truncated to it (``longer="cut"``, a tokenizer's truncation) or left out of the data
    (``longer="drop"``, e.g. ms-swift's ``truncation_strategy`` 'delete'). Weights sum to 1."""
    if not (mean > 0 and sd > 0 and 0 <= shortest < longest and seq_len > shortest and bins >= 1):
        raise ValueError("moments_histogram needs mean > 0, sd > 0, 0 <= shortest < longest, seq_len > shortest")
    if longer not in ("cut", "drop"):
        raise ValueError(f"longer is 'cut' or 'drop', not {longer!r}")
    sigma = math.sqrt(math.log1p((sd / mean) ** 2))
    mu = math.log(mean) - sigma * sigma / 2

    def cdf(x: float) -> float:
        return 0.0 if x <= 0 else 0.5 * math.erfc(-(math.log(x) - mu) / (sigma * math.sqrt(2)))

    low, high = cdf(shortest), cdf(longest)
    top = min(longest, seq_len)
    edges = [shortest + (top - shortest) * i / bins for i in range(bins + 1)]
    weights = [cdf(b) - cdf(a) for a, b in itertools.pairwise(edges)]
    if longer == "cut":
        weights[-1] += high - cdf(top)  # everything longer becomes seq_len tokens
    total = sum(weights) if longer == "drop" else high - low
    out: dict[int, float] = {}
    for edge, w in zip(edges[1:], weights, strict=True):
        length = max(1, math.ceil(edge))
        out[length] = out.get(length, 0.0) + w / total
    return tuple((n, w) for n, w in sorted(out.items()) if w > 0)


def padded_lengths(plan: TrainPlan) -> tuple[tuple[float, int], ...] | None:
    """(probability, length) of a micro-batch's padded length under ``plan.lengths``, or None when every
    micro-batch has ``seq_len`` tokens ("fixed", "packed", "padded"); ``allocator.padded_mix`` says how."""
    hist = plan.length_histogram
    return None if hist is None else padded_mix(hist, plan.batch_size)


def padding_parts(plan: TrainPlan, stack: StackKernels) -> tuple[tuple[str, tuple[tuple[float, int], ...]], ...]:
    """``padded_lengths`` split by what attention sees, as (lengths kind, (probability, length), ...): "padded"
    for micro-batches whose sequences differ in length (the collator pads them and the attention mask marks the
    padding), "fixed" for those whose ``batch_size`` sequences all have one length l (no padding: probability
    share(l) ** batch_size). All "fixed" where the mask changes no kernel (``ops.sdpa_padding_mask``) or at
    batch 1; empty without a histogram."""
    mix = padded_lengths(plan)
    hist = plan.length_histogram
    if mix is None or hist is None:
        return ()
    if plan.batch_size == 1 or not sdpa_padding_mask(plan.replace(lengths="padded"), stack):
        return (("fixed", mix),)
    total = sum(w for _, w in hist)
    same = {n: (w / total) ** plan.batch_size for n, w in hist}
    padded = tuple((p - same[n], n) for p, n in mix if p - same[n] > 0)
    equal = tuple((same[n], n) for n, _ in hist if same[n] > 0)
    return tuple((kind, part) for kind, part in (("padded", padded), ("fixed", equal)) if part)


def real_tokens_per_sequence(plan: TrainPlan) -> float:
    """Mean tokens of one sequence without padding: the histogram's mean, else ``seq_len``."""
    hist = plan.length_histogram
    if hist is None:
        return float(plan.seq_len)
    return sum(n * w for n, w in hist) / sum(w for _, w in hist)


def length_grid(mix: tuple[tuple[float, int], ...]) -> tuple[tuple[float, int], ...]:
    """The padded-length distribution on at most LENGTH_GRID lengths (each weight split linearly between the
    two grid lengths around it), so that pricing stays a few op lists for any histogram."""
    if len(mix) <= LENGTH_GRID:
        return mix
    # grid lengths at evenly spaced quantiles of the padded lengths (dense where the batches are), the extremes kept
    grid_set, acc, k = {mix[0][1], mix[-1][1]}, 0.0, 1
    for p, length in mix:
        acc += p
        while k < LENGTH_GRID - 1 and acc >= k / (LENGTH_GRID - 1):
            grid_set.add(length)
            k += 1
    grid = sorted(grid_set)
    weights = dict.fromkeys(grid, 0.0)
    j = 0
    for p, length in mix:
        while j + 1 < len(grid) and grid[j + 1] < length:
            j += 1
        a = grid[j]
        b = grid[j + 1] if j + 1 < len(grid) else a
        if b == a or length <= a:
            weights[a] += p
        else:
            t = (length - a) / (b - a)
            weights[a] += p * (1 - t)
            weights[b] += p * t
    return tuple((w, n) for n, w in weights.items() if w > 0)


def mixed_price(parts: list[tuple[float, StepPrice]]) -> StepPrice:
    """The expected step price over micro-batch shapes: each field weighted by the shape's probability (a step
    is linear in its micro-batches, so the expectation of the whole step is the weighted sum)."""
    def mix(field_name: str) -> dict[str, float]:
        out: dict[str, float] = {}
        for w, p in parts:
            for k, v in getattr(p, field_name).items():
                out[k] = out.get(k, 0.0) + w * v
        return out

    assumptions: dict[str, str] = {}
    for _, p in parts:
        assumptions.update(p.assumptions)
    return StepPrice(total_s=sum(w * p.total_s for w, p in parts), by_kind=mix("by_kind"), by_phase=mix("by_phase"),
                     launches=round(sum(w * p.launches for w, p in parts)), flops=sum(w * p.flops for w, p in parts),
                     bytes=sum(w * p.bytes for w, p in parts), assumptions=assumptions)


__all__ = ["LENGTH_GRID", "MOMENT_BINS", "length_grid", "mixed_price", "moments_histogram", "padded_lengths",
           "padding_parts", "real_tokens_per_sequence"]
