"""Hostile inputs to ``gpuwork report`` (issue 21): --timeout and --steps at both ends, --out through dangling
links, loops, files and links that lead out of the chosen folder. Each is refused before any notebook runs."""

from __future__ import annotations

import os

import pytest

from .helpers import BAD_WORDS, one_error


@pytest.mark.parametrize("timeout", ["1e308", "1e-300", "0", "-5", "nan", "inf", "604801"])
def test_a_timeout_beyond_a_second_to_a_week_is_one_line(cli, tmp_path, timeout) -> None:
    rc, _, err = cli("report", "--out", str(tmp_path / "r"), "--timeout", timeout)
    one_error(rc, err, "--timeout")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("steps", ["0", "1e9", "1" + "0" * 30])
def test_steps_beyond_their_range_are_one_line(cli, tmp_path, steps) -> None:
    rc, _, err = cli("report", "--out", str(tmp_path / "r"), "--steps", steps)
    one_error(rc, err, "--steps")


def test_out_through_a_dangling_link_creates_nothing_where_it_points(cli, tmp_path) -> None:
    target = tmp_path / "elsewhere" / "report"
    link = tmp_path / "out"
    os.symlink(target, link)
    rc, _, err = cli("report", "--out", str(link), "--notebooks", "01_sizing")
    one_error(rc, err, "does not exist", str(target))
    assert not (tmp_path / "elsewhere").exists()
    rc, _, err = cli("report", "--out", str(link / "sub"), "--notebooks", "01_sizing")
    one_error(rc, err, "does not exist")
    assert not (tmp_path / "elsewhere").exists()


def test_a_link_inside_the_folder_that_leads_out_is_refused(cli, tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.html"
    victim.write_text("keep me")
    os.symlink(victim, out / "index.html")
    rc, _, err = cli("report", "--out", str(out), "--notebooks", "01_sizing")
    one_error(rc, err, "index.html", "outside the output folder")
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("kind", ["fifo", "loop", "zero"])
def test_out_that_is_not_a_folder_is_named(cli, bad, kind) -> None:
    rc, _, err = cli("report", "--out", str(bad[kind]))
    one_error(rc, err, {"fifo": "not a folder", "loop": "loop", "zero": "not a folder"}[kind])


def test_out_that_is_a_file_or_empty_is_one_line(cli, tmp_path) -> None:
    path = tmp_path / "file"
    path.write_text("x")
    rc, _, err = cli("report", "--out", str(path))
    one_error(rc, err, "not a folder")
    rc, _, err = cli("report", "--out", "")
    one_error(rc, err, "empty")


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop", "dangling", "folder", "huge", "deep", "bigint"])
def test_a_bad_plan_file_is_named(cli, bad, kind, tmp_path) -> None:
    rc, _, err = cli("report", "--plan", str(bad[kind]), "--out", str(tmp_path / "r"))
    one_error(rc, err, BAD_WORDS[kind])


@pytest.mark.parametrize("names", ["nope", "../../etc/passwd", ""])
def test_notebooks_are_names_from_the_list(cli, tmp_path, names) -> None:
    rc, _, err = cli("report", "--out", str(tmp_path / "r"), "--notebooks", names)
    one_error(rc, err, "--notebooks")
