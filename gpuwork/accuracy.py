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

from gpuwork.memory import GIB, MIB, estimate_memory
from gpuwork.plan import TrainPlan

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
    """Analytic vs traced allocated peak (both without the cuBLAS workspace, which tracing has not)."""
    from gpuwork.trace import trace_memory

    traced = trace_memory(plan)
    est = estimate_memory(plan)
    analytic = est.peak_allocated_bytes - est.breakdown.get("cublas_workspace", 0)
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


__all__ = ["PUBLISHED_CASES", "PublishedCase", "accuracy_report", "compare_with_trace", "published_rows",
           "trace_grid"]
