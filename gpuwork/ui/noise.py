"""Library noise kept out of notebooks and reports: warnings meant for library developers, not for readers.

Two layers. ``quiet_libraries()`` runs in the notebook's kernel (``gpuwork.ui.common.setup_notebook``): it
silences FutureWarning / DeprecationWarning and lowers the log level of libraries that log setup chatter as
warnings (bitsandbytes: "Failed to load CPU gemm_4bit_forward ... pip install kernels" on CPUs without its
optional kernel package). ``strip_noise(nb)`` cleans an executed notebook afterwards (the report does this):
stderr lines that match ``NOISE`` are removed, and an output left empty is dropped; any other stderr stays.

Example:
    >>> clean_stream("x.py:3: FutureWarning: `foo` is deprecated\\n  foo()\\nreal problem\\n")
    'real problem\\n'
"""

from __future__ import annotations

import logging
import re
import warnings
from typing import Any

# Loggers whose warnings are setup chatter for a reader of the workbook (errors still show).
QUIET_LOGGERS = ("bitsandbytes", "torchao")
# One line each; a warnings.warn line is followed by the source line it points at (indented), removed too.
NOISE = (
    re.compile(r"Failed to load CPU gemm_4bit_forward"),
    re.compile(r"pip install kernels"),
    re.compile(r"\b(Future|Deprecation|PendingDeprecation)Warning\b"),
    re.compile(r"Kernel is running over TCP without encryption"),
)


def quiet_libraries() -> None:
    """Silence library warnings in this process (call once in a notebook kernel)."""
    for category in (FutureWarning, DeprecationWarning, PendingDeprecationWarning):
        warnings.filterwarnings("ignore", category=category)
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def clean_stream(text: str) -> str:
    """``text`` without the lines that match NOISE (and the indented source line after a warning)."""
    out: list[str] = []
    skip_source = False
    for line in text.splitlines(keepends=True):
        if skip_source and line.startswith((" ", "\t")):
            skip_source = False
            continue
        skip_source = False
        if any(p.search(line) for p in NOISE):
            skip_source = True
            continue
        out.append(line)
    return "".join(out)


def strip_noise(nb: Any) -> int:
    """Remove library noise from the stderr outputs of an executed notebook, in place; returns how many
    outputs were dropped entirely."""
    dropped = 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                output["text"] = clean_stream(output.get("text", ""))
                if not output["text"].strip():
                    dropped += 1
                    continue
            kept.append(output)
        cell["outputs"] = kept
    return dropped


__all__ = ["NOISE", "QUIET_LOGGERS", "clean_stream", "quiet_libraries", "strip_noise"]
