#!/usr/bin/env python
"""Derive kernels.csv's host cost per eager kernel (``launch_overhead_eager_*``) from the dispatch chains measured on
lent GPU machines (docs/measurements/<machine>/, scripts/gpu_sweep.py's ``host`` section and gpu_check's kernel table).

Rule (rates_sources.md [K22]):
- a lease's figures are the mean of its samples; each figure below is the median over leases;
- ``bare`` = one-element ``torch.mul`` on CUDA tensors without autograd (Python, dispatch and the launch);
- forward (and recompute) per kernel = bare x (nn.Linear forward per kernel / bare), measured on the same lease, so
  the host's speed cancels in the ratio;
- backward per kernel = bare x (nn.Linear backward per kernel / bare): the two gradient GEMMs of each module's
  backward, driven by the autograd engine;
- optimizer (torch.no_grad, ops called from Python without modules) per kernel = bare;
- an op called on its own, outside a model's Python (a kernel benchmark's harness): forward = bare x (the one-element
  op recorded by autograd / bare), backward = bare x (one node of that chain's backward / bare). scripts/liger_rows.py
  prices Liger-Kernel's benchmark rows with these; a whole step takes the module figures above.

Prints the derived values and the per-lease table; ``--check`` exits 1 when kernels.csv differs (0.1 us rounding).

    python scripts/derive_host_dispatch.py [--check]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEASUREMENTS = ROOT / "docs" / "measurements"
KERNELS_CSV = ROOT / "gpuwork" / "facts" / "data" / "kernels.csv"
KEYS = {"forward": "launch_overhead_eager_us", "backward": "launch_overhead_eager_backward_us",
        "optimizer": "launch_overhead_eager_nograd_us", "op_forward": "launch_overhead_isolated_op_us",
        "op_backward": "launch_overhead_isolated_op_backward_us"}


def lease_samples(folder: Path) -> dict[str, list[dict[str, float]]]:
    """Dispatch samples per lease: {lease: [{"bare", "forward", "backward"}...]}; a lease is a JSON file's stem up to
    its first underscore (sweep3 and sweep3_host_again are lease 3), gpu_check's kernel table gives the bare op."""
    leases: dict[str, list[dict[str, float]]] = {}
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        lease = path.stem.split("_")[0].removeprefix("sweep").removeprefix("check") or "1"
        for row in data.get("host") or []:
            if row.get("what") == "dispatch":
                leases.setdefault(lease, []).append({"bare": row["eager_us"], "forward": row["module_forward_us"],
                                                     "backward": row["module_backward_us"] / 2,
                                                     "op_forward": row["autograd_forward_us"],
                                                     "op_backward": row["autograd_backward_us"]})
        for row in data.get("kernels") or []:
            if row.get("kernel") == "eager dispatch per op" and row.get("measured"):
                leases.setdefault(lease, []).append({"bare": row["measured"] * 1e6})
    return leases


def derive(folder: Path) -> dict[str, float]:
    means: dict[str, dict[str, float]] = {}
    for lease, samples in lease_samples(folder).items():
        keys = {k for s in samples for k in s}
        means[lease] = {k: statistics.mean(s[k] for s in samples if k in s) for k in keys}
    bare = statistics.median(m["bare"] for m in means.values())
    split = [m for m in means.values() if "forward" in m]
    if not split:
        raise SystemExit(f"no nn.Linear dispatch chain under {folder}")
    ratios = {k: statistics.median(m[k] / m["bare"] for m in split)
              for k in ("forward", "backward", "op_forward", "op_backward")}
    return {"bare_us": bare, **{f"{k}_ratio": v for k, v in ratios.items()},
            **{KEYS[k]: round(bare * v, 1) for k, v in ratios.items()}, KEYS["optimizer"]: round(bare, 1),
            "leases": means}


def kernels_csv() -> dict[str, float]:
    with open(KERNELS_CSV, newline="", encoding="utf-8") as fh:
        return {r["key"]: float(r["value"]) for r in csv.DictReader(fh)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("--folder", type=Path, default=MEASUREMENTS / "h200-2026-12-04")
    p.add_argument("--check", action="store_true", help="exit 1 when kernels.csv differs from the derivation")
    args = p.parse_args(argv)
    d = derive(args.folder)
    for lease, m in sorted(d["leases"].items()):
        print(f"lease {lease}: " + ", ".join(f"{k} {v:.2f} us" for k, v in sorted(m.items())))
    print(f"bare op {d['bare_us']:.2f} us; forward x{d['forward_ratio']:.3f}, backward x{d['backward_ratio']:.3f}; "
          f"an op on its own x{d['op_forward_ratio']:.3f}, its backward node x{d['op_backward_ratio']:.3f}")
    table = kernels_csv()
    differs = False
    for key in KEYS.values():
        print(f"{key}: derived {d[key]:.1f}, kernels.csv {table.get(key)}")
        differs |= table.get(key) != d[key]
    return 1 if args.check and differs else 0


if __name__ == "__main__":
    sys.exit(main())
