"""Catalog entries (code -> (English, Russian)) for the measured trial, the trace, calibration, extrapolation and their CLI verbs.

Part of the one catalog: ``gpuwork.present.messages`` merges these entries and renders them; the placeholder
kinds are documented there.
"""

from __future__ import annotations

ENTRIES: dict[str, tuple[str, str]] = {
}
