"""Library notices that are not the user's business: held in memory instead of printed.

bitsandbytes warns at import on a CPU with AVX-512 BF16 that an optional kernel package is missing; the warning
goes through Python's last-resort handler to stderr on every CLI run, trial and callback, whatever the user asked
for. ``hold_library_notices`` (called once, when ``gpuwork.measure`` is imported, before any of these libraries
is) keeps their notices below ERROR in ``held_notices()``; errors still reach stderr.
"""

from __future__ import annotations

import logging

NOTICE_LOGGERS = ("bitsandbytes",)
_MAX_HELD = 200  # a runaway library cannot grow this without bound


class _Hold(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.held: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR:
            root = logging.getLogger()
            (root if root.handlers else logging.lastResort or root).handle(record)
            return
        if len(self.held) < _MAX_HELD:
            self.held.append(f"{record.name}: {record.getMessage()}")


_HANDLER = _Hold()


def hold_library_notices() -> None:
    """Route the notice loggers to the holding handler (idempotent)."""
    for name in NOTICE_LOGGERS:
        logger = logging.getLogger(name)
        if _HANDLER not in logger.handlers:
            logger.addHandler(_HANDLER)
        logger.propagate = False


def held_notices() -> list[str]:
    """The notices held so far, oldest first."""
    return list(_HANDLER.held)


__all__ = ["NOTICE_LOGGERS", "held_notices", "hold_library_notices"]
