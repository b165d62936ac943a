"""Hostile inputs to ``gpuwork offers`` (issue 21): catalogs (empty, malformed rows, dates, special files, escape
bytes) and the filter flags at both ends of their ranges."""

from __future__ import annotations

import datetime as dt

import pytest

from .helpers import BAD_WORDS, one_error

HEADER = ("offer_id,provider,gpu_id,gpus_per_node,link,network,mode,region,price_per_gpu_hour_usd,min_rental_hours,"
          "as_of,note\n")
ROW = "x1,p,h100_sxm,8,nvlink_switch,none,on-demand,eu,2.5,1,2026-05-01,ok\n"


def catalog(tmp_path, body: str):
    path = tmp_path / "catalog.csv"
    path.write_text(body)
    return str(path)


def test_a_catalog_with_a_header_and_no_offers_says_so(cli, tmp_path) -> None:
    rc, _, err = cli("offers", "--catalog", catalog(tmp_path, HEADER))
    one_error(rc, err, "no offers", "--catalog")


def test_an_empty_catalog_file_is_one_line(cli, tmp_path) -> None:
    rc, _, err = cli("offers", "--catalog", catalog(tmp_path, ""))
    one_error(rc, err, "line 1")


@pytest.mark.parametrize(("old", "new", "words"), [
    (",2.5,", ",-2.5,", "price_per_gpu_hour_usd"), (",2.5,", ",nan,", "price_per_gpu_hour_usd"),
    (",2.5,", ",1e308,", "price_per_gpu_hour_usd"), (",2.5,", ",1e-300,", "price_per_gpu_hour_usd"),
    (",8,", ",0,", "gpus_per_node"),
    (",8,", "," + "9" * 5000 + ",", "gpus_per_node"), ("h100_sxm", "h100_sxn", "gpu_id"),
    ("2026-05-01", "1900-01-01", "as_of"), ("2026-05-01", "9999-12-31", "as_of"),
    ("2026-05-01", "2026-13-45", "as_of")])
def test_a_malformed_row_names_its_field(cli, tmp_path, old, new, words) -> None:
    rc, _, err = cli("offers", "--catalog", catalog(tmp_path, HEADER + ROW.replace(old, new)))
    line = one_error(rc, err, "line 2", words)
    assert len(line) < 1000  # a 5,000-digit value is not shown whole


def test_an_as_of_date_of_tomorrow_is_taken_and_later_is_not(cli, tmp_path) -> None:
    today = dt.date.today()
    rc, out, err = cli("offers", "--catalog",
                       catalog(tmp_path, HEADER + ROW.replace("2026-05-01", (today + dt.timedelta(days=1)).isoformat())))
    assert rc == 0, err
    rc, _, err = cli("offers", "--catalog",
                     catalog(tmp_path, HEADER + ROW.replace("2026-05-01", (today + dt.timedelta(days=2)).isoformat())))
    one_error(rc, err, "as_of")


def test_escape_bytes_in_a_catalog_are_shown_escaped(cli, tmp_path) -> None:
    # the table names an offer by its provider (the id stays in --json): both carry an escape sequence
    row = ROW.replace("x1,p,", "x\x1b[2J1,p\x1b[2J,").replace(",ok\n", ",\x1b]0;title\x07\n")
    rc, out, err = cli("offers", "--catalog", catalog(tmp_path, HEADER + row))
    assert rc == 0, err
    assert "\x1b" not in out + err and "\\x1b[2J" in out


@pytest.mark.parametrize("kind", ["fifo", "zero", "loop", "dangling", "folder", "huge", "junk"])
def test_a_special_or_huge_catalog_is_named(cli, bad, kind) -> None:
    rc, _, err = cli("offers", "--catalog", str(bad[kind]))
    one_error(rc, err, BAD_WORDS[kind])


def test_a_file_the_csv_module_cannot_split_is_a_row_error(cli, bad) -> None:
    rc, _, err = cli("offers", "--catalog", str(bad["deep"]))  # one 200,000-character field
    one_error(rc, err, "deep.json", "line 1", "not a CSV row")


@pytest.mark.parametrize(("flag", "value"), [
    ("--budget", "1e-300"), ("--budget", "1e308"), ("--deadline-hours", "1e-300"), ("--deadline-hours", "1e308"),
    ("--max-price", "1e308"), ("--min-vram", "1e308"), ("--limit", "1" + "0" * 30), ("--preemption-rate", "1e308"),
    ("--safety-margin", "1"), ("--mfu", "1e-300")])
def test_a_filter_beyond_either_end_is_one_line(cli, flag, value) -> None:
    rc, _, err = cli("offers", flag, value)
    one_error(rc, err, flag, "out of range")


def test_filters_inside_their_ranges_are_taken(cli) -> None:
    rc, out, err = cli("offers", "--budget", "0.01", "--deadline-hours", "1000000", "--max-price", "1000",
                       "--limit", "1")
    assert rc == 0, err


def test_a_catalog_beyond_the_offer_limit_is_one_line_before_any_ranking(cli, tmp_path) -> None:
    """60,000 offers (3.8 MB, inside the table size cap) were ranked for minutes before anything was shown."""
    from gpuwork.facts.catalog import MAX_OFFERS

    rows = "".join(ROW.replace("x1,", f"x{i},", 1) for i in range(MAX_OFFERS + 1))
    rc, _, err = cli("offers", "--catalog", catalog(tmp_path, HEADER + rows))
    one_error(rc, err, f"line {MAX_OFFERS + 2}", f"more than {MAX_OFFERS:,} offers")


def test_offers_of_one_node_at_many_prices_share_its_time_and_nothing_else(tmp_path) -> None:
    """A ranking times each kind of node once (the card, GPUs per node, link, network) and prices every offer of
    it: the same node at two prices and two modes has one step time; another link is timed on its own."""
    from gpuwork import sizing
    from gpuwork.facts.catalog import load_offers
    from gpuwork.plan import TrainPlan

    body = HEADER + "".join(ROW.replace("x1,", f"{name},", 1).replace(",on-demand,", f",{mode},")
                            .replace(",2.5,", f",{price},").replace(",nvlink_switch,", f",{link},")
                            for name, mode, price, link in (("a", "on-demand", "2.5", "nvlink_switch"),
                                                            ("b", "interruptible", "1.5", "nvlink_switch"),
                                                            ("c", "on-demand", "2.5", "pcie")))
    plan = TrainPlan(model="llama-3.1-8b", method="full", gpus=8, sharding="fsdp")
    ranked = {r.offer.offer_id: r for r in sizing.evaluate_offers(plan, load_offers(catalog(tmp_path, body)))}
    alone = {o.offer_id: sizing.evaluate_offers(plan, [o])[0] for o in load_offers(catalog(tmp_path, body))}
    for offer_id, result in ranked.items():  # ranked together as priced alone
        assert result.time.step_time_s == alone[offer_id].time.step_time_s
        assert result.expected_cost_usd == alone[offer_id].expected_cost_usd
    assert ranked["a"].time.step_time_s == ranked["b"].time.step_time_s
    assert ranked["a"].time.step_time_s < ranked["c"].time.step_time_s  # NVSwitch against PCIe
    assert ranked["b"].expected_cost_usd != ranked["a"].expected_cost_usd
