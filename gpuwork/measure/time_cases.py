"""Published end-to-end training throughputs and the plans that reproduce their setups.

Pure data: every case quotes a number its source measured, with the configuration the source
states and, in ``notes``, what it leaves unstated and what was assumed here. Nothing in this
module was fitted to an estimate, and no estimate may be fitted to it. The sources, with the
tables quoted verbatim, are in docs/time_cases_sources.md.

``metric`` says what ``measured`` is:

* ``tokens_per_s_per_gpu``: tokens per second on one GPU, as the source logs it;
* ``tokens_per_s``: tokens per second over the whole job (all GPUs);
* ``samples_per_s``: samples per second over the whole job;
* ``step_s``: seconds per optimizer step.

``measured_time_s`` and ``samples`` are set where the source reports the wall time of a run of
a known number of samples (its samples/s is then ``samples / measured_time_s``).

``covers`` says what the figure's time spans beyond steady-state training steps (``Covers``): the first
steps, start-up, evaluations and checkpoint saves the source's own timing holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from gpuwork.facts.catalog import GB, GpuClass, GpuSpec, Link, get_gpu
from gpuwork.plan import (
    Attention,
    Method,
    OptimizerImpl,
    Precision,
    Recompute,
    Sharding,
    Stack,
    Task,
    TrainPlan,
)

METRICS = ("tokens_per_s_per_gpu", "tokens_per_s", "samples_per_s", "step_s")


@dataclass(frozen=True)
class Covers:
    """What a published figure's time spans besides the steady-state training steps it is compared with.

    Written in the case data as a list of words: ``"steps"`` first, then any of ``"first_steps"``,
    ``"start_up"``, ``"eval_every:N"``, ``"save_every:N"`` and ``"final_save_full"`` (N: optimizer steps).
    """

    first_steps: bool = False  # timed from step 1: CUDA/NCCL set-up, allocator and kernel caches, compilation
    start_up: bool = False  # model loading and set-up before the first step
    eval_every: int | None = None  # an evaluation every N optimizer steps
    save_every: int | None = None  # a resumable checkpoint every N optimizer steps
    final_save_full: bool = False  # the whole model's weights gathered and written once at the end

    _FLAGS = ("first_steps", "start_up", "final_save_full")
    _EVERY = ("eval_every", "save_every")

    @classmethod
    def parse(cls, words: Any) -> Covers:
        """The field from its list of words (None: the steps alone); ValueError names what is wrong."""
        if words is None:
            return cls()
        if not isinstance(words, list | tuple) or not words or words[0] != "steps":
            raise ValueError(f"covers must be a list of words starting with 'steps', got {words!r}")
        given: dict[str, Any] = {}
        for word in words[1:]:
            key, _, count = str(word).partition(":")
            if key in cls._FLAGS and not count:
                given[key] = True
            elif key in cls._EVERY and count.isdigit() and int(count) > 0:
                given[key] = int(count)
            else:
                raise ValueError(f"covers: {word!r} is not one of {', '.join(cls._FLAGS)}, eval_every:N, save_every:N")
        return cls(**given)

    def words(self) -> tuple[str, ...]:
        """The list of words the case data holds, in the fields' order."""
        words = ["steps"]
        for part in fields(self):
            value = getattr(self, part.name)
            if value:
                words.append(part.name if value is True else f"{part.name}:{value}")
        return tuple(words)

    @property
    def needs_steps(self) -> bool:
        """Whether pricing it needs the run's optimizer steps (saves are counted per step)."""
        return self.save_every is not None or self.final_save_full


STEPS_ONLY = Covers()


@dataclass(frozen=True)
class TimeCase:
    """One published throughput measurement and the plan that reproduces its setup."""

    name: str
    plan: TrainPlan
    gpu_id: str  # gpus.csv id, or the id of one of EXTRA_GPUS
    metric: str  # one of METRICS
    measured: float  # in `metric`, as the source reports it
    source: str  # repo:path@commit or URL, and the table/row
    source_id: str  # one tag per independent source
    notes: str = ""  # what the source does not state and what was assumed
    measured_time_s: float | None = None  # the source's own run time, when it gives one
    samples: int | None = None  # samples in that run
    # how the run's software ran MoE experts where it differs from its stack's (estimate_time moe_experts):
    # "loop" for transformers 4.x, whose MoE blocks loop over nn.Linear experts; None = the stack's
    moe_experts: str | None = None
    # the run's nodes and inter-node network (estimate_time's nodes/network); None = the published cases' rule:
    # 8 GPUs per node joined by one 400 Gb/s NIC per GPU (gpuwork.measure.accuracy.CLUSTER_NETWORK)
    nodes: int | None = None
    network: str | None = None
    # the model's config.json values when no preset holds the architecture (held-out cases carry them inline)
    model_config: Mapping[str, Any] | None = field(default=None, compare=False)
    covers: Covers = STEPS_ONLY  # what the figure's time spans beyond the steps
    # the GPUs' link inside a node (estimate_time's link) where the source names one the GPU's best is not, e.g.
    # "pcie" for two bridgeable cards run without their bridge; None = the GPU's best link
    link: str | None = None

    def __post_init__(self) -> None:
        if self.covers.needs_steps and self.samples is None:
            raise ValueError(f"TimeCase {self.name!r}: covers {self.covers.words()} needs the run's samples")
        if self.metric not in METRICS:
            raise ValueError(f"TimeCase {self.name!r}: metric {self.metric!r} is not one of {', '.join(METRICS)}")
        if not (math.isfinite(self.measured) and self.measured > 0):
            raise ValueError(f"TimeCase {self.name!r}: measured must be a finite positive number, got {self.measured!r}")


