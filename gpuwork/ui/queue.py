"""One bounded waiting line per app server for the expensive actions ("Verify exactly", the demo trial, ramp).

Each Voila page runs in its own kernel (a process), so the line is shared through files: a ``run.lock``
held by the action that runs, and ``PLACES`` ticket files ``wait-<i>.lock`` held by the actions waiting
(``fcntl.flock``: a lock dies with its process, so a culled kernel never blocks the line). A ticket carries
its arrival time: the earliest waiter runs next, and each waiter knows how many are ahead of it. When every
place is taken a new action is refused at once (``QueueFull``) rather than piling up.

The files live in a private folder (``private_dir``: mode 0700, owned by this user, under
``$XDG_RUNTIME_DIR`` or the user's cache), one line per server process (a kernel's parent), never in a
world-writable temporary folder where another account could hold the lock.

Example:
    >>> line = ActionQueue()
    >>> line.run(lambda: 6 * 7, on_wait=lambda ahead: print(f"waiting ({ahead} ahead)"))
    42

Limitations: first come, first served between pages, but with a 0.25 s poll: the order among actions that
arrive within one poll is by arrival time, not by click.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from gpuwork.errors import GpuworkError
from gpuwork.message import msg

T = TypeVar("T")

PLACES = 6  # actions that may wait behind the running one; more are refused (a 2-core machine runs one at a time)
POLL_S = 0.25  # how often a waiter looks at the line
RUN_LOCK = "run.lock"
_QUEUE_ENV = "GPUWORK_APP_QUEUE"  # a line name shared by processes that are not children of one server


class QueueFull(GpuworkError):
    """Every waiting place is taken: try again later."""


class QueueCancelled(GpuworkError):
    """The action was cancelled (Stop) while it waited for its turn."""


def _check_private(folder: Path) -> Path:
    """``folder`` when it is a real directory of this user that no one else can write; else OSError."""
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(errno.EPERM, "not a directory owned by this user", str(folder))
    if info.st_mode & 0o077:
        os.chmod(folder, 0o700)  # ours: close it to the group and others
    return folder


def private_dir() -> Path:
    """This user's private state folder for the app (created with mode 0700).

    ``$XDG_RUNTIME_DIR/gpuwork`` when XDG_RUNTIME_DIR is a directory of this user closed to others (as
    systemd creates it), else ``$XDG_CACHE_HOME/gpuwork/run`` (default ``~/.cache/gpuwork/run``).
    Raises GpuworkError when neither can be made private.
    """
    candidates: list[tuple[Path | None, Path]] = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        candidates.append((Path(runtime), Path(runtime) / "gpuwork"))
    cache = os.environ.get("XDG_CACHE_HOME")
    cache_root = Path(cache) if cache and os.path.isabs(cache) else Path.home() / ".cache"
    candidates.append((None, cache_root / "gpuwork" / "run"))
    for parent, folder in candidates:
        try:
            if parent is not None:  # the runtime dir itself must be ours and closed to others
                info = os.stat(parent)
                if info.st_uid != os.getuid() or info.st_mode & 0o077:
                    continue
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            return _check_private(folder)
        except OSError:
            continue
    raise GpuworkError(msg("error.app.no_private_dir", folder=str(candidates[-1][1])))


def server_line_name() -> str:
    """The line this process joins: ``$GPUWORK_APP_QUEUE``, else one per server (the kernel's parent process)."""
    name = os.environ.get(_QUEUE_ENV, "")
    if name and name.replace("-", "").replace("_", "").isalnum():
        return f"line-{name}"
    return f"server-{os.getppid()}"


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def _try_lock(fd: int, kind: int = fcntl.LOCK_EX) -> bool:
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class ActionQueue:
    """The waiting line of one server: ``run(action)`` waits for its turn, runs, and lets the next one go.

    Args:
        folder: where the lock files live (default: ``private_dir() / server_line_name()``).
        places: how many actions may wait behind the running one.
        poll_s: how often a waiter looks at the line.
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None, *, places: int = PLACES, poll_s: float = POLL_S):
        if folder is None:
            folder = private_dir() / server_line_name()
        self.folder = Path(folder)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        _check_private(self.folder)
        self.places = places
        self.poll_s = poll_s

    def _ticket(self, i: int) -> Path:
        return self.folder / f"wait-{i}.lock"

    def _take_ticket(self) -> tuple[int, int]:
        for _attempt in range(3):  # a neighbour's brief look at a free ticket can make it seem taken
            for i in range(self.places):
                fd = _open(self._ticket(i))
                if _try_lock(fd):
                    return i, fd
                os.close(fd)
            time.sleep(0.01)
        raise QueueFull(msg("ui.queue_full", places=self.places))

    def _waiting_before(self, mine: int, stamp: tuple[int, ...]) -> int:
        """How many held tickets other than ``mine`` arrived before ``stamp``."""
        ahead = 0
        for i in range(self.places):
            if i == mine:
                continue
            fd = _open(self._ticket(i))
            try:
                if _try_lock(fd, fcntl.LOCK_SH):
                    fcntl.flock(fd, fcntl.LOCK_UN)  # free
                    continue
                other = _read_stamp(fd)
                if other is not None and other < stamp:
                    ahead += 1
            finally:
                os.close(fd)
        return ahead

    def state(self) -> tuple[bool, int]:
        """(an action is running, how many wait), as seen right now."""
        fd = _open(self.folder / RUN_LOCK)
        try:
            running = not _try_lock(fd, fcntl.LOCK_SH)
        finally:
            os.close(fd)  # closing drops a lock we took
        return running, self._waiting_before(-1, (2**63,))

    @contextlib.contextmanager
    def turn(self, on_wait: Callable[[int], Any] | None = None,
             cancel: threading.Event | None = None) -> Iterator[None]:
        """Hold the line's run lock for the body; ``on_wait(n)`` is told how many are ahead whenever it changes.

        Raises QueueFull at once when every place is taken, QueueCancelled when ``cancel`` is set while waiting.
        """
        index, ticket = self._take_ticket()
        run = _open(self.folder / RUN_LOCK)
        try:
            stamp = (time.time_ns(), os.getpid(), threading.get_ident())
            os.ftruncate(ticket, 0)
            os.pwrite(ticket, " ".join(map(str, stamp)).encode(), 0)
            said = None
            while True:
                ahead = self._waiting_before(index, stamp)
                if ahead == 0 and _try_lock(run):
                    break
                n = ahead + 1  # the one running
                if n != said and on_wait is not None:
                    on_wait(n)
                said = n
                if cancel is not None and cancel.wait(self.poll_s):
                    raise QueueCancelled(msg("ui.queue_cancelled"))
                if cancel is None:
                    time.sleep(self.poll_s)
        except BaseException:
            os.close(run)
            raise
        finally:
            os.close(ticket)  # our place in the line goes to the next comer
        try:
            yield
        finally:
            os.close(run)

    def run(self, action: Callable[[], T], *, on_wait: Callable[[int], Any] | None = None,
            cancel: threading.Event | None = None) -> T:
        """``action()`` in its turn (see ``turn``)."""
        with self.turn(on_wait, cancel):
            return action()


def _read_stamp(fd: int) -> tuple[int, ...] | None:
    try:
        parts = os.pread(fd, 100, 0).split()
        return tuple(int(p) for p in parts) if len(parts) == 3 else None
    except (OSError, ValueError):
        return None


_SHARED: ActionQueue | None = None
_SHARED_LOCK = threading.Lock()


def shared_queue() -> ActionQueue:
    """This process's line (created on first use): every panel of the app waits in it."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = ActionQueue()
        return _SHARED


__all__ = ["PLACES", "ActionQueue", "QueueCancelled", "QueueFull", "private_dir", "server_line_name",
           "shared_queue"]
