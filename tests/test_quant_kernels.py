"""bitsandbytes 4-bit dequantisation: the kernels and bytes the step model counts (``estimate.quant``) against the
installed library, and the memory-bound kernel model against published timings (data/quant_kernels.csv,
docs/kernels.md "4-bit dequantisation")."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from gpuwork.estimate.ops import step_ops
from gpuwork.estimate.quant import dequant_4bit_chain
from gpuwork.estimate.steptime import memory_kernel_s, memory_kernel_t0_us
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.model import get_spec
from gpuwork.facts.paths import bundled_data_dir
from gpuwork.facts.rates import load_rates
from gpuwork.plan import TrainPlan

bnb_functional = pytest.importorskip("bitsandbytes.functional")

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "kernels.md"
# GH200 is not in gpus.csv: its rows are priced at the H200 SXM's rates (same GH100 die, HBM3e like the 144 GB GH200)
STAND_IN = {"": "h200_sxm"}
OUT_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}


class _Traffic(TorchDispatchMode):
    """Every op dispatched, with the bytes of the tensors it reads and writes (an in-place op's tensor twice)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        tensors = [a for a in (*args, *kwargs.values(), *outs) if isinstance(a, torch.Tensor)]
        self.ops.append((str(func), sum(t.numel() * t.element_size() for t in tensors)))
        return out


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("double_quant", [True, False])
@pytest.mark.parametrize("blocksize", [64, 128])
def test_the_chain_is_what_bitsandbytes_dequantize_4bit_runs(dtype, double_quant, blocksize):
    rows, cols = 512, 1024
    weight = torch.randn(rows, cols, dtype=dtype)
    packed, state = bnb_functional.quantize_4bit(weight, blocksize=blocksize, quant_type="nf4",
                                                 compress_statistics=double_quant)
    with _Traffic() as traffic:
        out = bnb_functional.dequantize_4bit(packed, state)
    assert out.dtype == dtype and out.shape == (rows, cols)
    per_weight, kernels = dequant_4bit_chain(dtype.itemsize, double_quant, blocksize)
    names = [name for name, _ in traffic.ops]
    # one CUDA kernel per op: dequantize_blockwise and dequantize_4bit each call one lib.cdequantize_* kernel
    assert len(names) == kernels
    assert names[-1].startswith("bitsandbytes.dequantize_4bit")
    if double_quant:
        assert names[0].startswith("bitsandbytes.dequantize_blockwise") and names[1].startswith("aten.add_")
    # the 256-entry code table and the scalar offset are the only tensors the per-weight count leaves out
    moved = sum(b for _, b in traffic.ops)
    assert moved / (rows * cols) == pytest.approx(per_weight, rel=2e-3)


def test_the_op_list_prices_each_dequantisation_with_the_chain():
    for double_quant in (True, False):
        plan = TrainPlan(model="llama-3.1-8b", method="qlora", seq_len=1024, double_quant=double_quant)
        op = next(o for o in step_ops(plan, get_spec(plan.model)) if o.name == "mlp.down_proj dequantize 4-bit")
        per_weight, kernels = dequant_4bit_chain(plan.precision.compute_bytes, double_quant)
        assert (op.bytes, op.launches) == (pytest.approx(14336 * 4096 * per_weight), kernels)
    assert dequant_4bit_chain(2, True)[0] - dequant_4bit_chain(2, False)[0] == pytest.approx(13 / 64 + 4 / 16384)


def _rows() -> list[dict[str, str]]:
    with open(bundled_data_dir() / "quant_kernels.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _model_us(row: dict[str, str], rates) -> float:
    gpu_id = row["gpu_id"] or STAND_IN[row["gpu_id"]]
    per_weight, kernels = dequant_4bit_chain(OUT_BYTES[row["out_dtype"]], row["double_quant"] == "1",
                                             int(row["blocksize"]))
    t0_s = memory_kernel_t0_us(get_gpu(gpu_id), rates)[0] * 1e-6
    weights = int(row["rows"]) * int(row["cols"])
    return memory_kernel_s(weights * per_weight, kernels, rates.devices[gpu_id].mem_bw_bytes_s, t0_s) * 1e6


def _doc_rows() -> list[list[str]]:
    section = DOC.read_text(encoding="utf-8").split("## 4-bit dequantisation", 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()
            if re.match(r"\| (A100|GH200)", line)]


def test_every_published_row_is_in_the_docs_table_with_the_model_of_today():
    rates = load_rates()
    rows, table = _rows(), _doc_rows()
    assert len(rows) == len(table) >= 5
    for row, cells in zip(rows, table, strict=True):
        measured, model, error = (float(c.replace(",", "").rstrip("%")) for c in cells[7:10])
        assert measured == float(row["time_us"])
        assert model == pytest.approx(_model_us(row, rates), abs=0.05)
        assert error == pytest.approx((_model_us(row, rates) / measured - 1) * 100, abs=0.05)
        assert cells[-1] == f"[{row['source']}]"


def test_no_published_row_is_reproduced_so_each_says_why_and_the_kernel_time_is_beyond_the_model():
    rates, rows = load_rates(), _rows()
    text = DOC.read_text(encoding="utf-8")
    for row in rows:
        assert row["covered"] == "0" and row["note"], row
        assert re.search(rf"\*\*\[{row['source']}\]\*\*[^\[]*https://github\.com/", text), row["source"]
    # where the GPU, not the host, sets the time, the published kernel is slower than copy bandwidth allows
    gpu_bound = [r for r in rows if r["timing"] == "wall" or int(r["rows"]) >= 16384]
    assert len(gpu_bound) == 3
    assert all(_model_us(r, rates) < 0.9 * float(r["time_us"]) for r in gpu_bound)
    # the host-bound rows take about the same time whatever their size
    host_bound = [float(r["time_us"]) for r in rows if r not in gpu_bound]
    assert max(host_bound) < 1.3 * min(host_bound)
