"""How close the estimates are: published measurements, fake-tensor traces and real CPU steps.

``gpuwork accuracy --out docs/accuracy.md`` regenerates the project's accuracy page. Each published
case is compared with the total that matches the source's metric (nvidia-smi → device total;
``max_memory_reserved`` → reserved; ``max_memory_allocated`` → allocated).
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass
from typing import Any

from gpuwork.estimate.memory import GIB, MIB
from gpuwork.estimate.timing import mfu_from_measurement
from gpuwork.facts.catalog import GB, GpuClass, GpuSpec, Link, get_gpu
from gpuwork.plan import TrainPlan
from gpuwork.sizing import estimate_memory, estimate_time

METRICS = {
    "device": ("device_total_bytes", "nvidia-smi (device total)"),
    "reserved": ("peak_reserved_bytes", "torch max_memory_reserved"),
    "allocated": ("peak_allocated_bytes", "torch max_memory_allocated"),
}


@dataclass(frozen=True)
class PublishedCase:
    name: str
    plan: TrainPlan
    measured_bytes: int
    metric: str  # key of METRICS
    source: str
    note: str = ""


_BERT = dict(model="bert-large-uncased", task="seq-cls", seq_len=512, method="full", attention="eager",
             precision="fp32")
_BERT_SRC = "transformers docs, model_memory_anatomy / perf_train_gpu_one (V100 16 GB, HF Trainer)"
_PEFT = dict(model="llama-3.2-3b", precision="bf16", batch_size=4, seq_len=768, attention="sdpa")
_PEFT_SRC = "huggingface/peft method_comparison/MetaMathQA results (L40S, accelerator_memory_max)"

PUBLISHED_CASES: tuple[PublishedCase, ...] = (
    PublishedCase("bert-large bs4 fp32 AdamW", TrainPlan(**_BERT, batch_size=4), 14949 * MIB, "device", _BERT_SRC),
    PublishedCase("bert-large bs1 GA4", TrainPlan(**_BERT, batch_size=1, grad_accum=4), 8681 * MIB, "device",
                  _BERT_SRC),
    PublishedCase("bert-large bs1 GA4 GC", TrainPlan(**_BERT, batch_size=1, grad_accum=4, grad_checkpointing=True),
                  6775 * MIB, "device", _BERT_SRC),
    PublishedCase("bert-large bs4 fp16 AMP", TrainPlan(**{**_BERT, "precision": "fp16-mixed"}, batch_size=4),
                  13939 * MIB, "device", _BERT_SRC),
    PublishedCase("bert-large bs1 GA4 GC fp16", TrainPlan(**{**_BERT, "precision": "fp16-mixed"}, batch_size=1,
                                                          grad_accum=4, grad_checkpointing=True),
                  7275 * MIB, "device", _BERT_SRC),
    PublishedCase("bert-large bs4 Adafactor", TrainPlan(**_BERT, batch_size=4, optimizer="adafactor"),
                  12295 * MIB, "device", _BERT_SRC),
    PublishedCase("bert-large bs1 GA4 GC fp16 Adafactor",
                  TrainPlan(**{**_BERT, "precision": "fp16-mixed"}, batch_size=1, grad_accum=4,
                            grad_checkpointing=True, optimizer="adafactor"), 4847 * MIB, "device", _BERT_SRC),
    PublishedCase("bert-large bs4 Adam8bit", TrainPlan(**_BERT, batch_size=4, optimizer="adamw-8bit"),
                  13085 * MIB, "device", _BERT_SRC),
    PublishedCase("bert-large bs1 GA4 GC fp16 Adam8bit",
                  TrainPlan(**{**_BERT, "precision": "fp16-mixed"}, batch_size=1, grad_accum=4,
                            grad_checkpointing=True, optimizer="adamw-8bit"), 5363 * MIB, "device", _BERT_SRC),
    PublishedCase("Llama-3.2-3B full FT bf16", TrainPlan(**_PEFT, method="full"), int(36.20 * GIB), "reserved",
                  _PEFT_SRC, "batches bucketed up to 768 tokens"),
    PublishedCase("Llama-3.2-3B LoRA r32 q,v", TrainPlan(**_PEFT, method="lora", lora_r=32, lora_alpha=64),
                  int(20.76 * GIB), "reserved", _PEFT_SRC),
    PublishedCase("Llama-3.2-3B LoRA r64 q,v", TrainPlan(**_PEFT, method="lora", lora_r=64, lora_alpha=128),
                  int(21.00 * GIB), "reserved", _PEFT_SRC),
    PublishedCase("Llama-3.2-3B LoRA r10 MLP", TrainPlan(**_PEFT, method="lora", lora_r=10, lora_alpha=20,
                                                         lora_targets="gate_proj,up_proj,down_proj"),
                  int(23.00 * GIB), "reserved", _PEFT_SRC),
)


def published_rows() -> list[dict[str, Any]]:
    """Estimate vs measured for every published case (bytes and relative error)."""
    rows = []
    for case in PUBLISHED_CASES:
        est = estimate_memory(case.plan)
        attr, label = METRICS[case.metric]
        value = getattr(est, attr)
        rows.append({"case": case.name, "metric": label, "measured_bytes": case.measured_bytes,
                     "estimated_bytes": value, "error": value / case.measured_bytes - 1,
                     "source": case.source, "note": case.note})
    return rows


def trace_grid(models: tuple[str, ...] = ("tiny-llama", "tiny-qwen2", "tiny-mistral", "tiny-gpt2", "tiny-bert"),
               shapes: tuple[tuple[int, int], ...] = ((1, 64), (2, 256), (4, 512))) -> list[TrainPlan]:
    """Small configurations where estimate and trace are compared (full/LoRA/freeze x fp32/bf16 x
    shapes x checkpointing x attention)."""
    plans = []
    for model, method, precision, (batch, seq), ckpt, attention in itertools.product(
            models, ("full", "lora", "freeze"), ("fp32", "bf16"), shapes, (False, True), ("sdpa", "eager")):
        plans.append(TrainPlan(model=model, method=method, precision=precision, batch_size=batch, seq_len=seq,
                               grad_checkpointing=ckpt, attention=attention, lora_targets="all-linear"))
    return plans


def compare_with_trace(plan: TrainPlan) -> dict[str, Any]:
    """Analytic vs traced allocated peak: ``MemoryEstimate.traceable_bytes`` (no cuBLAS workspace, which
    tracing has not) against the traced live-tensor peak."""
    from gpuwork.measure.trace import trace_memory

    traced = trace_memory(plan)
    est = estimate_memory(plan)
    analytic = est.traceable_bytes
    return {"plan": plan, "traced_bytes": traced.peak_allocated_bytes, "estimated_bytes": analytic,
            "error": analytic / traced.peak_allocated_bytes - 1, "traced_phase": traced.peak_phase,
            "estimated_phase": est.peak_phase}


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def accuracy_report(grid: bool = False) -> str:
    """Markdown page: published cases, and (grid=True) the traced grid summary."""
    lines = [
        "# Accuracy of the memory estimate",
        "",
        "Generated by `gpuwork accuracy --out docs/accuracy.md` (add `--grid` for the traced grid).",
        "",
        "## Published measurements",
        "",
        "Each case is compared with the total that matches how the source measured.",
        "",
        "| case | metric | measured GiB | estimated GiB | error | source |",
        "|---|---|---:|---:|---:|---|",
    ]
    rows = published_rows()
    for r in rows:
        lines.append(f"| {r['case']} | {r['metric']} | {r['measured_bytes'] / GIB:.2f} | "
                     f"{r['estimated_bytes'] / GIB:.2f} | {_pct(r['error'])} | {r['source']} |")
    errors = [abs(r["error"]) for r in rows]
    lines += ["", f"Median absolute error {statistics.median(errors):.1%}, max {max(errors):.1%} "
                  f"over {len(rows)} cases.", ""]
    lines += [
        "Reading the BERT rows: they were measured with PyTorch 1.x and the HF Trainer of 2021, where",
        "`zero_grad()` kept gradients allocated between steps (set_to_none became the default in",
        "PyTorch 2.0), CUDA loaded every kernel eagerly (context 1,343 MB on that V100 vs ~0.5-1 GiB",
        "with lazy loading) and eager attention fragmented the cache; the estimator models current",
        "PyTorch, so it reads 5-20 % low on those rows and within a few percent on the PEFT rows.",
        "",
    ]
    if grid:
        lines += _grid_section()
    return "\n".join(lines) + "\n"


def _grid_section() -> list[str]:
    results = [compare_with_trace(p) for p in trace_grid()]
    errors = [abs(r["error"]) for r in results]
    lines = [
        "## Analytic estimate vs fake-tensor trace",
        "",
        f"{len(results)} configurations (tiny Llama, Qwen2, Mistral, GPT-2 and BERT configs; full / LoRA all-linear / "
        "freeze; fp32 / bf16; three batch x sequence shapes; checkpointing on/off; SDPA / eager).",
        "",
        f"Median absolute error {statistics.median(errors):.2%}, max {max(errors):.2%}, "
        f"{sum(e > 0.05 for e in errors)} above 5 %.",
        "",
        "| model | method | precision | batch x seq | ckpt | attention | traced MiB | estimated MiB | error |",
        "|---|---|---|---|---|---|---:|---:|---:|",
    ]
    for r in results:
        p = r["plan"]
        lines.append(f"| {p.model} | {p.method} | {p.precision} | {p.batch_size} x {p.seq_len} | "
                     f"{'on' if p.grad_checkpointing else 'off'} | {p.attention} | {r['traced_bytes'] / MIB:.1f} | "
                     f"{r['estimated_bytes'] / MIB:.1f} | {_pct(r['error'])} |")
    return lines + [""]


# -- accuracy against published measurements ---------------------------------------------------------

# The HF transformers perf docs ran on a V100 16 GB, which gpus.csv does not list (the catalog is of
# GPUs rented today). Its figures, from NVIDIA's Tesla V100 datasheet (SXM2): 125 TFLOPS FP16 tensor
# (Volta has no sparsity, so this is dense), 15.7 TFLOPS FP32, 900 GB/s HBM2, 16 GB; Volta has no
# BF16 at all (bf16_dense_flops holds the FP32 rate, a bound no bf16 run beats); nvidia-smi shows
# 16,160 MiB (torch reports total_memory=16160MB for Tesla V100-SXM2-16GB in public logs).
V100_SXM2_16GB = GpuSpec(
    gpu_id="v100_sxm2_16gb", display_name="Tesla V100 SXM2 16GB", vendor="NVIDIA", architecture="Volta GV100",
    gpu_class=GpuClass.SERVER, form_factor="SXM2", memory_bytes=16 * GB, mem_bw_bytes_s=900e9,
    bf16_dense_flops=15.7e12, fp16_dense_flops=125e12, fp8_dense_flops=None, fp32_flops=15.7e12,
    link=Link.PCIE, link_bw_bytes_s=15.75e9, pcie_gen=3, compute_capability="7.0", tdp_w=300, status="V",
    sources=("NVIDIA Tesla V100 datasheet",), notes="accuracy cases only; NVLink2 cube-mesh not modelled",
    memory_total_mib=16160, memory_total_source="nvidia-smi",
)


@dataclass(frozen=True)
class TimeCase:
    """A published throughput measurement and the plan that reproduces its setup."""

    name: str
    source: str
    gpu: GpuSpec
    plan: TrainPlan
    metric: str  # "samples/s" or "tokens/s"
    measured: float
    measured_time_s: float | None = None  # the source's own run time, when it gives one
    samples: int | None = None  # samples in that run (for a predicted run time)


@dataclass(frozen=True)
class TimeAccuracyRow:
    """Prediction vs measurement for one case."""

    name: str
    source: str
    gpu: str
    metric: str
    measured: float
    predicted: float
    error: float  # predicted / measured − 1
    measured_time_s: float | None
    predicted_time_s: float | None
    mfu_used: float
    implied_mfu: float  # the MFU that would have reproduced the measurement

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


_HF_DOCS = ("huggingface/transformers docs model_memory_anatomy.md / perf_train_gpu_one "
            "(memory_formulas §5.1): bert-large-uncased, 512 samples of 512 tokens, HF Trainer")
_PEFT = ("huggingface/peft method_comparison/MetaMathQA results (memory_formulas §5.2): "
         "Llama-3.2-3B, bf16, batch 4, max 768 tokens (bucketed, most batches shorter)")


def time_cases() -> tuple[TimeCase, ...]:
    """The published cases of memory_formulas §5 that give a throughput."""
    bert = TrainPlan(model="bert-large-uncased", task="seq-cls", method="full", precision="fp32", seq_len=512,
                     batch_size=4, attention="eager", eval_fraction=0.0)
    ga = {"batch_size": 1, "grad_accum": 4}
    amp = {"precision": "fp16-mixed"}
    gc = {"grad_checkpointing": True}
    cases = [
        ("bs 4, fp32", {}, 57.82, 8.86),
        ("bs 1, GA 4", ga, 66.03, 7.75),
        ("bs 1, GA 4, gradient checkpointing", {**ga, **gc}, 85.47, 5.99),
        ("bs 4, fp16 AMP", amp, 27.46, 18.64),
        ("bs 1, GA 4, GC, fp16", {**ga, **gc, **amp}, 50.76, 10.09),
        ("bs 4, Adafactor", {"optimizer": "adafactor"}, 64.31, 7.96),
        ("bs 1, GA 4, GC, fp16, Adafactor", {**ga, **gc, **amp, "optimizer": "adafactor"}, 56.54, 9.06),
        ("bs 4, bnb Adam8bit", {"optimizer": "adamw-8bit"}, 55.95, 9.15),
        ("bs 1, GA 4, GC, fp16, Adam8bit", {**ga, **gc, **amp, "optimizer": "adamw-8bit"}, 49.46, 10.35),
    ]
    out = [TimeCase(f"bert-large {label}", _HF_DOCS, V100_SXM2_16GB, bert.replace(**changes), "samples/s",
                    samples_s, measured_time_s=time_s, samples=512)
           for label, changes, time_s, samples_s in cases]
    llama = TrainPlan(model="llama-3.2-3b", method="full", precision="bf16", seq_len=768, batch_size=4,
                      eval_fraction=0.0)
    l40s = get_gpu("l40s")
    out += [
        TimeCase("Llama-3.2-3B full fine-tuning", _PEFT, l40s, llama, "tokens/s", 2316),
        TimeCase("Llama-3.2-3B LoRA r32 q,v", _PEFT, l40s,
                 llama.replace(method="lora", lora_r=32, lora_alpha=64), "tokens/s", 7174),
        TimeCase("Llama-3.2-3B LoRA r64 q,v", _PEFT, l40s,
                 llama.replace(method="lora", lora_r=64, lora_alpha=128), "tokens/s", 7062),
        TimeCase("Llama-3.2-3B LoRA r10 MLP", _PEFT, l40s,
                 llama.replace(method="lora", lora_r=10, lora_alpha=20,
                               lora_targets=("gate_proj", "up_proj", "down_proj")), "tokens/s", 6309),
    ]
    return tuple(out)


def time_accuracy_rows(cases: tuple[TimeCase, ...] | None = None) -> list[TimeAccuracyRow]:
    """Predicted vs measured throughput for the published cases (default MFU, nothing fitted)."""
    rows = []
    for case in cases or time_cases():
        est = estimate_time(case.plan, case.gpu)
        per_sample = case.plan.seq_len
        predicted = est.tokens_per_s / per_sample if case.metric == "samples/s" else est.tokens_per_s
        measured_tokens_s = case.measured * per_sample if case.metric == "samples/s" else case.measured
        implied = mfu_from_measurement(case.plan, case.gpu, {"tokens_per_s": measured_tokens_s / case.plan.gpus},
                                  est.flops_per_token, est.peak_flops_per_gpu, est.optimizer_s).value
        predicted_time = case.samples / predicted if case.samples and case.metric == "samples/s" else None
        rows.append(TimeAccuracyRow(
            name=case.name, source=case.source, gpu=case.gpu.display_name, metric=case.metric,
            measured=case.measured, predicted=predicted, error=predicted / case.measured - 1,
            measured_time_s=case.measured_time_s, predicted_time_s=predicted_time, mfu_used=est.mfu.value,
            implied_mfu=implied))
    return rows


def time_accuracy_markdown(rows: list[TimeAccuracyRow] | None = None) -> str:
    """docs/time_accuracy.md: the table of time_accuracy_rows() with its sources."""
    rows = rows if rows is not None else time_accuracy_rows()
    lines = [
        "| case | GPU | metric | measured | predicted | error | run time measured / predicted (s) "
        "| MFU used | MFU implied |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        times = (f"{r.measured_time_s:.1f} / {r.predicted_time_s:.1f}"
                 if r.measured_time_s is not None and r.predicted_time_s is not None else "–")
        lines.append(f"| {r.name} | {r.gpu} | {r.metric} | {r.measured:,.2f} | {r.predicted:,.2f} | "
                     f"{r.error:+.0%} | {times} | {r.mfu_used:.2f} | {r.implied_mfu:.2f} |")
    errors = [abs(r.error) for r in rows]
    lines += ["", f"Median absolute error {sorted(errors)[len(errors) // 2]:.0%}, worst {max(errors):.0%} "
              f"over {len(rows)} cases."]
    return "\n".join(lines)


__all__ = ["TimeAccuracyRow", "TimeCase", "V100_SXM2_16GB", "time_accuracy_markdown", "time_accuracy_rows",
           "time_cases", "PUBLISHED_CASES", "PublishedCase", "accuracy_report", "compare_with_trace", "published_rows",
           "trace_grid"]
