"""One operation of a training step as the time model prices it (``Op``), the enums that classify it, and what a
stack runs fused (``StackKernels``, ``MoeExperts``).

Kept apart from ``ops`` (which lists a step's operations) so that the modules that build operations for ``ops``
(``mlm_head``, ``linear_ops``) and those that price them (``steptime``, ``timing``) share one definition without a
cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    MATMUL = "matmul"  # GEMMs: projections, MLP, output layer, adapters
    ATTENTION = "attention"  # the attention kernels (flash / memory-efficient) or eager score matmuls
    MEMORY = "memory"  # element-wise and reduction kernels: norms, activations, casts, loss, dequantisation
    OPTIMIZER = "optimizer"  # clipping, accumulation and the update


class Backward(StrEnum):
    """What a forward op costs again in the backward."""

    ELEMENTWISE = "elementwise"  # the saved input and the incoming gradient read, the gradient written
    INPUT_GRAD = "input-grad"  # a GEMM of a frozen (or 4-bit) weight: the input gradient only
    BOTH_GRADS = "both-grads"  # a GEMM of a trained weight: input and weight gradients
    FUSED_ATTENTION = "fused-attention"  # its own backward kernel: 5 matmuls for the forward's 2
    REPEAT = "repeat"  # runs once more as it is (4-bit dequantisation for the input gradient)
    GRAD_CAST = "grad-cast"  # an autocast weight copy: its backward converts the weight gradient
    NONE = "none"


class Phase(StrEnum):
    FORWARD = "forward"
    BACKWARD = "backward"
    RECOMPUTE = "recompute"
    OPTIMIZER = "optimizer"


@dataclass(frozen=True, slots=True)
class Op:
    """One operation of the step (a kernel or a short chain of kernels), per occurrence."""

    name: str
    kind: Kind
    phase: Phase
    flops: float  # executed FLOPs
    bytes: float  # bytes read + written in device memory
    launches: int  # kernels launched
    count: int  # occurrences per optimizer step on one GPU (layers x micro-batches x ...)
    dtype: str = "bf16"  # matmul dtype, for its rate: "bf16" | "fp16" | "fp32"
    m: int = 0  # GEMM output rows (tokens) ...
    n: int = 0  # ... and columns, for wave quantisation; 0 for other kinds
    attention_pass: str = ""  # "fwd" | "bwd" for fused attention kernels (m = sequence length, n = head dim)
    causal: bool = False  # a fused attention kernel with a causal mask
    mem_efficient: bool = False  # SDPA's memory-efficient kernel instead of flash (an attention mask: no flash)
    kernel: str = ""  # fused attention: its attention_curves.csv kernel ("": FlashAttention-2's rates)
    backward: Backward = Backward.ELEMENTWISE  # how a forward op recurs in the backward
    # ELEMENTWISE only: the backward's bytes as a multiple of the forward's, and its kernels (-1: as forward)
    backward_factor: float = 2.0
    backward_launches: int = -1
    bias_bytes: float = 0.0  # MATMUL with a trained bias: bytes of the output its gradient sums in the backward
    # the host waits for the GPU here (a device-to-host copy): the queue drains, so this op's dispatch and the
    # next kernel's are not hidden behind earlier GPU work
    host_sync: bool = False
    # a multi_tensor_apply pass of more than 320 chunks, run as several 320-block launches: its bytes stream at
    # kernels.csv mta_split_bandwidth_share of the bandwidth (estimate.adamw_passes)
    mta_split: bool = False
    # MEMORY kernels TensorIterator does not vectorise (inputs transposed or an operand broadcast): the share of the
    # op's bytes they move (1: every kernel), at kernels.csv membw_strided_fraction of the bandwidth (docs/kernels.md
    # "Liger-Kernel's eager rows"); the ELEMENTWISE backward's own share (-1: as the forward's)
    strided_share: float = 0.0
    backward_strided_share: float = -1.0
    # MEMORY / OPTIMIZER kernels of a per-tensor chain: (bytes, working set in bytes) of the passes that may stay in
    # L2, each priced at the GPU's measured L2 copy rate for that working set (estimate.l2_reuse)
    l2_reads: tuple[tuple[float, float], ...] = ()
    backward_l2_reads: tuple[tuple[float, float], ...] = ()  # the ELEMENTWISE backward's own


class MoeExperts(StrEnum):
    """How a MoE block runs its experts (stacks.csv ``moe_experts``, or the run's transformers version)."""

    FUSED = "fused"  # today's transformers / frameworks: fused expert tensors, one GEMM per expert and matrix
    LOOP = "loop"  # transformers 4.x MixtralSparseMoeBlock: a Python loop over nn.Linear experts


@dataclass(frozen=True)
class StackKernels:
    """Which eager chains a stack runs as single fused kernels (facts.rates reads stacks.csv)."""

    fused_norm: bool = False  # RMSNorm / LayerNorm: one kernel forward, one backward
    fused_rope: bool = False  # rotary embedding of q and k: one kernel
    fused_mlp_activation: bool = False  # SiLU(gate) * up (SwiGLU) / GELU: one kernel
    fused_cross_entropy: bool = False  # output layer + loss in chunks, full logits never stored
    fused_lora: bool = False  # adapter matmuls, scaling and add fused (no casts, no extra adds)
    fuse_elementwise: bool = False  # a compiler fuses every element-wise chain between matmuls
    adapters_fp32: bool = True  # LoRA weights fp32 on a 16-bit base (peft autocast_adapter_dtype=True)
    # apex amp O2 casts the model to 16 bits: a mixed plan's stream, mask and softmax chain are 16-bit, no autocast
    model_16bit: bool = False
    sdpa_padding_mask: bool = False  # SDPA gets the batch's padding mask (transformers' models)
    torch_gelu: bool = False  # every GELU is torch's F.gelu, one kernel, whatever the config names (Lit-GPT)
    loss_logits_dtype: bool = False  # a plain loop's F.cross_entropy on 16-bit logits: no fp32 upcast ([M7])
    moe_experts: MoeExperts = MoeExperts.FUSED  # how MoE experts run (see MoeExperts)
    # checkpointing hooks the embeddings' output: freeze's backward crosses the frozen blocks unless the plan says
    embeddings_hooked: bool = False
