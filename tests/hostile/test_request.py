"""Hostile inputs to ``gpuwork request`` (issue 21): start dates in the past or far future, money and days."""

from __future__ import annotations

import datetime as dt

import pytest

from .helpers import BAD_WORDS, one_error


def _day(days: int) -> str:
    return (dt.date.today() + dt.timedelta(days=days)).isoformat()


@pytest.mark.parametrize("days", [0, 30, 700])
def test_a_start_from_today_to_two_years_ahead_is_taken(cli, days) -> None:
    rc, out, err = cli("request", "--start-date", _day(days), "--format", "json")
    assert rc == 0, err
    assert _day(days) in out


@pytest.mark.parametrize("value", [_day(-1), "2000-01-01", "0001-01-01", "9999-12-31", _day(3 * 366)])
def test_a_start_in_the_past_or_far_future_is_one_line(cli, value) -> None:
    rc, _, err = cli("request", "--start-date", value)
    one_error(rc, err, "--start-date", "today")


@pytest.mark.parametrize("value", ["2026-02-30", "20261203", "2026-1-1", "tomorrow", "", "\x1b[31m2026-01-01"])
def test_a_start_that_is_not_a_date_is_one_line(cli, value) -> None:
    rc, _, err = cli("request", "--start-date", value)
    line = one_error(rc, err, "YYYY-MM-DD")
    assert "\x1b" not in line


@pytest.mark.parametrize(("flag", "value"), [("--budget", "1e-300"), ("--budget", "1e308"),
                                             ("--rent-days", "0"), ("--rent-days", "1" + "0" * 30)])
def test_money_and_days_beyond_either_end_are_one_line(cli, flag, value) -> None:
    rc, _, err = cli("request", flag, value)
    one_error(rc, err, flag)


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop", "dangling", "folder", "huge", "deep", "bigint"])
def test_a_bad_record_file_is_named(cli, bad, kind) -> None:
    rc, _, err = cli("request", "--record", str(bad[kind]))
    one_error(rc, err, BAD_WORDS[kind])
