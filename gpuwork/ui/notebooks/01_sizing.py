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
# # 01 · Sizing: does the run fit, on which card, how long, how much disk?
#
# Describe the run in the `plan` cell below (any field of `gpuwork.TrainPlan`), or change it in the form.
# Memory is **per GPU**, in GiB (2<sup>30</sup> bytes), with three totals that answer different questions:
# *peak allocated* (`torch.cuda.max_memory_allocated()`), *peak reserved* (plus the allocator's cache) and
# *device total* (plus the CUDA context: what `nvidia-smi` shows — compare this one with a card).
# `gpus` lists the cards drawn as memory lines. `report = True` (set by `gpuwork report`) shows plain
# figures instead of live widgets; `verify = True` also traces one real step under fake tensors.

# %% tags=["parameters"]
plan = {"model": "llama-3.2-1b", "method": "lora", "precision": "bf16", "seq_len": 2048, "batch_size": 4}
gpus = ["rtx4090", "l40s", "h100_sxm"]
lang = "en"
verify = False
report = False

# %%
from gpuwork.ui.common import setup_notebook
from gpuwork.ui.sizing import SizingForm

setup_notebook(report)
sizing = SizingForm(plan, gpus=gpus, lang=lang, report=report)

# %% [markdown]
# ## The plan

# %%
sizing.show("controls")

# %% [markdown]
# ## Memory per GPU
# Each bar segment is one term of the estimate (hover for its source); the markers are the three totals;
# dashed lines are the candidate cards' memory as `nvidia-smi` reports it.

# %%
sizing.show("totals")
sizing.show("breakdown")

# %% [markdown]
# ## What if
# The device total per GPU for every method as the sequence length or the micro-batch grows; a red ✕ marks
# where a curve stops fitting a card.

# %%
sizing.show("whatif")

# %% [markdown]
# ## Profile, time and disk

# %%
sizing.show("details")

# %% [markdown]
# ## Exact check
# One real training step of this architecture under fake tensors (no GPU, no weights), next to the
# analytic estimate of the same quantity.

# %%
sizing.show("verify", run=verify)
