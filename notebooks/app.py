# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # gpuwork — GPU sizing for fine-tuning
#
# Will a fine-tuning run fit on one GPU? Pick a model and a training setup below; the table shows the
# estimated memory **per GPU**, term by term, and three totals: *peak allocated* (what PyTorch's
# `torch.cuda.max_memory_allocated()` would report), *peak reserved* (plus the allocator's cache) and
# *device total* (plus the CUDA context: what `nvidia-smi` shows, the number to compare with a card's memory).
# Sizes are in GiB (2<sup>30</sup> bytes). *LoRA targets* are module names, which differ between
# architectures (`q_proj,v_proj` for Llama-style models, `c_attn` for GPT-2, `query,value` for BERT), or
# `all-linear`. Every other setting keeps its default: one GPU, AdamW, SDPA attention, LoRA rank 16.

# %%
from gpuwork.app_view import build_app

build_app()
