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
# # 02 · Trial: prove the configuration before renting for a month
#
# A real fine-tune of the plan's model on real text: warm-up, then a fixed number of measured steps (step
# time, tokens/s, peak memory, data wait), then a checkpoint saved, restored into a fresh model, verified
# and resumed. By default a tiny Llama on this machine's CPU (seconds): on a GPU box, put your real plan in
# the `plan` cell. The record (JSON) is written to `out_dir`; compare records in 03 · Offers.
# `ramp = True` also finds the largest micro-batch and sequence length that fit.

# %% tags=["parameters"]
plan = {"model": "tiny-llama", "method": "lora", "precision": "fp32", "seq_len": 128, "batch_size": 4}
steps = 5
warmup = 1
ramp = False
out_dir = "trials"
note = None
lang = "en"
report = False

# %%
from gpuwork.ui.common import setup_notebook
from gpuwork.ui.trial import TrialPanel

setup_notebook(report)
trial = TrialPanel(plan, steps=steps, warmup=warmup, ramp=ramp, out_dir=out_dir, note=note, lang=lang,
                   report=report)

# %% [markdown]
# ## The trial
# The curves update after every step; *Stop* (checked between steps) works when the trial was started
# with the *Run trial* button.

# %%
trial.show("controls")

# %%
record = trial.run()
trial.show("curves")

# %% [markdown]
# ## Results: speed, data, checkpoint round-trip, ramp, extrapolation

# %%
trial.show("results")

# %% [markdown]
# ## Estimate vs measured
# The analytic estimate for the plan the trial really ran (CPU trials run fp32) next to what it measured.

# %%
trial.show("estimate_vs_measured")
