"""``gpuwork app``: the bundled app notebook served by Voila with voila.json's settings, from any directory.

The slow test starts the real command on a free 127.0.0.1 port from an empty temporary directory, fetches
the page and stops the server by its PID. Nothing but 127.0.0.1 is contacted.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from conftest import free_port, stop_server

from gpuwork.cli.app import (
    APP_NOTEBOOK,
    MAX_PAGES,
    VOILA_SETTINGS,
    app_notebook,
    require,
    voila_argv,
)
from gpuwork.errors import GpuworkError

ROOT = Path(__file__).resolve().parent.parent


def test_settings_are_voila_json() -> None:
    """The wheel does not ship voila.json, so the command carries the same settings."""
    assert VOILA_SETTINGS == json.loads((ROOT / "voila.json").read_text())


def test_the_app_notebook_ships_inside_the_package() -> None:
    import gpuwork

    notebook = app_notebook()
    assert notebook.name == APP_NOTEBOOK and notebook.is_file()
    assert Path(gpuwork.__file__).parent in notebook.parents
    assert json.loads(notebook.read_text())["metadata"]["kernelspec"]["name"] == "python3"


def test_voila_reads_the_command_line_as_the_settings() -> None:
    """Voila's own parser turns voila_argv into VOILA_SETTINGS, with the host and port asked for."""
    from jupyter_server.services.kernels.kernelmanager import MappingKernelManager
    from voila.app import Voila
    from voila.configuration import VoilaConfiguration

    voila = Voila()
    voila.parse_command_line(voila_argv(app_notebook(), host="127.0.0.1", port=9123))
    assert voila.extra_args == [str(app_notebook())]
    assert (voila.ip, voila.port, voila.open_browser) == ("127.0.0.1", 9123, False)
    configuration = VoilaConfiguration(parent=voila)
    assert configuration.strip_sources is True
    assert configuration.extension_denylist == ["jupyterlab-jupytext", "jupyterlab_pygments", "anywidget",
                                                "jupyterlab-plotly"]
    # a list of patterns arrives whole, backslashes included: the basic plotly bundle, and no other file
    assert configuration.file_allowlist == [r"static/plotly-basic\.min\.js"]
    from voila.execute import VoilaExecutor

    assert VoilaExecutor(None, config=voila.config).iopub_timeout == 60
    kernels = MappingKernelManager(config=voila.config)
    # a page whose connection is gone is culled within 2.5 minutes; an open page or a busy kernel never
    assert (kernels.cull_interval, kernels.cull_idle_timeout) == (30, 120)
    assert (kernels.cull_connected, kernels.cull_busy) == (False, False)


def test_the_page_limit_and_the_pool_travel_on_the_command_line() -> None:
    from voila.app import Voila
    from voila.configuration import VoilaConfiguration

    from gpuwork.cli.app_kernels import PagesKernelManager

    voila = Voila()
    voila.parse_command_line(voila_argv(app_notebook(), max_pages=3, pool=5))
    configuration = VoilaConfiguration(parent=voila)
    assert configuration.multi_kernel_manager_class is PagesKernelManager
    assert configuration.preheat_kernel is True and configuration.default_pool_size == 3  # capped by the limit
    assert PagesKernelManager(config=voila.config).max_pages == 3 and MAX_PAGES == 40
    voila = Voila()
    voila.parse_command_line(voila_argv(app_notebook(), pool=0))
    configuration = VoilaConfiguration(parent=voila)
    assert configuration.preheat_kernel is False and configuration.default_pool_size == 0


