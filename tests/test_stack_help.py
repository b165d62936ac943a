"""The --stack help lists the stacks from the enum that stacks.csv must describe, in both languages."""

from __future__ import annotations

import argparse

import pytest

from gpuwork.cli.args import plan_arguments
from gpuwork.facts.rates import load_rates
from gpuwork.plan import Stack


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_stack_help_names_every_stack(lang: str) -> None:
    parser = argparse.ArgumentParser(prog="gpuwork estimate")
    plan_arguments(parser, lang)
    action = next(a for a in parser._actions if "--stack" in a.option_strings)
    listed = action.help.split(":", 1)[1].split("(")[0].replace("|", " ").split()
    assert listed == [s.value for s in Stack]
    assert set(load_rates().stacks) == set(Stack)  # and every one of them has its stacks.csv row
