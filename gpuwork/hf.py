"""Measure your own Trainer / SFTTrainer run or plain PyTorch loop: ``from gpuwork.hf import GpuworkCallback``.

The import path users type; the code is ``gpuwork.measure.hf`` (see its docstring). Importing this module
imports transformers.
"""

from gpuwork.measure.hf import GpuworkCallback, Measurement, infer_plan, measure, read_own_run

__all__ = ["GpuworkCallback", "Measurement", "infer_plan", "measure", "read_own_run"]
