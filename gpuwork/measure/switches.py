"""The plan's execution switches as a measured trial runs them.

The estimate prices four switches that change how a run executes (``TrainPlan``): ``tf32`` and ``deterministic``
are torch settings of the running process, so the trial turns them on for its duration and puts the caller's
values back afterwards (``execution_switches``; a notebook's kernel is left as it was). ``launch_blocking``
(CUDA_LAUNCH_BLOCKING=1) and ``expandable_segments`` (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) are read
once, when CUDA starts in a process: ``startup_env`` puts them in the environment of a process about to start
(``gpuwork trial`` sets them in its own before CUDA starts, the torchrun launcher in its ranks'); a trial inside a
process that did not get them runs without them and says so (``switch_notices``), never silently.

deterministic also needs CUBLAS_WORKSPACE_CONFIG set before cuBLAS starts: with CUDA 10.2 or later PyTorch's
reproducibility notes send a deterministic run to the cuBLAS documentation's setting (":4096:8", or ":16:8")
(https://github.com/pytorch/pytorch/blob/9a48faad96189244a6ba6639c501f3da1d20aa79/docs/source/notes/randomness.rst,
"Avoiding nondeterministic algorithms"); docs/trial.md "Execution switches".
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from gpuwork.message import Msg, msg
from gpuwork.plan import TrainPlan

if TYPE_CHECKING:
    import torch

# start-up switches: the variable a process reads when CUDA starts, and the setting the plan's switch means
STARTUP_VARIABLES = {
    "launch_blocking": ("CUDA_LAUNCH_BLOCKING", "1"),
    "expandable_segments": ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
}
IN_PROCESS = ("tf32", "deterministic")  # torch settings the trial turns on and back off
CUBLAS_VARIABLE = "CUBLAS_WORKSPACE_CONFIG"
CUBLAS_DETERMINISTIC = ":4096:8"  # PyTorch's reproducibility notes: :4096:8 (or :16:8, slower)


# newer torch reads PYTORCH_ALLOC_CONF first and PYTORCH_CUDA_ALLOC_CONF only when it is unset (deprecated); older
# torch reads PYTORCH_CUDA_ALLOC_CONF alone (c10/core/AllocatorConfig.cpp, AcceleratorAllocatorConfig::instance,
# https://github.com/pytorch/pytorch/blob/0ac716637f3258efcaf7fdfb851bdd520c9c1441/c10/core/AllocatorConfig.cpp)
ALLOC_CONF, CUDA_ALLOC_CONF = "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"


def _with_expandable(current: str | None) -> str:
    """An allocator configuration with expandable_segments:True, its other options kept."""
    options = [
        o
        for o in (current or "").split(",")
        if o.strip() and o.split(":", 1)[0].strip() != "expandable_segments"
    ]
    return ",".join([*options, STARTUP_VARIABLES["expandable_segments"][1]])


def startup_env(plan: TrainPlan, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with what the plan's start-up switches need, for a process that has not started CUDA yet:
    CUDA_LAUNCH_BLOCKING=1 (launch_blocking); expandable_segments:True added to the allocator configuration
    (expandable_segments), in both variables so that old and new torch read it, each keeping its other options;
    for deterministic, CUBLAS_WORKSPACE_CONFIG=:4096:8 unless one is set."""
    out = dict(env)
    if plan.launch_blocking:
        out["CUDA_LAUNCH_BLOCKING"] = "1"
    if plan.expandable_segments:
        out[ALLOC_CONF] = _with_expandable(env.get(ALLOC_CONF, env.get(CUDA_ALLOC_CONF)))
        out[CUDA_ALLOC_CONF] = _with_expandable(env.get(CUDA_ALLOC_CONF))
    if plan.deterministic:
        out.setdefault(CUBLAS_VARIABLE, CUBLAS_DETERMINISTIC)
    return out


