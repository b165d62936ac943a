"""Hostile inputs to ``gpuwork trace`` (issue 21): a config deeper than any released model is refused before the
tracer runs every layer (a 1,024-layer config ran for tens of minutes)."""

from __future__ import annotations

from gpuwork.cli.estimate import MAX_TRACE_LAYERS

from .helpers import LLAMA, model_folder, one_error


def test_a_config_deeper_than_the_trace_limit_is_one_line(cli, tmp_path) -> None:
    folder = model_folder(tmp_path, "deep", {**LLAMA, "num_hidden_layers": 1024})
    rc, out, err = cli("trace", "--model", str(folder))
    one_error(rc, err, "1,024 layers", f"at most {MAX_TRACE_LAYERS}", "gpuwork estimate")
    assert out == ""

