"""Fixtures of the hostile-input regression tests (issue 21): each test file holds one verb's cases;
``scripts/hostile_probe.py`` is the full probe."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .helpers import run_cli


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):
    return lambda *argv: run_cli(capsys, *argv)


@pytest.fixture(scope="session")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Files no reader should take: a FIFO, a link to /dev/zero, a folder, a link loop, a dangling link, a 100 MB
    (sparse) file, 100,000-deep JSON, a 5,000-digit integer, a YAML billion laughs, binary junk."""
    root = tmp_path_factory.mktemp("bad")
    files = {"fifo": root / "fifo", "zero": root / "zero", "folder": root / "folder", "loop": root / "loop_a",
             "dangling": root / "dangling", "huge": root / "huge.json"}
    os.mkfifo(files["fifo"])
    os.symlink("/dev/zero", files["zero"])
    files["folder"].mkdir()
    os.symlink(root / "loop_b", files["loop"])
    os.symlink(root / "loop_a", root / "loop_b")
    os.symlink(root / "no" / "target", files["dangling"])
    with open(files["huge"], "wb") as out:
        out.truncate(100 * 10**6)
    files["deep"] = root / "deep.json"
    files["deep"].write_text("[" * 100_000 + "]" * 100_000)
    files["bigint"] = root / "bigint.json"
    files["bigint"].write_text('{"seq_len": ' + "9" * 5000 + "}")
    laughs = ["a: &a [" + ",".join(["lol"] * 9) + "]"]
    laughs += [f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]" for i in range(1, 10)]
    files["laughs"] = root / "laughs.yaml"
    files["laughs"].write_text("\n".join(laughs) + "\n")
    files["junk"] = root / "junk.bin"
    files["junk"].write_bytes(bytes(range(256)) * 16)
    return files

