"""The held-out track record beside a time estimate: the data file, the regime rule and the surfaces.

Numbers are read from gpuwork/facts/data/time_track_record.csv, never written here; docs/track_record.md.
"""

from __future__ import annotations

import csv
import html
import json
from pathlib import Path

import pytest

import gpuwork
from gpuwork.cli import main
from gpuwork.errors import CatalogError
from gpuwork.estimate.band import MIN_CASES, time_band
from gpuwork.estimate.regimes import REGIME_IDS, regimes
from gpuwork.facts.catalog import get_gpu
from gpuwork.facts.track_record import ALL_RUNS, TrackRecordRow, load_track_record
from gpuwork.plan import TrainPlan

DATA = Path(gpuwork.__file__).parent / "facts" / "data" / "time_track_record.csv"
QLORA_PLAN = TrainPlan(model="llama-3.1-8b", method="qlora", seq_len=2048, dataset_tokens=200_000_000)


def _file_rows() -> dict[str, dict[str, str]]:
    with DATA.open(encoding="utf-8", newline="") as f:
        return {row["regime"]: row for row in csv.DictReader(f)}


def _shown(row: dict[str, str], lang: str) -> list[str]:
    """What a surface must show of a row: its case count and its 10th-90th percentile range, as rendered."""
    lo, hi = (f"{float(row[k]):.2f}" for k in ("p10", "p90"))
    text = f"{lo}–{hi}×"
    return [row["cases"], text.replace(".", ",") if lang == "ru" else text]


def _qlora_row() -> dict[str, str]:
    """The QLoRA row, which any QLoRA plan shows: the file's highest 90th percentile (checked, not assumed)."""
    rows = _file_rows()
    assert int(rows["qlora"]["cases"]) >= MIN_CASES
    assert float(rows["qlora"]["p90"]) == max(float(r["p90"]) for r in rows.values())
    return rows["qlora"]


# -- the file --------------------------------------------------------------------------------------------------


def test_the_track_record_file_is_current():
    from gpuwork.measure.track_record import track_record_csv

    assert DATA.read_text(encoding="utf-8") == track_record_csv(), (
        "regenerate: gpuwork accuracy --track-record --out gpuwork/facts/data/time_track_record.csv")


@pytest.mark.slow
def test_the_cheap_scoring_matches_the_page_frozen_rows():
    """frozen_cases (no step priced) agrees with heldout_scores' frozen rows case by case."""
    from gpuwork.measure.accuracy import heldout_scores
    from gpuwork.measure.track_record import frozen_cases

    cheap = {c.name: c for c in frozen_cases()}
    rows = [r for s in heldout_scores() for r in s.frozen]
    assert len(rows) == len(cheap)
    for r in rows:
        c = cheap[r.name]
        assert (c.ratio, c.excluded, c.regimes) == (pytest.approx(1 + r.error), r.excluded, r.regimes), r.name


def test_the_file_counts_and_orders_what_it_says():
    from gpuwork.measure.track_record import FrozenCase, track_record_rows

    cases = [FrozenCase(f"c{i}", f"s{i % 3}", ratio, False, ("QLoRA",) if i < 4 else ()) for i, ratio in
             enumerate((0.5, 1.0, 2.0, 4.0, 1.1, 1.2, 0.9, 1.3, 1.4, 1.5))]
    cases.append(FrozenCase("beyond", "s9", 100.0, True, ("QLoRA",)))  # beyond the peak: left out
    rows = {r["regime"]: r for r in track_record_rows(cases)}
    assert set(rows) == {ALL_RUNS, "qlora"}
    assert (rows["qlora"]["cases"], rows["qlora"]["sources"]) == ("4", "3")
    # QLoRA: s0 holds 0.5 and 4.0 (half a source each), s1 1.0, s2 2.0: 3 sources' weight, sorted 0.5 (0.5),
    # 1.0 (1.5), 2.0 (2.5), 4.0 (3.0); the 10th percentile needs 0.3, the median 1.5, the 90th 2.7
    assert (rows["qlora"]["p10"], rows["qlora"]["p50"], rows["qlora"]["p90"]) == ("0.500", "1.000", "4.000")
    # all runs: s0 holds 4 cases (0.5, 4.0, 0.9, 1.5: a quarter each), s1 3 (1.0, 1.1, 1.3), s2 3 (2.0, 1.2, 1.4);
    # the weight reaches 2.42 of 3 at 1.5 and 2.75 at 2.0, so the 90th percentile (2.7) is 2.0
    assert rows[ALL_RUNS]["cases"] == "10" and rows[ALL_RUNS]["p90"] == "2.000"


