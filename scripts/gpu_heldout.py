#!/usr/bin/env python
"""Steps on a lent GPU scored as held-out cases: predictions written and committed first, measurements after.

    python scripts/gpu_heldout.py predict --out FOLDER/predictions.json   # on a clean, committed tree
    (commit it; run the commands it prints on the GPU machine; save their JSON into FOLDER)
    python scripts/gpu_heldout.py compare FOLDER/predictions.json FOLDER/sweep.json FOLDER/check.json

The cases are of two kinds, each the way the GPU run measures it:

- ``step``: a bare Hugging Face loop (``scripts/gpu_sweep.py --sections step --step-cases ...``): loss, backward,
  torch AdamW (foreach, weight decay 0), zero_grad; no clipping, no Trainer: priced as stack ``torch-loop``;
- ``trial``: gpuwork's own trial (``scripts/gpu_check.py --sections grid``), priced as gpu_check prices it, with
  its memory peaks.

``predict`` records the gpuwork commit (it refuses a tree with uncommitted changes under gpuwork/) and the GPU's
catalog id; ``compare`` prints, per case, the measured and predicted figures and the signed error
(predicted / measured - 1), then the median and largest |error| per kind.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GPU_ID = "h200_sxm"
# none of these shapes was measured before the predictions (docs/measurements/h200-2026-12-04 holds the earlier ones)
STEP_CASES = (("llama-3.2-1b", "lora", 256, 2), ("llama-3.2-1b", "full", 1024, 1), ("qwen2.5-0.5b", "full", 256, 1),
              ("llama-3.1-8b", "lora", 512, 1), ("tinyllama-1.1b", "lora", 128, 4))
TRIAL_METHODS, TRIAL_SEQ, TRIAL_BATCH = ("full", "lora"), (256, 1024), (2,)


def step_plan(model: str, method: str, seq: int, batch: int):
    from gpuwork.plan import TrainPlan

    return TrainPlan(model=model, method=method, precision="bf16", seq_len=seq, batch_size=batch, attention="sdpa",
                     lora_r=16, lora_alpha=32, lora_targets="all-linear", weight_decay=0.0, stack="torch-loop",
                     grad_clip=False)


def trial_cases() -> list[dict[str, Any]]:
    sys.path.insert(0, str(ROOT / "scripts"))
    from gpu_check import FULL_MODEL, ADAPTER_MODEL  # noqa: I001 - the script's own defaults

    return [{"method": m, "model": FULL_MODEL if m == "full" else ADAPTER_MODEL,
             "precision": "bf16-mixed" if m == "full" else "bf16", "seq_len": s, "batch_size": b}
            for m in TRIAL_METHODS for s in TRIAL_SEQ for b in TRIAL_BATCH]


def trial_plan(case: dict[str, Any]):
    from gpuwork.plan import TrainPlan

    return TrainPlan(model=case["model"], method=case["method"], precision=case["precision"], seq_len=case["seq_len"],
                     batch_size=case["batch_size"], attention="sdpa", lora_r=16, lora_targets="all-linear")


def _commit() -> str:
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "gpuwork"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.strip()
    if dirty:
        raise SystemExit("gpu_heldout: gpuwork/ has uncommitted changes; commit them so the model can be named")
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def predict() -> dict[str, Any]:
    from gpuwork.facts.catalog import get_gpu
    from gpuwork.sizing import estimate_memory, estimate_time

    gpu = get_gpu(GPU_ID)
    steps = []
    for model, method, seq, batch in STEP_CASES:
        plan = step_plan(model, method, seq, batch)
        steps.append({"model": model, "method": method, "seq_len": seq, "batch_size": batch,
                      "plan": plan.as_dict(), "step_s": estimate_time(plan, gpu).step_time_s})
    trials = []
    for case in trial_cases():
        plan = trial_plan(case)
        mem = estimate_memory(plan)
        trials.append({**case, "plan": plan.as_dict(), "step_s": estimate_time(plan, gpu).step_time_s,
                       "allocated_bytes": mem.peak_allocated_bytes, "reserved_bytes": mem.peak_reserved_bytes})
    return {"model_commit": _commit(), "gpu_id": GPU_ID, "step": steps, "trial": trials,
            "commands": [
                "python3 scripts/gpu_sweep.py --sections step --json $OUT/sweep4.json --step-cases "
                + ",".join(f"{m}:{me}:{s}:{b}" for m, me, s, b in STEP_CASES),
                "python3 scripts/gpu_check.py --sections grid --methods " + " ".join(TRIAL_METHODS)
                + " --seq-lens " + " ".join(map(str, TRIAL_SEQ)) + " --batch-sizes " + " ".join(map(str, TRIAL_BATCH))
                + " --out $OUT/check4.md --json $OUT/check4.json"]}


def compare(predictions: dict[str, Any], sweep: dict[str, Any], check: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per predicted case that was measured: kind, case, figure, measured, predicted, error."""
    rows = []
    measured_steps = {(r["model"], r["method"], r["seq_len"], r["batch_size"]): r for r in sweep.get("step", [])}
    for p in predictions["step"]:
        m = measured_steps.get((p["model"], p["method"], p["seq_len"], p["batch_size"]))
        if m and m.get("wall_s"):
            rows.append({"kind": "step", "case": f"{p['model']} {p['method']} {p['seq_len']} x {p['batch_size']}",
                         "figure": "step s", "measured": m["wall_s"], "predicted": p["step_s"]})
    measured_trials = {(r["method"], r["seq_len"], r["batch_size"]): r for r in check.get("results", [])}
    for p in predictions["trial"]:
        m = (measured_trials.get((p["method"], p["seq_len"], p["batch_size"])) or {}).get("measured") or {}
        name = f"{p['model']} {p['method']} {p['seq_len']} x {p['batch_size']}"
        for figure, key, pkey in (("step s", "step_time_s", "step_s"), ("allocated", "allocated_bytes",
                                                                         "allocated_bytes"),
                                  ("reserved", "reserved_bytes", "reserved_bytes")):
            if m.get(key):
                rows.append({"kind": f"trial {figure}", "case": name, "figure": figure, "measured": m[key],
                             "predicted": p[pkey]})
    for r in rows:
        r["error"] = r["predicted"] / r["measured"] - 1
    return rows


