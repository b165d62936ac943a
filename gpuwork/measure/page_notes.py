"""Prose for the time accuracy page (docs/time_accuracy.md): why the largest misses miss, what each held-out
source's own notes say, and what a source's figure holds that no case can price. Written after the figures were
read; the figures shown beside it are computed by gpuwork.measure.accuracy."""

from __future__ import annotations

# Why the largest misses miss (prose for the page; the figures beside them are computed).
KNOWN_MISSES = (
    ("bert-large", "*FP16 AMP on the V100 (2021 HF Trainer):* with 16-bit tensor cores the matmuls shrink to a "
     "quarter of the step and about 14,000 small kernels per step remain at batch 1 with gradient checkpointing "
     "(autocast's per-call casts included). Torch 1.x of that Trainer also zeroed every gradient, accumulated every "
     "micro-batch in place and clipped tensor by tensor (one kernel or two per parameter, about 1,500 per step), "
     "which today's torch does with no kernel or in a few multi-tensor ones; the plan cannot name that torch "
     "version, so these are not counted. The V100's rates are derived from the other NVIDIA GPUs' datasheet "
     "ratios (it is not in rates.csv); its 80 SMs come from its datasheet (`GpuSpec.sm_count`), and its GEMMs are "
     "priced by shape like every other GPU's ([gemm.md](gemm.md)), with no V100 kernel measurement to check them."),
    ("fms Mixtral", "*Mixtral-8x7B (fms-acceleration, transformers 4.48.1):* these runs are priced with 4.x's "
     "loop over `nn.Linear` experts (`moe_experts=\"loop\"`: per expert and block a `torch.where` that waits for "
     "the GPU, a row gather whose backward zero-fills and scatter-adds a whole-batch gradient, three GEMMs, and "
     "under QLoRA three 4-bit dequantisations and fp32 casts around them); the QLoRA run moved from +57 % to "
     "+24 %, the LoRA FSDP run from +48 % to +40 %. What remains of the LoRA run is not explained by the source: "
     "the model spreads tokens evenly over the experts."),
    ("answerai Llama-2-70B QLoRA FSDP", "*RTX 6000 Ada:* its rates are derived from the L40S (same AD102 die and "
     "142 SMs; no kernel measurement of the 6000 Ada itself was found), see `rates_sources.md`. The 6000 Ada is a "
     "300 W card and the L40S a 350 W one, so its sustained matmul rate is likely lower, by an amount no source "
     "gives. The two runs imply 22 % of the datasheet peak, half of what the A5000 and A100 rows of the same "
     "table imply. Communication does not explain it: the 4-bit all-gathers over PCIe 4.0 x16 take about 1.4 s "
     "(2 GPUs) to 2.1 s (4 GPUs) per micro-batch at the PCIe rate of the published all-reduce rows "
     "(docs/communication.md, PCIe), against 15 to 22 s of predicted compute, so they stay hidden even at half "
     "that bandwidth (peer-to-peer off)."),
)