# -- GPUs the catalog does not list (it lists GPUs rented today) -------------------------------------

# The HF transformers perf docs ran on a V100 16 GB. Its figures, from NVIDIA's Tesla V100 datasheet
# (SXM2): 125 TFLOPS FP16 tensor (Volta has no sparsity, so this is dense), 15.7 TFLOPS FP32,
# 900 GB/s HBM2, 16 GB; Volta has no BF16 at all (bf16_dense_flops holds the FP32 rate, a bound no
# bf16 run beats); nvidia-smi shows 16,160 MiB (torch reports total_memory=16160MB for Tesla
# V100-SXM2-16GB in public logs).
V100_SXM2_16GB = GpuSpec(
    gpu_id="v100_sxm2_16gb", display_name="Tesla V100 SXM2 16GB", vendor="NVIDIA", architecture="Volta GV100",
    gpu_class=GpuClass.SERVER, form_factor="SXM2", memory_bytes=16 * GB, mem_bw_bytes_s=900e9,
    bf16_dense_flops=15.7e12, fp16_dense_flops=125e12, fp8_dense_flops=None, fp32_flops=15.7e12,
    link=Link.PCIE, link_bw_bytes_s=15.75e9, pcie_gen=3, compute_capability="7.0", tdp_w=300, status="V",
    sources=("NVIDIA Tesla V100 datasheet",), notes="accuracy cases only; NVLink2 cube-mesh not modelled",
    memory_total_mib=16160, memory_total_source="nvidia-smi",
    sm_count=80,  # datasheet: 5,120 CUDA cores and 640 tensor cores = 80 SMs of 64 FP32 lanes and 8 tensor cores
    kernel_family="a100",  # no Volta attention measurement: the FA2 paper's A100 shares, stated
)

# torchtitan's 2025 benchmarks ran on Meta's Grand Teton hosts: "8 NVIDIA H100 GPUs fully connected
# with NVLink", "96GB HBM2e with 2.4 TB/sec peak memory bandwidth", "default 500W power limit", and
# "the actual peak TFLOPs number is between SXM and NVL, and we don't know its exact value"
# (docs/performance.md, commit d4c86e3). Peak FLOPS here are the SXM figures, the upper end of that
# range and the value torchtitan's own MFU divides by; memory and bandwidth are the source's.
H100_HBM2E_96GB = GpuSpec(
    gpu_id="h100_hbm2e_96gb", display_name="H100 96GB HBM2e (Grand Teton, 500 W)", vendor="NVIDIA",
    architecture="Hopper GH100", gpu_class=GpuClass.SERVER, form_factor="SXM5 (Grand Teton)",
    memory_bytes=96 * GB, mem_bw_bytes_s=2.4e12, bf16_dense_flops=989e12, fp16_dense_flops=989e12,
    fp8_dense_flops=1979e12, fp32_flops=67e12, link=Link.NVLINK_SWITCH, link_bw_bytes_s=450e9, pcie_gen=5,
    compute_capability="9.0", tdp_w=500, status="S", sources=("pytorch/torchtitan docs/performance.md @d4c86e3",),
    notes="accuracy cases only; peak FLOPS are the H100 SXM figures (an upper bound at 500 W); "
          "hosts joined by 400 Gb/s RDMA per GPU",
    kernel_family="h100",
)

EXTRA_GPUS: dict[str, GpuSpec] = {g.gpu_id: g for g in (V100_SXM2_16GB, H100_HBM2E_96GB)}


def case_gpu(gpu_id: str) -> GpuSpec:
    """A case's GPU: one of EXTRA_GPUS (cards the catalog does not sell), else the catalog's."""
    return EXTRA_GPUS.get(gpu_id) or get_gpu(gpu_id)

# a run timed as a whole (train_runtime, a timed loop): its first steps are in the figure
_FROM_FIRST_STEP = Covers(first_steps=True)


def _cases(base: TrainPlan, rows: list[tuple], *, metric: str, source: str, source_id: str,
           notes: str, moe_experts: str | None = None, covers: Covers = STEPS_ONLY) -> list[TimeCase]:
    """TimeCases from rows of (name, gpu_id, plan changes, measured, row notes); ``notes`` is shared."""
    return [TimeCase(name=name, plan=base.replace(**changes), gpu_id=gpu_id, metric=metric, measured=measured,
                     source=source, source_id=source_id, notes=" ".join(filter(None, [notes, row_notes])),
                     moe_experts=moe_experts, covers=covers)
            for name, gpu_id, changes, measured, row_notes in rows]


