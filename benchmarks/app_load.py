"""Many visitors at once: the Voila app under N concurrent pages in one headless Chromium.

Starts the app as ``gpuwork app`` does (the bundled notebook, VOILA_SETTINGS and the page limit) on a free
127.0.0.1 port, opens N browser contexts (separate cookie jars: N visitors) in ONE Chromium process at the
same moment, and measures for each the time from navigation to the first chart (the memory breakdown's
plotly graph). Meanwhile it samples the resident memory (RSS) of the Voila process tree (server + one
kernel per page) with psutil. When every page shows its chart, one visitor changes the sequence length and
the time to the updated chart is measured (is the server still responsive?).

Prints figures only: first-chart median and 95th percentile, failures, kernels, peak and final RSS of the
tree, and the change-to-chart time. Only 127.0.0.1 is contacted; the server is stopped by its PID.

Usage:
    python benchmarks/app_load.py [--visitors 20] [--max-pages 40] [--timeout-s 600] [--pool N] [--baseline]

The first-chart figures for 1 and 5 visitors, with the preheated pool (default), a kernel per visitor (``--pool
0``) and the floor of this machine (``--baseline``), are this script's: e.g. ``--visitors 5 --pool 0``.

Limitations: all pages share one Chromium (20 separate Chromium processes would need ~4 GB more and compete
for the same 2 cores); the browser's own CPU use slows the server down on a small machine, so these times
are an upper bound of what the server alone would give.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage",
                 # 20 pages in one browser: all but one are "in the background", where Chromium throttles timers
                 # and skips animation frames (plotly draws in them): measure every page as if it were in front
                 "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                 "--disable-backgrounding-occluded-windows"]
CHART = ".gpuwork-breakdown .js-plotly-plot"
# change the sequence length in the page; resolve with the ms until the breakdown chart's data differ
CHANGE_AND_TIME = """async (value) => {
  // each update draws a new plot element: look it up every time
  const snap = () => {
    const gd = document.querySelector('.gpuwork-breakdown .js-plotly-plot');
    return gd && gd.data ? JSON.stringify(gd.data.map(t => t.y)) : '';
  };
  const before = snap();
  const el = document.querySelector('.gpuwork-seq-len input');
  const t0 = performance.now();
  el.value = value;
  el.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  // until the new chart is drawn: between the old one and the new one there may be none
  while (snap() === before || snap() === '') {
    await new Promise(r => setTimeout(r, 50));
    if (performance.now() - t0 > 120000) { return -1; }
  }
  return performance.now() - t0;
}"""


@dataclass
class LoadResult:
    """What one load run measured. Times in seconds, memory in bytes."""

    visitors: int
    first_chart_s: list[float] = field(default_factory=list)  # one per page that showed its chart
    failures: list[str] = field(default_factory=list)  # one line per page that did not
    kernels: int = 0  # kernel processes while every page was open
    peak_rss_bytes: int = 0  # Voila server + kernels, sampled every 0.5 s
    server_rss_bytes: int = 0  # the server process alone, at the end
    change_s: float | None = None  # one visitor's change -> updated chart, with every page open
    culled: int = 0  # kernels the server culled during the run (should be 0: every page stays connected)
    disconnected: int = 0  # pages whose kernel connection the server saw close before the pages were closed
    change_ms: float | None = None  # what the page returned for the change (-1: no update within 120 s)
    # the server's part of a page's wait: the page's request for its widgets -> the frame that brings them
    widgets_s: list[float] = field(default_factory=list)
    server_cpu_s: float = 0.0  # CPU seconds of the Voila tree (server + kernels) while the pages opened
    browser_cpu_s: float = 0.0  # CPU seconds of Chromium's processes meanwhile

    @property
    def median_s(self) -> float:
        return statistics.median(self.first_chart_s)

    @property
    def p95_s(self) -> float:
        ordered = sorted(self.first_chart_s)
        return ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]

    def lines(self) -> list[str]:
        gib = 2**30
        out = [f"visitors: {self.visitors} (browser contexts in one Chromium), charts shown: "
               f"{len(self.first_chart_s)}, failures: {len(self.failures)}"]
        if self.first_chart_s:
            out.append(f"first chart: median {self.median_s:.1f} s, p95 {self.p95_s:.1f} s, "
                       f"min {min(self.first_chart_s):.1f} s, max {max(self.first_chart_s):.1f} s")
        if self.widgets_s:
            out.append(f"the server's part: a page asks for its widgets -> receives them: median "
                       f"{statistics.median(self.widgets_s):.2f} s, max {max(self.widgets_s):.2f} s")
        if self.server_cpu_s or self.browser_cpu_s:
            out.append(f"CPU while the pages opened ({os.cpu_count()} cores): Voila server + kernels "
                       f"{self.server_cpu_s:.1f} s, Chromium {self.browser_cpu_s:.1f} s")
        out.append(f"kernels: {self.kernels}; RSS of the Voila tree: peak {self.peak_rss_bytes / gib:.2f} GiB "
                   f"({self.peak_rss_bytes / max(self.kernels, 1) / 2**20:.0f} MiB per page), "
                   f"server alone {self.server_rss_bytes / 2**20:.0f} MiB")
        if self.change_s is not None:
            out.append(f"with every page open: change -> updated chart {self.change_s:.2f} s")
        elif self.change_ms is not None:
            out.append(f"with every page open: the change did not reach the chart ({self.change_ms:.0f})")
        out.append(f"kernels culled during the run: {self.culled}; connections closed while open: "
                   f"{self.disconnected}")
        out += [f"failure: {f}" for f in self.failures]
        return out


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tree_rss(pid: int) -> tuple[int, int, int]:
    """(RSS of pid and all its descendants, RSS of pid alone, number of descendants)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0, 0, 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    try:
        own = root.memory_info().rss
    except psutil.NoSuchProcess:
        own = 0
    return total, own, len(procs) - 1


