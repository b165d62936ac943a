"""Regenerate the bundled block profiles and print the hand-written vs traced block, per kind of work.

    python scripts/block_profiles.py            # the comparison table of the test grid
    python scripts/block_profiles.py --write    # also rewrite gpuwork/facts/data/block_profiles/*.json
    python scripts/block_profiles.py --markdown # the table as Markdown

Bundled: one preset per family gpuwork has presets of, and two families it has no hand-written block
for (Phi-1.5, Pythia-1b / GPT-NeoX: configs in tests/data/models/), each for full and LoRA (all-linear)
fine-tuning in bf16 with SDPA (eager for Gemma 2, whose class has no SDPA path). Mixtral (routed
experts) cannot be traced under fake tensors and stays hand-modelled.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpuwork.estimate.ops import step_ops  # noqa: E402
from gpuwork.estimate.traced_ops import block_totals, traced_block_ops  # noqa: E402
from gpuwork.facts.block_profiles import BlockProfileCache, bundled_profiles_dir  # noqa: E402
from gpuwork.facts.model import spec_for_plan  # noqa: E402
from gpuwork.measure.block_profile import trace_block_profile  # noqa: E402
from gpuwork.plan import TrainPlan  # noqa: E402

NOT_HAND_MODELLED = {"phi": str(ROOT / "tests/data/models/phi-1_5.json"),
                     "gpt_neox": str(ROOT / "tests/data/models/pythia-1b.json")}
BUNDLED = {"llama": "llama-3.1-8b", "qwen2": "qwen2.5-7b", "mistral": "mistral-7b", "gemma2": "gemma-2-9b",
           "phi3": "phi-3-mini", "gpt2": "gpt2", "bert": "bert-base-uncased", **NOT_HAND_MODELLED}
# the comparison grid of tests/test_block_profile.py: (model, seq_len, batch_size)
GRID_SHAPES = (("tiny-llama", 128, 1), ("tiny-llama", 512, 2), ("tiny-qwen2", 256, 1), ("tiny-qwen2", 1024, 1),
               ("tiny-gpt2", 128, 2), ("tiny-gpt2", 512, 1))
GRID_METHODS = ("full", "lora")
GRID_TARGETS = {"tiny-llama": ("q_proj", "v_proj"), "tiny-qwen2": ("q_proj", "v_proj"), "tiny-gpt2": ("c_attn",)}
GRID_PRECISIONS = ("bf16", "fp32")


def bundled_plans() -> list[TrainPlan]:
    plans = []
    for family, model in BUNDLED.items():
        attention = "eager" if family == "gemma2" else "sdpa"
        for method in ("full", "lora"):
            targets = ("all-linear",) if method == "lora" else ("q_proj", "v_proj")
            plans.append(TrainPlan(model=model, method=method, precision="bf16", attention=attention,
                                   lora_targets=targets))
    return plans


def grid_plans() -> list[TrainPlan]:
    return [TrainPlan(model=m, method=method, precision=p, seq_len=s, batch_size=b, lora_targets=GRID_TARGETS[m])
            for m, s, b in GRID_SHAPES for method in GRID_METHODS for p in GRID_PRECISIONS]


def compare(plan: TrainPlan) -> list[dict]:
    """Rows (phase, kind): hand-written vs traced FLOPs, bytes and launches of one block call."""
    spec = spec_for_plan(plan)
    profile = trace_block_profile(plan)
    hand = block_totals(step_ops(plan, spec), plan, spec)
    traced = block_totals(traced_block_ops(plan, spec, profile), plan, spec)
    rows = []
    for phase in ("forward", "backward"):
        for kind in ("matmul", "attention", "memory"):
            h, t = hand[phase][kind], traced[phase][kind]
            rows.append({"phase": phase, "kind": kind, **{f"hand_{k}": v for k, v in h.items()},
                         **{f"traced_{k}": v for k, v in t.items()}})
    return rows


def _pct(hand: float, traced: float) -> str:
    if not traced:
        return "-" if not hand else "inf"
    return f"{(hand / traced - 1) * 100:+.1f}%"


def print_table(markdown: bool) -> None:
    head = ("plan", "phase", "kind", "FLOPs hand", "FLOPs traced", "diff", "bytes hand", "bytes traced", "diff",
            "launches hand/traced")
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
    else:
        print("  ".join(head))
    for plan in grid_plans():
        label = f"{plan.model} {plan.method} {plan.precision} s{plan.seq_len}xb{plan.batch_size}"
        for r in compare(plan):
            cells = (label, r["phase"], r["kind"], f"{r['hand_flops']:.4g}", f"{r['traced_flops']:.4g}",
                     _pct(r["hand_flops"], r["traced_flops"]), f"{r['hand_bytes']:.4g}", f"{r['traced_bytes']:.4g}",
                     _pct(r["hand_bytes"], r["traced_bytes"]),
                     f"{r['hand_launches']:.0f}/{r['traced_launches']:.0f}")
            print(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))


def write_bundled() -> None:
    folder = bundled_profiles_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    cache = BlockProfileCache(user_dir=folder, bundled_dir=folder)
    for plan in bundled_plans():
        profile = trace_block_profile(plan)
        profile = type(profile)(**{**profile.__dict__, "source": Path(plan.model).name})
        path = cache.put(profile)
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--write", action="store_true", help="rewrite the bundled profiles")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args()
    if args.write:
        write_bundled()
    print_table(args.markdown)


if __name__ == "__main__":
    main()
