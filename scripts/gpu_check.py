#!/usr/bin/env python
"""Measured vs estimated memory and step time on one CUDA GPU: a grid of real trials.

Grid (default): full fine-tuning of llama-3.2-1b, LoRA and QLoRA of llama-3.1-8b, each at two
sequence lengths x two micro-batch sizes, random weights, a few steps per case (gpuwork.measure.trial,
no checkpoint round-trip). For every case it prints and writes:

- measured peak allocated / reserved (torch.cuda.max_memory_allocated / max_memory_reserved) and
  device memory in use (torch.cuda.mem_get_info: total - free, after each step: reserved + CUDA
  context, what nvidia-smi shows) next to ``estimate_memory``'s three totals and their ratios;
- the measured median step time and tokens/s next to ``estimate_time``'s (when the GPU is in
  data/gpus.csv and gpuwork.estimate.timing is present);
- out of memory per case as "OOM" (the grid goes on), other failures as the error's first line.

The header gives the GPU name, driver, CUDA, cuDNN and library versions. Output: a Markdown table
(``--out``, e.g. for docs/accuracy.md) and a JSON file (``--json``, default next to ``--out``), both
rewritten after each case so that a run stopped early keeps what it measured. QLoRA cases load a
random-init llama-3.1-8b saved once to ``--work-dir`` (about 16 GB, removed at the end).

Budget: built to finish in under 8 minutes on one H200 (``--budget-s`` stops starting new cases).
Without a CUDA GPU it prints "no CUDA GPU" and exits with status 1 without writing anything.

Usage:
    python scripts/gpu_check.py --out docs/gpu_check.md --json docs/gpu_check.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GIB = 2**30
FULL_MODEL = "llama-3.2-1b"
ADAPTER_MODEL = "llama-3.1-8b"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", metavar="FILE.md", default="gpu_check.md", help="Markdown table (default gpu_check.md)")
    p.add_argument("--json", metavar="FILE.json", help="JSON results (default: --out with .json)")
    p.add_argument("--methods", nargs="+", default=["full", "lora", "qlora"], choices=["full", "lora", "qlora"])
    p.add_argument("--full-model", default=FULL_MODEL, help=f"model for full fine-tuning (default {FULL_MODEL})")
    p.add_argument("--adapter-model", default=ADAPTER_MODEL,
                   help=f"model for LoRA and QLoRA (default {ADAPTER_MODEL})")
    p.add_argument("--seq-lens", nargs="+", type=int, default=[512, 2048])
    p.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 4])
    p.add_argument("--steps", type=int, default=3, help="measured steps per case (default 3)")
    p.add_argument("--warmup", type=int, default=1, help="warm-up steps per case (default 1)")
    p.add_argument("--budget-s", type=float, default=450.0,
                   help="start no new case after this many seconds (default 450)")
    p.add_argument("--work-dir", help="where the QLoRA base model is saved (default: a temporary folder)")
    return p.parse_args(argv)


def cases(args: argparse.Namespace) -> list[dict[str, Any]]:
    grid = []
    for method in args.methods:
        model = args.full_model if method == "full" else args.adapter_model
        # full: fp32 master weights + bf16 autocast (the Trainer's bf16=True); adapters: bf16 base and compute
        precision = "bf16-mixed" if method == "full" else "bf16"
        for seq in args.seq_lens:
            for batch in args.batch_sizes:
                grid.append({"method": method, "model": model, "precision": precision, "seq_len": seq,
                             "batch_size": batch})
    return grid


def environment_lines(env: dict[str, Any]) -> list[str]:
    return [f"- GPU: {env.get('device_name')} ({env.get('device_total_bytes', 0) / GIB:.1f} GiB, compute capability "
            f"{env.get('gpu_compute_capability')}), driver {env.get('driver_version')}, CUDA {env.get('cuda_version')}, "
            f"cuDNN {env.get('cudnn_version')}",
            f"- torch {env.get('torch')}, transformers {env.get('transformers')}, peft {env.get('peft')}, "
            f"bitsandbytes {env.get('bitsandbytes')}, Python {env.get('python')}"]


def _g(n: float | None) -> str:
    return "-" if n is None else f"{n / GIB:.2f}"


def _f(n: float | None, spec: str) -> str:
    return "-" if n is None else format(n, spec)


def _r(a: float | None, b: float | None) -> str:
    return "-" if not a or not b else f"{a / b:.2f}"


def markdown(results: list[dict[str, Any]], env: dict[str, Any] | None, elapsed_s: float) -> str:
    lines = ["# gpuwork GPU check: measured vs estimated", ""]
    if env:
        lines += environment_lines(env)
    lines += [f"- {len(results)} cases in {elapsed_s:.0f} s; memory in GiB (2^30 bytes); ratio = measured / estimated",
              "- allocated = torch.cuda.max_memory_allocated, reserved = max_memory_reserved, device = "
              "mem_get_info total - free after each step (reserved + CUDA context, as nvidia-smi shows)", "",
              "| method | model | seq x batch | fits | alloc meas | alloc est | ratio | reserved meas | reserved est "
              "| ratio | device meas | device est | ratio | step meas (s) | step est (s) | ratio | tokens/s |",
              "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        m, e = r.get("measured") or {}, r.get("estimated") or {}
        fits = "yes" if r.get("fits") else ("OOM" if r.get("fits") is False else r.get("status", "error"))
        lines.append(
            f"| {r['method']} | {r['model']} | {r['seq_len']} x {r['batch_size']} | {fits} "
            f"| {_g(m.get('allocated_bytes'))} | {_g(e.get('allocated_bytes'))} "
            f"| {_r(m.get('allocated_bytes'), e.get('allocated_bytes'))} "
            f"| {_g(m.get('reserved_bytes'))} | {_g(e.get('reserved_bytes'))} "
            f"| {_r(m.get('reserved_bytes'), e.get('reserved_bytes'))} "
            f"| {_g(m.get('device_bytes'))} | {_g(e.get('device_bytes'))} "
            f"| {_r(m.get('device_bytes'), e.get('device_bytes'))} "
            f"| {_f(m.get('step_time_s'), '.3f')} | {_f(e.get('step_time_s'), '.3f')} "
            f"| {_r(m.get('step_time_s'), e.get('step_time_s'))} "
            f"| {_f(m.get('tokens_per_s'), ',.0f')} |")
    notes = [f"- {r['method']} {r['seq_len']} x {r['batch_size']}: {r['error']}" for r in results if r.get("error")]
    if notes:
        lines += ["", "Notes:", *notes]
    return "\n".join(lines) + "\n"


def save_qlora_base(model: str, folder: Path) -> Path:
    """Random-init weights of ``model`` saved once as safetensors (the trial reloads them in 4 bits)."""
    import torch
    import transformers

    from gpuwork.facts.model import load_config

    config, _ = load_config(model)
    hf = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(dict(config))
    torch.manual_seed(0)
    with torch.device("cuda"):
        base = transformers.AutoModelForCausalLM.from_config(hf, dtype=torch.bfloat16)
    base.save_pretrained(str(folder))
    del base
    torch.cuda.empty_cache()
    return folder


def run_case(case: dict[str, Any], args: argparse.Namespace, qlora_dir: Path | None) -> dict[str, Any]:
    import torch

    from gpuwork.facts.catalog import match_gpu_name
    from gpuwork.measure.trial import run_trial
    from gpuwork.plan import TrainPlan
    from gpuwork.sizing import estimate_memory

    plan = TrainPlan(model=case["model"], method=case["method"], precision=case["precision"],
                     seq_len=case["seq_len"], batch_size=case["batch_size"], attention="sdpa", lora_r=16,
                     lora_targets="all-linear")
    result: dict[str, Any] = {**case, "plan": plan.as_dict()}
    est = estimate_memory(plan)
    result["estimated"] = {"allocated_bytes": est.peak_allocated_bytes, "reserved_bytes": est.peak_reserved_bytes,
                           "device_bytes": est.device_total_bytes, "peak_phase": est.peak_phase}
    device_used = [0]

    def on_step(_: Any) -> None:
        free, total = torch.cuda.mem_get_info()
        device_used[0] = max(device_used[0], total - free)

    trial_plan = plan.replace(model=str(qlora_dir)) if case["method"] == "qlora" and qlora_dir else plan
    started = time.perf_counter()
    record = run_trial(trial_plan, steps=args.steps, warmup=args.warmup, device="cuda", checkpoint=False,
                       callbacks=[on_step])
    result["seconds"] = time.perf_counter() - started
    result["fits"] = record.fits
    result["environment"] = record.as_dict()["environment"]
    s = record.summary
    result["measured"] = {
        "allocated_bytes": s.cuda_peak_allocated_bytes if s else None,
        "reserved_bytes": s.cuda_peak_reserved_bytes if s else None,
        "device_bytes": device_used[0] or None,
        "peak_trial_bytes": record.peak_trial_memory_bytes,
        "step_time_s": s.median_step_time_s if s else None, "p90_step_time_s": s.p90_step_time_s if s else None,
        "tokens_per_s": s.tokens_per_s if s else None,
    }
    if record.error:
        result["error"] = record.error
    result["substitutions"] = list(record.protocol.substitutions)
    gpu = match_gpu_name(record.environment.device_name, record.environment.device_total_bytes)
    if gpu is not None:
        try:
            from gpuwork.sizing import estimate_time

            te = estimate_time(plan, gpu)
            result["estimated"].update({"step_time_s": te.step_time_s, "tokens_per_s": te.tokens_per_s,
                                        "mfu": te.mfu.value, "gpu_id": gpu.gpu_id})
            if s is not None:
                result["measured"]["mfu"] = (te.flops_per_token.model * s.tokens_per_s / te.peak_flops_per_gpu)
        except ImportError:
            pass
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("gpu_check: torch is not installed: no CUDA GPU can be used", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print(f"gpu_check: no CUDA GPU: torch {torch.__version__} sees none (CUDA build: "
              f"{torch.version.cuda or 'no'}); run this on a machine with an NVIDIA GPU", file=sys.stderr)
        return 1
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    out = Path(args.out)
    json_path = Path(args.json) if args.json else out.with_suffix(".json")
    started = time.perf_counter()
    results: list[dict[str, Any]] = []
    env: dict[str, Any] | None = None
    grid = cases(args)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="gpuwork-gpu-check-"))
    qlora_dir: Path | None = None
    print(f"gpu_check: {torch.cuda.get_device_name(0)}, {len(grid)} cases, budget {args.budget_s:.0f} s",
          flush=True)

    def write() -> None:
        elapsed = time.perf_counter() - started
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(markdown(results, env, elapsed))
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps({"environment": env, "elapsed_s": elapsed, "results": results}, indent=1))

    try:
        for case in grid:
            if time.perf_counter() - started > args.budget_s:
                results.append({**case, "fits": None, "status": "skipped",
                                "error": f"skipped: the {args.budget_s:.0f} s budget was spent"})
                continue
            if case["method"] == "qlora" and qlora_dir is None:
                t = time.perf_counter()
                qlora_dir = save_qlora_base(case["model"], work / "qlora-base")
                print(f"  saved a random-init {case['model']} for QLoRA in {time.perf_counter() - t:.0f} s", flush=True)
            try:
                result = run_case(case, args, qlora_dir)
                env = env or result.get("environment")
            except Exception as exc:  # noqa: BLE001 - one case failing must not stop the grid
                result = {**case, "fits": None, "status": "error",
                          "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300],
                          "traceback": traceback.format_exc()[-2000:]}
            torch.cuda.empty_cache()
            results.append(result)
            m, e = result.get("measured") or {}, result.get("estimated") or {}
            print(f"  {case['method']:5s} {case['model']:14s} {case['seq_len']:>5} x {case['batch_size']}: "
                  f"{'fits' if result.get('fits') else result.get('status', 'OOM')}, alloc {_g(m.get('allocated_bytes'))} "
                  f"(est {_g(e.get('allocated_bytes'))}) GiB, reserved {_g(m.get('reserved_bytes'))} "
                  f"(est {_g(e.get('reserved_bytes'))}) GiB, step {m.get('step_time_s') or 0:.3f} s "
                  f"(est {e.get('step_time_s') or 0:.3f} s), {result.get('seconds', 0):.0f} s", flush=True)
            write()
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
        elif qlora_dir is not None:
            shutil.rmtree(qlora_dir, ignore_errors=True)
    write()
    print(markdown(results, env, time.perf_counter() - started))
    print(f"wrote {out} and {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
