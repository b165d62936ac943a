"""Check the bundled model presets in data/models/ against their published sizes.

For every ``data/models/<name>.json`` the real transformers model class named in the config's
``architectures`` is built on the ``meta`` device (shapes only, no memory, no weights) and its
parameters are counted exactly; tied weights count once, as ``model.parameters()`` yields a
shared tensor once. The count is compared with ``published_params`` from ``index.csv``.

Usage:
    python scripts/check_presets.py            # plain table
    python scripts/check_presets.py --markdown # Markdown table (as pasted into SOURCES.md)
    python scripts/check_presets.py llama-2-7b gpt2

Exit status 1 when a preset fails to build or a real model is off by more than --tolerance.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import warnings
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent.parent / "data" / "models"

# Why a published number may differ from the exact count of the class that is built.
NOTES = {
    "llama-2-7b": "paper/model card say 7B; 6.74B is the Hub's count of the released weights",
    "llama-2-70b": "publisher rounds to 70B",
    "mistral-7b": "announcement says 7.3B; exact count is 7.24B",
    "gpt2": "GPT-2 paper said 117M; 124M is the corrected figure (tied lm_head counted once)",
    "bert-base-uncased": "BertForMaskedLM: no pooler (768*768+768), adds MLM transform + decoder bias",
    "bert-large-uncased": "paper says 340M (model card 336M); ForMaskedLM has no pooler, adds MLM transform",
}


def load_index() -> dict[str, dict[str, str]]:
    with open(MODELS_DIR / "index.csv", newline="") as f:
        return {row["name"]: row for row in csv.DictReader(f)}


def build_meta(cfg: dict):
    """Build the model class named in the config on the meta device; returns the model."""
    import torch
    import transformers

    config = transformers.CONFIG_MAPPING[cfg["model_type"]].from_dict(cfg)
    arch = (cfg.get("architectures") or [None])[0]
    cls = getattr(transformers, arch, None) if arch else None
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if cls is not None:
            return cls(config)
        if cfg["model_type"] == "bert":
            return transformers.AutoModelForMaskedLM.from_config(config)
        return transformers.AutoModelForCausalLM.from_config(config)


def count(model) -> int:
    return sum(p.numel() for p in model.parameters())


def fmt_params(n: float) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.3f}B"
    return f"{n / 1e6:.2f}M"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    ap.add_argument("names", nargs="*", help="preset names (default: all)")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--tolerance", type=float, default=0.02, help="max relative difference (default 0.02)")
    args = ap.parse_args(argv)

    index = load_index()
    names = args.names or sorted(p.stem for p in MODELS_DIR.glob("*.json"))
    header = ["name", "architecture", "exact params", "", "published", "diff", "notes"]
    rows, failed = [], []
    for name in names:
        path = MODELS_DIR / f"{name}.json"
        cfg = json.loads(path.read_text())
        arch = (cfg.get("architectures") or ["?"])[0]
        entry = index.get(name)
        if entry is None:
            failed.append(f"{name}: not in index.csv")
        try:
            n = count(build_meta(cfg))
        except Exception as exc:  # report and go on with the others
            failed.append(f"{name}: build failed: {type(exc).__name__}: {exc}")
            rows.append([name, arch, "BUILD FAILED", "", "", "", str(exc)[:80]])
            continue
        pub = (entry or {}).get("published_params", "")
        if pub:
            p = float(pub)
            diff = (n - p) / p
            diff_s = f"{diff:+.2%}"
            if abs(diff) > args.tolerance:
                failed.append(f"{name}: {diff_s} off the published {pub}")
        else:
            diff_s = "-"
        note = NOTES.get(name, "test model" if name.startswith("tiny-") else "")
        rows.append([name, arch, f"{n:,}", fmt_params(n), pub or "-", diff_s, note])
        print(f"built {name}", file=sys.stderr, flush=True)

    if args.markdown:
        print("| " + " | ".join(h or "≈" for h in header) + " |")
        print("|" + "|".join(["---", "---", "---:", "---:", "---:", "---:", "---"]) + "|")
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
        for r in [header] + rows:
            print(
                "  ".join(
                    str(c).ljust(w) if i in (0, 1, 6) else str(c).rjust(w)
                    for i, (c, w) in enumerate(zip(r, widths, strict=True))
                ).rstrip()
            )
    for msg in failed:
        print("FAIL " + msg, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
