"""Tests for gpuwork.cli.plan: the plan / offers / request subcommands, their JSON, filters and errors."""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import re
from pathlib import Path

import pytest

from gpuwork.cli import main
from gpuwork.cli.args import Parser as _Parser
from gpuwork.cli.common import size_bytes, token_count
from gpuwork.cli.plan import register
from gpuwork.facts.catalog import OFFERS_CSV_COLUMNS
from gpuwork.plan import TrainPlan

BUNDLED = Path(__file__).resolve().parent.parent / "data"
LORA_8B = ["--model", "llama-3.1-8b", "--method", "lora"]


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_register_adds_the_three_subcommands_to_a_gpuwork_parser():
    parser = _Parser(prog="gpuwork")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    register(sub)
    assert {"plan", "offers", "request"} <= set(sub.choices)
    args = parser.parse_args(["offers", *LORA_8B, "--mode", "reserved", "--sort", "time", "--min-vram", "48"])
    assert args.mode == ["reserved"] and args.sort == "time" and args.min_vram == 48


def test_size_and_count_arguments():
    assert size_bytes("200GB") == 200 * 10**9
    assert size_bytes("1.5 TB") == 1_500 * 10**9
    assert size_bytes("500MiB") == 500 * 2**20
    assert size_bytes("2e11") == 200 * 10**9
    assert token_count("50B") == 50 * 10**9 and token_count("100M") == 10**8 and token_count("5e9") == 5 * 10**9
    with pytest.raises(argparse.ArgumentTypeError, match="not a size"):
        size_bytes("lots")
    with pytest.raises(argparse.ArgumentTypeError, match="not a token count"):
        token_count("50 bananas")


def test_plan_report_and_json(capsys):
    rc, out, err = _run(capsys, ["plan", *LORA_8B, "--method", "qlora", "--seq-len", "2048"])
    assert rc == 0
    for section in ("memory per GPU", 'profile 01 "LoRA/QLoRA and a short check"', "time on 1 x ",
                    "FLOPs per token", "communication:", "data:", "disk:", "cheapest fitting offers"):
        assert section in out
    # issue 20: the profile line and the time name the one answer's card (was the L40S reference card while the
    # offers below put another card first)
    rc, js, _ = _run(capsys, ["plan", *LORA_8B, "--method", "qlora", "--seq-len", "2048", "--json"])
    decision = json.loads(js)["decision"]
    assert json.loads(js)["profile"]["gpu_id"] == decision["gpu_id"] and decision["profile_id"] == "01"
    assert f"time on {decision['gpus']} x " in out
    rc, out, err = _run(capsys, ["plan", *LORA_8B, "--dataset-bytes", "200GB", "--json", "--mfu", "0.3"])
    data = json.loads(out)
    assert data["plan"]["dataset_bytes"] == 200 * 10**9
    assert data["plan"]["dataset_tokens"] == 50 * 10**9  # 200 GB / 4 B per token, said on stderr
    assert "dataset_tokens = 50,000,000,000" in err
    assert data["profile"]["profile"]["profile_id"] == data["decision"]["profile_id"]
    assert (data["profile"]["gpu_id"], data["profile"]["gpus"]) == (data["decision"]["gpu_id"],
                                                                    data["decision"]["gpus"])
    assert data["time"]["mfu"]["value"] == 0.3 and data["time"]["mfu"]["source"] == "argument"
    assert data["disk"]["recommended_bytes"] > 400 * 10**9 and len(data["offers"]) == 5
    # JSON keeps codes and numbers; text is for people
    assert [r["code"] for r in data["profile"]["reasons"]][-1:] != [] and any(
        r["code"].startswith("decision.") for r in data["profile"]["reasons"])  # why this answer, as codes
    assert data["disk"]["lines"][0]["rule"] == {"code": "disk.rule.given", "params": {}}
    assert data["time"]["data"]["verdict"]["code"] == "data.needed"


