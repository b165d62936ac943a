#!/usr/bin/env python
"""Measured vs estimated memory and step time on one CUDA GPU: kernels, calibration, a Trainer run, a grid of trials.

Sections, in this order (``--sections`` picks some):

- kernels: achieved bf16 GEMM TFLOPS at 4096^3, 8192^3 and the op model's projection shapes
  (m = 4096 tokens; n, k = 4096, 14336, 1024; a LoRA rank-16 GEMM) next to the op model's rate for
  the shape (data/rates.csv x ``gpuwork.estimate.steptime.wave_efficiency``); copy bandwidth next
  to rates.csv; the host's eager dispatch cost per op next to kernels.csv; SDPA attention forward and
  backward TFLOPS as torch picks the kernel, then restricted to FlashAttention-2 and to cuDNN's attention one at
  a time, each next to the curve a plan of that ``sdpa_backend`` is priced with. The benchmark functions are
  ``gpuwork.measure.cpu_rates``'s, which run on any device.
- calibration: a real trial at shape A fits the op model's one factor (``calibrate_on``), which
  predicts shape B (another sequence length and batch); B is run and the error printed.
- trainer: a real ``transformers.Trainer`` run with ``gpuwork.measure.hf.GpuworkCallback`` for a
  few steps: the record's median step, tokens/s and memory, next to ``estimate_time``.
- grid: the trials below.

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

Budget: built to finish in under 8 minutes on one H200 (``--budget-s`` stops starting new grid cases;
the kernels, calibration and trainer sections take about a minute and a half).
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
SECTIONS = ("kernels", "calibration", "trainer", "grid")
# (m tokens, n out, k in): the classic squares, then Llama-3.1-8B's projections at 4096 tokens per micro-batch
# (q/o: 4096 -> 4096, k/v with GQA: 4096 -> 1024, MLP up/gate: 4096 -> 14336, down: 14336 -> 4096, LoRA A r=16)
GPU_GEMM_SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (4096, 1024, 4096), (4096, 14336, 4096),
                   (4096, 4096, 14336), (4096, 16, 4096))
GPU_COPY_BYTES = 2**30
GPU_SDPA_SHAPE = (2, 32, 4096, 128)  # batch, heads, sequence, head dim (the FA2 measurements of rates' sources)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
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
    p.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=list(SECTIONS),
                   help="what to run, in this order (default: all)")
    p.add_argument("--cal-model", default=FULL_MODEL, help=f"model of the calibration section (default {FULL_MODEL})")
    p.add_argument("--cal-methods", nargs="+", default=["lora", "full"], choices=["lora", "full"])
    p.add_argument("--cal-shapes", nargs=2, default=["512x4", "2048x2"], metavar=("AxB", "AxB"),
                   help="seq x batch of the measured shape A and the predicted shape B (default 512x4 2048x2)")
    p.add_argument("--cal-steps", type=int, default=8, help="measured steps per calibration trial (default 8)")
    p.add_argument("--trainer-model", default=FULL_MODEL, help=f"model of the Trainer section (default {FULL_MODEL})")
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


# -- kernels ---------------------------------------------------------------------------------------


def reference_device(gpu: Any, rates: Any) -> Any:
    """The op model's rates for ``gpu`` (rates.csv, or derived from its datasheet when it has no row)."""
    from gpuwork.estimate.timing import derived_device

    return rates.device(gpu.gpu_id) or derived_device(gpu, rates)


