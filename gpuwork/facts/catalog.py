"""GPU catalog: GPU specifications (data/gpus.csv) and rental offers (data/catalog.csv).

The facts live in data files with sources and dates; this module reads them, checks every
column and turns them into frozen dataclasses with units in the names (bytes, FLOP/s, bytes/s).
A bad row fails with one `CatalogError` that names the file, the line, the field, the bad value
and the fix. Prices in the bundled catalog are illustrative dated snapshots, never quotes.

Example:
    >>> gpu = get_gpu("H100 SXM")
    >>> gpu.bf16_dense_flops
    989000000000000.0
    >>> cheap = filter_offers(load_offers(), min_vram_gb=48, max_price_per_gpu_hour=1.0)

Limitations:
    `GpuSpec.memory_bytes` is the vendor's marketed "GB" x 1e9. Vendors' memory GB are binary in
    practice (an "80 GB" H100 reports 81,559 MiB = 85.5e9 bytes in nvidia-smi), so this is a
    conservative lower bound on what the driver reports, not the usable capacity.
    `GpuSpec.memory_total_bytes` is what the driver reports as the card's total (nvidia-smi
    "Total", rocm-smi "VRAM Total Memory"), from the optional `memory_total_mib` column: public
    nvidia-smi/rocm-smi outputs, with ECC in the state cloud GPUs ship in. Where no public output
    was found the column holds `memory_gb x 1024` and `memory_total_source` says "estimated".
    What a training run can use is that total minus the CUDA context (see `gpuwork.estimate.memory`).
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

from gpuwork.errors import CatalogError
from gpuwork.facts import reading
from gpuwork.facts.paths import ENV_DATA_DIR, data_dir
from gpuwork.message import Msg, msg
from gpuwork.units import GB, MIB

__all__ = [
    "GB",
    "GPUS_CSV_COLUMNS",
    "GPUS_CSV_OPTIONAL_COLUMNS",
    "MIB",
    "OFFERS_CSV_COLUMNS",
    "GpuClass",
    "GpuSpec",
    "Link",
    "Mode",
    "Network",
    "Offer",
    "Region",
    "data_dir",
    "filter_offers",
    "get_gpu",
    "load_gpus",
    "load_offers",
    "match_gpu_name",
]

_TERA = 1e12  # TFLOPS -> FLOP/s

# PCIe x16 bandwidth per direction in GB/s, by generation: docs/sources.md#s-pcie
# (gen 3 by the same arithmetic: 8 GT/s x 16 lanes x 128/130 / 8 bits).
_PCIE_X16_GBS_UNIDIR = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}


_E = TypeVar("_E", bound=StrEnum)


class GpuClass(StrEnum):
    CONSUMER = "consumer"  # GeForce cards
    WORKSTATION = "workstation"  # RTX A-series / Ada / PRO cards
    SERVER = "server"  # data-centre parts: PCIe, SXM, OAM, rack


class Link(StrEnum):
    """How GPUs inside one node talk to each other."""

    PCIE = "pcie"  # through the PCIe host link (no peer link, or peer-to-peer disabled)
    NVLINK_BRIDGE = "nvlink_bridge"  # 2- or 4-way NVLink bridge between PCIe cards
    NVLINK_SWITCH = "nvlink_switch"  # NVSwitch baseboard (HGX/DGX), all-to-all
    NVLINK_SWITCH_RACK = "nvlink_switch_rack"  # rack-scale NVLink domain (GB200 NVL72)
    XGMI = "xgmi"  # AMD Infinity Fabric, all-to-all on the UBB baseboard


class Network(StrEnum):
    """How nodes talk to each other; each choice is a documented node of networks.csv (NICs per node, their rate,
    GPUDirect RDMA), mapped in ``gpuwork.facts.network.NETWORK_NODES`` (docs/communication.md)."""

    NONE = "none"  # single node only
    ETHERNET_25G = "ethernet-25g"
    ETHERNET_100G = "ethernet-100g"
    ROCE_400G = "roce-400g"
    IB_HDR_200G = "ib-hdr-200g"
    IB_NDR_400G = "ib-ndr-400g"


class Mode(StrEnum):
    ON_DEMAND = "on-demand"  # pay per hour, stop any time
    RESERVED = "reserved"  # committed period (min_rental_hours), lower rate
    INTERRUPTIBLE = "interruptible"  # spot / preemptible / bid: can be stopped by the provider


class Region(StrEnum):
    EU = "eu"
    US = "us"
    ASIA = "asia"


GPUS_CSV_COLUMNS = (
    "gpu_id", "display_name", "vendor", "architecture", "class", "form_factor", "memory_gb",
    "mem_bw_gbs", "bf16_dense_tflops", "fp16_dense_tflops", "fp8_dense_tflops", "fp32_tflops",
    "link", "link_bw_gbs_unidir", "pcie_gen", "compute_capability", "tdp_w", "status", "source",
    "notes", "kernel_family",
)  # fmt: skip
# Read when present, so older or hand-written gpus.csv files still load:
# memory_total_mib: the total the driver reports (nvidia-smi "Total" in MiB; AMD: rocm-smi bytes / 2**20)
# memory_total_source: where that number comes from: nvidia-smi | rocm-smi | estimated
# nvlink_bridge_gpus: how many cards one NVLink bridge joins (2, or 4 on H200 NVL); empty: no bridge
# tf32_dense_tflops: dense TF32 tensor-core peak (datasheet); empty: no TF32 figure (pre-Ampere, AMD), so a plan's
# tf32 leaves its fp32 GEMMs on the FP32 rate (docs/gemm_tf32.md)
GPUS_CSV_OPTIONAL_COLUMNS = ("memory_total_mib", "memory_total_source", "nvlink_bridge_gpus", "tf32_dense_tflops")
# The cards one bridge may join: 2-way and 4-way bridges are sold (docs/sources.md#s-nvlink-bridge); up to 8 allowed.
_BRIDGE_GPUS = range(2, 9)
_MEMORY_TOTAL_SOURCES = ("nvidia-smi", "rocm-smi", "estimated")
OFFERS_CSV_COLUMNS = (
    "offer_id", "provider", "gpu_id", "gpus_per_node", "link", "network", "mode", "region",
    "price_per_gpu_hour_usd", "min_rental_hours", "as_of", "note",
)  # fmt: skip

# Source status tags (docs/sources.md#s-status-tags); meanings: catalog entries error.catalog.status_meaning.<tag>.
_STATUSES = ("V", "D", "S")

# Fixes for values people commonly write: (field, lower-cased value) -> advice (a catalog entry).
_INTERRUPTIBLE = msg("error.catalog.hint.interruptible")
_ON_DEMAND = msg("error.catalog.hint.on_demand")
_DATACENTER = msg("error.catalog.hint.datacenter_class")
_IB = msg("error.catalog.hint.infiniband")
_HINTS = {
    ("mode", "spot"): _INTERRUPTIBLE,
    ("mode", "preemptible"): _INTERRUPTIBLE,
    ("mode", "bid"): _INTERRUPTIBLE,
    ("mode", "ondemand"): _ON_DEMAND,
    ("mode", "on_demand"): _ON_DEMAND,
    ("mode", "committed"): msg("error.catalog.hint.reserved"),
    ("class", "datacenter_pcie"): _DATACENTER,
    ("class", "datacenter_sxm"): _DATACENTER,
    ("class", "datacenter_oam"): _DATACENTER,
    ("class", "datacenter_rack"): _DATACENTER,
    ("class", "datacenter"): msg("error.catalog.hint.server"),
    ("link", "nvlink"): msg("error.catalog.hint.nvlink"),
    ("link", "pcie_or_nvlink_bridge"): msg("error.catalog.hint.pcie_or_bridge"),
    ("link", "nvswitch"): msg("error.catalog.hint.nvswitch"),
    ("link", "infinity_fabric"): msg("error.catalog.hint.xgmi"),
    ("network", "infiniband"): _IB,
    ("network", "ib"): _IB,
    ("network", "ethernet"): msg("error.catalog.hint.ethernet"),
    ("network", ""): msg("error.catalog.hint.no_network"),
}


# ----------------------------------------------------------------------------- dataclasses


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model, from a row of gpus.csv. Peak figures are dense (no 2:4 sparsity)."""

    gpu_id: str  # short lower-case id, e.g. "h100_sxm"
    display_name: str  # e.g. "H100 SXM"
    vendor: str  # "NVIDIA" / "AMD"
    architecture: str  # e.g. "Hopper GH100"
    gpu_class: GpuClass  # consumer / workstation / server
    form_factor: str  # e.g. "SXM5 (HGX)"
    memory_bytes: int  # marketed GB x 1e9 (conservative; see module Limitations)
    mem_bw_bytes_s: float  # peak memory bandwidth
    bf16_dense_flops: float  # tensor BF16, FP32 accumulate, dense
    fp16_dense_flops: float  # tensor FP16, FP32 accumulate (half rate on GeForce), dense
    fp8_dense_flops: float | None  # dense FP8 tensor; None when the GPU has no FP8
    fp32_flops: float  # non-tensor FP32
    link: Link  # best GPU-to-GPU link this model can have
    link_bw_bytes_s: float  # that link, per GPU, per direction
    pcie_gen: int  # host link generation (x16)
    compute_capability: str  # CUDA "9.0", or AMD gfx target "gfx942"
    tdp_w: int  # board power, watts
    status: str  # V vendor-confirmed / D derived / S secondary (docs/sources.md#s-status-tags)
    sources: tuple[str, ...]  # source ids resolved in docs/sources.md#s-spec-refs, e.g. ("S5", "S4")
    notes: str = ""
    memory_total_mib: float | None = None  # driver-reported total (nvidia-smi MiB); None = unknown
    memory_total_source: str = "estimated"  # nvidia-smi | rocm-smi | estimated
    sm_count: int | None = None  # SMs (CUs), for a GPU rates.csv does not list; None = derived from its peak
    # whose measured kernel rates apply (kernels.csv flash_attn_*_<family>, attention_curves.csv family);
    # "" = none given: the step model refuses to price fused attention rather than guess
    kernel_family: str = ""
    # dense TF32 tensor-core peak, FLOP/s (gpus.csv tf32_dense_tflops); None: no TF32 figure for this GPU
    tf32_dense_flops: float | None = None
    # cards one NVLink bridge joins (link nvlink_bridge); None: no bridge, a ring over more than one card uses PCIe
    nvlink_bridge_gpus: int | None = None

    @property
    def memory_gb(self) -> float:
        """Marketed memory in vendor GB (for display)."""
        return self.memory_bytes / GB

    @property
    def memory_total_bytes(self) -> int:
        """Total memory as the driver reports it (nvidia-smi "Total"), in bytes.

        Falls back to `memory_gb x 1024 MiB` (the marketed GB read as GiB) when the catalog has no
        reported figure; `memory_total_source` then says "estimated".
        """
        mib = self.memory_total_mib if self.memory_total_mib is not None else self.memory_bytes / GB * 1024
        return round(mib * MIB)

    @property
    def pcie_bw_bytes_s(self) -> float:
        """PCIe x16 host-link bandwidth per direction (docs/sources.md#s-pcie)."""
        return _PCIE_X16_GBS_UNIDIR[self.pcie_gen] * GB