def test_plan_and_offers_in_russian(capsys):
    rc, out, err = _run(capsys, ["plan", *LORA_8B, "--method", "qlora", "--seq-len", "2048", "--lang", "ru",
                                 "--dataset-bytes", "400MB"])
    assert rc == 0
    assert "dataset_tokens = 100 000 000 из --dataset-bytes" in err  # the note follows --lang too
    for section in ("gpuwork, план:", "профиль 01 «LoRA/QLoRA и короткая проверка»: 1 × ",
                    "  + самое дешёвое подходящее предложение: ", "время на 1 × ", "FLOPs на токен",
                    "обмен между GPU:", "данные: GPU потребляют", "диск: рекомендуется",
                    "самые дешёвые подходящие предложения"):
        assert section in out, section
    assert "100 000 000 токенов × 4 Б" in out
    argv = ["offers", *LORA_8B, "--method", "qlora", "--mode", "reserved", "--limit", "3"]
    rc, out, _ = _run(capsys, [*argv, "--lang", "ru"])
    lines = out.splitlines()
    assert rc == 0 and "сортировка по стоимости" in lines[0] and lines[1].startswith("провайдер")
    assert "на узел" in lines[1] and len(lines) == 7 and all("резервирование" in line for line in lines[2:5])
    assert "Б/парам" in lines[1] and lines[5].startswith("Байт на обучаемый параметр: ")
    # the last line is the one answer (issue 20): the top row's offer, by name, in Russian
    top = _top_offer(capsys, argv)
    assert lines[2].split()[:2] == [top.provider, str(top.gpus_per_node)]
    column = lines[1].index("регион")
    assert lines[2][column:].split()[0] == {"eu": "Европа", "us": "США", "asia": "Азия"}[top.region.value]
    assert lines[-1].startswith("Ответ: ") and f"«{_offer_name(top.offer_id, 'ru')}»" in lines[-1]
    assert top.offer_id not in out


def test_offers_table_filters_and_json(capsys):
    argv = ["offers", *LORA_8B, "--method", "qlora", "--mode", "on-demand", "--max-price", "1.5", "--limit", "3"]
    rc, out, _ = _run(capsys, argv)
    assert rc == 0
    lines = out.splitlines()
    assert "sorted by cost" in lines[0] and lines[1].split()[:3] == ["provider", "per", "node"]
    assert len(lines) == 7 and all("on-demand" in line for line in lines[2:5])
    # the rows and the one answer name offers as the offers tab does (provider, per node, GPU, mode), never by id
    top = _top_offer(capsys, argv)
    assert lines[2].split()[:2] == [top.provider, str(top.gpus_per_node)] and top.gpu.display_name in lines[2]
    # each row says its region, under the region column
    column = lines[1].index("region")
    assert lines[2][column:].split()[0] == top.region.value
    assert lines[-1].startswith("Answer: ") and f"offer “{_offer_name(top.offer_id, 'en')}”" in lines[-1]
    assert top.offer_id not in out
    rc, out, _ = _run(capsys, ["offers", *LORA_8B, "--class", "consumer", "--json", "--all"])
    rows = json.loads(out)
    assert rows and all(r["gpu_id"].startswith("rtx") for r in rows)
    rc, out, _ = _run(capsys, ["offers", *LORA_8B, "--sort", "deadline", "--deadline-hours", "2", "--json"])
    rows = json.loads(out)
    flags = [r["meets_deadline"] for r in rows if r["fits"]]
    assert flags == sorted(flags, reverse=True)  # offers meeting the deadline first


def _top_offer(capsys, argv: list[str]):
    """The catalog offer of the first row that ``argv`` (an `offers` command) ranks, read from its JSON."""
    from gpuwork.facts.catalog import load_offers

    rc, out, _ = _run(capsys, [*argv, "--json"])
    first = json.loads(out)[0]["offer_id"]
    return next(o for o in load_offers() if o.offer_id == first)


def _offer_name(offer_id: str, lang: str) -> str:
    from gpuwork.estimate.offers import offer_name
    from gpuwork.facts.catalog import load_offers
    from gpuwork.present.messages import render

    return render(offer_name(next(o for o in load_offers() if o.offer_id == offer_id)), lang)


@pytest.mark.parametrize(("lang", "short", "note"), [
    ("en", "B/param", "Bytes per trained parameter: weights, gradients and optimizer states before sharding"),
    ("ru", "Б/парам", "Байт на обучаемый параметр: веса, градиенты и состояния оптимизатора до шардирования")])
def test_offers_show_the_bytes_per_trained_parameter_of_each_rows_sharding(capsys, lang, short, note):
    """`gpuwork offers` shows what each row's sharding keeps per trained parameter, as the advisor and the answer
    say it (estimate.memory.state_bytes_per_param); its JSON carries the same figure with the fit."""
    from gpuwork.estimate.memory import state_bytes_per_param

    argv = ["offers", "--model", "llama-3.1-8b", "--method", "full", "--dataset-tokens", "100M", "--sort", "time",
            "--limit", "6"]
    rc, out, _ = _run(capsys, [*argv, "--lang", lang])
    lines = out.splitlines()
    assert rc == 0 and short in lines[1] and lines[8].startswith(note)
    start = lines[1].index(short)
    rc, js, _ = _run(capsys, [*argv, "--json"])
    rows = json.loads(js)
    assert len(rows) == 6
    for line, row in zip(lines[2:8], rows, strict=True):
        fitted = TrainPlan(model="llama-3.1-8b", method="full", gpus=row["fit"]["gpus"],
                           sharding=row["fit"]["sharding"])
        assert row["fit"]["state_bytes_per_param"] == state_bytes_per_param(fitted)
        assert line[start - 1:start + len(short)].strip() == str(state_bytes_per_param(fitted))


