"""Library notices are held, not printed, on every machine (whatever its CPU makes bitsandbytes say)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import logging
import gpuwork.measure
from gpuwork.measure.notices import held_notices
logging.getLogger("bitsandbytes.backends.cpu.ops").warning("Failed to load CPU gemm_4bit_forward: %s", "no kernels")
logging.getLogger("bitsandbytes.cextension").error("the library failed to load")
logging.getLogger("someone.else").warning("not ours to hold")
print(held_notices())
"""


def test_notices_below_error_are_held_and_errors_still_printed():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True)
    assert "bitsandbytes.backends.cpu.ops: Failed to load CPU gemm_4bit_forward: no kernels" in out.stdout
    assert "gemm_4bit_forward" not in out.stderr
    assert "the library failed to load" in out.stderr and "not ours to hold" in out.stderr


def test_importing_bitsandbytes_after_gpuwork_measure_prints_nothing():
    code = "import gpuwork.measure, bitsandbytes, torch; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "ok" and out.stderr == ""
