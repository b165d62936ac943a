"""What a user reads names public sources and says what it means: no internal document references, no
"GPU(s)"-style shorthand in the pages, one explanation of GB vs GiB, and no library noise."""

from __future__ import annotations

import re

import nbformat

from gpuwork.facts.catalog import load_gpus
from gpuwork.present.messages import CATALOG
from gpuwork.ui.noise import clean_stream, strip_noise
from gpuwork.ui.report import NOTEBOOKS, notebooks_dir

INTERNAL = re.compile(r"gpu[_]facts|memory[_]formulas|stack[_]facts|shared[/]reference|§")


def test_no_message_cites_an_internal_document() -> None:
    cited = {code: text for code, langs in CATALOG.items() for text in langs.values() if INTERNAL.search(text)}
    assert not cited, cited


def test_no_notebook_cites_an_internal_document() -> None:
    for name in (*NOTEBOOKS, "app"):
        nb = nbformat.read(notebooks_dir() / f"{name}.ipynb", as_version=4)
        assert not any(INTERNAL.search(c.source) for c in nb.cells), name


def test_one_cards_memory_three_ways_is_explained_once() -> None:
    from gpuwork.ui.sizing import memory_units_html

    page = memory_units_html(load_gpus()["h100_sxm"])
    assert re.search(r"<b>80 GB</b>.*<b>79\.6 GiB total</b>.*<b>75\.7 GiB usable</b>", page), page
    assert "10<sup>9</sup>" in page and "2<sup>30</sup>" in page and "5%" in page
    ru = memory_units_html(load_gpus()["h100_sxm"], "ru")
    assert "80 ГБ" in ru and "79,6 ГиБ" in ru and "75,7 ГиБ" in ru


def test_library_noise_is_removed_and_real_errors_stay() -> None:
    noise = ("Failed to load CPU gemm_4bit_forward from kernels-community: No module named 'kernels'. Please make "
             "sure you already `pip install kernels` and the kernels >= 0.11.1\n"
             "/x/site-packages/peft/tuners/lora/model.py:12: FutureWarning: `x` is deprecated\n"
             "  warnings.warn(\n")
    assert clean_stream(noise) == ""
    assert clean_stream(noise + "RuntimeError: CUDA out of memory\n") == "RuntimeError: CUDA out of memory\n"
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=noise),
                    nbformat.v4.new_output("stream", name="stdout", text="kept\n"),
                    nbformat.v4.new_output("stream", name="stderr", text=noise + "disk full\n")]
    nb.cells = [cell]
    assert strip_noise(nb) == 1
    assert [o.text for o in cell.outputs] == ["kept\n", "disk full\n"]


def test_setup_notebook_silences_library_warnings() -> None:
    import logging
    import warnings

    from gpuwork.ui.common import setup_notebook

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        setup_notebook()
        warnings.warn("old API", FutureWarning, stacklevel=1)
        warnings.warn("real", UserWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["real"]
    assert logging.getLogger("bitsandbytes.backends.cpu.ops").getEffectiveLevel() == logging.ERROR
