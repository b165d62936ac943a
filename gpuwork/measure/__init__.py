"""Real runs: trace, trial, records, calibration, accuracy. Library notices are held from here on (see notices)."""

from gpuwork.measure.notices import hold_library_notices

hold_library_notices()