@dataclass(frozen=True)
class Offer:
    """One rental offer, from a row of catalog.csv. Prices are illustrative snapshots."""

    offer_id: str
    provider: str  # illustrative provider label, e.g. "neocloud-b"
    gpu_id: str
    gpu: GpuSpec  # resolved from gpus.csv
    gpus_per_node: int
    link: Link  # intra-node link actually offered ('pcie' when no peer link)
    network: Network  # inter-node fabric ('none' = single node only)
    mode: Mode
    region: Region
    price_per_gpu_hour: float  # USD per GPU-hour
    min_rental_hours: float  # shortest rental (720 = one month, 8760 = one year)
    as_of: date  # when the price was read
    note: str = ""

    def __post_init__(self) -> None:
        if self.gpu.gpu_id != self.gpu_id:
            raise CatalogError(msg("error.catalog.offer_gpu", offer=repr(self.offer_id),
                                   gpu_id=repr(self.gpu_id), gpu=repr(self.gpu.gpu_id)))

    @property
    def price_per_node_hour(self) -> float:
        """USD per hour for the whole node (all its GPUs)."""
        return self.price_per_gpu_hour * self.gpus_per_node

    @property
    def node_memory_bytes(self) -> int:
        """GPU memory of the whole node (marketed, see GpuSpec.memory_bytes)."""
        return self.gpu.memory_bytes * self.gpus_per_node

    @property
    def link_bw_bytes_s(self) -> float:
        """Intra-node GPU-to-GPU bandwidth per GPU per direction for this offer's link."""
        return self.gpu.pcie_bw_bytes_s if self.link is Link.PCIE else self.gpu.link_bw_bytes_s

    @property
    def min_rental_s(self) -> float:
        return self.min_rental_hours * 3600.0


