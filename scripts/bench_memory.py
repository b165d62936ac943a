"""How fast the memory estimate sweeps: 10,000 distinct plans of four Hugging Face models (full and LoRA), and the
same grid on a hand-written model (the Stanford CS336 staff Transformer LM, whose fixed-shape steps the caching
allocator is replayed over: gpuwork.estimate.allocator_step).

Prints figures; asserts nothing (the goal, gpuwork issue 19: a sweep of 10,000 distinct plans under 2 s). Run it
in a fresh process: the estimators' caches start empty, as in a new session.

    python scripts/bench_memory.py
"""

from __future__ import annotations

import itertools
import time

from gpuwork.estimate.memory import estimate_memory
from gpuwork.facts.model import build_spec, spec_for_plan
from gpuwork.plan import TrainPlan

# the CS336 assignment-2 '2.7B' ('xl') model as a Llama config, its softmax and SiLU written op by op (as the
# held-out CS336 cases re-read it: gpuwork/facts/data/memory_heldout.json)
STAFF_XL = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 10000, "hidden_size": 2560,
            "intermediate_size": 10240, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 32, "head_dim": 80, "max_position_embeddings": 8192, "rope_theta": 10000.0,
            "rms_norm_eps": 1e-05, "hidden_act": "silu", "tie_word_embeddings": False, "attention_bias": False,
            "mlp_bias": False, "softmax_impl": "composite", "hidden_act_impl": "composite"}


def grid(model: str, methods: tuple[str, ...]) -> list[TrainPlan]:
    base = TrainPlan(model=model, seq_len=512, attention="eager" if model.startswith("cs336") else "sdpa")
    seqs = (128, 256, 512, 1024, 2048, 4096, 8192)
    batches = (1, 2, 4, 8, 16)
    accums = (1, 2)
    precisions = ("bf16-mixed", "fp32", "bf16")
    impls = ("foreach", "fused", "for-loop")
    ckpt = (False, True)
    return [base.replace(method=m, seq_len=s, batch_size=b, grad_accum=a, precision=p, optimizer_impl=i,
                         grad_checkpointing=c)
            for m, s, b, a, p, i, c in itertools.product(methods, seqs, batches, accums, precisions, impls, ckpt)]


def sweep(label: str, plans: list[TrainPlan], specs: dict[str, object]) -> None:
    start, cpu = time.perf_counter(), time.process_time()
    for plan in plans:
        estimate_memory(plan, specs[plan.model])
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"{label}: {len(plans):,} plans ({len(set(plans)):,} distinct) in {elapsed:.2f} s (CPU {cpu:.2f} s), "
          f"{elapsed / len(plans) * 1e3:.3f} ms each  (goal < 2 s)")


def main() -> None:
    models = ("llama-3.2-1b", "llama-3.1-8b", "qwen2.5-7b", "mistral-7b")
    plans = [p for m in models for p in grid(m, ("full", "lora"))][:10_000]
    specs: dict[str, object] = {m: spec_for_plan(TrainPlan(model=m)) for m in models}
    sweep("four Hugging Face models, full and LoRA", plans, specs)
    # one model: the grid (1,260 plans, 630 of one micro-batch per step, each a shape the allocator is replayed
    # over) at eight dataset sizes, which memory does not read: 10,000 distinct plans
    staff = [p.replace(dataset_tokens=d * 10**8) for d in range(1, 9) for p in grid("cs336-staff-xl", ("scratch",))]
    staff = staff[:10_000]
    specs["cs336-staff-xl"] = build_spec(STAFF_XL, "cs336-staff-xl")
    sweep("hand-written CS336 staff xl, scratch", staff, specs)


if __name__ == "__main__":
    main()