def start_server(port: int, max_pages: int, log_path: Path, extra_flags: tuple[str, ...] = (), *,
                 pool: int | None = None, notebook: Path | None = None) -> subprocess.Popen:
    """The app as ``gpuwork app`` serves it (``pool``: the preheated kernels, default ``gpuwork app``'s; ``notebook``:
    another notebook served the same way), in a new process group; returns once the port accepts connections and
    the pool's kernels have run the notebook."""
    from gpuwork.cli.app import POOL_SIZE

    pool = POOL_SIZE if pool is None else pool
    program = (
        "from voila.app import Voila\n"
        "from gpuwork.cli.app import app_notebook, voila_argv\n"
        f"extra = {list(extra_flags)!r}\n"
        f"notebook = {str(notebook) if notebook else None!r} or app_notebook()\n"
        "keys = {flag.split('=', 1)[0] for flag in extra}\n"  # a flag given twice is an error: extra replaces
        f"argv = [a for a in voila_argv(notebook, port={port}, max_pages={max_pages}, pool={pool}) "
        "if a.split('=', 1)[0] not in keys]\n"
        "argv += ['--Voila.port_retries=0', *extra]\n"
        "Voila.launch_instance(argv=argv)\n"
    )
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", program], cwd=tempfile.gettempdir(), stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"voila exited with {proc.returncode}: {log_path.read_text(errors='replace')[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            wait_for_pool(proc, min(pool, max_pages))  # voila_argv caps the pool so
            return proc
        except OSError:
            if time.monotonic() > deadline:
                stop_server(proc)
                raise RuntimeError(f"voila did not listen on port {port} within 90 s") from None
            time.sleep(0.2)


def _kernels(pid: int) -> list:
    """The server's kernel processes now; a child that exits while being looked at (a zombie until reaped) is
    left out."""
    import psutil

    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if "ipykernel" in " ".join(child.cmdline()):
                found.append(child)
        except (psutil.NoSuchProcess, psutil.AccessDenied):  # ZombieProcess is a NoSuchProcess
            continue
    return found


def _cpu_percent(children: list) -> float:
    """Their CPU use over half a second; one that exits meanwhile counts as busy (look again)."""
    import psutil

    try:
        return sum(c.cpu_percent(interval=0.5) for c in children)
    except psutil.NoSuchProcess:
        return float("inf")


def wait_for_pool(proc: subprocess.Popen, kernels: int, timeout_s: float = 180) -> None:
    """Until ``kernels`` preheated kernels exist and have run the notebook (their CPU use has settled)."""
    deadline = time.monotonic() + timeout_s
    while kernels > 0:
        children = _kernels(proc.pid)
        if len(children) >= kernels and _cpu_percent(children) < 5:
            return
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{kernels} preheated kernels were not ready within {timeout_s} s")
        time.sleep(0.5)


def stop_server(proc: subprocess.Popen) -> None:
    """SIGINT to the server's process group (Voila's clean stop shuts its kernels down); SIGKILL if it hangs."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _cpu_s(procs: list) -> float:
    """User + system CPU seconds of ``procs`` (psutil processes; one that is gone counts 0)."""
    import psutil

    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _trees(server_pid: int) -> tuple[list, list]:
    """(the Voila server and its kernels, Chromium's processes): this process's descendants, split."""
    import psutil

    try:
        root = psutil.Process(server_pid)
        server = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        server = []
    browser = []
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            if "chrom" in proc.name():
                browser.append(proc)
    return server, browser


async def _visit(browser, url: str, timeout_s: float, start: asyncio.Event, result: LoadResult) -> object | None:
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    # only the local server: a CDN request is refused, never fetched
    await page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url) else route.abort())
    asked = [0.0]

    def has(payload: str | bytes, word: str) -> bool:
        head = payload[:4096]
        return (word.encode() if isinstance(head, bytes) else word) in head

    def on_websocket(ws) -> None:
        def on_sent(payload: str | bytes) -> None:
            if has(payload, "request_states"):
                asked[0] = time.monotonic()

        def on_received(payload: str | bytes) -> None:
            if asked[0] and has(payload, "update_states"):
                result.widgets_s.append(time.monotonic() - asked[0])

        ws.on("framesent", on_sent)
        ws.on("framereceived", on_received)

    page.on("websocket", on_websocket)
    await start.wait()
    t0 = time.monotonic()
    try:
        await page.goto(url, timeout=timeout_s * 1000)
        await page.wait_for_selector(CHART, timeout=timeout_s * 1000)
    except Exception as exc:  # noqa: BLE001 - a benchmark reports every failure and goes on
        result.failures.append(f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
        return context
    result.first_chart_s.append(time.monotonic() - t0)
    return context, page


async def _run(url: str, visitors: int, timeout_s: float, server_pid: int, result: LoadResult,
               log_path: Path, *, change: bool = True) -> None:
    from playwright.async_api import async_playwright

    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(server_pid)[0])
            done.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            start = asyncio.Event()
            tasks = [asyncio.create_task(_visit(browser, url, timeout_s, start, result)) for _ in range(visitors)]
            await asyncio.sleep(0.5)  # every context is ready: the visitors arrive together
            sampler.start()
            server, chromium = _trees(server_pid)
            cpu_before = _cpu_s(server), _cpu_s(chromium)
            start.set()
            opened = await asyncio.gather(*tasks)
            result.server_cpu_s = _cpu_s(server) - cpu_before[0]  # a kernel started meanwhile is not counted
            result.browser_cpu_s = _cpu_s(chromium) - cpu_before[1]
            _, _, result.kernels = _tree_rss(server_pid)
            pages = [o[1] for o in opened if isinstance(o, tuple)]
            result.disconnected = log_path.read_text(errors="replace").count("Starting buffering")
            if pages and change:
                await pages[-1].bring_to_front()
                ms = await pages[-1].evaluate(CHANGE_AND_TIME, "3072")  # the last page to show its chart
                result.change_ms = ms
                result.change_s = ms / 1000 if ms > 0 else None
            for o in opened:
                await (o[0] if isinstance(o, tuple) else o).close()
        finally:
            done.set()
            await browser.close()
    result.peak_rss_bytes = peak[0]
    result.server_rss_bytes = _tree_rss(server_pid)[1]


BASELINE_CELL = """\
import plotly.graph_objects as go
from gpuwork.ui.common import LiveFigure

chart = LiveFigure("gpuwork-breakdown")
chart.show(go.Figure(go.Bar(x=["weights", "gradients"], y=[1.5, 2.0])))
chart.box
"""


def baseline_notebook(folder: Path) -> Path:
    """The least a Voila page with one chart can be: one cell, one ``LiveFigure`` bar chart (three widgets), with
    the app's plotly.js bundle beside it. Served like the app, it gives the floor that Voila's front end and the
    browser set on this machine."""
    import shutil

    import nbformat

    from gpuwork.facts.paths import notebooks_dir

    (folder / "static").mkdir(parents=True, exist_ok=True)
    shutil.copy(notebooks_dir() / "static" / "plotly-basic.min.js", folder / "static")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(BASELINE_CELL)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / "baseline.ipynb"
    nbformat.write(notebook, path)
    return path


def run_load(visitors: int = 20, *, max_pages: int = 40, timeout_s: float = 600,
             log_path: Path | None = None, baseline: bool = False, pool: int | None = None) -> LoadResult:
    """Start the app (``baseline``: the one-chart notebook instead; ``pool``: its preheated kernels, None as
    ``gpuwork app``, 0 a kernel per visitor), send ``visitors`` concurrent pages at it, stop it; the figures as a
    LoadResult. The baseline's pages make no change (it has no form)."""
    port = _free_port()
    work = Path(tempfile.mkdtemp(prefix="gpuwork-load-"))
    log_path = log_path or work / "voila.log"
    proc = start_server(port, max_pages, log_path, notebook=baseline_notebook(work) if baseline else None, pool=pool)
    result = LoadResult(visitors)
    try:
        asyncio.run(_run(f"http://127.0.0.1:{port}/", visitors, timeout_s, proc.pid, result, log_path,
                         change=not baseline))
    finally:
        stop_server(proc)
    result.culled = log_path.read_text(errors="replace").count("Culling '")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--visitors", type=int, default=20)
    parser.add_argument("--max-pages", type=int, default=40)
    parser.add_argument("--timeout-s", type=float, default=600)
    parser.add_argument("--baseline", action="store_true",
                        help="serve a one-chart notebook instead of the app: the floor of Voila and the browser here")
    parser.add_argument("--pool", type=int, default=None,
                        help="preheated kernels (default: gpuwork app's pool; 0: a kernel starts per visitor)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"needs Debian chromium at {CHROMIUM} (make browser-deps)", file=sys.stderr)
        return 2
    result = run_load(args.visitors, max_pages=args.max_pages, timeout_s=args.timeout_s, baseline=args.baseline,
                      pool=args.pool)
    for line in result.lines():
        print(line)
    return 0 if not result.failures else 1


if __name__ == "__main__":
    sys.exit(main())
