"""Hostile inputs to ``gpuwork accuracy --out`` (issue 21): the file is checked before the report is computed."""

from __future__ import annotations

import pytest

from .helpers import one_error


@pytest.mark.parametrize(("kind", "words"), [("folder", "is a folder"), ("fifo", "FIFO"),
                                             ("zero", "character device"), ("dangling", "does not exist"),
                                             ("loop", "loop")])
def test_out_that_is_not_a_file_to_write_is_named(cli, bad, kind, words) -> None:
    rc, _, err = cli("accuracy", "--out", str(bad[kind]))
    one_error(rc, err, words)


def test_out_in_a_missing_folder_is_one_line(cli, tmp_path) -> None:
    rc, _, err = cli("accuracy", "--out", str(tmp_path / "no" / "x.md"))
    one_error(rc, err, "does not exist", str(tmp_path / "no"))