# ----------------------------------------------------------------------------- CSV reading


# The largest value a real row can hold, with room: beyond it a number is a typo (a price of 2.49e9, a node of
# 99,999,999 GPUs) that would silently bend every estimate made from the catalog.
FIRST_AS_OF = date(2010, 1, 1)  # before cloud GPU rental: an as_of earlier than this is a typo in the year
_MINIMUM: dict[str, float] = {"price_per_gpu_hour_usd": 0.001, "min_rental_hours": 0.001}  # a tenth of a cent
_MAXIMUM: dict[str, float] = {
    "memory_gb": 4_096, "mem_bw_gbs": 100_000, "bf16_dense_tflops": 100_000, "fp16_dense_tflops": 100_000,
    "fp8_dense_tflops": 100_000, "fp32_tflops": 100_000, "tf32_dense_tflops": 100_000, "link_bw_gbs_unidir": 100_000, "tdp_w": 10_000,
    "price_per_gpu_hour_usd": 1_000, "min_rental_hours": 87_600, "gpus_per_node": 576,
}


@dataclass(frozen=True)
class _Row:
    """One data row of a CSV file, with the means to complain about a field."""

    file: str
    line: int
    values: Mapping[str, str]

    def fail(self, field: str, problem: Msg) -> CatalogError:
        return CatalogError(msg("error.catalog.row", file=self.file, line=self.line, field=field,
                                problem=problem))

    def text(self, field: str, example: str | Msg, *, optional: bool = False) -> str:
        value = self.values[field]
        if not value and not optional:
            raise self.fail(field, msg("error.catalog.empty", example=example))
        return value

    def number(self, field: str, unit_example: Msg, *, optional: bool = False) -> float | None:
        """A finite number above zero; None when optional and empty."""
        value = self.values[field]
        if not value:
            if optional:
                return None
            raise self.fail(field, msg("error.catalog.number_empty", unit=unit_example))
        try:
            number = float(value)
        except ValueError:
            raise self.fail(field, msg("error.catalog.not_number", value=repr(value),
                                       unit=unit_example)) from None
        if not math.isfinite(number) or number <= 0:
            raise self.fail(field, msg("error.catalog.not_positive", value=repr(value), unit=unit_example))
        if number < _MINIMUM.get(field, 0):  # 1e-300 USD per hour passed "above zero"
            raise self.fail(field, msg("error.catalog.too_small", value=repr(value), minimum=_MINIMUM[field],
                                       unit=unit_example))
        self._at_most(field, number, value, unit_example)
        return number

    def _at_most(self, field: str, number: float, value: str, unit_example: Msg) -> None:
        maximum = _MAXIMUM.get(field)
        if maximum is not None and number > maximum:
            raise self.fail(field, msg("error.catalog.too_large", value=repr(value), maximum=maximum,
                                       unit=unit_example))

    def integer(self, field: str, unit_example: Msg, *, allowed: Iterable[int] | None = None) -> int:
        value = self.values[field]
        if not value:
            raise self.fail(field, msg("error.catalog.integer_empty", unit=unit_example))
        if not re.fullmatch(r"[+-]?\d+", value):
            raise self.fail(field, msg("error.catalog.not_integer", value=repr(value), unit=unit_example))
        if len(value.lstrip("+-0")) > 18:  # beyond any count (and int() of 4,300+ digits raises): never converted
            raise self.fail(field, msg("error.catalog.too_large", value=repr(value[:40] + "..."),
                                       maximum=_MAXIMUM.get(field, 10**18), unit=unit_example))
        number = int(value)
        if number <= 0:
            raise self.fail(field, msg("error.catalog.integer_not_positive", value=repr(value),
                                       unit=unit_example))
        self._at_most(field, number, value, unit_example)
        if allowed is not None and number not in allowed:
            choices = ", ".join(str(a) for a in sorted(allowed))
            raise self.fail(field, msg("error.catalog.not_one_of", value=repr(value), choices=choices))
        return number

    def choice(self, field: str, enum: type[_E]) -> _E:
        value = self.values[field]
        try:
            return enum(value)
        except ValueError:
            pass
        choices = ", ".join(e.value for e in enum)
        if not value:
            hint = _HINTS.get((field, ""))
            if hint:
                raise self.fail(field, msg("error.catalog.choice_empty_hint", choices=choices, hint=hint))
            raise self.fail(field, msg("error.catalog.choice_empty", choices=choices))
        raise self.fail(field, msg("error.catalog.choice", value=repr(value), choices=choices,
                                   advice=_advice(field, value, enum)))

    def iso_date(self, field: str) -> date:
        value = self.values[field]
        if not value:
            raise self.fail(field, msg("error.catalog.date_empty"))
        day = None
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            try:
                day = date.fromisoformat(value)
            except ValueError:
                pass
        if day is None:
            raise self.fail(field, msg("error.catalog.not_date", value=repr(value)))
        # a price is quoted as of a day that has been: not before GPU rental existed, not after tomorrow (time zones)
        last = date.today() + timedelta(days=1)
        if not FIRST_AS_OF <= day <= last:
            raise self.fail(field, msg("error.catalog.date_range", value=repr(value), first=FIRST_AS_OF.isoformat(),
                                       last=last.isoformat()))
        return day


