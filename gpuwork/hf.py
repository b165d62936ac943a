"""Measure your own Trainer / SFTTrainer run or plain PyTorch loop: ``from gpuwork.hf import GpuworkCallback``.

The import path users type; the code is ``gpuwork.measure.hf`` (see its docstring). Importing this module
imports transformers. ``LiveCurves`` (the live curves for a notebook, ``gpuwork.ui.trial.LiveCurves``) is
imported on first use, so a script without the notebook stack never loads ipywidgets or plotly::

    from gpuwork.hf import GpuworkCallback, LiveCurves
    curves = LiveCurves()
    display(curves)
    trainer.add_callback(GpuworkCallback(out="trial-out", steps=20, on_measure=curves.update))
"""

from typing import TYPE_CHECKING, Any

from gpuwork.measure.hf import GpuworkCallback, Measurement, infer_plan, measure

if TYPE_CHECKING:
    from gpuwork.ui.trial import LiveCurves


def __getattr__(name: str) -> Any:
    if name == "LiveCurves":  # the notebook stack ([workbook] extra) only when asked for
        from gpuwork.ui.trial import LiveCurves

        return LiveCurves
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["GpuworkCallback", "LiveCurves", "Measurement", "infer_plan", "measure"]
