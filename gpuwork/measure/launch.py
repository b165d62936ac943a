"""The launcher's side of a torchrun trial: its work folder, the signals it passes on, torchrun's output read.

``gpuwork.measure.distributed.run_distributed`` starts torchrun with ``launch``, which streams rank 0's steps
(lines that start with STEP_PREFIX) to the callbacks and keeps the ranks' coded errors (ERROR_PREFIX) and the last
lines of output. The work folder a run makes in out_dir is claimed with its owner's pid and start time, so that a
later run removes only the folders of runs that are gone (``remove_stale_work``).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuwork.measure import records
from gpuwork.measure.record import StepMeasurement
from gpuwork.measure.records import RecordWriteError

STEP_PREFIX = "gpuwork-step "  # rank 0 prints each step as this prefix + JSON on stdout
ERROR_PREFIX = "gpuwork-error "  # a rank prints a user-facing error as this prefix + its message's JSON on stderr
STDERR_TAIL_LINES = 40
WORK_PREFIX = ".gpuwork-torchrun-"  # the work folder in out_dir: spec, stop file, ranks' results
OWNER_FILE = "owner.json"  # who made a work folder: its pid and that process's start time


def _process_started(pid: int) -> float | None:
    """The start time of process ``pid`` (seconds since the epoch), or None when there is none."""
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
        return None


def claim(work: Path) -> None:
    """Mark ``work`` as this process's: a later run in the same out_dir leaves it alone while this process lives."""
    with contextlib.suppress(OSError, RecordWriteError):
        records.write_text(work / OWNER_FILE, json.dumps({"pid": os.getpid(), "started": _process_started(os.getpid())}))


def remove_stale_work(out_dir: Path) -> list[Path]:
    """Remove the work folders that killed runs (SIGKILL, power loss) left in ``out_dir``: those whose owner
    process is gone, or is another process under the same pid. A folder of a live run, or one without an owner
    file (not made by this version), stays. Returns what was removed."""
    removed = []
    for folder in sorted(out_dir.glob(f"{WORK_PREFIX}*")):
        try:
            owner = json.loads((folder / OWNER_FILE).read_text())
            pid, started = int(owner["pid"]), owner.get("started")
        except (OSError, ValueError, KeyError, TypeError):
            continue
        now = _process_started(pid)
        if now is not None and (started is None or abs(now - float(started)) < 1.0):
            continue  # its run is still going
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed



def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _forward_stop(stop_file: Path) -> dict[int, Any]:
    """Install the handlers of ``_launch`` (main thread only); return the handlers they replace."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    asked: list[str] = []

    def handle(signum: int, frame: Any) -> None:
        if asked:  # asked twice: stop now
            raise KeyboardInterrupt
        asked.append(signal.Signals(signum).name)
        with contextlib.suppress(OSError):
            records.write_text(stop_file, asked[0])

    return {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}


def launch(command: list[str], env: dict[str, str], callbacks: list[Callable[[StepMeasurement], Any]],
            timeout_s: float | None, stop_file: Path | None = None) -> tuple[int | None, list[str]]:
    """Run torchrun; stream rank 0's steps to the callbacks; return (exit status or None on timeout,
    the last lines of stderr and non-step stdout).

    While it runs, SIGINT / SIGTERM to this process (main thread only) write the signal's name to
    ``stop_file``, which every rank reads at each step (torchrun runs in its own session and does not see
    a terminal's Ctrl+C); a second signal raises KeyboardInterrupt here, which stops torchrun."""
    tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
    lock = threading.Lock()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)  # its own process group: a timeout stops it whole

    errors: list[str] = []  # a rank's user-facing errors are kept whatever follows them

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with lock:
                if line.startswith(ERROR_PREFIX):
                    errors.append(line.rstrip("\n"))
                tail.append(line.rstrip("\n"))

    reader = threading.Thread(target=read_stderr, name="gpuwork-torchrun-stderr", daemon=True)
    reader.start()
    previous = _forward_stop(stop_file) if stop_file is not None else {}
    timer = None
    timed_out = threading.Event()
    if timeout_s is not None:
        def stop() -> None:
            timed_out.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 15)

        timer = threading.Timer(timeout_s, stop)
        timer.daemon = True
        timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(STEP_PREFIX):
                m = StepMeasurement(**json.loads(line[len(STEP_PREFIX):]))
                for callback in callbacks:
                    callback(m)
            elif line.strip():
                with lock:
                    tail.append(line.rstrip("\n"))
        rc = proc.wait()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        raise
    finally:
        if timer is not None:
            timer.cancel()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    reader.join(timeout=5)
    with lock:
        lines = errors + list(tail)
    return (None if timed_out.is_set() else rc), lines


__all__ = ["ERROR_PREFIX", "OWNER_FILE", "STEP_PREFIX", "WORK_PREFIX", "claim", "free_port", "launch",
           "remove_stale_work"]