def kernel_rows(device: Any, gpu: Any = None, *, dtype: str = "bf16", gemm_shapes=GPU_GEMM_SHAPES,
                copy_bytes: int = GPU_COPY_BYTES, sdpa_shape=GPU_SDPA_SHAPE, repeats: int = 5) -> list[dict[str, Any]]:
    """Measured kernel rates on ``device`` next to what the op model prices for ``gpu`` (None: no reference).

    Rows: one per GEMM shape (FLOP/s), the copy (bytes/s), the dispatch per op (seconds), SDPA forward
    and backward (FLOP/s). ``model`` is the op model's figure and ``basis`` says where it comes from.
    """
    from gpuwork.estimate.steptime import attention_flops_s, gemm_flops_s
    from gpuwork.facts.rates import load_rates
    from gpuwork.measure.cpu_rates import copy_rate, dispatch_cost, gemm_rate, sdpa_rate

    rates = load_rates()
    ref = reference_device(gpu, rates) if gpu is not None else None
    rows: list[dict[str, Any]] = []

    def row(kernel: str, shape: str, unit: str, measured: float, model: float | None, basis: str) -> None:
        rows.append({"kernel": kernel, "shape": shape, "unit": unit, "measured": measured, "model": model,
                     "ratio": measured / model if model else None, "basis": basis})

    for m, n, k in gemm_shapes:
        g = gemm_rate(m, n, k, dtype, device=device, repeats=repeats)
        model = basis = None
        if ref is not None:  # as price_ops prices it: the shape model under the card's back-to-back rate
            model, basis = gemm_flops_s(gpu, ref, rates, m, n, k, dtype)
        row(f"GEMM {dtype}", f"{m} x {n} x {k}", "TFLOPS", g.flops_s, model, basis or "")
    copy = copy_rate(copy_bytes, device=device, repeats=repeats)
    row("copy (clone)", f"{copy_bytes / 2**20:g} MiB", "GB/s", copy, ref.mem_bw_bytes_s if ref else None,
        ref.basis.get("mem_bw", "") if ref else "")
    d = dispatch_cost(device=device, repeats=repeats)
    bare_us = rates.kernel("launch_overhead_eager_nograd_us")
    # one forward GEMM and two backward ones per nn.Linear: the mean of the phases' costs the step model charges
    module_us = (rates.kernel("launch_overhead_eager_us") + 2 * rates.kernel("launch_overhead_eager_backward_us")) / 3
    row("eager dispatch per op", "1-element mul", "us", d.eager_us * 1e-6, bare_us * 1e-6,
        "kernels.csv launch_overhead_eager_nograd_us (the bare op)")
    row("eager dispatch per kernel", "nn.Linear fwd + bwd", "us", d.per_kernel_us * 1e-6, module_us * 1e-6,
        "kernels.csv launch_overhead_eager_us + 2 x launch_overhead_eager_backward_us, / 3")
    b, h, seq, hd = sdpa_shape
    fwd, bwd = sdpa_rate((b, h, seq, hd), dtype, device=device, repeats=repeats)
    for name, value in (("fwd", fwd), ("bwd", bwd)):
        model, basis = None, ""
        if ref is not None:  # the rate price_ops charges a fused attention op (FlashAttention-2's, as a plan's)
            model, basis = attention_flops_s(gpu, ref, rates, _attention_op(name, dtype, seq, hd))
        row(f"SDPA {name} (causal)", f"b{b} h{h} s{seq} d{hd}", "TFLOPS", value, model, basis)
    if dtype != "fp32" and getattr(device, "type", str(device)).startswith("cuda"):
        rows += _sdpa_backend_rows(device, gpu, rates, dtype, sdpa_shape, repeats)
    return rows


def _attention_op(attention_pass: str, dtype: str, seq_len: int, head_dim: int, kernel: str = "") -> Any:
    """One causal fused attention kernel as the step model lists it (its FLOPs do not change its rate)."""
    from gpuwork.estimate.op import Kind, Op, Phase

    phase = Phase.FORWARD if attention_pass == "fwd" else Phase.BACKWARD
    return Op(name="attention", kind=Kind.ATTENTION, phase=phase, flops=0.0, bytes=0.0, launches=1, count=1,
              dtype=dtype, m=seq_len, n=head_dim, attention_pass=attention_pass, causal=True, kernel=kernel)


# torch SDPA kernels timed one at a time on CUDA: the plan's sdpa_backend value and torch's member name
SDPA_BACKENDS = (("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"))


