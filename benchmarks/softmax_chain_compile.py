"""What torch.compile makes of the eager attention chain between Q·K^T and P·V (scale, + mask, fp32 softmax, cast
back, dropout): the tensors the compiled forward saves for the backward (Inductor's decompositions and min-cut
partitioner) and how many kernels Inductor generates, with and without attention dropout. Checks the byte counts
of ``gpuwork.estimate.ops._fused_softmax_chain`` (docs/kernels.md, "The eager attention chain under a fusing
stack"). Runs on the CPU (Inductor's C++ backend, needs a C++ compiler); on a GPU pass --device cuda.

Run: .venv/bin/python benchmarks/softmax_chain_compile.py [--device cpu|cuda]   (prints what it finds)
"""

from __future__ import annotations

import argparse
import re

import torch
import torch.nn.functional as F
from functorch.compile import aot_function, min_cut_rematerialization_partition
from torch._inductor.decomposition import select_decomp_table
from torch._inductor.utils import run_and_get_code


def chain(scores: torch.Tensor, mask: torch.Tensor, v: torch.Tensor, p_drop: float) -> torch.Tensor:
    # transformers' eager_attention_forward after Q·K^T (Llama style: softmax in fp32, cast back)
    w = scores * 0.125 + mask
    p = F.softmax(w, dim=-1, dtype=torch.float32).to(scores.dtype)
    return F.dropout(p, p_drop, training=True) @ v


def inputs(device: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    s = torch.randn(2, 4, 128, 128, dtype=torch.bfloat16, device=device, requires_grad=True)
    m = torch.zeros(2, 1, 128, 128, dtype=torch.bfloat16, device=device)
    v = torch.randn(2, 4, 128, 16, dtype=torch.bfloat16, device=device, requires_grad=True)
    return s, m, v


def saved_tensors(p_drop: float, device: str) -> list[str]:
    found: list[str] = []

    def forward_compiler(gm: torch.fx.GraphModule, _: object) -> torch.fx.GraphModule:
        output = next(n for n in gm.graph.nodes if n.op == "output")
        for node in output.args[0][1:]:  # the first output is the result, the rest is saved for the backward
            val = node.meta.get("val")
            found.append(f"{node.name} {tuple(val.shape)} {val.dtype}" if val is not None else node.name)
        return gm

    f = aot_function(lambda s, m, v: chain(s, m, v, p_drop), fw_compiler=forward_compiler,
                     bw_compiler=lambda gm, _: gm, partition_fn=min_cut_rematerialization_partition,
                     decompositions=select_decomp_table())
    f(*inputs(device)).sum().backward()
    return found


def generated_kernels(p_drop: float, device: str) -> list[list[str]]:
    """The fused kernels of each compiled graph (forward, then backward), by Inductor's names."""
    torch._dynamo.reset()
    f = torch.compile(lambda s, m, v: chain(s, m, v, p_drop))

    def step() -> None:
        f(*inputs(device)).sum().backward()

    _, codes = run_and_get_code(step)
    return [re.findall(r"^(\w+) = async_compile\.\w+\(", code, re.MULTILINE) for code in codes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--device", default="cpu")
    device = parser.parse_args().device
    print(f"torch {torch.__version__}, device {device}")
    for p_drop in (0.0, 0.1):
        print(f"attention dropout {p_drop}: saved for the backward (besides the result):")
        for line in saved_tensors(p_drop, device):
            print(f"    {line}")
        for graph, names in zip(("forward", "backward"), generated_kernels(p_drop, device), strict=False):
            print(f"  {graph}: {len(names)} generated kernel(s): {', '.join(names)}")


if __name__ == "__main__":
    main()
