"""The facts of multi-GPU communication: node networks and NCCL bus-bandwidth curves.

``networks.csv`` describes the fabric of a node (NICs per node, their rate, GPUDirect RDMA, the NVLink
domain), one row per documented node type, each with its source. ``nccl_tests.csv`` holds published
nccl-tests rows (message size, bus bandwidth); ``nccl_curves.csv`` the curves fitted to them by
``scripts/fit_nccl.py`` (docs/communication.md). The estimators get them as one ``CommFacts`` value.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, replace
from pathlib import Path

from gpuwork.errors import CatalogError
from gpuwork.facts.catalog import Network
from gpuwork.facts.paths import ENV_DATA_DIR, bundled_data_dir, data_dir
from gpuwork.facts.tables import cell_number, read_rows
from gpuwork.message import msg

NETWORKS_CSV = "networks.csv"
NCCL_TESTS_CSV = "nccl_tests.csv"
NCCL_CURVES_CSV = "nccl_curves.csv"
CURVE_USES = ("nvlink-ring", "nvls", "network-ring", "pcie-p2p", "pcie-host")
# A DGX-class node's network, all NICs one direction (8 x 400 Gb/s): the network-ring curve is fitted to the
# nccl-tests sweeps at this rate or more; slower networks are compared with the model (docs/communication.md)
DGX_NODE_BYTES_S = 400e9

# The Network choices of the catalog and the CLI, each a documented node of networks.csv.
NETWORK_NODES: dict[Network, str] = {
    Network.ETHERNET_25G: "ethernet-25g",
    Network.ETHERNET_100G: "ethernet-100g",
    Network.ROCE_400G: "meta-roce-400g",
    Network.IB_HDR_200G: "dgx-a100",
    Network.IB_NDR_400G: "dgx-h100",
}


@dataclass(frozen=True)
class NodeNetwork:
    """How one node reaches the others (a row of networks.csv)."""

    network: str
    name: str
    fabric: str  # infiniband | roce | efa | tcpx | tcpxo | ethernet
    nics_per_node: int
    nic_bytes_s: float  # one NIC, one direction
    gpus_per_node: int
    gpudirect_rdma: bool
    nvlink_domain: int  # GPUs one NVLink/NVSwitch domain joins
    source: str

    @property
    def node_bytes_s(self) -> float:
        """All the node's NICs together, one direction: what a ring crossing the node can use."""
        return self.nics_per_node * self.nic_bytes_s


@dataclass(frozen=True)
class BusCurve:
    """busbw(S) = link x efficiency / (1 + (half x ranks / 8 / S) ** exponent), S in bytes (nccl-tests size)."""

    curve: str
    efficiency: float
    half_bytes: float  # at 8 ranks
    exponent: float
    max_error: float  # the fit's largest relative error over its rows of 1 MiB and more
    use: str  # "" | nvlink-ring | nvls | network-ring | pcie-p2p | pcie-host
    basis: str
    link_bytes_s: float = 0.0  # the link its rows were measured on (0: none, or rows on several links)

    @property
    def half_s(self) -> float | None:
        """The half-plateau message's transfer time at the measured plateau (seconds, at 8 ranks): the latency
        the curve carries to other links of its type, whose rate does not change it (NCCL's tuning model charges
        a link type's microseconds whatever its bandwidth). None where the curve has no single measured link."""
        if self.link_bytes_s <= 0 or self.efficiency <= 0:
            return None
        return self.half_bytes / (self.link_bytes_s * self.efficiency)


@dataclass(frozen=True)
class NcclRow:
    """One published nccl-tests measurement (a row of nccl_tests.csv)."""

    curve: str
    system: str
    gpu_id: str
    gpus: int
    nodes: int
    level: str  # nvlink | network
    collective: str
    algorithm: str
    link_bytes_s: float  # the link the busbw is a share of (per GPU NVLink, or the node's NICs)
    size_bytes: int
    busbw_bytes_s: float
    source: str


@dataclass(frozen=True)
class CommFacts:
    """Everything the communication model reads."""

    networks: dict[str, NodeNetwork]
    curves: dict[str, BusCurve]  # by curve name
    rows: tuple[NcclRow, ...]

    def curve_for(self, use: str) -> BusCurve:
        for c in self.curves.values():
            if c.use == use:
                return c
        raise CatalogError(msg("error.rates.missing_key", file=NCCL_CURVES_CSV, key=use))

    def pcie_curve(self, p2p: bool, ranks: int) -> BusCurve:
        """The PCIe curve for ``ranks`` GPUs: of those measured with (or without) peer-to-peer, the one over the
        most ranks not above ``ranks`` (the fewest where none is); a ring's busbw on PCIe falls with its ranks."""
        use = "pcie-p2p" if p2p else "pcie-host"
        measured = self._ranks_measured(use)
        if not measured:
            raise CatalogError(msg("error.rates.missing_key", file=NCCL_CURVES_CSV, key=use))
        below = [m for m in measured if m[0] <= ranks]
        return self.curves[(below[-1] if below else measured[0])[1]]

    def _ranks_measured(self, use: str) -> list[tuple[int, str]]:
        """(most ranks measured, curve) of the curves of this use, fewest ranks first; kept on the facts (a
        frozen value read from files) once found: every estimate on PCIe asks for them."""
        found: dict[str, list[tuple[int, str]]] = self.__dict__.setdefault("_measured_ranks", {})
        if use not in found:
            found[use] = sorted((max((r.gpus for r in self.rows if r.curve == c.curve), default=0), c.curve)
                                for c in self.curves.values() if c.use == use)
        return found[use]

    def measured_at(self, curve: str) -> tuple[int, int]:
        """(ranks, nodes) of the largest measurement behind ``curve``: where its latency term was measured."""
        rows = [r for r in self.rows if r.curve == curve]
        if not rows:
            raise CatalogError(msg("error.rates.missing_key", file=NCCL_TESTS_CSV, key=curve))
        top = max(rows, key=lambda r: (r.gpus, r.nodes))
        return top.gpus, top.nodes

    def node_network(self, network: Network | str) -> NodeNetwork:
        key = NETWORK_NODES.get(Network(network), str(network)) if network in {n.value for n in Network} \
            else str(network)
        try:
            return self.networks[key]
        except KeyError:
            raise CatalogError(msg("error.rates.missing_key", file=NETWORKS_CSV, key=key)) from None