@pytest.mark.slow
def test_at_the_limit_a_page_is_refused_and_the_pool_waits_for_room() -> None:
    """Real kernels: with room for one, a second page is answered 503 and starts nothing; a pool kernel (Voila
    starts those with VOILA_PREHEAT=True) waits instead, and starts once the first kernel is gone."""
    import asyncio
    import os

    from tornado.web import HTTPError

    from gpuwork.cli.app_kernels import PagesKernelManager

    async def scenario() -> None:
        kernels = PagesKernelManager(max_pages=1, room_poll_s=0.1)
        first = await kernels.start_kernel(kernel_name="python3")
        try:
            with pytest.raises(HTTPError) as refused:
                await kernels.start_kernel(kernel_name="python3", env=dict(os.environ))
            assert refused.value.status_code == 503
            assert refused.value.reason == "the app already serves 1 pages, its limit: try again in a few minutes"
            pool_env = {**os.environ, "VOILA_PREHEAT": "True"}
            pool_start = asyncio.ensure_future(kernels.start_kernel(kernel_name="python3", env=pool_env))
            await asyncio.sleep(1.0)
            assert not pool_start.done() and kernels.list_kernel_ids() == [first]  # waiting: nothing started
            await kernels.shutdown_kernel(first)
            second = await asyncio.wait_for(pool_start, timeout=60)
            assert kernels.list_kernel_ids() == [second] != [first]
        finally:
            await kernels.shutdown_all()

    asyncio.run(scenario())


@pytest.mark.parametrize("value", ["0", "1001", "many", "2.5"])
def test_a_bad_page_limit_is_one_line(value: str, tmp_path: Path) -> None:
    result = _gpuwork("app", "--max-pages", value, cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"--max-pages {value!r} must be a whole number from 1 to 1000" in result.stderr


def test_require_names_the_extra_to_install() -> None:
    with pytest.raises(GpuworkError) as error:
        require("gpuwork_no_such_module", "app")
    assert str(error.value) == ("gpuwork_no_such_module is not installed: install gpuwork[app] "
                                "(pip install 'gpuwork[app]')")
    assert error.value.msg.code == "error.cli.not_installed"
    assert error.value.text("ru") == ("gpuwork_no_such_module не установлен: установите gpuwork[app] "
                                      "(pip install 'gpuwork[app]')")


def _gpuwork(*args: str, code: str = "", cwd: Path) -> subprocess.CompletedProcess:
    """`gpuwork ARGS` in a fresh interpreter; ``code`` runs first (e.g. to hide a module)."""
    program = f"import sys\n{code}\nfrom gpuwork.cli import main\nsys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_without_voila_one_line_says_install_the_app_extra(tmp_path: Path) -> None:
    # sys.modules[name] = None makes `import voila` fail as it does where voila is not installed
    result = _gpuwork("app", code="sys.modules['voila'] = None", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == ("gpuwork: error: voila is not installed: install gpuwork[app] "
                             "(pip install 'gpuwork[app]')\n")


@pytest.mark.parametrize("port", ["0", "70000", "http"])
def test_a_bad_port_is_one_line(port: str, tmp_path: Path) -> None:
    result = _gpuwork("app", "--port", port, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and f"{port!r} is not a TCP port" in result.stderr


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_gpuwork_app_serves_the_app_from_any_directory(tmp_path: Path) -> None:
    command = Path(sys.executable).with_name("gpuwork")
    assert command.exists(), f"the gpuwork console script is not installed next to {sys.executable}: make venv"
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    log_path = tmp_path / "app.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(command), "app", "--port", str(port)], cwd=tmp_path, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    kernels: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 150
        body = ""
        while True:
            assert proc.poll() is None, f"gpuwork app exited with {proc.returncode}:\n{log_path.read_text()}"
            try:  # the first GET starts a kernel and runs the notebook
                with urllib.request.urlopen(url, timeout=120) as response:
                    if response.status == 200:
                        body = response.read().decode()
                        break
            except OSError:
                assert time.monotonic() < deadline, f"no answer on {url} within 150 s:\n{log_path.read_text()}"
                time.sleep(0.5)
        kernels = psutil.Process(proc.pid).children(recursive=True)
        assert "<title>gpuwork — GPU sizing for fine-tuning" in body  # the page names the tool
        log = log_path.read_text(errors="replace")
        assert f"http://127.0.0.1:{port}/" in log
        assert "Error at server while executing cell" not in log, log[-3000:]
        assert kernels, "serving the page started no kernel"
    finally:
        stop_server(proc, kernels, sig=signal.SIGTERM, grace_s=30)  # Voila shuts its kernels down
    assert proc.returncode == 0, log_path.read_text()
    assert "Kernel shutdown" in log_path.read_text()
