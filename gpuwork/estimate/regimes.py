"""The kinds of run the time model is judged on separately (docs/time_accuracy.md, "by kind of run").

Pure: a run's kinds follow from its plan, GPU and node count alone, so the accuracy pages
(``gpuwork.measure.accuracy``) and the track record shown beside an estimate (``gpuwork.estimate.band``) classify
alike.
"""

from __future__ import annotations

from gpuwork.facts.catalog import GpuClass, GpuSpec
from gpuwork.plan import UNSLOTH_STACKS, Method, Stack, TrainPlan

MULTI_NODE = "several nodes"
CONSUMER = "consumer card"
SHORT_MICRO_BATCH = "<= 1,024 tokens per micro-batch"
QLORA = "QLoRA"
TUNED = "tuned kernels (Unsloth, compiled, frameworks)"
HF_EAGER = "HF Trainer, eager"
REGIMES = (MULTI_NODE, CONSUMER, SHORT_MICRO_BATCH, QLORA, TUNED, HF_EAGER)
# a short id per regime: the track record's rows (facts/data/time_track_record.csv) and the catalog's names
REGIME_IDS = {MULTI_NODE: "multi_node", CONSUMER: "consumer", SHORT_MICRO_BATCH: "short_micro_batch", QLORA: "qlora",
              TUNED: "tuned", HF_EAGER: "hf_eager"}


def regimes(plan: TrainPlan, gpu: GpuSpec, nodes: int) -> tuple[str, ...]:
    """Which of ``REGIMES`` a run belongs to (several at once, or none)."""
    found = []
    if nodes > 1:
        found.append(MULTI_NODE)
    if gpu.gpu_class is GpuClass.CONSUMER:
        found.append(CONSUMER)
    if plan.tokens_per_micro_batch <= 1024:
        found.append(SHORT_MICRO_BATCH)
    if plan.method is Method.QLORA:
        found.append(QLORA)
    if plan.stack in UNSLOTH_STACKS or plan.stack in (Stack.TORCH_COMPILE, Stack.TORCHTUNE, Stack.FRAMEWORK):
        found.append(TUNED)
    elif plan.stack in (Stack.HF_TRAINER, Stack.HF_TRAINER_2023):
        found.append(HF_EAGER)
    return tuple(found)


__all__ = ["CONSUMER", "HF_EAGER", "MULTI_NODE", "QLORA", "REGIMES", "REGIME_IDS", "SHORT_MICRO_BATCH", "TUNED",
           "regimes"]
