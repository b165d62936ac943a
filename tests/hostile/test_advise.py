"""Hostile inputs to ``gpuwork advise`` and ``gpuwork fit`` (issue 21): owned cards, limits, GPUs, configs."""

from __future__ import annotations

import pytest

from .helpers import LLAMA, model_folder, one_error


@pytest.mark.parametrize("have", ["100000xH100", "0xH100", "1e308xH100", "2x\x1b[2JH100"])
def test_advise_refuses_impossible_owned_cards(cli, have) -> None:
    rc, _, err = cli("advise", "--have", have)
    line = one_error(rc, err, "--have")
    assert "\x1b" not in line


@pytest.mark.parametrize(("flag", "value"), [("--limit", "0"), ("--limit", "1" + "0" * 30), ("--mfu", "1e-300"),
                                             ("--epochs", "1e308")])
def test_advise_numbers_beyond_either_end_are_one_line(cli, flag, value) -> None:
    rc, _, err = cli("advise", flag, value)
    one_error(rc, err)


def test_fit_names_an_unknown_gpu_with_escape_bytes_escaped(cli) -> None:
    rc, out, err = cli("fit", "--gpu", "\x1b[2Jh100")
    line = one_error(rc, err, "\\x1b[2J")
    assert "\x1b" not in line + out


@pytest.mark.parametrize("architectures", [7, {"a": 1}, [1, 2]])
def test_fit_on_a_config_with_bad_architectures_is_one_line(cli, tmp_path, architectures) -> None:
    folder = model_folder(tmp_path, "m", {**LLAMA, "architectures": architectures})
    rc, _, err = cli("fit", "--model", str(folder))
    one_error(rc, err, "architectures")