def test_one_source_with_many_rows_weighs_as_one_source():
    from gpuwork.measure.track_record import FrozenCase, track_record_rows

    # nine rows of one source at 5.0 and one row each of nine other sources at 1.0: counted by case, the 90th
    # percentile would be 5.0 and even the median 5.0; by source, 5.0 is one tenth of the weight
    cases = [FrozenCase(f"big{i}", "big", 5.0, False, ()) for i in range(9)]
    cases += [FrozenCase(f"small{i}", f"s{i}", 1.0 + i / 100, False, ()) for i in range(9)]
    row = {r["regime"]: r for r in track_record_rows(cases)}[ALL_RUNS]
    assert (row["p50"], row["p90"]) == ("1.040", "1.080")


def test_the_loader_reads_the_file_and_refuses_a_bad_row(tmp_path):
    record = load_track_record()
    rows = _file_rows()
    assert set(record) == set(rows) and set(record) - {ALL_RUNS} <= set(REGIME_IDS.values())
    assert record["qlora"].p90 == float(rows["qlora"]["p90"]) and record[ALL_RUNS].cases == int(rows["all"]["cases"])
    header = "regime,cases,sources,p10,p50,p90,source\n"
    for bad, column in (("all,10,3,1.2,1.0,2.0,x\n", "p50"), ("all,-1,3,0.8,1.0,2.0,x\n", "cases"),
                        ("all,10,3,0.8,1.0,two,x\n", "p90")):
        path = tmp_path / f"{column}.csv"
        path.write_text(header + bad, encoding="utf-8")
        with pytest.raises(CatalogError, match=column):
            load_track_record(path)
    path = tmp_path / "no_all.csv"
    path.write_text(header + "qlora,20,3,0.8,1.0,2.0,x\n", encoding="utf-8")
    with pytest.raises(CatalogError, match="'all'"):
        load_track_record(path)


# -- the rule --------------------------------------------------------------------------------------------------


def _record(**p90_and_cases: tuple[float, int]) -> dict[str, TrackRecordRow]:
    rows = {ALL_RUNS: TrackRecordRow(ALL_RUNS, 500, 50, 0.8, 1.1, 2.0)}
    rows.update({k: TrackRecordRow(k, n, 5, 0.7, 1.0, p90) for k, (p90, n) in p90_and_cases.items()})
    return rows


def test_time_band_picks_the_most_pessimistic_matching_regime_with_enough_cases():
    rtx = get_gpu("rtx4090")
    plan = TrainPlan(model="llama-3.1-8b", method="qlora", seq_len=2048)  # QLoRA, consumer card, eager PyTorch
    assert regimes(plan, rtx, 1) == ("consumer card", "QLoRA", "eager PyTorch (HF Trainer, plain loops)")
    record = _record(consumer=(2.5, 100), qlora=(9.0, MIN_CASES - 1), eager=(3.0, 300), multi_node=(50.0, 200))
    band = time_band(plan, rtx, 1, record)
    # QLoRA's 9x rests on too few cases; several nodes does not match: eager PyTorch is the widest that speaks
    assert (band.regime, band.cases, band.p90) == ("eager", 300, 3.0)
    assert time_band(plan, rtx, 2, record).regime == "multi_node"
    assert band.times(10.0) == (pytest.approx(7.0), pytest.approx(10.0), pytest.approx(30.0))


