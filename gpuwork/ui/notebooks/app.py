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
# # gpuwork

# %% tags=["parameters"]
plan = None
lang = "en"
report = False

# %%
from gpuwork.ui.app import build_app
from gpuwork.ui.common import setup_notebook

setup_notebook(report)
build_app(plan, lang=lang, report=report)