def _in_effect(name: str, env: Mapping[str, str]) -> bool:
    variable, value = STARTUP_VARIABLES[name]
    if name == "expandable_segments":  # the configuration newer torch reads
        read = env.get(ALLOC_CONF, env.get(CUDA_ALLOC_CONF, ""))
        return any(o.replace(" ", "").lower() == value.lower() for o in read.split(","))
    return env.get(variable, "").strip() == value


def requested(plan: TrainPlan) -> list[str]:
    """The plan's execution switches that are on, in the plan's order."""
    return [
        name
        for name in ("expandable_segments", "deterministic", "launch_blocking", "tf32")
        if getattr(plan, name)
    ]


def switch_notices(
    plan: TrainPlan, device: torch.device, *, cuda_started: bool, env: Mapping[str, str] | None = None
) -> tuple[list[str], list[Msg]]:
    """(the switches the trial runs under, a notice for each it cannot apply as the plan says).

    ``cuda_started``: CUDA had already run in this process before the trial (a notebook's kernel)."""
    env = os.environ if env is None else env
    applied: list[str] = []
    notices: list[Msg] = []
    for name in requested(plan):
        if name in IN_PROCESS:
            applied.append(name)
            if (
                name == "deterministic"
                and device.type == "cuda"
                and cuda_started
                and CUBLAS_VARIABLE not in env
            ):
                notices.append(
                    msg(
                        "trial.sub.cublas_late",
                        switch=name,
                        variable=CUBLAS_VARIABLE,
                        value=CUBLAS_DETERMINISTIC,
                    )
                )
            continue
        variable, value = STARTUP_VARIABLES[name]
        if device.type != "cuda":
            notices.append(msg("trial.sub.switch_cpu", switch=name, variable=variable, value=value))
        elif _in_effect(name, env):
            applied.append(name)
        else:
            notices.append(msg("trial.sub.switch_startup", switch=name, variable=variable, value=value))
    return applied, notices


@contextlib.contextmanager
def execution_switches(plan: TrainPlan, device: torch.device) -> Iterator[None]:
    """tf32 and deterministic on while the block runs (the plan's, when it asks for them); the caller's settings
    back afterwards, whatever happens in the block. deterministic sets CUBLAS_WORKSPACE_CONFIG=:4096:8 when it is
    unset (and leaves it: cuBLAS handles made meanwhile keep that workspace)."""
    import torch

    restore: list[Any] = []
    try:
        if plan.tf32:  # torch.backends.cuda.matmul.allow_tf32 follows the float32 matmul precision
            precision, allow = torch.get_float32_matmul_precision(), torch.backends.cuda.matmul.allow_tf32
            cudnn_tf32 = torch.backends.cudnn.allow_tf32
            restore.append(lambda: _restore_tf32(precision, allow, cudnn_tf32))
            torch.set_float32_matmul_precision("high")
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        if plan.deterministic:  # what HF's enable_full_determinism turns on (transformers trainer_utils.py)
            # left set afterwards: the cuBLAS handles made during the trial keep their workspace whatever it says
            os.environ.setdefault(CUBLAS_VARIABLE, CUBLAS_DETERMINISTIC)
            was = (
                torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled(),
                torch.backends.cudnn.deterministic,
                torch.backends.cudnn.benchmark,
            )
            restore.append(lambda: _restore_deterministic(*was))
            torch.use_deterministic_algorithms(True)
            torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
        yield
    finally:
        for undo in reversed(restore):
            undo()


def _restore_tf32(precision: str, allow: bool, cudnn_tf32: bool) -> None:
    import torch

    torch.set_float32_matmul_precision(precision)
    if torch.backends.cuda.matmul.allow_tf32 != allow:
        torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = cudnn_tf32


def _restore_deterministic(
    enabled: bool, warn_only: bool, cudnn_deterministic: bool, benchmark: bool
) -> None:
    import torch

    torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn_deterministic, benchmark


__all__ = [
    "CUBLAS_DETERMINISTIC",
    "CUBLAS_VARIABLE",
    "IN_PROCESS",
    "STARTUP_VARIABLES",
    "execution_switches",
    "requested",
    "startup_env",
    "switch_notices",
]
