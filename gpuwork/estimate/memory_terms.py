"""The memory breakdown's terms: their English labels (the catalog's "term.*" entries translate them) and where each
comes from."""

from __future__ import annotations

# Caching-allocator slack: reserved/allocated. Megatron's estimator multiplies by 1.05; a ROCm
# estimator uses 7 %; PEFT's measured Llama-3.2-3B runs fit 1.06-1.10 (docs/sources.md#s-mem-allocator).
ALLOCATOR_SLACK = 0.08

TERM_LABELS = {
    "weights": "weights",
    "gradients": "gradients",
    "optimizer_states": "optimizer states",
    "activations": "activations (saved for backward)",
    "logits_and_loss": "logits and loss",
    "temporaries": "temporaries (backward / optimizer step)",
    "sharding_buffers": "sharding / DDP buffers",
    "cublas_workspace": "cuBLAS workspace",
    "allocator_cache": "allocator cache (reserved, unused)",
    "allocator_fragmentation": "allocator cache from varying batch lengths",
    "allocator_segments": "allocator cache (reserved, unused; whole steps replayed: a hand-written model, its "
                          "tensors known one by one)",
    "paged_optimizer_states": "paged optimizer states (unified memory)",
    "autocast_weight_copies": "weight copies (autocast 16-bit, FP8 linears)",
    "cuda_context": "CUDA context and kernels",
    "stream_pools": "FSDP all-gather / reduce-scatter stream caches (reserved)",
    "eval_forward": "evaluation batch (forward, no grad)",
    "eval_predictions": "evaluation outputs kept on the GPU",
    "eval_segments": "allocator cache of the evaluation",
}


SOURCES = {
    "weights": "parameter count (meta-device build) x dtype bytes; QLoRA NF4/FP4 packing and absmax per "
               "QLoRA paper §3; peft keeps adapters in fp32; plus the rotary cos/sin buffers of transformers 4.x "
               "on the stacks that keep them (rates_sources.md [M11])",
    "gradients": "trainable parameters x their dtype bytes (torch AccumulateGrad)",
    "optimizer_states": "torch AdamW/SGD states in the parameter dtype; bitsandbytes 8-bit blockwise states; "
                        "transformers Adafactor factored moments",
    "activations": "tensors saved for backward, op by op for Hugging Face Llama/GPT-2/BERT blocks; checked "
                   "against gpuwork trace; fused RMSNorm/SwiGLU kernels and offloaded checkpoints as the stack "
                   "does them (stacks.csv memory columns); under freeze the frozen blocks save for backward only "
                   "when the embeddings' output requires grad (input_require_grads, else the stack's rule)",
    "logits_and_loss": "fp32 upcast logits, log_softmax output and its backward (transformers ForCausalLMLoss); "
                       "Liger's chunked fused linear cross-entropy or Unsloth's in-place 16-bit loss when the "
                       "stack uses them",
    "autocast_weight_copies": "16-bit copies of trained weights cached by autocast for forward and "
                              "backward, and of mixed-precision QLoRA's fp32 lm_head weight until the head's "
                              "backward (mixed precision only); under FP8 linears each block linear's FP8 weight "
                              "and its transpose (Transformer Engine's cast-transpose, docs/fp8.md)",
    "temporaries": "optimizer-step temporaries (torch foreach AdamW: one state-sized buffer) or backward "
                   "intermediates (measured with gpuwork trace)",
    "sharding_buffers": "DDP gradient buckets; FSDP/ZeRO-3 gathered units (ZeRO, FSDP docs); DeepSpeed ZeRO's "
                        "reduce bucket, fp32 gradient copies at the step and fp32 master clone (DeepSpeed v0.19.5 "
                        "zero/stage_1_and_2.py, stage3.py)",
    "cublas_workspace": "cuBLAS workspace in the caching allocator (PyTorch CUDA semantics)",
    "allocator_cache": f"caching-allocator slack, {ALLOCATOR_SLACK:.0%} of allocated (Megatron x1.05; "
                       "PEFT L40S runs 6-10 %)",
    "allocator_fragmentation": "PyTorch CUDA caching allocator replayed over batches of the plan's lengths "
                               "(512 B rounding, >1 MiB large pool, 20 MiB / 2 MiB-rounded segments, best fit, "
                               "split above 1 MiB, no merge across segments; expandable segments grow in 20 MiB "
                               "pages), the largest reserved peak of 9 random orders of 3,000 micro-batches: "
                               "c10/cuda/CUDACachingAllocator.cpp, pytorch/devlogs 2026-06-01",
    "allocator_segments": "PyTorch CUDA caching allocator replayed over three fixed-shape steps (parameters, "
                          "activations, gradients in backward, AdamW's temporaries by implementation): segments "
                          "mapped beyond the allocated peak, where every tensor of the step is known (one GPU, "
                          "full/scratch, torch AdamW) and the model is hand-written (its config states softmax_impl, "
                          "hidden_act_impl or norm_impl, as the CS336 staff model's does), whose step tensors are listed one "
                          "by one; Hugging Face models keep the slack: their saved bytes and loss buffers are cut "
                          "into coarse pieces and the replay's cache swings with them. Bounded by the card: a "
                          "failed cudaMalloc releases the cached segments and retries (release_cached_blocks); "
                          "c10/cuda/CUDACachingAllocator.cpp kMinLargeAlloc, kLargeBuffer, kRoundLarge",
    "paged_optimizer_states": "bitsandbytes paged optimizer states in CUDA unified memory (not in "
                              "torch.cuda.max_memory_allocated)",
    "stream_pools": "FSDP2's all-gather copy-in and reduce-scatter streams keep their own caching-allocator pools: "
                    "the root's and a block's flat all-gather outputs and every sharded gradient (torch "
                    "fsdp/_fully_shard/_fsdp_collectives.py foreach_all_gather, foreach_reduce; pytorch#129721)",
    "eval_forward": "an in-run evaluation batch under no_grad: a block's internals or the head's logits, the loss's "
                    "fp32 upcast and log_softmax (transformers Trainer.prediction_step, ForCausalLMLoss)",
    "eval_predictions": "what transformers' Trainer.evaluation_loop concatenates on the GPU until the evaluation "
                        "ends or eval_accumulation_steps: logits or token ids and labels (nested_concat)",
    "eval_segments": "segments the evaluation's batches map beyond the training's cache (caching allocator "
                     "replayed: gpuwork.estimate.allocator)",
    "cuda_context": "CUDA context, kernels and library handles (HF docs 1.3 GB on V100 without lazy "
                    "loading; ~0.5-0.8 GiB with CUDA lazy loading)",
}

__all__ = ["ALLOCATOR_SLACK", "SOURCES", "TERM_LABELS"]
