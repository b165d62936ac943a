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
# # 03 · Offers: where to rent, for how long, for how much — and the request to send
#
# Every offer of the bundled catalog (`data/catalog.csv`, illustrative dated prices) evaluated for the plan:
# does it fit (GPU count and sharding are raised inside a node until it does), how long the run takes,
# what it costs as billed, and for interruptible offers the expected preemptions, rework and the checkpoint
# interval that minimises lost work. `records` lists trial records (JSON from 02 · Trial) to compare;
# `request` holds the rental request's options (start date, budget, rent period in days).
# The plan's `stack` (the software that runs the step: hf-trainer, unsloth, ...) prices every offer and the request,
# and both name it.
#
# One answer: the line above the table ("Answer: ...") is the card, count, nodes, rental mode, changes, time and cost
# that the Sizing and Advice tabs, `gpuwork plan/advise/offers/request` and the request below all name
# (`gpuwork.estimate.decision.decide`); ranked by cost, the table prices the plan that answer runs, so its top row
# is the answer. `have` (or the "My cards" field) sizes for cards you own instead: the answer fits the run to them and
# says how long it takes, with no rental cost.

# %% tags=["parameters"]
plan = {"model": "llama-3.1-8b", "method": "qlora", "seq_len": 2048, "batch_size": 4,
        "dataset_tokens": 200_000_000, "stack": "hf-trainer"}
records: list[str] = []  # paths of trial record JSON files
request = {"start_date": None, "budget_usd": None, "rent_period_days": None}
# the cards you own, e.g. 1xrtx4090: fit the run to them (time, no rental cost); empty: rent
have = ""
lang = "en"
report = False

# %%
from gpuwork.ui.common import setup_notebook
from gpuwork.ui.offers import OffersPanel

setup_notebook(report)
offers = OffersPanel(plan, records=records, request=request, lang=lang, report=report, have=have)

# %% [markdown]
# ## Filters and the offers table

# %%
offers.show("filters")
offers.show("table")

# %% [markdown]
# ## Cost against time

# %%
offers.show("scatter")

# %% [markdown]
# ## Interruptible offers: preemptions and checkpoints

# %%
offers.show("interruptible")

# %% [markdown]
# ## Trial records side by side

# %%
offers.show("compare")

# %% [markdown]
# ## The rental request

# %%
offers.show("request")
