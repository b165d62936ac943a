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

import html
import json
import os
import statistics
import time
from pathlib import Path

import pytest
from conftest import free_port, load_benchmark

from gpuwork.cli.app import MAX_PAGES, POOL_SIZE
from gpuwork.present.messages import text

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
    assert "Error at server while executing cell" not in log and _tracebacks(log) == [], log[-3000:]
    assert result.change_s is not None, "with 20 pages open, a change did not reach its chart within 120 s"


# -- a page always loads; one visitor cannot take every page ---------------------------------------------------

# the culler at its most eager: every second, anything idle for 2 s (a pool kernel waits longer than that). A kernel
# taken from the pool was culled before its page connected in about one load in twenty at the defaults (30 s / 120 s);
# with these settings the same race would hit nearly every load
EAGER_CULLER = ("--MappingKernelManager.cull_interval=1", "--MappingKernelManager.cull_idle_timeout=2")
# the pool's replacements start at once, not after 10 s: the loads follow each other as fast as kernels start
NO_FILL_DELAY = ("--VoilaKernelManager.fill_delay=0",)


# A culled kernel can still print this at its own end: ipykernel (7.4) answers the shutdown request and then
# publishes "idle" through an IOPub event pipe that is already closed. Upstream fixed the same race in the send
# itself (ipython/ipykernel PR #1518), not in the wake-up before it. The kernel is going away; no page is touched.
_SHUTDOWN_RACE = ("/ipykernel/kernelbase.py", "in process_control",
                  "zmq.error.ZMQError: Socket operation on non-socket")


def _tracebacks(log: str) -> list[str]:
    """Every traceback in a server log, each up to and with its exception line, less the shutdown race above."""
    found = []
    for part in log.split("Traceback (most recent call last):")[1:]:
        lines = part.split("\n")[1:]
        end = next((i for i, line in enumerate(lines) if line and not line[0].isspace()), len(lines) - 1)
        block = "\n".join(lines[:end + 1])
        if not all(mark in block for mark in _SHUTDOWN_RACE):
            found.append(block)
    return found


def test_only_the_kernel_shutdown_race_is_forgiven_in_a_server_log() -> None:
    race = ("ERROR:tornado.general:Uncaught exception in ZMQStream callback\nTraceback (most recent call last):\n"
            '  File "/v/site-packages/ipykernel/kernelbase.py", line 372, in dispatch_control\n'
            "    await self.process_control(msg)\n"
            '  File "/v/site-packages/ipykernel/kernelbase.py", line 409, in process_control\n'
            '    self._publish_status_and_flush("idle", "control", self.control_stream)\n'
            "zmq.error.ZMQError: Socket operation on non-socket\n[Voila] Kernel shutdown: 9b57\n")
    ours = ("Traceback (most recent call last):\n"
            '  File "/r/gpuwork/app/sizing.py", line 12, in redraw\n    chart.update()\n'
            "ValueError: bad figure\n")
    same_error_elsewhere = race.replace("in process_control", "in execute_request")
    assert _tracebacks(race) == []
    assert _tracebacks(race + ours) == [ours.split("\n", 1)[1].rstrip("\n")]
    assert len(_tracebacks(same_error_elsewhere)) == 1
    assert _tracebacks("[Voila] Using pre-heated kernel\n") == []


def _chromium(p):
    return p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                             args=load_benchmark("app_load").CHROMIUM_ARGS)


