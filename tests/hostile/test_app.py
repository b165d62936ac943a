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


@pytest.mark.timeout(60)
@pytest.mark.parametrize("value", ["", " ", "a b", "host\x1b[31m", "h" * 300])
def test_a_blank_or_malformed_host_is_one_line(cli, value) -> None:
    """An empty --host made Voila listen on every interface; now it is refused before a server starts."""
    rc, _, err = cli("app", "--host", value)
    one_error(rc, err, "--host")
    assert "127.0.0.1" in err and "0.0.0.0" in err


def test_a_host_beyond_this_machine_gets_the_note_in_the_help_language() -> None:
    """The note about a public address comes from the catalog (it was English only), before Voila starts."""
    import argparse

    from gpuwork.cli.app import register
    from gpuwork.present.messages import text

    for lang in ("en", "ru"):
        parser = argparse.ArgumentParser()
        register(parser.add_subparsers(), lang)
        args = parser.parse_args(["app", "--host", "0.0.0.0"])
        assert args.host == "0.0.0.0" and args.help_lang == lang
    assert "0.0.0.0" in text("cli.app.public_host", "ru", host="0.0.0.0")
    assert "обратный прокси" in text("cli.app.public_host", "ru", host="0.0.0.0")


def test_help_in_both_languages(cli) -> None:
    for lang in ("en", "ru"):
        rc, out, _ = cli("app", "--help", "--lang", lang) if lang == "ru" else cli("app", "--help")
        assert rc == 0 and "--port" in out