def _advice(field: str, value: str, enum: type[StrEnum]) -> Msg:
    hint = _HINTS.get((field, value.strip().lower()))
    if hint:
        return hint
    close = difflib.get_close_matches(value.lower(), [e.value for e in enum], n=1, cutoff=0.6)
    if close:
        return msg("error.catalog.advice.did_you_mean", close=close[0])
    return msg("error.catalog.advice.spell_exactly")


def _read_rows(path: Path, columns: tuple[str, ...], optional: tuple[str, ...] = ()) -> Iterator[_Row]:
    """Yield the non-blank data rows of a CSV file, after checking its header.

    Line numbers are 1-based as in a text editor (header = line 1). Columns not in `columns`
    or `optional` are ignored; every column in `columns` must be present; an `optional` column
    that is absent reads as empty.
    """
    name = path.name
    if os.environ.get(ENV_DATA_DIR):
        missing = msg("error.catalog.file_missing_env", file=name, path=str(path), env=ENV_DATA_DIR)
    else:
        missing = msg("error.catalog.file_missing", file=name, path=str(path))
    try:  # a regular file within reading.TABLE bytes (no FIFO, device or link to one)
        data = reading.read_bytes(path, reading.TABLE, missing=missing)
    except reading.ReadError as exc:
        raise CatalogError(exc.msg) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CatalogError(msg("error.catalog.not_utf8", file=name, reason=exc.reason, byte=exc.start)) from None

    reader = _rows_or_fail(csv.reader(io.StringIO(text, newline="")), name)
    header_row = next(reader, None)
    expected = ", ".join(columns)
    if not header_row or not any(h.strip() for h in header_row):
        raise CatalogError(msg("error.catalog.line", file=name, line=1,
                               problem=msg("error.catalog.no_header", expected=expected)))
    header = [h.strip() for h in header_row]
    for index, column in enumerate(header):
        if column and column in header[:index]:
            raise CatalogError(msg("error.catalog.row", file=name, line=1, field=column,
                                   problem=msg("error.catalog.column_twice")))
    for column in columns:
        if column not in header:
            extra = [h for h in header if h not in columns]
            close = difflib.get_close_matches(column, extra, n=1, cutoff=0.5)
            problem = (msg("error.catalog.column_misnamed", close=close[0], column=column, expected=expected)
                       if close else msg("error.catalog.column_missing", column=column, expected=expected))
            raise CatalogError(msg("error.catalog.row", file=name, line=1, field=column, problem=problem))

    last_line = reader.line_num
    for raw in reader:
        line, last_line = last_line + 1, reader.line_num  # first physical line of this record
        if not any(cell.strip() for cell in raw):
            continue
        if len(raw) != len(header):
            problem = msg("error.catalog.row_length", values=len(raw), columns=len(header))
            raise CatalogError(msg("error.catalog.line", file=name, line=line, problem=problem))
        values = {h: cell.strip() for h, cell in zip(header, raw, strict=True) if h in columns or h in optional}
        for column in optional:
            values.setdefault(column, "")
        yield _Row(name, line, values)


def _rows_or_fail(reader: Any, name: str) -> Any:
    """The rows of a csv.reader; a row the csv module cannot split (a field over its 128 KiB limit, a NUL byte)
    is a CatalogError naming the file and line, and ``line_num`` stays readable on the wrapper."""

    class Rows:
        def __iter__(self) -> Rows:
            return self

        def __next__(self) -> list[str]:
            try:
                return next(reader)
            except csv.Error as exc:
                raise CatalogError(msg("error.catalog.line", file=name, line=reader.line_num or 1,
                                       problem=msg("error.catalog.not_csv", reason=str(exc)[:200]))) from None

        @property
        def line_num(self) -> int:
            return int(reader.line_num)

    return Rows()


