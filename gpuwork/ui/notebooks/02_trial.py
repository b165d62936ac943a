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
# `ramp = True` also finds the largest micro-batch and sequence length that fit. The trial runs in the
# background; `wait = True` makes its cell wait for the end (headless runs: papermill, nbconvert).

# %% tags=["parameters"]
plan = {"model": "tiny-llama", "method": "lora", "precision": "fp32", "seq_len": 128, "batch_size": 4}
steps = 5
warmup = 1
ramp = False
out_dir = "trials"
note = None
wait = False
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
# The curves update after every step. The trial runs in the background, so the kernel stays free and
# *Stop* (checked between steps) works at any time, also during Run All; the cells below fill in when it
# ends, and *Run trial* starts it again.

# %%
trial.show("controls")

# %%
running = trial.start()  # a background thread: a click on Stop reaches the kernel between steps
if wait or report:
    running.join()
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
