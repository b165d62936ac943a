"""A hostile probe of the ``gpuwork`` CLI and Python API: hundreds of bad inputs, each in its own process.

Every case runs in a subprocess with a time limit (60 s) and an address-space limit (2 GiB, RLIMIT_AS) and is
classified by what came back:

- ``clean_error``: exit 2 and one line on stderr (``gpuwork: error: ...``; from Python: a ``GpuworkError``);
- ``accepted``: exit 0;
- ``traceback``, ``internal_error`` ("internal error ... a bug in gpuwork", exit 1), ``api_exception`` (a
  Python-API call raised something that is not a ``GpuworkError``), ``hang`` (past the time limit),
  ``memory`` (``MemoryError``, killed, or over 1 GiB resident), ``raw_escape`` (an escape byte the user gave
  written to the terminal), ``slow_error`` (a refusal that took over 15 s: a mistyped path must fail fast);
- ``silent_nonsense``: accepted although the case table says the input is nonsense;
- ``wrongly_refused``: a clean error for an input the table says is fine.

Each case names the outcome it should have (``expect``: "error", "accept" or "any") and why. The run prints the
counts per class and per verb and writes ``report.json`` (every case, its class, exit status, time, peak memory and
the last line of stderr) under ``--out``.

    .venv/bin/python scripts/hostile_probe.py --out /tmp/probe            # all cases, 2 at a time
    .venv/bin/python scripts/hostile_probe.py --out /tmp/probe -k offers  # cases whose id contains "offers"

Not part of the test suite (it takes minutes): the cases it found are regression tests in ``tests/hostile/``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime as dt
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
TIME_LIMIT_S = 60
MEMORY_LIMIT = 2 << 30  # RLIMIT_AS of each case
MEMORY_BLOWUP_KB = 1 << 20  # 1 GiB resident: a memory blow-up
SLOW_ERROR_S = 15.0

CLASSES = ("clean_error", "accepted", "silent_nonsense", "wrongly_refused", "traceback", "internal_error",
           "api_exception", "hang", "memory", "raw_escape", "slow_error", "unclean_error", "not_run")
BAD = ("silent_nonsense", "traceback", "internal_error", "api_exception", "hang", "memory", "raw_escape",
       "slow_error", "unclean_error")


@dataclass
class Case:
    id: str
    verb: str
    expect: str  # "error", "accept" or "any"
    why: str
    argv: list[str] | None = None  # a CLI case: gpuwork ARGV
    code: str | None = None  # a Python-API case: statements run with gpuwork imported
    env: dict[str, str] = field(default_factory=dict)
    type_error_ok: bool = False  # an API case passing a value of the wrong Python type


# -- fixtures -------------------------------------------------------------------------------------------------


def make_fixtures(root: Path) -> dict[str, Path]:
    """Bad files of every kind, under ``root``."""
    f: dict[str, Path] = {}
    root.mkdir(parents=True, exist_ok=True)

    def put(name: str, data: str | bytes) -> Path:
        path = root / name
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return path

    f["fifo"] = root / "fifo"
    os.mkfifo(f["fifo"])
    f["zero"] = root / "zero_link"
    os.symlink("/dev/zero", f["zero"])
    f["folder"] = root / "a_folder"
    f["folder"].mkdir()
    f["loop"] = root / "loop_a"
    os.symlink(root / "loop_b", f["loop"])
    os.symlink(root / "loop_a", root / "loop_b")
    f["dangling"] = root / "dangling"
    os.symlink(root / "no" / "such" / "target", f["dangling"])
    f["huge"] = root / "huge.json"
    with open(f["huge"], "wb") as out:  # 100 MB, sparse
        out.truncate(100 * 10**6)
    f["deep"] = put("deep.json", "[" * 100_000 + "]" * 100_000)
    f["bigint"] = put("bigint.json", '{"seq_len": ' + "9" * 5000 + "}")
    levels = ["a: &a [" + ",".join(["lol"] * 9) + "]"]
    for i in range(1, 10):
        levels.append(f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}"] * 9) + "]")
    f["laughs"] = put("laughs.yaml", "\n".join(levels) + "\n")
    f["junk"] = put("junk.bin", random.Random(0).randbytes(4096))
    f["list"] = put("list.json", "[1, 2, 3]")
    f["string"] = put("string.json", '"hello"')
    f["empty"] = put("empty.json", "")
    f["nan_json"] = put("nan.json", '{"seq_len": NaN}')
    # plans with fields of the wrong kind or absurd size
    f["plan_neg"] = put("plan_neg.json", json.dumps({"seq_len": -5}))
    f["plan_float_big"] = put("plan_big.json", '{"epochs": 1e308}')
    f["plan_tiny"] = put("plan_tiny.json", '{"epochs": 1e-300}')
    f["plan_ok"] = put("plan_ok.json", json.dumps({"model": "llama-3.2-1b", "method": "lora", "seq_len": 1024}))
    f["plan_escape"] = put("plan_esc.json", json.dumps({"model": "\x1b[31mred\x1b]0;pwned\x07"}))
    # model configs
    base = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000,
            "max_position_embeddings": 2048, "architectures": ["LlamaForCausalLM"]}
    configs = {
        "cfg_ok": base,
        "cfg_arch_int": {**base, "architectures": 7},
        "cfg_arch_dict": {**base, "architectures": {"a": 1}},
        "cfg_arch_ints": {**base, "architectures": [1, 2]},
        "cfg_arch_str": {**base, "architectures": "LlamaForCausalLM"},
        "cfg_arch_empty": {**base, "architectures": []},
        "cfg_layers_neg": {**base, "num_hidden_layers": -2},
        "cfg_layers_float": {**base, "num_hidden_layers": 2.5},
        "cfg_layers_huge": {**base, "num_hidden_layers": 10**12},
        "cfg_hidden_str": {**base, "hidden_size": "4k"},
        "cfg_vocab_zero": {**base, "vocab_size": 0},
        "cfg_heads_bad": {**base, "num_key_value_heads": 3},
        "cfg_not_dict": [1, 2],
        "cfg_missing": {"model_type": "llama"},
        "cfg_model_type_int": {**base, "model_type": 5},
        "cfg_model_type_unknown": {**base, "model_type": "no-such-family"},
        "cfg_moe_million": {**base, "model_type": "mixtral", "architectures": ["MixtralForCausalLM"],
                            "num_local_experts": 1_000_000, "num_experts_per_tok": 2},
        "cfg_moe_topk_gt": {**base, "model_type": "mixtral", "architectures": ["MixtralForCausalLM"],
                            "num_local_experts": 4, "num_experts_per_tok": 8},
        "cfg_moe_zero": {**base, "model_type": "mixtral", "architectures": ["MixtralForCausalLM"],
                         "num_local_experts": 0, "num_experts_per_tok": 2},
        "cfg_tie_str": {**base, "tie_word_embeddings": "yes"},
        "cfg_head_dim_neg": {**base, "head_dim": -64},
        "cfg_1024_layers": {**base, "num_hidden_layers": 1024},
        "cfg_escape": {**base, "model_type": "\x1b[2J\x1b[31mllama"},
    }
    for name, config in configs.items():
        folder = root / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
        f[name] = folder / "config.json"
    # catalogs of offers
    header = ("offer_id,provider,gpu_id,gpus_per_node,link,network,mode,region,price_per_gpu_hour_usd,"
              "min_rental_hours,as_of,note\n")
    good = "x1,p,h100_sxm,8,nvlink_switch,none,on-demand,eu,2.5,1,2026-05-01,ok\n"
    rows = {
        "cat_ok": good,
        "cat_empty": "",
        "cat_header_only": None,
        "cat_price_neg": good.replace(",2.5,", ",-2.5,"),
        "cat_price_nan": good.replace(",2.5,", ",nan,"),
        "cat_price_huge": good.replace(",2.5,", ",1e308,"),
        "cat_price_tiny": good.replace(",2.5,", ",1e-300,"),
        "cat_gpus_zero": good.replace(",8,", ",0,"),
        "cat_gpus_huge": good.replace(",8,", "," + "9" * 5000 + ","),
        "cat_gpu_unknown": good.replace("h100_sxm", "h100_sxn"),
        "cat_mode_typo": good.replace("on-demand", "ondemand"),
        "cat_date_past": good.replace("2026-05-01", "1900-01-01"),
        "cat_date_future": good.replace("2026-05-01", "9999-12-31"),
        "cat_date_bad": good.replace("2026-05-01", "2026-13-45"),
        "cat_short_row": "x1,p,h100_sxm,8\n",
        "cat_dup": good + good,
        "cat_hours_zero": good.replace(",1,2026", ",0,2026"),
        "cat_escape": good.replace(",ok\n", ",\x1b[31mred\x1b[0m\n").replace("x1,p,", "x\x1b[2J1,p\x1b[31m,"),
    }
    for name, body in rows.items():
        if name == "cat_empty":
            f[name] = put(name + ".csv", "")
        elif name == "cat_header_only":
            f[name] = put(name + ".csv", header)
        else:
            f[name] = put(name + ".csv", header + body)
    f["cat_bom_header"] = put("cat_bom.csv", "\ufeff" + header + good)
    f["cat_big"] = put("cat_big.csv", header + "".join(good.replace("x1,", f"x{i},") for i in range(60_000)))
    # texts for --lengths-from
    f["text_ok"] = put("ok.txt", "hello world. " * 50)
    f["jsonl_bad"] = put("bad.jsonl", '{"text": "a"}\nnot json\n')
    f["jsonl_notext"] = put("notext.jsonl", '{"body": "a"}\n')
    f["text_junk"] = put("junk.txt", random.Random(1).randbytes(2048))
    f["text_longline"] = root / "longline.jsonl"
    with open(f["text_longline"], "wb") as out:  # one 100 MB line
        out.write(b'{"text": "')
        chunk = b"a" * (1 << 20)
        for _ in range(100):
            out.write(chunk)
        out.write(b'"}\n')
    f["text_suffix"] = put("data.csv", "a,b\n")
    # trial records (read by compare / request --record; validation is another module's, the terminal is ours)
    f["record_list"] = put("record_list.json", "[]")
    f["out_dir"] = root / "out_dir"
    f["out_dir"].mkdir()
    f["out_dangling"] = root / "out_dangling"
    os.symlink(root / "nowhere" / "report", f["out_dangling"])
    f["out_file"] = put("out_file", "x")
    f["out_escape_link"] = root / "out_escape"
    os.symlink("/", f["out_escape_link"])
    return f


# -- cases ----------------------------------------------------------------------------------------------------

# Numeric flags: verbs, a value that is fine, and the ranges each value below must fall in to be accepted.
# flag -> (verbs, kind, lowest accepted, highest accepted); bounds inclusive; the decision per value is the case
# table: a value outside [lo, hi] must be refused.
PLAN_VERBS = ("estimate", "plan", "offers", "advise", "fit", "request")
DATA_VERBS = ("plan", "offers", "advise", "fit", "request")
NUMERIC: dict[str, tuple[tuple[str, ...], str, float, float]] = {
    "--seq-len": (PLAN_VERBS, "int", 1, 2**24),
    "--batch-size": (PLAN_VERBS, "int", 1, 2**20),
    "--grad-accum": (PLAN_VERBS, "int", 1, 2**20),
    "--trainable-layers": (("estimate",), "int", 1, 10_000),
    "--lora-r": (PLAN_VERBS, "int", 1, 65_536),
    "--lora-alpha": (("estimate", "plan"), "float", 1e-3, 1e6),
    "--lora-dropout": (("estimate", "plan"), "float", 0, 0.99),
    "--gpus": (PLAN_VERBS, "int", 1, 65_536),
    "--dataset-tokens": (DATA_VERBS, "int", 1, 1e15),
    "--epochs": (DATA_VERBS, "float", 1e-4, 10_000),
    "--eval-fraction": (("plan", "request"), "float", 0, 0.99),
    "--checkpoint-every": (("plan", "request"), "int", 1, 1e9),
    "--checkpoints-kept": (("plan", "request"), "int", 0, 10_000),
    "--compression-ratio": (("plan",), "float", 1, 100),
    "--mfu": (("plan", "offers", "advise", "fit"), "float", 1e-3, 1),
    "--loader-tokens-per-s": (("plan",), "float", 1, 1e12),
    "--disk-write-gbs": (("plan",), "float", 1e-3, 10_000),
    "--offers": (("plan",), "int", 0, 10_000),
    "--max-price": (("offers",), "float", 0, 1_000),
    "--min-vram": (("offers",), "float", 0, 4_096),
    "--budget": (("offers", "request"), "float", 0.01, 1e9),
    "--deadline-hours": (("offers",), "float", 0.01, 1e6),
    "--preemption-rate": (("offers",), "float", 0, 1_000),
    "--safety-margin": (("offers",), "float", 0, 0.99),
    "--limit": (("offers", "advise"), "int", 1, 1e6),
    "--rent-days": (("request",), "int", 1, 36_500),
}
# value text -> its number (None: not a number at all, or "4k"-style text only some flags read)
VALUES: dict[str, float | None] = {
    "-1": -1, "0": 0, "1": 1, "1e308": 1e308, "1e-300": 1e-300, "nan": None, "inf": None, "-inf": None,
    "1" + "0" * 30: 1e30, "4k": None, "1O": None, "0.5": 0.5, "": None,
}
# flags whose parser reads "4k"-style counts
COUNT_TEXT = {"--dataset-tokens": {"4k": 4000}, "--seq-len": {"4k": 4096}}


def numeric_cases() -> list[Case]:
    cases = []
    for n, (flag, (verbs, kind, lo, hi)) in enumerate(NUMERIC.items()):
        # the same check serves every verb: two verbs per flag, rotating, keep the run to minutes
        for verb in sorted({verbs[n % len(verbs)], verbs[(n + 1) % len(verbs)]}):
            for value_text, number in VALUES.items():
                number = COUNT_TEXT.get(flag, {}).get(value_text, number)
                if number is None:
                    expect, why = "error", "not a number"
                elif kind == "int" and float(number) != int(number):
                    expect, why = "error", "not a whole number"
                elif kind == "int" and "e" in value_text:
                    expect, why = ("error", "an integer flag given a float literal")
                elif lo <= number <= hi:
                    expect, why = "accept", f"within [{lo}, {hi}]"
                else:
                    expect, why = "error", f"outside [{lo}, {hi}]"
                argv = [verb, flag, value_text]
                if flag in ("--lora-r", "--lora-alpha", "--lora-dropout"):
                    argv += ["--method", "lora"]
                if flag == "--trainable-layers":
                    argv += ["--method", "freeze"]
                if flag == "--gpus" and verb != "request":
                    argv += ["--seq-len", "512"]
                cases.append(Case(f"{verb} {flag} {value_text!r}", verb, expect, why, argv=argv))
    return cases


def file_cases(f: dict[str, Path]) -> list[Case]:
    bad_files = ("fifo", "zero", "folder", "loop", "dangling", "huge", "deep", "bigint", "laughs", "junk", "list",
                 "string", "empty", "nan_json")
    cases = []
    for verb, flag, files in (
        ("estimate", "--plan", bad_files), ("plan", "--plan", bad_files), ("offers", "--plan", bad_files[:6]),
        ("advise", "--plan", bad_files[:6]), ("fit", "--plan", bad_files[:6]), ("request", "--plan", bad_files[:6]),
        ("estimate", "--from", bad_files), ("plan", "--from", bad_files[:9]),
        ("offers", "--catalog", bad_files), ("request", "--record", bad_files), ("compare", "", bad_files),
        ("estimate", "--lengths-from", ("fifo", "zero", "loop", "dangling", "junk", "empty")),
        ("estimate", "--model", ("fifo", "zero", "loop", "dangling", "junk", "deep", "bigint", "list", "huge")),
        ("report", "--plan", ("fifo", "zero", "folder", "loop", "dangling", "huge", "deep", "bigint", "junk")),
    ):
        for name in files:
            argv = [verb, flag, str(f[name])] if flag else [verb, str(f[name])]
            expect = "error"
            if flag == "--from" and name == "empty":
                expect = "any"  # an empty config sets nothing: refusing it or importing nothing are both fine
            if verb == "report":
                argv += ["--out", str(f["out_dir"] / f"r_{name}")]
            cases.append(Case(f"{verb} {flag or 'RECORD'} <{name}>", verb, expect, f"a bad file: {name}", argv=argv))
    for name in ("plan_neg", "plan_float_big", "plan_tiny", "plan_escape"):
        for verb in ("estimate", "plan"):
            cases.append(Case(f"{verb} --plan <{name}>", verb, "error", f"a plan with {name}",
                              argv=[verb, "--plan", str(f[name])]))
    cases.append(Case("estimate --plan <plan_ok>", "estimate", "accept", "a good plan",
                      argv=["estimate", "--plan", str(f["plan_ok"])]))
    return cases


def config_cases(f: dict[str, Path]) -> list[Case]:
    cases = []
    # an empty architectures list names no head class, as a config without the key: the causal LM head
    expect_ok = {"cfg_ok", "cfg_arch_str", "cfg_arch_empty", "cfg_1024_layers"}
    for name in [k for k in f if k.startswith("cfg_")]:
        # each config case loads transformers (seconds): every config through estimate, the worst also through
        # plan and fit
        verbs = ("estimate", "plan", "fit") if name.startswith(("cfg_arch", "cfg_moe_million")) else ("estimate",)
        for verb in verbs:
            expect = "accept" if name in expect_ok else "error"
            cases.append(Case(f"{verb} --model <{name}>", verb, expect, f"config.json: {name}",
                              argv=[verb, "--model", str(f[name])]))
        cases.append(Case(f"estimate --model <{name} folder>", "estimate", "accept" if name in expect_ok else "error",
                          f"the folder of config.json: {name}", argv=["estimate", "--model", str(f[name].parent)]))
    # mistyped model paths: one line, fast, no hub lookup
    for typo in ("./modles/llama", "../no-such-model/", "/nonexistent/model/config.json", "~/no/such/model",
                 "models/llama-3.2-1b/config.json", "llama-3.2-1bb", "meta-llama/Llama-3.2-1B-Instruct/extra",
                 "C:\\models\\llama", "no such model", "", " ", "\x1b[31mllama", "a" * 5000):
        cases.append(Case(f"estimate --model {typo[:40]!r}", "estimate", "error", "a mistyped model",
                          argv=["estimate", "--model", typo]))
    for verb in ("trace",):
        for name in ("cfg_1024_layers", "cfg_arch_int", "cfg_moe_million", "cfg_layers_huge"):
            expect = "any" if name == "cfg_1024_layers" else "error"
            cases.append(Case(f"trace --model <{name}>", verb, expect, f"tracing config {name}",
                              argv=["trace", "--model", str(f[name])]))
    return cases


def catalog_cases(f: dict[str, Path]) -> list[Case]:
    cases = []
    for name in [k for k in f if k.startswith("cat_")]:
        # escape bytes in a catalog are data: taken, and shown escaped (a raw one is its own class)
        expect = "accept" if name in ("cat_ok", "cat_bom_header", "cat_escape") else "error"
        why = {"cat_big": "60,000 offers: over the 20,000 ranked, refused naming the cap and the fix",
               "cat_header_only": "an empty catalog ranks nothing: say so",
               "cat_empty": "no header"}.get(name, f"catalog {name}")
        cases.append(Case(f"offers --catalog <{name}>", "offers", expect, why, argv=["offers", "--catalog", str(f[name])]))
    return cases


def date_cases() -> list[Case]:
    today = dt.date.today()
    cases = []
    for text, expect, why in (
        (today.isoformat(), "accept", "today"),
        ((today + dt.timedelta(days=30)).isoformat(), "accept", "next month"),
        ((today - dt.timedelta(days=1)).isoformat(), "error", "yesterday: a rental cannot start in the past"),
        ("2000-01-01", "error", "the past"), ("1-01-01", "error", "year 1"),
        ("9999-12-31", "error", "far future"), ((today + dt.timedelta(days=3 * 366)).isoformat(), "error",
                                                 "over two years ahead"),
        ("2026-02-30", "error", "no such day"), ("tomorrow", "error", "not a date"), ("", "error", "empty"),
        ("2026-1-1", "error", "not ISO"), ("\x1b[31m2026-01-01", "error", "escape bytes"),
    ):
        cases.append(Case(f"request --start-date {text!r}", "request", expect, why,
                          argv=["request", "--start-date", text]))
    return cases


def misc_cases(f: dict[str, Path]) -> list[Case]:
    out = f["out_dir"]
    c = [
        Case("report --timeout 1e308", "report", "error", "a timeout beyond a week",
             argv=["report", "--out", str(out / "t1"), "--timeout", "1e308"]),
        Case("report --timeout 1e-300", "report", "error", "a timeout under a second",
             argv=["report", "--out", str(out / "t2"), "--timeout", "1e-300"]),
        Case("report --timeout nan", "report", "error", "nan", argv=["report", "--out", str(out / "t3"), "--timeout", "nan"]),
        Case("report --timeout -5", "report", "error", "negative", argv=["report", "--out", str(out / "t4"), "--timeout", "-5"]),
        Case("report --steps 0", "report", "error", "no steps", argv=["report", "--out", str(out / "t5"), "--steps", "0"]),
        Case("report --steps 1e9", "report", "error", "not a whole number",
             argv=["report", "--out", str(out / "t6"), "--steps", "1e9"]),
        Case("report --steps 10**30", "report", "error", "beyond 10,000",
             argv=["report", "--out", str(out / "t7"), "--steps", "1" + "0" * 30]),
        Case("report --out <dangling link>", "report", "error", "a dangling link: no folder made where it points",
             argv=["report", "--out", str(f["out_dangling"]), "--notebooks", "01_sizing"]),
        Case("report --out <dangling link>/sub", "report", "error", "below a dangling link",
             argv=["report", "--out", str(f["out_dangling"]) + "/sub", "--notebooks", "01_sizing"]),
        Case("report --out <a file>", "report", "error", "a file, not a folder",
             argv=["report", "--out", str(f["out_file"]), "--notebooks", "01_sizing"]),
        Case("report --out <fifo>", "report", "error", "a FIFO", argv=["report", "--out", str(f["fifo"])]),
        Case("report --out <loop>", "report", "error", "a link loop", argv=["report", "--out", str(f["loop"])]),
        Case("report --out ''", "report", "error", "empty", argv=["report", "--out", ""]),
        Case("report --notebooks nope", "report", "error", "unknown notebook",
             argv=["report", "--out", str(out / "t8"), "--notebooks", "nope"]),
        Case("report --notebooks ../../etc/passwd", "report", "error", "a path, not a notebook name",
             argv=["report", "--out", str(out / "t9"), "--notebooks", "../../etc/passwd"]),
        Case("accuracy --out <dangling>", "accuracy", "error", "a dangling link",
             argv=["accuracy", "--out", str(f["dangling"])]),
        Case("accuracy --out <folder>", "accuracy", "error", "a folder, not a file",
             argv=["accuracy", "--out", str(f["folder"])]),
        Case("accuracy --out <fifo>", "accuracy", "error", "a FIFO", argv=["accuracy", "--out", str(f["fifo"])]),
        Case("accuracy --out <zero link>", "accuracy", "error", "a device",
             argv=["accuracy", "--out", str(f["zero"])]),
        Case("accuracy --out <missing folder>/x.md", "accuracy", "error", "its folder does not exist",
             argv=["accuracy", "--out", str(f["out_dir"] / "no" / "x.md")]),
        Case("app --port 0", "app", "error", "port 0", argv=["app", "--port", "0", "--help"]),
        Case("app --port 70000", "app", "error", "beyond 65535", argv=["app", "--port", "70000"]),
        Case("app --port -1", "app", "error", "negative port", argv=["app", "--port", "-1"]),
        Case("app --port x", "app", "error", "not a number", argv=["app", "--port", "x"]),
        Case("app --max-pages 0", "app", "error", "no pages", argv=["app", "--max-pages", "0"]),
        Case("app --max-pages 1e308", "app", "error", "not a whole number", argv=["app", "--max-pages", "1e308"]),
        Case("app --max-pages 10**30", "app", "error", "huge", argv=["app", "--max-pages", "1" + "0" * 30]),
        Case("app --pool -3", "app", "error", "negative pool", argv=["app", "--pool", "-3"]),
        Case("app --pool 10**30", "app", "error", "huge pool", argv=["app", "--pool", "1" + "0" * 30]),
        Case("app --host ''", "app", "error", "empty host", argv=["app", "--host", ""]),
        Case("app --help", "app", "accept", "help", argv=["app", "--help"]),
        Case("models --help", "models", "accept", "help", argv=["models", "--help"]),
        Case("models", "models", "accept", "list", argv=["models"]),
        Case("models --json", "models", "accept", "list", argv=["models", "--json"]),
        Case("fit --gpu nosuch", "fit", "error", "unknown GPU", argv=["fit", "--gpu", "nosuch"]),
        Case("fit --gpu ESC", "fit", "error", "escape bytes", argv=["fit", "--gpu", "\x1b[2Jh100"]),
        Case("plan --gpu nosuch", "plan", "error", "unknown GPU", argv=["plan", "--gpu", "nosuch"]),
        Case("plan --have 0xH100", "plan", "error", "no cards", argv=["plan", "--have", "0xH100"]),
        Case("plan --have -1xH100", "plan", "error", "negative cards", argv=["plan", "--have", "-1xH100"]),
        Case("plan --have 10**30xH100", "plan", "error", "huge count", argv=["plan", "--have", "1" + "0" * 30 + "xH100"]),
        Case("plan --have 1e308xH100", "plan", "error", "float count", argv=["plan", "--have", "1e308xH100"]),
        Case("plan --have 2xNOPE", "plan", "error", "unknown card", argv=["plan", "--have", "2xNOPE"]),
        Case("advise --have 100000xH100", "advise", "error", "more cards than any cluster",
             argv=["advise", "--have", "100000xH100"]),
        Case("plan --have 2xh100_sxm", "plan", "accept", "two cards", argv=["plan", "--have", "2xh100_sxm"]),
        Case("plan --dataset-bytes -1", "plan", "error", "negative", argv=["plan", "--dataset-bytes", "-1"]),
        Case("plan --dataset-bytes 1e308", "plan", "error", "huge", argv=["plan", "--dataset-bytes", "1e308"]),
        Case("plan --dataset-bytes 4k", "plan", "error", "no unit: 4 kB or 4 KiB?", argv=["plan", "--dataset-bytes", "4k"]),
        Case("plan --dataset-bytes 200GB", "plan", "accept", "200 GB", argv=["plan", "--dataset-bytes", "200GB"]),
        Case("plan --dataset-bytes nan", "plan", "error", "nan", argv=["plan", "--dataset-bytes", "nan"]),
        Case("plan --dataset-tokens 1e-300", "plan", "error", "not whole", argv=["plan", "--dataset-tokens", "1e-300"]),
        Case("plan --dataset-bytes 1 --compression-ratio 1e-300", "plan", "error", "ratio below range",
             argv=["plan", "--dataset-bytes", "1", "--compression-ratio", "1e-300"]),
        Case("offers --mode typo", "offers", "error", "unknown mode", argv=["offers", "--mode", "ondemand"]),
        Case("offers --region typo", "offers", "error", "unknown region", argv=["offers", "--region", "mars"]),
        Case("offers --class typo", "offers", "error", "unknown class", argv=["offers", "--class", "quantum"]),
        Case("offers --sort typo", "offers", "error", "unknown sort", argv=["offers", "--sort", "cheapest"]),
        Case("advise --mode typo", "advise", "error", "unknown mode", argv=["advise", "--mode", "spot!"]),
        Case("estimate --calibrated nosuch", "estimate", "any", "no calibration saved for it",
             argv=["estimate", "--calibrated", "nosuch device"]),
        Case("estimate --lengths garbage", "estimate", "error", "not a histogram", argv=["estimate", "--lengths", "12:x"]),
        Case("estimate --lengths 0:1", "estimate", "error", "zero length", argv=["estimate", "--lengths", "0:1"]),
        Case("estimate --lengths 1e308:1", "estimate", "error", "huge length", argv=["estimate", "--lengths", "1e308:1"]),
        Case("estimate --lengths 128:nan", "estimate", "error", "nan weight", argv=["estimate", "--lengths", "128:nan"]),
        Case("estimate --lengths 128:-1", "estimate", "error", "negative weight", argv=["estimate", "--lengths", "128:-1"]),
        Case("estimate --lengths 128:1e308", "estimate", "any", "one bin: its weight only scales",
             argv=["estimate", "--lengths", "128:1e308"]),
        Case("estimate --lengths 128:1e-300", "estimate", "any", "one bin: its weight only scales",
             argv=["estimate", "--lengths", "128:1e-300"]),
        Case("estimate --lengths 10**30:1", "estimate", "error", "huge length", argv=["estimate", "--lengths", "1" + "0" * 30 + ":1"]),
        Case("estimate --lora-targets ''", "estimate", "error", "no targets", argv=["estimate", "--lora-targets", ""]),
        Case("estimate --lora-targets nosuch", "estimate", "error", "the model has no such module",
             argv=["estimate", "--lora-targets", "nosuch_proj"]),
        Case("estimate --method typo", "estimate", "error", "unknown method", argv=["estimate", "--method", "lroa"]),
        Case("estimate --precision typo", "estimate", "error", "unknown precision", argv=["estimate", "--precision", "bf17"]),
        Case("estimate --optimizer typo", "estimate", "error", "unknown optimizer", argv=["estimate", "--optimizer", "adamx"]),
        Case("estimate --sharding zero3 --gpus 1", "estimate", "error", "sharding needs 2 GPUs",
             argv=["estimate", "--sharding", "zero3", "--gpus", "1"]),
        Case("estimate ESC model", "estimate", "error", "escape bytes in a name", argv=["estimate", "--method", "\x1b[2Jlora"]),
        Case("estimate --lang xx", "estimate", "error", "unknown language", argv=["estimate", "--lang", "xx"]),
        Case("estimate --lengths-tokenizer <fifo>", "estimate", "error", "a FIFO as the tokenizer",
             argv=["estimate", "--lengths-from", str(f["text_ok"]), "--lengths-tokenizer", str(f["fifo"])]),
        Case("estimate --lengths-tokenizer <dangling>", "estimate", "error", "a dangling tokenizer",
             argv=["estimate", "--lengths-from", str(f["text_ok"]), "--lengths-tokenizer", str(f["dangling"])]),
        Case("estimate --lengths-from <bad jsonl>", "estimate", "error", "bad JSON lines",
             argv=["estimate", "--lengths-from", str(f["jsonl_bad"])]),
        Case("estimate --lengths-from <no text>", "estimate", "error", "no text field",
             argv=["estimate", "--lengths-from", str(f["jsonl_notext"])]),
        Case("estimate --lengths-from <junk.txt>", "estimate", "error", "binary junk",
             argv=["estimate", "--lengths-from", str(f["text_junk"])]),
        Case("estimate --lengths-from <100 MB line>", "estimate", "error", "a 100 MB line",
             argv=["estimate", "--lengths-from", str(f["text_longline"])]),
        Case("estimate --lengths-from <csv>", "estimate", "error", "unknown suffix",
             argv=["estimate", "--lengths-from", str(f["text_suffix"])]),
        Case("estimate --lengths-from <folder>", "estimate", "error", "a folder without texts",
             argv=["estimate", "--lengths-from", str(f["folder"])]),
        Case("compare --price-per-hour nan", "compare", "error", "nan", argv=["compare", "--price-per-hour", "nan"]),
        Case("compare --price-per-hour -1", "compare", "error", "negative", argv=["compare", "--price-per-hour", "-1"]),
        Case("compare --price-per-hour 1e308", "compare", "error", "huge", argv=["compare", "--price-per-hour", "1e308"]),
        Case("compare --price-per-hour 1e-300", "compare", "error", "tiny",
             argv=["compare", "--price-per-hour", "1e-300"]),
        Case("request --record <folder>", "request", "error", "a folder", argv=["request", "--record", str(f["folder"])]),
        Case("request --format xml", "request", "error", "unknown format", argv=["request", "--format", "xml"]),
        Case("estimate --seq-len 4096 --lengths 8192:1", "estimate", "any", "lengths cut to seq_len",
             argv=["estimate", "--seq-len", "4096", "--lengths", "8192:1"]),
    ]
    for verb in ("estimate", "trace", "models", "accuracy", "plan", "offers", "request", "compare", "report",
                 "app", "advise", "fit"):
        c.append(Case(f"{verb} --help", verb, "accept", "help", argv=[verb, "--help"]))
        c.append(Case(f"{verb} --help --lang ru", verb, "accept", "help in Russian", argv=[verb, "--help", "--lang", "ru"]))
        c.append(Case(f"{verb} --no-such-flag", verb, "error", "unknown flag", argv=[verb, "--no-such-flag"]))
    return c


API_PRELUDE = """
import sys
import gpuwork
from gpuwork import sizing
from gpuwork.errors import GpuworkError
from gpuwork.plan import TrainPlan
"""


def api_cases(f: dict[str, Path]) -> list[Case]:
    cases = []
    plan_values = {"-1": "-1", "0": "0", "1e308": "1e308", "1e-300": "1e-300", "nan": "float('nan')",
                   "inf": "float('inf')", "huge": "10**30", "str": "'4k'", "bool": "True", "none": "None"}
    fields = {"seq_len": ("int", 1, 2**24), "batch_size": ("int", 1, 2**20), "grad_accum": ("int", 1, 2**20),
              "gpus": ("int", 1, 65_536), "lora_r": ("int", 1, 65_536), "lora_alpha": ("float", 1e-3, 1e6),
              "lora_dropout": ("float", 0, 0.99), "trainable_layers": ("int", 1, 10_000),
              "dataset_tokens": ("int", 1, 1e15), "dataset_bytes": ("int", 1, 1e18), "epochs": ("float", 1e-4, 1e4),
              "eval_fraction": ("float", 0, 0.99), "checkpoint_every_steps": ("int", 1, 1e9),
              "checkpoints_kept": ("int", 0, 10_000)}
    for name, (kind, lo, hi) in fields.items():
        for label, expr in plan_values.items():
            value = eval(expr)  # noqa: S307 - the probe's own literals
            if label == "none":
                expect = "accept" if name == "dataset_bytes" else "error"
            elif isinstance(value, str) or isinstance(value, bool):
                expect = "error"
            elif value != value or value in (float("inf"),):
                expect = "error"
            elif kind == "int" and isinstance(value, float):
                expect = "error"
            else:
                expect = "accept" if lo <= value <= hi else "error"
            extra = ", method='freeze'" if name == "trainable_layers" else ""
            cases.append(Case(f"api TrainPlan({name}={label})", "api.TrainPlan", expect, f"{kind} in [{lo}, {hi}]",
                              code=f"TrainPlan({name}={expr}{extra})"))
    for label, call, expect in (
        ("estimate_time mfu=nan", "sizing.estimate_time(TrainPlan(), 'h100_sxm', mfu=float('nan'))", "error"),
        ("estimate_time mfu=2", "sizing.estimate_time(TrainPlan(), 'h100_sxm', mfu=2)", "error"),
        ("estimate_time mfu=1e-300", "sizing.estimate_time(TrainPlan(), 'h100_sxm', mfu=1e-300)", "error"),
        ("estimate_time mfu='x'", "sizing.estimate_time(TrainPlan(), 'h100_sxm', mfu='x')", "error"),
        ("estimate_time gpu=nosuch", "sizing.estimate_time(TrainPlan(), 'nosuch')", "error"),
        ("estimate_time gpu=None", "sizing.estimate_time(TrainPlan(), None)", "error"),
        ("estimate_time gpu=5", "sizing.estimate_time(TrainPlan(), 5)", "error"),
        ("estimate_time ok", "sizing.estimate_time(TrainPlan(), 'h100_sxm')", "accept"),
        ("estimate_time loader=-1", "sizing.estimate_time(TrainPlan(), 'h100_sxm', loader_tokens_per_s=-1)", "error"),
        ("estimate_time loader=nan",
         "sizing.estimate_time(TrainPlan(), 'h100_sxm', loader_tokens_per_s=float('nan'))", "error"),
        ("estimate_time disk=0", "sizing.estimate_time(TrainPlan(), 'h100_sxm', disk_write_bytes_s=0)", "error"),
        ("estimate_time unknown option", "sizing.estimate_time(TrainPlan(), 'h100_sxm', nosuch=1)", "error"),
        ("estimate_memory model=missing path", "sizing.estimate_memory(TrainPlan(model='/no/such/model'))", "error"),
        ("estimate_memory model=./typo", "sizing.estimate_memory(TrainPlan(model='./modles/llama'))", "error"),
        ("estimate_memory plan=dict", "sizing.estimate_memory({'seq_len': 1})", "error"),
        ("estimate_memory plan=None", "sizing.estimate_memory(None)", "error"),
        ("parse_have 0xH100", "sizing.parse_have('0xH100')", "error"),
        ("parse_have 10**30xH100", "sizing.parse_have('1' + '0'*30 + 'xH100')", "error"),
        ("parse_have None", "sizing.parse_have(None)", "error"),
        ("parse_have 5", "sizing.parse_have(5)", "error"),
        ("parse_have 2xH100", "sizing.parse_have('2xH100')", "error"),  # three H100s: the error names each
        ("parse_have 2xh100_sxm", "sizing.parse_have('2xh100_sxm')", "accept"),
        ("decide plan=None", "sizing.decide(None)", "error"),
        ("fit_matrix offers=[1]", "sizing.fit_matrix(TrainPlan(), [1])", "error"),
        ("evaluate_offers offers=['x']", "sizing.evaluate_offers(TrainPlan(), ['x'])", "error"),
        ("scaling gpu=nosuch", "sizing.scaling(TrainPlan(), 'nosuch')", "error"),
        ("estimate_disk bad option", "sizing.estimate_disk(TrainPlan(), write_bytes_s=-1)", "error"),
        ("from_dict list", "TrainPlan.from_dict([1])", "error"),
        ("from_dict unknown", "TrainPlan.from_dict({'seqlen': 1})", "error"),
        ("from_dict lengths huge", "TrainPlan.from_dict({'lengths': [[10**30, 1]]})", "error"),
        ("from_dict lengths nan", "TrainPlan.from_dict({'lengths': [[128, float('nan')]]})", "error"),
        ("from_dict lora_targets int", "TrainPlan.from_dict({'lora_targets': 5})", "error"),
        ("from_dict model int", "TrainPlan.from_dict({'model': 5})", "error"),
        ("from_dict model ESC", "sizing.estimate_memory(TrainPlan(model='\\x1b[31m'))", "error"),
    ):
        wrong_type = label in ("estimate_time gpu=None", "estimate_time gpu=5", "estimate_time unknown option",
                               "estimate_memory plan=dict", "estimate_memory plan=None", "parse_have 5",
                               "decide plan=None", "fit_matrix offers=[1]", "evaluate_offers offers=['x']",
                               "estimate_disk bad option", "from_dict list")
        if label == "parse_have None":
            expect = "any"  # None is "no cards" (the form's empty field)
        cases.append(Case(f"api {label}", "api.sizing", expect, label, code=call, type_error_ok=wrong_type))
    loaders = {
        "load_offers": "from gpuwork.facts.catalog import load_offers as load; load(P)",
        "load_gpus": "from gpuwork.facts.catalog import load_gpus as load; load(P)",
        "get_spec": "from gpuwork.facts.model import get_spec as load; load(P)",
        "load_plan": "from gpuwork.facts.planfile import load_plan as load; load(P)",
        "load_texts": "from gpuwork.measure.textdata import load_texts as load; load(P)",
        "length_histogram": "from gpuwork.measure.lengths import length_histogram as load; load(P, seq_len=128)",
        "heldout.load_document": "from pathlib import Path; from gpuwork.measure.heldout import load_document as load;"
                                 " load(Path(P))",
        "load_calibration": "from gpuwork.measure.calibration import load_calibration as load; load('NVIDIA H100', P)",
        "load_tokenizer": "from gpuwork.measure.textdata import load_tokenizer as load; load(P)",
    }
    for loader, code in loaders.items():
        names = ["fifo", "zero", "folder", "loop", "dangling", "huge", "deep", "bigint", "junk", "list", "empty"]
        if loader in ("load_texts", "length_histogram"):
            names.append("text_longline")
        for name in names:
            expect = "error"
            if loader == "load_calibration" and name in ("empty",):
                expect = "error"
            cases.append(Case(f"api {loader}(<{name}>)", f"api.{loader.split('.')[0]}", expect, f"a bad file: {name}",
                              code=f"P = {str(f[name])!r}\n{code}"))
    return cases


def all_cases(f: dict[str, Path]) -> list[Case]:
    return (numeric_cases() + file_cases(f) + config_cases(f) + catalog_cases(f) + date_cases() + misc_cases(f)
            + api_cases(f))


# -- running and classifying ----------------------------------------------------------------------------------


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    os.setsid()


def run_case(case: Case, work: Path, env: dict[str, str]) -> dict:
    if case.argv is not None:
        cmd = [PYTHON, "-c", "import sys; from gpuwork.cli import main; sys.exit(main())", *case.argv]
    else:
        body = "\n".join("    " + line for line in case.code.splitlines())
        # a value of the wrong Python type (None for a plan, an int for a list of offers) may be a TypeError, as
        # Python's own functions answer; anything else must be gpuwork's own error
        allowed = "(GpuworkError, TypeError)" if case.type_error_ok else "GpuworkError"
        code = (API_PRELUDE + "try:\n" + body + f"\nexcept {allowed} as exc:\n"
                "    print('GPUWORK_ERROR:', type(exc).__name__, exc, file=sys.stderr); sys.exit(2)\n")
        cmd = [PYTHON, "-c", code]
    out_path, err_path = work / f"{id(case)}.out", work / f"{id(case)}.err"
    start = time.perf_counter()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        if any("\0" in arg for arg in cmd):  # the OS cannot pass a NUL in an argument: nothing to judge
            return {**asdict(case), "class": "not_run", "rc": None, "seconds": 0, "max_rss_mib": 0,
                    "stderr_last": "NUL in an argument", "stderr_lines": 0, "stdout_bytes": 0}
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=work,
                                env={**env, **case.env}, preexec_fn=_limits)
        status, usage, timed_out = None, None, False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > TIME_LIMIT_S:
                timed_out = True
                os.killpg(proc.pid, 9)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
    elapsed = time.perf_counter() - start
    stdout = out_path.read_bytes()
    stderr = err_path.read_bytes()
    out_path.unlink()
    err_path.unlink()
    rss_kb = usage.ru_maxrss if usage else 0
    klass = classify(case, proc.returncode, stdout, stderr, timed_out, rss_kb, elapsed)
    tail = stderr.decode("utf-8", "replace").strip().splitlines()
    return {**asdict(case), "class": klass, "rc": proc.returncode, "seconds": round(elapsed, 2),
            "max_rss_mib": round(rss_kb / 1024, 1), "stderr_last": (tail[-1] if tail else "")[:300],
            "stderr_lines": len(tail), "stdout_bytes": len(stdout)}


def classify(case: Case, rc: int, stdout: bytes, stderr: bytes, timed_out: bool, rss_kb: int, elapsed: float) -> str:
    err = stderr.decode("utf-8", "replace")
    if timed_out:
        return "hang"
    if "MemoryError" in err or rc in (-9, 137) or rss_kb > MEMORY_BLOWUP_KB:
        return "memory"
    if "internal error" in err:
        return "internal_error"
    if "Traceback (most recent call last)" in err:
        return "api_exception" if case.code is not None else "traceback"
    raw_escape = b"\x1b" in stdout or b"\x1b" in stderr
    if rc == 0:
        if raw_escape:
            return "raw_escape"
        return "silent_nonsense" if case.expect == "error" else "accepted"
    if rc == 2:
        if raw_escape:
            return "raw_escape"
        lines = [line for line in err.splitlines() if line.strip()]
        one_line = bool(lines) and (lines[-1].startswith(("gpuwork: error:", "GPUWORK_ERROR:")))
        if not one_line:
            return "unclean_error"
        if elapsed > SLOW_ERROR_S and case.verb != "trace":
            return "slow_error"
        return "wrongly_refused" if case.expect == "accept" else "clean_error"
    return "unclean_error"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--out", required=True, help="folder for report.json")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("-k", dest="select", help="only cases whose id contains this text")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--resume", action="store_true", help="keep --out's results.jsonl and run only the cases "
                                                              "it lacks")
    parser.add_argument("--tree", help="run against the gpuwork package of this folder (e.g. `git archive` of an "
                                       "older commit) instead of the installed one")
    opts = parser.parse_args()
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="hostile_probe_"))
    try:
        fixtures = make_fixtures(scratch / "fixtures")
        cases = all_cases(fixtures)
        if opts.select:
            cases = [c for c in cases if opts.select in c.id]
        if opts.list:
            for c in cases:
                print(f"{c.verb:16} {c.expect:7} {c.id}")
            print(len(cases), "cases")
            return 0
        work = scratch / "cwd"
        work.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
        env.update(GPUWORK_CALIBRATION=str(scratch / "calibration.json"), PYTHONDONTWRITEBYTECODE="1",
                   GPUWORK_TRACEBACK="")
        env.pop("GPUWORK_TRACEBACK")
        if opts.tree:  # another checkout of gpuwork (a commit before the fixes): its package goes first
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(opts.tree).resolve()), env.get("PYTHONPATH")]))
        start = time.perf_counter()
        results: list[dict] = []
        done = out / "results.jsonl"
        if opts.resume and done.exists():  # a run cut short: keep what it saw, run the rest
            results = [json.loads(line) for line in done.read_text().splitlines() if line.strip()]
            seen = {r["id"] for r in results}
            cases = [c for c in cases if c.id not in seen]
        # each result is appended as it comes, so a run cut short still says what it saw
        with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool, open(done, "a" if opts.resume else "w") as log:
            futures = [pool.submit(run_case, c, work, env) for c in cases]
            for i, fut in enumerate(concurrent.futures.as_completed(futures), len(results) + 1):
                results.append(fut.result())
                log.write(json.dumps(results[-1], ensure_ascii=True) + "\n")
                log.flush()
                if i % 50 == 0:
                    print(f"  {i}/{len(cases)} cases, {time.perf_counter() - start:.0f} s", file=sys.stderr)
        elapsed = time.perf_counter() - start
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results.sort(key=lambda r: (r["verb"], r["id"]))
    by_class = Counter(r["class"] for r in results)
    by_verb: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        by_verb[r["verb"]][r["class"]] += 1
    print(f"{len(results)} cases in {elapsed:.0f} s ({opts.jobs} at a time)")
    for klass in CLASSES:
        if by_class[klass]:
            print(f"  {klass:16} {by_class[klass]:5}")
    print("per verb:")
    for verb in sorted(by_verb):
        print(f"  {verb:22} " + ", ".join(f"{k} {n}" for k, n in sorted(by_verb[verb].items())))
    bad = [r for r in results if r["class"] in BAD or r["class"] == "wrongly_refused"]
    if bad:
        print("findings:")
        for r in bad:
            print(f"  [{r['class']}] {r['id']!r}: rc {r['rc']}, {r['seconds']} s, {r['max_rss_mib']} MiB: "
                  f"{r['stderr_last'][:160]!r}")
    report = {"cases": len(results), "seconds": round(elapsed, 1), "jobs": opts.jobs,
              "time_limit_s": TIME_LIMIT_S, "memory_limit_bytes": MEMORY_LIMIT,
              "by_class": dict(by_class), "by_verb": {v: dict(c) for v, c in by_verb.items()}, "results": results}
    (out / "report.json").write_text(json.dumps(report, indent=1, ensure_ascii=True))
    print(f"report: {out / 'report.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