def _norm(name: str) -> str:
    """Lookup key: lower case, letters and digits only ("H100 SXM" -> "h100sxm")."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


_BRAND_WORDS = re.compile(r"\b(nvidia|geforce|amd|instinct)\b", re.IGNORECASE)


def _keys(gpu: GpuSpec) -> set[str]:
    keys = {_norm(gpu.gpu_id), _norm(gpu.display_name), _norm(_BRAND_WORDS.sub("", gpu.display_name))}
    keys.discard("")
    return keys


def _parse_gpu(row: _Row) -> GpuSpec:
    gpu_id = row.text("gpu_id", "'h100_sxm'")
    if not re.fullmatch(r"[a-z0-9_]+", gpu_id):
        raise row.fail("gpu_id", msg("error.catalog.gpu_id_format", value=repr(gpu_id)))
    compute_capability = row.text("compute_capability", msg("error.catalog.example.compute_capability"))
    if not re.fullmatch(r"\d+\.\d+|gfx[0-9a-f]+", compute_capability):
        raise row.fail("compute_capability",
                       msg("error.catalog.compute_capability", value=repr(compute_capability)))
    status = row.text("status", "'V'")
    if status not in _STATUSES:
        choices = tuple(msg("error.catalog.status_choice", status=s) for s in _STATUSES)
        raise row.fail("status", msg("error.catalog.status", value=repr(status), choices=choices))
    sources = tuple(s.strip() for s in row.text("source", "'S5;S4'").split(";") if s.strip())
    if not sources:
        raise row.fail("source", msg("error.catalog.no_source"))
    memory_gb = _req(row.number("memory_gb", msg("error.catalog.unit.memory_gb")))
    total_mib, total_source = _memory_total(row, memory_gb)
    link = row.choice("link", Link)
    return GpuSpec(
        gpu_id=gpu_id,
        display_name=row.text("display_name", "'H100 SXM'"),
        vendor=row.text("vendor", "'NVIDIA'"),
        architecture=row.text("architecture", "'Hopper GH100'"),
        gpu_class=row.choice("class", GpuClass),
        form_factor=row.text("form_factor", "'SXM5 (HGX)'"),
        memory_bytes=round(memory_gb * GB),
        mem_bw_bytes_s=_req(row.number("mem_bw_gbs", msg("error.catalog.unit.mem_bw_gbs"))) * GB,
        bf16_dense_flops=_req(row.number("bf16_dense_tflops", msg("error.catalog.unit.bf16_dense_tflops")))
        * _TERA,
        fp16_dense_flops=_req(row.number("fp16_dense_tflops", msg("error.catalog.unit.fp16_dense_tflops")))
        * _TERA,
        fp8_dense_flops=_scale(row.number("fp8_dense_tflops", msg("error.catalog.unit.fp8_dense_tflops"),
                                          optional=True), _TERA),
        fp32_flops=_req(row.number("fp32_tflops", msg("error.catalog.unit.fp32_tflops"))) * _TERA,
        link=link,
        link_bw_bytes_s=_req(row.number("link_bw_gbs_unidir", msg("error.catalog.unit.link_bw_gbs_unidir")))
        * GB,
        pcie_gen=row.integer("pcie_gen", msg("error.catalog.unit.pcie_gen"), allowed=_PCIE_X16_GBS_UNIDIR),
        compute_capability=compute_capability,
        tdp_w=row.integer("tdp_w", msg("error.catalog.unit.tdp_w")),
        status=status,
        sources=sources,
        notes=row.text("notes", "", optional=True),
        memory_total_mib=total_mib,
        memory_total_source=total_source,
        kernel_family=_kernel_family(row),
        nvlink_bridge_gpus=_bridge_gpus(row, gpu_id, link),
        tf32_dense_flops=_scale(row.number("tf32_dense_tflops", msg("error.catalog.unit.tf32_dense_tflops"),
                                           optional=True) if row.values.get("tf32_dense_tflops") else None, _TERA),
    )


def _bridge_gpus(row: _Row, gpu_id: str, link: Link) -> int | None:
    """The optional nvlink_bridge_gpus column: how many cards one bridge joins, on a card whose link is a bridge."""
    value = row.values.get("nvlink_bridge_gpus", "")
    if not value:
        return None
    if not (re.fullmatch(r"[0-9]{1,3}", value) and int(value) in _BRIDGE_GPUS):
        raise row.fail("nvlink_bridge_gpus", msg("error.catalog.bridge_gpus", value=repr(value), gpu_id=repr(gpu_id),
                                                 low=_BRIDGE_GPUS[0], high=_BRIDGE_GPUS[-1]))
    if link is not Link.NVLINK_BRIDGE:
        raise row.fail("nvlink_bridge_gpus", msg("error.catalog.bridge_without_link", value=repr(value),
                                                 gpu_id=repr(gpu_id), link=repr(link.value)))
    return int(value)


def _kernel_family(row: _Row) -> str:
    """The kernel family column: a lower-case id such as 'h100' (the step model checks that rates list it)."""
    family = row.text("kernel_family", "'h100'")
    if not re.fullmatch(r"[a-z0-9_]+", family):
        raise row.fail("kernel_family", msg("error.catalog.kernel_family_format", value=repr(family)))
    return family


def _memory_total(row: _Row, memory_gb: float) -> tuple[float | None, str]:
    """The optional driver-reported total (MiB) and where it comes from; checked against memory_gb."""
    mib = row.number("memory_total_mib", msg("error.catalog.unit.memory_total_mib"), optional=True)
    source = row.values.get("memory_total_source", "") or ("estimated" if mib is None else "")
    if source not in _MEMORY_TOTAL_SOURCES:
        raise row.fail("memory_total_source", msg("error.catalog.total_source", value=repr(source),
                                                  choices=", ".join(_MEMORY_TOTAL_SOURCES)))
    if mib is None:
        return None, "estimated"
    # A reported total lies between ~0.85x the marketed GB (ECC reserve on GDDR cards, e.g. A10:
    # 23,028 MiB for "24 GB") and the marketed GB read as GiB (+ a little: 3090 reports 24,576).
    low, high = 0.85 * memory_gb * GB / MIB, 1.05 * memory_gb * 1024
    if not low <= mib <= high:
        raise row.fail("memory_total_mib", msg("error.catalog.total_mib", mib=f"{mib:g}",
                                               memory_gb=f"{memory_gb:g}", low=low, high=high))
    return mib, source


def _req(value: float | None) -> float:
    assert value is not None  # only optional fields return None
    return value


def _scale(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _parse_gpus(path: Path) -> dict[str, GpuSpec]:
    gpus: dict[str, GpuSpec] = {}
    lines: dict[str, int] = {}
    key_owner: dict[str, str] = {}
    for row in _read_rows(path, GPUS_CSV_COLUMNS, GPUS_CSV_OPTIONAL_COLUMNS):
        gpu = _parse_gpu(row)
        if gpu.gpu_id in gpus:
            raise row.fail("gpu_id", msg("error.catalog.gpu_duplicate", value=repr(gpu.gpu_id),
                                         line=lines[gpu.gpu_id]))
        other = key_owner.get(_norm(gpu.gpu_id))
        if other is not None:
            raise row.fail("gpu_id", msg("error.catalog.gpu_near_duplicate", value=repr(gpu.gpu_id),
                                         other=repr(other), line=lines[other]))
        gpus[gpu.gpu_id] = gpu
        lines[gpu.gpu_id] = row.line
        for key in _keys(gpu):
            key_owner.setdefault(key, gpu.gpu_id)
    if not gpus:
        raise CatalogError(msg("error.catalog.no_gpus", file=path.name))
    return gpus


def _parse_offer(row: _Row, gpus: Mapping[str, GpuSpec]) -> Offer:
    gpu_id = row.text("gpu_id", "'h100_sxm'")
    gpu = gpus.get(gpu_id)
    if gpu is None:
        ids = _gpu_suggestions(gpu_id, gpus)
        problem = (msg("error.catalog.offer_gpu_close", value=repr(gpu_id), ids=", ".join(ids)) if ids
                   else msg("error.catalog.offer_gpu_unknown", value=repr(gpu_id), known=", ".join(sorted(gpus))))
        raise row.fail("gpu_id", problem)
    link = row.choice("link", Link)
    if link is not Link.PCIE and link is not gpu.link:
        raise row.fail("link", msg("error.catalog.link_unavailable", value=repr(link.value), gpu_id=gpu_id,
                                   has=gpu.link.value))
    return Offer(
        offer_id=row.text("offer_id", "'neocloud-b-h100-8x'"),
        provider=row.text("provider", "'neocloud-b'"),
        gpu_id=gpu_id,
        gpu=gpu,
        gpus_per_node=row.integer("gpus_per_node", msg("error.catalog.unit.gpus_per_node")),
        link=link,
        network=row.choice("network", Network),
        mode=row.choice("mode", Mode),
        region=row.choice("region", Region),
        price_per_gpu_hour=_req(row.number("price_per_gpu_hour_usd",
                                           msg("error.catalog.unit.price_per_gpu_hour_usd"))),
        min_rental_hours=_req(row.number("min_rental_hours", msg("error.catalog.unit.min_rental_hours"))),
        as_of=row.iso_date("as_of"),
        note=row.text("note", "", optional=True),
    )


# More offers than any provider lists: every ranking prices each offer for each change the advisor tries, about
# 15 us an offer and change, so 20,000 offers take seconds and 60,000 took minutes before anything was shown.
MAX_OFFERS = 20_000


def _parse_offers(path: Path, gpus: Mapping[str, GpuSpec]) -> list[Offer]:
    offers: list[Offer] = []
    lines: dict[str, int] = {}
    for row in _read_rows(path, OFFERS_CSV_COLUMNS):
        if len(offers) == MAX_OFFERS:
            raise CatalogError(msg("error.catalog.too_many_offers", file=path.name, line=row.line,
                                   limit=MAX_OFFERS))
        offer = _parse_offer(row, gpus)
        if offer.offer_id in lines:
            raise row.fail("offer_id", msg("error.catalog.offer_duplicate", value=repr(offer.offer_id),
                                           line=lines[offer.offer_id]))
        lines[offer.offer_id] = row.line
        offers.append(offer)
    return offers


# ----------------------------------------------------------------------------- public API


@lru_cache(maxsize=8)
def _cached_gpus(path: str) -> dict[str, GpuSpec]:
    return _parse_gpus(Path(path))


@lru_cache(maxsize=8)
def _cached_offers(offers_path: str, gpus_path: str) -> tuple[Offer, ...]:
    return tuple(_parse_offers(Path(offers_path), _cached_gpus(gpus_path)))


def load_gpus(path: str | os.PathLike[str] | None = None) -> dict[str, GpuSpec]:
    """Read GPU specifications, keyed by gpu_id.

    Args:
        path: a gpus.csv file; None reads `data_dir()/gpus.csv` (cached after the first read).

    Raises:
        CatalogError: the file is missing or a row is bad (file, line, field, value and fix).
    """
    if path is None:
        return dict(_cached_gpus(str(data_dir() / "gpus.csv")))
    return _parse_gpus(Path(path))


def load_offers(
    path: str | os.PathLike[str] | None = None, gpus: Mapping[str, GpuSpec] | None = None
) -> list[Offer]:
    """Read rental offers, each with its GpuSpec resolved.

    Args:
        path: a catalog.csv file; None reads `data_dir()/catalog.csv`.
        gpus: the GPUs offers may name; None uses `load_gpus()`. Both None: cached.

    Raises:
        CatalogError: the file is missing or a row is bad (file, line, field, value and fix).

    Example:
        >>> offers = load_offers()
        >>> {o.mode for o in offers} == {"on-demand", "reserved", "interruptible"}
        True
    """
    if path is None and gpus is None:
        folder = data_dir()
        return list(_cached_offers(str(folder / "catalog.csv"), str(folder / "gpus.csv")))
    offers_path = Path(path) if path is not None else data_dir() / "catalog.csv"
    offers = _parse_offers(offers_path, gpus if gpus is not None else load_gpus())
    if not offers:  # a header and no rows ranks nothing: say so rather than print an empty table
        raise CatalogError(msg("error.catalog.no_offers", file=offers_path.name, path=str(offers_path)))
    return offers


def _gpu_suggestions(name: str, gpus: Mapping[str, GpuSpec]) -> list[str]:
    """Up to four gpu_ids an unknown name may have meant."""
    owners: dict[str, str] = {}
    for gpu in gpus.values():
        for key in _keys(gpu):
            owners.setdefault(key, gpu.gpu_id)
    key = _norm(name)
    # ids that start with what was typed ("a100" -> the four A100s), else the closest spellings
    starts = sorted((k for k in owners if key and k.startswith(key)), key=len)
    close = difflib.get_close_matches(key or name, list(owners), n=10, cutoff=0.5)
    return list(dict.fromkeys(owners[k] for k in (starts or close)))[:4]


def get_gpu(gpu_id_or_name: str, gpus: Mapping[str, GpuSpec] | None = None) -> GpuSpec:
    """Find a GPU by id or display name, ignoring case, spaces, '-' and '_'.

    "H100 SXM", "h100_sxm" and "h100-sxm" all find h100_sxm; "RTX 4090" and "GeForce RTX 4090"
    find rtx4090. A name that matches nothing exactly is an error, never a guess.

    Args:
        gpu_id_or_name: the id or display name.
        gpus: where to look; None uses `load_gpus()`.

    Raises:
        CatalogError: unknown name, with the closest ids ("did you mean h100_sxm, h100_pcie?").
    """
    if isinstance(gpu_id_or_name, GpuSpec):
        return gpu_id_or_name
    table = load_gpus() if gpus is None else gpus
    if not isinstance(gpu_id_or_name, str):
        raise CatalogError(msg("error.catalog.gpu_type", value=repr(gpu_id_or_name)))
    if gpu_id_or_name in table:
        return table[gpu_id_or_name]
    key = _norm(gpu_id_or_name)
    matches = {gpu.gpu_id: gpu for gpu in table.values() if key and key in _keys(gpu)}
    if len(matches) == 1:
        return next(iter(matches.values()))
    if len(matches) > 1:
        raise CatalogError(msg("error.catalog.gpu_ambiguous", value=repr(gpu_id_or_name),
                               ids=", ".join(sorted(matches))))
    ids = _gpu_suggestions(gpu_id_or_name, table)
    if ids:
        raise CatalogError(msg("error.catalog.gpu_close", value=repr(gpu_id_or_name), ids=", ".join(ids)))
    raise CatalogError(msg("error.catalog.gpu_unknown", value=repr(gpu_id_or_name),
                           known=", ".join(sorted(table))))



# -- device names as the driver reports them ------------------------------------------------------------

_DEVICE_BRAND_WORDS = {"nvidia", "geforce", "amd", "instinct", "tesla"}
_PACKAGING_WORD = re.compile(r"^(sxm\d*|pcie|nvl|hbm\d*e?|hgx|oam|per|gpu|\d+gb)$")


def _device_words(name: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", name.lower()) if w not in _DEVICE_BRAND_WORDS]


def _model_key(name: str) -> str:
    """The GPU model without brand, packaging and memory words: "NVIDIA H100 80GB HBM3" -> "h100"."""
    return "".join(w for w in _device_words(name) if not _PACKAGING_WORD.match(w))


def _form(words: list[str]) -> str | None:
    if "nvl" in words:
        return "nvl"
    if "pcie" in words:
        return "pcie"
    if any(w.startswith("sxm") or w.startswith("hbm") for w in words):  # H100 SXM reports "80GB HBM3"
        return "sxm"
    return None


def match_gpu_name(device_name: str, device_total_bytes: int | None = None,
                   gpus: Mapping[str, GpuSpec] | None = None) -> GpuSpec | None:
    """The gpus.csv GPU a device name (as torch / nvidia-smi report it) denotes, or None — never a guess.

    "NVIDIA H100 80GB HBM3" -> h100_sxm, "NVIDIA A100-SXM4-80GB" -> a100_80_sxm, "NVIDIA H200" ->
    h200_sxm, "NVIDIA H200 NVL" -> h200_nvl, "NVIDIA GeForce RTX 4090" -> rtx4090. Rules: a name
    ``get_gpu`` knows wins; else the model (the name without brand, packaging and memory words) must
    equal a catalog GPU's; several candidates are narrowed by the packaging word (SXM/HBM, PCIe,
    NVL), a memory word ("80GB") or the device's total memory (within 3 % of ``memory_total_mib``),
    and finally by NVIDIA's naming rule that SXM modules carry no packaging word ("NVIDIA H200",
    "NVIDIA B200"). Anything still ambiguous: None.

    Args:
        device_name: e.g. ``torch.cuda.get_device_name()``.
        device_total_bytes: the device's total memory (``torch.cuda.mem_get_info()[1]``), or None.
        gpus: where to look; None uses ``load_gpus()``.
    """
    table = load_gpus() if gpus is None else gpus
    try:
        return get_gpu(device_name, table)
    except CatalogError:
        pass
    key = _model_key(device_name)
    if not key:
        return None
    candidates = [g for g in table.values() if _model_key(g.display_name) == key]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    words = _device_words(device_name)

    def gpu_form(g: GpuSpec) -> str | None:
        return _form(_device_words(g.display_name)) or _form(_device_words(g.form_factor))

    form = _form(words)
    if form is not None:
        candidates = [g for g in candidates if gpu_form(g) == form] or candidates
    memory_words = [int(w[:-2]) for w in words if re.fullmatch(r"\d+gb", w)]
    if memory_words and len(candidates) > 1:
        candidates = [g for g in candidates if round(g.memory_bytes / 1e9) == memory_words[0]] or candidates
    if device_total_bytes and len(candidates) > 1:
        mib = device_total_bytes / MIB
        close = [g for g in candidates if g.memory_total_mib and abs(g.memory_total_mib - mib) <= 0.03 * mib]
        candidates = close or candidates
    if form is None and len(candidates) > 1:
        sxm = [g for g in candidates if gpu_form(g) == "sxm"]
        candidates = sxm if len(sxm) == 1 else candidates
    return candidates[0] if len(candidates) == 1 else None

def _wanted(field: str, value: str | Iterable[str] | None, enum: type[_E]) -> set[_E] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    wanted: set[_E] = set()
    for item in items:
        try:
            wanted.add(enum(item))
        except ValueError:
            choices = ", ".join(e.value for e in enum)
            hint_field = "class" if field == "gpu_class" else field
            raise CatalogError(msg("error.catalog.filter_choice", field=field, value=repr(item), choices=choices,
                                   advice=_advice(hint_field, str(item), enum))) from None
    return wanted


def _limit(field: str, value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise CatalogError(msg("error.catalog.filter_limit", field=field, value=repr(value)))
    return float(value)


def filter_offers(
    offers: Iterable[Offer],
    *,
    min_vram_gb: float | None = None,
    gpu_class: str | Iterable[str] | None = None,
    mode: str | Iterable[str] | None = None,
    region: str | Iterable[str] | None = None,
    max_price_per_gpu_hour: float | None = None,
    gpu_ids: str | Iterable[str] | None = None,
    min_gpus_per_node: int | None = None,
) -> list[Offer]:
    """Keep the offers that pass every given condition (None = no condition); order is kept.

    Args:
        offers: offers to filter, e.g. `load_offers()`.
        min_vram_gb: least memory per GPU, vendor GB (24 keeps 24 GB cards).
        gpu_class / mode / region: one value or several ("consumer", ["on-demand", "reserved"]).
        max_price_per_gpu_hour: most USD per GPU-hour (inclusive).
        gpu_ids: GPU ids or display names ("H100 SXM"); an unknown name is an error.
        min_gpus_per_node: least GPUs in one node.

    Raises:
        CatalogError: a condition names an unknown value (the message lists the valid ones).

    Example:
        >>> offers = filter_offers(load_offers(), min_vram_gb=80, mode="reserved")
        >>> all(o.gpu.memory_bytes >= 80 * GB for o in offers)
        True
    """
    offers = list(offers)
    classes = _wanted("gpu_class", gpu_class, GpuClass)
    modes = _wanted("mode", mode, Mode)
    regions = _wanted("region", region, Region)
    min_vram = _limit("min_vram_gb", min_vram_gb)
    max_price = _limit("max_price_per_gpu_hour", max_price_per_gpu_hour)
    min_gpus = _limit("min_gpus_per_node", min_gpus_per_node)
    ids: set[str] | None = None
    if gpu_ids is not None:
        known = {**load_gpus(), **{o.gpu.gpu_id: o.gpu for o in offers}}
        names = [gpu_ids] if isinstance(gpu_ids, str) else list(gpu_ids)
        ids = {get_gpu(name, known).gpu_id for name in names}

    def keep(offer: Offer) -> bool:
        return (
            (classes is None or offer.gpu.gpu_class in classes)
            and (modes is None or offer.mode in modes)
            and (regions is None or offer.region in regions)
            and (min_vram is None or offer.gpu.memory_bytes >= min_vram * GB)
            and (max_price is None or offer.price_per_gpu_hour <= max_price)
            and (min_gpus is None or offer.gpus_per_node >= min_gpus)
            and (ids is None or offer.gpu_id in ids)
        )

    return [offer for offer in offers if keep(offer)]