def report(rows: list[dict[str, Any]]) -> str:
    lines = ["| kind | case | measured | predicted | error |", "|---|---|---:|---:|---:|"]
    for r in rows:
        scale, unit = (1.0, "s") if r["figure"] == "step s" else (2**-30, "GiB")
        lines.append(f"| {r['kind']} | {r['case']} | {r['measured'] * scale:.4g} {unit} "
                     f"| {r['predicted'] * scale:.4g} {unit} | {r['error']:+.1%} |")
    for kind in dict.fromkeys(r["kind"] for r in rows):
        errors = [abs(r["error"]) for r in rows if r["kind"] == kind]
        lines.append(f"\n{kind}: {len(errors)} cases, median |error| {statistics.median(errors):.1%}, "
                     f"largest {max(errors):.1%}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    sub = p.add_subparsers(dest="verb", required=True)
    pr = sub.add_parser("predict", allow_abbrev=False)
    pr.add_argument("--out", type=Path, required=True)
    co = sub.add_parser("compare", allow_abbrev=False)
    co.add_argument("predictions", type=Path)
    co.add_argument("sweep", type=Path)
    co.add_argument("check", type=Path)
    args = p.parse_args(argv)
    if args.verb == "predict":
        result = predict()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1, default=str))
        print("\n".join(result["commands"]))
        print(f"wrote {args.out} (model {result['model_commit'][:10]}); commit it before the GPU run")
        return 0
    print(report(compare(*(json.loads(Path(f).read_text()) for f in (args.predictions, args.sweep, args.check)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
