"""Units and their display, both languages."""

from __future__ import annotations

import math

import pytest

from gpuwork import units
from gpuwork.units import GIB, HOUR_S, MIB


def test_russian_groups_digits_with_spaces_and_uses_a_decimal_comma() -> None:
    assert units.fmt_int(8294, "ru") == "8 294" and units.fmt_int(8294, "en") == "8,294"
    assert units.fmt_gib(1.5 * GIB, "ru") == "1,5 ГиБ" and units.fmt_gib(1.5 * GIB) == "1.5 GiB"
    assert units.fmt_usd(1250, "ru") == "1 250 USD" and units.fmt_usd(1250) == "$1,250"
    assert units.fmt_usd(2.5) == "$2.50"


def test_sizes_are_decimal_and_memory_is_binary() -> None:
    assert units.fmt_size(200e9) == "200.0 GB" and units.fmt_size(1.5e12, "ru") == "1,50 ТБ"
    assert units.fmt_memory(512 * MIB) == "512.0 MiB" and units.fmt_memory(3 * GIB) == "3.00 GiB"


def test_durations_switch_units_at_an_hour_and_add_days_past_three() -> None:
    assert units.fmt_duration(30 * 60) == "30 min"
    assert units.fmt_duration(2.5 * HOUR_S, "ru") == "2,5 ч"
    assert units.fmt_duration(100 * HOUR_S) == "100 h (4 days)"
    assert units.fmt_seconds(0.2153) == "0.215 s" and units.fmt_seconds(90) == "1.5 min"


def test_missing_and_infinite_values_are_shown_as_such() -> None:
    assert units.fmt_duration(None) == units.MISSING and units.fmt_usd(math.inf) == units.INFINITE
    assert units.fmt_gib(None, "ru") == units.MISSING


@pytest.mark.parametrize(("n", "word"), [(1, "день"), (2, "дня"), (5, "дней"), (11, "дней"), (21, "день"),
                                         (112, "дней"), (104, "дня")])
def test_russian_plurals(n: int, word: str) -> None:
    assert units.plural_ru(n, "день", "дня", "дней") == word


def test_an_unknown_language_is_refused() -> None:
    with pytest.raises(ValueError, match="lang='de'"):
        units.fmt_gib(GIB, "de")


@pytest.mark.parametrize(("seconds", "lang", "text"), [
    (None, "en", "–"), (float("inf"), "en", "∞"), (1800, "en", "30 min"), (5 * 3600, "en", "5.0 h"),
    (50 * 3600, "en", "50 h"), (100 * 3600, "en", "100 h (4 days)"), (100 * 3600, "ru", "100 ч (4 дн.)"),
])
def test_durations_shown_in_tables(seconds: float | None, lang: str, text: str) -> None:
    assert units.fmt_duration(seconds, lang) == text


def test_sizes_in_tables_use_decimal_units() -> None:
    assert units.fmt_size(2.5e9) == "2.5 GB" and units.fmt_size(1.5e12) == "1.50 TB"


# -- the one range mechanism (plans, flags, records) ---------------------------------------------------------------


def test_a_range_says_what_is_wrong_with_a_number() -> None:
    from gpuwork.units import ABOVE, BELOW, NOT_FINITE, NOT_NUMBER, NOT_WHOLE, Range

    closed = Range(1, 10)
    assert [closed.problem(v) for v in (1, 10, 5.5, 0.999, 10.001, -1e308, 1e308)] == [
        None, None, None, BELOW, ABOVE, BELOW, ABOVE]
    assert [closed.problem(v) for v in (True, "5", None, [5])] == [NOT_NUMBER] * 4  # a bool is not a number
    assert [closed.problem(v) for v in (math.nan, math.inf, -math.inf)] == [NOT_FINITE] * 3
    half_open = Range(0, 1, low_open=True, high_open=True)
    assert [half_open.problem(v) for v in (0, 1e-300, 0.5, 1, 1 - 1e-16)] == [BELOW, None, None, ABOVE, None]
    whole = Range(0, 2 ** 53, whole=True)
    assert [whole.problem(v) for v in (0, 2 ** 53, 2 ** 53 + 1, 3.0, 10 ** 5000)] == [
        None, None, ABOVE, NOT_WHOLE, ABOVE]  # a 5,000-digit integer compares without overflow
    loss = Range(-1e12, 1e12, nonfinite=True)
    assert [loss.problem(v) for v in (math.nan, math.inf, -math.inf, 2e12)] == [None, None, None, ABOVE]
    rate = Range(0.0, 1e12, infinite=True)
    assert [rate.problem(v) for v in (math.inf, -math.inf, math.nan)] == [None, NOT_FINITE, NOT_FINITE]


def test_plans_flags_and_records_share_the_one_range(capsys) -> None:
    """The plan's epochs range is the --epochs flag's: the same ends refused by both, each in its own words; the
    record's ranges and the flags' are the same kind of object, so a change of mechanism reaches all three."""
    from gpuwork.cli import main
    from gpuwork.cli.args import FLAG_BOUNDS
    from gpuwork.errors import PlanError
    from gpuwork.measure.record import _FIELD_RANGES
    from gpuwork.plan import PLAN_RANGES, TrainPlan
    from gpuwork.units import Range

    assert all(isinstance(r, Range) for r in [*FLAG_BOUNDS.values(), *_FIELD_RANGES.values(), *PLAN_RANGES.values()])
    epochs = PLAN_RANGES["epochs"]
    assert FLAG_BOUNDS["--epochs"] is epochs and FLAG_BOUNDS["--dataset-tokens"].high == PLAN_RANGES[
        "dataset_tokens"].high
    for outside in (epochs.low / 2, epochs.high * 2):
        with pytest.raises(PlanError) as plan_says:
            TrainPlan(epochs=outside)
        assert plan_says.value.field == "epochs"
        with pytest.raises(SystemExit) as flag_says:  # argparse's exit: the usage status
            main(["plan", "--model", "tiny-llama", "--epochs", repr(outside)])
        assert flag_says.value.code == 2
        err = capsys.readouterr().err
        assert "--epochs" in err and "out of range" in err and len(err.strip().splitlines()) == 1
    for inside in (epochs.low, epochs.high):
        assert TrainPlan(epochs=inside).epochs == inside


@pytest.mark.parametrize(("value", "minimum", "whole"), [
    (1, 1, True), (0, 0, True), (0, 1, False), (-1, 0, False), (7, 7, True), (6, 7, False),
    (True, 1, False), (False, 0, False),  # JSON's true is not one step
    (1.0, 1, False), ("3", 1, False), (None, 0, False),
])
def test_a_whole_number_is_an_int_of_at_least_the_minimum_and_never_a_bool(value, minimum, whole):
    assert units.is_whole(value, minimum) is whole