def _path(name: str) -> Path:
    own = data_dir() / name  # reached with $GPUWORK_DATA set only (load_comm_facts)
    return own if own.exists() else bundled_data_dir() / name


@functools.lru_cache(maxsize=4)
def _load(networks: Path, curves: Path, tests: Path) -> CommFacts:
    nets = {}
    for i, row in enumerate(read_rows(networks, ("network", "name", "fabric", "nics_per_node", "nic_gbps",
                                             "gpus_per_node", "gpudirect_rdma", "nvlink_domain", "source")), start=2):
        nets[row["network"].strip()] = NodeNetwork(
            network=row["network"].strip(), name=row["name"], fabric=row["fabric"].strip(),
            nics_per_node=int(cell_number(networks, i, "nics_per_node", row["nics_per_node"])),
            nic_bytes_s=cell_number(networks, i, "nic_gbps", row["nic_gbps"]) * 1e9 / 8,
            gpus_per_node=int(cell_number(networks, i, "gpus_per_node", row["gpus_per_node"])),
            gpudirect_rdma=row["gpudirect_rdma"].strip() == "yes",
            nvlink_domain=int(cell_number(networks, i, "nvlink_domain", row["nvlink_domain"])), source=row["source"])
    fitted = {}
    for i, row in enumerate(read_rows(curves, ("curve", "efficiency", "half_bytes", "exponent", "max_error", "use",
                                           "basis")), start=2):
        use = row["use"].strip()
        if use and use not in CURVE_USES:
            raise CatalogError(msg("error.rates.value", file=curves.name, line=i, column="use", value=use))
        fitted[row["curve"].strip()] = BusCurve(
            curve=row["curve"].strip(), efficiency=cell_number(curves, i, "efficiency", row["efficiency"]),
            half_bytes=cell_number(curves, i, "half_bytes", row["half_bytes"], positive=False),
            exponent=cell_number(curves, i, "exponent", row["exponent"]),
            max_error=cell_number(curves, i, "max_error", row["max_error"], positive=False), use=use, basis=row["basis"])
    rows = []
    for i, row in enumerate(read_rows(tests, ("curve", "system", "gpu_id", "gpus", "nodes", "level", "collective",
                                          "algorithm", "link_gbs", "size_bytes", "busbw_gbs", "source")), start=2):
        rows.append(NcclRow(
            curve=row["curve"].strip(), system=row["system"], gpu_id=row["gpu_id"].strip(),
            gpus=int(cell_number(tests, i, "gpus", row["gpus"])), nodes=int(cell_number(tests, i, "nodes", row["nodes"])),
            level=row["level"].strip(), collective=row["collective"].strip(), algorithm=row["algorithm"].strip(),
            link_bytes_s=cell_number(tests, i, "link_gbs", row["link_gbs"]) * 1e9,
            size_bytes=int(cell_number(tests, i, "size_bytes", row["size_bytes"])),
            busbw_bytes_s=cell_number(tests, i, "busbw_gbs", row["busbw_gbs"]) * 1e9, source=row["source"]))
    for name, curve in fitted.items():
        links = {r.link_bytes_s for r in rows if r.curve == name}
        if len(links) == 1:
            fitted[name] = replace(curve, link_bytes_s=links.pop())
    facts = CommFacts(networks=nets, curves=fitted, rows=tuple(rows))
    for use in CURVE_USES:
        facts.curve_for(use)
    return facts


def load_comm_facts() -> CommFacts:
    """The node networks and NCCL curves (``$GPUWORK_DATA`` first, the bundled files for what it lacks)."""
    if not os.environ.get(ENV_DATA_DIR):
        return _bundled()
    return _load(_path(NETWORKS_CSV), _path(NCCL_CURVES_CSV), _path(NCCL_TESTS_CSV))


@functools.cache
def _bundled() -> CommFacts:
    """The bundled files' facts: every ``resolve`` asks for them (three paths built and hashed per call before)."""
    folder = bundled_data_dir()
    return _load(folder / NETWORKS_CSV, folder / NCCL_CURVES_CSV, folder / NCCL_TESTS_CSV)


__all__ = ["NETWORK_NODES", "BusCurve", "CommFacts", "NcclRow", "NodeNetwork", "load_comm_facts"]
