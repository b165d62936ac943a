"""Helpers of the hostile-input regression tests: gpuwork's CLI in this process, one error line, model folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwork.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """gpuwork's main in this process: (exit status, stdout, stderr); argparse's exits count as statuses."""
    try:
        rc = main(list(argv))
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_error(rc: int, err: str, *words: str) -> str:
    """The one error line of a refused command (exit 2, no traceback, no "internal error"), holding ``words``."""
    assert rc == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpuwork: error: "), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


LLAMA = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000, "max_position_embeddings": 2048,
         "architectures": ["LlamaForCausalLM"]}


def model_folder(root: Path, name: str, config: object) -> Path:
    """A folder holding ``config`` as its config.json."""
    folder = root / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


# how each kind of bad file is named in its one error line
BAD_WORDS = {"fifo": "FIFO", "zero": "character device", "folder": "folder", "loop": "loop",
             "dangling": "does not exist", "huge": "MiB", "deep": "levels deep", "bigint": "digits",
             "junk": "UTF-8"}
