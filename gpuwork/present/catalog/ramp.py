"""Catalog entries "ramp.*": code -> (English, Russian)."""

from __future__ import annotations

PREFIX = "ramp"

ENTRIES: dict[str, tuple[str, str]] = {
    # -- the ramp: what stopped the search (gpuwork.measure.trial.ramp; {x:@ramp.limit}) ------------------------
    "ramp.limit.out_of_memory": ("out of memory", "нехватка памяти"),
    "ramp.limit.max_batch_size": ("max_batch_size", "предел max_batch_size"),
    "ramp.limit.max_seq_len": ("max_seq_len", "предел max_seq_len"),
    "ramp.limit.nothing_fit": ("nothing fit", "ничего не поместилось"),
    "ramp.limit_of": ("{why:@ramp.limit}", "{why:@ramp.limit}"),
}