def test_offers_from_a_catalog_file(capsys, tmp_path):
    with open(BUNDLED / "catalog.csv", encoding="utf-8", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["gpu_id"] in ("l40s", "h100_sxm")][:3]
    path = tmp_path / "mine.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(OFFERS_CSV_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    rc, out, _ = _run(capsys, ["offers", *LORA_8B, "--catalog", str(path), "--json", "--all"])
    assert rc == 0 and {r["offer_id"] for r in json.loads(out)} == {r["offer_id"] for r in rows}


def test_request_text_and_json(capsys):
    argv = ["request", *LORA_8B, "--dataset-bytes", "200GB", "--rent-days", "30"]
    rc, out, _ = _run(capsys, [*argv, "--lang", "ru"])
    assert rc == 0 and out.splitlines()[0] == (
        "Дообучение, LoRA-адаптеры, контекст и батч в конфиге; датасет 200 ГБ, нужно место под чекпойнты; "
        "срок — месяц; требуется тест времени шага")
    start = (datetime.date.today() + datetime.timedelta(days=7)).isoformat()  # a start in the past is refused
    rc, out, _ = _run(capsys, [*argv, "--format", "json", "--start-date", start, "--budget", "5000"])
    data = json.loads(out)
    assert data["lang"] == "en" and data["rent_period_days"] == 30 and data["start_date"] == start
    assert data["summary"].startswith("Fine-tuning, LoRA adapters, context and batch size in the config")
    rc, out, _ = _run(capsys, [*argv, "--explicit-context", "--no-trial"])
    assert "context 2,048 tokens, batch 1" in out and "no step-time test needed" in out


def test_errors_are_one_line_with_status_2(capsys):
    rc, out, err = _run(capsys, ["offers", "--model", "no-such-model"])
    assert rc == 2 and out == "" and err.startswith("gpuwork: error: unknown model 'no-such-model'")
    assert len(err.strip().splitlines()) == 1
    rc, _, err = _run(capsys, ["offers", *LORA_8B, "--mode", "spot"])
    assert rc == 2 and "use 'interruptible'" in err
    rc, _, err = _run(capsys, ["offers", *LORA_8B, "--sort", "deadline"])
    assert rc == 2 and "--deadline-hours" in err
    rc, _, err = _run(capsys, ["offers", *LORA_8B, "--sort", "deadline", "--lang", "ru"])
    assert rc == 2 and err == ("gpuwork: ошибка: для --sort deadline нужен --deadline-hours (например, "
                               "--deadline-hours 48)\n")
    rc, _, err = _run(capsys, ["offers", "--model", "no-such-model", "--lang", "ru"])
    assert rc == 2 and err.startswith("gpuwork: ошибка: неизвестная модель 'no-such-model'")
    with pytest.raises(SystemExit) as info:  # --mfu is a share of the peak, checked where it is parsed
        main(["plan", *LORA_8B, "--mfu", "3"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "--mfu: 3.0 is out of range" in err
    with pytest.raises(SystemExit) as info:  # argparse type errors exit 2 in one line too
        main(["request", *LORA_8B, "--dataset-bytes", "20x"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not a size" in err


def test_request_quotes_a_trial_record(tmp_path, capsys):
    from gpuwork.measure.trial import run_trial

    record = run_trial(TrainPlan(model="tiny-llama", method="lora", precision="fp32", seq_len=32), steps=2, warmup=1,
                       out_dir=tmp_path, checkpoint=False)
    assert main(["request", "--model", "llama-3.1-8b", "--method", "lora", "--record", record.saved_to,
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["trial"] is not None
    assert main(["request", "--model", "llama-3.1-8b", "--record", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err


def test_an_interruptible_offer_that_never_finishes_says_why_and_how_often_to_checkpoint(capsys):
    """Checkpoints a million steps apart on an interruptible offer: infinite time and cost (preemptions undo the
    work faster than it is saved), with the message and the checkpoint interval that would let the run finish."""
    argv = ["offers", "--model", "llama-3.1-8b", "--checkpoint-every", "1000000", "--dataset-tokens", "10B",
            "--mode", "interruptible"]
    for lang, words in (("en", "preemptions come faster than checkpoints save work"),
                        ("ru", "прерывания случаются чаще, чем чекпойнты сохраняют работу")):
        rc, out, _ = _run(capsys, [*argv, "--lang", lang])
        never = [line for line in out.splitlines() if words in line]
        assert rc == 0 and never and all("∞" in line for line in never)
        assert all(re.search(r"~[\d\s,]+ (steps|шаг)", line) for line in never)
