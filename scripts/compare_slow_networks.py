"""Print the published nccl-tests rows on networks slower than a DGX (nccl_tests.csv rows of level `network` under
400 GB/s a node) against the bus bandwidth the estimate prices for them: the markdown table of
docs/communication.md 'Slower networks'. Run: python scripts/compare_slow_networks.py
"""

from __future__ import annotations

from dataclasses import replace

from gpuwork.estimate.comm import Fabric, busbw
from gpuwork.facts.network import DGX_NODE_BYTES_S, CommFacts, NcclRow, NodeNetwork, load_comm_facts

NVLINK_BYTES_S = {"h100_sxm": 450e9}  # the intra-node link one way (A100 300 GB/s otherwise): the network bounds
# the node each row was measured on: a networks.csv row, or the source's own network where no row describes it
NODES = {"nccl527": "aws-p4d", "mega": "gcp-a3-mega", "high": "gcp-a3-high"}
GCP_32GBE = NodeNetwork(network="gcp-32gbe", name="GCP VM on 32 Gb/s Ethernet", fabric="ethernet", nics_per_node=1,
                        nic_bytes_s=4e9, gpus_per_node=8, gpudirect_rdma=False, nvlink_domain=8,
                        source="NVIDIA/nccl issue #209")


def slow_rows(facts: CommFacts) -> list[NcclRow]:
    return [r for r in facts.rows if r.level == "network" and r.link_bytes_s < DGX_NODE_BYTES_S]


def row_fabric(facts: CommFacts, row: NcclRow) -> Fabric:
    """The fabric the estimate would build for the row's nodes."""
    per_node = row.gpus // row.nodes
    name = NODES.get(row.curve.split("-")[0])
    network = facts.networks[name] if name else GCP_32GBE
    return Fabric(intra_bytes_s=NVLINK_BYTES_S.get(row.gpu_id, 300e9), intra_efficiency=None, nvls=False, gpus_per_node=per_node,
                  network=replace(network, gpus_per_node=per_node))


def modelled(facts: CommFacts, row: NcclRow) -> float:
    """The estimate's busbw for the row (bytes/s)."""
    return busbw(facts, row_fabric(facts, row), row.collective, row.size_bytes, row.gpus)


def main() -> None:
    facts = load_comm_facts()
    print("| source | network | nodes x GPUs | collective | size | measured busbw GB/s | model GB/s | error |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for r in slow_rows(facts):
        model = modelled(facts, r)
        size = f"{r.size_bytes / (1 << 30):g} GiB" if r.size_bytes >= 1 << 30 else f"{r.size_bytes >> 20} MiB"
        print(f"| {r.curve} | {r.link_bytes_s * 8 / 1e9:g} Gb/s a node | {r.nodes} x {r.gpus // r.nodes} "
              f"| {r.collective} | {size} | {r.busbw_bytes_s / 1e9:.2f} | {model / 1e9:.2f} "
              f"| {model / r.busbw_bytes_s - 1:+.0%} |")


if __name__ == "__main__":
    main()
