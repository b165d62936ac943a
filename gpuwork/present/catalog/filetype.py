"""Catalog entries "filetype.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "filetype"

ENTRIES: dict[str, tuple[str, str]] = {
    # what a path turned out to be (error.read.not_regular)
    "filetype.fifo": ("a named pipe (FIFO)", "именованный канал (FIFO)"),
    "filetype.char_device": ("a character device", "символьное устройство"),
    "filetype.block_device": ("a block device (a disk)", "блочное устройство (диск)"),
    "filetype.socket": ("a socket", "сокет"),
    "filetype.special": ("a special file", "специальный файл"),
}
