# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: title
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   title: "gpuwork \u2014 GPU sizing for fine-tuning / \u043F\u043E\u0434\u0431\u043E\
#     \u0440 GPU \u0434\u043B\u044F \u0434\u043E\u043E\u0431\u0443\u0447\u0435\u043D\
#     \u0438\u044F"
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
