"""Files a trial leaves: run ids that never collide, atomic writes, and a clear message when a write fails.

A record's steps file grows by one line a step (``open_append`` / ``append_bytes``: one ``write`` call on a
descriptor opened with ``O_APPEND``, so a killed trial keeps every finished step). Every other file a trial
writes (the record JSON, each checkpoint file) goes through ``write_file``: the bytes
go to a temporary name in the same folder, are flushed to the disk (``fsync``) and then renamed over the
target with ``os.replace``, so a reader sees the old file or the new one, never a truncated one. A
checkpoint is written whole into a hidden temporary folder and then moved into place
(``replace_folder``), so a signal or a crash mid-write never leaves a half-written checkpoint under its
real name.

``write_file`` is also the one seam for faults of the disk: tests replace it to raise ``ENOSPC`` (disk
full). An ``OSError`` from a write becomes a ``RecordWriteError`` whose message names the folder and
the fix (free space, choose another ``--out``, make it writable).

Run ids: ``new_run_id`` gives ``trial-<model>-<method>-<UTC time>-<8 hex digits of uuid4>``; two
trials started in the same second into one folder differ by the random part (32 bits), and
``reserve_run_id`` also checks the folder, so an existing record is never taken.

Limitations: ``fsync`` of the folder after a rename is done where the platform allows it (Linux);
after a power loss a file system without ordered metadata may still lose the newest rename.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import shutil
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from gpuwork.measure.errors import TrialError
from gpuwork.message import msg

TEMP_MARK = ".tmp-"  # temporary files and folders: ".<name>.tmp-<hex>" next to their target
DISK_FULL_ERRNOS = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG)
READ_ONLY_ERRNOS = (errno.EACCES, errno.EPERM, errno.EROFS)


class RecordWriteError(TrialError):
    """A trial's file could not be written (disk full, read-only folder, ...); names the folder and the fix."""

    def __init__(self, message: Any, folder: Path):
        super().__init__(message)
        self.folder = folder


def write_error(exc: OSError, path: Path) -> RecordWriteError:
    """The message for a failed write of ``path``: disk full, not writable, or the system's own words."""
    folder = path.parent
    if exc.errno in DISK_FULL_ERRNOS:
        code = "error.trial.disk_full"
    elif exc.errno in READ_ONLY_ERRNOS:
        code = "error.trial.out_read_only"
    else:
        code = "error.trial.write_failed"
    return RecordWriteError(msg(code, folder=str(folder), file=path.name, detail=exc.strerror or str(exc)), folder)


def folder_error(exc: OSError, folder: Path) -> RecordWriteError:
    """The message for a folder that cannot be created or written in."""
    return write_error(exc, Path(folder) / "-")


def _temp_name(path: Path) -> Path:
    return path.parent / f".{path.name}{TEMP_MARK}{uuid.uuid4().hex[:8]}"