# -- 1. HF transformers perf docs: bert-large-uncased on one V100 (2021) ----------------------------

_HF_DOCS = ("huggingface/transformers docs/source/en/model_memory_anatomy.md and the older perf_train_gpu_one "
            "page (docs/time_cases_sources.md, section 1): bert-large-uncased, 512 samples of 512 tokens, "
            "HF Trainer")
_BERT = TrainPlan(model="bert-large-uncased", task=Task.SEQ_CLS, method=Method.FULL, precision=Precision.FP32,
                  seq_len=512, batch_size=4, attention=Attention.EAGER, eval_fraction=0.0,
                  optimizer_impl=OptimizerImpl.FOR_LOOP)
_GA = {"batch_size": 1, "grad_accum": 4}
_AMP = {"precision": "fp16-mixed"}
_GC = {"grad_checkpointing": True}


def _bert_cases() -> list[TimeCase]:
    rows: list[tuple[str, dict[str, Any], float, float]] = [  # label, plan changes, run time s, samples/s
        ("bs 4, fp32", {}, 57.82, 8.86),
        ("bs 1, GA 4", _GA, 66.03, 7.75),
        ("bs 1, GA 4, gradient checkpointing", {**_GA, **_GC}, 85.47, 5.99),
        ("bs 4, fp16 AMP", _AMP, 27.46, 18.64),
        ("bs 1, GA 4, GC, fp16", {**_GA, **_GC, **_AMP}, 50.76, 10.09),
        ("bs 4, Adafactor", {"optimizer": "adafactor"}, 64.31, 7.96),
        ("bs 1, GA 4, GC, fp16, Adafactor", {**_GA, **_GC, **_AMP, "optimizer": "adafactor"}, 56.54, 9.06),
        ("bs 4, bnb Adam8bit", {"optimizer": "adamw-8bit"}, 55.95, 9.15),
        ("bs 1, GA 4, GC, fp16, Adam8bit", {**_GA, **_GC, **_AMP, "optimizer": "adamw-8bit"}, 49.46, 10.35),
    ]
    return [TimeCase(name=f"bert-large {label}", plan=_BERT.replace(**changes), gpu_id=V100_SXM2_16GB.gpu_id,
                     metric="samples_per_s", measured=samples_s, source=_HF_DOCS, source_id="hf-transformers-docs",
                     notes="Dummy data, sequence classification, AdamW unless noted; the docs do not name the V100 "
                           "variant (SXM2 16 GB assumed) nor the attention kernel (eager, the 2021 BERT default). "
                           "The Trainer's default optimizer then was transformers.AdamW, a per-parameter loop "
                           "(optimizer_impl='for-loop'). The time is the Trainer's train_runtime of the whole "
                           "run, first steps included.",
                     measured_time_s=time_s, samples=512, covers=_FROM_FIRST_STEP)
            for label, changes, time_s, samples_s in rows]


# -- 2. PEFT MetaMathQA method comparison: Llama-3.2-3B on one L40S ----------------------------------

_PEFT = ("huggingface/peft method_comparison/MetaMathQA/results/{full-finetuning--llama-3.2-3B-lr_0.00001,"
         "lora--llama-3.2-3B-rank32,lora--llama-3.2-3B-rank64,lora--llama-3.2-3B-rank10-target-mlp}.json "
         "(docs/time_cases_sources.md, section 2)")
# The runs train 20,000 MetaMathQA samples holding 4,198,051 tokens in all ("train samples", "train total
# tokens" in each result file): 210 tokens per sample on average. Batches of 4 are bucketed by length (run.py
# BucketIterator), so they are padded to about that length; 768 is only the truncation limit.
_PEFT_PLAN = TrainPlan(model="llama-3.2-3b", method=Method.FULL, precision=Precision.BF16, seq_len=210,
                       batch_size=4, eval_fraction=0.0)


def _peft_cases() -> list[TimeCase]:
    rows = [
        ("Llama-3.2-3B full fine-tuning", "l40s", {}, 2316, ""),
        ("Llama-3.2-3B LoRA r32 q,v", "l40s", {"method": "lora", "lora_r": 32, "lora_alpha": 64}, 7174, ""),
        ("Llama-3.2-3B LoRA r64 q,v", "l40s", {"method": "lora", "lora_r": 64, "lora_alpha": 128}, 7062, ""),
        ("Llama-3.2-3B LoRA r10 MLP", "l40s", {"method": "lora", "lora_r": 10, "lora_alpha": 20,
                                               "lora_targets": ("gate_proj", "up_proj", "down_proj")}, 6309, ""),
    ]
    return _cases(_PEFT_PLAN, rows, metric="tokens_per_s", source=_PEFT, source_id="peft-metamathqa",
                  notes="Pure bf16, torch AdamW, SDPA, no checkpointing, no compile, 5,000 steps of batch 4, in "
                        "run.py's own eager loop (hf-trainer is the nearest stack). Batches are real MetaMathQA "
                        "samples bucketed by length and truncated at 768 tokens; the result files count 4,198,051 "
                        "tokens in 20,000 samples, so seq_len is their mean, 210. tokens/s is the files' "
                        "'tokens / sec' (real tokens over the summed step times, evaluation excluded).")