# What each held-out source's own notes say about its misses (written after the reveal; the figures beside them
# are computed).
HELDOUT_NOTES = {
    "universal-llm-trainer": "one author's training loop over HF models (it calls `loss.item()` every iteration). Its "
    "'Sec/step' was read, before the reveal, as seconds per micro-batch (the loop's progress bar advances per "
    "micro-batch); so read, its figures imply 3-6 % of the dense peak for QLoRA and 12-41 % for full and LoRA "
    "fine-tuning, far below every other source's runs of the same models on the same cards (VectorLM's Llama-3-8B "
    "on one A100: 62-78 %). Read as optimizer steps (32 micro-batches) they would be beyond the peak. Read at its "
    "commits: the QLoRA configs load the model in fp32 (an integer `bit` gives torch.float32) with no autocast, so "
    "everything but the 4-bit GEMMs runs in fp32, SDPA included (no flash kernel for fp32); the model now prices "
    "such plans so (QLoRA rows +447..+710 % -> +59..+266 %). Every batch is padded to 8,192 tokens with a mask, "
    "which keeps SDPA off flash: re-read as lengths 'padded' (memory-efficient kernel, whole matrix), median 137 % "
    "-> 56 %. The launcher sets CUDA_LAUNCH_BLOCKING=1 before CUDA starts: re-read as launch_blocking (every "
    "dispatch and collective exposed), re-read median 48 % -> 47 %, 90th percentile 117 % -> 110 % "
    "([time_misses.md](time_misses.md#held-out-1-universal-llm-trainer-one-authors-loop-37-cases)).",
    "litgpt-issue864-a40-owt": "Lightning Trainer progress-bar rates (it = one 5 x 2,048-token micro-batch, "
    "averaged since the epoch began). The script's code bounds what it adds to the priced 92 ms a micro-batch on one "
    "A40 (validation, re-read to 100 forward batches per 1,000; one checkpoint write; a host sync per micro-batch), "
    "and DDP on 4 GPUs runs within 4 % of one, so the shared factor of about 2.7 is per rank and not found in the "
    "code. Under FSDP the Trainer reduce-scatters every micro-batch and gathers fp32 weights (bf16-mixed), which no "
    "plan can say: +6 % on that row by hand. Sources: [time_misses.md](time_misses.md#held-out-26-read-after-the-"
    "reveal-litgpt-issue-864-and-lomo).",
    "arxiv-2306.09782-lomo-throughput": "LLaMA-7B AdamW under ZeRO-3 on 8 RTX 3090: the compute is priced within 2 % "
    "of the same table's LOMO run on one card (1.33 s per 1,024 tokens); the rest is ZeRO-3 traffic, whose rate the "
    "paper's rows put at 3.1-3.5 GB/s (7B AdamW, 7B SGD, 13B SGD alike) against the 8.0 GB/s priced from a 2-card "
    "PCIe switch through host memory. The server's sockets and switches are not stated. Sources: "
    "[time_misses.md](time_misses.md#held-out-26-read-after-the-reveal-litgpt-issue-864-and-lomo).",
    "nvidia-dgxc-benchmarking": "two kinds of run. The NeMo and MaxText runs (tuned frameworks) come out within 3 % "
    "(MaxText, 64-2,048 GPUs) and 23-28 % too slow (NeMo LoRA and SFT of Llama-3-8B). The benchmark's scripts and "
    "the NeMo commit they pin settle the inferred settings: micro-batch 1, 4,096-token packed rows and no "
    "recomputation as recorded, but the LoRA runs train a rank-8 adapter on the fused QKV projection only, without "
    "the distributed optimizer; re-read, the LoRA rows are 13 % too slow, the SFT rows stay at 23 % "
    "([time_misses.md](time_misses.md#nvidia-dgxc-benchmarking-nemo-llama-3-8b-sft-and-lora)). The Hugging Face "
    "PEFT + FSDP runs report "
    "`train_samples_per_second` over a 30- or 100-step run, which holds the first steps and, by transformers "
    "4.40's own loop, a full evaluation of the packed test split and a checkpoint save at the run's end (one more "
    "of each where an epoch ends); every plan field holds as recorded. That evaluation, a forward pass over about "
    "30,000 packed rows divided among the GPUs, is why their per-GPU throughput rises from 8 to 256 GPUs: priced "
    "by hand it takes the Llama-2-70B rows from +53-269 % to +43-61 % up to 256 GPUs and the Mistral rows to "
    "+53-79 %; the rest is not settled "
    "([time_misses.md](time_misses.md#held-out-1-nvidia-dgxc-benchmarking-the-hugging-face-peft--fsdp-rows)).",
    "lambda-dlbench": "single-GPU and 2-GPU runs on RTX 3090 and 4090 come out between 33 % too slow and 30 % too "
    "fast. The 2021 ('v0') 4- and 8-GPU runs (and that day's 1- and 2-GPU runs) show the time DDP adds to a step "
    "growing as about 0.3 s x (GPUs - 1) per GB of gradients, for both models and precisions: an all-reduce bus "
    "bandwidth of about 3.3, 1.7 and 0.8 GB/s on 2, 4 and 8 GPUs, as if every GPU's traffic crossed one path of "
    "6-7 GB/s, where the model takes 7.9 GB/s through host memory for GeForce cards (NCCL's defaults, a published "
    "2 x RTX 2080 Ti sweep at PCIe 3.0 carried to PCIe 4.0) and hides most of it behind the backward. The logs do "
    "not describe the machine, and no published all-reduce figure of such a box was found, so no figure was chosen "
    "for these runs. Three figures count steps that did not run: run_squad.py reports batch x "
    "max_steps x GPUs / time, and BERT-base fp16 on 4 and 8 GPUs and fp32 on 8 ended their two epochs after 854, "
    "428 and 854 of 1,000 steps; they ran 0.85, 0.43 and 0.85 of the figure, so BERT-base fp16 on 8 GPUs is +78 %, "
    "not -24 % ([time_misses.md](time_misses.md#held-out-1-lambda-dlbench-v0-3-8-x-rtx-3090)).",
    "hf-blog-fsdp-70b": "the figure is the blog's approximate wall time ('~N hours') of 500 steps, which also holds "
    "an evaluation every 100 steps, sharded checkpoints every 250 and the final full-state-dict save of 70B "
    "parameters gathered to one process. Today's model adds the evaluations and saves "
    "([what each figure covers](#what-each-figure-covers)); the first steps are not estimated.",
    "languini-kitchen": "small GPT models (85-300 M parameters) at 512 tokens on one RTX 3090 or 4090, compiled, "
    "fp16 autocast with a gradient scaler and an einsum attention. The timed step also holds zero_grad, the "
    "scaler's step and update and the Adam step (the collector's notes); at batch 1 the model comes out 4-100 % too "
    "fast, where the step is a few milliseconds and the host's share of it is largest, and at the largest batches "
    "15-35 % too slow. Both ends point at what the model does not know of consumer cards: their host and launch "
    "costs at tiny steps, and what torch.compile fuses on them at large ones; no kernel-level source was found for "
    "either.",
    "torchao-float8-readme": "two bf16 baseline rows of a float8 benchmark run with torchtitan (compiled, FSDP2, "
    "per-operation selective checkpointing recorded as full checkpointing, which the plan can state): the model "
    "recomputes every block where selective checkpointing recomputes only some operations, and comes out 27 % "
    "(H100) and 38 % (MI300X) too fast all the same.",
    "nemo-automodel": "NeMo Automodel's LoRA runs were written with the hf-trainer stack (eager kernels) by the "
    "collector; Automodel uses its own fused kernels, which no stack in stacks.csv describes.",
    "nvidia-jax-toolbox-pax": "Paxml in NVIDIA's JAX containers. Three findings in the source's own scripts, "
    "none applied to the frozen cases. (1) LLaMA: the README's run script (paxml `run_llama_boolq.sh`) passes "
    "`USE_REPEATED_LAYER=False`, and `llama_utils.py` sets a checkpoint policy only on the repeated stack, so these "
    "runs recompute nothing; the cases assumed recomputation. Without it the Transformer Engine (TE) rows read -5 % "
    "(SFT), -10 % and -2 % (LoRA). (2) The non-TE LLaMA rows were written with eager attention, but the README "
    "says flash attention is on by default in the container (XLA's cuDNN fused attention, turned off with "
    "`--xla_gpu_enable_cudnn_fmha=false`): as flash they read -10 % and -8 %, and with no recomputation too "
    "+18 % and +30 %; XLA's path without TE is slower than the model's tuned-framework profile by about that much "
    "(the README's TE rows are 24 % (SFT) and 44 % (LoRA) faster). (3) GPT-126M, measured without flash "
    "attention: its GPT-2-style configuration carries GPT-2's default dropouts (0.1), which Pax's GPT126M does not "
    "set (Praxis defaults to 0); without them the rows read -32 %, -43 % and -43 %. The rest is the eager softmax "
    "chain, which the frozen model priced as Hugging Face's separate fp32 kernels (about 72 bytes per score element "
    "over forward and backward); XLA fuses scale, mask and softmax, and TE's unfused path runs one fused softmax "
    "kernel; today's model prices the chain under a fusing stack as one kernel each way ([kernels.md](kernels.md"
    "#the-eager-attention-chain-under-a-fusing-stack)). "
    "At about 12 bytes per element the step would be about 90 ms on the A100 (+36 % without TE, +13 % with it) "
    "and 45 ms on the H100 (+21 %), hand estimates that bracket the figures; the README adds that 126M is bound by "
    "data loading. GPT-175B on the H100 (+22 %; the same run on the A100 +6 %) is unexplained. Sources: "
    "[time_misses.md](time_misses.md#nvidia-jax-toolbox-pax-paxml-on-dgx-a100-and-h100).",
    "nvidia-dle-bert-paddle": "pre-training within 14 %; the two SQuAD rows +58 % and +67 %. The same README shows "
    "that the SQuAD runs are not bound by their arithmetic: forward-only inference at the same batch 32 and length "
    "384 does 158 sequences/s against training's 123 (three times the work in 1.3 times the time); mixed precision "
    "speeds SQuAD up 1.48 x over TF32 against 2.26-2.48 x for pre-training; and the commit that turned on cuDNN "
    "fused attention (a5388a45) raised SQuAD by 2.5 % (1 GPU) and 6 % (8 GPUs) against 10 % (length 128) and 21 % "
    "(length 512) for pre-training. run_squad.py feeds Paddle's static-graph executor from a DataLoader with no "
    "worker processes (each batch padded in Python) and fetches the loss to the host every step, so part of each "
    "step is host time the model has no estimate of; its size is not established. Eager attention would put the "
    "rows at -9 % and -4 %, but the script turns the fused kernel on, so that is not the reading. Sources: "
    "[time_misses.md](time_misses.md#nvidia-dle-bert-paddle-bert-large-squad-fine-tuning-rows).",
    "transformers-issue9371-gpt2-3090": "single-GPU rows within 7 %; the 2-GPU DDP rows +14 to +38 %. From the "
    "published runtimes a DDP step takes 17-19 ms (gpt2), 30-44 ms (gpt2-medium) and 82 ms (gpt2-large) longer than "
    "a single-GPU step of the same batch: it grows with the fp32 gradient bytes (0.5, 1.4 and 3.1 GB) and matches "
    "the model's own all-reduce time over the NVLink bridge (15, 43 and 94 ms), which the model hides behind the "
    "backward (0.8 ms exposed). Counted unhidden, the DDP rows read -3 to +7 %. Why these runs did not overlap it "
    "is not established: the Trainer of that date wrapped the model with find_unused_parameters=True (issue 9802, "
    "the same author and command the day before), which adds a traversal of the autograd graph every iteration, "
    "and the DDP runs spread their set-up over 200 steps against the single-GPU runs' 400. Sources: "
    "[time_misses.md](time_misses.md#transformers-issue9371-gpt2-3090-run_clmpy-on-one-and-two-rtx-3090).",
    "internlm-train-performance": "InternLM's own trainer, 8 to 1,024 A100 over 4 x 100 Gb RoCE. The full ZeRO-1 "
    "rows (zero1=-1) come out within 9 % at every size. The zero1=8 rows miss by up to -58 % at 1,024 GPUs: the "
    "plan has no hybrid ZeRO-1, so they were written as ZeRO-1 over all GPUs. InternLM's HybridZeroOptimizer "
    "all-reduces the 16-bit gradients over every GPU behind the last backward and broadcasts the updated parameters "
    "only inside the node; the model prices a reduce-scatter and an all-gather over all GPUs, both exposed. Priced "
    "that way by hand, the checkpointing rows come out +18 to +21 % at every size. The rows with one short "
    "micro-batch at 1,024 GPUs stay -23 to -40 %: the ring curve's bus bandwidth at 1,024 ranks (about 12 GB/s for "
    "1 GiB) was below the 32 GB/s or more the rows imply. That curve carried its latency in bytes, 8 times longer "
    "in seconds on these 50 GB/s nodes than where it was measured; since 354f182 it is carried in seconds, as "
    "NCCL's tuning model charges it (31.7 GB/s for the ring there; 41.0 for NCCL's tree, which only an all-reduce "
    "takes and the plan's zero1 does not use). Sources: "
    "[time_misses.md](time_misses.md#internlm-train-performance-internlm-7b-8-1024-a100-over-4-x-100-gb-roce).",
    "nemo-megatron-launcher": "NeMo Megatron GPT-3 5B and BERT 4B, 1 to 32 DGX A100: every frozen prediction too "
    "slow (-11 to -27 %), already on one node, so the compute side. The cases record Megatron's attention as eager, "
    "which the frozen model priced as transformers' chain of separate fp32 kernels over the s x s matrix (0.40-0.45 "
    "of the predicted step); NeMo's default masked_softmax_fusion runs scale, mask and softmax as one bf16 kernel. "
    "Since d4dcbf0 a fusing stack (framework among them) prices that chain as one kernel each way, from the "
    "kernels' documented behaviour ([kernels.md](kernels.md)), and today's model gives these rows a median of "
    "13 %. Sources: "
    "[time_misses.md](time_misses.md#nemo-megatron-launcher-gpt-3-5b-and-bert-4b-on-1-32-dgx-a100).",
    "nanogpt-readme": "two rounded whole-run times from nanoGPT's README ('about 4 days' for GPT-2 124M on one node "
    "of 8 A100 40GB, 'about 3 minutes' for the character-level baby GPT on one A100). Each holds start-up, "
    "torch.compile's compilation and the first steps, which gpuwork does not estimate, and the 124M run a "
    "checkpoint after every evaluation; the baby GPT's 5,000 steps of a 10.7 M-parameter model at 256 tokens take "
    "about a minute in the model, so the parts it leaves out are most of a three-minute run. Its 21 evaluations of "
    "400 forward-only batches each (eval_iters 200, train and validation) are about half the training steps' "
    "arithmetic, where the scorer prices evaluation at a plan's default 5 % of the training time. Both cases are "
    "re-read with the evaluation share their configs imply (0.56 and 0.027 of the training time; the arithmetic is "
    "in each re-reading's reason): the baby GPT moves from +169 % to +81 % and the 124M run from +31 % to +34 %.",
    "hf-blog-gaudi2-benchmark": "the Gaudi2 blog's A100 column: BERT-base pre-training on 8 A100 80GB in fp16, 32 "
    "and 64 sequences of 512 per GPU, +41 % and +39 % too fast. The published script runs DDP with "
    "find_unused_parameters=True, saves every 5,000 steps and masks each batch in the main process; what ran on the "
    "A100s is not published. The time the model misses grows with the batch (about 19 ms per step plus 1.8 ms per "
    "sequence), so it is not mainly a per-step cost. The mosaicml-examples-bert case (HF BertForMaskedLM under "
    "autocast on 8 A100, +37 %) misses the same way; neither source says which part is slow. Sources: "
    "[time_misses.md](time_misses.md#hf-blog-gaudi2-benchmark-bert-base-pre-training-on-8-x-a100-80gb-41--and-39-).",
    "mosaicml-examples-mosaicgpt-tput": "MosaicML's April 2023 throughput sweep, every row 9-36 % too fast. The "
    "harness at the README's commit settles what ran: sweep.sh's image mosaicml/pytorch:1.13.1_cu117, requirements "
    "torch 1.13.1, flash-attn 0.2.8 and triton 2.0.0.dev20221202; submit_benchmarks.py sets attn_impl 'triton' and "
    "low_precision_layernorm True, FSDP FULL_SHARD with mixed_precision PURE, 30 batches with no evaluation. So the "
    "attention is flash-attn 0.2.8's Triton kernel of early 2023, which the plan can only call 'flash', priced at "
    "FlashAttention-2's measured rate. At each size the miss grows with the sequence length (760m +19 % at 2,048, "
    "+32 % at 8,192; 3b +20 % and +36 % at 16,384), as the attention's share of the step does; the checkpointed "
    "13b and 70b rows are within 9-14 %. Nothing is re-read: every recorded setting matches the harness. Sources: "
    "[time_misses.md](time_misses.md#mosaicml-examples-mosaicgpt-tput-mosaicgpt-on-8-64-a100-80gb).",
    "flagperf-nvidia": "BAAI's cross-vendor benchmark, NVIDIA reference rows. The five fp32 rows imply 1.5-2.4 times "
    "the A100's fp32 peak (excluded as beyond the peak). FlagPerf builds its NVIDIA images from NVIDIA's NGC PyTorch "
    "containers (training/nvidia/docker_image/pytorch_1.13/Dockerfile: FROM nvcr.io/nvidia/pytorch:22.11-py3), and "
    "MONAI's documentation says an NGC PyTorch container sets TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, which runs fp32 "
    "matmuls as TF32; read so, the rows use 0.19-0.30 of the TF32 dense peak. A plan has no TF32 precision, so "
    "they are not re-read. The PaddleNLP LLaMA-7B rows (+20 % and +25 %) match their configs (flash attention, "
    "recompute off/on, sharding stage 2, fp16 O2); their figure is PaddleNLP's train_samples_per_second over the "
    "whole 100-step run, whose first steps are a small share of its 3.4 and 5.3 hours. Sources: "
    "[time_misses.md](time_misses.md#flagperf-nvidia-fp32-rows-and-paddlenlp-llama-7b).",
    "olmo-core-readme": "AI2's OLMo-core README gives tokens per second per device 'measured on a cluster with NVIDIA "
    "H100 GPUs' without the number of GPUs or nodes; the scripts at that commit (HSDP with bf16 parameters and fp32 "
    "reduction, compiled, fused AdamW, global batches of 1,024-2,048 x 4,096 tokens) fix everything else. The cases "
    "assume one 8-GPU node; on several nodes each step would also carry HSDP's all-reduce across them, which one "
    "node does not. Not settled, not re-read.",
    "nanogpt-issue110-8xa100": "one user's log of nanoGPT's default GPT-2 124M run on 8 A100 (torch 2.0 nightly, "
    "February 2023); Karpathy replied 'This looks pretty good to me'. train.py at 40f4d6f settles the recorded "
    "configuration (batch 12 x 1,024, 5 micro-steps per process with the all-reduce on the last, bf16 autocast, "
    "compile, SDPA, AdamW). Each micro-step's batch is built on the host from a memory-mapped file and copied to the "
    "GPU unpinned and synchronously before the forward, and loss.item() runs every iteration: host time inside the "
    "step that the model does not price. The A100's memory size is not stated.",
    "hf-blog-personal-copilot": "the full fine-tune of StarCoder-15.5B on 8 A100 (+380 % frozen) is the blog's rounded "
    "total time of 2,000 steps. Its code at 797a0af settles the recorded setup: fsdp_config.yaml has "
    "fsdp_offload_params false, use_orig_params true, SHARDED_STATE_DICT; train.py loads the model in fp32, turns "
    "gradient checkpointing on, evaluates every 100 steps and saves every 500, and after training gathers a "
    "FULL_STATE_DICT and shards it in a subprocess. The figure implies 11 % of the dense peak; today's model prices "
    "the evaluations and saves but not start-up. Both runs used flash attention (use_flash_attention_2), "
    "as recorded. Re-read: the 0.5 % test split (30 files) makes the evaluations 1-2 % of the training time, not "
    "the default 5 %; and the QLoRA run trains under bf16 autocast (Trainer bf16=True) with lm_head and adapters "
    "cast to bf16, which the recorded pure 'bf16' priced as fp32 GEMMs: bf16-mixed takes it from -22 % to +1 % "
    "(time_misses.md, 'Held-out 8: StarCoder (GPTBigCode)').",
    "hf-cookbook-code-llm-qlora": "a Colab notebook's printed TrainOutput for 2,000 QLoRA steps of StarCoderBase-1B "
    "(+98 %): the runtime holds 20 evaluations on a validation stream whose size is not printed and 20 checkpoint "
    "saves with pushes to the Hub; the figure implies 11 % of the dense peak. The stream is the dataset's first "
    "4,000 of 5,905 files (about 12,500 rows of 2,048 by the dataset card's bytes): 20 evaluations of it are about "
    "2.6 times the training time, which eval_fraction (below 1) cannot state; priced by hand the row is about -25 % "
    "(time_misses.md, 'Held-out 8: StarCoder (GPTBigCode)').",
    "philschmid-finetune-llms-2025": "the notebook's table gives 'est. train time' in rounded minutes for one epoch. "
    "The flash-attention rows are within 18 % (FA2 +16 %, with Liger -18 %, -18 % and -10 % on 1, 4 and 8 L4); the "
    "row without flash attention is +52 %, read as transformers' default SDPA, which the source does not state.",
    "philschmid-finetune-llms-2024": "the printed progress bar of a 3-epoch QLoRA run on one L4 (+20 %), which "
    "includes the first steps and an adapter save with a Hub push at each epoch's end.",
    "transformers-codeparrot-readme": "the README's whole-run time, rounded to days, of CodeParrot-small's 150,000 "
    "steps on 16 A100 (+100 %; the figure implies 5 % of the dense peak). codeparrot_training.py at 06ac4e0 streams "
    "the data set from the Hub and tokenises it in the training process (a DataLoader with no worker processes over "
    "an IterableDataset that tokenises about 3.7 M characters at a time), calls loss.item() every step, and every "
    "15,000 steps evaluates, saves the state and pushes to the Hub. The tokenisation is host time in the loop, not "
    "a step setting, so nothing is re-read.",
    "semianalysis-rocm-te-issue79": "one BF16 line of an issue that calls its results 'preliminary' (torch.compile "
    "on a nightly PyTorch for ROCm 6.2, 8 x MI300X); the issue prints the FP8 script's commands but not the BF16 "
    "one, so the harness defaults at b18f8c8 were assumed (accumulation 8, no checkpointing, FSDP1 bf16 mixed, "
    "fused AdamW). AMD's v25.2 guide rows from the same harness lineage come out within 10 %. Not settled, not "
    "re-read.",
}


# what a source's figure holds that no case can price, by source (prose for the page)
UNPRICED = {
    "nvidia-dgxc-benchmarking": "The DGXC Hugging Face runs (evaluation and save strategy 'epoch') evaluate the "
    "packed test split and save a checkpoint at every epoch's end and, since transformers 4.40 ends its step loop "
    "with the epoch-end callbacks before it stops the clock, once more at the run's end, inside "
    "`train_runtime`; their cases record neither, so as recorded neither is priced. Twelve re-readings add "
    "both (the 8-GPU Llama-2-70B row's evaluation takes 1.31 times its steps, beyond what a plan's eval_fraction "
    "can state) "
    "([time_misses.md](time_misses.md#held-out-1-nvidia-dgxc-benchmarking-the-hugging-face-peft--fsdp-rows)).",
}

__all__ = ["HELDOUT_NOTES", "KNOWN_MISSES", "UNPRICED"]
