"""Every file a user names is read through gpuwork.facts.reading: regular files only, a size cap per kind, JSON and
YAML parsed within bounds. Each refusal is one line naming the file and the fix (exit status 2 from the CLI, the
package's own error from Python), and none of them can hang or grow without bound: the timeout marks turn a
regression (a FIFO that blocks, /dev/zero read to the end) into a failure instead of a stuck suite."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from gpuwork.cli.args import load_record
from gpuwork.errors import CatalogError, GpuworkError, ModelError, PlanError
from gpuwork.facts import reading
from gpuwork.facts.catalog import load_offers
from gpuwork.facts.configs import read_config
from gpuwork.facts.model import load_config
from gpuwork.facts.planfile import read_plan_fields
from gpuwork.measure.errors import TrialError
from gpuwork.present.messages import render

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, /dev/zero and symlinks as on POSIX")

# 9 levels of 9 aliases each: 9**9 (387 million) values once expanded, from a file of under 1 KB
BILLION_LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))


def _gpuwork(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpuwork", *argv], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "GPUWORK_TRACEBACK": ""}, stdin=subprocess.DEVNULL)


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(("gpuwork: error: ", "gpuwork: ошибка: ")), done.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)  # no writer: a plain open() of it would wait forever
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as handle:  # 100 MB, sparse: costs no disk
        handle.truncate(100 * 10**6)
    laughs = tmp_path / "laughs.yaml"
    laughs.write_text(BILLION_LAUGHS, encoding="utf-8")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    digits = tmp_path / "digits.json"
    digits.write_text('{"seq_len": ' + "9" * 5000 + "}", encoding="utf-8")
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "gone.json")
    loop = tmp_path / "loop.json"
    loop.symlink_to(tmp_path / "loop2.json")
    (tmp_path / "loop2.json").symlink_to(loop)
    folder = tmp_path / "folder.json"
    folder.mkdir()
    return {"fifo": fifo, "zero": zero, "huge": huge, "laughs": laughs, "deep": deep, "digits": digits,
            "dangling": dangling, "loop": loop, "folder": folder, "tmp": tmp_path}


# -- the real CLI, in its own process -------------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("argv", [
    ["estimate", "--from", "{fifo}"],
    ["estimate", "--plan", "{fifo}"],
    ["offers", "--catalog", "{fifo}"],
    ["estimate", "--model", "{fifo}"],
    ["request", "--record", "{fifo}"],
], ids=lambda a: " ".join(a[:2]))
def test_a_fifo_is_refused_without_blocking(files, argv) -> None:
    done = _gpuwork(*(a.format(**files) for a in argv))
    _one_line(done, str(files["fifo"]), "named pipe (FIFO)", "not a regular file")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("flag", ["--from", "--plan", "--catalog"])
def test_dev_zero_through_a_link_is_refused(files, flag) -> None:
    verb = "offers" if flag == "--catalog" else "estimate"
    done = _gpuwork(verb, flag, str(files["zero"]))
    _one_line(done, str(files["zero"]), "character device")


@pytest.mark.timeout(120)
def test_billion_laughs_cli(files) -> None:
    done = _gpuwork("estimate", "--from", str(files["laughs"]))
    _one_line(done, str(files["laughs"]), "50,000 values", "alias")


@pytest.mark.timeout(120)
def test_a_100_mb_file_is_refused_by_its_size(files) -> None:
    done = _gpuwork("estimate", "--from", str(files["huge"]))
    _one_line(done, str(files["huge"]), "95.4 MiB", "4 MiB", "training config")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("flag", ["--plan", "--from"])
def test_deep_json_nesting_is_one_line(files, flag) -> None:
    done = _gpuwork("estimate", flag, str(files["deep"]))
    _one_line(done, str(files["deep"]), "levels deep", "64")


@pytest.mark.timeout(120)
def test_a_5000_digit_integer_is_one_line(files) -> None:
    done = _gpuwork("estimate", "--plan", str(files["digits"]))
    line = _one_line(done, str(files["digits"]), "5,000 digits", "100")
    assert "9999" not in line  # the value itself is never shown


@pytest.mark.timeout(120)
def test_links_get_their_own_messages(files) -> None:
    dangling = _one_line(_gpuwork("estimate", "--from", str(files["dangling"])), "symbolic link",
                         str(files["tmp"] / "gone.json"))
    assert "does not exist: check the path" not in dangling
    _one_line(_gpuwork("estimate", "--plan", str(files["loop"])), str(files["loop"]), "loop of symbolic links")


@pytest.mark.timeout(120)
def test_the_refusal_is_said_in_russian(files) -> None:
    _one_line(_gpuwork("estimate", "--lang", "ru", "--from", str(files["fifo"])), "именованный канал")


# -- the Python API -----------------------------------------------------------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("reader, error", [
    (read_config, PlanError), (read_plan_fields, PlanError), (load_offers, CatalogError),
    (lambda p: load_config(str(p)), ModelError), (lambda p: load_record(str(p)), TrialError),
], ids=["config", "plan", "catalog", "model", "record"])
@pytest.mark.parametrize("case, code", [
    ("fifo", "error.read.not_regular"), ("zero", "error.read.not_regular"), ("huge", "error.read.too_large"),
    ("dangling", "error.read.dangling"), ("loop", "error.read.loop"), ("folder", "error.file.is_directory"),
])
def test_every_reader_refuses_with_its_own_error_class(files, reader, error, case, code) -> None:
    if case == "folder" and error is ModelError:
        code = "error.model.folder_without_config"  # a model may be named by the folder that holds config.json
    with pytest.raises(error) as info:
        reader(files[case])
    assert info.value.msg.code == code
    assert str(files[case]) in str(info.value)
    assert info.value.text("ru") != str(info.value)


@pytest.mark.timeout(30)
def test_billion_laughs_stops_small_from_python(files) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(PlanError) as info:
            read_config(files["laughs"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.msg.code == "error.read.yaml_expansion"
    assert peak < 20 * 2**20, peak  # the expansion is counted, never built
    assert "lol" not in str(info.value)


def test_yaml_bounds(tmp_path: Path) -> None:
    def refused(text: str) -> str:
        with pytest.raises(reading.ReadError) as info:
            reading.parse_yaml(text, "x.yaml")
        return info.value.msg.code

    assert refused("a: &a [1, *a]\n") == "error.read.yaml_recursive"
    assert refused("a: " + "[" * 70 + "]" * 70 + "\n") == "error.read.too_deep"
    assert refused("a: " + "7" * 5000 + "\n") == "error.read.long_integer"
    assert refused("a: &a [1]\n" + "".join(f"k{i}: *a\n" for i in range(reading.MAX_YAML_ALIASES + 1))) \
        == "error.read.yaml_aliases"
    # within the bounds, aliases and nesting read as PyYAML reads them
    assert reading.parse_yaml("a: &x {b: [1, 2]}\nc: *x\nd: 0x1F\n", "x.yaml") == \
        {"a": {"b": [1, 2]}, "c": {"b": [1, 2]}, "d": 31}
    assert reading.parse_yaml("", "x.yaml") is None


def test_json_bounds() -> None:
    with pytest.raises(reading.ReadError) as info:
        reading.parse_json('{"a": ' + "[" * 65 + "]" * 65 + "}", "x.json")
    assert info.value.msg.code == "error.read.too_deep" and info.value.msg["depth"] == 66
    with pytest.raises(reading.ReadError) as info:
        reading.parse_json('{"a": -' + "1" * 101 + "}", "x.json")
    assert info.value.msg.code == "error.read.long_integer" and info.value.msg["digits"] == 101
    # brackets inside strings are text, not nesting; 64 levels and 100 digits still read
    assert reading.parse_json('{"a": "[[[[\\"[[", "b": ' + "[" * 63 + "]" * 63 + "}", "x.json")["a"] == '[[[["[['
    assert reading.parse_json('{"a": ' + "9" * 100 + "}", "x.json")["a"] == int("9" * 100)
    with pytest.raises(json.JSONDecodeError):
        reading.parse_json("{", "x.json")


def test_a_refused_size_reads_nothing(files, monkeypatch) -> None:
    read = []
    real = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or real(fd, n))
    with pytest.raises(reading.ReadError) as info:
        reading.read_bytes(files["huge"], reading.CONFIG)
    assert info.value.msg.code == "error.read.too_large" and read == []
    assert render(info.value.msg, "en").startswith(f"{files['huge']} is 95.4 MiB, more than the 4 MiB")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_file_larger_than_its_stat_is_read_no_further_than_the_cap(monkeypatch) -> None:
    """/proc files report size 0 and hold more: the cap holds on what is read (cap + 1 bytes at most)."""
    read = []
    real = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(n) or real(fd, n))
    with pytest.raises(reading.ReadError) as info:
        reading.read_bytes("/proc/self/status", reading.FileKind("config", 64))
    assert info.value.msg.code == "error.read.too_large"
    assert sum(read) <= 65


def test_ordinary_files_still_read(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"model": "llama-3-8b", "seq_len": 2048}', encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(plan)  # a link to a regular file is followed
    assert read_plan_fields(link)["seq_len"] == 2048
    config = tmp_path / "axolotl.yaml"
    config.write_text("base_model: x\nsequence_len: 4096\nlora_r: &r 16\nlora_alpha: *r\n", encoding="utf-8")
    assert read_config(config)["lora_alpha"] == 16
    with pytest.raises(GpuworkError):
        read_config(tmp_path / "missing.yaml")


def test_a_nul_in_the_name_is_one_message() -> None:
    """os.stat raises ValueError (not OSError) for it: the reader says what is wrong instead."""
    with pytest.raises(CatalogError) as info:
        load_offers("cata\0log.csv")
    assert info.value.msg.code == "error.read.nul_in_name" and "cata\\0log.csv" in str(info.value)


def test_a_dangling_link_is_named_with_its_target_as_written_for_reading_and_for_writing(tmp_path) -> None:
    link = tmp_path / "out.json"
    link.symlink_to("gone/out.json")
    assert reading.link_target(link) == "gone/out.json"
    assert reading.link_target(tmp_path / "nothing") == "?"
    for act, code in ((lambda: reading.read_text(link, reading.PLAN), "error.read.dangling"),
                      (lambda: reading.output_file(link), "error.write.dangling")):
        with pytest.raises(reading.ReadError) as info:
            act()
        assert info.value.msg.code == code and info.value.msg["target"] == "gone/out.json"