# -- 3. torchtune README: Llama 3.1 / 3.2 with torchtune recipes ------------------------------------

_TT_README = ("pytorch/torchtune README.md \"Memory and training speed\" @30b8519e86d2094879576e16ab1f8d21a6f6f9f7 "
              "(2024-09-24); recipe configs recipes/configs/llama3_1/*.yaml at the same commit")
_TT_FLAGS = ("pytorch/torchtune README.md \"Optimization flags\" @1814feb17a9038e1a8053ce93111bd26774a8db6 "
             "(2024-11-18); recipe configs recipes/configs/llama3_2/3B_*_single_device.yaml at the same commit")
_TT_METRIC = ("torchtune recipes log tokens_per_second_per_gpu = tokens of rank 0's batches / step time "
              "(recipes/*_finetune_*.py). No gradient clipping: none of the configs sets clip_grad_norm, and the "
              "recipes read cfg.get(\"clip_grad_norm\", None) and clip only when it is set (grad_clip false; "
              "corrected 2026-12-03, it was priced before).")
_TT_PLAN = TrainPlan(model="llama-3.1-8b", method=Method.FULL, precision=Precision.BF16, seq_len=2048,
                     batch_size=2, grad_accum=1, grad_checkpointing=True, attention=Attention.SDPA,
                     stack=Stack.TORCHTUNE, eval_fraction=0.0,
                     # no config sets clip_grad_norm; the recipes clip only when it is set (docs/grad_clip.md)
                     grad_clip=False)
_TT_LORA8 = {"method": "lora", "lora_r": 8, "lora_alpha": 16, "lora_targets": ("q_proj", "v_proj"),
             "optimizer_impl": "fused"}