def _sdpa_backend_rows(device: Any, gpu: Any, rates: Any, dtype: str, shape: tuple[int, int, int, int],
                       repeats: int) -> list[dict[str, Any]]:
    """SDPA restricted to each kernel in SDPA_BACKENDS against the curve the step model prices a plan of that
    sdpa_backend with on ``gpu`` (gpuwork.estimate.sdpa_backend.sdpa_kernels: torch's own rows of that kernel,
    then FlashAttention-2's). A kernel torch refuses here is a row with no figure and its reason."""
    from gpuwork.estimate.sdpa_backend import SDPA_PREFIX
    from gpuwork.estimate.steptime import attention_flops_s
    from gpuwork.measure.cpu_rates import sdpa_rate

    b, h, seq, hd = shape
    out: list[dict[str, Any]] = []
    ref = reference_device(gpu, rates) if gpu is not None else None
    for value, member in SDPA_BACKENDS:
        try:
            measured: tuple[float, float] | None = sdpa_rate(shape, dtype, device=device, repeats=repeats,
                                                             backend=member)
            why = ""
        except RuntimeError as exc:  # torch: no kernel of this backend takes the call here
            measured, why = None, str(exc).strip().splitlines()[0][:120] if str(exc).strip() else "refused"
        for i, name in enumerate(("fwd", "bwd")):
            model, basis = None, why
            if ref is not None and measured is not None:
                model, basis = attention_flops_s(gpu, ref, rates,
                                                 _attention_op(name, dtype, seq, hd, SDPA_PREFIX + value))
            out.append({"kernel": f"SDPA {name} (causal, {value} only)", "shape": f"b{b} h{h} s{seq} d{hd}",
                        "unit": "TFLOPS", "measured": measured[i] if measured is not None else None,
                        "model": model, "ratio": measured[i] / model if measured is not None and model else None,
                        "basis": basis})
    return out