def test_time_band_falls_back_to_all_runs():
    h100 = get_gpu("h100_sxm")
    plan = TrainPlan(model="llama-3.1-8b", method="lora", seq_len=2048, stack="hf-liger")
    assert regimes(plan, h100, 1) == ()
    band = time_band(plan, h100, 1, load_track_record())
    assert (band.regime, band.cases, band.p90) == (ALL_RUNS, int(_file_rows()["all"]["cases"]),
                                                   float(_file_rows()["all"]["p90"]))
    qlora = TrainPlan(model="llama-3.1-8b", method="qlora", seq_len=2048)
    assert time_band(qlora, h100, 1, _record(qlora=(9.0, 3))).regime == ALL_RUNS  # too few cases


def test_the_band_leaves_the_estimate_unchanged():
    from gpuwork.sizing import estimate_time
    from gpuwork.sizing import time_band as band_of

    est = estimate_time(QLORA_PLAN, "l40s")
    before = json.dumps(est.as_dict(), sort_keys=True, default=str)
    band = band_of(est)
    assert json.dumps(est.as_dict(), sort_keys=True, default=str) == before
    assert "track_record" not in est.as_dict()
    assert band.regime == "qlora"
    # the whole run at a ratio: its time without the fixed margin, times the ratio
    assert band.run_times(est)[2] == pytest.approx((est.total_s - est.margin_s) * band.p90)


# -- the surfaces ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_gpuwork_plan_shows_the_record_in_text_and_json(capsys, lang):
    row = _qlora_row()
    argv = ["plan", "--model", "llama-3.1-8b", "--method", "qlora", "--seq-len", "2048", "--lang", lang]
    assert main(argv) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if ("Track record" if lang == "en" else "История точности") in x)
    assert all(part in line for part in _shown(row, lang)), line
    # (the Russian word follows the count: "на 81 опубликованном запуске", "на 80 опубликованных запусках")
    assert ("QLoRA" in line) and (("published runs" in line) if lang == "en" else ("опубликованн" in line))
    assert main(argv + ["--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["time"]["track_record"]
    assert (shown["regime"], shown["cases"], shown["p90"]) == ("qlora", int(row["cases"]), float(row["p90"]))


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_sizing_tab_shows_the_record(lang):
    from gpuwork.ui.sizing import details_html, size_plan

    row = _qlora_row()
    shown = details_html(size_plan(QLORA_PLAN), lang)
    para = shown.split('<p class="gpuwork-track-record">', 1)[1].split("</p>", 1)[0]
    assert all(html.escape(part) in para for part in _shown(row, lang)), para


@pytest.mark.parametrize("lang", ["en", "ru"])
def test_the_request_states_the_run_and_cost_at_the_90th_percentile(lang):
    from gpuwork.present.request import rental_request

    row = _qlora_row()
    req = rental_request(QLORA_PLAN, lang=lang, budget_usd=1000)
    p90 = f"{float(row['p90']):.2f}×"
    line = next(x for x in req.text.splitlines() if (p90 if lang == "en" else p90.replace(".", ",")) in x)
    assert ("90th percentile" if lang == "en" else "90-му процентилю") in line and row["cases"] in line
    fields = req.fields["estimates"]["track_record"]
    est = req.fields["estimates"]
    assert (fields["regime"], fields["cases"], fields["p90"]) == ("qlora", int(row["cases"]), float(row["p90"]))
    # the run at the 90th percentile: the estimate without its margin, times the ratio; the rental in whole days
    assert fields["run_s_p90"] > est["total_s"]
    assert fields["rent_period_days_p90"] == -(-fields["run_s_p90"] // 86400)
    assert fields["example_cost_usd_p90"] > 0
