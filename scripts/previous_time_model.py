"""Predictions of the previous step-time model (one MFU number per GPU family and method) on the published cases.

``docs/time_accuracy.md`` reports the per-operation model's error beside the model it replaced. That model
lives in the git history: this script checks out its last commit into a temporary worktree, runs its
``estimate_time`` on every case of ``gpuwork.measure.time_cases`` and writes the predicted tokens/s per GPU to
``docs/time_accuracy_previous.json``. Run it from the repository root:

    python scripts/previous_time_model.py [--commit a41bb08]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREVIOUS_COMMIT = "a41bb08"  # the last commit whose estimate_time used data/mfu.csv
NEWER_STACKS = {"torchtune": "framework"}  # stacks that commit does not know -> the nearest one it does


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--commit", default=PREVIOUS_COMMIT)
    parser.add_argument("--out", default=str(ROOT / "docs" / "time_accuracy_previous.json"))
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from gpuwork.measure.time_cases import EXTRA_GPUS, TIME_CASES

    cases = [{"name": c.name, "plan": c.plan.as_dict(), "gpu_id": c.gpu_id,
              "extra_gpu": dataclasses.asdict(EXTRA_GPUS[c.gpu_id]) if c.gpu_id in EXTRA_GPUS else None}
             for c in TIME_CASES]
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "previous"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), args.commit], check=True,
                       capture_output=True)
        try:
            code = (
                "import json, sys\n"
                "from gpuwork.plan import TrainPlan\n"
                "from gpuwork.facts.catalog import GpuSpec, GpuClass, Link\n"
                "from gpuwork.sizing import estimate_time\n"
                "out = {}\n"
                "for c in json.load(sys.stdin):\n"
                "    p = dict(c['plan'])\n"
                # stacks added after that commit: its MFU table does not read the stack for these cases (its
                # predictions are the same under 'framework' and 'hf-trainer')
                f"    p['stack'] = {NEWER_STACKS!r}.get(p.get('stack'), p.get('stack'))\n"
                "    plan = TrainPlan.from_dict({k: v for k, v in p.items() if v is not None})\n"
                "    gpu = c['gpu_id']\n"
                "    if c['extra_gpu']:\n"
                "        g = dict(c['extra_gpu']); g['gpu_class'] = GpuClass(g['gpu_class']); g['link'] = Link(g['link'])\n"
                "        g['sources'] = tuple(g['sources']); gpu = GpuSpec(**g)\n"
                "    nodes = plan.gpus // 8 if plan.gpus > 8 else 1\n"
                "    t = estimate_time(plan, gpu, nodes=nodes, network='ib-ndr-400g' if nodes > 1 else None)\n"
                "    out[c['name']] = t.tokens_per_s / plan.gpus\n"
                "print(json.dumps(out))\n"
            )
            result = subprocess.run([sys.executable, "-c", code], input=json.dumps(cases), cwd=tree, text=True,
                                    capture_output=True, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"})
            if result.returncode:
                sys.stderr.write(result.stderr)
                return result.returncode
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True)
    predictions = json.loads(result.stdout)
    Path(args.out).write_text(json.dumps({"commit": args.commit, "metric": "tokens_per_s_per_gpu",
                                          "predictions": predictions}, indent=1, sort_keys=True) + "\n",
                              encoding="utf-8")
    print(f"{len(predictions)} predictions of commit {args.commit} -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
