"""Tests for gpuwork.facts.catalog: bundled data, spot-checked facts, row validation, lookup, filters."""

from __future__ import annotations

import csv
import io
from datetime import date
from pathlib import Path

import pytest

from gpuwork.errors import CatalogError
from gpuwork.facts.catalog import (
    GB,
    GPUS_CSV_COLUMNS,
    GPUS_CSV_OPTIONAL_COLUMNS,
    OFFERS_CSV_COLUMNS,
    GpuClass,
    GpuSpec,
    Link,
    Mode,
    Network,
    Offer,
    data_dir,
    filter_offers,
    get_gpu,
    load_gpus,
    load_offers,
    match_gpu_name,
)

BUNDLED = Path(__file__).resolve().parent.parent / "gpuwork" / "facts" / "data"


# ----------------------------------------------------------------------------- helpers


def _rows(name: str) -> list[dict[str, str]]:
    with open(BUNDLED / name, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _write(path: Path, columns: list[str] | tuple[str, ...], rows: list[dict[str, str]]) -> Path:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


def _bad_offers(tmp_path: Path, index: int, **changes: str) -> Path:
    """catalog.csv with data row `index` (0-based; file line index + 2) changed."""
    rows = _rows("catalog.csv")
    rows[index] = {**rows[index], **changes}
    return _write(tmp_path / "catalog.csv", OFFERS_CSV_COLUMNS, rows)


def _bad_gpus(tmp_path: Path, index: int, **changes: str) -> Path:
    rows = _rows("gpus.csv")
    rows[index] = {**rows[index], **changes}
    return _write(tmp_path / "gpus.csv", GPUS_CSV_COLUMNS, rows)


def _message(fn, *args, **kwargs) -> str:
    with pytest.raises(CatalogError) as info:
        fn(*args, **kwargs)
    return str(info.value)


# ----------------------------------------------------------------------------- bundled files


def test_bundled_files_load():
    gpus = load_gpus()
    offers = load_offers()
    assert len(gpus) == 24
    assert 40 <= len(offers) <= 60
    assert all(isinstance(g, GpuSpec) for g in gpus.values())
    assert all(isinstance(o, Offer) for o in offers)
    assert data_dir() == BUNDLED


def test_spec_numbers_match_the_h100_sources():
    gpus = load_gpus()
    h100 = gpus["h100_sxm"]
    assert h100.bf16_dense_flops == pytest.approx(989e12)
    assert h100.memory_bytes == 80 * 10**9
    assert h100.mem_bw_bytes_s == pytest.approx(3350e9)
    assert h100.link is Link.NVLINK_SWITCH
    assert h100.link_bw_bytes_s == pytest.approx(450e9)
    assert h100.fp8_dense_flops == pytest.approx(1979e12)
    assert gpus["l40s"].bf16_dense_flops == pytest.approx(362e12)  # not 183 (that is TF32)
    assert gpus["rtx4090"].bf16_dense_flops == pytest.approx(165.2e12)  # FP32-accumulate rate
    assert gpus["rtx4090"].fp16_dense_flops == pytest.approx(165.2e12)
    assert gpus["rtx3090"].bf16_dense_flops == pytest.approx(71e12)
    assert gpus["rtx3090"].link_bw_bytes_s == pytest.approx(56e9)
    assert gpus["rtx5090"].bf16_dense_flops == pytest.approx(209.5e12)
    assert gpus["rtx5090"].memory_bytes == 32 * 10**9
    assert gpus["a100_80_sxm"].link_bw_bytes_s == pytest.approx(300e9)
    assert gpus["a100_80_sxm"].fp8_dense_flops is None
    assert gpus["mi300x"].bf16_dense_flops == pytest.approx(1307.4e12)
    assert gpus["mi300x"].compute_capability == "gfx942"
    assert gpus["h200_sxm"].memory_bytes == 141 * 10**9
    assert gpus["b200"].memory_bytes == 180 * 10**9
    assert gpus["l40s"].gpu_class is GpuClass.SERVER
    assert gpus["rtx_a6000"].gpu_class is GpuClass.WORKSTATION
    assert gpus["h100_pcie"].pcie_bw_bytes_s == pytest.approx(63e9)
    assert gpus["l40s"].pcie_bw_bytes_s == pytest.approx(31.5e9)


def test_spec_sanity_across_all_gpus():
    for gpu in load_gpus().values():
        assert gpu.sources, gpu.gpu_id
        assert gpu.status in {"V", "D", "S"}
        # dense FP8 is twice dense BF16 on every GPU listed (docs/sources.md#s-spec-conventions)
        if gpu.fp8_dense_flops is not None:
            assert gpu.fp8_dense_flops == pytest.approx(2 * gpu.bf16_dense_flops, rel=0.02), gpu.gpu_id
        assert gpu.bf16_dense_flops > gpu.fp32_flops, gpu.gpu_id


def test_every_offer_gpu_exists_and_link_is_possible():
    gpus = load_gpus()
    for offer in load_offers():
        assert offer.gpu_id in gpus
        assert offer.gpu is gpus[offer.gpu_id] or offer.gpu == gpus[offer.gpu_id]
        assert offer.link in (Link.PCIE, offer.gpu.link)
        assert offer.price_per_gpu_hour > 0
        assert offer.as_of <= date(2026, 12, 31)
        assert "llustrative" in offer.note


def test_offer_ids_unique_and_coverage():
    offers = load_offers()
    assert len({o.offer_id for o in offers}) == len(offers)
    assert {o.mode for o in offers} == set(Mode)
    assert {1, 2, 4, 8} <= {o.gpus_per_node for o in offers}
    consumer = filter_offers(offers, gpu_class="consumer", mode="on-demand")
    assert {o.gpu.memory_gb for o in consumer} >= {24, 32}
    assert filter_offers(
        offers, gpu_ids=["rtx_a6000", "l40s", "rtx6000_ada"], gpu_class=["workstation", "server"]
    )
    for gpu_id in ("a100_80_sxm", "h100_sxm", "h200_sxm"):
        nodes = [o for o in offers if o.gpu_id == gpu_id and o.gpus_per_node == 8]
        assert any(o.link is Link.NVLINK_SWITCH and o.network.value.startswith("ib-") for o in nodes)
    for gpu_id in ("a100_80_pcie", "h100_sxm"):
        assert {o.mode for o in offers if o.gpu_id == gpu_id} >= {Mode.ON_DEMAND, Mode.RESERVED}
    for offer in offers:
        if offer.mode is Mode.RESERVED:
            assert offer.min_rental_hours >= 24
        if offer.network is not Network.NONE:
            assert offer.gpus_per_node > 1


def test_offer_derived_quantities():
    offers = {o.offer_id: o for o in load_offers()}
    node = offers["nbb-h100_sxm-8x-od"]
    assert node.price_per_node_hour == pytest.approx(8 * 3.99)
    assert node.node_memory_bytes == 8 * 80 * 10**9
    assert node.link_bw_bytes_s == pytest.approx(450e9)
    single = offers["mkb-h100_sxm-1x-od"]
    assert single.link is Link.PCIE and single.link_bw_bytes_s == pytest.approx(63e9)
    assert offers["nba-h100_sxm-8x-res1y"].min_rental_s == pytest.approx(8760 * 3600)
    assert offers["nba-h100_sxm-8x-res1y"].as_of == date(2026, 11, 9)


def test_default_loads_are_cached_and_copies():
    first = load_gpus()
    first.pop("h100_sxm")
    assert "h100_sxm" in load_gpus()
    offers = load_offers()
    offers.clear()
    assert load_offers()
    assert load_gpus()["l4"] is load_gpus()["l4"]  # same cached objects


def test_env_var_overrides_data_dir(tmp_path, monkeypatch):
    rows = _rows("catalog.csv")[:3]
    rows[0] = {**rows[0], "price_per_gpu_hour_usd": "9.99"}
    _write(tmp_path / "catalog.csv", OFFERS_CSV_COLUMNS, rows)
    (tmp_path / "gpus.csv").write_text((BUNDLED / "gpus.csv").read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setenv("GPUWORK_DATA", str(tmp_path))
    assert data_dir() == tmp_path
    offers = load_offers()
    assert len(offers) == 3 and offers[0].price_per_gpu_hour == 9.99


def test_user_paths(tmp_path):
    gpus_path = _write(tmp_path / "my_gpus.csv", GPUS_CSV_COLUMNS, _rows("gpus.csv")[:2])
    offers_path = _write(tmp_path / "my_offers.csv", OFFERS_CSV_COLUMNS, _rows("catalog.csv")[:2])
    gpus = load_gpus(gpus_path)
    assert set(gpus) == {"rtx3090", "rtx4090"}
    assert len(load_offers(str(offers_path), gpus=gpus)) == 2


# ----------------------------------------------------------------------------- bad rows: catalog.csv


@pytest.mark.parametrize(
    ("index", "field", "value", "expect"),
    [
        (5, "mode", "spot", "use 'interruptible' for spot/preemptible offers"),
        (5, "mode", "", "is empty"),
        (0, "provider", "", "is empty"),
        (0, "offer_id", "", "is empty"),
        (3, "price_per_gpu_hour_usd", "abc", "not a number"),
        (3, "price_per_gpu_hour_usd", "$2.49", "not a number"),
        (3, "price_per_gpu_hour_usd", "-1", "above 0"),
        (3, "price_per_gpu_hour_usd", "0", "above 0"),
        (3, "price_per_gpu_hour_usd", "nan", "above 0"),
        (3, "price_per_gpu_hour_usd", "", "is empty"),
        (7, "gpu_id", "h100x", "did you mean h100_sxm"),
        (7, "gpu_id", "", "is empty"),
        (9, "as_of", "2026/09/20", "YYYY-MM-DD"),
        (9, "as_of", "20260920", "YYYY-MM-DD"),
        (9, "as_of", "2026-02-30", "YYYY-MM-DD"),
        (9, "as_of", "", "is empty"),
        (2, "gpus_per_node", "0", "above 0"),
        (2, "gpus_per_node", "-2", "above 0"),
        (2, "gpus_per_node", "1.5", "whole number"),
        (2, "link", "nvlink", "nvlink_bridge"),
        (2, "link", "nvlink_switch", "not available on rtx3090"),
        (2, "network", "infiniband", "ib-hdr-200g"),
        (2, "network", "", "use 'none' for single-node offers"),
        (4, "region", "europe", "eu, us, asia"),
        (4, "min_rental_hours", "0", "above 0"),
    ],
)
def test_bad_offer_row(tmp_path, index, field, value, expect):
    path = _bad_offers(tmp_path, index, **{field: value})
    message = _message(load_offers, path, gpus=load_gpus())
    assert message.startswith(f"catalog.csv line {index + 2}, field '{field}': ")
    assert expect in message
    if value:
        assert repr(value) in message


def test_unknown_mode_message_exactly(tmp_path):
    path = _bad_offers(tmp_path, 5, mode="spot")
    assert _message(load_offers, path) == (
        "catalog.csv line 7, field 'mode': 'spot' is not one of on-demand, reserved, interruptible "
        "(use 'interruptible' for spot/preemptible offers)"
    )


def test_a_bad_row_speaks_the_readers_language(tmp_path):
    """The row error is coded: file, line and field as they are, the problem and its advice as catalog entries."""
    with pytest.raises(CatalogError) as info:
        load_offers(_bad_offers(tmp_path, 5, mode="spot"))
    error = info.value
    assert error.msg.code == "error.catalog.row"
    assert (error.msg["file"], error.msg["line"], error.msg["field"]) == ("catalog.csv", 7, "mode")
    assert error.msg["problem"].code == "error.catalog.choice"
    assert error.msg["problem"]["advice"].code == "error.catalog.hint.interruptible"
    assert error.text("ru") == (
        "catalog.csv, строка 7, поле 'mode': 'spot' — не из списка: on-demand, reserved, interruptible "
        "(для предложений spot/preemptible укажите 'interruptible')"
    )
    with pytest.raises(CatalogError) as info:
        load_offers(_bad_offers(tmp_path, 3, price_per_gpu_hour_usd="$2.49"))
    assert info.value.msg["problem"].code == "error.catalog.not_number"
    assert info.value.text("ru") == (
        "catalog.csv, строка 5, поле 'price_per_gpu_hour_usd': '$2.49' — не число (укажите число больше 0 "
        "в USD за GPU-час, например 2.49, без единиц измерения и знаков валют)"
    )


def test_duplicate_offer_id(tmp_path):
    rows = _rows("catalog.csv")
    rows[10] = {**rows[10], "offer_id": rows[2]["offer_id"]}
    path = _write(tmp_path / "catalog.csv", OFFERS_CSV_COLUMNS, rows)
    message = _message(load_offers, path)
    assert message.startswith("catalog.csv line 12, field 'offer_id': ")
    assert "duplicate of line 4" in message


def test_missing_offer_column_names_it_and_lists_expected(tmp_path):
    columns = [c for c in OFFERS_CSV_COLUMNS if c != "mode"]
    path = _write(tmp_path / "catalog.csv", columns, _rows("catalog.csv"))
    message = _message(load_offers, path)
    assert message.startswith("catalog.csv line 1, field 'mode': column is missing")
    assert "expected columns: " + ", ".join(OFFERS_CSV_COLUMNS) in message


def test_renamed_column_is_suggested(tmp_path):
    columns = ["price_usd" if c == "price_per_gpu_hour_usd" else c for c in OFFERS_CSV_COLUMNS]
    rows = [
        {("price_usd" if k == "price_per_gpu_hour_usd" else k): v for k, v in r.items()}
        for r in _rows("catalog.csv")
    ]
    message = _message(load_offers, _write(tmp_path / "catalog.csv", columns, rows))
    assert "rename column 'price_usd' to 'price_per_gpu_hour_usd'" in message


def test_line_numbers_count_blank_lines_and_quoted_newlines(tmp_path):
    lines = (BUNDLED / "catalog.csv").read_text(encoding="utf-8").splitlines()
    header, first, second = lines[0], lines[1], lines[2]
    first = first.rsplit(",", 1)[0] + ',"a note\nover two lines"'
    second = second.replace(",interruptible,", ",spot,")
    path = tmp_path / "catalog.csv"
    path.write_text("\n".join([header, "", first, second]) + "\n", encoding="utf-8")
    message = _message(load_offers, path)
    assert message.startswith("catalog.csv line 5, field 'mode': 'spot'")


def test_wrong_number_of_values(tmp_path):
    lines = (BUNDLED / "catalog.csv").read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3] + ",extra"
    path = tmp_path / "catalog.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    message = _message(load_offers, path)
    assert message.startswith("catalog.csv line 4: has 13 values but the header has 12 columns")


def test_missing_and_empty_files(tmp_path):
    assert "file not found" in _message(load_offers, tmp_path / "nope.csv")
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    assert _message(load_gpus, tmp_path / "empty.csv").startswith(
        "empty.csv line 1: the header row is missing"
    )


# ----------------------------------------------------------------------------- bad rows: gpus.csv


@pytest.mark.parametrize(
    ("index", "field", "value", "expect"),
    [
        (16, "memory_gb", "80GB", "not a number"),
        (16, "memory_gb", "0", "above 0"),
        (16, "bf16_dense_tflops", "", "is empty"),
        (16, "fp8_dense_tflops", "-5", "above 0"),
        (8, "class", "datacenter_pcie", "map datacenter_* classes to 'server'"),
        (8, "link", "pcie_or_nvlink_bridge", "nvlink_bridge"),
        (8, "link_bw_gbs_unidir", "fast", "not a number"),
        (8, "pcie_gen", "7", "not one of 3, 4, 5, 6"),
        (8, "tdp_w", "300-350", "whole number"),
        (8, "status", "!", "not one of V"),
        (8, "source", "", "is empty"),
        (8, "compute_capability", "sm_89", "compute capability"),
        (8, "gpu_id", "L40S", "lower-case"),
        (8, "display_name", "", "is empty"),
    ],
)
def test_bad_gpu_row(tmp_path, index, field, value, expect):
    path = _bad_gpus(tmp_path, index, **{field: value})
    message = _message(load_gpus, path)
    assert message.startswith(f"gpus.csv line {index + 2}, field '{field}': ")
    assert expect in message


def test_a_bad_status_lists_the_tags_and_their_meanings_in_both_languages(tmp_path):
    with pytest.raises(CatalogError) as info:
        load_gpus(_bad_gpus(tmp_path, 8, status="!"))
    assert str(info.value) == ("gpus.csv line 10, field 'status': '!' is not one of V (vendor-confirmed), "
                               "D (derived from a vendor figure), S (secondary source only)")
    assert info.value.text("ru") == ("gpus.csv, строка 10, поле 'status': '!' — не из списка: V (подтверждено "
                                     "производителем), D (выведено из данных производителя), S (только "
                                     "вторичный источник)")


def test_duplicate_gpu_id(tmp_path):
    rows = _rows("gpus.csv")
    rows[5] = {**rows[5], "gpu_id": rows[1]["gpu_id"]}
    message = _message(load_gpus, _write(tmp_path / "gpus.csv", GPUS_CSV_COLUMNS, rows))
    assert message.startswith("gpus.csv line 7, field 'gpu_id': 'rtx4090' is a duplicate of line 3")


def test_gpu_ids_differing_only_in_punctuation(tmp_path):
    rows = _rows("gpus.csv")
    rows[5] = {**rows[5], "gpu_id": "h100sxm"}
    message = _message(load_gpus, _write(tmp_path / "gpus.csv", GPUS_CSV_COLUMNS, rows))
    assert "gpus.csv line 18, field 'gpu_id'" in message and "ambiguous" in message


def test_missing_gpu_column(tmp_path):
    columns = [c for c in GPUS_CSV_COLUMNS if c != "link_bw_gbs_unidir"]
    message = _message(load_gpus, _write(tmp_path / "gpus.csv", columns, _rows("gpus.csv")))
    assert message.startswith("gpus.csv line 1, field 'link_bw_gbs_unidir': column is missing")
    assert "expected columns: gpu_id, display_name" in message


def test_offer_gpu_missing_from_user_gpus(tmp_path):
    gpus = load_gpus(_write(tmp_path / "gpus.csv", GPUS_CSV_COLUMNS, _rows("gpus.csv")[:3]))
    message = _message(load_offers, gpus=gpus)  # bundled offers name GPUs not in this file
    assert "catalog.csv line " in message and "field 'gpu_id'" in message and "unknown GPU" in message


# ----------------------------------------------------------------------------- lookup


@pytest.mark.parametrize(
    ("name", "gpu_id"),
    [
        ("H100 SXM", "h100_sxm"),
        ("h100_sxm", "h100_sxm"),
        ("h100-sxm", "h100_sxm"),
        ("  h100 Sxm ", "h100_sxm"),
        ("H100SXM", "h100_sxm"),
        ("GeForce RTX 4090", "rtx4090"),
        ("RTX 4090", "rtx4090"),
        ("rtx-4090", "rtx4090"),
        ("RTX A6000", "rtx_a6000"),
        ("RTX 6000 Ada", "rtx6000_ada"),
        ("A100 80GB SXM", "a100_80_sxm"),
        ("a100-80-pcie", "a100_80_pcie"),
        ("Instinct MI300X", "mi300x"),
        ("mi300x", "mi300x"),
        ("L40S", "l40s"),
        ("l4", "l4"),
    ],
)
def test_get_gpu_variants(name, gpu_id):
    assert get_gpu(name).gpu_id == gpu_id


def test_get_gpu_unknown_suggests_never_guesses():
    message = _message(get_gpu, "H100X")
    assert message.startswith("unknown GPU 'H100X': did you mean ")
    assert "h100_sxm" in message and "h100_pcie" in message
    message = _message(get_gpu, "H100")  # ambiguous family name: an error, not a pick
    assert "h100_sxm" in message and "h100_pcie" in message and "h100_nvl" in message
    assert "known GPUs are" in _message(get_gpu, "zzzz")
    with pytest.raises(CatalogError) as info:
        get_gpu("H100X")
    assert info.value.msg.code == "error.catalog.gpu_close"
    assert info.value.text("ru").startswith("неизвестный GPU 'H100X': может быть, h100_sxm")


def test_get_gpu_with_user_table():
    gpus = {"rtx4090": load_gpus()["rtx4090"]}
    assert get_gpu("RTX 4090", gpus).gpu_id == "rtx4090"
    with pytest.raises(CatalogError):
        get_gpu("H100 SXM", gpus)


# ----------------------------------------------------------------------------- device names (torch / nvidia-smi)


@pytest.mark.parametrize(("name", "total_mib", "gpu_id"), [
    ("NVIDIA H100 80GB HBM3", None, "h100_sxm"), ("NVIDIA H100 PCIe", None, "h100_pcie"),
    ("NVIDIA H100 NVL", None, "h100_nvl"), ("NVIDIA H200", 143771, "h200_sxm"), ("NVIDIA H200 NVL", None, "h200_nvl"),
    ("NVIDIA A100-SXM4-80GB", None, "a100_80_sxm"), ("NVIDIA A100-PCIE-40GB", None, "a100_40_pcie"),
    ("NVIDIA A100 80GB PCIe", None, "a100_80_pcie"), ("NVIDIA L40S", None, "l40s"), ("NVIDIA L4", None, "l4"),
    ("NVIDIA GeForce RTX 4090", None, "rtx4090"), ("NVIDIA RTX 6000 Ada Generation", None, "rtx6000_ada"),
    ("NVIDIA B200", None, "b200"), ("AMD Instinct MI300X", None, "mi300x"),
    ("Tesla T4", None, None), ("AMD EPYC 7763 64-Core Processor", None, None),
])
def test_device_names_match_catalog_gpus_or_nothing(name, total_mib, gpu_id):
    gpu = match_gpu_name(name, total_mib * 2**20 if total_mib else None)
    assert (gpu.gpu_id if gpu else None) == gpu_id


def test_device_name_matching_uses_memory_only_to_break_ties_and_never_guesses():
    gpus = load_gpus()
    a100s = [g for g in gpus.values() if g.gpu_id.startswith("a100_")]
    assert len(a100s) == 4  # 40/80 GB x SXM/PCIe: a bare "NVIDIA A100" names none of them alone
    assert match_gpu_name("NVIDIA A100", None) is None
    sxm80 = gpus["a100_80_sxm"]
    assert match_gpu_name("NVIDIA A100-SXM4", round(sxm80.memory_total_mib * 2**20)).gpu_id == "a100_80_sxm"
    assert match_gpu_name("NVIDIA L40S", None, {"l4": gpus["l4"]}) is None  # a user table without it
    assert match_gpu_name("", None) is None


# ----------------------------------------------------------------------------- filters


def test_filters_each_condition():
    offers = load_offers()
    assert filter_offers(offers) == offers
    big = filter_offers(offers, min_vram_gb=80)
    assert big and all(o.gpu.memory_bytes >= 80 * GB for o in big)
    assert any(o.gpu_id == "rtx4090" for o in filter_offers(offers, min_vram_gb=24))
    consumer = filter_offers(offers, gpu_class="consumer")
    assert consumer and all(o.gpu.gpu_class is GpuClass.CONSUMER for o in consumer)
    spot = filter_offers(offers, mode="interruptible")
    assert spot and all(o.mode is Mode.INTERRUPTIBLE for o in spot)
    asia = filter_offers(offers, region="asia")
    assert asia and all(o.region == "asia" for o in asia)
    cheap = filter_offers(offers, max_price_per_gpu_hour=0.5)
    assert cheap and all(o.price_per_gpu_hour <= 0.5 for o in cheap)
    h100 = filter_offers(offers, gpu_ids=["H100 SXM"])
    assert h100 and {o.gpu_id for o in h100} == {"h100_sxm"}
    assert {o.gpu_id for o in filter_offers(offers, gpu_ids="l40s")} == {"l40s"}
    nodes = filter_offers(offers, min_gpus_per_node=8)
    assert nodes and all(o.gpus_per_node == 8 for o in nodes)


def test_filters_combined_and_multi_valued():
    offers = load_offers()
    result = filter_offers(
        offers, min_vram_gb=80, gpu_class="server", mode=["reserved"], max_price_per_gpu_hour=3.0
    )
    assert result
    for offer in result:
        assert offer.mode is Mode.RESERVED and offer.price_per_gpu_hour <= 3.0
        assert offer.gpu.memory_bytes >= 80 * GB and offer.gpu.gpu_class == "server"
    both = filter_offers(offers, mode=["on-demand", "reserved"])
    assert {o.mode for o in both} == {Mode.ON_DEMAND, Mode.RESERVED}
    assert filter_offers(offers, gpu_ids=["gb200"], region="eu") == []
    assert filter_offers(offers, gpu_ids=["rtx_a5000"]) == []  # known GPU without offers


def test_filters_reject_unknown_values():
    offers = load_offers()
    assert "use 'interruptible'" in _message(filter_offers, offers, mode="spot")
    assert "map datacenter_* classes to 'server'" in _message(
        filter_offers, offers, gpu_class="datacenter_pcie"
    )
    assert "did you mean h100_sxm" in _message(filter_offers, offers, gpu_ids=["h100x"])
    assert "min_vram_gb" in _message(filter_offers, offers, min_vram_gb=-1)


@pytest.mark.parametrize("value", ["two", "1", "2.5", "9", "-2", "٢"])
def test_a_malformed_bridge_width_is_one_message_naming_the_row_and_the_fix(tmp_path, value):
    columns = [*GPUS_CSV_COLUMNS, *GPUS_CSV_OPTIONAL_COLUMNS]
    rows = _rows("gpus.csv")
    assert rows[0]["gpu_id"] == "rtx3090" and rows[0]["link"] == "nvlink_bridge"
    rows[0] = {**rows[0], "nvlink_bridge_gpus": value}
    with pytest.raises(CatalogError) as info:
        load_gpus(_write(tmp_path / "gpus.csv", columns, rows))
    assert str(info.value) == (
        f"gpus.csv line 2, field 'nvlink_bridge_gpus': {value!r} for 'rtx3090' is not a count of cards from 2 to 8 "
        "(write how many cards one NVLink bridge joins: 2 for a 2-way bridge, 4 for a 4-way one; leave it empty "
        "for a card without a bridge)")
    assert info.value.text("ru").startswith(f"gpus.csv, строка 2, поле 'nvlink_bridge_gpus': {value!r} для "
                                            "'rtx3090' — не число карт от 2 до 8 (укажите, сколько карт")


def test_a_bridge_width_on_a_card_without_a_bridge_link_is_refused(tmp_path):
    columns = [*GPUS_CSV_COLUMNS, *GPUS_CSV_OPTIONAL_COLUMNS]
    rows = _rows("gpus.csv")
    assert rows[1]["gpu_id"] == "rtx4090" and rows[1]["link"] == "pcie"
    rows[1] = {**rows[1], "nvlink_bridge_gpus": "2"}
    with pytest.raises(CatalogError) as info:
        load_gpus(_write(tmp_path / "gpus.csv", columns, rows))
    assert str(info.value).startswith("gpus.csv line 3, field 'nvlink_bridge_gpus': '2' for 'rtx4090', whose link "
                                      "is 'pcie': ")
    assert "set link to nvlink_bridge, or leave nvlink_bridge_gpus empty" in str(info.value)
    assert "оставьте nvlink_bridge_gpus пустым" in info.value.text("ru")
    # the same table without the column loads: no card has a bridge then
    gpus = load_gpus(_write(tmp_path / "no_column.csv", GPUS_CSV_COLUMNS, rows))
    assert all(g.nvlink_bridge_gpus is None for g in gpus.values())