def _local_context(browser, url: str):
    """A browser context (one visitor: its own cookies) that reaches only the server of ``url``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url) else route.abort())
    return context


def _serve(tmp_path: Path, *flags: str, max_pages: int = MAX_PAGES, pool: int = POOL_SIZE):
    bench = load_benchmark("app_load")
    port = free_port()
    log_path = tmp_path / "voila.log"
    proc = bench.start_server(port, max_pages, log_path, flags, pool=pool)
    return bench, proc, f"http://127.0.0.1:{port}/", log_path


def _loads_in_a_row(loads: int, tmp_path: Path) -> None:
    """``loads`` pages, one after the other, each from the preheated pool and each until its first chart, with the
    culler at its most eager; then every kernel handed to a page reached its page."""
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    bench, proc, url, log_path = _serve(tmp_path, *EAGER_CULLER, *NO_FILL_DELAY)
    failures: list[str] = []
    times: list[float] = []
    t_start = time.monotonic()
    try:
        with sync_playwright() as p:
            browser = _chromium(p)
            context = _local_context(browser, url)  # one visitor: a closed tab frees its place
            for i in range(loads):
                page = context.new_page()
                t0 = time.monotonic()
                try:
                    page.goto(url, timeout=120_000)
                    page.wait_for_selector(bench.CHART, timeout=60_000)
                    times.append(time.monotonic() - t0)
                except Exception as exc:  # noqa: BLE001 - every stuck page is reported, then the test fails
                    body = " ".join(page.inner_text("body").split())[:200] if not page.is_closed() else ""
                    failures.append(f"load {i + 1}: {type(exc).__name__}: {body!r}")
                page.close()
                if len(failures) >= 3:
                    break
                if (i + 1) % 20 == 0:  # progress, for a run that a busy machine stretches past its timeout
                    print(f"[loads] {i + 1} loads, {len(times)} charts, {time.monotonic() - t_start:.0f} s", flush=True)
            browser.close()
        log = log_path.read_text(errors="replace")  # before the stop, which interrupts kernels still starting
    finally:
        bench.stop_server(proc)
    print(f"\n[loads] {len(times)} of {loads} pages reached their first chart in {time.monotonic() - t_start:.0f} s "
          f"(median {statistics.median(times) if times else float('nan'):.1f} s per page); kernels culled: "
          f"{log.count('Culling ')}; pre-heated kernels used: {log.count('Using pre-heated kernel')}")
    assert failures == [], failures
    assert len(times) == loads
    assert log.count("Using pre-heated kernel") >= loads // 2  # the pool served the pages (some start their own)
    assert "Error at server while executing cell" not in log and _tracebacks(log) == [], log[-3000:]


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(900)  # ~3.5 s a load on the 2-core machine when quiet; 14 s a load when others load it
def test_twenty_page_loads_in_a_row_each_reach_the_first_chart(tmp_path: Path) -> None:
    # before the fix every load stuck (0 of 3 reached a chart), so twenty catch it; 200 under GPUWORK_LOAD_TEST
    _loads_in_a_row(20, tmp_path)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(3600)
@pytest.mark.skipif(os.environ.get("GPUWORK_LOAD_TEST") != "1",
                    reason="200 pages one after another (~30 min on 2 cores): set GPUWORK_LOAD_TEST=1")
def test_two_hundred_page_loads_in_a_row_each_reach_the_first_chart(tmp_path: Path) -> None:
    _loads_in_a_row(200, tmp_path)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(600)
def test_a_visitor_at_its_limit_gets_a_page_saying_close_a_tab_and_another_visitor_is_served(tmp_path: Path) -> None:
    """Visitor A (one browser context: one cookie jar) opens its limit of tabs; its next tab is refused with a
    page in both languages and starts no kernel; visitor B (another context) is served meanwhile; when A closes a
    tab, A is served again."""
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    per_visitor = 2
    bench, proc, url, log_path = _serve(tmp_path, f"--PagesKernelManager.max_pages_per_visitor={per_visitor}",
                                        max_pages=5, pool=1)
    try:
        with sync_playwright() as p:
            browser = _chromium(p)
            first = _local_context(browser, url)
            tabs = []
            for _ in range(per_visitor):
                tab = first.new_page()
                tab.goto(url, timeout=120_000)
                tab.wait_for_selector(bench.CHART, timeout=120_000)
                tabs.append(tab)
            kernels = len(bench._kernels(proc.pid))
            extra = first.new_page()
            response = extra.goto(url, timeout=120_000)
            assert response.status == 429
            shown = " ".join(extra.inner_text("body").split())
            assert text("error.app.too_many_tabs", "en", n=per_visitor) in shown
            assert text("error.app.too_many_tabs", "ru", n=per_visitor) in shown
            assert len(bench._kernels(proc.pid)) == kernels  # the refused tab started no kernel and took none
            second = _local_context(browser, url).new_page()
            assert second.goto(url, timeout=120_000).status == 200
            second.wait_for_selector(bench.CHART, timeout=120_000)
            tabs[0].close()  # A's closed tab frees its place at once (its kernel goes later)
            deadline = time.monotonic() + 30
            while (status := extra.goto(url, timeout=120_000).status) == 429 and time.monotonic() < deadline:
                time.sleep(1)
            assert status == 200
            extra.wait_for_selector(bench.CHART, timeout=120_000)
            browser.close()
        log = log_path.read_text(errors="replace")  # before the stop, which interrupts kernels still starting
    finally:
        bench.stop_server(proc)
    assert log.count("Refused a page") >= 1
    assert "Error at server while executing cell" not in log and _tracebacks(log) == [], log[-3000:]


# -- the kernel manager's rules, with real kernels and no browser ----------------------------------------------


def _aged(kernels, kernel_id: str, seconds: float) -> None:
    """Make ``kernel_id`` look idle for ``seconds`` (as a pool kernel that waited that long)."""
    import datetime as dt

    kernels._kernels[kernel_id].last_activity -= dt.timedelta(seconds=seconds)


@pytest.mark.slow
def test_a_kernel_handed_to_a_page_is_not_culled_before_the_page_connects_nor_while_connected() -> None:
    import asyncio

    from gpuwork.cli.app_kernels import PagesKernelManager

    async def scenario() -> None:
        kernels = PagesKernelManager(cull_idle_timeout=1, cull_interval=1, page_connect_timeout=30)
        try:
            page = await kernels.start_kernel(kernel_name="python3")  # handed to a page (not for the pool)
            _aged(kernels, page, 600)
            await kernels.cull_kernel_if_idle(page)
            assert page in kernels  # idle for 10 minutes, but its page has not connected yet
            kernels.notify_connect(page)
            _aged(kernels, page, 600)
            await kernels.cull_kernel_if_idle(page)
            assert page in kernels  # connected: never culled
            kernels.notify_disconnect(page)
            await kernels.cull_kernel_if_idle(page)
            assert page in kernels  # the page left just now: its idle clock starts there
            _aged(kernels, page, 5)
            await kernels.cull_kernel_if_idle(page)
            assert page not in kernels  # gone for longer than cull_idle_timeout
            # a page that never connects is given up after page_connect_timeout
            kernels.page_connect_timeout = 0.5
            lost = await kernels.start_kernel(kernel_name="python3")
            _aged(kernels, lost, 600)
            await asyncio.sleep(0.6)
            await kernels.cull_kernel_if_idle(lost)
            # the periodic culler (every second) may have begun this shutdown first; it ends within seconds
            for _ in range(100):
                if lost not in kernels:
                    break
                await asyncio.sleep(0.1)
            assert lost not in kernels
        finally:
            await kernels.shutdown_all()

    asyncio.run(scenario())


@pytest.mark.slow
def test_at_the_limit_a_new_page_takes_the_place_of_a_page_that_has_gone() -> None:
    import asyncio

    from tornado.web import HTTPError

    from gpuwork.cli.app_kernels import PagesKernelManager

    async def scenario() -> None:
        kernels = PagesKernelManager(max_pages=2)
        try:
            first = await kernels.start_kernel(kernel_name="python3")
            second = await kernels.start_kernel(kernel_name="python3")
            for kid in (first, second):
                kernels.notify_connect(kid)
            with pytest.raises(HTTPError) as refused:  # both pages open: no place
                await kernels.start_kernel(kernel_name="python3")
            assert refused.value.status_code == 503
            kernels.notify_disconnect(second)  # its tab closed
            third = await kernels.start_kernel(kernel_name="python3")
            assert sorted(kernels.list_kernel_ids()) == sorted([first, third])  # the gone page's kernel made room
        finally:
            await kernels.shutdown_all()

    asyncio.run(scenario())


def test_the_refusal_page_says_it_in_both_languages_and_escapes_it() -> None:
    from gpuwork.cli.app_kernels import refusal_page

    page = refusal_page("error.app.too_many_tabs", 429, n=5)
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page
    for lang in ("en", "ru"):
        assert f'<p lang="{lang}">{html.escape(text("error.app.too_many_tabs", lang, n=5))}</p>' in page
    assert "5" in text("error.app.too_many_tabs", "ru", n=5) and "закройте" in page
    assert "<script" not in refusal_page("error.app.too_many_pages", 503, n="<script>")


def test_the_pages_per_visitor_travel_on_the_command_line_capped_by_the_page_limit() -> None:
    from voila.app import Voila

    from gpuwork.cli.app import MAX_PAGES_PER_VISITOR, app_notebook, voila_argv
    from gpuwork.cli.app_kernels import PagesKernelManager

    for asked, max_pages, expected in ((3, 40, 3), (9, 4, 4), (MAX_PAGES_PER_VISITOR, MAX_PAGES, 5)):
        voila = Voila()
        voila.parse_command_line(voila_argv(app_notebook(), max_pages=max_pages, pages_per_visitor=asked))
        assert PagesKernelManager(config=voila.config).max_pages_per_visitor == expected


@pytest.mark.parametrize("value", ["0", "1001", "many"])
def test_a_bad_pages_per_visitor_is_one_line(value: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    program = f"import sys\nfrom gpuwork.cli import main\nsys.exit(main(['app', '--pages-per-visitor', {value!r}]))"
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                            cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"--pages-per-visitor {value!r} must be a whole number from 1 to 1000" in result.stderr


def test_the_kernel_watch_asks_for_its_own_kernel_and_says_it_in_both_languages() -> None:
    from gpuwork.cli.app_kernels import KERNEL_WATCH_S, kernel_watch_script

    script = kernel_watch_script("0123-abcd", "/app/")
    assert script.startswith("<script>") and script.rstrip().endswith("</script>") and script.count("</script") == 1
    assert '"/app/api/kernels/0123-abcd"' in script and f"setInterval(check, {KERNEL_WATCH_S * 1000})" in script
    for lang in ("en", "ru"):
        assert json.dumps(text("app.kernel_lost", lang)) in script
    # a value cannot close the script element early
    assert "</script>" not in kernel_watch_script("</script><b>", "/")[:-len("</script>\n")]


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.timeout(300)
def test_a_page_whose_kernel_is_gone_says_so_in_both_languages(tmp_path: Path) -> None:
    """The culler set to take even a connected page's kernel after 5 idle seconds: the page, once drawn, loses its
    kernel, and within a few of its checks shows the banner (both languages, a link that reloads)."""
    if not CHROMIUM.exists():
        pytest.skip(f"needs Debian chromium at {CHROMIUM}: run `make browser-deps` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    from gpuwork.cli.app_kernels import KERNEL_WATCH_S

    bench, proc, url, log_path = _serve(tmp_path, "--MappingKernelManager.cull_interval=1",
                                        "--MappingKernelManager.cull_idle_timeout=5",
                                        "--MappingKernelManager.cull_connected=True", pool=1)
    try:
        with sync_playwright() as p:
            browser = _chromium(p)
            page = _local_context(browser, url).new_page()
            page.goto(url, timeout=120_000)
            page.wait_for_selector(bench.CHART, timeout=120_000)
            assert page.locator(".gpuwork-kernel-lost").count() == 0
            banner = page.wait_for_selector(".gpuwork-kernel-lost", timeout=(5 + 2 + 3 * KERNEL_WATCH_S) * 1000)
            shown = " ".join(banner.inner_text().split())
            assert text("app.kernel_lost", "en") in shown and text("app.kernel_lost", "ru") in shown
            assert banner.query_selector("a").get_attribute("href") == page.url
            browser.close()
        log = log_path.read_text(errors="replace")
    finally:
        bench.stop_server(proc)
    assert "Culling 'idle' kernel" in log


def test_a_child_that_exits_while_the_kernels_are_listed_is_left_out() -> None:
    # a kernel that has exited but is not yet reaped is a zombie: psutil refuses its command line
    import subprocess
    import sys

    bench = load_benchmark("app_load")
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and psutil_status(child.pid) != "zombie":
            time.sleep(0.05)
        assert psutil_status(child.pid) == "zombie"
        assert bench._kernels(os.getpid()) == []
    finally:
        child.wait()


def psutil_status(pid: int) -> str:
    import psutil

    try:
        return psutil.Process(pid).status()
    except psutil.NoSuchProcess:
        return "gone"
