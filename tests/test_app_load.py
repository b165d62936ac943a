"""20 visitors at once: the real app (as `gpuwork app` serves it) in 20 browser contexts of one headless Chromium.

Every visitor must get the app and its first chart, one kernel each (plus the preheated pool's refills), none
culled while connected; with all 20 pages open the server must still answer a change; the memory of the Voila
process tree must stay bounded (each kernel well under 400 MiB). The figures (first-chart median and 95th
percentile, peak RSS) are printed, not asserted: the machine is shared (benchmarks/app_load.py prints the same).

Measured 2026-12-01 on the 2-core machine, with the pool and plotly.js's basic bundle: all 20 pages drew their
chart, first chart median 73.5 s, p95 74.1 s (92 s / 95 s with plotly's renderer extension; 118 s / 124.5 s with a
kernel per visitor and FigureWidgets); with all 20 open a change reached its chart in 0.16 s; 25 kernels, 3.11 GiB
for the whole tree. The time goes to the browser: while the pages opened, Chromium used 64.6 s of CPU and the
Voila server with its kernels 9.6 s, on the same 2 cores; the server answered a page's request for its widgets
within 1.4 s (median).

It runs on demand (GPUWORK_LOAD_TEST=1, about 5 minutes), not in the default suite: in a CI run with the
earlier architecture one of the 20 pages did not render within 480 s, and a check that depends on how busy a
shared machine is would turn CI red at random.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import load_benchmark

from gpuwork.cli.app import POOL_SIZE

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
VISITORS = 20
MIB = 2**20


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(900)
@pytest.mark.skipif(os.environ.get("GPUWORK_LOAD_TEST") != "1",
                    reason="20 browser pages for ~5 min: set GPUWORK_LOAD_TEST=1 (or run benchmarks/app_load.py)")
def test_twenty_concurrent_visitors_are_served_and_the_server_stays_bounded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    result = load_benchmark("app_load").run_load(VISITORS, timeout_s=480, log_path=tmp_path / "voila.log")
    with capsys.disabled():
        print()
        for line in result.lines():
            print(f"[load] {line}")
    assert result.failures == [], result.failures
    assert len(result.first_chart_s) == VISITORS and all(t > 0 for t in result.first_chart_s)
    # one kernel per page, and the preheated pool refilling behind them
    assert VISITORS <= result.kernels <= VISITORS + POOL_SIZE
    assert result.culled == 0  # a connected page is never culled, even idle
    assert 0 < result.peak_rss_bytes < VISITORS * 400 * MIB + 1024 * MIB
    log = (tmp_path / "voila.log").read_text(errors="replace")
    assert "Error at server while executing cell" not in log and "Traceback" not in log, log[-3000:]
    assert result.change_s is not None, "with 20 pages open, a change did not reach its chart within 120 s"
