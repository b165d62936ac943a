"""Hostile inputs to ``gpuwork app`` (issue 21): ports and counts are refused while parsing, before a server starts."""

from __future__ import annotations

import pytest

from .helpers import one_error


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("flag", "value"), [("--port", "0"), ("--port", "70000"), ("--port", "-1"),
                                             ("--port", "x"), ("--pool", "-3"), ("--pool", "1" + "0" * 30),
                                             ("--max-pages", "0"), ("--max-pages", "1e308")])
def test_a_port_or_count_out_of_range_is_one_line(cli, flag, value) -> None:
    rc, _, err = cli("app", flag, value)
    one_error(rc, err, flag)


def test_help_in_both_languages(cli) -> None:
    for lang in ("en", "ru"):
        rc, out, _ = cli("app", "--help", "--lang", lang) if lang == "ru" else cli("app", "--help")
        assert rc == 0 and "--port" in out
