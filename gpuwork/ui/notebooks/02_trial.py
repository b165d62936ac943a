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
# `record = "trials/trial-….json"` shows a record written earlier instead of running one: gpuwork's own
# trial, or your own Trainer run measured with `gpuwork.hf.GpuworkCallback` (see the end of this notebook).

# %% tags=["parameters"]
plan = {"model": "tiny-llama", "method": "lora", "precision": "fp32", "seq_len": 128, "batch_size": 4}
steps = 5
warmup = 1
ramp = False
out_dir = "trials"
note = None
record = None
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
# ends, and *Run trial* starts it again. With `record` set, they show that record and nothing runs.

# %%
trial.show("controls")

# %%
if record:
    trial.load(record)  # a record written earlier: gpuwork trial, or your Trainer run (gpuwork.hf)
else:
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
# The estimate for exactly the configuration that ran (its plan as run: precision, number of processes,
# attention, software stack) beside what was measured, with the error measured / estimated − 1: on CUDA the
# memory per total (allocated, reserved, device), and the median step time and tokens/s on a GPU of
# data/gpus.csv. A CPU trial has no GPU estimate to compare with; the bars then set the memory estimate
# beside the process RSS. `gpuwork compare RECORD.json` prints the same comparison.

# %%
trial.show("estimate_vs_measured")

# %% [markdown]
# ## Your own Trainer run, live
# One added line measures your `Trainer` / TRL `SFTTrainer` run and writes the same record; `LiveCurves`
# draws its step time, loss, tokens/s and memory while it trains (redrawn at most twice a second):
#
# ```python
# from gpuwork.hf import GpuworkCallback, LiveCurves
#
# curves = LiveCurves(lang="en")
# display(curves)
# trainer.add_callback(GpuworkCallback(out="trials", steps=20, on_measure=curves.update))
# trainer.train()  # stops after 2 warm-up + 20 measured steps; the record is in trials/
# ```
#
# A plain PyTorch loop: `with gpuwork.hf.measure(model=model, out="trials", steps=20,
# on_measure=curves.update) as m: ...`. Then set `record` above to the record's path and run this notebook
# again to see the estimate for that configuration beside what your run measured.
