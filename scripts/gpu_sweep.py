#!/usr/bin/env python
"""Kernel sweeps on one CUDA GPU, written as rows with their provenance (gpuwork issue 19, item 6).

Sections, in this order (``--sections`` picks some):

- gemm: ``torch.mm`` at m = 64..16,384 tokens against Llama projection widths, in the three layouts of an
  ``nn.Linear`` step (forward x @ W^T, input gradient dy @ W, weight gradient dy^T @ x), bf16; fp16 and fp32
  (TF32 off) squares. Each rate is the kernel time of back-to-back calls replayed from a CUDA graph (no host in
  the timing) rotating over enough operand copies to exceed twice the L2, so weights come from device memory as
  they do in a step; the forward layout is also timed on one set of operands ("hot"), as kernel benchmarks do.
- membw: ``copy_``, ``add`` (a + b -> c) and ``sum`` (read only) from 4 KiB to 4 GiB: back-to-back from a graph on
  one buffer set ("batch hot": small sizes stay in L2), rotating over sets beyond 4x the L2 ("batch"), and single
  launches after a sync with the L2 flushed ("cold", up to 64 MiB: the fixed time of one kernel).
- step: a real Hugging Face step (random weights, bf16, SDPA, torch AdamW) at few tokens, where the host bounds
  it: median wall time, kernels and ATen calls per step, GPU busy time (torch.profiler), host time per kernel.
- sustained (only when asked: ``--sections sustained``): a mid-size and a large bf16 GEMM, each after a rest,
  replayed back to back for seconds; TFLOPS per 100 ms window with nvidia-smi's SM clock, power and temperature
  logged beside: whether and when the card's clock falls under a long run of GEMMs (docs/gemm.md "The sustained
  rate").

Output: one JSON file (``--json``), rewritten after each section, and a Markdown summary (``--out``). The
commit and the environment (GPU, driver, clocks, host CPU, library versions) travel with the rows.
Without a CUDA GPU, ``--device cpu --quick`` runs every section at tiny sizes (a check that the script works).

Usage:
    python scripts/gpu_sweep.py --json sweep.json --out sweep.md --commit $(git rev-parse HEAD)
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpuwork.measure.cpu_rates import torch_dtype  # noqa: E402 - after the repository is on the path

SECTIONS = ("gemm", "membw", "step", "lora_gemm", "attention", "host", "gemm_paths", "sustained")
DEFAULT_SECTIONS = SECTIONS[:-1]  # the sustained section takes about 20 s: run when asked
GEMM_M = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
# (n, k) of an nn.Linear(k -> n): Llama-3.1-8B q/o, k/v with GQA, MLP up/gate and down; Llama-3.2-1B's MLP
GEMM_NK = ((4096, 4096), (1024, 4096), (14336, 4096), (4096, 14336), (8192, 2048))
SQUARES = ((4096, "fp16"), (8192, "fp16"), (4096, "fp32"), (8192, "fp32"))
MEMBW_BYTES = tuple(2**p for p in range(12, 33))  # 4 KiB .. 4 GiB
COLD_MAX_BYTES = 2**26
STEP_CASES = (("llama-3.2-1b", "lora", 128, 1), ("llama-3.2-1b", "lora", 512, 1), ("llama-3.2-1b", "full", 128, 1),
              ("llama-3.2-1b", "full", 512, 1), ("qwen2.5-0.5b", "lora", 128, 1))
LORA_M = (128, 512, 2048, 8192)
LORA_RANKS = (16, 64)
LORA_WIDTH = 4096
ATTENTION_SEQ = (512, 1024, 2048, 4096, 8192)
ATTENTION_TOKENS = 16384  # batch x sequence of every attention row
ATTENTION_BACKENDS = ("default", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")
GRAPH_TARGET_S = 3e-3  # each graph replay lasts about this long
# the sustained section: a GEMM the model's back-to-back cap prices slow (mid-size) and one it prices at the cap
SUSTAINED_SHAPES = ((1024, 4096, 4096), (4096, 14336, 4096))
SUSTAINED_S, SUSTAINED_WINDOW_S, SUSTAINED_REST_S = 6.0, 0.1, 5.0
SMI_CLOCKS = "timestamp,clocks.sm,power.draw,temperature.gpu"  # power.limit is in the environment


def replay_seconds(calls: list[Callable[[], Any]], device: Any, *, repeats: int = 5) -> float:
    """Median seconds per call of ``calls`` run back to back, cycled, as many times as fill ``GRAPH_TARGET_S``.

    CUDA: captured once in a CUDA graph and replayed, timed by events (the host is out of the timing). CPU: the
    same calls timed by the wall clock (there are no queued kernels to hide)."""
    dev = torch.device(device)
    if dev.type != "cuda":
        from gpuwork.measure.cpu_rates import time_call

        def cycle() -> None:
            for c in calls:
                c()

        return time_call(cycle, device=dev, repeats=repeats, min_repeat_s=1e-3) / len(calls)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture (cuBLAS picks and allocates its workspace)
        for c in calls:
            c()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for c in calls:
        c()
    end.record()
    end.synchronize()
    one = max(start.elapsed_time(end) * 1e-3 / len(calls), 1e-7)
    loops = max(1, min(4000 // len(calls), math.ceil(GRAPH_TARGET_S / (one * len(calls)))))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(loops):
            for c in calls:
                c()
    graph.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e-3 / (loops * len(calls)))
    del graph
    return statistics.median(samples)


def l2_bytes(device: Any) -> int:
    dev = torch.device(device)
    if dev.type == "cuda":
        return int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or 50 * 2**20)
    return 32 * 2**20


def _sets(bytes_per_set: int, footprint: int, cap: int = 64) -> int:
    return max(1, min(cap, math.ceil(footprint / max(bytes_per_set, 1))))


# -- GEMM ------------------------------------------------------------------------------------------------


def gemm_row(m: int, n: int, k: int, dtype: str, layout: str, *, device: Any, rotate: bool,
             repeats: int = 5) -> dict[str, Any]:
    """One timed GEMM C[m, n] = op(A) @ op(B) with the inner dimension k, ``layout`` as torch sees it:
    "NT" (x @ W^T: A [m, k], B stored [n, k]), "NN" (dy @ W: B stored [k, n]), "TN" (dy^T @ x: A stored [k, m])."""
    dev = torch.device(device)
    dt = torch_dtype(dtype)
    size = dt.itemsize if hasattr(dt, "itemsize") else torch.tensor([], dtype=dt).element_size()
    operands = (m * k + k * n) * size
    sets = _sets(operands, 2 * l2_bytes(dev)) if rotate else 1
    calls = []
    for _ in range(sets):
        a = torch.randn((k, m) if layout == "TN" else (m, k), device=dev, dtype=dt)
        b = torch.randn((n, k) if layout == "NT" else (k, n), device=dev, dtype=dt)
        out = torch.empty(m, n, device=dev, dtype=dt)
        lhs = a.t() if layout == "TN" else a
        rhs = b.t() if layout == "NT" else b
        calls.append(lambda lhs=lhs, rhs=rhs, out=out: torch.mm(lhs, rhs, out=out))
    seconds = replay_seconds(calls, dev, repeats=repeats)
    return {"m": m, "n": n, "k": k, "dtype": dtype, "layout": layout, "operand_sets": sets,
            "rotated": rotate, "time_us": seconds * 1e6, "tflops": 2.0 * m * n * k / seconds / 1e12}


def gemm_section(device: Any, quick: bool, log: Callable[[str], None]) -> list[dict[str, Any]]:
    ms, nks = ((16, 64), ((128, 64),)) if quick else (GEMM_M, GEMM_NK)
    squares = ((64, "fp32"),) if quick else SQUARES
    rows = []
    old_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 rows are SIMT SGEMM, as the fp32 data rows
    try:
        for n, k in nks:
            for m in ms:
                # the three GEMMs of one nn.Linear(k -> n) over m tokens, as (m, n, k) of the product each runs
                for shape, layout in (((m, n, k), "NT"), ((m, k, n), "NN"), ((n, k, m), "TN")):
                    rows.append(gemm_row(*shape, "bf16", layout, device=device, rotate=True))
                rows.append(gemm_row(m, n, k, "bf16", "NT", device=device, rotate=False))
                if torch.device(device).type == "cuda":
                    torch.cuda.empty_cache()
            log(f"  gemm n={n} k={k}: " + ", ".join(f"{r['m']}:{r['tflops']:.0f}" for r in rows[-4 * len(ms):]
                                                      if r["layout"] == "NT" and r["rotated"]))
        for side, dtype in squares:
            rows.append(gemm_row(side, side, side, dtype, "NN", device=device, rotate=False))
            log(f"  gemm {dtype} {side}^3: {rows[-1]['tflops']:.1f} TFLOPS")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old_tf32
    return rows


# -- memory-bound kernels ---------------------------------------------------------------------------------


def membw_rows(nbytes: int, kernel: str, *, device: Any, repeats: int = 5, cold: bool = True) -> list[dict[str, Any]]:
    """``kernel`` on fp32 tensors of ``nbytes`` each: rows for batch hot, batch (rotating) and cold timing."""
    dev = torch.device(device)
    elements = max(1, nbytes // 4)
    moved = {"copy": 2, "add": 3, "sum": 1}[kernel] * elements * 4
    touched = {"copy": 2, "add": 3, "sum": 1}[kernel] * elements * 4

    def make():
        x = torch.rand(elements, device=dev)
        if kernel == "sum":
            out = torch.empty((), device=dev)
            return lambda x=x, out=out: torch.sum(x, dim=0, out=out)
        if kernel == "copy":
            dst = torch.empty_like(x)
            return lambda x=x, dst=dst: dst.copy_(x)
        y, out = torch.rand_like(x), torch.empty_like(x)
        return lambda x=x, y=y, out=out: torch.add(x, y, out=out)

    rows = []
    hot = [make()]
    rows.append({"timing": "batch hot", "seconds": replay_seconds(hot, dev, repeats=repeats), "footprint": touched})
    sets = _sets(touched, 4 * l2_bytes(dev), cap=256)
    if sets > 1:
        calls = hot + [make() for _ in range(sets - 1)]
        rows.append({"timing": "batch", "seconds": replay_seconds(calls, dev, repeats=repeats),
                     "footprint": touched * sets})
    else:
        rows.append({**rows[0], "timing": "batch"})
    if cold and nbytes <= COLD_MAX_BYTES:
        rows.append({"timing": "cold", "seconds": _cold_seconds(hot[0], dev, repeats=max(repeats, 11)),
                     "footprint": touched})
    for r in rows:
        r.update({"kernel": kernel, "dtype": "fp32", "elements": elements, "bytes": moved, "time_us": r["seconds"] * 1e6,
                  "gbs": moved / r["seconds"] / 1e9})
        del r["seconds"]
    return rows


def _cold_seconds(call: Callable[[], Any], dev: Any, *, repeats: int) -> float:
    """One launch after a sync, with the L2 flushed first: the event pair times the kernel alone."""
    if dev.type != "cuda":
        from gpuwork.measure.cpu_rates import time_call

        return time_call(call, device=dev, repeats=repeats, min_repeat_s=0.0)
    flush = torch.empty(2 * l2_bytes(dev) // 4, device=dev)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    call()
    samples = []
    for _ in range(repeats):
        flush.add_(1)  # a write larger than the L2 evicts what the timed kernel would read
        torch.cuda.synchronize()
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(samples)


def membw_section(device: Any, quick: bool, log: Callable[[str], None]) -> list[dict[str, Any]]:
    sizes = (2**12, 2**16) if quick else MEMBW_BYTES
    rows = []
    for kernel in ("copy", "add", "sum"):
        for nbytes in sizes:
            rows += membw_rows(nbytes, kernel, device=device)
            if torch.device(device).type == "cuda":
                torch.cuda.empty_cache()
        log(f"  {kernel}: " + ", ".join(f"{r['bytes'] >> 10}K {r['timing']} {r['gbs']:.0f}"
                                        for r in rows if r["kernel"] == kernel and r["timing"] == "batch"))
    return rows


# -- a real step where the host bounds it ----------------------------------------------------------------


def step_row(model: str, method: str, seq_len: int, batch: int, *, device: Any, steps: int = 10,
             warmup: int = 3) -> dict[str, Any]:
    """A Hugging Face causal-LM step (loss, backward, AdamW, zero_grad) of random weights: median wall time per
    step (synchronised), and from one profiled step the kernels launched, the GPU's busy time and the ATen calls."""
    import transformers
    from torch.utils._python_dispatch import TorchDispatchMode

    from gpuwork.facts.model import load_config

    dev = torch.device(device)
    config, _ = load_config(model)
    hf_config = transformers.CONFIG_MAPPING[config["model_type"]].from_dict(dict(config))
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    torch.manual_seed(0)
    with dev:
        net = transformers.AutoModelForCausalLM.from_config(hf_config, dtype=dtype, attn_implementation="sdpa")
    if method == "lora":
        from peft import LoraConfig, get_peft_model

        net = get_peft_model(net, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM"))
    net.train()
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, weight_decay=0.0)
    ids = torch.randint(0, hf_config.vocab_size, (batch, seq_len), device=dev)

    def step() -> None:
        net(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for _ in range(warmup):
        step()
    sync()
    walls, cpus = [], []
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.thread_time()
        step()
        sync()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.thread_time() - c0)

    class Count(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.calls += 1
            return func(*args, **(kwargs or {}))

    with Count():
        step()
    sync()
    kernels = busy_s = None
    if dev.type == "cuda":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            sync()
        device_events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        kernels = sum(1 for e in device_events if not e.name.startswith(("Memcpy", "Memset")))
        busy_s = _busy_seconds(device_events)
    wall = statistics.median(walls)
    row = {"model": model, "method": method, "seq_len": seq_len, "batch_size": batch, "precision": "bf16",
           "attention": "sdpa", "optimizer": "torch AdamW (foreach), weight_decay 0", "steps": steps,
           "wall_s": wall, "wall_p90_s": sorted(walls)[int(0.9 * (len(walls) - 1))],
           "host_cpu_s": statistics.median(cpus), "aten_calls": Count.calls, "kernels": kernels, "gpu_busy_s": busy_s,
           "trainable_params": sum(p.numel() for p in params)}
    if kernels:
        row["wall_us_per_kernel"] = wall / kernels * 1e6
    return row


def _busy_seconds(events: list[Any]) -> float:
    """Union of the device events' intervals: the time the GPU ran anything during the profiled step."""
    spans = sorted((e.time_range.start, e.time_range.end) for e in events)
    total, end = 0.0, -math.inf
    for s, e in spans:
        if s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total * 1e-6


def parse_step_cases(text: str) -> tuple[tuple[str, str, int, int], ...]:
    """"model:method:seq:batch,..." -> step cases (``--step-cases``)."""
    cases = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        model, method, seq, batch = item.split(":")
        if method not in ("lora", "full"):
            raise ValueError(f"step case {item!r}: method must be lora or full")
        cases.append((model, method, int(seq), int(batch)))
    return tuple(cases)


def step_section(device: Any, quick: bool, log: Callable[[str], None],
                 cases: tuple[tuple[str, str, int, int], ...] = ()) -> list[dict[str, Any]]:
    cases = cases or ((("tiny-llama", "lora", 32, 1), ("tiny-llama", "full", 32, 1)) if quick else STEP_CASES)
    rows = []
    for model, method, seq, batch in cases:
        try:
            r = step_row(model, method, seq, batch, device=device, steps=3 if quick else 10, warmup=1 if quick else 3)
        except Exception as exc:  # noqa: BLE001 - one failing model must not stop the others
            r = {"model": model, "method": method, "seq_len": seq, "batch_size": batch,
                 "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]}
        rows.append(r)
        if torch.device(device).type == "cuda":
            torch.cuda.empty_cache()  # the model and its optimizer went with step_row's frame
        log(f"  step {model} {method} {seq}x{batch}: " + (r.get("error") or
            f"{r['wall_s'] * 1e3:.2f} ms wall, {r['kernels']} kernels, {r['aten_calls']} aten calls, "
            f"GPU busy {(r['gpu_busy_s'] or 0) * 1e3:.2f} ms"))
    return rows


# -- LoRA's thin GEMMs, attention backends, the host ------------------------------------------------------


def lora_gemm_section(device: Any, quick: bool, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The five GEMMs of a LoRA adapter on a width-``LORA_WIDTH`` projection over m tokens, rank r: x @ A^T
    (m, r, w), h @ B^T (m, w, r), the input gradients (m, r, w) and (m, w, r) as dy @ B and dh @ A, and the
    weight gradients (r, w, m) and (w, r, m)."""
    ms, ranks, width = ((32,), (4,), 64) if quick else (LORA_M, LORA_RANKS, LORA_WIDTH)
    rows = []
    for r in ranks:
        for m in ms:
            for shape, layout in (((m, r, width), "NT"), ((m, width, r), "NT"), ((m, r, width), "NN"),
                                  ((m, width, r), "NN"), ((r, width, m), "TN"), ((width, r, m), "TN")):
                rows.append({**gemm_row(*shape, "bf16", layout, device=device, rotate=True), "lora_rank": r})
        log(f"  lora r={r}: " + ", ".join(f"{x['m']}x{x['n']}x{x['k']}:{x['time_us']:.1f}us" for x in rows[-6:]))
    return rows


def attention_section(device: Any, quick: bool, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Causal SDPA forward and backward (bf16) per backend torch offers, at ``ATTENTION_TOKENS`` tokens per call."""
    from gpuwork.measure.cpu_rates import sdpa_rate

    dev = torch.device(device)
    seqs, head_dims, backends = ((64, 128), (32,), ("default",)) if quick else (ATTENTION_SEQ, (64, 128),
                                                                                 ATTENTION_BACKENDS)
    tokens = 256 if quick else ATTENTION_TOKENS
    dtype = "bf16" if dev.type == "cuda" else "fp32"
    rows = []
    for backend in backends:
        for hd in head_dims:
            heads = 4096 // hd if not quick else 2
            for seq in seqs:
                shape = (max(1, tokens // seq), heads, seq, hd)
                row: dict[str, Any] = {"backend": backend, "batch": shape[0], "heads": heads, "seq_len": seq,
                                       "head_dim": hd, "dtype": dtype, "causal": True}
                try:
                    if backend == "default":
                        fwd, bwd = sdpa_rate(shape, dtype, device=dev, repeats=5)
                    else:
                        from torch.nn.attention import SDPBackend, sdpa_kernel

                        with sdpa_kernel(getattr(SDPBackend, backend)):
                            fwd, bwd = sdpa_rate(shape, dtype, device=dev, repeats=5)
                    row.update({"fwd_tflops": fwd / 1e12, "bwd_tflops": bwd / 1e12})
                except Exception as exc:  # noqa: BLE001 - a backend that refuses a shape is a finding
                    row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]
                rows.append(row)
            log(f"  sdpa {backend} d{hd}: " + ", ".join(
                f"{x['seq_len']}:{x.get('fwd_tflops', 0):.0f}/{x.get('bwd_tflops', 0):.0f}" for x in rows[-len(seqs):]))
    return rows


def host_section(device: Any, quick: bool, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The host's costs: gpuwork's dispatch chains (bare op, autograd, nn.Linear modules) on the device, and a
    pure-Python loop (a CPU-speed yardstick that travels between machines); copy_ eager against graph replay."""
    from gpuwork.measure.cpu_rates import dispatch_cost, time_call

    dev = torch.device(device)
    cost = dispatch_cost(device=dev, repeats=7)
    loop_s = time_call(lambda: sum(range(100_000)), repeats=7) / 100_000
    rows = [{"what": "dispatch", **cost.as_dict()}, {"what": "python sum(range) per element", "ns": loop_s * 1e9}]
    sizes = (2**16,) if quick else (2**28, 2**29, 2**30, 2**31)
    for nbytes in sizes:
        rows.append(_copy_paths(nbytes, dev))
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    log(f"  host: {cost.as_dict()}; python {loop_s * 1e9:.1f} ns/element; "
        + ", ".join(f"{r['tensor_bytes'] >> 20}M copy eager {r['eager_gbs']:.0f} graph {r['graph_gbs']:.0f} "
                    f"add {r['add_scalar_graph_gbs']:.0f}" for r in rows[2:]))
    return rows


GEMM_PATHS = ((4096, 4096, 4096), (8192, 8192, 8192), (16384, 4096, 4096), (1024, 4096, 4096), (128, 4096, 16))


def gemm_paths_section(device: Any, quick: bool, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """One GEMM timed four ways, three rounds interleaved: an eager loop (the host queues calls, as gpu_check's
    kernel table does) and a graph replay, each on one operand set and rotating over sets past twice the L2."""

    dev = torch.device(device)
    shapes = ((32, 32, 32),) if quick else GEMM_PATHS
    rows = []
    for m, n, k in shapes:
        rows += _gemm_paths(m, n, k, dev)
        log(f"  gemm paths {m}x{n}x{k}: " + ", ".join(f"{r['path']} {r['tflops']:.0f}" for r in rows[-12:]))
    return rows


def _rotated_mm(m: int, n: int, k: int, dev: Any) -> list[Callable[[], Any]]:
    """bf16 ``torch.mm`` calls of one shape, one per operand set, as many sets as exceed twice the L2."""
    sets = _sets((m * k + k * n) * 2, 2 * l2_bytes(dev))
    ops = [(torch.randn(m, k, device=dev, dtype=torch.bfloat16), torch.randn(k, n, device=dev, dtype=torch.bfloat16),
            torch.empty(m, n, device=dev, dtype=torch.bfloat16)) for _ in range(sets)]
    return [lambda a=a, b=b, c=c: torch.mm(a, b, out=c) for a, b, c in ops]


def _gemm_paths(m: int, n: int, k: int, dev: Any) -> list[dict[str, Any]]:
    from gpuwork.measure.cpu_rates import time_call

    calls = _rotated_mm(m, n, k, dev)
    sets = len(calls)

    def cycle() -> None:
        for c in calls:
            c()

    paths = (("eager hot", lambda: time_call(calls[0], device=dev, repeats=5)),
             ("graph hot", lambda: replay_seconds(calls[:1], dev)),
             ("eager rotated", lambda: time_call(cycle, device=dev, repeats=5) / sets),
             ("graph rotated", lambda: replay_seconds(calls, dev)))
    rows = []
    for round_ in range(3):
        for path, seconds in paths:
            t = seconds()
            rows.append({"m": m, "n": n, "k": k, "path": path, "round": round_, "operand_sets": sets,
                         "time_us": t * 1e6, "tflops": 2.0 * m * n * k / t / 1e12})
    return rows


def sustained_section(device: Any, quick: bool, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Each shape of ``SUSTAINED_SHAPES`` after ``SUSTAINED_REST_S`` idle, replayed back to back (operands rotated
    past twice the L2) for ``SUSTAINED_S``: one row per window of ``SUSTAINED_WINDOW_S`` (TFLOPS, its start in
    seconds from the first), and the card's clock log over the run (``_clock_log``; None without nvidia-smi)."""
    dev = torch.device(device)
    shapes = ((32, 32, 32),) if quick else SUSTAINED_SHAPES
    total_s, window_s, rest_s = (0.05, 0.01, 0.0) if quick else (SUSTAINED_S, SUSTAINED_WINDOW_S, SUSTAINED_REST_S)
    rows = []
    for m, n, k in shapes:
        time.sleep(rest_s)
        rows.append(_sustained(m, n, k, dev, total_s, window_s))
        rates = [w["tflops"] for w in rows[-1]["windows"]]
        log(f"  sustained {m}x{n}x{k}: first window {rates[0]:.0f} TF, last {rates[-1]:.0f}, median "
            f"{statistics.median(rates):.0f}")
    return rows


def _sustained(m: int, n: int, k: int, dev: Any, total_s: float, window_s: float) -> dict[str, Any]:
    calls = _rotated_mm(m, n, k, dev)
    sets = len(calls)
    flops = 2.0 * m * n * k
    windows: list[dict[str, Any]] = []
    if dev.type != "cuda":  # no queue to keep full: the wall clock around each window's calls
        start = time.perf_counter()
        while time.perf_counter() - start < total_s:
            t0, done = time.perf_counter(), 0
            while time.perf_counter() - t0 < window_s:
                calls[done % sets]()
                done += 1
            t1 = time.perf_counter()
            windows.append({"start_s": t0 - start, "tflops": done * flops / (t1 - t0) / 1e12})
        return {"m": m, "n": n, "k": k, "operand_sets": sets, "windows": windows, "clocks": None}
    one = replay_seconds(calls, dev, repeats=1)  # also warms cuBLAS up outside the capture
    loops = max(1, math.ceil(window_s / (one * sets)))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(loops):
            for c in calls:
                c()
    count = max(1, round(total_s / (one * sets * loops)))
    events = [torch.cuda.Event(enable_timing=True) for _ in range(count + 1)]
    torch.cuda.synchronize()
    smi = _clock_log()
    try:
        events[0].record()
        for i in range(count):  # every replay queued at once: the GPU never waits on the host
            graph.replay()
            events[i + 1].record()
        events[-1].synchronize()
    finally:
        clocks = _stop_clock_log(smi)
    elapsed = 0.0
    for i in range(count):
        seconds = events[i].elapsed_time(events[i + 1]) * 1e-3
        windows.append({"start_s": elapsed, "tflops": loops * sets * flops / seconds / 1e12})
        elapsed += seconds
    del graph
    return {"m": m, "n": n, "k": k, "operand_sets": sets, "windows": windows, "clocks": clocks}


def _clock_log() -> subprocess.Popen | None:
    """nvidia-smi sampling the SM clock, power and temperature every 100 ms (None: no nvidia-smi)."""
    try:
        return subprocess.Popen(["nvidia-smi", f"--query-gpu={SMI_CLOCKS}", "--format=csv,noheader,nounits",
                                 "-lms", "100"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None


def _stop_clock_log(smi: subprocess.Popen | None) -> list[str] | None:
    if smi is None:
        return None
    smi.terminate()
    try:
        out, _ = smi.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        smi.kill()
        out, _ = smi.communicate()
    return [line.strip() for line in out.splitlines() if line.strip()]


def _copy_paths(nbytes: int, dev: Any) -> dict[str, Any]:
    """copy_ of a float32 tensor of ``nbytes`` eager and from a graph, and an add of 0 (a kernel) from a graph."""
    from gpuwork.measure.cpu_rates import time_call

    src = torch.rand(nbytes // 4, device=dev)
    dst = torch.empty_like(src)
    eager_s = time_call(lambda: dst.copy_(src), device=dev, repeats=5)
    graph_s = replay_seconds([lambda: dst.copy_(src)], dev, repeats=5)
    add_s = replay_seconds([lambda: torch.add(src, 0.0, out=dst)], dev, repeats=5)
    return {"what": "copy_ fp32", "tensor_bytes": nbytes, "eager_gbs": 2 * nbytes / eager_s / 1e9,
            "graph_gbs": 2 * nbytes / graph_s / 1e9, "add_scalar_graph_gbs": 2 * nbytes / add_s / 1e9}


# -- environment and output ---------------------------------------------------------------------------------


def environment(device: Any, commit: str | None) -> dict[str, Any]:
    from gpuwork.measure.trial import cpu_model as _cpu_name
    env: dict[str, Any] = {"commit": commit, "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                           "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
                           "host_cpu": _cpu_name(), "host_cores": _cores()}
    for name in ("transformers", "peft"):
        try:
            env[name] = __import__(name).__version__
        except ImportError:
            env[name] = None
    dev = torch.device(device)
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        env.update({"gpu": p.name, "gpu_memory_bytes": p.total_memory, "sm_count": p.multi_processor_count,
                    "l2_bytes": l2_bytes(dev), "compute_capability": f"{p.major}.{p.minor}",
                    "cudnn": torch.backends.cudnn.version(), "cublas_workspace": "default"})
        env["nvidia_smi"] = _smi()
    return env


def _cores() -> int | None:
    import os

    return os.cpu_count()


def _smi() -> str | None:
    query = "name,driver_version,clocks.max.sm,clocks.max.mem,power.limit,pcie.link.gen.max"
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv"], capture_output=True, text=True,
                              timeout=20, check=False)
        return done.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def markdown(result: dict[str, Any]) -> str:
    env = result.get("environment", {})
    lines = ["# gpuwork kernel sweep", "", f"- {env.get('gpu', 'CPU')} (SMs {env.get('sm_count')}, L2 "
             f"{(env.get('l2_bytes') or 0) / 2**20:.0f} MiB), CUDA {env.get('cuda')}, torch {env.get('torch')}, "
             f"host {env.get('host_cpu')} x{env.get('host_cores')}, commit {env.get('commit')}, {env.get('date_utc')}"]
    if result.get("gemm"):
        lines += ["", "## GEMM (TFLOPS; rotated = operands from device memory)", "",
                  "| dtype | layout | m | n | k | rotated | us | TFLOPS |", "|---|---|---:|---:|---:|---|---:|---:|"]
        lines += [f"| {r['dtype']} | {r['layout']} | {r['m']} | {r['n']} | {r['k']} | {r['rotated']} "
                  f"| {r['time_us']:.2f} | {r['tflops']:.1f} |" for r in result["gemm"]]
    if result.get("membw"):
        lines += ["", "## Memory-bound kernels (fp32; GB/s counts bytes read + written)", "",
                  "| kernel | bytes moved | timing | us | GB/s |", "|---|---:|---|---:|---:|"]
        lines += [f"| {r['kernel']} | {r['bytes']} | {r['timing']} | {r['time_us']:.2f} | {r['gbs']:.0f} |"
                  for r in result["membw"]]
    if result.get("step"):
        lines += ["", "## Eager steps at few tokens (Hugging Face, bf16, SDPA, torch AdamW)", "",
                  "| model | method | seq x batch | wall ms | host CPU ms | kernels | ATen calls | GPU busy ms "
                  "| wall us / kernel |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
        for r in result["step"]:
            if r.get("error"):
                lines.append(f"| {r['model']} | {r['method']} | {r['seq_len']} x {r['batch_size']} | {r['error']} "
                             "| | | | | |")
                continue
            lines.append(f"| {r['model']} | {r['method']} | {r['seq_len']} x {r['batch_size']} "
                         f"| {r['wall_s'] * 1e3:.2f} | {r['host_cpu_s'] * 1e3:.2f} | {r['kernels']} | {r['aten_calls']} "
                         f"| {(r['gpu_busy_s'] or 0) * 1e3:.2f} | {r.get('wall_us_per_kernel', 0):.1f} |")
    if result.get("lora_gemm"):
        lines += ["", "## LoRA GEMMs (bf16, operands rotated; us per kernel back to back)", "",
                  "| rank | layout | m | n | k | us | TFLOPS |", "|---:|---|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['lora_rank']} | {r['layout']} | {r['m']} | {r['n']} | {r['k']} | {r['time_us']:.2f} "
                  f"| {r['tflops']:.2f} |" for r in result["lora_gemm"]]
    if result.get("attention"):
        lines += ["", "## Causal SDPA by backend (TFLOPS as gpuwork counts attention FLOPs)", "",
                  "| backend | batch x heads | seq | head dim | fwd | bwd |", "|---|---|---:|---:|---:|---:|"]
        lines += [f"| {r['backend']} | {r['batch']} x {r['heads']} | {r['seq_len']} | {r['head_dim']} "
                  f"| {_num(r.get('fwd_tflops'))} | {r.get('error') or _num(r.get('bwd_tflops'))} |"
                  for r in result["attention"]]
    if result.get("host"):
        dispatch, loop, *copies = result["host"]
        lines += ["", "## Host", "", "Dispatch chains (us): " + ", ".join(
            f"{k} {v:.2f}" for k, v in dispatch.items() if k != "what"), "",
                  f"Pure-Python yardstick: {loop['ns']:.1f} ns per element of sum(range)", "",
                  "| copy_ tensor | eager GB/s | graph GB/s | add (graph) GB/s |", "|---:|---:|---:|---:|"]
        lines += [f"| {c['tensor_bytes'] >> 20} MiB | {c['eager_gbs']:.0f} | {c['graph_gbs']:.0f} "
                  f"| {c['add_scalar_graph_gbs']:.0f} |" for c in copies]
    if result.get("gemm_paths"):
        lines += ["", "## One GEMM timed four ways (bf16 TFLOPS, three rounds)", "",
                  "| m x n x k | path | round | us | TFLOPS |", "|---|---|---:|---:|---:|"]
        lines += [f"| {r['m']} x {r['n']} x {r['k']} | {r['path']} | {r['round']} | {r['time_us']:.2f} "
                  f"| {r['tflops']:.1f} |" for r in result["gemm_paths"]]
    if result.get("sustained"):
        lines += ["", "## One GEMM held back to back (bf16 TFLOPS per window; clocks from nvidia-smi)", ""]
        for r in result["sustained"]:
            rates = [w["tflops"] for w in r["windows"]]
            lines += [f"- {r['m']} x {r['n']} x {r['k']}: {len(rates)} windows, first {rates[0]:.1f}, median "
                      f"{statistics.median(rates):.1f}, last {rates[-1]:.1f} TFLOPS; rates by window: "
                      + ", ".join(f"{v:.0f}" for v in rates)]
            if r.get("clocks"):
                lines += [f"  - nvidia-smi ({SMI_CLOCKS}): " + "; ".join(r["clocks"])]
    return "\n".join(lines) + "\n"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    p.add_argument("--json", metavar="FILE.json", default="gpu_sweep.json", help="results (default gpu_sweep.json)")
    p.add_argument("--out", metavar="FILE.md", help="Markdown summary (default: --json with .md)")
    p.add_argument("--sections", nargs="+", default=list(DEFAULT_SECTIONS), choices=list(SECTIONS),
                   help=f"default: {' '.join(DEFAULT_SECTIONS)} (sustained only when named)")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    p.add_argument("--quick", action="store_true", help="tiny sizes: checks that the script runs (any device)")
    p.add_argument("--commit", help="the gpuwork commit measured (recorded as provenance)")
    p.add_argument("--step-cases", metavar="MODEL:METHOD:SEQ:BATCH,...",
                   help="the step section's cases instead of the defaults (methods lora, full)")
    p.add_argument("--render", metavar="FILE.json", help="only rewrite the Markdown summary of an earlier run's JSON")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        source = Path(args.render)
        (Path(args.out) if args.out else source.with_suffix(".md")).write_text(markdown(json.loads(source.read_text())))
        return 0
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"gpu_sweep: no CUDA GPU (torch {torch.__version__}); use --device cpu --quick to check the script",
              file=sys.stderr)
        return 1
    json_path = Path(args.json)
    md_path = Path(args.out) if args.out else json_path.with_suffix(".md")
    result: dict[str, Any] = {"environment": environment(args.device, args.commit), "seconds": {}}

    def log(text: str) -> None:
        print(text, flush=True)

    def write() -> None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(result, indent=1, default=str))
        md_path.write_text(markdown(result))

    log(f"gpu_sweep: {result['environment'].get('gpu', 'CPU')}, sections {' '.join(args.sections)}")
    step_cases = parse_step_cases(args.step_cases) if args.step_cases else ()
    sections = {"gemm": gemm_section, "membw": membw_section,
                "step": lambda device, quick, log: step_section(device, quick, log, step_cases), "lora_gemm": lora_gemm_section,
                "attention": attention_section, "host": host_section, "gemm_paths": gemm_paths_section,
                "sustained": sustained_section}
    for name in args.sections:
        started = time.perf_counter()
        try:
            result[name] = sections[name](args.device, args.quick, log)
        except Exception as exc:  # noqa: BLE001 - the other sections still run and what was measured is kept
            result[f"{name}_error"] = f"{type(exc).__name__}: {exc}"[:500]
            log(f"  {name} failed: {result[f'{name}_error']}")
        result["seconds"][name] = time.perf_counter() - started
        log(f"gpu_sweep: {name} done in {result['seconds'][name]:.0f} s")
        write()
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
