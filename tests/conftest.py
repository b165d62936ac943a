import datetime as dt
import os
import signal
import socket
import subprocess

import pytest


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (for a server a test starts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_server(proc: subprocess.Popen, children: list, *, sig: int = signal.SIGINT, group: bool = False,
                grace_s: float = 15) -> None:
    """Stop a server this test started, by PID: ``sig`` first (its clean stop, to the process group when
    ``group``), SIGKILL when it is too slow; then wait for the children it started (kernels), killing laggards."""
    import psutil

    send = os.killpg if group else os.kill
    if proc.poll() is None:
        send(proc.pid, sig)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            send(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    for child in children:
        try:
            child.wait(timeout=5)
        except psutil.TimeoutExpired:
            child.kill()
        except psutil.NoSuchProcess:
            pass


def upload_value(content: bytes, name: str = "config.json") -> tuple[dict, ...]:
    """What an ipywidgets FileUpload holds after the user picks one file."""
    return ({"name": name, "type": "application/json", "size": len(content), "content": memoryview(content),
             "last_modified": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)},)


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list:
    """What a panel's ``show()`` displays (instead of IPython's display)."""
    from gpuwork.ui import common

    seen: list = []
    monkeypatch.setattr(common, "display", lambda *objs: seen.extend(o for o in objs if o is not None))
    return seen


@pytest.fixture(scope="module")
def one_thread():
    """One intra-op torch thread: on a shared 2-core box two OpenMP threads stall each other (30x slower)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def load_benchmark(name: str):
    """A script of benchmarks/ as a module (the browser tests drive the app through benchmarks/app_load.py)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module



def local_page(browser, url: str) -> tuple:
    """A page of a Playwright ``browser`` that reaches only the server of ``url`` (anything else, a CDN, is refused,
    never fetched), and the list its page errors are collected in."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(url) else route.abort())
    return page, errors