def _value(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "TFLOPS":
        return f"{v / 1e12:.1f}" if v >= 1e11 else f"{v / 1e12:.3g}"  # a CPU's few GFLOP/s stay visible
    return {"GB/s": f"{v / 1e9:.0f}", "us": f"{v * 1e6:.2f}"}.get(unit, f"{v:.3g}")


def kernels_markdown(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["## Kernels: measured vs the op model's rates", "",
             "| kernel | shape | unit | measured | op model | ratio | op model basis |", "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['shape']} | {r['unit']} | {_value(r['measured'], r['unit'])} "
                     f"| {_value(r['model'], r['unit'])} | {_f(r['ratio'], '.2f')} | {r['basis']} |")
    return lines


# -- calibration -----------------------------------------------------------------------------------


def _shape(text: str) -> tuple[int, int]:
    seq, batch = str(text).lower().split("x")
    return int(seq), int(batch)


def calibration_case(plan_a: Any, plan_b: Any, *, device: Any, gpu: Any, device_rates: Any, steps: int = 8,
                     warmup: int = 2, clock: Any = time.perf_counter) -> dict[str, Any]:
    """Run a trial at ``plan_a``, fit the op model's factor, predict ``plan_b``, run it: the figures and the error."""
    from gpuwork.measure.cpu_rates import calibrate_on
    from gpuwork.measure.trial import run_trial

    measured = []
    environment = None
    for plan in (plan_a, plan_b):
        record = run_trial(plan, steps=steps, warmup=warmup, device=device, checkpoint=False, clock=clock)
        if not record.fits or record.summary is None:
            raise RuntimeError(f"the calibration trial at {plan.seq_len} x {plan.batch_size} did not run: "
                               f"{record.error}")
        measured.append(record.summary.median_step_time_s)
        environment = environment or record.as_dict()["environment"]
    cal = calibrate_on(plan_a, measured[0], plan_b, gpu, device_rates)
    return {"method": plan_a.method.value, "model": plan_a.model, "precision": plan_a.precision.value,
            "a": [plan_a.seq_len, plan_a.batch_size], "b": [plan_b.seq_len, plan_b.batch_size],
            "measured_a_s": measured[0], "measured_b_s": measured[1], "priced_a_s": cal.priced_measured_s,
            "uncalibrated_b_s": cal.uncalibrated.total_s, "factor": cal.factor, "calibrated_b_s": cal.step_s,
            "error": cal.step_s / measured[1] - 1, "uncalibrated_error": cal.uncalibrated.total_s / measured[1] - 1,
            "environment": environment}


def calibration_markdown(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["## Calibration: one factor fitted at A predicts B", "",
             "| method | model | A (seq x batch) | B | measured A (s) | priced A (s) | factor | measured B (s) "
             "| uncalibrated B (s) | error | calibrated B (s) | error |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r.get("error_text"):
            lines.append(f"| {r['method']} | {r['model']} | - | - | - | - | - | - | - | - | - | {r['error_text']} |")
            continue
        lines.append(f"| {r['method']} | {r['model']} | {r['a'][0]} x {r['a'][1]} | {r['b'][0]} x {r['b'][1]} "
                     f"| {r['measured_a_s']:.4f} | {r['priced_a_s']:.4f} | {r['factor']:.3f} | {r['measured_b_s']:.4f} "
                     f"| {r['uncalibrated_b_s']:.4f} | {r['uncalibrated_error']:+.1%} | {r['calibrated_b_s']:.4f} "
                     f"| {r['error']:+.1%} |")
    return lines


# -- a real Trainer with the callback --------------------------------------------------------------


def trainer_case(model: str, *, device: Any, seq_len: int, batch_size: int, steps: int = 5, warmup: int = 2,
                 lora: bool = True, gpu: Any = None, out_dir: str | Path | None = None) -> dict[str, Any]:
    """A ``transformers.Trainer`` run of ``model`` (random weights; LoRA on all linears when ``lora``) with
    ``GpuworkCallback`` measuring ``steps`` steps after ``warmup``: its record's figures (and ``estimate_time``
    of the record's plan on ``gpu`` when given)."""
    import torch
    import transformers

    from gpuwork.facts.model import load_config
    from gpuwork.measure.hf import GpuworkCallback

    dev = torch.device(device)
    config, _ = load_config(model)
    hf_config = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(dict(config))
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    torch.manual_seed(0)
    net = transformers.AutoModelForCausalLM.from_config(hf_config, dtype=dtype, attn_implementation="sdpa")
    if lora:
        from peft import LoraConfig, get_peft_model

        net = get_peft_model(net, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
    generator = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(batch_size * (warmup + steps + 4)):
        ids = torch.randint(0, hf_config.vocab_size, (seq_len,), generator=generator)
        rows.append({"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()})
    callback = GpuworkCallback(steps=steps, warmup=warmup, checkpoint=False, evaluate=False)
    with tempfile.TemporaryDirectory(prefix="gpuwork-trainer-") as tmp:
        args = transformers.TrainingArguments(
            output_dir=str(out_dir or tmp), per_device_train_batch_size=batch_size, max_steps=warmup + steps + 4,
            learning_rate=1e-4, report_to=[], save_strategy="no", logging_steps=1000, disable_tqdm=True,
            use_cpu=dev.type != "cuda", dataloader_num_workers=0, seed=0)
        trainer = transformers.Trainer(model=net, args=args, train_dataset=rows, callbacks=[callback])
        trainer.train()
    record = callback.record
    s = record.summary
    result = {"model": model, "method": "lora" if lora else "full", "seq_len": seq_len, "batch_size": batch_size,
              "device": str(dev), "steps": len(record.measured), "median_step_s": s.median_step_time_s if s else None,
              "tokens_per_s": s.tokens_per_s if s else None,
              "cuda_peak_allocated_bytes": s.cuda_peak_allocated_bytes if s else None,
              "cuda_peak_reserved_bytes": s.cuda_peak_reserved_bytes if s else None,
              "rss_peak_bytes": s.rss_peak_bytes if s else None, "peak_trial_bytes": record.peak_trial_memory_bytes,
              # the plan the estimate prices, as the callback read it from the run
              "plan": {k: str(getattr(getattr(record.plan, k), "value", getattr(record.plan, k)))
                       for k in ("precision", "attention", "optimizer_impl", "grad_checkpointing")}}
    if gpu is not None and s is not None:
        from gpuwork.sizing import estimate_time

        result["estimated_step_s"] = estimate_time(record.plan, gpu).step_time_s
    return result


def trainer_markdown(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["## Trainer run measured by GpuworkCallback", "",
             "| method | model | seq x batch | device | steps | median step (s) | step est (s) | ratio | tokens/s "
             "| alloc peak | reserved peak | RSS peak | plan priced |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        if r.get("error_text"):
            lines.append(f"| {r.get('method', '-')} | {r.get('model', '-')} | - | - | - | - | - | - | - | - | - "
                         f"| {r['error_text']} | - |")
            continue
        lines.append(f"| {r['method']} | {r['model']} | {r['seq_len']} x {r['batch_size']} | {r['device']} "
                     f"| {r['steps']} | {_f(r['median_step_s'], '.4f')} | {_f(r.get('estimated_step_s'), '.4f')} "
                     f"| {_r(r['median_step_s'], r.get('estimated_step_s'))} | {_f(r['tokens_per_s'], ',.0f')} "
                     f"| {_g(r['cuda_peak_allocated_bytes'])} | {_g(r['cuda_peak_reserved_bytes'])} "
                     f"| {_g(r['rss_peak_bytes'])} | {_plan_cell(r.get('plan'))} |")
    return lines


def _plan_cell(plan: dict[str, str] | None) -> str:
    """The priced plan's precision, attention, optimizer implementation and checkpointing, as the callback read
    them from the run (a row of an older JSON has none: '-')."""
    if not plan:
        return "-"
    return ", ".join(f"{k} {v}" for k, v in plan.items())


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def markdown(results: list[dict[str, Any]], env: dict[str, Any] | None, elapsed_s: float,
             kernels: list[dict[str, Any]] | None = None, calibration: list[dict[str, Any]] | None = None,
             trainer: list[dict[str, Any]] | None = None) -> str:
    lines = ["# gpuwork GPU check: measured vs estimated", ""]
    if env:
        lines += environment_lines(env)
    for rows, render in ((kernels, kernels_markdown), (calibration, calibration_markdown),
                         (trainer, trainer_markdown)):
        if rows:
            lines += ["", *render(rows), ""]
    if not results:
        return "\n".join(lines) + "\n"
    lines += ["## Trials: memory and step time", ""]
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
    done: dict[str, list[dict[str, Any]]] = {"kernels": [], "calibration": [], "trainer": []}
    env: dict[str, Any] | None = None
    grid = cases(args) if "grid" in args.sections else []
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="gpuwork-gpu-check-"))
    qlora_dir: Path | None = None
    from gpuwork.facts.catalog import match_gpu_name
    from gpuwork.plan import TrainPlan

    name = torch.cuda.get_device_name(0)
    gpu = match_gpu_name(name, torch.cuda.get_device_properties(0).total_memory)
    print(f"gpu_check: {name} ({gpu.gpu_id if gpu else 'not in data/gpus.csv'}), sections {' '.join(args.sections)}, "
          f"{len(grid)} grid cases, budget {args.budget_s:.0f} s", flush=True)

    def write() -> None:
        elapsed = time.perf_counter() - started
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(markdown(results, env, elapsed, **done))
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps({"environment": env, "elapsed_s": elapsed, **done, "results": results},
                                        indent=1, default=str))

    if "kernels" in args.sections:
        try:
            done["kernels"] = kernel_rows("cuda", gpu)
        except Exception as exc:  # noqa: BLE001 - the other sections still run
            done["kernels"] = [{"kernel": "failed", "shape": "-", "unit": "", "measured": None, "model": None,
                                "ratio": None, "basis": _failure(exc)}]
        print("\n".join(kernels_markdown(done["kernels"])), flush=True)
        torch.cuda.empty_cache()
        write()
    if "calibration" in args.sections:
        (seq_a, batch_a), (seq_b, batch_b) = (_shape(x) for x in args.cal_shapes)
        for method in args.cal_methods:
            plan_a = TrainPlan(model=args.cal_model, method=method, precision="bf16" if method == "lora" else
                               "bf16-mixed", seq_len=seq_a, batch_size=batch_a, attention="sdpa",
                               lora_targets="all-linear")
            try:
                if gpu is None:
                    raise RuntimeError(f"{name} is not in data/gpus.csv: no op model rates to calibrate")
                from gpuwork.facts.rates import load_rates

                row = calibration_case(plan_a, plan_a.replace(seq_len=seq_b, batch_size=batch_b), device="cuda",
                                       gpu=gpu, device_rates=reference_device(gpu, load_rates()),
                                       steps=args.cal_steps, warmup=2)
                env = env or row.pop("environment", None)
                row.pop("environment", None)
            except Exception as exc:  # noqa: BLE001
                row = {"method": method, "model": args.cal_model, "error_text": _failure(exc)}
            done["calibration"].append(row)
            torch.cuda.empty_cache()
            write()
        print("\n".join(calibration_markdown(done["calibration"])), flush=True)
    if "trainer" in args.sections:
        try:
            row = trainer_case(args.trainer_model, device="cuda", seq_len=1024, batch_size=4, steps=5, warmup=2,
                               gpu=gpu)
        except Exception as exc:  # noqa: BLE001
            row = {"method": "lora", "model": args.trainer_model, "error_text": _failure(exc)}
        done["trainer"].append(row)
        torch.cuda.empty_cache()
        print("\n".join(trainer_markdown(done["trainer"])), flush=True)
        write()

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
    print(markdown(results, env, time.perf_counter() - started, **done))
    print(f"wrote {out} and {json_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
