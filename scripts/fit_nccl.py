"""Fit the bus-bandwidth curves of gpuwork/facts/data/nccl_curves.csv to the rows of nccl_tests.csv.

Form (one per curve or family): busbw(S) = link x efficiency / (1 + (half / S) ** exponent), S the
nccl-tests message size in bytes. The fit is minimax on the relative error over the rows of 1 MiB and
more (a grid over exponent and half, the efficiency then closed-form). Run: python scripts/fit_nccl.py
and paste its CSV (curve,efficiency,half_bytes,exponent,max_error) into nccl_curves.csv.
half_bytes is in bytes at the link the curve's rows were measured on; the estimate carries it to other links as
the time half_bytes / (link x efficiency), which the half_us column prints (docs/communication.md 'Latency in
seconds').
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from gpuwork.facts.network import DGX_NODE_BYTES_S

DATA = Path(__file__).resolve().parents[1] / "gpuwork" / "facts" / "data" / "nccl_tests.csv"
MIN_BYTES = 1 << 20
REF_RANKS = 8  # half_bytes is stored for 8 ranks; a ring's latency term grows with its rank count
# which source curves make each family the estimate uses (level-algorithm)
FAMILIES = {
    "nvlink-ring": lambda r: r["level"] == "nvlink" and r["algorithm"] == "ring",
    "nvls": lambda r: r["level"] == "nvlink" and r["algorithm"] == "nvls",
    # the DGX-class sweeps; slower networks are compared with the model, not fitted into it
    "network-ring": lambda r: r["level"] == "network" and float(r["link_gbs"]) * 1e9 >= DGX_NODE_BYTES_S,
}


def fit(sizes: np.ndarray, ratio: np.ndarray, ranks: np.ndarray, ref_ranks: int) -> tuple[float, float, float, float]:
    """(max relative error, efficiency, half bytes at ref_ranks, exponent); half scales with ranks / ref_ranks."""
    best = None
    scale = ranks / ref_ranks
    for p in np.arange(0.30, 2.001, 0.01):
        for lh in np.arange(16.0, 32.0, 0.02):
            shape = 1.0 / (1.0 + (2.0 ** lh * scale / sizes) ** p)
            r = ratio / shape
            e = float(np.sqrt(r.max() * r.min()))
            err = max(float(r.max()) / e - 1, 1 - float(r.min()) / e)
            if best is None or err < best[0]:
                best = (err, e, float(2.0 ** lh), float(p))
    return best


def main() -> None:
    rows = [r for r in csv.DictReader(DATA.open(encoding="utf-8")) if int(r["size_bytes"]) >= MIN_BYTES]
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["curve"], []).append(r)
    for name, pick in FAMILIES.items():
        groups["family:" + name] = [r for r in rows if pick(r)]
    out = csv.writer(sys.stdout)
    out.writerow(["curve", "efficiency", "half_bytes", "exponent", "max_error", "rows", "half_us"])
    for name, rs in groups.items():
        sizes = np.array([float(r["size_bytes"]) for r in rs])
        ratio = np.array([float(r["busbw_gbs"]) / float(r["link_gbs"]) for r in rs])
        ranks = np.array([float(r["gpus"]) for r in rs])
        if len(set(sizes)) < 3:  # single points: the efficiency only
            e = float(np.sqrt(ratio.max() * ratio.min()))
            out.writerow([name, f"{e:.4f}", 0, 1.0, f"{max(ratio.max() / e - 1, 1 - ratio.min() / e):.4f}", len(rs)])
            continue
        err, e, half, p = fit(sizes, ratio, ranks, REF_RANKS)
        links = {float(r["link_gbs"]) for r in rs}  # a family over several links has no one time
        half_us = f"{half / (links.pop() * 1e9 * e) * 1e6:.1f}" if len(links) == 1 else ""
        out.writerow([name, f"{e:.4f}", f"{half:.0f}", f"{p:.2f}", f"{err:.4f}", len(rs), half_us])


if __name__ == "__main__":
    main()
