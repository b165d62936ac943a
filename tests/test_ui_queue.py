"""The app's waiting line: one action at a time across processes, "n ahead", bounded, in a private folder."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from gpuwork.ui import queue as ui_queue
from gpuwork.ui.queue import ActionQueue, QueueCancelled, QueueFull, private_dir


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_private_dir_is_ours_and_closed_to_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    folder = private_dir()
    assert folder == runtime / "gpuwork" and _mode(folder) == 0o700 and folder.stat().st_uid == os.getuid()


def test_a_world_writable_runtime_dir_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # like /tmp: another account could create or hold our lock there
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = private_dir()
    assert folder == tmp_path / "cache" / "gpuwork" / "run" and _mode(folder) == 0o700
    assert not (shared / "gpuwork").exists()


def test_an_open_folder_of_ours_is_closed_and_a_link_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "line"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    ActionQueue(folder)
    assert _mode(folder) == 0o700
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(PermissionError):
        ActionQueue(link)


def test_no_private_folder_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the folder should go
    with pytest.raises(ui_queue.GpuworkError, match="cannot make a private folder"):
        private_dir()


def test_the_line_runs_one_at_a_time_in_arrival_order_and_says_how_many_are_ahead(tmp_path: Path) -> None:
    line = ActionQueue(tmp_path, places=4, poll_s=0.02)
    release = threading.Event()
    order: list[str] = []
    said: dict[str, list[int]] = {"b": [], "c": []}

    def first() -> None:
        order.append("a")
        release.wait(10)

    threads = [threading.Thread(target=line.run, args=(first,))]
    threads[0].start()
    while not line.state()[0]:
        time.sleep(0.01)
    for name in ("b", "c"):
        t = threading.Thread(target=line.run, args=(lambda n=name: (order.append(n), time.sleep(0.3)),),
                             kwargs={"on_wait": said[name].append})
        t.start()
        threads.append(t)
        while not said[name]:
            time.sleep(0.01)
    assert said == {"b": [1], "c": [2]}  # b waits behind a; c behind a and b
    assert line.state() == (True, 2)
    release.set()
    for t in threads:
        t.join(10)
    assert order == ["a", "b", "c"]
    assert said["c"][-1] == 1  # c moved up when a finished
    assert line.state() == (False, 0)


def test_a_full_line_refuses_at_once_and_stop_leaves_it(tmp_path: Path) -> None:
    line = ActionQueue(tmp_path, places=1, poll_s=0.02)
    release, waiting, cancel = threading.Event(), threading.Event(), threading.Event()
    runner = threading.Thread(target=line.run, args=(lambda: release.wait(10),))
    runner.start()
    while not line.state()[0]:
        time.sleep(0.01)
    errors: list[BaseException] = []

    def wait_then_cancel() -> None:
        try:
            line.run(lambda: None, on_wait=lambda n: waiting.set(), cancel=cancel)
        except QueueCancelled as exc:
            errors.append(exc)

    waiter = threading.Thread(target=wait_then_cancel)
    waiter.start()
    assert waiting.wait(10)
    with pytest.raises(QueueFull) as full:
        line.run(lambda: None)
    assert str(full.value) == "The server is busy (1 actions already waiting): try again in a few minutes."
    cancel.set()
    waiter.join(10)
    assert len(errors) == 1 and line.state() == (True, 0)  # its place is free again
    release.set()
    runner.join(10)
    assert line.run(lambda: "next") == "next"


def test_the_line_is_shared_between_processes_and_a_killed_holder_frees_it(tmp_path: Path) -> None:
    """Two kernels of one server are two processes: the lock must hold across them, and die with its holder."""
    program = ("import sys, time\nfrom gpuwork.ui.queue import ActionQueue\n"
               f"line = ActionQueue({str(tmp_path)!r})\n"
               "with line.turn():\n    print('holding', flush=True)\n    time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        line = ActionQueue(tmp_path, poll_s=0.02)
        assert line.state() == (True, 0)
        said: list[int] = []
        got = threading.Event()
        t = threading.Thread(target=lambda: line.run(got.set, on_wait=said.append))
        t.start()
        while not said:
            time.sleep(0.01)
        assert said == [1] and not got.is_set()
        holder.kill()  # a culled kernel
        holder.wait(10)
        t.join(10)
        assert got.is_set()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(10)


def test_each_server_has_its_own_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUWORK_APP_QUEUE", raising=False)
    assert ui_queue.server_line_name() == f"server-{os.getppid()}"
    monkeypatch.setenv("GPUWORK_APP_QUEUE", "demo-1")
    assert ui_queue.server_line_name() == "line-demo-1"
    monkeypatch.setenv("GPUWORK_APP_QUEUE", "../../etc")  # a name, never a path
    assert ui_queue.server_line_name() == f"server-{os.getppid()}"