_TT_QLORA8 = {"method": "qlora", "lora_r": 8, "lora_alpha": 16, "optimizer_impl": "fused",
              "lora_targets": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")}


def _torchtune_cases() -> list[TimeCase]:
    full_8b = {"optimizer": "paged-adamw-8bit"}
    full_note = ("8B_full_single_device.yaml: bitsandbytes PagedAdamW8bit with optimizer_in_bwd=True (step fused into "
                 "backward, not expressible; plan runs the step after backward), chunked cross-entropy.")
    readme = [
        ("torchtune Llama-3.1-8B full 1x4090", "rtx4090", full_8b, 1650, full_note),
        ("torchtune Llama-3.1-8B full 1xA6000", "rtx_a6000", full_8b, 2579, full_note),
        ("torchtune Llama-3.1-8B LoRA 1x4090", "rtx4090", _TT_LORA8, 3083,
         "8B_lora_single_device.yaml: rank 8, alpha 16, q_proj+v_proj, AdamW fused; config GA 64 overridden to 1."),
        ("torchtune Llama-3.1-8B LoRA 1xA6000", "rtx_a6000", _TT_LORA8, 4699,
         "8B_lora_single_device.yaml: rank 8, alpha 16, q_proj+v_proj, AdamW fused; config GA 64 overridden to 1."),
        ("torchtune Llama-3.1-8B QLoRA 1x4090", "rtx4090", _TT_QLORA8, 2413,
         "8B_qlora_single_device.yaml: NF4 base (torchao), rank 8, alpha 16, q,k,v,output_proj + MLP, AdamW fused; "
         "config GA 16 overridden to 1. torchao NF4, not bitsandbytes; double quantization as torchao does it."),
        ("torchtune Llama-3.1-70B full 8xA100", "a100_80_sxm",
         {"model": "llama-3.1-70b", "gpus": 8, "sharding": "fsdp", "offload_params": True, "offload_optimizer": True,
          "optimizer_impl": "fused"}, 1568,
         "70B_full.yaml: FSDP2 with fsdp_cpu_offload=True (parameters, gradients and the fused AdamW step on the "
         "CPU), tok_embeddings/output sharded separately. README says '8x A100' without memory size or form "
         "factor: 80 GB SXM assumed."),
        ("torchtune Llama-3.1-70B LoRA 8xA100", "a100_80_sxm",
         {"model": "llama-3.1-70b", "gpus": 8, "sharding": "fsdp", "method": "lora", "lora_r": 16, "lora_alpha": 32,
          "lora_targets": ("q_proj", "k_proj", "v_proj"), "optimizer_impl": "fused"}, 3497,
         "70B_lora.yaml: FSDP2, rank 16, alpha 32, q,k,v, AdamW fused. '8x A100': 80 GB SXM assumed."),
    ]
    out = _cases(_TT_PLAN, readme, metric="tokens_per_s_per_gpu", source=_TT_README, source_id="torchtune",
                 notes="README: batch size 2, no gradient accumulation, alpaca packed to 2048 tokens, torch.compile "
                       "on, 'measured over one full training epoch'; configs: bf16 weights and optimizer states, "
                       "activation checkpointing on, SDPA. " + _TT_METRIC)
    # the eager row stands in the hf-trainer stack for its kernels; its optimizer is still the recipe's torch AdamW,
    # built from the config's keys: torch's default weight_decay 0.01 (TrainPlan.weight_decay_in_effect's torchtune)
    flags_plan = _TT_PLAN.replace(model="llama-3.2-3b", seq_len=4096, grad_checkpointing=False,
                                  stack=Stack.HF_TRAINER, weight_decay=0.01)
    lora64 = {"lora_r": 64, "lora_alpha": 128, "optimizer_impl": "fused", "grad_checkpointing": True,
              "stack": "torchtune",
              "lora_targets": ("q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")}
    lora_note = ("3B_{q,}lora_single_device.yaml: rank 64, alpha 128, q,v,output_proj + MLP, AdamW fused; packed, "
                 "compile, chunked cross-entropy, activation checkpointing and activation offloading on (offloading "
                 "is not expressible; its row in the same table changed tokens/s by -0.11 %).")
    flags = [
        ("torchtune Llama-3.2-3B full packed 1xA100", "a100_80_sxm", {}, 7075,
         "Row '+ Packed Dataset': no compile (eager kernels, so stack hf-trainer is the nearest), no checkpointing, "
         "torch AdamW (fused/foreach not stated: foreach assumed), standard cross-entropy."),
        ("torchtune Llama-3.2-3B full packed+compile 1xA100", "a100_80_sxm", {"stack": "torchtune"}, 8998,
         "Row '+ Compile': as the row above with torch.compile (stack torchtune: compiled, adapters in the model dtype)."),
        ("torchtune Llama-3.2-3B full packed+compile+AC 1xA100", "a100_80_sxm",
         {"stack": "torchtune", "grad_checkpointing": True}, 7210,
         "Row '+ Activation Checkpointing': compile, chunked cross-entropy (not expressible) and activation "
         "checkpointing."),
        ("torchtune Llama-3.2-3B LoRA 1xA100", "a100_80_sxm", {"method": "lora", **lora64}, 8210, lora_note),
        ("torchtune Llama-3.2-3B QLoRA 1xA100", "a100_80_sxm", {"method": "qlora", **lora64}, 8035,
         lora_note + " NF4 base via torchao."),
    ]
    out += _cases(flags_plan, flags, metric="tokens_per_s_per_gpu", source=_TT_FLAGS, source_id="torchtune",
                  notes="Baseline: full_finetune_single_device, Llama 3.2 3B, batch size 2, max sequence length "
                        "4096 (packed, so every sequence is full), bf16, 'Hardware: A100' (memory size not "
                        "stated; peak 60 GiB active in the packed row means 80 GB; SXM assumed). " + _TT_METRIC)
    return out


# -- 4. torchtitan docs/performance.md: Llama pre-training with FSDP2 --------------------------------

_TITAN_2025 = ("pytorch/torchtitan docs/performance.md @d4c86e3758a84cf23e2e879ab3c995cba9d5e410 (2025-01-30), "
               "Tables 1 and 3; train_configs/llama3_8b.toml at torchtitan 9dec370 (the version it names)")
_TITAN_2024 = ("pytorch/torchtitan docs/performance.md @157a12c562288b3bccb077003a97f18a4ca657aa (2024-04-24), "
               "'Llama 3/Llama 2 performance numbers'; train_configs/*.toml at the same commit")
_TITAN_PLAN = TrainPlan(model="llama-3.1-8b", method=Method.SCRATCH, precision=Precision.BF16_MIXED, seq_len=8192,
                        batch_size=2, grad_checkpointing=True, recompute=Recompute.OPS, attention=Attention.SDPA,
                        sharding=Sharding.FSDP, gpus=8, stack=Stack.FRAMEWORK, eval_fraction=0.0)
_SELECTIVE_OP = ("Selective op activation checkpointing (saves matmul and SDPA outputs, recomputes the rest and "
                 "every second matmul): recompute 'ops' (docs/recompute.md).")
_FULL_AC = {"recompute": Recompute.BLOCK}  # mode 'full': the whole block again


# torchtitan's rows without torch.compile ran its model code op by op: RMSNorm as x.float(), pow, mean, rsqrt and
# multiplies (norms.py, norm_type "rmsnorm"), RoPE through complex multiplies, SwiGLU as w2(F.silu(w1(x)) * w3(x))
# and the loss over .float() logits; stack 'framework' prices these fused, 'hf-trainer' op by op (stacks.csv).
_TITAN_EAGER = {"stack": Stack.HF_TRAINER}
_TITAN_URL = "https://github.com/pytorch/torchtitan/blob/"
_EAGER_2025 = ("Run without torch.compile: Table 1/3 row 'FSDP' against 'FSDP + torch.compile' (" + _TITAN_URL +
               "d4c86e3758a84cf23e2e879ab3c995cba9d5e410/docs/performance.md); the config it names has 'compile = "
               "false' and 'norm_type = \"rmsnorm\"' (" + _TITAN_URL + "9dec370ad26b5f8e9a7333a0e36165018262644b/"
               "train_configs/llama3_8b.toml), torchtitan's Python RMSNorm ('output = self._norm(x.float())"
               ".type_as(x)', torchtitan/models/norms.py at 9dec370): every element-wise op ran eager, so stack "
               "hf-trainer (no HF Trainer involved; fixed-length rows).")
_EAGER_2024 = ("Configs at the same commit: 'compile = false' (" + _TITAN_URL +
               "157a12c562288b3bccb077003a97f18a4ca657aa/train_configs/{toml}); model code runs RoPE as complex "
               "multiplies, 'self.w2(F.silu(self.w1(x)) * self.w3(x))' and 'self.output(h).float()' "
               "(torchtitan/models/llama/model.py at 157a12c): stack hf-trainer (eager element-wise ops, no HF "
               "Trainer involved; fixed-length rows).")
_FUSED_NORM_2024 = (" Its norm_type is 'fused_rmsnorm' (torchtitan's Triton kernel), so only the norms ran fused: "
                    "hf-trainer prices them op by op, an over-statement of this row's norm time.")
_PY_NORM_2024 = " Its norm_type is 'rmsnorm' (torchtitan's Python RMSNorm, op by op)."


def _torchtitan_cases() -> list[TimeCase]:
    compile_note = "torch.compile on: stack framework (compiled element-wise kernels)."
    h100 = [
        ("torchtitan Llama-3.1-8B FSDP 8xH100", H100_HBM2E_96GB.gpu_id, _TITAN_EAGER, 5762, _EAGER_2025),
        ("torchtitan Llama-3.1-8B FSDP+compile 8xH100", H100_HBM2E_96GB.gpu_id, {}, 6667, compile_note),
        ("torchtitan Llama-3.1-8B FSDP 128xH100", H100_HBM2E_96GB.gpu_id, {"gpus": 128, **_TITAN_EAGER}, 5605,
         _EAGER_2025),
        ("torchtitan Llama-3.1-8B FSDP+compile 128xH100", H100_HBM2E_96GB.gpu_id, {"gpus": 128}, 6514, compile_note),
    ]
    out = _cases(_TITAN_PLAN, h100, metric="tokens_per_s_per_gpu", source=_TITAN_2025, source_id="torchtitan",
                 notes="1D FSDP2, local batch size 2, seq_len 8192 (config), C4 pre-training, bf16 params with fp32 "
                       "reduce and fp32 master weights, AdamW foreach, no Float8 in these rows. TPS/GPU read at "
                       "iteration 90. GPUs: H100 96 GB HBM2e at 500 W (see H100_HBM2E_96GB). " + _SELECTIVE_OP)
    eager_8b = _EAGER_2024.format(toml="llama3_8b.toml") + _FUSED_NORM_2024
    a100 = [
        ("torchtitan Llama-3-8B FSDP 64xA100", "a100_80_sxm", {"batch_size": 1}, 2973,
         "Llama 3 8B row 'selective op' (MFU 58.2 %); Llama 3 and 3.1 8B have the same shapes and parameter "
         "count (only RoPE scaling differs), so the llama-3.1-8b preset is used. " + _SELECTIVE_OP + " " + eager_8b),
        ("torchtitan Llama-3-70B FSDP 64xA100", "a100_80_sxm",
         {"model": "llama-3.1-70b", "batch_size": 1, **_FULL_AC}, 331,
         "Llama 3 70B row, full activation checkpointing (MFU 51.7 %); llama-3.1-70b preset, same shapes as "
         "Llama 3 70B. " + _EAGER_2024.format(toml="llama3_70b.toml") + _PY_NORM_2024),
        ("torchtitan Llama-2-13B FSDP no AC 64xA100", "a100_80_sxm",
         {"model": "llama-2-13b", "seq_len": 4096, "grad_checkpointing": False}, 2162,
         "Llama 2 13B row, batch size 2, no activation checkpointing (MFU 61.1 %); seq_len 4096 (config). "
         + _EAGER_2024.format(toml="llama2_13b.toml") + _FUSED_NORM_2024),
        ("torchtitan Llama-2-70B FSDP 64xA100", "a100_80_sxm", {"model": "llama-2-70b", "seq_len": 4096, **_FULL_AC},
         353,
         "Llama 2 70B row, batch size 2, full activation checkpointing (MFU 50.5 %); seq_len 4096 (config). "
         + _EAGER_2024.format(toml="llama2_70b.toml") + _PY_NORM_2024),
    ]
    out += _cases(_TITAN_PLAN.replace(gpus=64, **_TITAN_EAGER), a100, metric="tokens_per_s_per_gpu",
                  source=_TITAN_2024, source_id="torchtitan",
                  notes="FSDP2 (1D) on 64 A100 80GB (form factor not stated: SXM assumed), C4, bf16 params with "
                        "fp32 reduce, AdamW foreach=True, no compile; WPS is per GPU (the table's MFU matches "
                        "per-GPU tokens/s).")
    return out


# -- 5. fms-acceleration benchmarks: HF Trainer (fms-hf-tuning) on A100 80GB -----------------------

_FMS = ("foundation-model-stack/fms-acceleration scripts/benchmarks/refs/a100_80gb.csv "
        "@24bdadb228e2d55bc0c69deec034b86a73da6917 (2025-02-07), framework_config 'none' and 'baseline-peft-bnb' "
        "rows; scenarios.yaml, defaults.yaml, accelerate.yaml, benchmark.py at the same commit")
_FMS_PLAN = TrainPlan(model="mistral-7b", method=Method.FULL, precision=Precision.BF16, seq_len=4096,
                      batch_size=4, grad_checkpointing=True, attention=Attention.FLASH, stack=Stack.HF_TRAINER,
                      eval_fraction=0.0)
_FMS_LORA = {"method": "lora", "lora_r": 16, "lora_alpha": 16, "lora_dropout": 0.1,
             "lora_targets": ("q_proj", "k_proj", "v_proj", "o_proj")}
_FSDP2 = {"gpus": 2, "sharding": "fsdp"}


def _fms_cases() -> list[TimeCase]:
    qlora_note = ("baseline-peft-bnb: bitsandbytes NF4 base, standard PEFT; double quantization not stated "
                  "(plan default on). The bnb plugin prepares the model with its own copy of peft's "
                  "prepare_model_for_kbit_training without the fp32 upcast (framework_plugin_bnb.py at the same "
                  "commit: it 'will cause problems in the LoraLayers ... greatly reduced throughput'): kbit_upcast "
                  "false.")
    qlora = {**_FMS_LORA, "method": "qlora", "kbit_upcast": False}
    rows = [
        ("fms Mistral-7B full 1xA100", "a100_80_sxm", {}, 3062.694, ""),
        ("fms Mistral-7B full FSDP 2xA100", "a100_80_sxm", {**_FSDP2, "batch_size": 2}, 2777.18, ""),
        ("fms Mistral-7B LoRA 1xA100", "a100_80_sxm", _FMS_LORA, 3324.155, ""),
        ("fms Mistral-7B LoRA FSDP 2xA100", "a100_80_sxm", {**_FMS_LORA, **_FSDP2}, 3168.613, ""),
        ("fms Mistral-7B QLoRA 1xA100", "a100_80_sxm", qlora, 2903.78, qlora_note),
        ("fms Mixtral-8x7B QLoRA 1xA100", "a100_80_sxm", {**qlora, "model": "mixtral-8x7b"},
         1528.07, qlora_note + " Model mistralai/Mixtral-8x7B-Instruct-v0.1 (same shapes as the base preset)."),
        ("fms Mixtral-8x7B LoRA FSDP 2xA100", "a100_80_sxm",
         {**_FMS_LORA, **_FSDP2, "batch_size": 2, "model": "mixtral-8x7b"}, 1571.223,
         "Model mistralai/Mixtral-8x7B-Instruct-v0.1 (same shapes as the base preset)."),
        ("fms Llama-2-70B QLoRA FSDP 2xA100", "a100_80_sxm",
         {**qlora, **_FSDP2, "batch_size": 2, "model": "llama-2-70b"}, 433.53,
         qlora_note + " Model NousResearch/Llama-2-70b-hf (a copy of meta-llama/Llama-2-70b-hf)."),
    ]
    return _cases(_FMS_PLAN, rows, metric="tokens_per_s_per_gpu", source=_FMS, source_id="fms-acceleration",
                  notes="fms-hf-tuning 2.5.0 sft_trainer (HF Trainer + TRL), transformers 4.48.1, torch 2.4.1; "
                        "alpaca packed to max_seq_len 4096, 100 steps, GA 1, gradient checkpointing on, flash "
                        "attention 2, torch_dtype bfloat16 (pure bf16 weights; AdamW adamw_torch default, foreach "
                        "assumed); 2 GPUs: accelerate FSDP FULL_SHARD, BACKWARD_PRE prefetch, no offload. "
                        "train_tokens_per_second is per device: 100 steps x per-device batch x 4096 / train_runtime "
                        "reproduces it. 'A100 80GB': SXM assumed. transformers 4.48.1 runs Mixtral's experts as "
                        "nn.Linear modules in a Python loop (MixtralSparseMoeBlock), priced as moe_experts='loop'.",
                  moe_experts="loop", covers=_FROM_FIRST_STEP)


# -- 6. Answer.AI "Benchmarking QLoRA+FSDP" (fsdp_qlora train.py, Feb-Mar 2024) --------------------

_ANSWERAI = ("AnswerDotAI/fsdp_qlora benchmarks_03_2024.md @e877dda5026dfd964cccdb92a4532da587cbdae0 (2024-05-03; "
             "runs Feb-Mar 2024); train.py defaults at 7242daa (last train.py commit before 2024-03-25)")
_ANSWERAI_PLAN = TrainPlan(model="llama-2-7b", method=Method.QLORA, precision=Precision.BF16, seq_len=2048,
                           batch_size=1, grad_checkpointing=True, attention=Attention.SDPA, lora_r=64, lora_alpha=16,
                           lora_dropout=0.1,
                           lora_targets=("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "down_proj"),
                           gpus=2, sharding=Sharding.FSDP, stack=Stack.HF_TRAINER, eval_fraction=0.0,
                           # train.py @7242daa: precision bf16 loads the model in bf16 (torch_dtype, compute_dtype =
                           # bf16, bf16) and never calls prepare_model_for_kbit_training: norms stay bf16
                           kbit_upcast=False,
                           # train.py @7242daa: apply_gradient_clipping defaults to False; the commands leave it
                           grad_clip=False)
_ANSWERAI_SAMPLES = 1024


def _ga_to_32(gpus: int, batch: int) -> int:
    """The 70B table aims at 'an effective batch size of 32 (or the closest we could get)'."""
    return max(1, round(32 / (gpus * batch)))


def _answerai_cases() -> list[TimeCase]:
    rows: list[tuple[str, str, dict[str, Any], float, str]] = [  # name, gpu_id, plan changes, run time s, notes
        ("answerai Llama-2-7B LoRA DDP 2x4090", "rtx4090",
         {"method": "lora", "sharding": "ddp", "batch_size": 4}, 437,
         "Dual 4090 table: no NVLink, full PCIe 4.0 x16 to both GPUs, up to 400 W per card."),
        ("answerai Llama-2-7B QLoRA DDP 2x4090", "rtx4090", {"sharding": "ddp", "batch_size": 8}, 450,
         "Dual 4090 table."),
        ("answerai Llama-2-7B QLoRA FSDP 2x4090", "rtx4090", {"batch_size": 10}, 466,
         "Dual 4090 table; FSDP full shard."),
        ("answerai Llama-2-7B QLoRA DDP 2x3090", "rtx3090", {"sharding": "ddp", "batch_size": 8}, 875,
         "Dual 3090 'basement rig': no NVLink, older motherboard with slow PCIe lanes, 3090s power-limited to "
         "280 W (stock 350 W)."),
    ]
    seventy = [  # gpu_id, gpus, batch, run time s, label
        ("rtx_a5000", 4, 1, 4829, "4xA5000"),
        ("rtx_a5000", 8, 1, 2613, "8xA5000"),
        ("rtx6000_ada", 2, 2, 5867, "2xA6000Ada"),
        ("rtx6000_ada", 4, 3, 2904, "4xA6000Ada"),
        ("a100_40_sxm", 2, 1, 3277, "2xA100-40"),
        ("a100_40_sxm", 4, 4, 1266, "4xA100-40"),
        ("a100_40_sxm", 8, 4, 672, "8xA100-40"),
        ("h100_sxm", 4, 8, 667, "4xH100"),
    ]
    rows += [(f"answerai Llama-2-70B QLoRA FSDP {label}", gpu_id,
              {"model": "llama-2-70b", "gpus": gpus, "batch_size": batch, "grad_accum": _ga_to_32(gpus, batch)},
              time_s, "Cloud table 'Llama-2 70B QLoRA with Context Length of 2048 on Select Accelerators', "
                      "CPU+activation offload False. Sharding and checkpointing not stated: train.py defaults "
                      "(FSDP full shard, checkpointing on) assumed; gradient accumulation not stated: set to reach "
                      "the stated target effective batch of 32.")
             for gpu_id, gpus, batch, time_s, label in seventy]
    return [TimeCase(name=name, plan=_ANSWERAI_PLAN.replace(**changes), gpu_id=gpu_id, metric="samples_per_s",
                     measured=_ANSWERAI_SAMPLES / time_s, source=_ANSWERAI, source_id="answerai-fsdp-qlora",
                     notes=" ".join([
                         "Time (s) is the training loop of 1,024 dummy samples, each the full 2,048-token context "
                         "(the cost note: 'training 1,024 samples at a context length of 2,048'; train.py times the "
                         "loop with CUDA events, model loading excluded); measured = 1024 / time (train.py "
                         "first truncates the dataset to a multiple of batch x GA: under 1 % fewer samples, "
                         "ignored). Defaults: precision bf16 (pure), LoRA rank 64, alpha "
                         "16, dropout 0.1, targets q,k,v,gate,up,down, AdamW, SDPA, bitsandbytes NF4 with "
                         "bf16 quant storage; custom FSDP loop (not HF Trainer) over HF models. No gradient "
                         "clipping: train.py's apply_gradient_clipping defaults to False and the benchmark commands "
                         "do not set it (grad_clip false; corrected 2026-12-03, it was priced before).", notes]),
                     measured_time_s=float(time_s), samples=_ANSWERAI_SAMPLES, covers=_FROM_FIRST_STEP)
            for name, gpu_id, changes, time_s, notes in rows]


TIME_CASES: tuple[TimeCase, ...] = tuple(
    _bert_cases() + _peft_cases() + _torchtune_cases() + _torchtitan_cases() + _fms_cases() + _answerai_cases()
)

__all__ = ["EXTRA_GPUS", "H100_HBM2E_96GB", "METRICS", "STEPS_ONLY", "TIME_CASES", "Covers", "TimeCase", "case_gpu",
           "V100_SXM2_16GB"]
