"""Hostile inputs to ``gpuwork plan`` (issue 21): --mfu, the data and time flags at both ends, --have."""

from __future__ import annotations

import pytest

from .helpers import BAD_WORDS, one_error


@pytest.mark.parametrize("mfu", ["0.05", "0.4", "1"])
def test_a_given_mfu_gives_a_report(cli, mfu) -> None:
    rc, out, err = cli("plan", "--mfu", mfu)
    assert rc == 0, err
    assert "internal error" not in err and "MFU" in out


@pytest.mark.parametrize("mfu", ["0", "-1", "1.5", "1e-300", "1e308", "nan", "inf", "x"])
def test_an_mfu_outside_0_001_to_1_is_one_line(cli, mfu) -> None:
    rc, _, err = cli("plan", "--mfu", mfu)
    one_error(rc, err, "--mfu")


@pytest.mark.parametrize(("flag", "value"), [
    ("--epochs", "1e-300"), ("--epochs", "1e308"), ("--compression-ratio", "1e-300"), ("--compression-ratio", "0.5"),
    ("--compression-ratio", "1e308"), ("--loader-tokens-per-s", "1e-300"), ("--loader-tokens-per-s", "1e308"),
    ("--disk-write-gbs", "1e-300"), ("--disk-write-gbs", "1e308"), ("--offers", "1" + "0" * 30),
    ("--dataset-tokens", "1e-300"), ("--dataset-bytes", "1e308"), ("--eval-fraction", "1"),
    ("--checkpoint-every", "0"), ("--checkpoints-kept", "1" + "0" * 30)])
def test_a_number_beyond_either_end_is_one_line_naming_the_flag(cli, flag, value) -> None:
    rc, _, err = cli("plan", flag, value)
    one_error(rc, err, flag if flag not in ("--epochs", "--eval-fraction", "--checkpoint-every",
                                            "--checkpoints-kept") else "")


def test_a_range_error_names_both_ends(cli) -> None:
    rc, _, err = cli("plan", "--loader-tokens-per-s", "1e308")
    one_error(rc, err, "from 1 to 1,000,000,000,000")


@pytest.mark.parametrize("have", ["0xH100", "-1xH100", "1" + "0" * 30 + "xH100", "1e308xH100", "2xNOPE"])
def test_a_bad_have_is_one_line(cli, have) -> None:
    rc, _, err = cli("plan", "--have", have)
    one_error(rc, err, "--have")


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop", "dangling", "folder", "huge", "deep", "bigint"])
def test_a_bad_plan_file_is_named(cli, bad, kind) -> None:
    rc, _, err = cli("plan", "--plan", str(bad[kind]))
    one_error(rc, err, BAD_WORDS[kind])
