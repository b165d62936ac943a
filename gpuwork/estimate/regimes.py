"""The kinds of run the time model is judged on separately (docs/time_accuracy.md, "by kind of run").

Pure: a run's kinds follow from its plan, GPU and node count, and its stack's row of ``facts/data/stacks.csv``
(``StackProfile``), so the accuracy pages (``gpuwork.measure.accuracy``) and the track record shown beside an
estimate (``gpuwork.estimate.band``) classify alike.

A stack's kind is read from what its row says it does, never from its name (``stack_regime``):

- ``TUNED``: the element-wise work around the GEMMs is fused as a whole, by a compiler or hand-written kernels
  (``fuse_elementwise``: torch.compile, torchtune, the frameworks), LoRA is fused into the projections
  (``fused_lora``: Unsloth), or the step replays a CUDA graph (``launch`` graph).
- ``EAGER``: eager PyTorch under autocast, one kernel per op (``launch`` eager), no fused kernel (every ``fused_*``
  and ``fuse_elementwise`` 0) and peft's fp32 adapters with their casts (``adapters_fp32`` 1, ``model_16bit`` 0):
  the Hugging Face Trainer and plain PyTorch loops (hf-trainer's time columns).
- neither: a stack that swaps a few ops for fused kernels and leaves the rest eager (hf-liger), or an eager one that
  casts the whole model to 16 bits and so runs without autocast's casts (dle-pytorch under apex O2, litgpt-2023
  under Fabric bf16-true). Their steps are unlike both kinds', so neither row speaks for them.

Limitations: the rule sorts the stacks stacks.csv has; a new row whose step is unlike these lands where its columns
put it, which may need a look.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuwork.facts.catalog import GpuClass, GpuSpec
from gpuwork.facts.rates import StackProfile, load_rates
from gpuwork.plan import Method, Stack, TrainPlan

MULTI_NODE = "several nodes"
CONSUMER = "consumer card"
SHORT_MICRO_BATCH = "<= 1,024 tokens per micro-batch"
QLORA = "QLoRA"
TUNED = "tuned kernels (Unsloth, compiled, frameworks)"
EAGER = "eager PyTorch (HF Trainer, plain loops)"
REGIMES = (MULTI_NODE, CONSUMER, SHORT_MICRO_BATCH, QLORA, TUNED, EAGER)
# a short id per regime: the track record's rows (facts/data/time_track_record.csv) and the catalog's names
REGIME_IDS = {MULTI_NODE: "multi_node", CONSUMER: "consumer", SHORT_MICRO_BATCH: "short_micro_batch", QLORA: "qlora",
              TUNED: "tuned", EAGER: "eager"}


def stack_regime(profile: StackProfile) -> str | None:
    """``TUNED``, ``EAGER`` or None for a stack, from its stacks.csv columns (the rule in the module docstring)."""
    if profile.fuse_elementwise or profile.fused_lora or profile.launch == "graph":
        return TUNED
    fused = (profile.fused_norm, profile.fused_rope, profile.fused_mlp_activation, profile.fused_cross_entropy)
    if not any(fused) and profile.adapters_fp32 and not profile.model_16bit:
        return EAGER
    return None


def regimes(plan: TrainPlan, gpu: GpuSpec, nodes: int,
            stacks: Mapping[Stack, StackProfile] | None = None) -> tuple[str, ...]:
    """Which of ``REGIMES`` a run belongs to (several at once, or none); ``stacks``: the stack profiles (default:
    those of the data folder in use)."""
    found = []
    if nodes > 1:
        found.append(MULTI_NODE)
    if gpu.gpu_class is GpuClass.CONSUMER:
        found.append(CONSUMER)
    if plan.tokens_per_micro_batch <= 1024:
        found.append(SHORT_MICRO_BATCH)
    if plan.method is Method.QLORA:
        found.append(QLORA)
    kind = stack_regime((load_rates().stacks if stacks is None else stacks)[plan.stack])
    if kind is not None:
        found.append(kind)
    return tuple(found)


__all__ = ["CONSUMER", "EAGER", "MULTI_NODE", "QLORA", "REGIMES", "REGIME_IDS", "SHORT_MICRO_BATCH", "TUNED",
           "regimes", "stack_regime"]