def write_file(path: Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Write ``path`` atomically: ``write(f)`` fills a temporary file in the same folder, then it is renamed.

    The seam for disk faults (tests replace it). Raises RecordWriteError (the temporary file removed,
    the previous ``path`` untouched) when the folder cannot be written or the disk is full.
    """
    path = Path(path)
    temp = _temp_name(path)
    try:
        try:
            with open(temp, "xb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                temp.unlink()
            raise
    except OSError as exc:
        raise write_error(exc, path) from None
    _sync_folder(path.parent)


def write_bytes(path: Path, data: bytes) -> None:
    """``data`` to ``path``, atomically (through ``write_file``)."""
    write_file(Path(path), lambda f: f.write(data))  # looked up at call time: tests replace the seam


def write_text(path: Path, text: str) -> None:
    """UTF-8 text to ``path``, atomically."""
    write_bytes(path, text.encode("utf-8"))


def save_torch(obj: Any, path: Path) -> None:
    """``torch.save(obj)`` to ``path``, atomically; keep ``obj`` to tensors and plain values so that
    ``torch.load(weights_only=True)`` reads it back."""
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    write_bytes(path, buffer.getvalue())


def save_safetensors(tensors: dict[str, Any], path: Path, metadata: dict[str, str] | None = None) -> None:
    """Tensors as a safetensors file, atomically (shared tensors must be removed first)."""
    from safetensors.torch import save

    write_bytes(path, save(tensors, metadata=metadata))


def open_append(path: Path) -> int:
    """A new (emptied) file at ``path`` opened for appending: the descriptor ``append_bytes`` writes to."""
    path = Path(path)
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_BINARY", 0), 0o644)
    except OSError as exc:
        raise write_error(exc, path) from None


def append_bytes(fd: int, path: Path, data: bytes) -> None:
    """``data`` at the end of the file open as ``fd`` (``path``: for the message): one ``write`` call as a rule,
    straight to the operating system, so a kill of this process (SIGKILL) keeps every byte written before it.
    Not fsynced: a power loss may take the last lines (a reader drops a line cut short). The seam for disk
    faults of appended files, as ``write_file`` is for whole ones."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise write_error(exc, Path(path)) from None


def _sync_folder(folder: Path) -> None:
    """Flush a folder's entries (a rename) to the disk where the platform allows it."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def temp_folder(target: Path) -> Path:
    """A new hidden folder next to ``target`` to fill before ``replace_folder`` moves it into place."""
    folder = _temp_name(target)
    try:
        folder.mkdir(parents=False)
    except OSError as exc:
        raise write_error(exc, target) from None
    return folder


def replace_folder(filled: Path, target: Path) -> None:
    """Move a filled temporary folder to ``target``, replacing an older one there.

    ``target`` is renamed aside (``.<name>.old-<hex>``) first and removed after the new one is in place;
    a crash between the two renames leaves the older folder under that name (``previous_folder`` finds it).
    """
    aside = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
    try:
        if target.exists():
            os.replace(target, aside)
        os.replace(filled, target)
    except OSError as exc:
        raise write_error(exc, target) from None
    _sync_folder(target.parent)
    shutil.rmtree(aside, ignore_errors=True)


def previous_folder(target: Path) -> Path | None:
    """``target`` if it exists, else the newest older copy ``replace_folder`` left aside in a crash."""
    if target.is_dir():
        return target
    olds = sorted(target.parent.glob(f".{target.name}.old-*"), key=lambda p: p.stat().st_mtime)
    return olds[-1] if olds else None


def remove_leftovers(folder: Path, name: str) -> list[Path]:
    """Remove temporary files and folders a killed trial left next to ``folder/name*``; returns what went."""
    removed = []
    for path in folder.glob(f".{name}*"):
        if TEMP_MARK in path.name or path.name.endswith("-tmp"):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    path.unlink()
            removed.append(path)
    return removed


# -- run ids ------------------------------------------------------------------------------------------------


def slug(name: str) -> str:
    """A model reference as a safe part of a file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).stem if name.endswith(".json") else name).strip("_") or "model"


def run_stem(model: str, method: str, created: datetime) -> str:
    """``trial-<model>-<method>-<UTC time>``: how every record file's name begins."""
    return f"trial-{slug(model)}-{method}-{created.strftime('%Y%m%dT%H%M%SZ')}"


def new_run_id(model: str, method: str, created: datetime) -> str:
    """``trial-<model>-<method>-<UTC time>-<random>``: unique even for trials started in the same second.

    48 random bits: 5,000 ids in one second collide with odds of about 4e-8 (32 bits gave 3e-3, seen in CI);
    ``reserve_run_id`` still checks the folder, so a collision there can never overwrite a record.
    """
    return f"{run_stem(model, method, created)}-{uuid.uuid4().hex[:12]}"


def reserve_run_id(folder: Path, model: str, method: str, created: datetime) -> str:
    """A run id whose record and checkpoint names are free in ``folder`` (a new random part until they are)."""
    while True:
        run_id = new_run_id(model, method, created)
        if not any(folder.glob(f"{run_id}*")) and not any(folder.glob(f".{run_id}*")):
            return run_id


__all__ = [
    "RecordWriteError",
    "append_bytes",
    "folder_error",
    "new_run_id",
    "open_append",
    "previous_folder",
    "remove_leftovers",
    "replace_folder",
    "reserve_run_id",
    "run_stem",
    "save_safetensors",
    "save_torch",
    "slug",
    "temp_folder",
    "write_bytes",
    "write_error",
    "write_file",
    "write_text",
]
